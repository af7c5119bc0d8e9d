"""Line-oriented scenarios: one record per line (a CSV export, logs, passwd, a crontab)."""

from __future__ import annotations

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog._rows import Row
from envevo.catalog.scenarios._base import Scenario, TextFileScenario, clock, phrase


class CsvExport(Scenario):
    id = "csv_export"

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.key, r.value))
        lines = ["order_id,customer,region,amount,order_date,note"]
        lines += [f"{10001 + i},{r.key},{r.group},{r.value},{r.date},{r.note}" for i, r in enumerate(rows)]
        return [F.write(self.PATH, "\n".join(lines) + "\n")]

    def sql(self, inst):
        return R.SqlSrc(db=":memory:", pre=(f".import --csv {self.PATH} orders",),
                        rows_sql="SELECT customer AS key, region AS grp, CAST(amount AS INTEGER) AS value, order_date AS date FROM orders")


class LogArchive(Scenario):
    id = "log_archive"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["time"] = clock(rng)
            r.extra["msg"] = phrase(rng)

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.extra["time"], r.key))
        lines = [f"{r.date}T{r.extra['time']}Z {r.group} {r.key} {r.value} {r.note or r.extra['msg']}" for r in rows]
        cut = [len(lines) * i // 4 for i in range(5)]
        chunks = [lines[cut[i]:cut[i + 1]] for i in range(4)]  # oldest first
        text = lambda ls: "".join(x + "\n" for x in ls)
        return [
            F.gzip_file("/app/logs/app.log.3.gz", text(chunks[0])),
            F.gzip_file("/app/logs/app.log.2.gz", text(chunks[1])),
            F.write("/app/logs/app.log.1", text(chunks[2])),
            F.write("/app/logs/app.log", text(chunks[3])),
        ]


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class AccessLog(Scenario):
    id = "access_log"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["ip"] = f"10.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(2, 99)}"
            r.extra["time"] = clock(rng)
            r.extra["req"] = f"{rng.choice(['GET', 'GET', 'POST', 'PUT'])} /api/{rng.choice(['items', 'orders', 'users', 'search'])}"

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.extra["time"], r.key))
        lines = []
        for r in rows:
            y, m, d = r.date.split("-")
            req = r.note or r.extra["req"]
            lines.append(f'{r.extra["ip"]} - {r.key} [{d}/{_MONTHS[int(m) - 1]}/{y}:{r.extra["time"]} +0000] '
                         f'"{req} HTTP/1.1" {r.group} {r.value}')
        return [F.write(self.PATH, "\n".join(lines) + "\n")]


_SYSTEM = (("root", 0, "/bin/bash"), ("daemon", 1, "/usr/sbin/nologin"), ("bin", 2, "/usr/sbin/nologin"),
           ("sys", 3, "/usr/sbin/nologin"), ("games", 5, "/usr/sbin/nologin"), ("backup", 34, "/usr/sbin/nologin"),
           ("nobody", 65534, "/usr/sbin/nologin"))


class PasswdFile(TextFileScenario):
    id = "passwd_file"

    def make(self, rng, keys, bias=None, per_key=None):
        inst = super().make(rng, [k for k in keys if k not in {s[0] for s in _SYSTEM}], bias, per_key)
        inst.rows[:0] = [Row(name, shell, uid) for name, uid, shell in _SYSTEM]
        return inst

    def note_with(self, word):
        return f"{word.rsplit('/', 1)[-1]} scripting lead"

    def _line(self, r: Row) -> str:
        home = "/root" if r.key == "root" else ("/nonexistent" if r.value < 100 or r.value == 65534 else f"/home/{r.key}")
        gecos = r.note or (r.key.capitalize() if r.value >= 100 else r.key)
        return f"{r.key}:x:{r.value}:{r.value}:{gecos}:{home}:{r.group}"

    def texts(self, inst):
        return {self.PATH: "".join(self._line(r) + "\n" for r in inst.rows)}


class CronTable(TextFileScenario):
    id = "cron_table"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["min"] = rng.choice(["0", "5", "15", "30", "45", "*/10"])
            r.extra["dow"] = rng.choice(["*", "*", "1-5", "0", "6"])

    def _line(self, r):
        tail = f" # {r.note}" if r.note else ""
        return f"{r.extra['min']} {r.value} * * {r.extra['dow']} {r.group} /usr/local/bin/run-job {r.key}{tail}"

    def texts(self, inst):
        return {self.PATH: self.HEAD + "".join(self._line(r) + "\n" for r in inst.rows)}


SCENARIOS = (CsvExport, LogArchive, AccessLog, PasswdFile, CronTable)
