"""A remote MCP server built with the Python `mcp` SDK (MCPServer, streamable HTTP), for
an openwop workflow to call. Tools:

- `forecast(city)`: a structured result (structuredContent);
- `explode()`: a tool error (isError);
- `book(day)`: asks who the booking is for (a Resolve/Elicit dependency: at 2026-07-28
  the SDK answers `input_required` with the question and a sealed `requestState`, and
  runs the tool when the call comes again with the answer);
- `party(day)`: two independent questions, asked together in one round;
- `dinner(day)`: a question built from an earlier answer, so two rounds.

Usage: python mcp_server.py PORT
"""

import sys
from typing import Annotated

import uvicorn
from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError

from record import RecordHeaders

server = MCPServer("outbound-py-tools", version="1.0.0")


class Forecast(BaseModel):
    city: str
    sky: str
    highC: int


class Guest(BaseModel):
    name: str


class Booking(BaseModel):
    day: str
    guest: str
    confirmed: bool


@server.tool()
def forecast(city: str) -> Forecast:
    """The weather in a city (a fixed answer)."""
    return Forecast(city=city, sky="clear", highC=21)


@server.tool()
def explode() -> str:
    """Always fails as a tool error."""
    raise ToolError("the boiler is out of order")


def ask_guest() -> Elicit[Guest]:
    return Elicit("Who is the booking for?", Guest)


@server.tool()
def book(day: str, guest: Annotated[Guest, Resolve(ask_guest)]) -> Booking:
    """Books a table; asks the user who it is for."""
    return Booking(day=day, guest=guest.name, confirmed=True)


class Size(BaseModel):
    seats: int


class Diet(BaseModel):
    diet: str


def ask_size() -> Elicit[Size]:
    return Elicit("How many seats?", Size)


@server.tool()
def party(
    day: str,
    guest: Annotated[Guest, Resolve(ask_guest)],
    size: Annotated[Size, Resolve(ask_size)],
) -> Booking:
    """Two independent questions: the SDK asks both in one round."""
    return Booking(day=day, guest=f"{guest.name} x{size.seats}", confirmed=True)


def ask_diet(guest: Annotated[Guest, Resolve(ask_guest)]) -> Elicit[Diet]:
    return Elicit(f"What does {guest.name} eat?", Diet)


@server.tool()
def dinner(day: str, diet: Annotated[Diet, Resolve(ask_diet)]) -> Booking:
    """A question that depends on an earlier answer: two rounds."""
    return Booking(day=day, guest=diet.diet, confirmed=True)


if __name__ == "__main__":
    port = int(sys.argv[1])
    app = RecordHeaders(server.streamable_http_app(streamable_http_path="/mcp"), "py-mcp")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
