"""Fixture operations, and the python3 script that performs them inside the image build.

Fixtures are typed data (write a file, gzip, tar, SQLite, git history, a certificate) carried out by
`_fixture_runner.py`, a standalone stdlib-only script that the Dockerfile copies in, runs and deletes in one RUN.
Nothing of the task's data is built on the host, so no host tools (git, openssl) are needed and no task content
runs outside the sandbox. The runner ships as it is in this package, one copy per chain step, with its SPEC_LINE
replaced by that step's operations (`SPEC = [...]`), dumped as plain dicts in field order.
"""

from __future__ import annotations

import pprint
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

RUNNER_FILE = Path(__file__).with_name("_fixture_runner.py")
SPEC_LINE = "SPEC: list[dict] = []  # each task's copy has its fixture operations here\n"


class _Op(BaseModel):
    model_config = ConfigDict(frozen=True)

    def __getitem__(self, key: str):
        # Dict-style reads, as the ops were dicts before they were typed (rollout/_episode.py reads op["path"]).
        return getattr(self, key)

    def get(self, key: str, default=None):
        return getattr(self, key, default)


class WriteOp(_Op):
    op: Literal["write"] = "write"
    path: str
    text: str
    mode: int = 0o644


class GzipOp(_Op):
    op: Literal["gzip"] = "gzip"
    path: str
    text: str
    mode: int = 0o644


class TarMember(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    text: str


class TarOp(_Op):
    op: Literal["tar"] = "tar"
    path: str
    members: tuple[TarMember, ...]
    mtime: int = 1714521600


class SqliteOp(_Op):
    op: Literal["sqlite"] = "sqlite"
    path: str
    sql: str


class GitCommit(BaseModel):
    model_config = ConfigDict(frozen=True)

    files: dict[str, str]  # repo-relative path -> text
    message: str
    author: str  # "Name <mail>"
    date: str  # ISO-8601
    tag: str | None = None


class GitOp(_Op):
    op: Literal["git"] = "git"
    path: str
    commits: tuple[GitCommit, ...]


class CertOp(_Op):
    """A self-signed EC certificate with exact validity dates (YYYYMMDDHHMMSSZ)."""

    op: Literal["cert"] = "cert"
    cn: str
    org: str
    serial: int
    not_before: str = Field(description="start of validity, YYYYMMDDHHMMSSZ")
    not_after: str = Field(description="end of validity, YYYYMMDDHHMMSSZ")
    cert: str
    key: str | None = None
    header: str | None = None
    append: bool = False


class ChmodOp(_Op):
    op: Literal["chmod"] = "chmod"
    path: str
    mode: int


class MkdirOp(_Op):
    op: Literal["mkdir"] = "mkdir"
    path: str
    mode: int = 0o755


Op = Annotated[WriteOp | GzipOp | TarOp | SqliteOp | GitOp | CertOp | ChmodOp | MkdirOp, Field(discriminator="op")]


def write(path: str, text: str, mode: int = 0o644) -> WriteOp:
    return WriteOp(path=path, text=text, mode=mode)


def gzip_file(path: str, text: str, mode: int = 0o644) -> GzipOp:
    return GzipOp(path=path, text=text, mode=mode)


def tar_gz(path: str, members: list[tuple[str, str]], mtime: int = 1714521600) -> TarOp:
    return TarOp(path=path, members=tuple(TarMember(name=n, text=t) for n, t in members), mtime=mtime)


def sqlite(path: str, sql: str) -> SqliteOp:
    return SqliteOp(path=path, sql=sql)


def git_repo(path: str, commits: list[GitCommit]) -> GitOp:
    return GitOp(path=path, commits=tuple(commits))


def cert(cn: str, org: str, serial: int, not_before: str, not_after: str, cert_path: str,
         key_path: str | None = None, header: str | None = None, append: bool = False) -> CertOp:
    return CertOp(cn=cn, org=org, serial=serial, not_before=not_before, not_after=not_after, cert=cert_path,
                  key=key_path, header=header, append=append)


def chmod(path: str, mode: int) -> ChmodOp:
    return ChmodOp(path=path, mode=mode)


def mkdir(path: str, mode: int = 0o755) -> MkdirOp:
    return MkdirOp(path=path, mode=mode)


@cache
def runner_source() -> str:
    text = RUNNER_FILE.read_text(encoding="utf-8")
    if text.count(SPEC_LINE) != 1:
        raise RuntimeError(f"{RUNNER_FILE} must hold exactly one {SPEC_LINE.strip()!r} line")
    return text


def fixture_script(ops: list[Op]) -> str:
    """The python3 script (stdlib only) that builds every fixture of a task, in order."""
    spec = pprint.pformat([_plain(op.model_dump()) for op in ops], width=120, sort_dicts=False)
    return runner_source().replace(SPEC_LINE, f"SPEC = {spec}\n", 1)


def _plain(value):
    """Lists where the models hold tuples: the script's SPEC reads as it did when ops were dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
