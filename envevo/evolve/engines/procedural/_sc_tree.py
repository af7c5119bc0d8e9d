"""File-tree scenarios: one file per key (project trees, unit files, vhosts, JUnit reports, Maven modules),
certificates, and tar archives."""

from __future__ import annotations

import random

from envevo.evolve.engines.procedural import _fixtures as F
from envevo.evolve.engines.procedural import _recipes as R
from envevo.evolve.engines.procedural._rows import Inst, Row
from envevo.evolve.engines.procedural._scenario import Scenario, phrase

WRONG_MODES = (0o600, 0o640, 0o664, 0o666, 0o755)


def _modes(rng: random.Random, inst: Inst, good: int, share: float = 0.4) -> None:
    for r in inst.rows:
        r.extra["mode"] = rng.choice([m for m in WRONG_MODES if m != good]) if rng.random() < share else good


def _stamp(date: str) -> str:
    return date.replace("-", "") + "000000Z"


class _FileTree(Scenario):
    """One text file per key under ROOT; a backup tarball holds an older copy of every file."""

    ROOT: str
    GLOB: str
    KEY_SED: str
    BACKUP: str
    BACKUP_DIR: str  # top directory inside the backup
    MODE = 0o644

    def relpath(self, r: Row) -> str:
        raise NotImplementedError

    def content(self, r: Row, old: bool = False) -> str:
        raise NotImplementedError

    def decorate(self, rng, inst):
        _modes(rng, inst, self.MODE)
        for r in inst.rows:
            r.extra["old_value"] = max(self.value_range[0], r.value - rng.randint(1, max(2, r.value // 2)))
            r.extra["seed"] = rng.randrange(1 << 30)
            r.extra["more"] = rng.randint(0, 5)  # optional lines, so files differ in length and size

    def render(self, inst):
        ops = [F.write(f"{self.ROOT}/{self.relpath(r)}", self.content(r), r.extra["mode"]) for r in inst.rows]
        return ops + self.extra_ops(inst) + [F.mkdir(self.ROOT)]

    def extra_ops(self, inst) -> list:
        return []

    def files(self, inst):
        return R.FilesSrc(root=self.ROOT, glob=self.GLOB, key_sed=self.KEY_SED,
                          files={r.key: self.relpath(r) for r in inst.rows}, texts={r.key: self.content(r) for r in inst.rows})

    def perm(self, inst):
        return R.PermSrc(root=self.ROOT, glob=self.GLOB, mode=self.MODE, key_sed=self.KEY_SED,
                         files={r.key: self.relpath(r) for r in inst.rows}, modes={r.key: r.extra["mode"] for r in inst.rows})

    def archive(self, inst):
        return R.ArchiveSrc(path=self.BACKUP, key_re=lambda alt: self.MEMBER_RE.replace("ALT", alt), key_sed=self.KEY_SED,
                            members={r.key: f"{self.BACKUP_DIR}/{self.relpath(r)}" for r in inst.rows},
                            texts={r.key: self.content(r, old=True) for r in inst.rows})

    def archive_op(self, inst):
        a = self.archive(inst)
        return F.tar_gz(a.path, [(a.members[k], a.texts[k]) for k in sorted(a.members)])


class NestedTree(_FileTree):
    id = "nested_tree"
    title = "a nested project directory tree"
    ROOT, GLOB, KEY_SED = "/app/data/projects", "*.txt", "s#.*/##; s/\\.txt$//"
    MEMBER_RE = "/(ALT)\\.txt$"
    BACKUP, BACKUP_DIR = "/app/backups/projects-2024-04.tar.gz", "projects"
    where = ("Project notes live under `/app/data/projects/` in nested folders (some folder names contain spaces), one "
             "`<project>.txt` file per project; `/app/backups/projects-2024-04.tar.gz` is an older backup of the tree.")
    entity, group_label, value_label, row_label = "project", "folder", "line count", "file"
    groups = ("Q1 reports", "Q2 reports", "drafts", "archive/2023")
    value_range = (3, 60)
    caps = frozenset({"files", "perm", "archive", "py", "unique"})
    weight = 5.0
    paths = ("/app/data/projects", "/app/backups/projects-2024-04.tar.gz")

    def relpath(self, r):
        return f"{r.group}/{r.key}.txt"

    def content(self, r, old=False):
        rng = random.Random(r.extra["seed"] + old)
        n = r.extra["old_value"] if old else r.value
        return "".join(f"{r.key} {i + 1}: {phrase(rng, 4)}\n" for i in range(n))

    def extra_ops(self, inst):
        return [self.archive_op(inst)]

    def py(self, inst):
        return R.PySrc(
            "import os\n\ndef rows():\n"
            f"    root = {self.ROOT!r}\n"
            "    for d, _, names in os.walk(root):\n"
            "        for n in names:\n"
            "            if n.endswith('.txt'):\n"
            "                with open(os.path.join(d, n)) as f:\n"
            "                    yield n[:-4], os.path.relpath(d, root), sum(1 for _ in f), ''\n"
        )


class SystemdUnits(_FileTree):
    id = "systemd_units"
    title = "a directory of systemd unit files"
    ROOT, GLOB, KEY_SED = "/app/systemd", "*.service", "s#.*/##; s/\\.service$//"
    MEMBER_RE = "/(ALT)\\.service$"
    BACKUP, BACKUP_DIR = "/app/backups/systemd-units.tar.gz", "systemd"
    where = ("Service unit files are in `/app/systemd/` (`<service>.service`, with `User=` and `LimitNOFILE=` in the "
             "`[Service]` section); `/app/backups/systemd-units.tar.gz` holds the previous versions.")
    entity, group_label, value_label, row_label = "service", "User", "LimitNOFILE", "unit file"
    groups = ("app", "worker", "batch")
    value_range = (256, 65536)
    caps = frozenset({"files", "perm", "archive", "grep", "awk", "py", "unique"})
    weight = 3.0
    paths = ("/app/systemd", "/app/backups/systemd-units.tar.gz")

    def note_with(self, word):
        return f"formerly run by {word}"

    def relpath(self, r):
        return f"{r.key}.service"

    def content(self, r, old=False):
        desc = f"{r.key.capitalize()} service" + (f" ({r.note})" if r.note else "")
        return (f"[Unit]\nDescription={desc}\nAfter=network.target\n\n[Service]\nUser={r.group}\n"
                f"ExecStart=/usr/local/bin/{r.key} --serve\nRestart=on-failure\n"
                + "".join(f"Environment=OPT_{i}={r.key}-{i}\n" for i in range(r.extra["more"])) +
                f"LimitNOFILE={r.extra['old_value'] if old else r.value}\n\n[Install]\nWantedBy=multi-user.target\n")

    def extra_ops(self, inst):
        return [self.archive_op(inst)]

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^User={g}$", wrong=lambda g: f"-lw '{g}'", list_files=True,
                         extract="xargs -n1 basename | sed 's/\\.service$//'", files=f"{self.ROOT}/*.service")

    def awk(self, inst, path=None):
        prog = ('FNR == 1 { k = FILENAME; sub(/.*\\//, "", k); sub(/\\.service$/, "", k); order[++n] = k }\n'
                '$1 == "User" { g[k] = $2 }\n$1 == "LimitNOFILE" { v[k] = $2 }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=f"{self.ROOT}/*.service", fs="-F=")

    def py(self, inst):
        return R.PySrc(
            "import configparser, glob, os\n\ndef rows():\n"
            f"    for path in sorted(glob.glob({self.ROOT + '/*.service'!r})):\n"
            "        cp = configparser.ConfigParser(interpolation=None, strict=False)  # units repeat keys\n"
            "        cp.optionxform = str\n"
            "        cp.read(path)\n"
            "        yield os.path.basename(path)[:-8], cp['Service']['User'], int(cp['Service']['LimitNOFILE']), ''\n"
        )


class NginxConfig(_FileTree):
    id = "nginx_config"
    title = "an nginx virtual-host configuration with TLS certificates"
    ROOT, GLOB, KEY_SED = "/app/nginx/sites-enabled", "*.conf", "s#.*/##; s/\\.conf$//"
    MEMBER_RE = "/(ALT)\\.conf$"
    BACKUP, BACKUP_DIR = "/app/backups/nginx-sites.tar.gz", "sites-enabled"
    where = ("nginx virtual hosts are in `/app/nginx/sites-enabled/<site>.conf` (`root /srv/<area>;`, "
             "`client_max_body_size <n>m;`); their TLS certificates and private keys are `/app/nginx/ssl/<site>.crt` and "
             "`.key`; `/app/backups/nginx-sites.tar.gz` holds the previous site files.")
    entity, group_label, value_label, row_label = "site", "document root area", "client_max_body_size (MB)", "site file"
    groups = ("static", "api", "admin")
    value_range = (1, 512)
    caps = frozenset({"files", "perm", "pem", "grep", "awk", "archive", "unique"})
    weight = 4.0
    paths = ("/app/nginx", "/app/backups/nginx-sites.tar.gz")

    def decorate(self, rng, inst):
        super().decorate(rng, inst)
        for r in inst.rows:
            r.extra["mode"] = 0o644
            r.extra["key_mode"] = rng.choice([0o644, 0o640, 0o604]) if rng.random() < 0.4 else 0o600

    def note_with(self, word):
        return f"{word} traffic moved here in May"

    def relpath(self, r):
        return f"{r.key}.conf"

    def content(self, r, old=False):
        note = f"# {r.note}\n" if r.note else ""
        return (f"{note}server {{\n    listen 443 ssl;\n    server_name {r.key}.example.internal;\n    root /srv/{r.group};\n"
                f"    client_max_body_size {r.extra['old_value'] if old else r.value}m;\n"
                f"    ssl_certificate /app/nginx/ssl/{r.key}.crt;\n    ssl_certificate_key /app/nginx/ssl/{r.key}.key;\n"
                + "".join(f"    location /v{i}/ {{ proxy_pass http://127.0.0.1:{8000 + i}; }}\n" for i in range(r.extra["more"]))
                + "}\n")

    def extra_ops(self, inst):
        ops = []
        for r in inst.rows:
            ops.append(F.cert(f"{r.key}.example.internal", r.group, 4096 + r.value, "20230101000000Z", _stamp(r.date),
                              f"/app/nginx/ssl/{r.key}.crt", f"/app/nginx/ssl/{r.key}.key"))
            ops.append(F.chmod(f"/app/nginx/ssl/{r.key}.key", r.extra["key_mode"]))
        return ops + [self.archive_op(inst)]

    def perm(self, inst):
        return R.PermSrc(root="/app/nginx/ssl", glob="*.key", mode=0o600, key_sed="s#.*/##; s/\\.key$//",
                         files={r.key: f"{r.key}.key" for r in inst.rows}, modes={r.key: r.extra["key_mode"] for r in inst.rows},
                         what="private key")

    def pem(self, inst):
        return R.PemSrc(glob="/app/nginx/ssl/*.crt")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^ *root /srv/{g};", wrong=lambda g: f"-lw '{g}'", list_files=True,
                         extract="xargs -n1 basename | sed 's/\\.conf$//'", files=f"{self.ROOT}/*.conf")

    def awk(self, inst, path=None):
        prog = ('FNR == 1 { k = FILENAME; sub(/.*\\//, "", k); sub(/\\.conf$/, "", k); order[++n] = k }\n'
                '$1 == "root" { g[k] = $2; sub(/^\\/srv\\//, "", g[k]); sub(/;$/, "", g[k]) }\n'
                '$1 == "client_max_body_size" { v[k] = $2 + 0 }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=f"{self.ROOT}/*.conf")


class JunitReports(_FileTree):
    id = "junit_reports"
    title = "a directory of JUnit XML test reports"
    ROOT, GLOB, KEY_SED = "/app/reports/junit", "TEST-*.xml", "s#.*/##; s/^TEST-//; s/\\.xml$//"
    MEMBER_RE = "/TEST-(ALT)\\.xml$"
    BACKUP, BACKUP_DIR = "/app/backups/junit-previous.tar.gz", "junit"
    where = ("CI test reports are JUnit XML files `/app/reports/junit/TEST-<suite>.xml`; each `<testsuite>` has `name`, "
             "`hostname` (the runner OS) and `tests` attributes, and some suites are nested in an extra `<testsuites>` "
             "shard element; `/app/backups/junit-previous.tar.gz` holds the previous run's reports.")
    entity, group_label, value_label, row_label = "test suite", "runner hostname", "test count", "report"
    groups = ("linux", "macos", "windows")
    value_range = (1, 250)
    caps = frozenset({"xml", "files", "perm", "grep", "archive", "py", "unique"})
    weight = 2.0
    paths = ("/app/reports/junit", "/app/backups/junit-previous.tar.gz")

    def decorate(self, rng, inst):
        super().decorate(rng, inst)
        for r in inst.rows:
            r.extra["nested"] = rng.random() < 0.35

    def note_with(self, word):
        return f"flaky on {word} runners"

    def relpath(self, r):
        return f"TEST-{r.key}.xml"

    def content(self, r, old=False):
        n = r.extra["old_value"] if old else r.value
        note = r.note or "stable"
        lines = [f'<testsuite name="{r.key}" hostname="{r.group}" tests="{n}" failures="0" time="{n / 10:.1f}">',
                 f'  <properties><property name="note" value="{note}"/></properties>',
                 *(f'  <testcase classname="{r.key}.Smoke" name="test_{i}" time="0.01"/>' for i in range(1 + r.extra["more"])),
                 "</testsuite>"]
        pad = "    " if r.extra.get("nested") else "  "
        suite = "".join(pad + line + "\n" for line in lines)
        if r.extra.get("nested"):
            suite = f'  <testsuites name="shard-2">\n{suite}  </testsuites>\n'
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n{suite}</testsuites>\n'

    def extra_ops(self, inst):
        return [self.archive_op(inst)]

    def xml(self, inst):
        head = ("import glob\nimport xml.etree.ElementTree as ET\n\ndef rows():\n"
                f"    for path in sorted(glob.glob({self.ROOT + '/TEST-*.xml'!r})):\n"
                "        root = ET.parse(path).getroot()\n")
        body = "            yield s.get('name'), s.get('hostname'), int(s.get('tests')), ''\n"
        return R.XmlSrc(code=head + "        for s in root.iter('testsuite'):\n" + body,
                        wrong=head + "        for s in root.findall('testsuite'):\n" + body,
                        wrong_sim=lambda rows: [(r.key, r.group, r.value) for r in rows if not r.extra.get("nested")])

    def py(self, inst):
        return R.PySrc(self.xml(inst).code)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f'hostname="{g}"', wrong=lambda g: f"-lw '{g}'", list_files=True,
                         extract="xargs -n1 basename | sed 's/^TEST-//; s/\\.xml$//'", files=f"{self.ROOT}/TEST-*.xml")


_DEPS = ("commons-io", "guava", "jackson-core", "slf4j-api", "junit", "netty", "okhttp", "gson", "joda-time",
         "log4j-core", "snakeyaml", "mockito-core", "httpclient", "protobuf-java")


class MavenProject(_FileTree):
    id = "maven_project"
    title = "a multi-module Maven project"
    ROOT, GLOB, KEY_SED = "/app/project/modules", "pom.xml", "s#/pom\\.xml$##; s#.*/##"
    MEMBER_RE = "/(ALT)/pom\\.xml$"
    BACKUP, BACKUP_DIR = "/app/backups/modules-1.0.tar.gz", "modules"
    where = ("`/app/project` is a multi-module Maven build: each module has `/app/project/modules/<module>/pom.xml` "
             "with its `artifactId`, `packaging` and `<dependencies>`; `/app/backups/modules-1.0.tar.gz` holds the "
             "1.0 release's module POMs.")
    entity, group_label, value_label, row_label = "module", "packaging", "dependency count", "POM"
    groups = ("jar", "war", "ear")
    value_range = (0, 12)
    caps = frozenset({"xml", "files", "perm", "grep", "archive", "py", "unique"})
    weight = 2.0
    paths = ("/app/project", "/app/backups/modules-1.0.tar.gz")

    def note_with(self, word):
        return f"Split out of the old {word} bundle"

    def relpath(self, r):
        return f"{r.key}/pom.xml"

    def content(self, r, old=False):
        n = r.extra["old_value"] if old else r.value
        deps = "".join(f"    <dependency><groupId>org.example.libs</groupId><artifactId>{d}</artifactId></dependency>\n"
                       for d in _DEPS[:n])
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<project>\n  <modelVersion>4.0.0</modelVersion>\n'
                f"  <groupId>org.example</groupId>\n  <artifactId>{r.key}</artifactId>\n  <packaging>{r.group}</packaging>\n"
                f"  <description>{r.note or r.key.capitalize() + ' module'}</description>\n"
                f"  <dependencies>\n{deps}  </dependencies>\n</project>\n")

    def extra_ops(self, inst):
        modules = "".join(f"    <module>modules/{r.key}</module>\n" for r in inst.rows)
        parent = ('<?xml version="1.0" encoding="UTF-8"?>\n<project>\n  <modelVersion>4.0.0</modelVersion>\n'
                  "  <groupId>org.example</groupId>\n  <artifactId>parent</artifactId>\n  <packaging>pom</packaging>\n"
                  f"  <modules>\n{modules}  </modules>\n</project>\n")
        return [F.write("/app/project/pom.xml", parent), self.archive_op(inst)]

    def xml(self, inst):
        head = ("import glob\nimport xml.etree.ElementTree as ET\n\ndef rows():\n"
                f"    for path in sorted(glob.glob({self.ROOT + '/*/pom.xml'!r})):\n"
                "        p = ET.parse(path).getroot()\n")
        return R.XmlSrc(
            code=head + "        yield p.findtext('artifactId'), p.findtext('packaging'), len(p.findall('./dependencies/dependency')), ''\n",
            wrong=head + "        yield p.findtext('artifactId'), p.findtext('packaging'), len(p.findall('dependency')), ''\n",
            wrong_sim=lambda rows: [(r.key, r.group, 0) for r in rows])

    def py(self, inst):
        return R.PySrc(self.xml(inst).code)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"<packaging>{g}</packaging>", wrong=lambda g: f"-lw '{g}'", list_files=True,
                         extract="xargs -n1 dirname | xargs -n1 basename", files=f"{self.ROOT}/*/pom.xml")


class CertDirectory(_FileTree):
    id = "cert_directory"
    title = "a directory of TLS certificates and keys"
    ROOT, GLOB, KEY_SED = "/app/certs/conf", "*.cnf", "s#.*/##; s/\\.cnf$//"
    MEMBER_RE = "/(ALT)\\.cnf$"
    BACKUP, BACKUP_DIR = "/app/backups/cert-requests.tar.gz", "conf"
    where = ("Certificates are kept in `/app/certs/`: `live/<name>.pem` (certificate), `private/<name>.key` (private key) and "
             "`conf/<name>.cnf` (the OpenSSL request config with `CN` and `O`); `/app/backups/cert-requests.tar.gz` holds "
             "the previous request configs.")
    entity, group_label, value_label, row_label = "certificate", "organization (O)", "serial", "certificate"
    groups = ("internal", "partner", "public")
    value_range = (1, 9999)
    caps = frozenset({"pem", "perm", "files", "grep", "archive", "unique"})
    weight = 2.0
    paths = ("/app/certs", "/app/backups/cert-requests.tar.gz")

    def decorate(self, rng, inst):
        super().decorate(rng, inst)
        for r in inst.rows:
            r.extra["mode"] = 0o644
            r.extra["key_mode"] = rng.choice([0o644, 0o640, 0o666]) if rng.random() < 0.4 else 0o600

    def note_with(self, word):
        return f"reissued for the {word} gateway"

    def relpath(self, r):
        return f"{r.key}.cnf"

    def content(self, r, old=False):
        bits = 2048 if old else 256
        return (f"# {r.note or 'issued by the platform team'}\n[req]\ndistinguished_name = dn\nprompt = no\n"
                f"default_bits = {bits}\n\n[dn]\nCN = {r.key}.example.internal\nO = {r.group}\n"
                + "".join(f"# alt name {i}: {r.key}-{i}.example.internal\n" for i in range(r.extra["more"])))

    def extra_ops(self, inst):
        ops = []
        for r in inst.rows:
            ops.append(F.cert(f"{r.key}.example.internal", r.group, r.value, "20230101000000Z", _stamp(r.date),
                              f"/app/certs/live/{r.key}.pem", f"/app/certs/private/{r.key}.key"))
            ops.append(F.chmod(f"/app/certs/private/{r.key}.key", r.extra["key_mode"]))
        return ops + [self.archive_op(inst)]

    def perm(self, inst):
        return R.PermSrc(root="/app/certs/private", glob="*.key", mode=0o600, key_sed="s#.*/##; s/\\.key$//",
                         files={r.key: f"{r.key}.key" for r in inst.rows}, modes={r.key: r.extra["key_mode"] for r in inst.rows},
                         what="private key")

    def pem(self, inst):
        return R.PemSrc(glob="/app/certs/live/*.pem")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^O = {g}$", wrong=lambda g: f"-lw '{g}'", list_files=True,
                         extract="xargs -n1 basename | sed 's/\\.cnf$//'", files=f"{self.ROOT}/*.cnf")


class CertBundle(Scenario):
    id = "cert_bundle"
    title = "a PEM certificate bundle"
    where = ("`/app/certs/ca-bundle.pem` concatenates PEM certificates; each is preceded by a comment line "
             "`# <name>.example.internal team=<team> serial=<n> expires=<YYYY-MM-DD> ; <note>`.")
    entity, group_label, value_label, row_label = "certificate", "team", "serial", "bundle entry"
    groups = ("ops", "payments", "edge")
    value_range = (1, 99999)
    date_label = "expiry date"
    caps = frozenset({"pem", "grep", "awk", "py", "dates", "unique"})
    weight = 1.5
    paths = ("/app/certs/ca-bundle.pem",)
    PATH = "/app/certs/ca-bundle.pem"

    def note_with(self, word):
        return f"cross-signed for {word}"

    def render(self, inst):
        return [F.cert(f"{r.key}.example.internal", r.group, r.value, "20230101000000Z", _stamp(r.date), self.PATH,
                       header=f"# {r.key}.example.internal team={r.group} serial={r.value} expires={r.date} ; {r.note or 'active'}\n",
                       append=True)
                for r in inst.rows]

    def pem(self, inst):
        return R.PemSrc(bundle=self.PATH)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f"^# [a-z0-9]+\\.example\\.internal team={g} ", wrong=lambda g: f"-w '{g}'",
                         extract="cut -d' ' -f2 | cut -d. -f1", files=self.PATH)

    def awk(self, inst, path=None):
        prog = ('/^# [a-z0-9]+\\.example\\.internal team=/ { split($2, h, "."); emit(h[1], substr($3, 6), substr($4, 8), substr($5, 9)) }')
        return R.AwkSrc(prog=prog, files=self.PATH)

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            if line.startswith('# ') and '.example.internal team=' in line:\n"
            "                p = line.split()\n"
            "                yield p[1].split('.')[0], p[2][5:], int(p[3][7:]), p[4][8:]\n"
        )


class TarBackup(Scenario):
    id = "tar_backup"
    title = "a compressed tar backup"
    where = ("`/app/backup/srv-2024-05.tar.gz` is a gzip-compressed tar backup of `/srv`; each member is "
             "`srv/<area>/<name>.dat`.")
    entity, group_label, value_label, row_label = "data file", "area", "size in bytes", "archive member"
    groups = ("web", "db", "mail", "cache")
    value_range = (40, 5000)
    caps = frozenset({"archive", "awk", "py", "unique"})
    weight = 3.0
    paths = ("/app/backup/srv-2024-05.tar.gz",)
    PATH = "/app/backup/srv-2024-05.tar.gz"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["seed"] = rng.randrange(1 << 30)

    def _text(self, r):
        rng = random.Random(r.extra["seed"])
        out = ""
        while len(out) < r.value:
            out += f"{r.key} {phrase(rng, 3)}\n"
        return out[: r.value - 1] + "\n"

    def archive(self, inst):
        return R.ArchiveSrc(path=self.PATH, key_re=lambda alt: f"/({alt})\\.dat$", key_sed="s#.*/##; s/\\.dat$//", members={r.key: f"srv/{r.group}/{r.key}.dat" for r in inst.rows},
                            texts={r.key: self._text(r) for r in inst.rows})

    def render(self, inst):
        a = self.archive(inst)
        return [F.tar_gz(a.path, [(a.members[r.key], a.texts[r.key]) for r in inst.rows])]

    def awk(self, inst, path=None):
        prog = '{ n = split($6, p, "/"); k = p[n]; sub(/\\.dat$/, "", k); emit(k, p[2], $3, "") }'
        return R.AwkSrc(prog=prog, stream=f"tar -tvzf {self.PATH}")

    def py(self, inst):
        return R.PySrc(
            "import tarfile\n\ndef rows():\n"
            f"    with tarfile.open({self.PATH!r}) as tar:\n"
            "        for m in tar.getmembers():\n"
            "            _, area, name = m.name.split('/')\n"
            "            yield name[:-4], area, m.size, ''\n"
        )


SCENARIOS = (NestedTree, SystemdUnits, NginxConfig, JunitReports, MavenProject, CertDirectory, CertBundle, TarBackup)
