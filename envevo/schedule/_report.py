"""Plots (PNG) and a self-contained HTML page of a simulation. Every figure says it is a simulation."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import TypedDict

import matplotlib

matplotlib.use("Agg")  # headless; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from envevo.schedule._simulate import SIMULATION_LABEL, SimulationResult  # noqa: E402
from envevo.schedule._stats import MeanCI  # noqa: E402

TABLE_METRICS: tuple[tuple[str, str, int], ...] = (
    ("partial_frac_early", "partial groups, first {early} steps", 3),
    ("partial_frac", "partial groups, all steps", 3),
    ("reward_early", "mean reward, first {early} steps", 3),
    ("reward", "mean reward, all steps", 3),
    ("heldout_success", "held-out success after last step", 3),
    ("heldout_gain_per_10k", "held-out gain per 10k rollouts", 3),
    ("mastered", "envs newly mastered", 1),
    ("rollouts_per_mastered", "rollouts per mastered env", 0),
    ("rollouts", "rollouts spent", 0),
)
PAIRED_METRICS = ("partial_frac_early", "reward_early", "partial_frac", "reward", "heldout_success",
                  "heldout_gain_per_10k", "rollouts_per_mastered")


def fmt_ci(s: MeanCI, digits: int) -> str:
    if s.get("mean") is None:
        return "-"
    m = f"{s['mean']:.{digits}f}"
    if s.get("lo") is None:
        return m
    return f"{m} [{s['lo']:.{digits}f}, {s['hi']:.{digits}f}]"


def fmt_pm(s: MeanCI, digits: int) -> str:
    """Compact form for terminals: mean ± half-width of the (symmetric) 95% t-interval."""
    if s.get("mean") is None:
        return "-"
    m = f"{s['mean']:.{digits}f}"
    lo, hi = s.get("lo"), s.get("hi")
    return m if lo is None or hi is None else f"{m}±{(hi - lo) / 2:.{digits}f}"


SHORT_TITLES = {
    "partial_frac_early": "partial ≤{early}",
    "partial_frac": "partial all",
    "reward_early": "reward ≤{early}",
    "reward": "reward all",
    "heldout_success": "held-out",
    "heldout_gain_per_10k": "gain/10k roll.",
    "mastered": "mastered",
    "rollouts_per_mastered": "rollouts/mastered",
    "rollouts": "rollouts",
}


def metric_title(label: str, result: SimulationResult) -> str:
    return label.format(early=result.config.early_steps)


def _smooth(y: np.ndarray, w: int) -> np.ndarray:
    if w <= 1 or len(y) < w:
        return y
    k = np.ones(w) / w
    return np.convolve(np.pad(y, (w - 1, 0), mode="edge"), k, mode="valid")


def _curves(result: SimulationResult, attr: str) -> dict[str, np.ndarray]:
    out: dict[str, list[list[float]]] = {}
    for r in result.runs:
        out.setdefault(r.scheduler, []).append(getattr(r, attr))
    return {k: np.asarray(v, dtype=float).mean(axis=0) for k, v in out.items()}


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _style(ax: Axes, result: SimulationResult) -> None:
    if len(result.schedulers) > 10:
        # tab20 is a ListedColormap (it has .colors); matplotlib's stubs type plt.cm's members as Colormap.
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # type: ignore[attr-defined]


class _LineStyle(TypedDict):
    lw: float
    ls: str


def _line(spec: str, result: SimulationResult) -> _LineStyle:
    """The reference scheduler thick; extensions ("el+…") dashed."""
    return {"lw": 1.8 if spec == result.reference else 1.0, "ls": "--" if "+" in spec else "-"}


def _line_plot(result: SimulationResult, attr: str, ylabel: str, title: str) -> bytes:
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    _style(ax, result)
    w = max(1, result.config.steps // 20)
    for spec, y in _curves(result, attr).items():
        ax.plot(np.arange(1, len(y) + 1), _smooth(y, w), label=spec, **_line(spec, result))
    ax.axvline(result.config.early_steps, color="grey", ls=":", lw=1)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(f"SIMULATION — {title}\n(mean of {result.config.seeds} seeds, moving average of {w} steps)",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return _png(fig)


def _heldout_plot(result: SimulationResult) -> bytes:
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    _style(ax, result)
    per: dict[str, list[list[tuple[int, float]]]] = {}
    for r in result.runs:
        per.setdefault(r.scheduler, []).append(r.heldout_curve)
    for spec, curves in per.items():
        if not curves or not curves[0]:
            continue
        xs = [x for x, _ in curves[0]]
        ys = np.asarray([[y for _, y in c] for c in curves]).mean(axis=0)
        ax.plot(xs, ys, marker="o", ms=2.5, label=spec, **_line(spec, result))
    ax.set_xlabel("training step")
    ax.set_ylabel("mean success probability")
    ax.set_title(f"SIMULATION — held-out success (mean of {result.config.seeds} seeds)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return _png(fig)


def _summary_plot(result: SimulationResult) -> bytes:
    metrics = [("partial_frac_early", "partial groups\nfirst steps"), ("reward_early", "reward\nfirst steps"),
               ("partial_frac", "partial groups\nall steps"), ("heldout_success", "held-out\nsuccess")]
    fig, axes = plt.subplots(1, len(metrics), figsize=(13, 3.6))
    specs = result.schedulers
    for ax, (m, title) in zip(axes, metrics, strict=True):
        means = [result.summary[s][m]["mean"] or 0.0 for s in specs]
        err = [[(result.summary[s][m]["mean"] or 0) - (result.summary[s][m]["lo"] or result.summary[s][m]["mean"] or 0)
                for s in specs],
               [(result.summary[s][m]["hi"] or result.summary[s][m]["mean"] or 0) - (result.summary[s][m]["mean"] or 0)
                for s in specs]]
        colors = ["tab:red" if s == result.reference else "tab:blue" for s in specs]
        ax.bar(range(len(specs)), means, yerr=err, color=colors, capsize=3)
        ax.set_xticks(range(len(specs)))
        ax.set_xticklabels(specs, rotation=45, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"SIMULATION — means with 95% CIs over {result.config.seeds} seeds", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def render_plots(result: SimulationResult) -> dict[str, bytes]:
    """PNG bytes by file name."""
    return {
        "partial.png": _line_plot(result, "partial_curve", "fraction of groups 0 < passes < B",
                                  "partially solvable groups per step"),
        "reward.png": _line_plot(result, "reward_curve", "mean rollout reward", "training reward per step"),
        "heldout.png": _heldout_plot(result),
        "summary.png": _summary_plot(result),
    }


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1150px;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left}
th{background:#f4f4f4} img{max-width:100%} .banner{background:#fff3cd;border:1px solid #e0c36a;padding:.6em}
.muted{color:#666}"""


def html_page(result: SimulationResult, images: dict[str, bytes]) -> str:
    e = html.escape
    early = result.config.early_steps
    head = "".join(f"<th>{e(metric_title(t, result))}</th>" for _, t, _ in TABLE_METRICS)
    rows = []
    for s in result.schedulers:
        cells = "".join(f"<td>{e(fmt_ci(result.summary[s][m], d))}</td>" for m, _, d in TABLE_METRICS)
        rows.append(f"<tr><td><b>{e(s)}</b></td>{cells}</tr>")
    phead = "".join(f"<th>{e(m)}</th>" for m in PAIRED_METRICS)
    prow = []
    for s, d in result.paired.items():
        cells = "".join(f"<td>{e(fmt_ci(d[m], 3))}</td>" for m in PAIRED_METRICS)
        prow.append(f"<tr><td><b>{e(s)}</b> − {e(result.reference)}</td>{cells}</tr>")
    notes = "".join(f"<li><b>{e(k)}</b>: {e(n)}</li>" for k, v in result.notes.items() for n in v)
    imgs = "".join(
        f'<p><img alt="{e(name)}" src="data:image/png;base64,{base64.b64encode(png).decode()}"></p>'
        for name, png in images.items()
    )
    cfg = json.dumps(result.config.model_dump(mode="json"))
    pool = json.dumps(result.pool)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>envevo schedule simulate (simulation)</title>
<style>{_CSS}</style></head><body>
<h1>Curriculum simulation: EL scheduler against baselines</h1>
<p class="banner"><b>{e(SIMULATION_LABEL)}.</b> Rollouts are Bernoulli draws from a synthetic learner's success
probability on each environment's ξ; nothing here was measured on a model or in a sandbox.</p>
<p class="muted">pool: {e(pool)}<br>config: {e(cfg)}<br>{len(result.runs)} runs in {result.seconds:.1f} s.
Cells: mean [95% t-interval over seeds]. "partial" = 0 &lt; passes &lt; B; the dotted line marks the
first {early} steps.</p>
<h2>Summary (simulation)</h2><table><tr><th>scheduler</th>{head}</tr>{''.join(rows)}</table>
<h2>Difference from {e(result.reference)}, paired by seed (simulation)</h2>
<table><tr><th>scheduler</th>{phead}</tr>{''.join(prow)}</table>
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
<h2>Plots (simulation)</h2>{imgs}
</body></html>"""


def write_report(result: SimulationResult, out: Path) -> dict[str, str]:
    """Write PNGs, ``simulation.html`` (images inlined) and ``simulation.json`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    images = render_plots(result)
    files = {}
    for name, png in images.items():
        (out / name).write_bytes(png)
        files[name] = str(out / name)
    (out / "simulation.html").write_text(html_page(result, images), encoding="utf-8")
    files["simulation.html"] = str(out / "simulation.html")
    (out / "simulation.json").write_text(json.dumps(result.model_dump(mode="json"), indent=1), encoding="utf-8")
    files["simulation.json"] = str(out / "simulation.json")
    return files
