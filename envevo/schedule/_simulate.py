"""The curriculum simulator: schedulers drive a synthetic GRPO learner on a lineage pool. SIMULATION ONLY.

Each step, a scheduler picks ``batch_envs`` environments (``next``), each gets a group of ``group_size``
simulated Bernoulli rollouts at the learner's true success probability, the groups go back to the scheduler
(``observe``; with ``lag`` > 0 they arrive that many steps later, as in an asynchronous trainer), and the
learner takes one GRPO step on the groups the scheduler keeps. Schedulers with dynamic sampling (DAPO)
get their dropped groups refilled within the step, up to ``max_refill_rounds`` extra draws, and pay for
the extra rollouts.

Repeated runs (``seeds``) vary the learner's initial competence, the scheduler's seed and the rollout
draws; a given seed gives every scheduler the same initial learner, so differences can be paired.

Metrics per run:

- ``partial_frac_early`` / ``partial_frac``: fraction of rolled-out groups that were partially solvable
  (0 < passes < B) in the first ``early_steps`` steps / overall;
- ``reward_early`` / ``reward``: mean rollout reward in the first steps / overall;
- ``heldout_success``: mean true success probability on the held-out environments after the last step
  (``heldout_gain``: its change from before training; ``heldout_gain_per_10k``: that change per 10,000
  rollouts spent, which puts dynamic sampling's extra rollouts on the same footing);
- ``mastered``: training environments the learner did not master before (true p ≤ τ) and does after
  (p > τ); ``rollouts_per_mastered``: rollouts spent per such environment (None when there is none);
- ``rollouts``: rollouts spent; ``signal_frac``: fraction of batch slots that carried a nonzero advantage.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envevo.schedule._base import make_scheduler, parse_spec
from envevo.schedule._learner import LearnerConfig, SyntheticLearner
from envevo.schedule._records import EnvRecord, EnvTable, Lineages, ScheduleError, normalize_lineages
from envevo.schedule._stats import MeanCI, mean_ci

METRICS: tuple[str, ...] = (
    "partial_frac_early",
    "partial_frac",
    "reward_early",
    "reward",
    "heldout_success",
    "heldout_gain",
    "heldout_gain_per_10k",
    "train_success",
    "mastered",
    "rollouts_per_mastered",
    "rollouts",
    "signal_frac",
)
DEFAULT_SCHEDULERS: tuple[str, ...] = ("el", "random", "plr", "sfl", "dapo", "pools", "coevo")
SIMULATION_LABEL = "SIMULATION (synthetic learner, simulated rollouts; not a trained model)"


class SimConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: int = Field(200, ge=1)
    seeds: int = Field(5, ge=1)
    seed: int = Field(0, description="first seed; runs use seed, seed+1, …")
    batch_envs: int = Field(16, ge=1, description="groups (environments) per training step")
    group_size: int = Field(8, ge=1, description="rollouts per group (B)")
    tau: float = Field(0.75, ge=0, lt=1)
    lag: int = Field(0, ge=0, description="steps between serving a group and observing it (async trainers)")
    early_steps: int = Field(50, ge=1)
    eval_every: int = Field(10, ge=1)
    max_refill_rounds: int = Field(4, ge=0, description="dynamic sampling: extra draws per step at most")
    learner: LearnerConfig = LearnerConfig()


class RunResult(BaseModel):
    scheduler: str
    seed: int
    metrics: dict[str, float | None]
    partial_curve: list[float]
    reward_curve: list[float]
    heldout_curve: list[tuple[int, float]]
    progress: dict[str, object]


class SimulationResult(BaseModel):
    simulation: bool = True
    label: str = SIMULATION_LABEL
    config: SimConfig
    pool: dict[str, object]
    schedulers: list[str]
    summary: dict[str, dict[str, MeanCI]]
    """scheduler -> metric -> {mean, lo, hi, n}"""
    paired: dict[str, dict[str, MeanCI]]
    """scheduler -> metric -> difference from the reference scheduler, paired by seed: {mean, lo, hi, n}"""
    reference: str
    notes: dict[str, list[str]]
    runs: list[RunResult]
    seconds: float


def split_heldout(
    lineages: list[list[EnvRecord]], every: int = 4
) -> tuple[list[list[EnvRecord]], list[list[EnvRecord]]]:
    """Every ``every``-th lineage (the last of each block) is held out. Needs at least ``every`` lineages."""
    held = [lin for k, lin in enumerate(lineages) if k % every == every - 1]
    train = [lin for k, lin in enumerate(lineages) if k % every != every - 1]
    return train, held


def _stream_seed(*parts: object) -> np.random.SeedSequence:
    return np.random.SeedSequence([zlib.crc32("|".join(map(str, parts)).encode())])


def run_one(spec: str, table: EnvTable, heldout: Sequence[EnvRecord], config: SimConfig, seed: int) -> RunResult:
    """One scheduler, one seed."""
    all_recs = list(table.records) + list(heldout)
    learner = SyntheticLearner(all_recs, config.learner, seed=seed)
    train = learner.compile(table.records)
    held = learner.compile(heldout) if heldout else None
    sched = make_scheduler(spec, table, seed=seed, group_size=config.group_size, tau=config.tau)
    rng = np.random.default_rng(_stream_seed("rollouts", spec, seed))
    B, n = config.group_size, config.batch_envs
    p_init = learner.success(train)
    held0 = float(learner.success(held).mean()) if held is not None else None

    partial_curve, reward_curve, heldout_curve = [], [], []
    if held is not None:
        heldout_curve.append((0, held0))
    groups_all = partial_all = 0
    reward_all = 0.0
    groups_early = partial_early = 0
    reward_early = 0.0
    rollouts = 0
    signal_slots = slots = 0
    queue: deque[tuple[int, list[tuple[str, int, list[float]]]]] = deque()

    def roll(ids: list[str]) -> list[tuple[str, int, list[float]]]:
        rows = np.fromiter((table.index[e] for e in ids), dtype=np.int64, count=len(ids))
        p = learner.success(train, rows)
        draws = (rng.random((len(ids), B)) < p[:, None]).astype(np.float64)
        return [(e, int(r), d.tolist()) for e, r, d in zip(ids, rows, draws, strict=True)]

    for t in range(config.steps):
        rolled = roll(sched.next(n))
        queue.append((t + config.lag, rolled))
        step_groups = list(rolled)
        kept: list[tuple[int, list[float]]] = []
        while queue and queue[0][0] <= t:
            for e, row, r in queue.popleft()[1]:
                if sched.observe(e, r).keep:
                    kept.append((row, r))
        if sched.dynamic_sampling and config.lag == 0:
            for _ in range(config.max_refill_rounds):
                if len(kept) >= n:
                    break
                extra = roll(sched.next(n - len(kept)))
                step_groups += extra
                for e, row, r in extra:
                    if sched.observe(e, r).keep:
                        kept.append((row, r))
            kept = kept[:n]
        slots += n
        signal_slots += learner.update(train, [k[0] for k in kept], [k[1] for k in kept], batch_size=n)

        g = len(step_groups)
        passes = [sum(r) for _, _, r in step_groups]
        part = sum(1 for s in passes if 0 < s < B)
        rew = float(sum(passes))
        rollouts += g * B
        groups_all += g
        partial_all += part
        reward_all += rew
        if t < config.early_steps:
            groups_early += g
            partial_early += part
            reward_early += rew
        partial_curve.append(part / g)
        reward_curve.append(rew / (g * B))
        if held is not None and ((t + 1) % config.eval_every == 0 or t + 1 == config.steps):
            heldout_curve.append((t + 1, float(learner.success(held).mean())))

    p_end = learner.success(train)
    mastered = int(((p_init <= config.tau) & (p_end > config.tau)).sum())
    held_end = float(learner.success(held).mean()) if held is not None else None
    metrics: dict[str, float | None] = {
        "partial_frac_early": partial_early / groups_early,
        "partial_frac": partial_all / groups_all,
        "reward_early": reward_early / (groups_early * B),
        "reward": reward_all / (groups_all * B),
        "heldout_success": held_end,
        "heldout_gain": None if held_end is None else held_end - held0,  # type: ignore[operator]
        "heldout_gain_per_10k": None if held_end is None else (held_end - held0) * 1e4 / rollouts,  # type: ignore
        "train_success": float(p_end.mean()),
        "mastered": float(mastered),
        "rollouts_per_mastered": rollouts / mastered if mastered else None,
        "rollouts": float(rollouts),
        "signal_frac": signal_slots / slots,
    }
    return RunResult(scheduler=spec, seed=seed, metrics=metrics, partial_curve=partial_curve,
                     reward_curve=reward_curve, heldout_curve=heldout_curve, progress=sched.progress())


def simulate(
    lineages: Lineages,
    schedulers: Sequence[str] = DEFAULT_SCHEDULERS,
    config: SimConfig | None = None,
    *,
    heldout: Lineages | None = None,
    pool: Mapping[str, object] | None = None,
    on_run: Callable[[RunResult], None] | None = None,
) -> SimulationResult:
    """Run every scheduler for ``config.seeds`` seeds on ``lineages``; held-out success is measured on
    ``heldout`` (if None: every 4th lineage of ``lineages`` is held out when there are at least 4, else
    there is no held-out metric)."""
    config = config or SimConfig()
    specs = [s.strip() for s in schedulers if s.strip()]
    if not specs:
        raise ScheduleError("no schedulers to simulate")
    if len(set(specs)) != len(specs):
        raise ScheduleError("a scheduler is listed twice")
    for s in specs:
        parse_spec(s)  # unknown names fail before any run
    lins = normalize_lineages(lineages)
    if heldout is None:
        train_l, held_l = split_heldout(lins) if len(lins) >= 4 else (lins, [])
    else:
        train_l, held_l = lins, normalize_lineages(heldout)
    table = EnvTable(train_l)
    held_recs = [r for lin in held_l for r in lin]
    started = time.perf_counter()
    runs: list[RunResult] = []
    notes: dict[str, list[str]] = {}
    for spec in specs:
        for k in range(config.seeds):
            res = run_one(spec, table, held_recs, config, config.seed + k)
            runs.append(res)
            if on_run:
                on_run(res)
        sched = make_scheduler(spec, table, seed=config.seed, group_size=config.group_size, tau=config.tau)
        spec_notes = list(sched.notes)
        if sched.dynamic_sampling and config.lag > 0:
            spec_notes.append("with lag > 0 a dropped group is known only steps later, so nothing is refilled: "
                              "dynamic sampling here only drops zero-variance groups")
        if spec_notes:
            notes[spec] = spec_notes
    reference = "el" if "el" in specs else specs[0]
    summary: dict[str, dict[str, MeanCI]] = {}
    paired: dict[str, dict[str, MeanCI]] = {}
    by = {(r.scheduler, r.seed): r for r in runs}
    seeds = [config.seed + k for k in range(config.seeds)]
    for spec in specs:
        summary[spec] = {m: mean_ci([by[spec, s].metrics[m] for s in seeds]) for m in METRICS}
        if spec != reference:
            paired[spec] = {}
            for m in METRICS:
                diffs = []
                for seed in seeds:
                    a, b = by[spec, seed].metrics[m], by[reference, seed].metrics[m]
                    diffs.append(None if a is None or b is None else a - b)
                paired[spec][m] = mean_ci(diffs)
    pool_info = {
        **(pool or {}),
        "lineages": len(train_l),
        "environments": len(table),
        "generations": int(table.generation.max()) + 1,
        "heldout_lineages": len(held_l),
        "heldout_environments": len(held_recs),
    }
    return SimulationResult(config=config, pool=pool_info, schedulers=specs, summary=summary, paired=paired,
                            reference=reference, notes=notes, runs=runs, seconds=time.perf_counter() - started)
