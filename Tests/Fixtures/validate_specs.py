#!/usr/bin/env python3
"""validate_specs.py SCHEMA SPEC... — validates job specs against the JSON Schema with the
`jsonschema` package (an implementation independent of voxpipe's own loader). Prints one line
per violation (file, JSON path, message) and exits 1 if there is any."""
import json
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1]))
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        for error in sorted(validator.iter_errors(json.load(open(path))), key=lambda e: list(e.path)):
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path) or "(top)"
            print(f"{path}: {where}: {error.message[:300]}")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
