"""File-tree scenarios: one file per key (project trees, unit files, JUnit reports, Maven modules), and a tar backup."""

from __future__ import annotations

import random

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog._rows import Inst, Row
from envevo.catalog.scenarios._base import Scenario, XmlRows, element_tree_reader, phrase

# Modes that tarfile's `data` filter keeps: Harbor copies artifacts into a separate verifier through it, and a file the
# task leaves alone must arrive with its mode. The filter clears group/other write bits and gives the owner read and
# write (0o666 and 0o444 both arrive as 0o644). tests/catalog/test_wrong_variants.py checks every mode here.
WRONG_MODES = (0o600, 0o640, 0o700, 0o744, 0o755)


def _modes(rng: random.Random, inst: Inst, good: int, share: float = 0.4) -> None:
    for r in inst.rows:
        r.extra["mode"] = rng.choice([m for m in WRONG_MODES if m != good]) if rng.random() < share else good


def stamp(date: str) -> str:
    return date.replace("-", "") + "000000Z"


class FileTree(Scenario):
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


class NestedTree(FileTree):
    id = "nested_tree"

    def relpath(self, r):
        return f"{r.group}/{r.key}.txt"

    def content(self, r, old=False):
        rng = random.Random(r.extra["seed"] + old)
        n = r.extra["old_value"] if old else r.value
        return "".join(f"{r.key} {i + 1}: {phrase(rng, 4)}\n" for i in range(n))

    def extra_ops(self, inst):
        return [self.archive_op(inst)]


class SystemdUnits(FileTree):
    id = "systemd_units"

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


class JunitReports(XmlRows, FileTree):
    id = "junit_reports"

    def decorate(self, rng, inst):
        super().decorate(rng, inst)
        for r in inst.rows:
            r.extra["nested"] = rng.random() < 0.35

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
        return element_tree_reader(head, "testsuite", body, "        ")


_DEPS = ("commons-io", "guava", "jackson-core", "slf4j-api", "junit", "netty", "okhttp", "gson", "joda-time",
         "log4j-core", "snakeyaml", "mockito-core", "httpclient", "protobuf-java")


class MavenProject(XmlRows, FileTree):
    id = "maven_project"

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
            code=head + "        yield p.findtext('artifactId'), p.findtext('packaging'), "
                        "len(p.findall('./dependencies/dependency')), ''\n",
            wrong=head + "        yield p.findtext('artifactId'), p.findtext('packaging'), len(p.findall('dependency')), ''\n",
            wrong_sim=lambda rows: [(r.key, r.group, 0) for r in rows])


class TarBackup(Scenario):
    id = "tar_backup"

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
        return R.ArchiveSrc(path=self.PATH, key_re=lambda alt: f"/({alt})\\.dat$", key_sed="s#.*/##; s/\\.dat$//",
                            members={r.key: f"srv/{r.group}/{r.key}.dat" for r in inst.rows},
                            texts={r.key: self._text(r) for r in inst.rows})

    def render(self, inst):
        a = self.archive(inst)
        return [F.tar_gz(a.path, [(a.members[r.key], a.texts[r.key]) for r in inst.rows])]


SCENARIOS = (NestedTree, SystemdUnits, JunitReports, MavenProject, TarBackup)  # catalog order: scenarios/__init__.py
