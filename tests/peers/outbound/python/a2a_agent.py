"""A remote A2A agent served by the Python a2a-sdk's own server, for an openwop workflow
to call. What it does depends on the first message's text:

- contains "ask": INPUT_REQUIRED with a question; the next message of the same task is
  the answer, and the task completes with an artifact that quotes it;
- contains "auth": AUTH_REQUIRED whose status message carries a data part with an https
  connectUrl, provider and scopes; the next message (the grant) completes it;
- contains "reject": REJECTED with a reason;
- contains "break": FAILED with a reason;
- contains "slowly": WORKING for 1.5 s, then COMPLETED;
- starts with "just say" (a new task): a direct Message reply, no task;
- anything else: COMPLETED with one artifact of a text part and a data part.

Usage: python a2a_agent.py PORT
"""

import asyncio
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_message_text,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState

from record import RecordHeaders

CONNECT_URL = "https://auth.example.com/connect/py-agent"


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = get_message_text(message)
        task = context.current_task
        if task is None and "just say" in text:
            # A direct Message reply: no task at all.
            reply = new_text_message(f"said: {text}", context_id=message.context_id or None)
            await event_queue.enqueue_event(reply)
            return
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        state = task.status.state
        if state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"Hello, {text}!")], name="greeting")
            await updater.complete()
        elif state == TaskState.TASK_STATE_AUTH_REQUIRED:
            grant = get_data_parts(message.parts)
            await updater.add_artifact([new_data_part({"grant": grant[0] if grant else None})], name="grant")
            await updater.complete()
        elif "ask" in text:
            await updater.requires_input(updater.new_agent_message([new_text_part("What is your name?")]))
        elif "auth" in text:
            grant = {"connectUrl": CONNECT_URL, "provider": "example-idp", "scopes": ["calendar.read"], "reason": "missing"}
            await updater.requires_auth(
                updater.new_agent_message([new_text_part("Connect your calendar first."), new_data_part(grant)])
            )
        elif "slowly" in text:
            # WORKING for a while before the answer: the host follows the task by GetTask.
            await updater.start_work()
            await asyncio.sleep(1.5)
            await updater.add_artifact([new_text_part(f"done: {text}")], name="answer")
            await updater.complete()
        elif "break" in text:
            await updater.failed(updater.new_agent_message([new_text_part("The kettle broke.")]))
        elif "reject" in text:
            await updater.reject(updater.new_agent_message([new_text_part("I do not take that kind of work.")]))
        else:
            await updater.add_artifact(
                [new_text_part(f"echo: {text}"), new_data_part({"said": text, "by": "a2a-sdk"})], name="answer"
            )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def app(port: int):
    card = AgentCard(
        name="outbound-py-agent",
        description="The remote agent an openwop workflow calls (tests/peers/outbound)",
        version="1.0.0",
        # An agent part-way through the 1.0 migration: the SDK's 0.3 compatibility on the
        # same endpoint, and the card lists the 0.3 interface first (for old clients).
        # A2A 1.0 §5 allows interfaces of different versions; a 1.0 client must find its own.
        supported_interfaces=[
            AgentInterface(url=f"http://127.0.0.1:{port}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="0.3"),
            AgentInterface(url=f"http://127.0.0.1:{port}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="Answers, asks, or refuses", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/a2a/jsonrpc", enable_v0_3_compat=True)
    return RecordHeaders(Starlette(routes=routes), "py-a2a")


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="warning")
