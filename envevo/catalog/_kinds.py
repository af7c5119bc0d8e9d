"""Typed data flowing between steps: what a step reads, what it writes, and where.

A block maps an input kind to an output kind. Every non-final output carries a set of names (keys)
that the next step looks up in its own scenario, which is what makes the steps depend on each other.
NUMBER carries no keys, so it can only end a chain.
"""

from __future__ import annotations

import json
from enum import StrEnum


class Kind(StrEnum):
    NONE = "none"  # the first step reads nothing from a previous step
    KEYS = "keys"  # one name per line, sorted, unique
    TABLE = "table"  # name<TAB>value lines
    RECORDS = "records"  # JSON lines {"key": ..., "value": ...}
    NUMBER = "number"  # a single integer


KEYED = frozenset({Kind.KEYS, Kind.TABLE, Kind.RECORDS})
_EXT = {Kind.KEYS: "txt", Kind.TABLE: "tsv", Kind.RECORDS: "jsonl", Kind.NUMBER: "txt"}
WORK_DIR = "/app/work"
OUTPUT_DIR = "/app/output"


def out_path(index: int, kind: Kind, final: bool) -> str:
    """Intermediate outputs go to /app/work/stepN.*; the last step writes the checked artifact."""
    return f"{OUTPUT_DIR}/result.{_EXT[kind]}" if final else f"{WORK_DIR}/step{index + 1}.{_EXT[kind]}"


def keys_file(index: int) -> str:
    return f"/tmp/keys{index + 1}.txt"


# How a step turns the previous step's output into a sorted key list, and how the instruction names those keys.
_PRELUDE = {Kind.KEYS: "sort -u {path} > {dest}", Kind.TABLE: "cut -f1 {path} | sort -u > {dest}",
            Kind.RECORDS: "jq -r '.key' {path} | sort -u > {dest}"}
_DESCRIBE = {Kind.KEYS: "the names listed in `{path}`", Kind.TABLE: "the names in the first column of `{path}`",
             Kind.RECORDS: 'the `"key"` values of the records in `{path}`'}


def keys_prelude(kind: Kind, path: str | None, dest: str) -> str:
    """Shell that turns the previous step's output into a sorted key list at `dest`."""
    return _PRELUDE[kind].format(path=path, dest=dest) if kind in _PRELUDE else ""


def describe_input(kind: Kind, path: str | None) -> str:
    return _DESCRIBE[kind].format(path=path) if kind in _DESCRIBE else ""


def render_output(kind: Kind, value) -> str:
    """Exact file content for an output value (list of keys, list of (k, v), list of dicts, int)."""
    if kind is Kind.KEYS:
        return "".join(f"{k}\n" for k in value)
    if kind is Kind.TABLE:
        return "".join(f"{k}\t{v}\n" for k, v in value)
    if kind is Kind.RECORDS:
        return "".join(json.dumps(r, separators=(", ", ": ")) + "\n" for r in value)
    return f"{int(value)}\n"


def keys_of(kind: Kind, value) -> list[str]:
    """The names a step hands to the next one."""
    if kind is Kind.KEYS:
        return sorted(set(value))
    if kind is Kind.TABLE:
        return sorted({k for k, _ in value})
    if kind is Kind.RECORDS:
        return sorted({r["key"] for r in value})
    return []


def output_check(kind: Kind, path: str, value) -> dict:
    """The test assertion for an output file: exact lines, parsed records, or the integer."""
    if kind is Kind.RECORDS:
        return {"check": "records", "path": path, "expected": list(value)}
    if kind is Kind.NUMBER:
        return {"check": "number", "path": path, "expected": int(value)}
    return {"check": "lines", "path": path, "expected": render_output(kind, value).splitlines()}
