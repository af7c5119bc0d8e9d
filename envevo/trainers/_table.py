"""docs/trainers.md's "which runner honours what" table, generated from the runners' capability constants.

    python -m envevo.trainers._table          # rewrite the table in docs/trainers.md
    python -m envevo.trainers._table --check  # exit 1 when the docs and the constants disagree
"""

from __future__ import annotations

import sys
from pathlib import Path

from envevo.trainers._runner import Capability as C
from envevo.trainers._runners import RUNNERS

BEGIN = "<!-- runner-table: generated from envevo/trainers (RunnerSpec constants) by python -m envevo.trainers._table -->"
END = "<!-- /runner-table -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "trainers.md"
COLUMNS = {
    C.BUILDS_IMAGES: "builds `environment/Dockerfile`",
    C.SEPARATE_VERIFIER: 'separate verifier (`environment_mode = "separate"`)',
    C.ARTIFACTS: "artifacts, `[[verifier.collect]]`",
    C.NO_NETWORK: '`network_mode = "no-network"`',
    C.PREBUILT_IMAGES: "prebuilt image (`docker_image`, `export --images`)",
}


def runner_table() -> str:
    """The markdown table, one row per runner of :data:`RUNNERS`, in its order."""
    head = ["runner", "`--runner`", *COLUMNS.values(), "tested here"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in RUNNERS.values():
        cells = [r.label, f"`{r.name}`", *(r.honours[c].cell() for c in COLUMNS), r.tested]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(doc: str) -> str:
    """DOC with the text between the markers replaced by the generated table."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC} lacks the markers {BEGIN!r} … {END!r}")
    return doc[: start + len(BEGIN)] + "\n" + runner_table() + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    doc = DOC.read_text(encoding="utf-8")
    new = render(doc)
    if "--check" in argv:
        if new != doc:
            print(f"{DOC}: the runner table differs from the RunnerSpec constants; run python -m envevo.trainers._table",
                  file=sys.stderr)
            return 1
        return 0
    if new != doc:
        DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
