"""What the trainer-adapter tests share: the config snippets of docs/trainers.md (read, so the documented config is
the tested one; a snippet is the fenced block right after a ``<!-- snippet: NAME -->`` line), an rl export of a
hand-built run, and a CPU-sized GPT-2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

DOC = ROOT / "docs" / "trainers.md"


def snippet(name: str) -> str:
    """The text of snippet NAME in docs/trainers.md."""
    m = re.search(rf"<!-- snippet: {re.escape(name)} -->\s*```[a-z]*\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"docs/trainers.md has no snippet {name!r}"
    return m.group(1)


def cli_overrides(name: str) -> list[str]:
    """The ``key=value`` overrides of a shell snippet (``python -m … \\`` lines), placeholders left in."""
    words = snippet(name).replace("\\\n", " ").split()
    return [w for w in words if "=" in w and not w.startswith("-")]


def rl_export(tmp_path: Path, lineages: int = 3, generations: int = 2) -> Path:
    """`envevo export RUN --format rl` of a hand-built run: LINEAGES lineages `lin<k>` of GENERATIONS versions."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore
    from tests.store.test_store_support import difficulty_of, tiny_task, trace_of

    with LineageStore.open(tmp_path / "run") as store:
        for k in range(lineages):
            lid = store.create_lineage(f"lin{k}", tiny_task(f"lin{k}", f"lin{k} generation 0"), trace=trace_of(1),
                                       difficulty=difficulty_of(1))
            for g in range(1, generations):
                store.commit_generation(lid, g, tiny_task(f"lin{k}", f"lin{k} generation {g}"), direction="length",
                                        effort="low", trace=trace_of(g + 1), difficulty=difficulty_of(g + 1),
                                        verified=True)
        export_rl(store, tmp_path / "rl")
    return tmp_path / "rl"


def tiny_gpt2(words: list[str], positions: int = 64) -> tuple[Any, Any]:
    """A 1-layer, 16-dim GPT-2 and a word-level tokenizer over WORDS (with a chat template): CPU-sized."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]", *sorted(set(words))])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    hf.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_embd=16, n_layer=1, n_head=2, n_positions=positions,
                                       bos_token_id=2, eos_token_id=2, pad_token_id=0))
    return model, hf


def task_export(tmp_path: Path, tasks: dict[str, Any]) -> Path:
    """`envevo export RUN --format rl` of a run with one single-generation lineage per TASKS entry (name -> a Task or
    a task dir): real tasks, for tests whose rollouts are live trials."""
    from envevo.schedule import export_rl
    from envevo.store import LineageStore
    from envevo.task import load_task
    from tests.store.test_store_support import difficulty_of, trace_of

    with LineageStore.open(tmp_path / "run") as store:
        for name, task in tasks.items():
            task = load_task(task) if isinstance(task, (str, Path)) else task
            store.create_lineage(name, task, trace=trace_of(1), difficulty=difficulty_of(1))
        export_rl(store, tmp_path / "rl")
    return tmp_path / "rl"
