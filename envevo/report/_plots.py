"""Plots as PNG bytes (matplotlib, headless), embedded into the report as data URIs."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402


def to_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def difficulty_plot(series: dict[str, list[dict]]) -> str:
    """Per lineage: D_T and its terms per generation. `series[lineage]` = rows with generation, L, D_T, terms."""
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    panels = [("D_T", "D_T (nats)"), ("L", "L (pairs)"), ("scenario_novelty", "scenario novelty Σ−log p(σ|g)"),
              ("skill_rarity", "skill rarity Σ−log p(κ|σ,g)")]
    for ax, (key, title) in zip(axes, panels, strict=True):
        for lineage, rows in series.items():
            xs = [r["generation"] for r in rows]
            ax.plot(xs, [r[key] for r in rows], marker="o", ms=3, label=lineage)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
    if len(series) <= 8:
        axes[0].legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)


def drift_plot(series: dict[str, list[dict]], bound: float | None = None) -> str:
    """Per lineage: drift (1 − cosine similarity) of the instruction and the goal from the seed, and of the
    instruction from the parent, per generation. `series[lineage]` = rows with generation, drift_seed,
    goal_drift_seed, drift_parent (None for the seed)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4), sharey=True)
    panels = [("drift_seed", "instruction drift from the seed"), ("goal_drift_seed", "goal drift from the seed"),
              ("drift_parent", "instruction drift from the parent")]
    for ax, (key, title) in zip(axes, panels, strict=True):
        for lineage, rows in series.items():
            pts = [(r["generation"], r[key]) for r in rows if r[key] is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", ms=3, label=lineage)
        if bound is not None and key == "drift_seed":
            ax.axhline(bound, color="crimson", ls="--", lw=1, label=f"--max-drift {bound:g}")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("generation")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("1 − cosine similarity")
    if len(series) <= 8:
        axes[0].legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)


def mutation_plot(rows: list[dict], components: list[str]) -> str:
    """Fraction of lineages whose component changed, per generation, and the total mutation rate."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    xs = [r["generation"] for r in rows]
    for c in components:
        ax.plot(xs, [r["rates"][c] for r in rows], marker="o", ms=3, label=c)
    ax.plot(xs, [r["total"] for r in rows], color="black", lw=2, label="total (instr ∪ env ∪ tests)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("generation")
    ax.set_ylabel("mutation rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)


def generations_plot(points: list[dict]) -> str:
    """The Figure 3 analogue: pass rate (top) and mean turns (bottom) per generation, a column per effort,
    a curve per agent. `points` are GenerationPoint dicts."""
    efforts = sorted({p["effort"] or "-" for p in points},
                     key=lambda e: ["low", "high", "max"].index(e) if e in ("low", "high", "max") else 9)
    agents = sorted({p["agent"] for p in points})
    fig, axes = plt.subplots(2, len(efforts), figsize=(4.2 * len(efforts), 6), squeeze=False, sharex=True)
    for col, effort in enumerate(efforts):
        for agent in agents:
            ps = sorted((p for p in points if (p["effort"] or "-") == effort and p["agent"] == agent), key=lambda p: p["generation"])
            if not ps:
                continue
            xs = [p["generation"] for p in ps]
            axes[0][col].plot(xs, [p["pass_rate"] for p in ps], marker="o", ms=3, label=agent)
            axes[1][col].plot(xs, [p["mean_turns"] for p in ps], marker="o", ms=3, label=agent)
        axes[0][col].set_title(f"{effort} effort", fontsize=10)
        axes[0][col].set_ylim(-0.05, 1.05)
        axes[1][col].set_xlabel("generation")
        axes[1][col].xaxis.get_major_locator().set_params(integer=True)
        for row in (0, 1):
            axes[row][col].grid(alpha=0.3)
    axes[0][0].set_ylabel("pass rate")
    axes[1][0].set_ylabel("mean turns")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)


def validity_plot(rows: list[dict]) -> str:
    """D_T against measured failure rate, one point per evaluated (version, agent). `rows` are VersionEval dicts."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for agent in sorted({r["agent"] for r in rows}):
        rs = [r for r in rows if r["agent"] == agent and r["D_T"] is not None]
        ax.scatter([r["D_T"] for r in rs], [1 - r["pass_rate"] for r in rs], s=14, alpha=0.7, label=agent)
    ax.set_xlabel("D_T (nats)")
    ax.set_ylabel("failure rate (1 − pass rate)")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)
