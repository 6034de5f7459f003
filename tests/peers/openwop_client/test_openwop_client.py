"""The Python `openwop-client` (pinned) driving the host over the v2 REST wire.

Each test is one step a real client takes; a failure here is a disagreement between the
host and a real peer, to be fixed on our side or recorded in the README's interop table.
"""

import time

import pytest
from openwop_client import (
    CancelRunRequest,
    CreateRunRequest,
    OpenwopClient,
    ResolveInterruptRequest,
    WopError,
)

from conftest import TENANT_A_KEY, TENANT_B_KEY, dev_key_from


@pytest.fixture(scope="module")
def a(host):
    return OpenwopClient(base_url=host.base_url, api_key=TENANT_A_KEY, timeout=20)


@pytest.fixture(scope="module")
def b(host):
    return OpenwopClient(base_url=host.base_url, api_key=TENANT_B_KEY, timeout=20)


def _wait_status(client, run_id, wanted, deadline_s=15.0):
    deadline = time.monotonic() + deadline_s
    while True:
        snap = client.runs_get(run_id)
        if snap.status in wanted:
            return snap
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} stuck in {snap.status}, wanted {wanted}")
        time.sleep(0.05)


def test_discovery(a):
    caps = a.discovery_capabilities()
    assert "2.0" in caps.protocolVersions
    assert caps.preferredVersion in caps.protocolVersions
    assert "runList" in caps.families
    assert "supportedTransports" not in caps.raw


def test_readme_host_prints_a_working_dev_key(dev_host):
    key = dev_key_from(dev_host.stdout())
    client = OpenwopClient(base_url=dev_host.base_url, api_key=key, timeout=20)
    created = client.runs_create(CreateRunRequest(workflowId="echo", inputs={"hello": "world"}))
    snap = _wait_status(client, created.runId, {"completed"})
    assert snap.owner.tenant == "dev"


def test_create_get_and_poll(a):
    created = a.runs_create(CreateRunRequest(workflowId="echo", inputs={"n": 1}))
    assert created.runId.startswith("tenant-a/")
    snap = _wait_status(a, created.runId, {"completed"})
    assert snap.workflowId == "echo"
    assert snap.owner.tenant == "tenant-a"
    assert snap.owner.subject.tenant == "tenant-a"
    poll = a.runs_poll_events(created.runId, after_sequence=None, timeout_seconds=1)
    assert poll.isTerminal
    assert [e.sequence for e in poll.events] == list(range(len(poll.events)))
    assert poll.events[0].type == "run.started"
    assert poll.events[-1].type == "run.completed"
    assert poll.events[-1].payload["outputs"] == {"n": 1}
    assert poll.lastSequence == poll.events[-1].sequence


def test_idempotent_create_replays(a):
    body = CreateRunRequest(workflowId="echo", inputs={"k": "v"})
    first = a.runs_create(body, idempotency_key="peer-idem-1")
    second = a.runs_create(body, idempotency_key="peer-idem-1")
    assert first.runId == second.runId


def test_list_newest_first_with_filters(a):
    ids = [a.runs_create(CreateRunRequest(workflowId="echo", inputs={"i": i})).runId for i in range(3)]
    page = a.runs_list(limit=2, workflow_id="echo")
    assert page is not None
    assert len(page.runs) == 2
    assert page.runs[0].runId == ids[-1]
    assert page.next_cursor
    rest = a.runs_list(limit=100, cursor=page.next_cursor, workflow_id="echo")
    seen = [r.runId for r in page.runs + rest.runs]
    for run_id in ids:
        assert run_id in seen
    assert all(r.workflowId == "echo" for r in page.runs + rest.runs)


def test_sse_stream_to_terminal(a):
    created = a.runs_create(CreateRunRequest(workflowId="slow", inputs={"ms": 200}))
    events = list(a.runs_events(created.runId, timeout_seconds=20))
    assert events[0].type == "run.started"
    assert events[-1].type == "run.completed"
    assert [e.sequence for e in events] == list(range(len(events)))


def test_sse_resume_after_last_event_id(a):
    created = a.runs_create(CreateRunRequest(workflowId="echo", inputs={}))
    _wait_status(a, created.runId, {"completed"})
    all_events = list(a.runs_events(created.runId, timeout_seconds=10))
    tail = list(a.runs_events(created.runId, last_event_id="0", timeout_seconds=10))
    assert [e.sequence for e in tail] == [e.sequence for e in all_events[1:]]


def test_cancel_then_second_cancel_is_conflict(a):
    created = a.runs_create(CreateRunRequest(workflowId="slow", inputs={"ms": 60000}))
    _wait_status(a, created.runId, {"running"})
    resp = a.runs_cancel(created.runId, CancelRunRequest(reason="peer test"))
    assert resp.status in ("cancelling", "cancelled")
    _wait_status(a, created.runId, {"cancelled"})
    with pytest.raises(WopError) as err:
        a.runs_cancel(created.runId, CancelRunRequest(reason="again"))
    assert err.value.status == 409
    assert err.value.envelope.error == "run_terminal"


def test_interrupt_resolution(a):
    created = a.runs_create(CreateRunRequest(workflowId="approval", inputs={}))
    _wait_status(a, created.runId, {"waiting-approval"})
    poll = a.runs_poll_events(created.runId, timeout_seconds=1)
    requested = [e for e in poll.events if e.type == "interrupt.requested"]
    assert len(requested) == 1
    node_id = requested[0].nodeId or requested[0].payload["nodeId"]
    resolved = a.interrupts_resolve_by_run(
        created.runId, node_id, ResolveInterruptRequest(resumeValue={"action": "accept"})
    )
    assert resolved.runId == created.runId
    _wait_status(a, created.runId, {"completed"})
    with pytest.raises(WopError) as err:
        a.interrupts_resolve_by_run(
            created.runId, node_id, ResolveInterruptRequest(resumeValue={"action": "accept"})
        )
    assert err.value.status == 409
    assert err.value.envelope.error == "interrupt_already_resolved"


def test_foreign_tenant_read_discloses_nothing(a, b):
    created = a.runs_create(CreateRunRequest(workflowId="echo", inputs={}))
    with pytest.raises(WopError) as existing:
        b.runs_get(created.runId)
    never = created.runId.split("/", 1)[0] + "/neverExistedRun0123456789"
    with pytest.raises(WopError) as missing:
        b.runs_get(never)
    assert existing.value.status == 403
    assert existing.value.envelope.error == "id_tenant_mismatch"
    assert existing.value.raw_text == missing.value.raw_text
    assert missing.value.status == 403


def test_unauthenticated_is_401(host):
    bad = OpenwopClient(base_url=host.base_url, api_key="not-a-key", timeout=10)
    with pytest.raises(WopError) as err:
        bad.runs_list()
    assert err.value.status == 401
    assert err.value.envelope.error == "unauthenticated"
