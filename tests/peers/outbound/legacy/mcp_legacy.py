"""An MCP server of the 2025-06-18 era (the Python `mcp` SDK 1.12.4, FastMCP over
streamable HTTP): below the host's MCP floor, so a workflow's call to it must fail
closed with `interop_version_unsupported`.

Usage: python mcp_legacy.py PORT
"""

import os
import sys

import uvicorn

from mcp.server.fastmcp import FastMCP

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from record import RecordHeaders  # noqa: E402

server = FastMCP("outbound-legacy-tools")


@server.tool()
def forecast(city: str) -> dict:
    """The weather in a city (a fixed answer)."""
    return {"city": city, "sky": "rain"}


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(RecordHeaders(server.streamable_http_app(), "legacy-mcp"), host="127.0.0.1", port=port, log_level="warning")
