"""Line-oriented scenarios: one record per line (CSV, logs, passwd, crontab, Markdown, env, properties, Makefile)."""

from __future__ import annotations

from envevo.evolve.engines.procedural import _fixtures as F
from envevo.evolve.engines.procedural import _recipes as R
from envevo.evolve.engines.procedural._rows import Row
from envevo.evolve.engines.procedural._scenario import Scenario, add_tokens, phrase


class CsvExport(Scenario):
    id = "csv_export"
    title = "a CSV export of customer orders"
    where = "Customer orders are exported to `/app/data/orders.csv` (comma-separated, one header row; columns order_id, customer, region, amount, order_date, note)."
    entity, group_label, value_label, row_label = "customer", "region", "amount", "order"
    groups = ("North", "South", "East", "West")
    value_range = (5, 950)
    per_key = (1, 5)
    entity_group = False
    date_label = "order_date"
    caps = frozenset({"awk", "grep", "cut", "py", "sql", "multi", "dates"})
    weight = 10.0
    paths = ("/app/data/orders.csv",)
    PATH = "/app/data/orders.csv"

    def note_with(self, word):
        return f"transferred from {word} desk"

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.key, r.value))
        lines = ["order_id,customer,region,amount,order_date,note"]
        lines += [f"{10001 + i},{r.key},{r.group},{r.value},{r.date},{r.note}" for i, r in enumerate(rows)]
        return [F.write(self.PATH, "\n".join(lines) + "\n")]

    def awk(self, inst, path=None):
        return R.AwkSrc(prog="NR > 1 { emit($2, $3, $4, $5) }", files=self.PATH, fs="-F,")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^[0-9]+,[a-z0-9]+,{g},", wrong=lambda g: f"-w '{g}'",
                         extract="cut -d, -f2", files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"tail -n +2 {self.PATH}", key="cut -d, -f2", group="cut -d, -f3", wrong_group="cut -d, -f4")

    def py(self, inst):
        return R.PySrc(
            "import csv\n\ndef rows():\n"
            f"    with open({self.PATH!r}, newline='') as f:\n"
            "        for r in csv.DictReader(f):\n"
            "            yield r['customer'], r['region'], int(r['amount']), r['order_date']\n"
        )

    def sql(self, inst):
        return R.SqlSrc(db=":memory:", pre=(f".import --csv {self.PATH} orders",),
                        rows_sql="SELECT customer AS key, region AS grp, CAST(amount AS INTEGER) AS value, order_date AS date FROM orders")


class LogArchive(Scenario):
    id = "log_archive"
    title = "a rotated application log archive"
    where = ("The application logs are in `/app/logs/`: `app.log`, the rotated `app.log.1`, and the older gzip-compressed "
             "`app.log.2.gz` and `app.log.3.gz`. Each line is `<timestamp> <LEVEL> <host> <latency_ms> <message>`.")
    entity, group_label, value_label, row_label = "host", "level", "latency in ms", "log line"
    groups = ("ERROR", "WARN", "INFO", "DEBUG")
    value_range = (3, 4000)
    per_key = (1, 6)
    entity_group = False
    date_label = "timestamp"
    caps = frozenset({"awk", "grep", "cut", "py", "multi", "dates"})
    weight = 10.0
    paths = ("/app/logs/app.log",)
    FILES = "/app/logs/app.log*"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["time"] = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            r.extra["msg"] = phrase(rng)

    def note_with(self, word):
        return f"retrying after {word} from upstream"

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

    def awk(self, inst, path=None):
        return R.AwkSrc(prog="{ emit($3, $2, $4, substr($1, 1, 10)) }", stream=f"zcat -f {self.FILES}")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^[^ ]+ {g} ", wrong=lambda g: f"-w '{g}'", extract="cut -d' ' -f3",
                         stream=f"zcat -f {self.FILES}")

    def cut(self, inst):
        return R.CutSrc(stream=f"zcat -f {self.FILES}", key="cut -d' ' -f3", group="cut -d' ' -f2", wrong_group="cut -d' ' -f4")

    def py(self, inst):
        return R.PySrc(
            "import glob, gzip\n\ndef rows():\n"
            "    for path in sorted(glob.glob('/app/logs/app.log*')):\n"
            "        opener = gzip.open if path.endswith('.gz') else open\n"
            "        with opener(path, 'rt') as f:\n"
            "            for line in f:\n"
            "                ts, level, host, ms = line.split()[:4]\n"
            "                yield host, level, int(ms), ts[:10]\n"
        )


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class AccessLog(Scenario):
    id = "access_log"
    title = "an nginx access log"
    where = ("The web server's access log is `/app/logs/access.log` (combined format: "
             '`<ip> - <user> [<time>] "<request>" <status> <bytes>`).')
    entity, group_label, value_label, row_label = "user", "HTTP status", "response bytes", "request"
    groups = ("200", "304", "404", "500")
    value_range = (120, 98000)
    per_key = (1, 6)
    entity_group = False
    date_label = "request time"
    caps = frozenset({"awk", "grep", "cut", "py", "multi", "dates"})
    weight = 7.0
    paths = ("/app/logs/access.log",)
    PATH = "/app/logs/access.log"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["ip"] = f"10.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(2, 99)}"
            r.extra["time"] = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            r.extra["req"] = f"{rng.choice(['GET', 'GET', 'POST', 'PUT'])} /api/{rng.choice(['items', 'orders', 'users', 'search'])}"

    def note_with(self, word):
        return f"GET /export/{word}/summary"

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.extra["time"], r.key))
        lines = []
        for r in rows:
            y, m, d = r.date.split("-")
            req = r.note or r.extra["req"]
            lines.append(f'{r.extra["ip"]} - {r.key} [{d}/{_MONTHS[int(m) - 1]}/{y}:{r.extra["time"]} +0000] '
                         f'"{req} HTTP/1.1" {r.group} {r.value}')
        return [F.write(self.PATH, "\n".join(lines) + "\n")]

    def awk(self, inst, path=None):
        prog = ('BEGIN { split("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec", mn, " "); for (i = 1; i <= 12; i++) mon[mn[i]] = sprintf("%02d", i) }\n'
                '{ split(substr($4, 2), t, "[/:]"); emit($3, $9, $10, t[3] "-" mon[t[2]] "-" t[1]) }')
        return R.AwkSrc(prog=prog, files=self.PATH)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f'" {g} [0-9]+$', wrong=lambda g: f"-w '{g}'", extract="cut -d' ' -f3", files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"cat {self.PATH}", key="cut -d' ' -f3", group="cut -d' ' -f9", wrong_group="cut -d' ' -f10")

    def py(self, inst):
        return R.PySrc(
            "import datetime, re\n\nLINE = re.compile(r'^\\S+ - (\\S+) \\[([^\\]]+)\\] \"[^\"]*\" (\\d+) (\\d+)$')\n\n"
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            user, when, status, size = LINE.match(line.strip()).groups()\n"
            "            day = datetime.datetime.strptime(when, '%d/%b/%Y:%H:%M:%S %z').date().isoformat()\n"
            "            yield user, status, int(size), day\n"
        )


_SYSTEM = (("root", 0, "/bin/bash"), ("daemon", 1, "/usr/sbin/nologin"), ("bin", 2, "/usr/sbin/nologin"),
           ("sys", 3, "/usr/sbin/nologin"), ("games", 5, "/usr/sbin/nologin"), ("backup", 34, "/usr/sbin/nologin"),
           ("nobody", 65534, "/usr/sbin/nologin"))


class PasswdFile(Scenario):
    id = "passwd_file"
    title = "a user account database (/etc/passwd format)"
    where = "The host's user accounts are in `/app/etc/passwd` (standard passwd format: name:password:uid:gid:gecos:home:shell)."
    entity, group_label, value_label, row_label = "account", "login shell", "uid", "account"
    groups = ("/bin/bash", "/bin/sh", "/usr/sbin/nologin", "/bin/false")
    value_range = (100, 2999)
    caps = frozenset({"awk", "grep", "cut", "py", "sed", "text", "unique"})
    weight = 4.0
    paths = ("/app/etc/passwd",)
    PATH = "/app/etc/passwd"

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

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        return R.AwkSrc(prog="{ emit($1, $7, $3, \"\") }", files=path or self.PATH, fs="-F:")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f":{g}$", wrong=lambda g: f"-w '{g.rsplit('/', 1)[-1]}'", extract="cut -d: -f1",
                         files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"cat {self.PATH}", key="cut -d: -f1", group="cut -d: -f7", wrong_group="cut -d: -f6")

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"s#^({k}:.*:)[^:]*\\$#\\1{v}#",
                        wrong=lambda k, v: f"s#^({k}.*:)[^:]*\\$#\\1{v}#", exists=lambda k: f"^{k}:",
                        trap=lambda k: f"{k}2", new_groups=("/usr/sbin/nologin", "/bin/false"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/etc/passwd.new", label="account database")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            name, _, uid, _, _, _, shell = line.rstrip('\\n').split(':')\n"
            "            yield name, shell, int(uid), ''\n"
        )


class CronTable(Scenario):
    id = "cron_table"
    title = "a system crontab"
    where = ("Scheduled jobs are in the system crontab `/app/etc/crontab` (fields: minute hour day-of-month month "
             "day-of-week user command; every job runs `/usr/local/bin/run-job <job>`).")
    entity, group_label, value_label, row_label = "job", "user", "hour", "cron entry"
    groups = ("root", "backup", "www-data", "postgres")
    value_range = (0, 23)
    caps = frozenset({"awk", "grep", "cut", "py", "sed", "text", "unique"})
    weight = 4.0
    paths = ("/app/etc/crontab",)
    PATH = "/app/etc/crontab"
    HEAD = ("# /etc/crontab: system-wide crontab\nSHELL=/bin/sh\nPATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin\n\n"
            "# m h dom mon dow user command\n")

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["min"] = rng.choice(["0", "5", "15", "30", "45", "*/10"])
            r.extra["dow"] = rng.choice(["*", "*", "1-5", "0", "6"])

    def note_with(self, word):
        return f"rotates {word} logs"

    def _line(self, r):
        tail = f" # {r.note}" if r.note else ""
        return f"{r.extra['min']} {r.value} * * {r.extra['dow']} {r.group} /usr/local/bin/run-job {r.key}{tail}"

    def texts(self, inst):
        return {self.PATH: self.HEAD + "".join(self._line(r) + "\n" for r in inst.rows)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        return R.AwkSrc(prog='$7 == "/usr/local/bin/run-job" { emit($8, $6, $2, "") }', files=path or self.PATH)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^([^ ]+ ){{5}}{g} ", wrong=lambda g: f"-w '{g}'", extract="cut -d' ' -f8",
                         files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"grep run-job {self.PATH}", key="cut -d' ' -f8", group="cut -d' ' -f6", wrong_group="cut -d' ' -f7")

    def sed(self, inst):
        return R.SedSrc(path=self.PATH,
                        edit=lambda k, v: f"s#^(([^ ]+ ){{5}})[^ ]+( /usr/local/bin/run-job {k}( .*)?)\\$#\\1{v}\\3#",
                        wrong=lambda k, v: f"s#^(([^ ]+ ){{5}})[^ ]+( /usr/local/bin/run-job {k})#\\1{v}\\3#",
                        exists=lambda k: f"run-job {k}( |\\$)", trap=lambda k: f"{k}2", new_groups=("root", "backup"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/etc/crontab.new", label="crontab")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            p = line.split()\n"
            "            if len(p) >= 8 and p[6] == '/usr/local/bin/run-job':\n"
            "                yield p[7], p[5], int(p[1]), ''\n"
        )


class MarkdownTable(Scenario):
    id = "markdown_table"
    title = "a Markdown inventory table"
    where = "The host inventory is a Markdown table in `/app/docs/inventory.md` (columns host, owner, cpu_cores, last_audit, notes)."
    entity, group_label, value_label, row_label = "host", "owner team", "CPU cores", "table row"
    groups = ("infra", "data", "web", "security")
    value_range = (2, 128)
    date_label = "last_audit date"
    caps = frozenset({"awk", "grep", "py", "sed", "text", "unique", "dates"})
    weight = 4.0
    paths = ("/app/docs/inventory.md",)
    PATH = "/app/docs/inventory.md"

    def note_with(self, word):
        return f"moved from {word} in March"

    def _line(self, r):
        return f"| {r.key} | {r.group} | {r.value} | {r.date} | {r.note or '-'} |"

    def texts(self, inst):
        head = ("# Host inventory\n\nMaintained by the platform team. One row per host.\n\n"
                "| host | owner | cpu_cores | last_audit | notes |\n|------|-------|-----------|------------|-------|\n")
        return {self.PATH: head + "".join(self._line(r) + "\n" for r in inst.rows) + "\nUpdate this table after every audit.\n"}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^\\| [a-z0-9]+ \\|/ && $2 != " host " { for (i = 2; i <= 6; i++) gsub(/^ +| +$/, "", $i); emit($2, $3, $4, $5) }')
        return R.AwkSrc(prog=prog, files=path or self.PATH, fs="-F'|'")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^\\| [a-z0-9]+ \\| {g} \\|", wrong=lambda g: f"-w '{g}'",
                         extract="cut -d'|' -f2 | tr -d ' '", files=self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"s/^(\\| {k} \\| )[^|]*( \\|)/\\1{v}\\2/",
                        wrong=lambda k, v: f"s/^(\\| {k}[^|]*\\| )[^|]*( \\|)/\\1{v}\\2/",
                        exists=lambda k: f"^\\| {k} \\|", trap=lambda k: f"{k}2", new_groups=("infra", "retired"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/docs/inventory.md.new", label="inventory table")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            cells = [c.strip() for c in line.strip().strip('|').split('|')]\n"
            "            if line.startswith('| ') and len(cells) == 5 and cells[0] != 'host':\n"
            "                yield cells[0], cells[1], int(cells[2]), cells[3]\n"
        )


class EnvFile(Scenario):
    id = "env_file"
    title = "a dotenv configuration file"
    where = ("Service settings are in the dotenv file `/app/config/app.env`: for each service NAME there are "
             "`NAME_TIER`, `NAME_TIMEOUT` (seconds) and `NAME_TOKEN` variables (NAME is the service name in upper case).")
    entity, group_label, value_label, row_label = "service", "tier", "timeout in seconds", "service block"
    groups = ("gold", "silver", "bronze")
    value_range = (5, 900)
    caps = frozenset({"awk", "grep", "cut", "py", "sed", "text", "unique", "b64"})
    weight = 6.0
    paths = ("/app/config/app.env",)
    PATH = "/app/config/app.env"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)

    def note_with(self, word):
        return f"was {word} until the last review"

    def texts(self, inst):
        out = ["# Generated by the deploy tooling. One block per service.\n"]
        for r in inst.rows:
            K = r.key.upper()
            out.append(f"\n{K}_TIER={r.group}\n{K}_TIMEOUT={r.value}\n{K}_TOKEN={r.extra['token']}\n")
            if r.note:
                out.append(f'{K}_DESCRIPTION="{r.note}"\n')
        return {self.PATH: "".join(out)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^[A-Z0-9]+_TIER=/ { k = tolower(substr($1, 1, length($1) - 5)); g[k] = $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }\n'
                '/^[A-Z0-9]+_TIMEOUT=/ { v[tolower(substr($1, 1, length($1) - 8))] = $2 }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH, fs="-F=")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^[A-Z0-9]+_TIER={g}$", wrong=lambda g: f"-w '{g}'",
                         extract="cut -d_ -f1 | tr '[:upper:]' '[:lower:]'", files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"grep '_TIER=' {self.PATH}", key="cut -d_ -f1 | tr '[:upper:]' '[:lower:]'",
                        group="cut -d= -f2", wrong_group="cut -d_ -f2")

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"s/^(${{K}}_TIER=).*/\\1{v}/",
                        wrong=lambda k, v: f"s/^({k}_TIER=).*/\\1{v}/", exists=lambda k: "^${K}_TIER=",
                        trap=None, new_groups=("bronze", "retired"),
                        prelude="K=$(printf '%s' \"$k\" | tr '[:lower:]' '[:upper:]')")

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/config/app.env.new", label="dotenv file")

    def b64(self, inst):
        return R.B64Src(stream=f"sed -nE 's/^([A-Z0-9]+)_TOKEN=(.*)$/\\L\\1\\E\\t\\2/p' {self.PATH}")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            "    tier, timeout = {}, {}\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            name, _, val = line.strip().partition('=')\n"
            "            if name.endswith('_TIER'):\n"
            "                tier[name[:-5].lower()] = val\n"
            "            elif name.endswith('_TIMEOUT'):\n"
            "                timeout[name[:-8].lower()] = int(val)\n"
            "    for k in tier:\n"
            "        yield k, tier[k], timeout[k], ''\n"
        )


class PropertiesFile(Scenario):
    id = "properties_file"
    title = "a Java properties file"
    where = ("The service registry is the Java properties file `/app/config/application.properties` "
             "(`service.<name>.tier`, `service.<name>.pool` and optional `service.<name>.description` keys).")
    entity, group_label, value_label, row_label = "service", "tier", "pool size", "service entry"
    groups = ("gold", "silver", "bronze", "free")
    value_range = (4, 200)
    caps = frozenset({"awk", "grep", "cut", "py", "sed", "text", "unique"})
    weight = 4.0
    paths = ("/app/config/application.properties",)
    PATH = "/app/config/application.properties"

    def note_with(self, word):
        return f"promoted from {word} last quarter"

    def texts(self, inst):
        out = ["# Service registry\n# Edited by hand; keep one block per service.\n"]
        for r in inst.rows:
            out.append(f"\nservice.{r.key}.tier={r.group}\nservice.{r.key}.pool={r.value}\n")
            if r.note:
                out.append(f"service.{r.key}.description={r.note}\n")
        return {self.PATH: "".join(out)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^service\\.[a-z0-9]+\\.tier=/ { split($1, p, "."); k = p[2]; g[k] = $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }\n'
                '/^service\\.[a-z0-9]+\\.pool=/ { split($1, p, "."); v[p[2]] = $2 }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH, fs="-F=")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^service\\.[a-z0-9]+\\.tier={g}$", wrong=lambda g: f"-w '{g}'",
                         extract="cut -d. -f2", files=self.PATH)

    def cut(self, inst):
        return R.CutSrc(stream=f"grep '\\.tier=' {self.PATH}", key="cut -d. -f2", group="cut -d= -f2", wrong_group="cut -d. -f3")

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"s/^(service\\.{k}\\.tier=).*/\\1{v}/",
                        wrong=lambda k, v: f"s/({k}\\.tier=).*/\\1{v}/", exists=lambda k: f"^service\\.{k}\\.tier=",
                        trap=lambda k: f"old{k}", new_groups=("free", "retired"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/config/application.properties.new", label="properties file")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            "    tier, pool = {}, {}\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            key, _, val = line.strip().partition('=')\n"
            "            parts = key.split('.')\n"
            "            if len(parts) == 3 and parts[2] == 'tier':\n"
            "                tier[parts[1]] = val\n"
            "            elif len(parts) == 3 and parts[2] == 'pool':\n"
            "                pool[parts[1]] = int(val)\n"
            "    for k in tier:\n"
            "        yield k, tier[k], pool[k], ''\n"
        )


class MakefileProject(Scenario):
    id = "makefile_project"
    title = "a Makefile project"
    where = ("The build rules are in `/app/src/Makefile`: each tool target has a target-specific `STACK_KB` setting "
             "and a rule `<tool>: <objects> lib<name>.a` naming the one library it links.")
    entity, group_label, value_label, row_label = "tool target", "linked library", "STACK_KB", "target"
    groups = ("core", "net", "crypto", "ui")
    value_range = (64, 4096)
    caps = frozenset({"awk", "grep", "py", "sed", "text", "unique"})
    weight = 3.0
    paths = ("/app/src/Makefile",)
    PATH = "/app/src/Makefile"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["objs"] = " ".join([f"{r.key}.o"] + rng.sample(["util.o", "log.o", "args.o", "io.o"], rng.randint(0, 2)))

    def note_with(self, word):
        return f"no {word} code since 2.0"

    def texts(self, inst):
        out = ["# Build rules for the tools in this tree.\nCC ?= cc\nLDFLAGS += -L.\n\n",
               "all: " + " ".join(r.key for r in inst.rows) + "\n"]
        for r in inst.rows:
            note = f"  # {r.note}" if r.note else ""
            out.append(f"\n{r.key}: STACK_KB = {r.value}\n{r.key}: {r.extra['objs']} lib{r.group}.a{note}\n"
                       "\t$(CC) -o $@ $^ $(LDFLAGS) -Wl,-z,stack-size=$(STACK_KB)k\n")
        out.append("\n.PHONY: all\n")
        return {self.PATH: "".join(out)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^[a-z0-9]+: STACK_KB = / { v[substr($1, 1, length($1) - 1)] = $4 }\n'
                '/^[a-z0-9]+: [a-z0-9]+\\.o/ { k = substr($1, 1, length($1) - 1); for (i = 2; i <= NF && $i != "#"; i++) if ($i ~ /^lib[a-z]+\\.a$/) g[k] = substr($i, 4, length($i) - 5); order[++n] = k }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^[a-z0-9]+: [^#]*\\blib{g}\\.a\\b", wrong=lambda g: f"'{g}'",
                         extract="cut -d: -f1", files=self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"s/^({k}: [^#]*lib)[a-z]+(\\.a)/\\1{v}\\2/",
                        wrong=lambda k, v: f"s/({k}: [^#]*lib)[a-z]+(\\.a)/\\1{v}\\2/",
                        exists=lambda k: f"^{k}: [a-z0-9]+\\.o", trap=lambda k: f"old{k}", new_groups=("core", "legacy"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/src/Makefile.new", label="Makefile")

    def py(self, inst):
        return R.PySrc(
            "import re\n\ndef rows():\n"
            "    stack, lib, order = {}, {}, []\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            m = re.match(r'^([a-z0-9]+): STACK_KB = (\\d+)', line)\n"
            "            if m:\n"
            "                stack[m.group(1)] = int(m.group(2))\n"
            "                continue\n"
            "            m = re.match(r'^([a-z0-9]+): [a-z0-9]+\\.o[^#]*\\blib([a-z]+)\\.a\\b', line)\n"
            "            if m:\n"
            "                lib[m.group(1)] = m.group(2)\n"
            "                order.append(m.group(1))\n"
            "    for k in order:\n"
            "        yield k, lib[k], stack[k], ''\n"
        )


SCENARIOS = (CsvExport, LogArchive, AccessLog, PasswdFile, CronTable, MarkdownTable, EnvFile, PropertiesFile, MakefileProject)
