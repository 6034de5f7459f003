"""JSON-Schema-only validation of discovery documents with Python `jsonschema`.

Used by run.sh as the baseline, and handy on its own to see what the schema alone says:

    python3 schema_check.py SPEC_ROOT FILE...            # prints the errors of each file
    python3 schema_check.py --bench N SPEC_ROOT FILE...  # validates N documents, prints docs/s

The registry holds every schema file of the corpus under its `$id`, the same files the
generated Rust validators embed, and formats are checked as the Rust side checks them.
"""

import glob
import json
import os
import sys
import time

import jsonschema
from referencing import Registry, Resource


def load_validator(spec_root):
    resources = []
    for pattern in ("schemas/v2/*.schema.json", "spec/v2/facets/*.schema.json", "spec/v2/*.schema.json"):
        for path in sorted(glob.glob(os.path.join(spec_root, pattern))):
            with open(path, encoding="utf-8") as f:
                schema = json.load(f)
            if "$id" in schema:
                resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    with open(os.path.join(spec_root, "schemas/v2/capabilities.schema.json"), encoding="utf-8") as f:
        root = json.load(f)
    cls = jsonschema.validators.validator_for(root)
    return cls(root, registry=registry, format_checker=cls.FORMAT_CHECKER)


def main(argv):
    bench = None
    if argv and argv[0] == "--bench":
        bench = int(argv[1])
        argv = argv[2:]
    spec_root, files = argv[0], argv[1:]
    validator = load_validator(spec_root)
    docs = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            docs.append((path, json.load(f)))
    if bench is None:
        for path, doc in docs:
            for error in validator.iter_errors(doc):
                print(f"{path}:{error.json_path}: {error.message}")
        return 0
    batch = [docs[i % len(docs)][1] for i in range(bench)]
    start = time.perf_counter()
    invalid = 0
    for doc in batch:
        # iter_errors, like the Rust side, collects every error rather than stopping at one.
        if list(validator.iter_errors(doc)):
            invalid += 1
    elapsed = time.perf_counter() - start
    print(f"{len(batch)} {invalid} {elapsed:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
