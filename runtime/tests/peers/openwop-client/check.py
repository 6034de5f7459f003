"""Drives a running host with the pinned Python openwop-client, one step per REST rule.

Usage: python check.py BASE_URL API_KEY OTHER_TENANT_API_KEY
Exits 0 when every step passes; prints each step as it goes.
"""

import sys
import time

from openwop_client import CancelRunRequest, CreateRunRequest, OpenwopClient
from openwop_client.errors import WopError
from openwop_client.types import ResolveInterruptRequest


def step(name):
    print(f"-- {name}", flush=True)


def expect_error(fn, status, code):
    try:
        fn()
    except WopError as err:
        assert err.status == status, (err.status, err.envelope)
        assert err.envelope is not None and err.envelope.error == code, err.envelope
        return
    raise AssertionError(f"expected {status} {code}")


def main():
    base, key, other_key = sys.argv[1], sys.argv[2], sys.argv[3]
    c = OpenwopClient(base_url=base, api_key=key)
    other = OpenwopClient(base_url=base, api_key=other_key)

    step("discovery")
    caps = c.discovery_capabilities()
    assert caps.preferredVersion == "2.0", caps

    step("create + get (echo)")
    created = c.runs_create(CreateRunRequest(workflowId="echo", inputs={"hello": "world"}))
    events = list(c.runs_events(created.runId, timeout_seconds=20))
    assert events[-1].type == "run.completed", [e.type for e in events]
    snap = c.runs_get(created.runId)
    assert snap.status == "completed", snap

    step("list")
    page = c.runs_list(limit=10, workflow_id="echo")
    assert page is not None and any(r.runId == created.runId for r in page.runs)

    step("poll")
    polled = c.runs_poll_events(created.runId, after_sequence=0, timeout_seconds=1)
    assert polled.isTerminal and polled.events and polled.events[0].sequence == 1, polled

    step("SSE on a slow run")
    slow = c.runs_create(CreateRunRequest(workflowId="slow", inputs={"ms": 200}))
    seqs = [e.sequence for e in c.runs_events(slow.runId, timeout_seconds=20)]
    assert seqs == list(range(len(seqs))), seqs

    step("cancel, then cancel again (409)")
    long = c.runs_create(CreateRunRequest(workflowId="slow", inputs={"ms": 60000}))
    cancelled = c.runs_cancel(long.runId, CancelRunRequest(reason="client-check"))
    assert cancelled.status in ("cancelled", "cancelling"), cancelled
    expect_error(lambda: c.runs_cancel(long.runId), 409, "run_terminal")

    step("interrupt resolution")
    appr = c.runs_create(CreateRunRequest(workflowId="approval", inputs={}))
    for _ in range(200):
        if c.runs_get(appr.runId).status == "waiting-approval":
            break
        time.sleep(0.02)
    resolved = c.interrupts_resolve_by_run(appr.runId, "approve", ResolveInterruptRequest(resumeValue={"action": "accept"}))
    assert resolved.nodeId == "approve", resolved
    events = list(c.runs_events(appr.runId, timeout_seconds=20))
    assert events[-1].type == "run.completed", [e.type for e in events]
    expect_error(
        lambda: c.interrupts_resolve_by_run(appr.runId, "approve", ResolveInterruptRequest(resumeValue=1)),
        409,
        "interrupt_already_resolved",
    )

    step("foreign-tenant read (403 id_tenant_mismatch)")
    expect_error(lambda: other.runs_get(created.runId), 403, "id_tenant_mismatch")

    print("openwop-client: every step passed")


if __name__ == "__main__":
    main()
