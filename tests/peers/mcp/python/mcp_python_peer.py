"""Drives the openwop MCP mount with the pinned Python `mcp` client: list and call over
streamable HTTP in both eras (2026-07-28 and the 2025-11-25 initialize era) and over
stdio (`openwop mcp-stdio`). Exits non-zero on the first broken expectation.

Env: OPENWOP_MCP_URL (http://127.0.0.1:PORT/mcp), OPENWOP_API_KEY, and for stdio
OPENWOP_BIN (the openwop binary) plus OPENWOP_STDIO_DATA_DIR.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client, StdioServerParameters

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
    binary = os.environ.get("OPENWOP_BIN")
    if binary:
        params = StdioServerParameters(
            command=binary,
            args=["mcp-stdio", "--data-dir", os.environ["OPENWOP_STDIO_DATA_DIR"], "--api-key", f"acme:{KEY}"],
            env={"OPENWOP_API_KEY": KEY},
        )
        async with Client(params, mode="2026-07-28", raise_exceptions=True) as client:
            await exercise(client, "stdio-2026")
        async with Client(params, mode="legacy", raise_exceptions=True) as client:
            await exercise(client, "stdio-legacy")


asyncio.run(main())
