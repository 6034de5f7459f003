"""pytest plugin (`-p openwop_tck`): makes `openwop serve` the A2A TCK's system under test.

The TCK drives a reference agent whose behaviour is chosen by the messageId prefix of the
message that starts a task (`tck-complete-task-…`, `tck-input-required-…`, …), and it
sends no credential. The host chooses a task's workflow by `message.metadata.openwop.skill`
and wants a Bearer key. This plugin is the translation between those two contracts, and
nothing more, on every request the TCK's httpx clients send to the host:

- it adds `Authorization: Bearer $OPENWOP_API_KEY` (the TCK documents A2A_AUTH_TOKEN but
  never reads it);
- on a SendMessage / SendStreamingMessage body (JSON-RPC `params.message`, HTTP+JSON
  `message`) whose message starts a task (no `taskId`) and whose messageId has one of the
  prefixes below, it sets `message.metadata.openwop.skill` to the fixture workflow of
  `tests/fixtures/a2a-tck/` that plays that scenario; a message without a known prefix
  starts the host's default skill (`tck-echo` in the TCK's config);
- it keeps messageIds unique, as A2A 1.0 defines them ("the unique identifier of the
  message, created by the message creator"): the TCK mints one id per scenario and
  session (`tck_id`) and sends it with many different messages (every prerequisite task,
  every follow-up), while A2A lets an agent treat a repeated messageId as the same
  message (section 3.1.1, "Agents may utilize the messageId to detect duplicate
  messages"), which the host does. The first message with an id goes out with it; a
  later one gets `<id>.<n>`, which keeps the prefix the scenario is chosen by. Left
  alone, the TCK's own prerequisite steps get the earlier task back and skip about twenty
  tests (cancel, subscribe, multi-turn, push delivery) or fail them. The count of renamed
  ids is printed at the end of the run.

Any other body (one the TCK sends malformed on purpose, one with a member repeated, one
without a message) goes out byte for byte as the TCK wrote it.

It never changes any other field, a header the TCK set, or an answer.

It also writes each test's outcome (passed, failed, error, skipped with its reason,
xfailed, xpassed) by pytest node id to $OPENWOP_TCK_RESULTS, which `compare.py` checks
against `known-defects.toml`.
"""

from __future__ import annotations

import json
import os

import httpx

_ORIGIN = os.environ["OPENWOP_BASE_URL"].rstrip("/")
_KEY = os.environ["OPENWOP_API_KEY"]
# A2A_TCK_AS_SENT=1 keeps the TCK's messageIds as it sends them (a diagnostic: the run then
# shows what the reuse costs; its failures are not in known-defects.toml).
_RENAME = os.environ.get("A2A_TCK_AS_SENT") != "1"

# (messageId prefix, workflow id). `tck_id(name)` is `tck-{name}-{session}`, so every
# prefix ends with `-`; longer prefixes come first (`artifact-file-url` before
# `artifact-file`).
ROUTES: list[tuple[str, str]] = [
    ("tck-artifact-file-url-", "tck-artifact-file-url"),
    ("tck-artifact-file-", "tck-artifact-file"),
    ("tck-artifact-text-", "tck-artifact-text"),
    ("tck-artifact-data-", "tck-artifact-data"),
    ("tck-message-response-", "tck-message-response"),
    ("tck-stream-002-", "tck-message-response"),
    ("tck-stream-001-", "tck-stream"),
    ("tck-stream-003-", "tck-stream"),
    ("tck-stream-ordering-001-", "tck-stream"),
    ("tck-sse-streaming-001-", "tck-stream"),
    ("tck-input-required-", "tck-input-required"),
    ("tck-complete-task-", "tck-complete-task"),
]


def skill_for(message_id: str) -> str | None:
    for prefix, skill in ROUTES:
        if message_id.startswith(prefix):
            return skill
    return None


def _no_repeats(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a member is repeated")
    return dict(pairs)


# Every messageId the TCK has sent, and how many it renamed (printed at the end).
_sent_ids: set[str] = set()
_renamed = 0


def _adapted(body: bytes) -> bytes | None:
    """The body with the scenario's skill set and its messageId made unique, or None to
    send it unchanged."""
    global _renamed
    try:
        doc = json.loads(body, object_pairs_hook=_no_repeats)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    holder = doc.get("params") if "jsonrpc" in doc else doc
    message = holder.get("message") if isinstance(holder, dict) else None
    if not isinstance(message, dict):
        return None
    message_id = message.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        return None
    changed = False
    if _RENAME and message_id in _sent_ids:
        _renamed += 1
        message["messageId"] = f"{message_id}.{_renamed}"
        changed = True
    _sent_ids.add(message_id)
    skill = None if message.get("taskId") else skill_for(message_id)
    metadata = message.get("metadata", {})
    if skill is not None and isinstance(metadata, dict):
        openwop = metadata.get("openwop", {})
        if isinstance(openwop, dict) and "skill" not in openwop:
            message["metadata"] = {**metadata, "openwop": {**openwop, "skill": skill}}
            changed = True
    return json.dumps(doc).encode() if changed else None


_send = httpx.Client.send


def _send_to_host(self: httpx.Client, request: httpx.Request, *args, **kwargs):
    if str(request.url).startswith(_ORIGIN + "/"):
        if "authorization" not in request.headers:
            request.headers["Authorization"] = f"Bearer {_KEY}"
        if request.method == "POST":
            body = request.read()
            routed = _adapted(body) if body else None
            if routed is not None:
                headers = httpx.Headers(request.headers)
                headers.pop("content-length", None)
                rebuilt = httpx.Request(
                    request.method,
                    request.url,
                    headers=headers,
                    content=routed,
                    extensions=request.extensions,
                )
                request = rebuilt
    return _send(self, request, *args, **kwargs)


httpx.Client.send = _send_to_host


# --- outcomes, for compare.py ----------------------------------------------------------

_outcomes: dict[str, dict[str, str]] = {}


def _reason(report) -> str:
    """A skip's reason, or a failure's first `E ` line (else its last line)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")[:300]
    lines = (getattr(report, "longreprtext", "") or "").strip().splitlines()
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors or lines[-1:] or [""])[0][:300]


def pytest_runtest_logreport(report) -> None:
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
        reason = str(report.wasxfail)[:300]
    elif report.when == "call":
        outcome = report.outcome
        reason = "" if report.passed else _reason(report)
    elif report.failed:
        outcome = "error"  # a setup or teardown that raised
        reason = _reason(report)
    elif report.skipped:
        outcome = "skipped"
        reason = _reason(report)
    else:
        return
    # A teardown error after a passing call still makes the test an error.
    if report.nodeid in _outcomes and outcome not in ("error",):
        return
    _outcomes[report.nodeid] = {"outcome": outcome, "reason": reason}


def pytest_sessionfinish(session, exitstatus) -> None:
    path = os.environ.get("OPENWOP_TCK_RESULTS")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"renamedMessageIds": _renamed, "tests": _outcomes}, f, indent=1, sort_keys=True)
