"""The Python a2a-sdk client against the host, over both bindings.

Each step is what a real A2A peer does: resolve the card, send a blocking message,
answer an interrupt on the same task, read, list, cancel, stream, and read our errors
the way the SDK parses them.
"""

import asyncio
import http.server
import json
import threading
import uuid

import httpx
import pytest
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf import struct_pb2

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SubscribeToTaskRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

BINDINGS = ["JSONRPC", "HTTP+JSON"]


def run(coro):
    return asyncio.run(coro)


def message(parts, skill=None, task_id=None, context_id=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if skill:
        m.metadata.update({"openwop": {"skill": skill}})
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return m


async def client_for(base_url, api_key, binding, streaming=False, polling=False):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}, timeout=30)
    config = ClientConfig(
        streaming=streaming,
        polling=polling,
        httpx_client=http,
        supported_protocol_bindings=[binding],
        use_client_preference=True,
    )
    client = await ClientFactory(config).create_from_url(base_url)
    return client, http


async def send(client, msg, configuration=None):
    request = SendMessageRequest(message=msg)
    if configuration is not None:
        request.configuration.CopyFrom(configuration)
    events = [e async for e in client.send_message(request)]
    return events


def test_card_resolves_with_both_bindings_and_the_bearer_scheme(base_url):
    async def go():
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, base_url).get_agent_card()
        bindings = [i.protocol_binding for i in card.supported_interfaces]
        assert bindings[0] == "JSONRPC"
        assert "HTTP+JSON" in bindings
        assert {i.protocol_version for i in card.supported_interfaces} == {"1.0"}
        assert {"echo", "approval", "slow"} <= {s.id for s in card.skills}
        assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
        assert card.capabilities.streaming is True

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_blocking_send_get_and_list(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding)
        try:
            events = await send(client, message([new_data_part({"hello": binding})], skill="echo"))
            assert len(events) == 1 and events[0].HasField("task")
            task = events[0].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_data_parts(task.artifacts[0].parts) == [{"hello": binding}]
            got = await client.get_task(GetTaskRequest(id=task.id))
            assert got.id == task.id and got.context_id == task.context_id
            listed = await client.list_tasks(ListTasksRequest(page_size=100))
            assert task.id in [t.id for t in listed.tasks]
            assert listed.total_size >= 1
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_multi_turn_interrupt_resolution(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding)
        try:
            first = (await send(client, message([new_data_part({"title": "ship it"})], skill="approval")))[0].task
            assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert MessageToDict(first.metadata)["openwop"]["interrupt"]["kind"] == "approval"
            # A contextId that is not the task's is invalid params and changes nothing. This
            # SDK's REST client maps errors by their ErrorInfo reason: every HTTP+JSON refusal
            # carries one (INVALID_PARAMS here), so both bindings raise InvalidParamsError.
            with pytest.raises(InvalidParamsError):
                await send(client, message([new_data_part({"action": "accept"})], task_id=first.id, context_id="not-this-one"))
            still = await client.get_task(GetTaskRequest(id=first.id))
            assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            reply = message([new_data_part({"action": "accept"})], task_id=first.id)
            done = (await send(client, reply))[0].task
            assert done.id == first.id
            assert done.context_id == first.context_id
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            # The task is terminal now: another message is UnsupportedOperationError.
            with pytest.raises(UnsupportedOperationError):
                await send(client, message([new_text_part("again")], task_id=first.id))
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel_a_slow_task(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding, polling=True)
        try:
            task = (await send(client, message([new_data_part({"ms": 60000})], skill="slow")))[0].task
            assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_sends_the_task_first(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding, streaming=True)
        try:
            events = await send(client, message([new_data_part({"title": "stream"})], skill="approval"))
            assert events and events[0].HasField("task")
            for e in events[1:]:
                assert e.HasField("status_update") or e.HasField("artifact_update")
            last = events[-1]
            state = last.task.status.state if last.HasField("task") else last.status_update.status.state
            assert state == TaskState.TASK_STATE_INPUT_REQUIRED
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_unknown_task_is_task_not_found(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding)
        try:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="nobody/r-0000000000000000000000"))
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id="nobody/r-0000000000000000000000"))
        finally:
            await client.close()
            await http.aclose()

    run(go())


class PushReceiver:
    """A loopback webhook receiver: records each push (path, headers, JSON body)."""

    def __init__(self):
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                # Header names as sent can be any case; keep them lower-cased.
                received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def wait(self, predicate, timeout=10.0):
        for _ in range(int(timeout / 0.05)):
            found = [r for r in self.received if predicate(r)]
            if found:
                return found
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching push; got {self.received}")

    def close(self):
        self.server.shutdown()


@pytest.mark.parametrize("binding", BINDINGS)
def test_push_config_registered_by_the_sdk_is_delivered(base_url, api_key, binding):
    """The SDK registers a push config on a waiting task, reads it back without its
    credential, and the receiver gets each state change as an A2A StreamResponse with the
    config's Authorization; the host runs with --egress-allow-loopback."""

    receiver = PushReceiver()
    secret = f"peer-secret-{uuid.uuid4()}"

    async def go():
        client, http_client = await client_for(base_url, api_key, binding)
        try:
            first = (await send(client, message([new_data_part({"title": "push"})], skill="approval")))[0].task
            assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=first.id,
                    url=f"{receiver.url}/push/{binding}",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials=secret),
                )
            )
            assert created.id and created.task_id == first.id
            assert created.authentication.scheme == "Bearer"
            assert created.authentication.credentials == ""
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=first.id, id=created.id)
            )
            assert got.url == created.url and got.authentication.credentials == ""
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=first.id)
            )
            assert [c.id for c in listed.configs] == [created.id]

            pushes = await receiver.wait(lambda r: "statusUpdate" in r[2])
            path, headers, body = pushes[0]
            assert path == f"/push/{binding}"
            assert headers["authorization"] == f"Bearer {secret}"
            assert headers["content-type"] == "application/a2a+json"
            assert body["statusUpdate"]["taskId"] == first.id
            assert body["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

            done = (await send(client, message([new_data_part({"action": "accept"})], task_id=first.id)))[0].task
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            final = await receiver.wait(lambda r: "task" in r[2])
            assert final[0][2]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert final[0][1]["authorization"] == f"Bearer {secret}"

            # Delete is idempotent; the config is gone afterwards.
            for _ in range(2):
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=first.id, id=created.id)
                )
            with pytest.raises(TaskNotFoundError):
                await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=first.id, id=created.id)
                )
        finally:
            await client.close()
            await http_client.aclose()
            receiver.close()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_with_an_inline_push_config(base_url, api_key, binding):
    receiver = PushReceiver()
    token = f"peer-token-{uuid.uuid4()}"

    async def go():
        client, http_client = await client_for(base_url, api_key, binding)
        try:
            configuration = SendMessageConfiguration(
                task_push_notification_config=TaskPushNotificationConfig(url=f"{receiver.url}/inline", token=token)
            )
            task = (await send(client, message([new_data_part({"hello": "inline"})], skill="echo"), configuration))[0].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            final = await receiver.wait(lambda r: "task" in r[2])
            assert final[0][1]["authorization"] == f"Bearer {token}"
            assert final[0][2]["task"]["id"] == task.id
        finally:
            await client.close()
            await http_client.aclose()
            receiver.close()

    run(go())


async def inventory(base_url, api_key):
    """GET /agents over plain HTTP: where a peer learns each agent's routing value R."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}) as http:
        resp = await http.get(f"{base_url}/agents")
        resp.raise_for_status()
        return resp.json()["agents"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_extended_card_with_an_agents_routing_value(base_url, api_key, binding):
    async def go():
        agents = await inventory(base_url, api_key)
        entry = next(a for a in agents if a["agentId"] == "approvals-desk")
        r = entry["a2aTenant"]
        client, http = await client_for(base_url, api_key, binding)
        try:
            assert client._card.capabilities.extended_agent_card is True
            assert all(not i.tenant for i in client._card.supported_interfaces), "the public card lists no R"
            card = await client.get_extended_agent_card(GetExtendedAgentCardRequest(tenant=r))
            assert card.name == entry["persona"]
            assert card.version == entry["packVersion"]
            assert card.description == entry.get("description", entry["label"])
            assert [s.id for s in card.skills] == entry["workflows"]
            assert card.supported_interfaces and all(i.tenant == r for i in card.supported_interfaces)
            assert card.capabilities.extended_agent_card is True
            assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
            # A value the host never minted: the one refusal, the SDK's own error type.
            with pytest.raises(ExtendedAgentCardNotConfiguredError):
                await client.get_extended_agent_card(GetExtendedAgentCardRequest(tenant="ag-AAAAAAAAAAAAAAAAAAAAAA"))
        finally:
            await client.close()
            await http.aclose()

        # A client built from the agent's card copies R into every request itself (the
        # SDK's tenant decorator); R routes, it never chooses whose task it is.
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}, timeout=30)
        config = ClientConfig(streaming=False, polling=False, httpx_client=http, supported_protocol_bindings=[binding], use_client_preference=True)
        agent_client = ClientFactory(config).create(card)
        try:
            again = await agent_client.get_extended_agent_card(GetExtendedAgentCardRequest())
            assert again.name == card.name and [s.id for s in again.skills] == entry["workflows"]
            task = (await send(agent_client, message([new_data_part({"title": "via the agent card"})], skill="approval")))[0].task
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            run_url = f"{base_url}/runs/{task.id.replace('/', '~2F')}"
            assert (await http.get(run_url)).status_code == 200, "a run of the caller's own tenant"
            got = await agent_client.get_task(GetTaskRequest(id=task.id))
            assert got.id == task.id
        finally:
            await agent_client.close()
            await http.aclose()

    run(go())


# ---------------------------------------------------------------------------------------
# A plain A2A client: it knows nothing of OpenWOP, so its messages carry no metadata at
# all. The host card's default skill (tagged `default`; `clarify`, which asks one question
# and completes with the answer) starts its tasks.


def plain(text, task_id=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[new_text_part(text)])
    if task_id:
        m.task_id = task_id
    return m


def final_state(events):
    last = events[-1]
    return last.task.status.state if last.HasField("task") else last.status_update.status.state


def test_plain_the_card_names_its_default_skill(base_url):
    async def go():
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, base_url).get_agent_card()
        assert [s.id for s in card.skills if "default" in s.tags] == ["clarify"]
        assert "message.metadata.openwop.skill" in card.description

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_plain_send_and_multi_turn_on_the_same_task(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding)
        try:
            first = (await send(client, plain("hello")))[0].task
            assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            done = (await send(client, plain("ship it", task_id=first.id)))[0].task
            assert done.id == first.id and done.context_id == first.context_id
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            assert [m.message_id for m in done.history] == [m.message_id for m in first.history] + [done.history[-1].message_id]
            assert len(done.history) == 2
            assert get_data_parts(done.artifacts[0].parts) == [{"answer": "ship it"}]
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_plain_stream_then_continue_the_task_streaming(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding, streaming=True)
        try:
            events = await send(client, plain("stream it"))
            assert events[0].HasField("task")
            assert final_state(events) == TaskState.TASK_STATE_INPUT_REQUIRED
            task_id = events[0].task.id
            more = await send(client, plain("go on", task_id=task_id))
            assert final_state(more) == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()
            await http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_plain_subscribe_to_an_input_required_task_and_follow_it_to_completion(base_url, api_key, binding):
    async def go():
        client, http = await client_for(base_url, api_key, binding)
        watcher, watcher_http = await client_for(base_url, api_key, binding, streaming=True)
        try:
            task = (await send(client, plain("wait for me")))[0].task
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

            async def follow():
                return [e async for e in watcher.subscribe(SubscribeToTaskRequest(id=task.id))]

            following = asyncio.create_task(follow())
            await asyncio.sleep(0.5)
            assert not following.done(), "the stream stays open while the task waits for input"
            done = (await send(client, plain("done now", task_id=task.id)))[0].task
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            events = await asyncio.wait_for(following, 15)
            assert events[0].HasField("task")
            assert events[0].task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert final_state(events) == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()
            await http.aclose()
            await watcher.close()
            await watcher_http.aclose()

    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_plain_push_config_crud(base_url, api_key, binding):
    receiver = PushReceiver()

    async def go():
        client, http_client = await client_for(base_url, api_key, binding)
        try:
            task = (await send(client, plain("push me")))[0].task
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=f"{receiver.url}/plain/{binding}", token="plain-token")
            )
            assert created.id and created.task_id == task.id
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
            )
            assert got.url == created.url and got.token == ""
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert [c.id for c in listed.configs] == [created.id]
            for _ in range(2):
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
                )
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert list(listed.configs) == []
            # Finished, the task still takes a config (it never fires).
            await send(client, plain("finish", task_id=task.id))
            late = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=f"{receiver.url}/late")
            )
            assert late.id and late.task_id == task.id
        finally:
            await client.close()
            await http_client.aclose()
            receiver.close()

    run(go())
