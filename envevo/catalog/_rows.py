"""The data every scenario is rendered from: rows of (key, group, value, date, note).

A scenario shows its rows in its own format (log lines, SQLite tables, INI sections, files in a tree,
commits, certificates); skills compute their expected answers from the same rows, so the oracle and
the tests agree by construction.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field, replace
from typing import Any

# Names that are valid everywhere a key ends up: user names, env vars, INI sections, file names,
# git scopes, certificate CNs, SQL text.
KEY_POOL: tuple[str, ...] = (
    "achernar", "acrux", "adhara", "albireo", "alcor", "aldebaran", "algol", "alkaid", "almach", "alnair",
    "alphard", "altair", "ankaa", "antares", "arcturus", "atlas", "atria", "avior", "bellatrix", "betelgeuse",
    "canopus", "capella", "castor", "deneb", "diphda", "draco", "dubhe", "electra", "elnath", "enif",
    "fomalhaut", "gacrux", "gienah", "hadar", "hamal", "izar", "kochab", "lyra", "maia", "markab",
    "menkar", "merak", "merope", "miaplacidus", "mimosa", "mintaka", "mira", "mirach", "mirfak", "mizar",
    "naos", "nashira", "nunki", "peacock", "phecda", "polaris", "pollux", "procyon", "rasalhague", "regulus",
    "rigel", "sabik", "sadr", "saiph", "scheat", "schedar", "shaula", "sirius", "spica", "suhail",
    "talitha", "tarazed", "thuban", "unukalhai", "vega", "wezen", "zaniah", "zosma", "alhena", "ascella",
)

REF_EPOCH = dt.date(2024, 1, 1)


@dataclass
class Row:
    key: str
    group: str
    value: int
    date: str = ""  # YYYY-MM-DD
    note: str = ""  # free text some formats show; grep traps live here
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Inst:
    """One generated scenario instance: its rows plus format-specific extras."""

    rows: list[Row]
    meta: dict[str, Any] = field(default_factory=dict)

    def keys(self) -> list[str]:
        return sorted({r.key for r in self.rows})

    def by_key(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for r in self.rows:
            out.setdefault(r.key, []).append(r)
        return out

    def copy(self) -> Inst:
        return Inst([replace(r, extra=dict(r.extra)) for r in self.rows], dict(self.meta))


def fresh_keys(rng: random.Random, n: int, avoid: set[str]) -> list[str]:
    free = [k for k in KEY_POOL if k not in avoid and not any(k.startswith(a) or a.startswith(k) for a in avoid)]
    return rng.sample(free, min(n, len(free)))


def day(offset: int) -> str:
    return (REF_EPOCH + dt.timedelta(days=offset)).isoformat()


def days_between(a: str, b: str) -> int:
    return (dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days


def make_rows(
    rng: random.Random,
    keys: list[str],
    groups: tuple[str, ...],
    value_range: tuple[int, int],
    *,
    per_key: tuple[int, int] = (1, 1),
    entity_group: bool = True,
    bias: tuple[str, set[str], float] | None = None,
    date_span: int = 180,
) -> list[Row]:
    """Rows for `keys`: `per_key` rows each; `bias` = (group, favoured keys, p) makes the favoured keys
    land in that group with probability p, so chains do not run out of names."""
    rows: list[Row] = []
    lo, hi = value_range
    for key in keys:
        n = rng.randint(*per_key)
        fav = bias is not None and key in bias[1] and rng.random() < bias[2]

        def pick(key: str, fav: bool) -> str:
            if bias is None:
                return rng.choice(groups)
            if fav:
                return bias[0]
            others = [g for g in groups if g != bias[0]]
            return rng.choice(others if key in bias[1] else list(groups))

        g0 = pick(key, fav)
        for i in range(n):
            g = g0 if entity_group or i == 0 else (rng.choice(groups) if not fav or rng.random() < 0.5 else g0)
            rows.append(Row(key, g, rng.randint(lo, hi), day(rng.randint(0, date_span - 1))))
    rng.shuffle(rows)
    return rows
