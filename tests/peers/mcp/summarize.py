"""Prints, per conformance scenario, its passed/failed check counts and each failure's
reason, then the totals. Usage: summarize.py OUT_DIR"""
import glob
import json
import os
import sys

ok = failed = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "checks.json"))):
    checks = json.load(open(path))
    scenario = os.path.basename(os.path.dirname(path)).rsplit("-20", 1)[0]
    good = sum(1 for c in checks if c["status"] == "SUCCESS")
    bad = [c for c in checks if c["status"] == "FAILURE"]
    ok += good
    failed += len(bad)
    print(f"{scenario:58} {good:3} passed {len(bad):3} failed")
    for c in bad:
        print(f"    {c['id']}: {(c.get('errorMessage') or '')[:200]}")
print(f"checks: {ok} passed, {failed} failed")
