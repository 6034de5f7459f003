"""Drives the openwop MCP mount with the pinned Python `mcp` client: list and call over
streamable HTTP in both eras (2026-07-28 and the 2025-11-25 initialize era) and over
stdio (`openwop mcp-stdio`); human-in-the-loop runs answered through the client's
elicitation callback in both eras (InputRequiredResult in 2026-07-28, server-to-client
elicitation/create on the call's stream in 2025-11-25); a 60 s run without the tasks
extension that reports progress. Exits non-zero on the first broken expectation.

OPENWOP_MCP_LONG_RUN_MS shortens the long run (default 60000).

Env: OPENWOP_MCP_URL (http://127.0.0.1:PORT/mcp), OPENWOP_API_KEY, and for stdio
OPENWOP_BIN (the openwop binary) plus OPENWOP_STDIO_DATA_DIR.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client, StdioServerParameters, types

URL = os.environ["OPENWOP_MCP_URL"]
KEY = os.environ["OPENWOP_API_KEY"]


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


async def exercise(client, label):
    tools = await client.list_tools()
    names = [t.name for t in tools.tools]
    check(names == sorted(names) and "echo" in names, f"{label}: tools/list sorted, has echo ({len(names)} tools)")
    result = await client.call_tool("echo", {"from": label})
    check(not result.is_error, f"{label}: tools/call echo is not an error")
    text = result.content[0].text
    check(json.loads(text).get("from") == label, f"{label}: echo returns its arguments")
    failed = await client.call_tool("fail", {})
    check(failed.is_error, f"{label}: a failed run is isError")
    # SEP-1303: arguments that fail the tool's inputSchema are a tool error the model reads.
    invalid = await client.call_tool("slow", {"ms": "x"})
    check(invalid.is_error and "argument `ms`" in invalid.content[0].text,
          f"{label}: arguments failing the inputSchema are an isError result naming them")


asked = []


async def on_elicit(context, params):
    """A user who approves and answers every question."""
    asked.append(params.mode)
    if params.mode == "url":
        return types.ElicitResult(action="accept")
    props = params.requested_schema.get("properties", {})
    if "decision" in props:
        return types.ElicitResult(action="accept", content={"decision": "accept"})
    return types.ElicitResult(action="accept", content={k: f"answer to {k}" for k in props})


async def human_in_the_loop(client, label):
    before = len(asked)
    result = await client.call_tool("approval", {})
    check(not result.is_error, f"{label}: an approval run answered through the elicitation callback completes")
    check(result.structured_content["decision"]["action"] == "accept", f"{label}: the approval carries the answer")
    result = await client.call_tool("clarify", {})
    check(not result.is_error, f"{label}: a clarification run answered through the callback completes")
    check(result.structured_content["answer"]["q1"] == "answer to q1", f"{label}: the clarification carries the answer")
    check(len(asked) - before == 2, f"{label}: the callback was asked twice")


async def long_run(client, label):
    ms = int(os.environ.get("OPENWOP_MCP_LONG_RUN_MS", "60000"))
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, message))

    result = await client.call_tool("slow", {"ms": ms}, read_timeout_seconds=ms / 1000 + 60, progress_callback=on_progress)
    check(not result.is_error, f"{label}: a {ms} ms run without tasks completes within one call")
    check(len(seen) >= 2, f"{label}: progress was reported while it ran ({len(seen)} notifications)")
    values = [p for p, _ in seen]
    check(values == sorted(values) and len(set(values)) == len(values), f"{label}: progress increases")


def http_transport():
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    return streamable_http_client(URL, http_client=http)


async def main():
    async with Client(http_transport(), mode="2026-07-28", raise_exceptions=True) as client:
        await exercise(client, "http-2026")
    async with Client(http_transport(), mode="legacy", raise_exceptions=True) as client:
        await exercise(client, "http-legacy")
    async with Client(http_transport(), mode="auto", raise_exceptions=True) as client:
        await exercise(client, "http-auto")
    async with Client(http_transport(), mode="auto", elicitation_callback=on_elicit, raise_exceptions=True) as client:
        await human_in_the_loop(client, "http-auto (2026-07-28)")
    async with Client(http_transport(), mode="legacy", elicitation_callback=on_elicit, raise_exceptions=True) as client:
        await human_in_the_loop(client, "http-legacy (2025-11-25)")
    async with Client(http_transport(), mode="auto", raise_exceptions=True) as client:
        await long_run(client, "http-auto")
    binary = os.environ.get("OPENWOP_BIN")
    if binary:
        params = StdioServerParameters(
            command=binary,
            args=["mcp-stdio", "--data-dir", os.environ["OPENWOP_STDIO_DATA_DIR"]],
            env={"OPENWOP_API_KEY": f"acme:{KEY}"},
        )
        async with Client(params, mode="2026-07-28", raise_exceptions=True) as client:
            await exercise(client, "stdio-2026")
        async with Client(params, mode="legacy", raise_exceptions=True) as client:
            await exercise(client, "stdio-legacy")
        async with Client(params, mode="2026-07-28", elicitation_callback=on_elicit, raise_exceptions=True) as client:
            await human_in_the_loop(client, "stdio-2026")
        async with Client(params, mode="legacy", elicitation_callback=on_elicit, raise_exceptions=True) as client:
            await human_in_the_loop(client, "stdio-legacy")


asyncio.run(main())
