#!/usr/bin/env python3
"""A scripted model server for the tests: it lets the real `codex` and `claude` CLIs run
against 127.0.0.1 instead of a real model provider. Python 3 standard library only.

Usage:
    model-server.py --port-file PATH [--log PATH] [--lifetime SECONDS] [--dump DIR]
                    [--usage PATH]

It binds 127.0.0.1 on a free port, writes the port number to PATH (through PATH.tmp and
a rename, so a reader never sees a partial file), appends one JSON line per request to
--log, and exits by itself after --lifetime seconds (default 300) or on SIGTERM/SIGINT.
--dump DIR also saves every request body as DIR/<n>-<api>.json (for debugging).

Endpoints (every other request gets a 404):
    POST /v1/responses           OpenAI Responses API, SSE (codex-cli, wire_api=responses)
    POST /v1/messages[?beta=true] Anthropic Messages API, SSE (Claude Code)

Pointing the CLIs at it:
    codex:  MOCK_API_KEY=dummy codex exec --json -C REPO --sandbox workspace-write \
              -m mock-model -c model_provider=mock -c model_providers.mock.name=mock \
              -c 'model_providers.mock.base_url="http://127.0.0.1:PORT/v1"' \
              -c model_providers.mock.wire_api=responses \
              -c model_providers.mock.env_key=MOCK_API_KEY \
              --disable unbounded_connection_retries \
              -c model_providers.mock.request_max_retries=0 \
              -c model_providers.mock.stream_max_retries=0 "PROMPT" </dev/null
    claude: ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=dummy \
              DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
              CLAUDE_CODE_MAX_RETRIES=0 claude -p "PROMPT" --output-format stream-json \
              --verbose --permission-mode acceptEdits </dev/null

The answer is decided from markers in the LATEST user message (never from counters, so a
resumed session gets the right answer). A marker may appear anywhere in that text; if
there are several, the last one wins. The latest user message is, for claude, the last
role:"user" message (its <system-reminder> text blocks are ignored); for codex, the last
role:"user" input item with real text (the <environment_context>, AGENTS.md, ... items
codex adds itself are ignored).
    (last input item is a tool result)  final text "Wrote the file." + footer naming the
                                        file of the write marker that caused the tool call
    [[mock:write NAME]]   one tool call writing "hello from the mock\\n" to NAME in the
                          working directory (claude: Write with an absolute file_path under
                          the "Primary working directory:" of the system prompt; codex:
                          exec_command {"cmd": "printf 'hello from the mock\\\\n' > NAME"})
    [[mock:footer]]       a short final text ending with the three-section footer
    [[mock:help]]         a NEEDS-HELP reply (first line "NEEDS-HELP: ...", then tried:,
                          options:, leaning:, cost-if-wrong:)
    [[mock:nofooter]]     "All done." without a footer
    [[mock:error]]        HTTP 400 with an invalid_request_error body in the provider's format
    (no marker)           a short final text with the footer, Result "Report from the mock."

The footer is:
    ## Result / ## How to verify / ## Deferred / concerns

The scripted lead. [[mock:lead BACKEND]] anywhere in a user message of the conversation
makes the model a lead that drives git-crew's MCP server (`git crew mcp`) through the
CLI's own MCP client; it takes precedence over the markers above. Each answer is decided
from the latest tool result and the tool that produced it (never from counters):
    (no tool result yet)  claude: Skill {"skill": "git-crew"} when the Skill tool is on
                          offer; otherwise, and after the skill: dispatch {"task":
                          "store", "backend": BACKEND, "scope": ["src/routes/**"],
                          "verify": "test -s src/routes/store.rs", "prompt": ...}
    dispatch              wait {"runs": [its run]}
    wait                  timed out: wait again; its run asks for help: advise {"run",
                          "text": "Use sqlite."}; settled: show {"run"}
    advise                wait {"runs": [its run]}
    show                  integrate {"run"}
    integrate             passed: integrate the same run again (git-crew refuses it);
                          refused: the final text
    a refusal or an answer that is not JSON (`"ok"` not true): a final text naming the
    error's code and message, ending with a footer.
A tool is called by the name the CLI offers it under, found in the request's `tools`:
claude's mcp__git-crew__<tool>; codex's function <tool> in the namespace mcp__git_crew
(sent back as a function_call with that `namespace`). codex offers a catalog model's MCP
tools (gpt-5.5) only through its client-side `tool_search`: a tool not on offer yet is
searched for by its name ({"type": "tool_search_call", "execution": "client",
"arguments": {"query": "<tool>"}}) and found in the `tool_search_output` codex sends
back, once; a tool still not found ends the script ("The <tool> tool is not on offer.").
A tool result is claude's last tool_result block (Claude Code may end a request with a
role:"system" reminder of its own, skipped) or codex's last function_call_output (past
the tool searches after it; codex puts "Wall time: S seconds\nOutput:\n" before the
text, skipped). Each lead request is logged with "answer": "lead" and "lead": {"saw":
{"tool", "texts", "is_error"} (the result it answers, once; for Skill, "beside": the
skill text Claude Code sent with it), "call" and "arguments" or "text", "offered" (the
short names of the tools on offer), "searched" (the query of a search that just
answered), "guide" (whether the request carries the heading of git-crew's skill and
AGENTS.md section)}.

Usage. Without --usage, each answer reports made-up token counts (input: the request's
size / 4, output: the answer's size / 4, nothing cached). --usage PATH names a JSON file,
read again for every request (so a test may change it between requests), choosing what
each answer reports:
    {"*": {"input": 1000, "cached": 200, "cache_write": 100, "output": 50,
           "reasoning": 20, "delay": 0},
     "write": {...}, "tool_result": {...}, "help": {...}, ...}
keyed by the answer (tool_result, write, footer, help, nofooter, lead, default; "*" for
the others). A missing field is 0. `input` counts every input token, `cached` the part of
them read from a cache, `cache_write` the part written to it; `output` counts every output
token, `reasoning` the part of them spent reasoning. `delay` holds the answer back that
many seconds; `hold` (Anthropic only) sends the message's start and its text, then holds
back its tool call that many seconds, so a client that acts on the usage a message
began with acts before the tool runs. They are reported the way the real APIs do:
    OpenAI Responses: response.completed.response.usage = {input_tokens: input,
        input_tokens_details: {cached_tokens: cached}, output_tokens: output,
        output_tokens_details: {reasoning_tokens: reasoning}, total_tokens}
    Anthropic Messages: message_start.message.usage = {input_tokens: input - cached -
        cache_write (the uncached part), cache_read_input_tokens: cached,
        cache_creation_input_tokens: cache_write, output_tokens: 1}; message_delta.usage =
        the same input fields and output_tokens: output (the message's final counts)
The usage each answer reported is logged with its request ("usage": {...}).
"""

import argparse
import gzip
import json
import os
import re
import shlex
import signal
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER_RE = re.compile(r"\[\[mock:(write|footer|help|nofooter|error)(?:[ \t]+([^\]\s]+))?[ \t]*\]\]")
WRITE_RE = re.compile(r"\[\[mock:write[ \t]+([^\]\s]+)[ \t]*\]\]")
CWD_RE = re.compile(r"Primary working directory:\s*(\S[^\n]*)")

FILE_CONTENT = "hello from the mock\n"

FOOTER_TEXT = (
    "Done.\n\n## Result\nA short answer from the mock.\n\n"
    "## How to verify\ngit status\n\n## Deferred / concerns\nNone."
)
DEFAULT_TEXT = (
    "Done.\n\n## Result\nReport from the mock.\n\n"
    "## How to verify\ngit status\n\n## Deferred / concerns\nNone."
)
HELP_TEXT = (
    "NEEDS-HELP: which store should I use?\n"
    "tried: looked at the code\n"
    "options: sqlite | postgres\n"
    "leaning: sqlite\n"
    "cost-if-wrong: a migration later"
)
NOFOOTER_TEXT = "All done."
GENERIC_TOOL_DONE_TEXT = (
    "Finished the tool call.\n\n## Result\nRan the tool call with the mock.\n\n"
    "## How to verify\ngit status\n\n## Deferred / concerns\nNone."
)
ERROR_MESSAGE = "mock: scripted failure"


def wrote_text(name):
    return (
        "Wrote the file.\n\n## Result\nWrote %s with the mock.\n\n"
        "## How to verify\ncat %s\n\n## Deferred / concerns\nNone." % (name, name)
    )


def last_marker(text):
    """(kind, argument) of the last marker in text, or None."""
    found = None
    for m in MARKER_RE.finditer(text or ""):
        if m.group(1) == "write" and not m.group(2):
            continue  # a write marker needs a file name
        found = (m.group(1), m.group(2))
    return found


def last_write_name(texts):
    """The file name of the last write marker in a list of texts (newest last)."""
    for text in reversed(texts):
        names = WRITE_RE.findall(text or "")
        if names:
            return names[-1]
    return None


def chunks(text, size=40):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def rand_id(prefix, n=20):
    return prefix + uuid.uuid4().hex[:n]


# ---------------------------------------------------------------- Anthropic Messages

def block_texts(content, skip_reminders=True):
    """Text of the text blocks of a message content (string or list of blocks)."""
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text") or ""
                if skip_reminders and text.lstrip().startswith("<system-reminder>"):
                    continue
                out.append(text)
    return out


def has_block(content, kind):
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == kind for b in content)


def anthropic_cwd(body):
    texts = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts.extend(b.get("text") or "" for b in system if isinstance(b, dict))
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") == "system":
            texts.extend(block_texts(msg.get("content"), skip_reminders=False))
    for text in texts:
        m = CWD_RE.search(text)
        if m:
            return m.group(1).strip()
    return None


def anthropic_decide(body):
    """Returns (answer, detail) where answer is one of tool_result, write, footer, help,
    nofooter, error, default."""
    messages = [m for m in (body.get("messages") or []) if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return "default", None
    last = messages[-1] if messages else None
    if last is not None and last.get("role") == "user" and has_block(last.get("content"), "tool_result"):
        history = []
        for m in messages:
            if m.get("role") == "user":
                history.extend(block_texts(m.get("content")))
        return "tool_result", last_write_name(history)
    texts = block_texts(users[-1].get("content"))
    with_marker = [t for t in texts if last_marker(t)]
    text = with_marker[-1] if with_marker else (texts[-1] if texts else "")
    marker = last_marker(text)
    if not marker:
        return "default", None
    return marker


USAGE_FIELDS = ("input", "cached", "cache_write", "output", "reasoning")


def chosen_usage(path, answer):
    """The usage the test chose for this answer (see --usage), or None."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except FileNotFoundError:
        return None
    entry = table.get(answer, table.get("*"))
    if entry is None:
        return None
    usage = {k: int(entry.get(k, 0)) for k in USAGE_FIELDS}
    usage["delay"] = float(entry.get("delay", 0))
    usage["hold"] = float(entry.get("hold", 0))
    if usage["cached"] + usage["cache_write"] > usage["input"] or usage["reasoning"] > usage["output"]:
        raise ValueError("usage for %s: cached + cache_write > input or reasoning > output" % answer)
    return usage


def default_usage(raw, out_len):
    return {"input": max(1, len(raw) // 4), "cached": 0, "cache_write": 0,
            "output": max(1, out_len // 4), "reasoning": 0, "delay": 0.0, "hold": 0.0}


def anthropic_usage(usage, output_tokens):
    return {"input_tokens": usage["input"] - usage["cached"] - usage["cache_write"],
            "cache_creation_input_tokens": usage["cache_write"],
            "cache_read_input_tokens": usage["cached"],
            "output_tokens": output_tokens}


def anthropic_out_len(text=None, tool=None):
    return len(text or "") + (len(json.dumps(tool[1])) if tool else 0)


def anthropic_events(model, usage, text=None, tool=None):
    msg_id = rand_id("msg_mock_")
    events = [("message_start", {
        "type": "message_start",
        "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": anthropic_usage(usage, 1),
        },
    }), ("ping", {"type": "ping"})]
    index = 0
    if text is not None:
        events.append(("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}))
        for piece in chunks(text):
            events.append(("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if tool is not None:
        if usage.get("hold", 0) > 0:
            events.append(("hold", usage["hold"]))
        name, tool_input = tool
        partial = json.dumps(tool_input)
        events.append(("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": rand_id("toolu_mock_"),
                              "name": name, "input": {}}}))
        events.append(("content_block_delta", {
            "type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": partial}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
        "usage": anthropic_usage(usage, usage["output"])}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# ---------------------------------------------------------------- OpenAI Responses

CONTEXT_PREFIXES = (
    "<environment_context>", "<user_instructions>", "<permissions instructions>",
    "<user_shell_command>", "<turn_aborted>", "# AGENTS.md instructions",
)


def item_texts(item):
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("input_text", "text", "output_text"):
                out.append(part.get("text") or "")
    return out


def is_context_text(text):
    """codex wraps its own context (environment, AGENTS.md, ...) as user items."""
    stripped = text.strip()
    return not stripped or stripped.startswith(CONTEXT_PREFIXES)


def openai_decide(body):
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    items = [i for i in (items or []) if isinstance(i, dict)]
    user_texts = []  # real user texts, oldest first
    for item in items:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            real = [t for t in item_texts(item) if not is_context_text(t)]
            if real:
                user_texts.append(real)
    if items and items[-1].get("type") in ("function_call_output", "custom_tool_call_output"):
        flat = [t for texts in user_texts for t in texts]
        return "tool_result", last_write_name(flat)
    if not user_texts:
        return "default", None
    texts = user_texts[-1]
    with_marker = [t for t in texts if last_marker(t)]
    marker = last_marker(with_marker[-1]) if with_marker else None
    if not marker:
        return "default", None
    return marker


def openai_out_len(text=None, call=None):
    return len(json.dumps(call[1])) if call is not None else len(text or "")


def openai_events(model, usage, text=None, call=None):
    resp_id = rand_id("resp_mock_", 16)
    created = int(time.time())
    base = {"id": resp_id, "object": "response", "created_at": created, "model": model}
    events = [
        ("response.created", {"type": "response.created",
                              "response": dict(base, status="in_progress", output=[])}),
        ("response.in_progress", {"type": "response.in_progress",
                                  "response": dict(base, status="in_progress", output=[])}),
    ]
    if call is not None and call[0] == SEARCH_CALL:
        item_id = rand_id("tsc_", 16)
        done_item = {"type": "tool_search_call", "id": item_id, "call_id": rand_id("call_mock_", 16),
                     "execution": "client", "arguments": call[1], "status": "completed"}
        events += [
            ("response.output_item.added", {
                "type": "response.output_item.added", "output_index": 0,
                "item": dict(done_item, status="in_progress")}),
            ("response.output_item.done", {
                "type": "response.output_item.done", "output_index": 0, "item": done_item}),
        ]
        output = [done_item]
    elif call is not None:
        name, args = call
        namespace = None
        if isinstance(name, tuple):  # (namespace or None, name): an MCP tool of codex
            namespace, name = name
        arguments = json.dumps(args)
        item_id = rand_id("fc_", 16)
        call_id = rand_id("call_mock_", 16)
        done_item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                     "arguments": arguments, "status": "completed"}
        added = {"type": "function_call", "id": item_id, "call_id": call_id,
                 "name": name, "arguments": "", "status": "in_progress"}
        if namespace:
            done_item["namespace"] = added["namespace"] = namespace
        events += [
            ("response.output_item.added", {
                "type": "response.output_item.added", "output_index": 0,
                "item": added}),
            ("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": 0, "delta": arguments}),
            ("response.function_call_arguments.done", {
                "type": "response.function_call_arguments.done", "item_id": item_id,
                "output_index": 0, "arguments": arguments}),
            ("response.output_item.done", {
                "type": "response.output_item.done", "output_index": 0, "item": done_item}),
        ]
        output = [done_item]
    else:
        item_id = rand_id("msg_mock_", 16)
        part = {"type": "output_text", "text": text, "annotations": []}
        done_item = {"type": "message", "id": item_id, "role": "assistant",
                     "status": "completed", "content": [part]}
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        events += [
            ("response.output_item.added", {
                "type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "id": item_id, "role": "assistant",
                         "status": "in_progress", "content": []}}),
            ("response.content_part.added", dict(
                {"type": "response.content_part.added"}, **where,
                part={"type": "output_text", "text": "", "annotations": []})),
        ]
        for piece in chunks(text):
            events.append(("response.output_text.delta", dict(
                {"type": "response.output_text.delta"}, **where, delta=piece)))
        events += [
            ("response.output_text.done", dict(
                {"type": "response.output_text.done"}, **where, text=text)),
            ("response.content_part.done", dict(
                {"type": "response.content_part.done"}, **where, part=part)),
            ("response.output_item.done", {
                "type": "response.output_item.done", "output_index": 0, "item": done_item}),
        ]
        output = [done_item]
    events.append(("response.completed", {
        "type": "response.completed",
        "response": dict(base, status="completed", output=output, usage={
            "input_tokens": usage["input"],
            "input_tokens_details": {"cached_tokens": usage["cached"]},
            "output_tokens": usage["output"],
            "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
            "total_tokens": usage["input"] + usage["output"]})}))
    return events


# ---------------------------------------------------------------- the scripted lead

LEAD_RE = re.compile(r"\[\[mock:lead[ \t]+([^\]\s]+)[ \t]*\]\]")
LEAD_TASK = "store"
LEAD_SCOPE = "src/routes/**"
LEAD_VERIFY = "test -s src/routes/store.rs"
LEAD_PROMPT = "Pick a store for the routes and write it to src/routes/store.rs."
LEAD_ADVICE = "Use sqlite."
SKILL_TOOL = "Skill"
SKILL_NAME = "git-crew"
# codex offers a catalog model's MCP tools only through its client-side tool search.
SEARCH_TOOL = "tool_search"
SEARCH_CALL = ("tool_search",)
# The heading of the shipped skill and AGENTS.md section: a request that carries it
# carries git-crew's guide for the lead.
GUIDE_HEADING = "Leading a crew of coding workers with git-crew"
# codex puts a header of its own before an MCP tool's text: "Wall time: 0.04 seconds\n
# Output:\n" then the text.
CODEX_OUTPUT_RE = re.compile(r"\AWall time: [0-9.]+ seconds\nOutput:\n")


def lead_backend(texts):
    """The backend named by the last lead marker in texts (oldest first), or None."""
    for text in reversed(texts):
        names = LEAD_RE.findall(text or "")
        if names:
            return names[-1]
    return None


def crew_tool_short(name):
    """git-crew's name of an MCP tool as a CLI offers it (mcp__git-crew__wait -> wait)."""
    return name.rsplit("__", 1)[-1] if name.startswith("mcp__") else name


def lead_json(texts):
    """The JSON object of a tool result's first text (after codex's header), or None."""
    for text in texts:
        text = CODEX_OUTPUT_RE.sub("", text, count=1)
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def lead_final(text):
    return None, text + "\n\n## Result\nLed the crew with the mock.\n\n" \
        "## How to verify\ngit log\n\n## Deferred / concerns\nNone."


def lead_step(backend, offered, last):
    """The lead's next move, from the latest tool result and the tool that produced it.
    offered: the short names of the tools on offer; last: None (no tool result yet) or
    {"tool": short name, "texts": [...], ...}. Returns (tool, arguments) for a tool call,
    or (None, text) for the final text."""
    dispatch = ("dispatch", {"task": LEAD_TASK, "backend": backend, "scope": [LEAD_SCOPE],
                             "verify": LEAD_VERIFY, "prompt": LEAD_PROMPT})
    if last is None:
        # Claude Code lists the project's skills: load git-crew's before anything else.
        return (SKILL_TOOL, {"skill": SKILL_NAME}) if SKILL_TOOL in offered else dispatch
    tool = last["tool"]
    if tool == SKILL_TOOL:
        return dispatch
    result = lead_json(last["texts"])
    if result is None:
        return lead_final("The %s tool answered no JSON." % tool)
    if result.get("ok") is not True:
        error = result.get("error") or {}
        return lead_final("git-crew refused %s: %s: %s" % (
            tool, error.get("code"), error.get("message")))
    if tool == "dispatch":
        return "wait", {"runs": [result["run"]]}
    if tool == "wait":
        if result.get("timed_out"):
            return "wait", {"runs": result.get("still_working") or
                            [r["run"] for r in result.get("runs") or []]}
        run = (result.get("runs") or [{}])[0]
        if run.get("phase") == "needs-help":
            return "advise", {"run": run["run"], "text": LEAD_ADVICE}
        return "show", {"run": run["run"]}
    if tool == "advise":
        return "wait", {"runs": [result["run"]]}
    if tool == "show":
        return "integrate", {"run": result["run"]["run"]}
    if tool == "integrate":
        # Once more: git-crew refuses a run it integrated already.
        return "integrate", {"run": result["run"]}
    return lead_final("Nothing more to do after %s." % tool)


def lead_move(backend, offered, last, searched):
    """lead_step, but a tool that is not on offer yet is searched for first (codex's tool
    search, by the tool's name), once: `searched` is the query of a search that just
    answered."""
    step, what = lead_step(backend, offered, last)
    if step is not None and step not in offered:
        if SEARCH_TOOL in offered and searched != step:
            return SEARCH_TOOL, {"query": step}
        return lead_final("The %s tool is not on offer." % step)
    return step, what


def anthropic_lead(body):
    """(backend, offered {short: name}, last tool result, None) when the conversation is
    the scripted lead's, else None. A tool result is the last user message's (Claude
    Code may end a request with a role:"system" reminder of its own); for the Skill tool,
    the skill's text Claude Code puts beside it comes with it."""
    messages = [m for m in (body.get("messages") or []) if isinstance(m, dict)]
    texts = []
    for m in messages:
        if m.get("role") == "user":
            texts.extend(block_texts(m.get("content")))
    backend = lead_backend(texts)
    if backend is None:
        return None
    offered = {}
    for t in body.get("tools") or []:
        name = t.get("name") if isinstance(t, dict) else None
        if name and (name == SKILL_TOOL or (name.startswith("mcp__") and "crew" in name)):
            offered[crew_tool_short(name)] = name
    last = None
    said = [m for m in messages if m.get("role") != "system"]
    content = said[-1].get("content") if said else None
    if said and said[-1].get("role") == "user" and has_block(content, "tool_result"):
        result = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"][-1]
        names = {}
        for m in messages:
            if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_use":
                        names[b.get("id")] = b.get("name")
        tool = crew_tool_short(names.get(result.get("tool_use_id")) or "?")
        last = {"tool": tool, "texts": block_texts(result.get("content"), skip_reminders=False),
                "is_error": bool(result.get("is_error"))}
        if tool == SKILL_TOOL:
            last["beside"] = block_texts(content)
    return backend, offered, last, None


def openai_lead(body):
    """The same for codex: its MCP tools come as functions in a namespace (or as
    functions named mcp__<server>__<tool>), offered in the request or found by a tool
    search; a call is answered by a function_call_output with the call's call_id. The
    fourth value is the query of the tool search that answered last, if one did."""
    items = body.get("input")
    items = [i for i in (items if isinstance(items, list) else []) if isinstance(i, dict)]
    texts = []
    for item in items:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            texts.extend(t for t in item_texts(item) if not is_context_text(t))
    backend = lead_backend(texts)
    if backend is None:
        return None
    offered = {}
    found = [t for i in items if i.get("type") == "tool_search_output"
             for t in (i.get("tools") or [])]
    for t in (body.get("tools") or []) + found:
        if not isinstance(t, dict):
            continue
        if t.get("type") == SEARCH_TOOL:
            offered[SEARCH_TOOL] = SEARCH_CALL
        elif t.get("type") == "namespace" and "crew" in (t.get("name") or ""):
            for inner in t.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    offered[inner["name"]] = (t["name"], inner["name"])
        elif t.get("type") == "function" and (t.get("name") or "").startswith("mcp__") \
                and "crew" in t["name"]:
            offered[crew_tool_short(t["name"])] = (None, t["name"])
    searched = None
    if items and items[-1].get("type") == "tool_search_output":
        call_id = items[-1].get("call_id")
        for i in items:
            if i.get("type") == "tool_search_call" and i.get("call_id") == call_id:
                arguments = i.get("arguments")
                if isinstance(arguments, str):
                    arguments = json.loads(arguments or "{}")
                searched = (arguments or {}).get("query")
    # The latest tool result, past the tool searches that answered after it.
    last = None
    said = [i for i in items if i.get("type") not in ("tool_search_call", "tool_search_output")]
    if said and said[-1].get("type") == "function_call_output":
        output = said[-1]
        calls = {i.get("call_id"): i for i in items if i.get("type") == "function_call"}
        call = calls.get(output.get("call_id")) or {}
        out = output.get("output")
        if isinstance(out, dict):  # {"content": ..., "success": ...}
            out = out.get("content")
        if isinstance(out, str):
            out_texts = [out]
        else:
            out_texts = [p.get("text") or "" for p in (out or [])
                         if isinstance(p, dict) and p.get("type") in ("input_text", "text", "output_text")]
        last = {"tool": crew_tool_short(call.get("name") or "?"), "texts": out_texts,
                "namespace": call.get("namespace")}
    return backend, offered, last, searched


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-model-server/1"

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                line = self.rfile.readline()
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length > 0 else b""
        encoding = (self.headers.get("Content-Encoding") or "").lower().strip()
        if encoding == "gzip":
            data = gzip.decompress(data)
        elif encoding == "deflate":
            data = zlib.decompress(data)
        elif encoding in ("", "identity"):
            pass
        else:
            raise ValueError("unsupported Content-Encoding: %s" % encoding)
        return data

    def record(self, **fields):
        entry = {"time": round(time.time(), 3), "method": self.command, "path": self.path}
        entry.update(fields)
        self.server.write_log(entry)

    def send_plain(self, status, body, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def send_sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            if name == "hold":
                time.sleep(data)
                continue
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode())
            self.wfile.flush()
        self.close_connection = True

    def not_found(self):
        try:
            if self.command not in ("GET", "HEAD"):
                self.read_body()
        except Exception:
            pass
        self.record(status=404, answer=None)
        self.send_plain(404, json.dumps({"error": {"message": "mock: no such endpoint",
                                                   "type": "not_found"}}))

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = not_found

    def do_POST(self):
        route = self.path.split("?", 1)[0]
        if route not in ("/v1/messages", "/v1/responses"):
            return self.not_found()
        api = "anthropic" if route == "/v1/messages" else "openai"
        try:
            raw = self.read_body()
            body = json.loads(raw.decode("utf-8") or "{}")
        except Exception as exc:  # a malformed request: answer 400, log why
            self.record(status=400, api=api, answer="bad-request", detail=str(exc))
            return self.send_plain(400, json.dumps(error_body(api, "mock: " + str(exc))))
        self.server.dump(api, raw)
        model = body.get("model") or "mock-model"
        lead = anthropic_lead(body) if api == "anthropic" else openai_lead(body)
        if lead is not None:
            answer, detail = "lead", None
        elif api == "anthropic":
            answer, detail = anthropic_decide(body)
        else:
            answer, detail = openai_decide(body)
        if api == "anthropic":
            session = self.headers.get("X-Claude-Code-Session-Id")
        else:
            session = self.headers.get("session-id") or self.headers.get("thread-id")
        fields = {"api": api, "answer": answer, "model": model, "session": session}
        if detail:
            fields["file"] = detail
        if answer == "error":
            self.record(status=400, **fields)
            return self.send_plain(400, json.dumps(error_body(api, ERROR_MESSAGE)))
        text = tool = None
        if answer == "lead":
            backend, offered, last, searched = lead
            step, what = lead_move(backend, offered, last, searched)
            # A tool result is logged once, with the answer to it: not again after the
            # tool searches that followed it.
            fields["lead"] = {"saw": None if searched else last, "offered": sorted(offered),
                              "guide": GUIDE_HEADING in raw.decode("utf-8", "replace")}
            if searched:
                fields["lead"]["searched"] = searched
            if step is None:
                text = what
                fields["lead"]["text"] = text
            else:
                fields["lead"].update(call=step, arguments=what)
                tool = (offered[step], what)
                if api == "anthropic":
                    text = "Calling %s." % step
        elif answer == "tool_result":
            text = wrote_text(detail) if detail else GENERIC_TOOL_DONE_TEXT
        elif answer == "write":
            if api == "anthropic":
                cwd = anthropic_cwd(body)
                fields["cwd"] = cwd
                path = detail if os.path.isabs(detail) or not cwd else os.path.join(cwd, detail)
                text = "I'll create %s now." % detail
                tool = ("Write", {"file_path": path, "content": FILE_CONTENT})
            else:
                cmd = "printf 'hello from the mock\\n' > %s" % shlex.quote(detail)
                tool = ("exec_command", {"cmd": cmd})
        elif answer == "footer":
            text = FOOTER_TEXT
        elif answer == "help":
            text = HELP_TEXT
        elif answer == "nofooter":
            text = NOFOOTER_TEXT
        else:
            text = DEFAULT_TEXT
        try:
            usage = chosen_usage(self.server.usage_path, answer)
        except Exception as exc:  # a broken usage file: say so, loudly
            self.record(status=500, answer="bad-usage", detail=str(exc))
            return self.send_plain(500, json.dumps(error_body(api, "mock: " + str(exc))))
        if api == "anthropic":
            usage = usage or default_usage(raw, anthropic_out_len(text, tool))
        else:
            usage = usage or default_usage(raw, openai_out_len(text, tool))
        fields["usage"] = {k: usage[k] for k in USAGE_FIELDS}
        self.record(status=200, **fields)
        if usage["delay"] > 0:
            time.sleep(usage["delay"])
        if api == "anthropic":
            events = anthropic_events(model, usage, text=text, tool=tool)
        else:
            events = openai_events(model, usage, text=text, call=tool)
        try:
            self.send_sse(events)
        except (BrokenPipeError, ConnectionResetError):
            pass


def error_body(api, message):
    if api == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error"}}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, log_path, dump_dir, usage_path):
        super().__init__(addr, handler)
        self.log_path = log_path
        self.usage_path = usage_path
        self.dump_dir = dump_dir
        self.lock = threading.Lock()
        self.count = 0

    def write_log(self, entry):
        if not self.log_path:
            return
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line)

    def dump(self, api, raw):
        if not self.dump_dir:
            return
        with self.lock:
            self.count += 1
            n = self.count
        with open(os.path.join(self.dump_dir, "%03d-%s.json" % (n, api)), "wb") as f:
            f.write(raw)


def main():
    parser = argparse.ArgumentParser(description="Scripted model server for the tests.")
    parser.add_argument("--port-file", required=True, help="where to write the port number")
    parser.add_argument("--log", help="append one JSON line per request here")
    parser.add_argument("--lifetime", type=float, default=300.0,
                        help="exit after this many seconds (default 300)")
    parser.add_argument("--dump", help="save each request body in this directory")
    parser.add_argument("--usage", help="a JSON file choosing the usage each answer reports")
    args = parser.parse_args()

    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    server = Server(("127.0.0.1", 0), Handler, args.log, args.dump, args.usage)
    port = server.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d" % port)
    os.replace(tmp, args.port_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(args.lifetime, stop)
    timer.daemon = True
    timer.start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        timer.cancel()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
