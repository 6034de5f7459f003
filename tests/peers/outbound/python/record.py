"""What every peer server of this suite keeps about the requests it got: the
Authorization and traceparent headers (as JSON lines in $OUTBOUND_RECORD_DIR/<name>.jsonl),
so the driver can check the host sent the peer's own credential and a trace context."""

import json
import os


class RecordHeaders:
    """ASGI middleware: appends {path, authorization, traceparent} per HTTP request."""

    def __init__(self, app, name: str):
        self.app = app
        self.path = os.path.join(os.environ["OUTBOUND_RECORD_DIR"], f"{name}.jsonl")

    async def __call__(self, scope, receive, send):
        # The driver's own look-ups (x-outbound-driver) are not requests from the host.
        if scope["type"] == "http" and not any(k == b"x-outbound-driver" for k, _ in scope["headers"]):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            line = {
                "method": scope.get("method"),
                "path": scope["path"],
                "authorization": headers.get("authorization"),
                "traceparent": headers.get("traceparent"),
            }
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        await self.app(scope, receive, send)
