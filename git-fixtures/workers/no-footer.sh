#!/bin/sh
# Never writes a footer.
echo "attempt $CREW_ATTEMPT: all done, trust me"
