"""`envevo analyze …`: the paper's analyses over one or more evaluated runs (rollouts recorded with `envevo rollout RUN`)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from envevo.cli._common import err, out, print_json, user_errors
from envevo.errors import UserError

analyze_app = typer.Typer(no_args_is_help=True, help="The paper's analyses over runs' rollouts: generations, directions, validity.")

RUNS = typer.Argument(..., help="Run dirs whose versions have rollouts (`envevo rollout RUN --agent …`).")
JSON = typer.Option(False, "--json", help="Print the rows as JSON.")


def _f(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def load_study(runs: list[Path]):
    """Every analysis of `runs`; a clear error when a run is missing or none has rollouts."""
    from envevo.analysis import analyze
    from envevo.store import LineageStore

    for r in runs:
        if not (r / "store.sqlite").is_file():
            raise UserError(f"{r} is not a run dir (no store.sqlite); pass the --out dir of `envevo evolve`")
    with ExitStack() as stack:
        study = analyze([stack.enter_context(LineageStore.open(r, create=False)) for r in runs])
    if not study.rows:
        raise UserError(f"no rollouts of these runs' versions; run `envevo rollout {runs[0]} --agent sim-medium -k 8` first")
    return study


def _sim_note(study) -> None:
    if study.simulated:
        err.print("simulated agents: pass rates and turns are SIMULATION, not a model's")


@user_errors
def generations(runs: list[Path] = RUNS, json_out: bool = JSON) -> None:
    """Difficulty across generations (Figure 3): pass rate and mean turns per generation, per agent and effort."""
    study = load_study(runs)
    if json_out:
        print_json({"points": [p.model_dump() for p in study.points], "trends": [t.model_dump() for t in study.trends]})
        return
    table = Table(title="pass rate and turns per generation" + (" — SIMULATION" if study.simulated else ""))
    for c in ("agent", "effort", "gen", "tasks", "rollouts", "pass rate", "turns"):
        table.add_column(c)
    for p in study.points:
        table.add_row(escape(p.agent), p.effort or "-", str(p.generation), str(p.tasks), str(p.rollouts),
                      _f(p.pass_rate), _f(p.mean_turns, ".1f"))
    out.print(table)
    trend = Table(title="trend per agent and effort")
    for c in ("agent", "effort", "pass rate first→last", "monotone", "rises", "zero from", "ρ(gen, pass)", "turns first→last"):
        trend.add_column(c)
    for t in study.trends:
        trend.add_row(escape(t.agent), t.effort or "-", f"{t.pass_rates[0]:.2f}→{t.pass_rates[-1]:.2f}",
                      "yes" if t.monotone else "no", str(t.rises), "-" if t.zero_at is None else f"g{t.zero_at}",
                      _f(t.rho_generation), f"{_f(t.turns_first, '.1f')}→{_f(t.turns_last, '.1f')}")
    out.print(trend)
    _sim_note(study)


@user_errors
def directions(runs: list[Path] = RUNS, json_out: bool = JSON) -> None:
    """Direction effects (Table 1): Δpass rate, Δturns and mutation rates per direction, single step and all steps."""
    study = load_study(runs)
    if json_out:
        print_json([d.model_dump() for d in study.directions])
        return
    if not study.directions:
        raise UserError("no evaluated step: a version and its parent must both have rollouts of the same agent")
    table = Table(title="direction effects" + (" — SIMULATION" if study.simulated else ""))
    for c in ("scope", "direction", "agent", "steps", "Δpass", "Δturns", "ΔD_T", "instr", "env", "tests", "solution", "total"):
        table.add_column(c)
    for d in study.directions:
        ci = f" ±{d.d_pass_ci:.2f}" if d.d_pass_ci is not None else ""
        ti = f" ±{d.d_turns_ci:.1f}" if d.d_turns_ci is not None else ""
        table.add_row(d.scope, d.direction, escape(d.agent), str(d.steps), _f(d.d_pass, "+.2f") + ci,
                      _f(d.d_turns, "+.1f") + ti, _f(d.d_DT, "+.2f"),
                      *(f"{d.mutation[c]:.2f}" for c in ("instruction", "environment", "verification", "solution")),
                      f"{d.total_mutation:.2f}")
    out.print(table)
    _sim_note(study)


@user_errors
def validity(runs: list[Path] = RUNS, json_out: bool = JSON) -> None:
    """Validity: Spearman ρ between D_T and measured failure rate over every evaluated version, with n."""
    study = load_study(runs)
    if json_out:
        print_json([v.model_dump() for v in study.validity])
        return
    table = Table(title="Spearman ρ(D_T, failure rate)" + (" — SIMULATION" if study.simulated else ""))
    for c in ("agent", "n versions", "rollouts", "ρ", "p (permutation)", "ρ for L alone", "p_T estimator"):
        table.add_column(c)
    for v in study.validity:
        table.add_row(escape(v.agent), str(v.n), str(v.rollouts), _f(v.rho, ".3f"), _f(v.p_value, ".4f"),
                      _f(v.rho_L, ".3f"), escape(v.estimator or "-"))
    out.print(table)
    _sim_note(study)


@user_errors
def claims(runs: list[Path] = RUNS, json_out: bool = JSON) -> None:
    """Whether the paper's qualitative claims hold on these runs, with the evidence either way."""
    study = load_study(runs)
    if json_out:
        print_json([c.model_dump() for c in study.claims])
        return
    table = Table(title="the paper's claims, here" + (" — SIMULATION" if study.simulated else ""))
    for c in ("claim", "holds", "evidence"):
        table.add_column(c, overflow="fold")
    for c in study.claims:
        verdict = {True: "[green]yes[/]", False: "[red]no[/]", None: "untested"}[c.holds]
        table.add_row(escape(c.claim), verdict, escape(c.evidence))
    out.print(table)
    _sim_note(study)


analyze_app.command("generations")(generations)
analyze_app.command("directions")(directions)
analyze_app.command("validity")(validity)
analyze_app.command("claims")(claims)
