"""SQLite scenarios: an entity table joined to a fact table (several facts per entity)."""

from __future__ import annotations

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog.scenarios._base import Scenario


class _Sqlite(Scenario):
    DB: str
    ENT: str  # table, key column, group column
    KEY: str
    GRP: str
    FACT: str  # table, foreign key, value column, date column, extra column
    FK: str
    VAL: str
    DATE: str
    EXTRA: tuple[str, tuple[str, ...]]
    per_key = (1, 4)

    def make(self, rng, keys, bias=None, per_key=None):
        inst = super().make(rng, keys, bias, per_key)
        order = inst.keys()
        rng.shuffle(order)
        ids = {k: i + 1 for i, k in enumerate(order)}  # entity ids, in a shuffled key order
        facts = list(inst.rows)
        rng.shuffle(facts)
        for i, r in enumerate(facts):
            r.extra.update(id=i + 1, eid=ids[r.key], extra=rng.choice(self.EXTRA[1]))
        inst.rows = facts
        inst.meta["ids"] = ids
        return inst

    def render(self, inst):
        ids = inst.meta["ids"]
        grp = {r.key: r.group for r in inst.rows}
        sql = [f"CREATE TABLE {self.ENT} (id INTEGER PRIMARY KEY, {self.KEY} TEXT NOT NULL UNIQUE, {self.GRP} TEXT NOT NULL);",
               f"CREATE TABLE {self.FACT} (id INTEGER PRIMARY KEY, {self.FK} INTEGER NOT NULL REFERENCES {self.ENT}(id), "
               f"{self.EXTRA[0]} TEXT, {self.VAL} INTEGER NOT NULL, {self.DATE} TEXT NOT NULL);"]
        for k, i in sorted(ids.items(), key=lambda x: x[1]):
            sql.append(f"INSERT INTO {self.ENT} VALUES ({i}, '{k}', '{grp[k]}');")
        for r in sorted(inst.rows, key=lambda r: r.extra["id"]):
            sql.append(f"INSERT INTO {self.FACT} VALUES ({r.extra['id']}, {r.extra['eid']}, '{r.extra['extra']}', {r.value}, '{r.date}');")
        return [F.sqlite(self.DB, "\n".join(sql) + "\n")]

    def _rows_sql(self) -> str:
        return (f"SELECT e.{self.KEY} AS key, e.{self.GRP} AS grp, f.{self.VAL} AS value, f.{self.DATE} AS date "
                f"FROM {self.ENT} e JOIN {self.FACT} f ON f.{self.FK} = e.id")

    def sql(self, inst):
        return R.SqlSrc(db=self.DB, rows_sql=self._rows_sql())

    def sqljoin(self, inst):
        return R.SqlJoinSrc(db=self.DB, ent=self.ENT, ent_key=self.KEY, ent_group=self.GRP, fact=self.FACT,
                            fact_fk=self.FK, fact_value=self.VAL, fact_label=f"{self.FACT} rows")

    def jq(self, inst):
        return R.JqSrc(f'sqlite3 -json {self.DB} "{self._rows_sql()}" | jq -c \'.[] | {{key, group: .grp, value, date}}\'')

    def py(self, inst):
        return R.PySrc(
            "import sqlite3\n\ndef rows():\n"
            f"    db = sqlite3.connect({self.DB!r})\n"
            f"    yield from db.execute({self._rows_sql()!r})\n"
        )


class SqliteInventory(_Sqlite):
    id = "sqlite_inventory"


class SqliteMetrics(_Sqlite):
    id = "sqlite_metrics"


class SqliteTickets(_Sqlite):
    id = "sqlite_tickets"


SCENARIOS = (SqliteInventory, SqliteMetrics, SqliteTickets)
