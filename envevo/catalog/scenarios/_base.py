"""The Scenario base: where the agent works. Subclasses render rows into real fixtures and offer recipes.

A scenario's capabilities are derived from what it implements: every recipe method it overrides (awk, grep,
sql, ...), plus the shape of its rows (`multi`: a name has several rows; `unique`: one row per name; `dates`:
it names a date field). A skill fits a scenario when it needs only those.
"""

from __future__ import annotations

import base64
import random
import tomllib
from pathlib import Path
from typing import ClassVar

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog._rows import Inst, make_rows

# The recipe methods: how a tool reaches a scenario's rows (see _recipes.py).
RECIPES = ("awk", "grep", "cut", "py", "jq", "sql", "sqljoin", "sed", "text", "files", "perm", "archive", "git", "pem",
           "b64", "xml")
ROW_SHAPES = ("multi", "unique", "dates")
CAPABILITIES = frozenset(RECIPES + ROW_SHAPES)

# Each scenario's facts (title, prose, labels, groups, weight, paths, ...), by id; the classes hold the behaviour.
FACTS: dict[str, dict] = tomllib.loads(Path(__file__).parent.with_name("scenarios.toml").read_text(encoding="utf-8"))


class NoRecipe(NotImplementedError):
    """A skill asked a scenario for a recipe it does not offer (the compatibility graph rules this out)."""


class Scenario:
    """One kind of place; `caps` is derived when the subclass is defined."""

    id: ClassVar[str]
    title: ClassVar[str]  # "a CSV export of customer orders"
    where: ClassVar[str]  # a sentence naming the paths and, briefly, the format
    entity: ClassVar[str] = "entry"  # what one key names: "customer", "host"
    group_label: ClassVar[str] = "group"
    value_label: ClassVar[str] = "value"
    row_label: ClassVar[str] = "row"
    date_label: ClassVar[str] = "date"  # a scenario that names its date field offers `dates`
    groups: ClassVar[tuple[str, ...]]
    value_range: ClassVar[tuple[int, int]] = (1, 999)
    per_key: ClassVar[tuple[int, int]] = (1, 1)
    entity_group: ClassVar[bool] = True  # False: each row has its own group (log levels)
    weight: ClassVar[float] = 3.0  # prior commonness; higher = more familiar
    paths: ClassVar[tuple[str, ...]] = ()  # top-level paths it writes (chains keep these disjoint)
    caps: ClassVar[frozenset[str]] = frozenset()
    recipes: ClassVar[dict[str, dict]] = {}  # recipe -> its declared fields (scenarios.toml)
    NOTE: ClassVar[str]  # optional: the note_with text, with {word}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "id" in cls.__dict__:  # a concrete scenario: the catalog's come with a table in scenarios.toml
            declared = {}
            for name, value in FACTS.get(cls.id, {}).items():
                if name in RECIPES:
                    declared[name] = {k: _tuples(v) for k, v in value.items()}
                else:
                    setattr(cls, name, _tuples(value))
            cls.recipes = {**cls.recipes, **declared}
            missing = [n for n in ("title", "where", "groups") if not hasattr(cls, n)]
            if missing:
                raise TypeError(f"scenario {cls.id!r} declares no {', '.join(missing)} (nor a table in scenarios.toml)")
        cls.caps = capabilities(cls)

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
        return self.NOTE.format(word=word) if hasattr(self, "NOTE") else f"see {word} notes"

    def texts(self, inst: Inst) -> dict[str, str]:
        """Editable text files (path -> content) as rendered from the rows; sed and patch check these."""
        raise NoRecipe(f"{self.id} has no editable text files")

    def render(self, inst: Inst) -> list[F.Op]:
        """The fixture operations that build this instance; by default, its text files."""
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    # ---- recipes: a scenario declares them in scenarios.toml ([id.awk], ...) or overrides the method ----------
    def _declared(self, recipe: str) -> dict:
        spec = type(self).recipes.get(recipe)
        if spec is None:
            raise NoRecipe(f"{self.id} offers no {recipe} recipe")
        return spec

    def cut(self, inst: Inst) -> R.CutSrc: return R.CutSrc(**self._declared("cut"))
    def py(self, inst: Inst) -> R.PySrc: return R.PySrc(**self._declared("py"))
    def jq(self, inst: Inst) -> R.JqSrc: return R.JqSrc(**self._declared("jq"))
    def b64(self, inst: Inst) -> R.B64Src: return R.B64Src(**self._declared("b64"))

    def awk(self, inst: Inst, path: str | None = None) -> R.AwkSrc:
        spec = self._declared("awk")
        return R.AwkSrc(**{**spec, "files": path or spec.get("files", "")})  # diff reads another version at `path`

    def pem(self, inst: Inst) -> R.PemSrc: return R.PemSrc(**self._declared("pem"))
    def sql(self, inst: Inst) -> R.SqlSrc: return R.SqlSrc(**self._declared("sql"))
    def sqljoin(self, inst: Inst) -> R.SqlJoinSrc: return R.SqlJoinSrc(**self._declared("sqljoin"))
    def text(self, inst: Inst) -> R.TextSrc: return R.TextSrc(**self._declared("text"))

    def grep(self, inst: Inst) -> R.GrepSrc:
        spec = self._declared("grep")
        return R.GrepSrc(**{**spec, "regex": _fill(spec["regex"], "g"), "wrong": _fill(spec["wrong"], "g")})

    def files(self, inst: Inst) -> R.FilesSrc: return R.FilesSrc(**self._declared("files"))
    def perm(self, inst: Inst) -> R.PermSrc: return R.PermSrc(**self._declared("perm"))
    def archive(self, inst: Inst) -> R.ArchiveSrc: return R.ArchiveSrc(**self._declared("archive"))
    def git(self, inst: Inst) -> R.GitSrc: return R.GitSrc(**self._declared("git"))
    def xml(self, inst: Inst) -> R.XmlSrc: return R.XmlSrc(**self._declared("xml"))

    def sed(self, inst: Inst | None) -> R.SedSrc:
        spec = self._declared("sed")
        return R.SedSrc(**{**spec, "edit": _fill(spec["edit"], "k", "v"), "wrong": _fill(spec["wrong"], "k", "v"),
                           "exists": _fill(spec["exists"], "k"), "trap": _fill(spec["trap"], "k") if "trap" in spec else None})


def _fill(template: str, *names: str):
    """A declared pattern as the function a recipe takes: `{g}` (or `{k}`, `{v}`) filled in."""
    return lambda *values: template.format(**dict(zip(names, values, strict=False)))


def capabilities(cls: type[Scenario]) -> frozenset[str]:
    """What a scenario class offers: the recipes it overrides or declares, and the shape of its rows."""
    offered = {name for name in RECIPES if getattr(cls, name) is not getattr(Scenario, name) or name in cls.recipes}
    offered.add("multi" if cls.per_key[1] > 1 else "unique")
    if cls.date_label != Scenario.date_label:
        offered.add("dates")
    return frozenset(offered)


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class TextFileScenario(Scenario):
    """A scenario kept in one text file at PATH; `text` offers a packaged new version next to it."""

    PATH: ClassVar[str]
    TEXT_LABEL: ClassVar[str]  # what the file is, for diff and patch ("crontab")

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist=f"{self.PATH}.new", label=self.TEXT_LABEL)


class XmlRows:
    """A mixin for XML scenarios: the Python reader is the ElementTree code of their `xml` recipe."""

    def py(self, inst):
        return R.PySrc(self.xml(inst).code)


def element_tree_reader(head: str, tag: str, body: str, indent: str) -> R.XmlSrc:
    """ElementTree code reading every `tag` element; the wrong variant only sees direct children (nested ones hide)."""
    return R.XmlSrc(code=f"{head}{indent}for s in root.iter('{tag}'):\n{body}",
                    wrong=f"{head}{indent}for s in root.findall('{tag}'):\n{body}",
                    wrong_sim=lambda rows: [(r.key, r.group, r.value) for r in rows if not r.extra.get("nested")])


# ---- helpers shared by scenarios ----------------------------------------------------------------

_WORDS = (
    "cache", "queue", "backlog", "shard", "replica", "quota", "rollout", "canary", "payload", "session",
    "report", "upload", "ledger", "batch", "export", "import", "sync", "digest", "audit", "rotation",
)


def phrase(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def clock(rng: random.Random) -> str:
    """A random HH:MM:SS."""
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


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
