"""`envevo analyze …`: the paper's analyses over one or more evaluated runs (rollouts recorded with `envevo rollout RUN`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli import _options as o
from envevo.cli._common import INTERRUPTED_NO_SANDBOX, err, fmt, out, print_json, require_runs, sub_app, user_errors
from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.analysis import Study

analyze_app = sub_app("The paper's analyses over runs' rollouts: generations, directions, validity; and the drift of "
                      "versions stored without it.")

Runs = Annotated[list[Path], typer.Argument(help="Run dirs whose versions have rollouts (`envevo rollout RUN "
                                            "--agent …`).")]


def load_study(runs: list[Path]) -> Study:
    """Every analysis of `runs`; a clear error when a run is missing or none has rollouts."""
    from envevo.analysis import analyze
    from envevo.store import LineageStore

    require_runs(runs)
    with ExitStack() as stack:
        study = analyze([stack.enter_context(LineageStore.open(r, create=False)) for r in runs])
    if not study.rows:
        raise UserError(f"no rollouts of these runs' versions; run `envevo rollout {runs[0]} --agent sim-medium -k 8` first")
    return study


def _study(runs: list[Path], json_out: bool, as_json: Callable[[Study], object]) -> Study:
    """The study of `runs`, to print as tables; with --json it is printed as `as_json(study)` and the command ends."""
    study = load_study(runs)
    if json_out:
        print_json(as_json(study))
        raise typer.Exit(0)
    return study


def _table(study: Study, title: str, columns: tuple[str, ...], **column_options) -> Table:
    """A table whose title says SIMULATION when the rollouts were simulated."""
    table = Table(title=title + (" — SIMULATION" if study.simulated else ""))
    for c in columns:
        table.add_column(c, **column_options)
    return table


def _show(study: Study, title: str, columns: tuple[str, ...], rows: Iterable[Sequence[str]], **column_options) -> None:
    """One table of `rows` under `columns`, printed (with the SIMULATION note when it applies)."""
    table = _table(study, title, columns, **column_options)
    for row in rows:
        table.add_row(*row)
    _print(study, table)


def _print(study: Study, *tables: Table) -> None:
    for table in tables:
        out.print(table)
    if study.simulated:
        err.print("simulated agents: pass rates and turns are SIMULATION, not a model's")


@analyze_app.command("generations")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def generations(runs: Runs, json_out: o.Json = False) -> None:
    """Difficulty across generations (Figure 3): pass rate and mean turns per generation, per agent and effort."""
    study = _study(runs, json_out, lambda s: {"points": [p.model_dump() for p in s.points],
                                              "trends": [t.model_dump() for t in s.trends]})
    # simulated profiles: the exact expectation beside the sample, so noise and the engine's effect are told apart
    table = _table(study, "pass rate and turns per generation",
                   ("agent", "effort", "gen", "tasks", "rollouts", "pass rate", "exact (sim)", "turns", "exact turns"))
    for p in study.points:
        table.add_row(escape(p.agent), p.effort or "-", str(p.generation), str(p.tasks), str(p.rollouts),
                      fmt(p.pass_rate), fmt(p.exact_pass_rate), fmt(p.mean_turns, ".1f"), fmt(p.exact_turns, ".1f"))
    trend = Table(title="trend per agent and effort" + (" — SIMULATION" if study.simulated else ""))
    for c in ("agent", "effort", "pass rate first→last", "monotone", "rises", "exact monotone", "exact rises",
              "zero from", "ρ(gen, pass)", "turns first→last"):
        trend.add_column(c)
    for t in study.trends:
        exact_monotone = "-" if t.exact_monotone is None else "yes" if t.exact_monotone else "no"
        trend.add_row(escape(t.agent), t.effort or "-", f"{t.pass_rates[0]:.2f}→{t.pass_rates[-1]:.2f}",
                      "yes" if t.monotone else "no", str(t.rises), exact_monotone,
                      "-" if t.exact_rises is None else str(t.exact_rises), "-" if t.zero_at is None else f"g{t.zero_at}",
                      fmt(t.rho_generation), f"{fmt(t.turns_first, '.1f')}→{fmt(t.turns_last, '.1f')}")
    _print(study, table, trend)


@analyze_app.command("directions")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def directions(runs: Runs, json_out: o.Json = False) -> None:
    """Direction effects (Table 1): Δpass rate, Δturns and mutation rates per direction, single step and all steps."""
    study = _study(runs, json_out, lambda s: [d.model_dump() for d in s.directions])
    if not study.directions:
        raise UserError("no evaluated step: a version and its parent must both have rollouts of the same agent")
    _show(study, "direction effects", ("scope", "direction", "agent", "steps", "Δpass", "Δpass exact (sim)", "Δturns",
                                       "ΔD_T", "instr",
                                       "env", "tests", "solution", "total"), map(_direction_row, study.directions))


def _direction_row(d) -> list[str]:
    ci = f" ±{d.d_pass_ci:.2f}" if d.d_pass_ci is not None else ""
    ti = f" ±{d.d_turns_ci:.1f}" if d.d_turns_ci is not None else ""
    return [d.scope, d.direction, escape(d.agent), str(d.steps), fmt(d.d_pass, "+.2f") + ci,
            fmt(d.d_pass_exact, "+.3f"), fmt(d.d_turns, "+.1f") + ti, fmt(d.d_DT, "+.2f"),
            *(f"{d.mutation[c]:.2f}" for c in ("instruction", "environment", "verification", "solution")),
            f"{d.total_mutation:.2f}"]


@analyze_app.command("validity")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def validity(runs: Runs, json_out: o.Json = False) -> None:
    """Validity: Spearman ρ between D_T and measured failure rate over every evaluated version, with n."""
    study = _study(runs, json_out, lambda s: [v.model_dump() for v in s.validity])
    _show(study, "Spearman ρ(D_T, failure rate)",
          ("agent", "n versions", "rollouts", "ρ", "p (permutation)", "ρ for L alone", "ρ exact (sim)", "p_T estimator"),
          ([escape(v.agent), str(v.n), str(v.rollouts), fmt(v.rho, ".3f"), fmt(v.p_value, ".4f"), fmt(v.rho_L, ".3f"),
            fmt(v.rho_exact, ".3f"), escape(v.estimator or "-")] for v in study.validity))


@analyze_app.command("claims")
@user_errors(interrupted=INTERRUPTED_NO_SANDBOX)
def claims(runs: Runs, json_out: o.Json = False) -> None:
    """Whether the paper's qualitative claims hold on these runs, with the evidence either way."""
    study = _study(runs, json_out, lambda s: [c.model_dump() for c in s.claims])
    verdicts = {True: "[green]yes[/]", False: "[red]no[/]", None: "untested"}
    _show(study, "the paper's claims, here", ("claim", "holds", "evidence"),
          ([escape(c.claim), verdicts[c.holds], escape(c.evidence)] for c in study.claims), overflow="fold")


@analyze_app.command("drift")
@user_errors(interrupted="interrupted: the drift measured so far is stored; run the command again for the rest")
def drift(run: o.RunArg, lineage: o.LineageFilter = None, json_out: o.Json = False) -> None:
    """Measure and store the semantic drift of versions stored without it (runs from before drift was recorded, or
    committed without the encoder). `evolve` measures drift as it commits; `lineage show` and `report` only read it."""
    from envevo.analysis import measure_missing_drift, unmeasured
    from envevo.store import LineageStore

    # The one writer of the run meanwhile: an evolve run on it makes this refuse, naming its PID.
    with LineageStore.open(run, create=False, hold="envevo analyze drift") as store:
        if (todo := len(unmeasured(store, lineage))) and not json_out:
            err.print(f"measuring the semantic drift of {todo} version(s) (a few seconds each on a CPU)…", highlight=False)
        measured = measure_missing_drift(store, lineage)
    if json_out:
        print_json({"run": str(run), "measured": measured})
    else:
        out.print(f"drift measured and stored for {measured} version(s)" if measured else "every version has its drift")
