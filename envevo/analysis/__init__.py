"""The paper's analyses over evaluated lineages: mutation rates per generation and component (Figure 4), difficulty
across generations (Figure 3), direction effects (Table 1) and the validity of D_T (Spearman against measured
failure)."""

from envevo.analysis._claims import Claim, claims
from envevo.analysis._collect import VersionEval, collect
from envevo.analysis._difficulty_rows import extract_traces, run_rows, task_rows
from envevo.analysis._directions import DirectionEffect, direction_effects
from envevo.analysis._drift import drift_note, measure_missing_drift, unmeasured
from envevo.analysis._generations import GenerationPoint, Trend, generation_points, trends
from envevo.analysis._mutants import killed_text, mutant_scores
from envevo.analysis._mutation import (
    RATE_COMPONENTS,
    TOTAL_COMPONENTS,
    DirectionEffortRates,
    DirectionRates,
    GenerationRates,
    MutationStats,
    Transition,
    mutation_rates,
    rates_of,
)
from envevo.analysis._stats import mean_ci, spearman, spearman_p
from envevo.analysis._study import Study, analyze
from envevo.analysis._validity import Validity, validity

__all__ = [
    "RATE_COMPONENTS", "TOTAL_COMPONENTS", "DirectionEffortRates", "DirectionRates", "GenerationRates", "MutationStats", "Transition",
    "mutation_rates", "rates_of",
    "Claim", "DirectionEffect", "GenerationPoint", "Study", "Trend", "Validity", "VersionEval", "analyze", "claims",
    "collect", "direction_effects", "generation_points", "mean_ci", "spearman", "spearman_p", "trends", "validity",
    "extract_traces", "run_rows", "task_rows", "killed_text", "mutant_scores",
    "drift_note", "measure_missing_drift", "unmeasured",
]
