"""Git repository scenarios: one file per key whose numeric setting only ever goes up over the history.

Monotone values make `git bisect` well defined for any threshold, tags give `git show REV:path` a
different answer from the working tree, and conventional-commit subjects `type(scope): text` give
`git log --grep` something real to select.
"""

from __future__ import annotations

import datetime as dt

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog._rows import Inst
from envevo.catalog.scenarios._base import Scenario

TYPES_VALUE = ("fix", "feat", "perf")
TYPES_TOUCH = ("chore", "docs", "refactor")
_AUTHORS = ("Ana Souza <ana@example.com>", "Ben Okafor <ben@example.com>", "Chen Wei <chen@example.com>",
            "Dara Novak <dara@example.com>")
_TEXT = {"fix": "raise {v} after overload", "feat": "allow larger {v}", "perf": "tune {v} for peak load",
         "chore": "tidy comments", "docs": "document the {v} setting", "refactor": "reorder settings"}


class _Git(Scenario):
    REPO: str
    DIR: str
    EXT: str
    VALUE: str  # the setting's name
    VALUE_SED: str  # sed -n expression printing the setting's value from a file
    value_range = (10, 400)

    def content(self, key: str, group: str, value: int, rev: int) -> str:
        raise NotImplementedError

    def make(self, rng, keys, bias=None, per_key=None):
        inst = super().make(rng, keys, bias, (1, 1))
        values = {r.key: r.value for r in inst.rows}
        inst.meta["v0"] = dict(values)
        history = []
        for _ in range(rng.randint(10, 15)):
            kind = rng.choice(TYPES_VALUE + TYPES_VALUE + TYPES_TOUCH)
            touched = rng.sample(sorted(values), 2 if kind in TYPES_VALUE and rng.random() < 0.4 else 1)
            change = {k: values[k] + rng.randint(5, 300) for k in touched} if kind in TYPES_VALUE else {}
            values.update(change)
            history.append({"type": kind, "keys": touched, "values": change, "text": _TEXT[kind].format(v=self.VALUE)})
        inst.meta["history"] = history
        inst.meta["tag_after"] = rng.randint(1, 3)  # v1.0 is tagged after this many commits past the import
        for r in inst.rows:
            r.value = values[r.key]
        return inst

    def states(self, inst: Inst) -> list[dict[str, int]]:
        """Values at each commit: index 0 is the import, i is after history[i-1]."""
        cur = dict(inst.meta["v0"])
        out = [dict(cur)]
        for c in inst.meta["history"]:
            cur.update(c["values"])
            out.append(dict(cur))
        return out

    def subject(self, c: dict) -> str:
        return f"{c['type']}({c['keys'][0]}): {c['text']}"

    def render(self, inst):
        group = {r.key: r.group for r in inst.rows}
        rev = {k: 0 for k in group}
        path = lambda k: f"{self.DIR}/{k}.{self.EXT}"
        start = dt.datetime(2024, 2, 1, 9, 0, tzinfo=dt.UTC)
        when = lambda i: (start + dt.timedelta(days=i, hours=(i * 5) % 8)).isoformat()
        state = dict(inst.meta["v0"])
        commits = [{"files": {path(k): self.content(k, group[k], state[k], 0) for k in sorted(group)},
                    "message": f"chore: import {self.DIR}", "author": _AUTHORS[0], "date": when(0),
                    "tag": "v1.0" if inst.meta["tag_after"] == 0 else None}]
        for i, c in enumerate(inst.meta["history"], 1):
            state.update(c["values"])
            for k in c["keys"]:
                rev[k] += 1
            commits.append({"files": {path(k): self.content(k, group[k], state[k], rev[k]) for k in c["keys"]},
                            "message": self.subject(c), "author": _AUTHORS[i % len(_AUTHORS)], "date": when(i),
                            "tag": "v1.0" if inst.meta["tag_after"] == i else None})
        return [F.git_repo(self.REPO, commits)]

    def git(self, inst):
        return R.GitSrc(repo=self.REPO, dir=self.DIR, ext=self.EXT, value_sed=self.VALUE_SED, value_label=self.VALUE)


class GitAppRepo(_Git):
    id = "git_app_repo"

    def content(self, key, group, value, rev):
        return f'[service]\nname = "{key}"\nteam = "{group}"\ntimeout_ms = {value}\n' + (f"# revision {rev}\n" if rev else "")


class GitConfigRepo(_Git):
    id = "git_config_repo"

    def content(self, key, group, value, rev):
        return f"# {key} — managed by etckeeper\nowner = {group}\nmax_connections = {value}\n" + (f"# edit {rev}\n" if rev else "")


class GitDocsRepo(_Git):
    id = "git_docs_repo"

    def content(self, key, group, value, rev):
        return (f"---\ntitle: {key.capitalize()}\nsection: {group}\nweight: {value}\n---\n\nAbout {key}."
                + (f" Revised {rev} times.\n" if rev else "\n"))


SCENARIOS = (GitAppRepo, GitConfigRepo, GitDocsRepo)
