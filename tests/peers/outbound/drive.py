"""Drives `openwop serve` (OPENWOP_BASE_URL, tenant key OPENWOP_API_KEY) over its REST API
through workflows that call the real peers started by run.sh, and checks each outcome.
Afterwards it reads what the peers recorded of the requests they got
($OUTBOUND_RECORD_DIR): only each peer's own credential, never the caller's key, and a
W3C traceparent on every request.

Standard library only. Prints one line per check and 'N passed, N failed'."""

import json
import os
import re
import sys
import time
import traceback
import urllib.error
import urllib.request

BASE = os.environ["OPENWOP_BASE_URL"]
KEY = os.environ["OPENWOP_API_KEY"]
RECORDS = os.environ["OUTBOUND_RECORD_DIR"]
# What run.sh configured as each peer's credential (config: credential.env).
TOKENS = {
    "py-a2a": os.environ["OUTBOUND_PY_AGENT_TOKEN"],
    "js-a2a": os.environ["OUTBOUND_JS_AGENT_TOKEN"],
    "py-mcp": os.environ["OUTBOUND_PY_MCP_TOKEN"],
    "ts-mcp": os.environ["OUTBOUND_TS_MCP_TOKEN"],
    "legacy-mcp": os.environ["OUTBOUND_LEGACY_MCP_TOKEN"],
}
TRACEPARENT = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def request(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {KEY}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def projected(run_id):
    return run_id.replace("/", "~2F")


CREATED = []


def create(workflow, inputs):
    status, body = request("POST", "/runs", {"workflowId": workflow, "inputs": inputs})
    assert status == 201, f"createRun {workflow}: {status} {body}"
    CREATED.append(body["runId"])
    return body["runId"]


def wait(run_id, statuses, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        _, snap = request("GET", f"/runs/{projected(run_id)}")
        if snap.get("status") in statuses:
            return snap
        assert time.monotonic() < deadline, f"run stayed {snap.get('status')}, wanted {statuses}: {snap}"
        time.sleep(0.1)


def events(run_id):
    _, body = request("GET", f"/runs/{projected(run_id)}/events/poll?timeout=0")
    return body["events"]


def one(log, event_type):
    found = [e for e in log if e["type"] == event_type]
    assert len(found) == 1, f"{len(found)} {event_type} events in {[e['type'] for e in log]}"
    return found[0]


def resolve(run_id, node, value):
    status, body = request("POST", f"/runs/{projected(run_id)}/interrupts/{node}", {"resumeValue": value})
    assert status == 200, f"resolve {node}: {status} {body}"


def run_to_end(workflow, inputs):
    run_id = create(workflow, inputs)
    return run_id, wait(run_id, ["completed", "failed", "cancelled"])


def suspended(workflow, inputs):
    run_id = create(workflow, inputs)
    snap = wait(run_id, ["waiting-input", "completed", "failed"])
    assert snap["status"] == "waiting-input", snap
    return run_id, one(events(run_id), "interrupt.requested")["payload"]


def completes(snap):
    assert snap["status"] == "completed", snap
    return snap["outputs"]


def fails_with(snap, code):
    assert snap["status"] == "failed", snap
    assert snap["error"]["code"] == code, snap["error"]


# --- A2A: the Python a2a-sdk server ---------------------------------------------------


def py_agent_completes_with_its_artifact():
    run_id, snap = run_to_end("py-agent", {"text": "hello"})
    out = completes(snap)
    assert out["state"] == "TASK_STATE_COMPLETED", out
    assert out["text"] == "echo: hello", out
    assert out["data"] == {"said": "hello", "by": "a2a-sdk"}, out
    assert out["remoteTask"], out
    decided = one(events(run_id), "negotiation.decided")["payload"]
    assert (decided["protocol"], decided["outcome"], decided["negotiated"]) == ("a2a", "accepted", "1.0"), decided


def py_agent_question_suspends_and_the_answer_completes_the_same_task():
    run_id, asked = suspended("py-agent", {"text": "please ask me"})
    assert asked["kind"] == "clarification", asked
    data = asked["data"]
    assert data["contextType"] == "remote-agent", data
    assert [(q["id"], q["question"]) for q in data["questions"]] == [("answer", "What is your name?")], data
    resolve(run_id, "ask", {"answer": "Ada"})
    out = completes(wait(run_id, ["completed", "failed"]))
    # The agent only says hello from the INPUT_REQUIRED state of the task it asked from.
    assert out["text"] == "Hello, Ada!", out


def py_agent_auth_request_becomes_a_credential_interrupt():
    run_id, asked = suspended("py-agent", {"text": "auth first"})
    assert asked["kind"] == "credential", asked
    data = asked["data"]
    assert data["connectUrl"] == "https://auth.example.com/connect/py-agent", data
    assert data["provider"] == "example-idp", data
    assert data["scopes"] == ["calendar.read"], data
    resolve(run_id, "ask", {"outcome": "authorized"})
    out = completes(wait(run_id, ["completed", "failed"]))
    assert out["data"] == {"grant": {"outcome": "authorized"}}, out


def py_agent_rejection_fails_the_run_rejected_by_remote():
    _, snap = run_to_end("py-agent", {"text": "reject this"})
    fails_with(snap, "rejected_by_remote")
    assert "I do not take that kind of work." in snap["error"]["message"], snap["error"]


def remote_tasks_saying(port, text):
    """The tasks the A2A agent on `port` holds whose first message says `text` (ListTasks,
    asked by the driver itself, which the peer does not record)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"historyLength": 10}}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/a2a/jsonrpc", data=json.dumps(body).encode(), method="POST")
    for k, v in {"Content-Type": "application/json", "A2A-Version": "1.0", "X-Outbound-Driver": "1"}.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=10) as resp:
        answer = json.loads(resp.read())
    assert "result" in answer, answer
    tasks = answer["result"].get("tasks", [])
    return [t for t in tasks if any(p.get("text") == text for p in (t.get("history") or [{}])[0].get("parts", []))]


def remote_state_becomes(port, text, state, seconds=10):
    deadline = time.monotonic() + seconds
    while True:
        tasks = remote_tasks_saying(port, text)
        assert len(tasks) == 1, f"{len(tasks)} remote tasks say {text!r}: one message, never a second task"
        if tasks[0]["status"]["state"] == state:
            return
        assert time.monotonic() < deadline, tasks[0]["status"]
        time.sleep(0.1)


def py_agent_working_task_is_followed_until_it_completes():
    _, snap = run_to_end("py-agent", {"text": "work slowly"})
    out = completes(snap)
    assert out["text"] == "done: work slowly", out


def py_agent_failure_fails_the_run_peer_call_failed():
    _, snap = run_to_end("py-agent", {"text": "break it"})
    fails_with(snap, "peer_call_failed")
    assert "TASK_STATE_FAILED" in snap["error"]["message"], snap["error"]


def py_agent_direct_message_reply_is_the_nodes_value():
    _, snap = run_to_end("py-agent", {"text": "just say hi"})
    out = completes(snap)
    assert out["state"] == "TASK_STATE_COMPLETED", out
    assert out["text"] == "said: just say hi", out
    assert out["remoteTask"] is None, out


def py_agent_task_is_cancelled_with_the_calling_run():
    text = f"ask, then be cancelled {time.time_ns()}"
    run_id, _ = suspended("py-agent", {"text": text})
    status, body = request("POST", f"/runs/{projected(run_id)}/cancel", {})
    assert status == 200, body
    remote_state_becomes(18881, text, "TASK_STATE_CANCELED")


def py_agent_declined_grant_fails_the_run_and_cancels_the_remote_task():
    text = f"auth, then decline {time.time_ns()}"
    run_id, asked = suspended("py-agent", {"text": text})
    assert asked["kind"] == "credential", asked
    resolve(run_id, "ask", {"outcome": "declined"})
    fails_with(wait(run_id, ["completed", "failed"]), "connector_auth_declined")
    remote_state_becomes(18881, text, "TASK_STATE_CANCELED")


# --- A2A: the @a2a-js/sdk server ------------------------------------------------------


def js_agent_completes_with_its_artifact():
    _, snap = run_to_end("js-agent", {"text": "hi"})
    out = completes(snap)
    assert out["state"] == "TASK_STATE_COMPLETED", out
    assert out["text"] == "echo: hi", out
    assert out["data"] == {"said": "hi", "by": "@a2a-js/sdk"}, out


def js_agent_question_suspends_and_the_answer_completes_the_same_task():
    run_id, asked = suspended("js-agent", {"text": "ask me"})
    assert asked["data"]["questions"][0]["question"] == "Which colour?", asked
    resolve(run_id, "ask", {"answer": "blue"})
    out = completes(wait(run_id, ["completed", "failed"]))
    assert out["text"] == "Painted blue.", out


def js_agent_task_is_cancelled_with_the_calling_run():
    text = f"ask, then be cancelled {time.time_ns()}"
    run_id, _ = suspended("js-agent", {"text": text})
    status, body = request("POST", f"/runs/{projected(run_id)}/cancel", {})
    assert status == 200, body
    remote_state_becomes(18882, text, "TASK_STATE_CANCELED")


def js_agent_rejection_fails_the_run_rejected_by_remote():
    _, snap = run_to_end("js-agent", {"text": "reject this"})
    fails_with(snap, "rejected_by_remote")
    assert "Not my kind of job." in snap["error"]["message"], snap["error"]


# --- MCP: the Python mcp 2.3.0 server -------------------------------------------------


def py_mcp_tool_answers_structured_content():
    run_id, snap = run_to_end("py-forecast", {"city": "Lisbon"})
    out = completes(snap)
    assert out["forecast"] == {"city": "Lisbon", "sky": "clear", "highC": 21}, out
    decided = one(events(run_id), "negotiation.decided")["payload"]
    assert (decided["protocol"], decided["outcome"], decided["negotiated"]) == ("mcp", "accepted", "2026-07-28"), decided


def py_mcp_two_questions_of_one_round_are_one_clarification():
    run_id, asked = suspended("py-party", {"day": "Monday"})
    questions = {q["question"]: q["id"] for q in asked["data"]["questions"]}
    assert set(questions) == {"Who is the booking for?", "How many seats?"}, asked
    resolve(run_id, "call", {questions["Who is the booking for?"]: {"name": "Ada"}, questions["How many seats?"]: {"seats": 4}})
    out = completes(wait(run_id, ["completed", "failed"]))
    assert out["booking"] == {"day": "Monday", "guest": "Ada x4", "confirmed": True}, out


def py_mcp_a_second_round_is_a_second_question_on_the_same_node():
    """A question built from an earlier answer takes a second input round: a new interrupt
    on the same node, whose answer goes back with the second round's requestState."""
    run_id, asked = suspended("py-dinner", {"day": "Tuesday"})
    first = asked["data"]["questions"]
    assert [q["question"] for q in first] == ["Who is the booking for?"], asked
    resolve(run_id, "call", {first[0]["id"]: {"name": "Ada"}})
    deadline = time.monotonic() + 30
    while True:
        requested = [e for e in events(run_id) if e["type"] == "interrupt.requested"]
        if len(requested) == 2:
            break
        snap = wait(run_id, ["waiting-input", "running", "completed", "failed"])
        assert snap["status"] in ("waiting-input", "running"), snap
        assert time.monotonic() < deadline, f"no second question: {snap}"
        time.sleep(0.1)
    second = requested[1]["payload"]["data"]["questions"]
    assert [q["question"] for q in second] == ["What does Ada eat?"], second
    resolve(run_id, "call", {second[0]["id"]: {"diet": "vegetarian"}})
    out = completes(wait(run_id, ["completed", "failed"]))
    assert out["booking"] == {"day": "Tuesday", "guest": "vegetarian", "confirmed": True}, out


def py_mcp_declined_input_round_fails_the_run():
    run_id, asked = suspended("py-book", {"day": "Sunday"})
    key = asked["data"]["questions"][0]["id"]
    resolve(run_id, "call", {key: {"action": "decline"}})
    snap = wait(run_id, ["completed", "failed", "waiting-input"])
    # The SDK aborts a call whose Resolve(...) elicitation is declined; the tool never ran.
    assert snap["status"] == "failed", snap
    assert snap["error"]["code"] == "mcp_error", snap["error"]


def py_mcp_tool_error_fails_the_run_with_mcp_error():
    _, snap = run_to_end("py-explode", {})
    fails_with(snap, "mcp_error")
    assert "the boiler is out of order" in snap["error"]["message"], snap["error"]


def py_mcp_tool_error_is_kept_as_a_value_when_the_node_says_so():
    _, snap = run_to_end("py-explode-kept", {})
    out = completes(snap)
    assert out["result"]["isError"] is True, out
    assert "the boiler is out of order" in out["result"]["text"], out


def py_mcp_input_round_suspends_and_the_answer_reaches_the_tool():
    run_id, asked = suspended("py-book", {"day": "Friday"})
    assert asked["kind"] == "clarification", asked
    data = asked["data"]
    assert data["contextType"] == "remote-tool", data
    assert len(data["questions"]) == 1, data
    question = data["questions"][0]
    assert question["question"] == "Who is the booking for?", question
    assert "name" in question["schema"]["properties"], question
    resolve(run_id, "call", {question["id"]: {"name": "Ada"}})
    out = completes(wait(run_id, ["completed", "failed"]))
    assert out["booking"] == {"day": "Friday", "guest": "Ada", "confirmed": True}, out


# --- MCP: a legacy-only server (mcp 1.12.4, 2025-06-18) -------------------------------


def legacy_mcp_server_is_refused_below_the_floor():
    run_id, snap = run_to_end("legacy-forecast", {})
    fails_with(snap, "interop_version_unsupported")
    decided = one(events(run_id), "negotiation.decided")["payload"]
    assert decided["protocol"] == "mcp", decided
    assert decided["outcome"] == "refused", decided
    assert decided.get("requested") == "2025-06-18", decided


# --- MCP: the TypeScript SDK server (@modelcontextprotocol/sdk 1.32.2) ----------------


def ts_mcp_tool_answers():
    run_id, snap = run_to_end("ts-add", {"a": 2, "b": 3})
    out = completes(snap)
    assert out["result"] == {"sum": 5}, out
    decided = one(events(run_id), "negotiation.decided")["payload"]
    # 2025-11-25 is below the host's preferred 2026-07-28: interop.md's `downgraded`.
    assert (decided["outcome"], decided["negotiated"]) == ("downgraded", "2025-11-25"), decided
    # The session `initialize` opened is closed when the call is over (DELETE).
    with urllib.request.urlopen("http://127.0.0.1:18885/sessions", timeout=5) as resp:
        sessions = json.loads(resp.read())
    assert sessions["opened"] >= 1 and sessions["open"] == 0, sessions


def ts_mcp_legacy_elicitation_fails_closed():
    """In the initialize era a server asks by a request of its own mid-call; the host
    declares no elicitation capability there, so the SDK refuses to ask and the tool
    call fails: the run fails with mcp_error, nothing waits forever."""
    _, snap = run_to_end("ts-confirm", {})
    fails_with(snap, "mcp_error")
    # The SDK's own words: "Client does not support form elicitation."
    assert "elicitation" in snap["error"]["message"], snap["error"]


# --- two peers in one run -------------------------------------------------------------


def one_run_calls_an_mcp_tool_then_an_agent():
    _, snap = run_to_end("trip", {"city": "Porto"})
    out = completes(snap)
    assert out == {"sky": "clear", "told": "echo: Clear skies in Porto"}, out


# --- what the peers received ------------------------------------------------------------


def peers_got_their_own_credential_and_a_traceparent_never_the_callers_key():
    for name, token in TOKENS.items():
        path = os.path.join(RECORDS, f"{name}.jsonl")
        assert os.path.exists(path), f"{name} recorded no request"
        with open(path, encoding="utf-8") as f:
            seen = [json.loads(line) for line in f]
        assert seen, name
        for r in seen:
            assert KEY not in json.dumps(r), f"{name} received the caller's key: {r}"
            assert r["authorization"] == f"Bearer {token}", f"{name}: {r}"
            assert r["traceparent"] and TRACEPARENT.match(r["traceparent"]), f"{name}: {r}"
            # The body carries the same trace context where the host puts it (A2A messages'
            # metadata.openwop, MCP params._meta); the Python peers record it.
            if r.get("rpc") in ("SendMessage", "tools/call", "server/discover"):
                assert r["bodyTraceparent"] == r["traceparent"], f"{name}: {r}"
            # No card here names a tenant (the JS card's `tenant: ""` is proto3's none).
            assert not r.get("hasTenant"), f"{name}: {r}"


def no_peer_secret_in_snapshots_events_or_the_host_log():
    assert CREATED, "no run was created"
    seen = []
    for run_id in CREATED:
        seen.append(json.dumps(request("GET", f"/runs/{projected(run_id)}")[1]))
        seen.append(json.dumps(events(run_id)))
    with open(os.environ["OUTBOUND_HOST_LOG"], encoding="utf-8") as f:
        seen.append(f.read())
    for name, token in TOKENS.items():
        assert not any(token in text for text in seen), f"{name}'s credential leaked"


CHECKS = [
    py_agent_completes_with_its_artifact,
    py_agent_question_suspends_and_the_answer_completes_the_same_task,
    py_agent_auth_request_becomes_a_credential_interrupt,
    py_agent_rejection_fails_the_run_rejected_by_remote,
    py_agent_working_task_is_followed_until_it_completes,
    py_agent_failure_fails_the_run_peer_call_failed,
    py_agent_direct_message_reply_is_the_nodes_value,
    py_agent_task_is_cancelled_with_the_calling_run,
    py_agent_declined_grant_fails_the_run_and_cancels_the_remote_task,
    js_agent_completes_with_its_artifact,
    js_agent_question_suspends_and_the_answer_completes_the_same_task,
    js_agent_rejection_fails_the_run_rejected_by_remote,
    js_agent_task_is_cancelled_with_the_calling_run,
    py_mcp_tool_answers_structured_content,
    py_mcp_tool_error_fails_the_run_with_mcp_error,
    py_mcp_tool_error_is_kept_as_a_value_when_the_node_says_so,
    py_mcp_input_round_suspends_and_the_answer_reaches_the_tool,
    py_mcp_two_questions_of_one_round_are_one_clarification,
    py_mcp_a_second_round_is_a_second_question_on_the_same_node,
    py_mcp_declined_input_round_fails_the_run,
    legacy_mcp_server_is_refused_below_the_floor,
    ts_mcp_tool_answers,
    ts_mcp_legacy_elicitation_fails_closed,
    one_run_calls_an_mcp_tool_then_an_agent,
    # Last: they read what every check above made the peers receive and the host keep.
    peers_got_their_own_credential_and_a_traceparent_never_the_callers_key,
    no_peer_secret_in_snapshots_events_or_the_host_log,
]


def main():
    passed = failed = 0
    only = sys.argv[1:]
    for check in CHECKS:
        if only and check.__name__ not in only:
            continue
        try:
            check()
            passed += 1
            print(f"ok   {check.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {check.__name__}")
            traceback.print_exc(limit=1)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
