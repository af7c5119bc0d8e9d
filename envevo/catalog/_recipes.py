"""Recipes: how a tool reaches a scenario's rows. Scenarios provide them; skills build on them.

A skill (say awk aggregation) is written once against a recipe (AwkSrc), and every scenario that
offers that recipe is compatible with the skill. This is what keeps the catalog's compatibility
graph rich without writing one generator per (scenario, skill) pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AwkSrc:
    """awk reads the scenario; `prog` calls emit(k, g, v, d) once per row (d is YYYY-MM-DD or "")."""

    prog: str
    files: str = ""
    fs: str = ""
    stream: str = ""

    def cmd(self, head: str, tail: str, var: str = "") -> str:
        pre = f"{self.stream} | " if self.stream else ""
        opts = " ".join(x for x in (self.fs, var) if x)
        files = f" {self.files}" if self.files else ""
        return f"{pre}awk {opts} '\n{head.strip()}\n{self.prog.strip()}\n{tail.strip()}\n'{files}".replace("awk  '", "awk '")


@dataclass(frozen=True)
class GrepSrc:
    """grep selects the rows (or files) of one group; `extract` turns a match into its key."""

    regex: Callable[[str], str]  # ERE matching exactly the rows of group g
    wrong: Callable[[str], str]  # the tempting loose pattern (grep arguments)
    extract: str
    files: str = ""
    stream: str = ""
    list_files: bool = False

    def cmd(self, group: str, wrong: bool = False) -> str:
        pre = f"{self.stream} | " if self.stream else ""
        flag = "-l" if self.list_files else ""
        pattern = self.wrong(group) if wrong else f"-E '{self.regex(group)}'"
        files = f" {self.files}" if self.files else ""
        return f"{pre}grep {flag} {pattern}{files} | {self.extract}".replace("grep  ", "grep ")


@dataclass(frozen=True)
class CutSrc:
    stream: str  # data lines only
    key: str  # pipeline stage printing the key column
    group: str  # pipeline stage printing the group column
    wrong_group: str  # the neighbouring column (an off-by-one field number)


@dataclass(frozen=True)
class JqSrc:
    source: str  # shell printing one compact JSON object {key, group, value, date} per row


@dataclass(frozen=True)
class SqlSrc:
    db: str
    rows_sql: str  # SELECT ... AS key, ... AS grp, ... AS value, ... AS date
    pre: tuple[str, ...] = ()  # sqlite3 -cmd arguments (e.g. importing a CSV)

    def cmd(self, sql: str) -> str:
        pre = "".join(f" -cmd '{c}'" for c in self.pre)
        return f'sqlite3 -batch -tabs {self.db}{pre} "{sql}"'


@dataclass(frozen=True)
class SqlJoinSrc:
    db: str
    ent: str  # entity table
    ent_key: str
    ent_group: str
    fact: str
    fact_fk: str
    fact_value: str
    fact_label: str  # "stock rows", "samples", ...


@dataclass(frozen=True)
class SedSrc:
    path: str
    edit: Callable[[str, str], str]  # sed -E expression setting key k's group to v
    wrong: Callable[[str, str], str]  # the same with the classic anchoring mistake
    exists: Callable[[str], str]  # ERE (grep -E) matching the line that names key k
    trap: Callable[[str], str] | None  # a neighbour key the wrong expression also hits
    new_groups: tuple[str, ...]
    prelude: str = ""  # shell run per key before sed (e.g. computing the upper-case name)


@dataclass(frozen=True)
class TextSrc:
    """A single text file the scenario can re-render from rows (diff and patch work on it)."""

    path: str
    dist: str  # where the packaged new version goes (diff)
    label: str


@dataclass(frozen=True)
class FilesSrc:
    """One deterministic file per key under `root`."""

    root: str
    glob: str  # -name pattern of the entity files
    key_sed: str  # sed expression mapping a path relative to root to its key
    files: dict[str, str] = field(default_factory=dict)  # key -> relpath
    texts: dict[str, str] = field(default_factory=dict)  # key -> content


@dataclass(frozen=True)
class PermSrc:
    root: str
    glob: str
    mode: int  # the mode policy requires
    key_sed: str
    files: dict[str, str] = field(default_factory=dict)  # key -> relpath
    modes: dict[str, int] = field(default_factory=dict)  # key -> current mode
    what: str = "file"


@dataclass(frozen=True)
class ArchiveSrc:
    path: str
    key_re: Callable[[str], str]  # ERE matching the member names of the keys in an alternation "a|b"
    key_sed: str  # sed expression mapping a member name to its key
    members: dict[str, str] = field(default_factory=dict)  # key -> member name
    texts: dict[str, str] = field(default_factory=dict)  # key -> member content


@dataclass(frozen=True)
class GitSrc:
    repo: str
    dir: str
    ext: str
    value_sed: str  # sed -n expression printing the value of a file
    value_label: str


@dataclass(frozen=True)
class PemSrc:
    """Certificates: either one file per cert (`glob`) or a concatenated bundle (`bundle`)."""

    glob: str = ""
    bundle: str = ""


@dataclass(frozen=True)
class B64Src:
    stream: str  # shell printing key<TAB>encoded lines


@dataclass(frozen=True)
class XmlSrc:
    """Python (ElementTree) that yields rows; `wrong` only looks at direct children."""

    code: str
    wrong: str
    wrong_sim: Callable[[list], list] | None = None  # what the wrong code reads, as (key, group, value) tuples


@dataclass(frozen=True)
class PySrc:
    code: str  # defines rows() yielding (key, group, value, date)
