"""The Scenario base: where the agent works. Subclasses render rows into real fixtures and offer recipes."""

from __future__ import annotations

import base64
import random
from typing import ClassVar

from envevo.evolve.engines.procedural import _recipes as R
from envevo.evolve.engines.procedural._fixtures import Op
from envevo.evolve.engines.procedural._rows import Inst, make_rows


class Scenario:
    """One kind of place. `caps` name the recipes it offers; a skill fits when it needs only those."""

    id: ClassVar[str]
    title: ClassVar[str]  # "a CSV export of customer orders"
    where: ClassVar[str]  # a sentence naming the paths and, briefly, the format
    entity: ClassVar[str] = "entry"  # what one key names: "customer", "host"
    group_label: ClassVar[str] = "group"
    value_label: ClassVar[str] = "value"
    row_label: ClassVar[str] = "row"
    date_label: ClassVar[str] = "date"
    groups: ClassVar[tuple[str, ...]]
    value_range: ClassVar[tuple[int, int]] = (1, 999)
    per_key: ClassVar[tuple[int, int]] = (1, 1)
    entity_group: ClassVar[bool] = True  # False: each row has its own group (log levels)
    caps: ClassVar[frozenset[str]]
    weight: ClassVar[float] = 3.0  # prior commonness; higher = more familiar
    paths: ClassVar[tuple[str, ...]] = ()  # top-level paths it writes (chains keep these disjoint)

    # ---- data --------------------------------------------------------------------------------
    def make(self, rng: random.Random, keys: list[str], bias=None, per_key: tuple[int, int] | None = None) -> Inst:
        rows = make_rows(
            rng, keys, self.groups, self.value_range, per_key=per_key or self.per_key,
            entity_group=self.entity_group, bias=bias,
        )
        inst = Inst(rows)
        self.decorate(rng, inst)
        return inst

    def decorate(self, rng: random.Random, inst: Inst) -> None:
        """Scenario-specific extras (times, modes, tokens, ...); called after rows exist."""

    def note_with(self, word: str) -> str:
        """A free-text note mentioning `word` where a loose grep would see it."""
        return f"see {word} notes"

    def render(self, inst: Inst) -> list[Op]:
        raise NotImplementedError

    def texts(self, inst: Inst) -> dict[str, str]:
        """Editable text files (path -> content) as rendered from the rows; sed and patch check these."""
        raise NotImplementedError

    # ---- recipes (only those named in caps are implemented) -----------------------------------
    def awk(self, inst: Inst, path: str | None = None) -> R.AwkSrc: raise NotImplementedError
    def grep(self, inst: Inst) -> R.GrepSrc: raise NotImplementedError
    def cut(self, inst: Inst) -> R.CutSrc: raise NotImplementedError
    def py(self, inst: Inst) -> R.PySrc: raise NotImplementedError
    def jq(self, inst: Inst) -> R.JqSrc: raise NotImplementedError
    def sql(self, inst: Inst) -> R.SqlSrc: raise NotImplementedError
    def sqljoin(self, inst: Inst) -> R.SqlJoinSrc: raise NotImplementedError
    def sed(self, inst: Inst) -> R.SedSrc: raise NotImplementedError
    def text(self, inst: Inst) -> R.TextSrc: raise NotImplementedError
    def files(self, inst: Inst) -> R.FilesSrc: raise NotImplementedError
    def perm(self, inst: Inst) -> R.PermSrc: raise NotImplementedError
    def archive(self, inst: Inst) -> R.ArchiveSrc: raise NotImplementedError
    def git(self, inst: Inst) -> R.GitSrc: raise NotImplementedError
    def pem(self, inst: Inst) -> R.PemSrc: raise NotImplementedError
    def b64(self, inst: Inst) -> R.B64Src: raise NotImplementedError
    def xml(self, inst: Inst) -> R.XmlSrc: raise NotImplementedError


# ---- helpers shared by scenarios ----------------------------------------------------------------

_WORDS = (
    "cache", "queue", "backlog", "shard", "replica", "quota", "rollout", "canary", "payload", "session",
    "report", "upload", "ledger", "batch", "export", "import", "sync", "digest", "audit", "rotation",
)


def phrase(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def make_token(rng: random.Random, key: str, urlsafe: bool) -> tuple[str, str]:
    """(secret, encoding). URL-safe tokens have no padding and contain '-' or '_' (plain base64 -d fails)."""
    alphabet = "abcdefghijkmnopqrstuvwxyz23456789?>~"
    while True:
        secret = f"{key}:" + "".join(rng.choice(alphabet) for _ in range(rng.randint(7, 13)))
        std = base64.b64encode(secret.encode()).decode()
        if not urlsafe:
            if "+" not in std and "/" not in std:  # plain ones stay plain in both alphabets
                return secret, std
            continue
        url = base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")
        if ("-" in url or "_" in url) and len(url) % 4:
            return secret, url


def add_tokens(rng: random.Random, inst: Inst, share: float = 0.4) -> None:
    for r in inst.rows:
        secret, token = make_token(rng, r.key, rng.random() < share)
        r.extra["secret"], r.extra["token"] = secret, token
