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
    for ax, (key, title) in zip(axes, panels):
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
