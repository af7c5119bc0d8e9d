"""Every step's wrong variant changes the checked output on its drawn fixtures, proved on the host without running
any task code: each mistake of the 7 blocks that the difficulty study (SIMULATION) saw pass is modelled here in
Python over the fixture operations (the data the image build writes), next to the reference it is compared with.

- the model of the reference reproduces the block's expected output (so the model reads the fixtures right);
- wherever the skill claims its wrong variant differs (`wrong_differs`), the model of the mistake gives another
  answer;
- seeds and evolution edits never keep a step whose mistake is harmless (`harmless_steps`), and the engine's own
  quality check names one.
"""

from __future__ import annotations

import fnmatch
import hashlib
import random
import re

import pytest

from envevo.catalog import SCENARIOS, SKILLS, Chain, ChainStep, Kind, build_blocks, compatible, harmless_steps, random_chain
from envevo.evolve.engines.procedural import compose, quality_check

STUDY_BLOCKS = [("cert_directory", "openssl_inspect"), ("cert_bundle", "regex_filter"), ("makefile_project", "diff_compare"),
                ("nginx_config", "checksum_verify"), ("access_log", "regex_filter"), ("markdown_table", "regex_filter"),
                ("tar_backup", "tar_gzip")]
DRAWS = 24


def _draws(sc: str, sk: str, n: int = DRAWS):
    """(block, the keys it reads or None) for n chains ending in (sc, sk), with a random predecessor or none."""
    rng = random.Random(f"{sc}|{sk}")
    preds = [(a, b) for a in SCENARIOS for b in SKILLS if a != sc and compatible(a, b)
             and SKILLS[b].out in SKILLS[sk].accepts and SKILLS[b].out is not Kind.NUMBER]
    got = 0
    while got < n:
        steps = [ChainStep(scenario=sc, skill=sk, seed=rng.randrange(1 << 30))]
        if Kind.NONE not in SKILLS[sk].accepts or rng.random() < 0.6:
            a, b = rng.choice(preds)
            steps.insert(0, ChainStep(scenario=a, skill=b, seed=rng.randrange(1 << 30)))
        try:
            blocks = build_blocks(Chain(goal="g", category="data", seed=rng.randrange(1 << 30), steps=tuple(steps)))
        except Exception:  # noqa: BLE001 - this predecessor gives the step nothing meaningful: draw another
            continue
        got += 1
        yield blocks[-1], (set(blocks[-2].out_keys) if len(blocks) > 1 else None)


def _writes(block) -> dict[str, str]:
    return {op.path: op.text for op in block.fixtures if op.op == "write"}


def _scoped(keys, in_keys) -> list[str]:
    return sorted({k for k in keys if in_keys is None or k in in_keys})


# ---- models of each mistake, over the fixture data --------------------------------------------------------------

_GREP = {  # scenario -> (its file, or None for the bundle's header lines; the exact ERE for group g; key of a line)
    "access_log": (lambda g: rf'" {g} [0-9]+$', lambda ln: ln.split(" ")[2]),
    "markdown_table": (lambda g: rf"^\| [a-z0-9]+ \| {g} \|", lambda ln: ln.split("|")[1].strip()),
    "cert_bundle": (lambda g: rf"^# [a-z0-9]+\.example\.internal team={g} ", lambda ln: ln.split(" ")[1].split(".")[0]),
}


def regex_filter(block, in_keys, wrong: bool) -> str:
    g = re.search(r"-w '([^']+)'", block.wrong_sh).group(1)
    exact, key = _GREP[block.scenario]
    if block.scenario == "cert_bundle":  # the headers; a PEM body line can only add more matches to the loose grep
        lines = [op.header.rstrip("\n") for op in block.fixtures if op.op == "cert"]
    else:
        lines = next(iter(_writes(block).values())).splitlines()
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(g)}(?![A-Za-z0-9_])" if wrong else exact(g))
    return "".join(k + "\n" for k in _scoped([key(ln) for ln in lines if pattern.search(ln)], in_keys))


def openssl_inspect(block, in_keys, wrong: bool) -> str:
    ref = re.search(r"before (\d{4}-\d\d-\d\d)", block.instruction).group(1)
    rows = set()
    for op in block.fixtures:
        if op.op == "cert":
            end = f"{op.not_after[:4]}-{op.not_after[4:6]}-{op.not_after[6:8]}"
            if (end <= ref if wrong else end < ref) and (in_keys is None or op.cn.split(".")[0] in in_keys):
                rows.add(f"{op.cn.split('.')[0]}\t{end}")
    return "".join(r + "\n" for r in sorted(rows))


def checksum_verify(block, in_keys, wrong: bool) -> str:
    files = _writes(block)
    manifest = next(p for p in files if p.endswith("/SHA256SUMS"))
    root = manifest.rsplit("/", 1)[0]
    out = []
    for line in files[manifest].splitlines():
        digest, rel = line.split("  ", 1)
        text = files.get(f"{root}/{rel}")
        if text is None:
            status = "FAILED open or read"  # what `sha256sum -c` prints for a listed file that is missing
        else:
            status = "OK" if hashlib.sha256(text.encode()).hexdigest() == digest else "FAILED"
        if status == "FAILED" or (wrong and status != "OK"):
            out.append(rel.rsplit("/", 1)[-1].removesuffix(".conf"))
    return "".join(k + "\n" for k in _scoped(out, in_keys))


def tar_gzip(block, in_keys, wrong: bool) -> str:
    members = [m.name for op in block.fixtures if op.op == "tar" and "/backup/" in op.path for m in op.members]
    if wrong:  # tar -xzf … --wildcards "*$k*" per input name: GNU tar's member wildcards match "/" too
        got = [m for m in members if any(fnmatch.fnmatchcase(m, f"*{k}*") for k in in_keys)]
    else:
        got = [m for m in members if re.search(rf"/({'|'.join(map(re.escape, in_keys))})\.dat$", m)]
    return "".join(k + "\n" for k in sorted({m.rsplit("/", 1)[-1].removesuffix(".dat") for m in got}))


def _make_entries(text: str) -> list[str]:
    """What the Makefile's awk program emits: `target STACK_KB` per rule, in file order."""
    stack = dict(re.findall(r"^([a-z0-9]+): STACK_KB = (\S+)$", text, re.M))
    return [f"{k} {stack.get(k, '')}" for k in re.findall(r"^([a-z0-9]+): [a-z0-9]+\.o", text, re.M)]


def _added(a: list[str], b: list[str]) -> list[str]:
    """The lines of b a minimal diff reports as added (`> `): b's lines outside one longest common subsequence.
    Which LCS does not matter here: b is a's order reversed, so any LCS keeps at most one unchanged entry."""
    n, m = len(a), len(b)
    t = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            t[i][j] = t[i + 1][j + 1] + 1 if a[i] == b[j] else max(t[i + 1][j], t[i][j + 1])
    i = j = 0
    kept = set()
    while i < n and j < m:
        if a[i] == b[j]:
            kept.add(j)
            i, j = i + 1, j + 1
        elif t[i + 1][j] >= t[i][j + 1]:
            i += 1
        else:
            j += 1
    return [line for k, line in enumerate(b) if k not in kept]


def diff_compare(block, in_keys, wrong: bool) -> str:
    files = _writes(block)
    old, new = (_make_entries(files[p]) for p in sorted(files, key=lambda p: p != "/app/src/Makefile"))
    added = _added(old, new) if wrong else sorted(set(new) - set(old))
    return "".join(k + "\n" for k in _scoped([line.split(" ")[0] for line in added], in_keys))


MODELS = {"regex_filter": regex_filter, "openssl_inspect": openssl_inspect, "checksum_verify": checksum_verify,
          "tar_gzip": tar_gzip, "diff_compare": diff_compare}


@pytest.mark.parametrize(("scenario", "skill"), STUDY_BLOCKS, ids=[f"{a}/{b}" for a, b in STUDY_BLOCKS])
def test_the_wrong_variant_changes_the_checked_output(scenario, skill):
    model = MODELS[skill]
    claimed = 0
    for block, in_keys in _draws(scenario, skill):
        assert model(block, in_keys, wrong=False) == block.output, "the model reads the fixtures as the reference does"
        if block.wrong_differs:
            claimed += 1
            assert model(block, in_keys, wrong=True) != block.output, (
                f"{scenario}/{skill} claims its mistake changes the output, but on these fixtures it does not:\n"
                f"{block.wrong_sh}")
        else:  # the skill says so itself: a chain never keeps such a step (below)
            assert block in harmless_steps([block])
    assert claimed >= DRAWS // 2  # most draws trap the mistake; the rest are redrawn at the chain level


def test_seeds_and_evolution_keep_no_step_whose_mistake_is_harmless():
    for length in (2, 3, 4):
        for seed in range(15):
            assert harmless_steps(build_blocks(random_chain(None, length, seed))) == []
    from envevo.evolve.engines.procedural import mutate
    from envevo.trace import Direction, Effort

    chain = random_chain(None, 2, 7)
    for i in range(6):
        new = mutate(chain, Direction.LENGTH, Effort.HIGH, random.Random(i))
        if new is not None:
            assert harmless_steps(build_blocks(new)) == [], new.pairs()


def test_the_quality_check_names_a_step_whose_mistake_is_harmless():
    block, chain = None, None
    for sc, sk in STUDY_BLOCKS:
        rng = random.Random(f"harmless|{sc}")
        for _ in range(300):
            preds = [(a, b) for a in SCENARIOS for b in SKILLS if a != sc and compatible(a, b)
                     and SKILLS[b].out in SKILLS[sk].accepts and SKILLS[b].out is not Kind.NUMBER]
            a, b = rng.choice(preds)
            base = random_chain(None, 1, 0)
            candidate = Chain(goal=base.goal, category=base.category, seed=rng.randrange(1 << 30),
                              steps=(ChainStep(scenario=a, skill=b, seed=rng.randrange(1 << 30)),
                                     ChainStep(scenario=sc, skill=sk, seed=rng.randrange(1 << 30))))
            try:
                found = harmless_steps(build_blocks(candidate))
            except Exception:  # noqa: BLE001
                continue
            if found:
                block, chain = found[0], candidate
                break
        if block is not None:
            break
    assert block is not None, "some draw of these blocks is harmless (tiny inputs), so the chain-level redraw matters"
    problems = quality_check(compose(chain))
    assert any(p.startswith(f"step {block.index + 1} ({block.scenario}/{block.skill}): its wrong variant") for p in problems)


def test_every_wrong_mode_reaches_a_separate_verifier_unchanged():
    # Harbor uploads artifacts into a separate verifier through tarfile's data filter; a mode it rewrites would fail
    # the reference solution's own mode check there (0o666 and 0o444 both arrived as 0o644).
    import tarfile

    from envevo.catalog.scenarios.tree import WRONG_MODES

    for mode in (*WRONG_MODES, 0o644):
        member = tarfile.TarInfo("app/reports/junit/TEST-x.xml")
        member.mode = mode
        assert tarfile.data_filter(member, "/tmp").mode == mode, oct(mode)
