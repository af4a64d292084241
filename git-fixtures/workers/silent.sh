#!/bin/sh
# Says one thing, then goes silent: the idle watchdog ends it.
echo "thinking..."
sleep 300
