"""What every Python peer server of this suite keeps about the requests it got: the
Authorization and traceparent headers, and for a JSON-RPC body its method and the trace
context it carries (A2A `message.metadata.openwop.traceparent`, MCP `params._meta.traceparent`),
as JSON lines in $OUTBOUND_RECORD_DIR/<name>.jsonl, so the driver can check the host sent
the peer's own credential and its trace."""

import json
import os


def _body_trace(body: bytes):
    try:
        rpc = json.loads(body)
    except ValueError:
        return None, None, False
    if not isinstance(rpc, dict):
        return None, None, False
    params = rpc.get("params") or {}
    meta = params.get("_meta") or {}
    message = params.get("message") or {}
    openwop = (message.get("metadata") or {}).get("openwop") or {}
    return rpc.get("method"), meta.get("traceparent") or openwop.get("traceparent"), "tenant" in params


class RecordHeaders:
    """ASGI middleware: appends {method, path, authorization, traceparent, rpc,
    bodyTraceparent, hasTenant} per HTTP request, then hands the request on unchanged."""

    def __init__(self, app, name: str):
        self.app = app
        self.path = os.path.join(os.environ["OUTBOUND_RECORD_DIR"], f"{name}.jsonl")

    async def __call__(self, scope, receive, send):
        # The driver's own look-ups (x-outbound-driver) are not requests from the host.
        if scope["type"] != "http" or any(k == b"x-outbound-driver" for k, _ in scope["headers"]):
            await self.app(scope, receive, send)
            return
        messages, body = [], b""
        while True:
            m = await receive()
            messages.append(m)
            body += m.get("body", b"")
            if m["type"] != "http.request" or not m.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        rpc, body_trace, has_tenant = _body_trace(body) if body else (None, None, False)
        line = {
            "method": scope.get("method"),
            "path": scope["path"],
            "authorization": headers.get("authorization"),
            "traceparent": headers.get("traceparent"),
            "rpc": rpc,
            "bodyTraceparent": body_trace,
            "hasTenant": has_tenant,
        }
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
