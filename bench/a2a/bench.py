"""Blocking SendMessage round trips per second: our host beside the Python a2a-sdk's own
server serving an equivalent trivial agent, in the same run, on loopback.

Each round trip is one JSON-RPC SendMessage that creates a task and answers it completed
(our host: a run of the `echo` workflow; the SDK: EchoExecutor). The loop is bounded by
count and by time and talks only to 127.0.0.1.

Usage: python bench.py --ours URL --key KEY --sdk URL [--requests N] [--concurrency C]
"""

import argparse
import asyncio
import json
import time
import uuid

import httpx


def body(skill: bool) -> dict:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"data": {"n": 1}}],
    }
    if skill:
        message["metadata"] = {"openwop": {"skill": "echo"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


async def measure(url: str, headers: dict, skill: bool, requests: int, concurrency: int, limit_s: float) -> tuple[float, int]:
    done = 0
    deadline = time.monotonic() + limit_s
    async with httpx.AsyncClient(headers={**headers, "A2A-Version": "1.0"}, timeout=30) as http:
        # Warm up: connections, first-request paths, lazy initialisation.
        for _ in range(5):
            (await http.post(url, json=body(skill))).raise_for_status()

        async def worker(count: int) -> int:
            ok = 0
            for _ in range(count):
                if time.monotonic() > deadline:
                    break
                r = await http.post(url, json=body(skill))
                state = r.json()["result"]["task"]["status"]["state"]
                if state != "TASK_STATE_COMPLETED":
                    raise RuntimeError(f"unexpected state {state}")
                ok += 1
            return ok

        started = time.monotonic()
        per = requests // concurrency
        done = sum(await asyncio.gather(*(worker(per) for _ in range(concurrency))))
        elapsed = time.monotonic() - started
    return done / elapsed, done


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ours", required=True, help="our JSON-RPC URL, e.g. http://127.0.0.1:18080/a2a/jsonrpc")
    p.add_argument("--key", required=True)
    p.add_argument("--sdk", required=True, help="the SDK server's JSON-RPC URL")
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seconds", type=float, default=60.0, help="upper bound per side")
    a = p.parse_args()
    ours, n_ours = await measure(a.ours, {"Authorization": f"Bearer {a.key}"}, True, a.requests, a.concurrency, a.seconds)
    sdk, n_sdk = await measure(a.sdk, {}, False, a.requests, a.concurrency, a.seconds)
    print(json.dumps({
        "openwop_rps": round(ours, 1), "openwop_requests": n_ours,
        "a2a_sdk_rps": round(sdk, 1), "a2a_sdk_requests": n_sdk,
        "ratio_openwop_over_sdk": round(ours / sdk, 2) if sdk else None,
        "concurrency": a.concurrency,
    }, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
