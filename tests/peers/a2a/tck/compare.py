"""Checks the A2A TCK's outcomes against known-defects.toml and prints the summary.

Usage: compare.py KNOWN_DEFECTS.toml MUST.json SHOULD.json
(the JSON files are what the openwop_tck plugin writes: node id -> outcome, reason).

Counting: a test that passed or xpassed counts as passed; failed, error and xfailed count
as failed (the TCK turns an unmet SHOULD into xfail, which pytest would let through: here
it needs an entry like any failure); skipped is reported with its reason.

Exit status 0 only when every failure is a listed entry of its level and every listed
entry (whose condition holds) still fails. Standard library only (python3 >= 3.11).
"""

from __future__ import annotations

import collections
import json
import socket
import sys
import tomllib

PASSED = {"passed", "xpassed"}
FAILED = {"failed", "error", "xfailed"}


def transport_of(node_id: str) -> str:
    for t in ("http_json", "jsonrpc", "grpc"):
        if f"[{t}]" in node_id or f"-{t}]" in node_id or node_id.endswith(f"_{t}"):
            return t
    if node_id.endswith("_rest"):
        return "http_json"
    if "/jsonrpc/" in node_id:
        return "jsonrpc"
    if "/http_json/" in node_id:
        return "http_json"
    return "card/both"


def not_served(r: dict) -> bool:
    reason = r["reason"].lower()
    return r["outcome"] == "skipped" and "grpc" in reason and "not configured" in reason


def resolves(name: str) -> bool:
    try:
        socket.getaddrinfo(name, 443)
        return True
    except OSError:
        return False


def main() -> int:
    known_path, *level_files = sys.argv[1:]
    with open(known_path, "rb") as f:
        known = tomllib.load(f).get("defect", [])
    results, renamed = {}, {}
    for path in level_files:
        level = path.rsplit("/", 1)[-1].removesuffix(".json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        results[level], renamed[level] = doc["tests"], doc["renamedMessageIds"]

    entries: dict[tuple[str, str], dict] = {}
    problems: list[str] = []
    for e in known:
        key = (e["level"], e["test"])
        if key in entries:
            problems.append(f"listed twice: {e['test']}")
        cond = e.get("unless_resolves")
        e["active"] = not (cond and resolves(cond))
        entries[key] = e

    print("A2A TCK 1.0-dev (357c4a87) against openwop serve + tests/fixtures/a2a-tck")
    for level, outcomes in results.items():
        counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        skips: collections.Counter = collections.Counter()
        known_failing = 0
        for node_id, r in sorted(outcomes.items()):
            outcome, t = r["outcome"], transport_of(node_id)
            if t == "grpc" or not_served(r):
                continue  # gRPC is not served (interop.md): nothing to count
            if outcome in PASSED:
                counts[t]["passed"] += 1
            elif outcome in FAILED:
                counts[t]["failed"] += 1
                e = entries.get((level, node_id))
                if e and e["active"]:
                    known_failing += 1
                else:
                    problems.append(f"{level.upper()} {node_id}: {outcome}: {r['reason']}")
            else:
                counts[t]["skipped"] += 1
                skips[r["reason"][:100]] += 1
        total = sum(counts.values(), collections.Counter())
        print(f"\n{level.upper()}: {total['passed']} passed, {total['failed']} failed "
              f"({known_failing} listed TCK defects), {total['skipped']} skipped; "
              f"{renamed[level]} reused messageIds renamed")
        for t in sorted(counts):
            c = counts[t]
            print(f"  {t:9} {c['passed']:3} passed {c['failed']:3} failed {c['skipped']:3} skipped")
        if skips:
            print("  skipped, by the TCK's reason:")
            for reason, n in skips.most_common():
                print(f"    {n:3}  {reason}")

    for (level, node_id), e in sorted(entries.items()):
        r = results.get(level, {}).get(node_id)
        if not e["active"]:
            continue
        if r is None or r["outcome"] not in PASSED | FAILED:
            why = "did not run" if r is None else f"was {r['outcome']} ({r['reason'][:100]})"
            problems.append(f"{level.upper()} {node_id}: listed as a TCK defect but {why}")
        elif r["outcome"] in PASSED:
            problems.append(f"{level.upper()} {node_id}: listed as a TCK defect but now passes: "
                            "remove its entry from known-defects.toml")

    if problems:
        print("\nFAILED: outcomes known-defects.toml does not explain:")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nOK: every failure is a listed TCK defect, and every listed defect still fails.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
