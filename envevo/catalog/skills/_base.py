"""The Skill base: what the agent applies. A skill turns (scenario, step I/O, seed) into a Block.

Generation retries with the same random stream until the block is meaningful: non-empty output,
a filter that actually filters, and (while `strict`) a wrong variant that really gives a different
answer. The stream is the step's own, so the result is deterministic.
"""

from __future__ import annotations

import copy
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, PrivateAttr

from envevo.catalog import _fixtures as F
from envevo.catalog._kinds import (
    Kind,
    describe_input,
    keys_of,
    keys_prelude,
    output_check,
    render_output,
)
from envevo.catalog._rows import Inst, Row, fresh_keys
from envevo.catalog.scenarios._base import CAPABILITIES, Scenario

# Each skill's facts (title, weight, requires, accepts, out, tools), by id; the classes hold the generators.
FACTS: dict[str, dict] = tomllib.loads(Path(__file__).parent.with_name("skills.toml").read_text(encoding="utf-8"))
_FACT_TYPES = {"requires": frozenset, "accepts": lambda v: frozenset(map(Kind, v)), "out": Kind, "tools": tuple}


class Retry(Exception):
    """This draw does not make a meaningful block; draw again."""


class Block(BaseModel):
    """One generated (scenario, skill) step: fixtures, prose, reference and wrong shell, expected output, checks."""

    index: int
    scenario: str
    skill: str
    in_kind: Kind
    out_kind: Kind
    in_path: str | None
    out_path: str
    fixtures: list[F.Op]
    instruction: str
    oracle_sh: str
    wrong_sh: str
    output: str = Field(description="exact content of out_path")
    out_keys: list[str]
    checks: list[dict[str, Any]]
    produces: list[str] = Field(description="every path the agent must create or change")
    wrong_differs: bool = Field(description="whether generation made sure the wrong variant gives another answer")
    _inst: Inst | None = PrivateAttr(default=None)  # the scenario instance the fixtures render (pins reuse it)


@dataclass(frozen=True)
class StepIO:
    index: int
    in_kind: Kind
    in_path: str | None
    in_keys: tuple[str, ...] | None
    out_kind: Kind
    out_path: str
    keys: str  # where the oracle materializes the input names

    @property
    def first(self) -> bool:
        return self.in_keys is None

    def in_scope(self, key: str) -> bool:
        return self.in_keys is None or key in self.in_keys


@dataclass
class Draft:
    inst: Inst
    value: Any  # the output, in the form render_output takes
    oracle: str
    wrong: str
    requirement: str
    wrong_differs: bool = True
    extra_ops: list[F.Op] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    produces: list[str] = field(default_factory=list)
    drop: set[str] = field(default_factory=set)  # fixture paths the skill removes (a file a manifest still lists)
    replace: dict[str, str] = field(default_factory=dict)  # fixture path -> the text actually written (tampering)


AWK_KEYS = 'BEGIN { if (keys != "") while ((getline line < keys) > 0) want[line] = 1 }'
AWK_IN = '(keys == "" || (k in want))'


class Skill:
    id: ClassVar[str]
    title: ClassVar[str]
    requires: ClassVar[frozenset[str]]
    accepts: ClassVar[frozenset[Kind]] = frozenset({Kind.NONE, Kind.KEYS, Kind.TABLE, Kind.RECORDS})
    out: ClassVar[Kind]
    tools: ClassVar[tuple[str, ...]] = ("coreutils",)  # Debian packages the oracle uses
    weight: ClassVar[float] = 3.0

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "id" in cls.__dict__:  # a concrete skill: the catalog's come with a table in skills.toml
            for name, value in FACTS.get(cls.id, {}).items():
                setattr(cls, name, _FACT_TYPES.get(name, lambda v: v)(value))
        unknown = getattr(cls, "requires", frozenset()) - CAPABILITIES
        if unknown:
            raise TypeError(f"{cls.__name__} requires capabilities no scenario can offer: {sorted(unknown)}")

    def fits(self, sc: Scenario) -> bool:
        return self.requires <= sc.caps

    def build(self, sc: Scenario, io: StepIO, rng: random.Random) -> Block:
        for attempt in range(120):
            try:
                draft = self.attempt(sc, io, rng, strict=attempt < 80)
            except Retry:
                continue
            return self._finish(sc, io, draft)
        raise RuntimeError(f"cannot generate a meaningful {self.id} block on {sc.id} with input {io.in_keys}")

    def build_on(self, sc: Scenario, io: StepIO, rng: random.Random, origin: Block) -> Block:
        """A block asking its own question of `origin`'s fixtures, which it keeps byte for byte.

        Only strict draws count (a pinned block is as demanding as a fresh one), and a draw that would need other
        fixtures (its own traps, a manifest, a tampered file) is discarded. RuntimeError when none fits: the
        caller then draws the step afresh.
        """
        if origin._inst is None:
            raise RuntimeError(f"block {origin.index + 1} carries no scenario instance to build on")
        pinned = _Pinned(sc, origin._inst)
        for _ in range(PINNED_ATTEMPTS):
            try:
                draft = self.attempt(pinned, io, rng, strict=True)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - Retry, or a lookup of an input name the kept fixtures do not hold
                continue  # (skills assume their own draw holds every input name); the caller falls back to a fresh one
            block = self._finish(sc, io, draft)
            if block.fixtures == origin.fixtures:
                return block
        raise RuntimeError(f"{self.id} on {sc.id} asks nothing meaningful of the kept fixtures with input {io.in_keys}")

    def attempt(self, sc: Scenario, io: StepIO, rng: random.Random, strict: bool) -> Draft:
        raise NotImplementedError

    def _finish(self, sc: Scenario, io: StepIO, d: Draft) -> Block:
        out_keys = keys_of(self.out, d.value) if self.out is not Kind.NUMBER else []
        pre = [f"mkdir -p {io.out_path.rsplit('/', 1)[0]}"]
        if not io.first:
            pre.append(keys_prelude(io.in_kind, io.in_path, io.keys))
        block = Block(
            index=io.index, scenario=sc.id, skill=self.id, in_kind=io.in_kind, out_kind=self.out, in_path=io.in_path,
            out_path=io.out_path, fixtures=_adjust(sc.render(d.inst), d) + d.extra_ops, instruction=d.requirement,
            oracle_sh="\n".join(pre + [d.oracle.strip()]), wrong_sh="\n".join(pre + [d.wrong.strip()]),
            output=render_output(self.out, d.value), out_keys=out_keys,
            checks=d.checks + [output_check(self.out, io.out_path, d.value)],
            produces=d.produces + [io.out_path], wrong_differs=d.wrong_differs,
        )
        block._inst = d.inst
        return block


# Strict draws tried on kept fixtures before the step is drawn afresh.
PINNED_ATTEMPTS = 60


class _Pinned:
    """A scenario whose `make` hands out copies of one kept instance. It still runs the real draw first, so the
    random stream advances as in a fresh build: with unchanged inputs, a pinned step asks the same question."""

    def __init__(self, sc: Scenario, inst: Inst):
        self._sc, self._inst = sc, inst

    def make(self, rng: random.Random, *args: Any, **kw: Any) -> Inst:
        self._sc.make(rng, *args, **kw)
        return copy.deepcopy(self._inst)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sc, name)


def _adjust(ops: list[F.Op], d: Draft) -> list[F.Op]:
    """The scenario's fixtures as this skill leaves them: files it drops are not written, tampered ones changed."""
    out: list[F.Op] = []
    for op in ops:
        if isinstance(op, F.WriteOp) and op.path in d.drop:
            continue
        if isinstance(op, F.WriteOp) and op.path in d.replace:
            op = op.model_copy(update={"text": d.replace[op.path]})
        out.append(op)
    return out


# ---- helpers shared by skills -------------------------------------------------------------------------

def population(io: StepIO, rng: random.Random, *, extra: tuple[int, int] = (3, 5), first: tuple[int, int] = (9, 13),
               traps: list[str] | None = None) -> list[str]:
    """The keys a step's scenario holds: the input names plus distractors (and traps for wrong variants)."""
    if io.first:
        return fresh_keys(rng, rng.randint(*first), set(traps or ()))
    keys = list(io.in_keys or ())
    keys += fresh_keys(rng, rng.randint(*extra), set(keys) | set(traps or ()))
    return keys + list(traps or ())


def scoped(inst: Inst, io: StepIO) -> list[Row]:
    return [r for r in inst.rows if io.in_scope(r.key)]


def floor(io: StepIO) -> int:
    """How many names a step should pass on: most of its input, so long chains do not run dry."""
    if io.first:
        return 4
    n = len(io.in_keys or ())
    return max(min(2, n), n - max(1, n // 3))


def enough(n_out: int, io: StepIO, strict: bool) -> bool:
    return n_out >= 1 and (not strict or n_out >= floor(io))


def can_drop(io: StepIO) -> bool:
    """Whether a filter may be asked to drop a name (tiny inputs are kept whole)."""
    return io.first or len(io.in_keys or ()) >= 3


def soft(cond: bool, strict: bool) -> None:
    """A preference: enforced while drawing strictly, given up when no strict draw can be found."""
    if strict and not cond:
        raise Retry


def need(cond: bool) -> None:
    if not cond:
        raise Retry


def plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def scope_phrase(sc: Scenario, io: StepIO) -> str:
    if io.first:
        return ""
    return f" Only consider the {plural(sc.entity)} among {describe_input(io.in_kind, io.in_path)}."


def keys_line(what: str, out: str) -> str:
    return f"Write {what} to `{out}`, one per line, sorted in byte order (`LC_ALL=C sort`), without duplicates."


def table_line(out: str, left: str, right: str, order: str = "sorted by the first column in byte order") -> str:
    return f"Write `{out}` as tab-separated lines `<{left}><TAB><{right}>`, {order}."


def records_line(out: str, value: str) -> str:
    return (f'Write `{out}` as JSON lines: one object `{{"key": <name>, "value": <{value}>}}` per line, ordered by key '
            "(byte order), with the value as a JSON number.")


TAB = "$'\\t'"  # a tab character as a bash argument (sort -t, join -t)


def restrict_grep(io: StepIO) -> str:
    return "" if io.first else f" | grep -Fx -f {io.keys}"


def restrict_join(io: StepIO) -> str:
    """Keep only the tab-separated lines whose first field is one of the previous step's keys (input sorted)."""
    return "" if io.first else f" | join -t{TAB} {io.keys} -"


def awk_var(io: StepIO) -> str:
    return "" if io.first else f"-v keys={io.keys}"


def choose_group(sc: Scenario, rng: random.Random) -> str:
    return rng.choice(sc.groups)


def bias_for(io: StepIO, group: str, p: float = 0.8):
    return None if io.first else (group, set(io.in_keys or ()), p)


def grouped_instance(sc: Scenario, io: StepIO, rng: random.Random, per_key: tuple[int, int] | None = None) -> tuple[str, Inst]:
    """A group to ask about, and an instance whose input names mostly land in it (so chains do not run dry)."""
    g = choose_group(sc, rng)
    return g, sc.make(rng, population(io, rng), bias_for(io, g), per_key=per_key)


def group_totals(rows: list[Row], g: str) -> dict[str, int]:
    """Per name, the sum of the values of its rows in group g."""
    tot: dict[str, int] = {}
    for r in rows:
        if r.group == g:
            tot[r.key] = tot.get(r.key, 0) + r.value
    return tot


def group_best(rows: list[Row], g: str) -> dict[str, int]:
    """Per name, the largest value among its rows in group g."""
    best: dict[str, int] = {}
    for r in rows:
        if r.group == g:
            best[r.key] = max(best.get(r.key, r.value), r.value)
    return best


def grouped_draw(sc: Scenario, io: StepIO, rng: random.Random, strict: bool, per_name=group_totals):
    """A group, an instance, and per in-scope name its rows in that group reduced by `per_name` (enough names)."""
    g, inst = grouped_instance(sc, io, rng)
    values = per_name(scoped(inst, io), g)
    need(enough(len(values), io, strict))
    return g, inst, values
