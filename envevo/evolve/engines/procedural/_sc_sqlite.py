"""SQLite scenarios: an entity table joined to a fact table (several facts per entity)."""

from __future__ import annotations

from envevo.evolve.engines.procedural import _fixtures as F
from envevo.evolve.engines.procedural import _recipes as R
from envevo.evolve.engines.procedural._scenario import Scenario


def _where(what, db, ent, key, grp, fact, fk, val, date, extra) -> str:
    return (f"{what} live in the SQLite database `{db}`: table `{ent}` (id, {key}, {grp}) and table "
            f"`{fact}` (id, {fk} referencing {ent}.id, {extra[0]}, {val}, {date}).")


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
    caps = frozenset({"sql", "sqljoin", "jq", "py", "multi"})

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
    title = "a SQLite inventory database"
    DB, ENT, KEY, GRP = "/app/db/inventory.db", "items", "sku", "category"
    FACT, FK, VAL, DATE, EXTRA = "stock", "item_id", "qty", "counted", ("warehouse", ("ams", "fra", "lis", "osl"))
    where = _where("Inventory records", DB, ENT, KEY, GRP, FACT, FK, VAL, DATE, EXTRA)
    entity, group_label, value_label, row_label = "SKU", "category", "stock quantity", "stock row"
    groups = ("hardware", "software", "spares", "tools")
    value_range = (1, 500)
    weight = 5.0
    paths = (DB,)


class SqliteMetrics(_Sqlite):
    id = "sqlite_metrics"
    title = "a SQLite metrics database"
    DB, ENT, KEY, GRP = "/app/db/metrics.db", "hosts", "name", "role"
    FACT, FK, VAL, DATE, EXTRA = "samples", "host_id", "cpu_pct", "day", ("metric", ("cpu", "cpu", "cpu"))
    where = _where("Host metrics", DB, ENT, KEY, GRP, FACT, FK, VAL, DATE, EXTRA)
    entity, group_label, value_label, row_label = "host", "role", "CPU percent", "sample"
    groups = ("web", "db", "cache", "batch")
    value_range = (1, 100)
    weight = 4.0
    paths = (DB,)


class SqliteTickets(_Sqlite):
    id = "sqlite_tickets"
    title = "a SQLite helpdesk database"
    DB, ENT, KEY, GRP = "/app/db/helpdesk.db", "customers", "name", "plan"
    FACT, FK, VAL, DATE, EXTRA = "tickets", "customer_id", "minutes", "opened", ("channel", ("mail", "chat", "phone"))
    where = _where("Helpdesk records", DB, ENT, KEY, GRP, FACT, FK, VAL, DATE, EXTRA)
    entity, group_label, value_label, row_label = "customer", "plan", "handling minutes", "ticket"
    groups = ("free", "pro", "enterprise")
    value_range = (5, 900)
    weight = 4.0
    paths = (DB,)


SCENARIOS = (SqliteInventory, SqliteMetrics, SqliteTickets)
