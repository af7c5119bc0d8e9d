"""`envevo report RUN...`: a self-contained HTML report of one or more runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, check_output, out, print_json, require_runs, user_errors


@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run dir(s) written by `envevo evolve`; several (e.g. one per "
                                               "effort) share one evaluation section.")],
    out_file: Annotated[Path | None, o.out_option("HTML file to write (default FIRST_RUN/report.html).")] = None,
    json_out: o.Json = False,
) -> None:
    """Write a self-contained HTML report: the analyses of recorded rollouts (pass rate and turns per generation,
    direction effects, Spearman validity of D_T), then per run D_T and its terms, mutation rates, ξ and diffs."""
    from envevo.report import build_report

    require_runs(runs)
    check_output(out_file if out_file is not None else runs[0] / "report.html", "--out", folder=False)
    path = build_report(runs, out_file)
    if json_out:
        print_json({"report": str(path.resolve())})
    else:
        out.print(f"report: {path.resolve()}")
