"""Structured configuration scenarios: INI, YAML, JSON, JSON lines, XML, Kubernetes secret manifests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from envevo.catalog import _fixtures as F
from envevo.catalog import _recipes as R
from envevo.catalog.scenarios._base import Scenario, TextFileScenario, XmlRows, add_tokens, clock, element_tree_reader, phrase


@dataclass(frozen=True)
class SectionFormat:
    """How a services file spells one section per service (INI and YAML differ only in this)."""

    head: str
    entry: str  # one service; fields key, group, value, owner
    awk: str  # emits (name, group, value) per section
    edit: str  # sed expression setting service {k}'s group to {v}
    wrong: str  # the same with the classic anchoring mistake
    exists: str  # ERE matching the section header of service {k}
    py: str  # defines rows(); PATH stands for the file's path
    new_groups: tuple[str, str]


INI = SectionFormat(
    head="; Service definitions, one section per service.\n",
    entry="\n[{key}]\ntier = {group}\nworkers = {value}\nowner = {owner}\n",
    awk=('/^\\[[a-z0-9]+\\]$/ { if (k != "") emit(k, g, v, ""); k = substr($0, 2, length($0) - 2); g = ""; v = "" }\n'
         '/^tier = / { g = $3 }\n/^workers = / { v = $3 }\n'
         'END { if (k != "") emit(k, g, v, "") }'),
    edit="/^\\[{k}\\]\\$/,/^\\[/ s/^tier = .*/tier = {v}/",
    wrong="/^\\[{k}/,/^\\[/ s/^tier = .*/tier = {v}/",
    exists="^\\[{k}\\]\\$",
    py=("import configparser\n\ndef rows():\n"
        "    cp = configparser.ConfigParser()\n"
        "    cp.read(PATH)\n"
        "    for name in cp.sections():\n"
        "        yield name, cp[name]['tier'], int(cp[name]['workers']), ''\n"),
    new_groups=("batch", "retired"),
)

YAML = SectionFormat(
    head="# Service catalogue (generated)\nversion: 2\nservices:\n",
    entry="  {key}:\n    env: {group}\n    replicas: {value}\n    owner: {owner}\n",
    awk=('/^  [a-z0-9]+:$/ { if (k != "") emit(k, g, v, ""); k = substr($1, 1, length($1) - 1); g = ""; v = "" }\n'
         '/^    env: / { g = $2 }\n/^    replicas: / { v = $2 }\n'
         'END { if (k != "") emit(k, g, v, "") }'),
    edit="/^  {k}:\\$/,/^  [a-z0-9]+:\\$/ s/^(    env: ).*/\\1{v}/",
    wrong="/^  {k}/,/^  [a-z0-9]+:\\$/ s/^(    env: ).*/\\1{v}/",
    exists="^  {k}:\\$",
    py=("def rows():\n"
        "    cur, data = None, {}\n"
        "    with open(PATH) as f:\n"
        "        for line in f:\n"
        "            if line.startswith('  ') and not line.startswith('    ') and line.rstrip().endswith(':'):\n"
        "                cur = line.strip()[:-1]\n"
        "                data[cur] = {}\n"
        "            elif line.startswith('    ') and cur:\n"
        "                key, _, val = line.strip().partition(': ')\n"
        "                data[cur][key] = val\n"
        "    for k, d in data.items():\n"
        "        yield k, d['env'], int(d['replicas']), ''\n"),
    new_groups=("dev", "retired"),
)


class SectionConfig(TextFileScenario):
    """A services file with one section per service (tier/env, a count, an owner), in the FORMAT it is written in."""

    FORMAT: ClassVar[SectionFormat]
    entity, row_label = "service", "section"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["owner"] = rng.choice(["alice", "bob", "chen", "dara", "eli"])

    def texts(self, inst):
        fmt = self.FORMAT
        body = "".join(fmt.entry.format(key=r.key, group=r.group, value=r.value, owner=r.extra["owner"]) for r in inst.rows)
        return {self.PATH: fmt.head + body}

    def awk(self, inst, path=None):
        return R.AwkSrc(prog=self.FORMAT.awk, files=path or self.PATH)

    def sed(self, inst):
        fmt = self.FORMAT
        return R.SedSrc(path=self.PATH, edit=lambda k, v: fmt.edit.format(k=k, v=v), wrong=lambda k, v: fmt.wrong.format(k=k, v=v),
                        exists=lambda k: fmt.exists.format(k=k), trap=lambda k: f"{k}2", new_groups=fmt.new_groups)

    def py(self, inst):
        return R.PySrc(self.FORMAT.py.replace("PATH", repr(self.PATH)))


class IniConfig(SectionConfig):
    FORMAT = INI
    id = "ini_config"


class YamlConfig(SectionConfig):
    FORMAT = YAML
    id = "yaml_config"


class JsonConfig(Scenario):
    id = "json_config"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)

    def render(self, inst):
        doc = {"version": 3, "services": [
            {"name": r.key, "tier": r.group, "max_conn": r.value, "token": r.extra["token"], "updated": r.date} for r in inst.rows]}
        return [F.write(self.PATH, json.dumps(doc, indent=2) + "\n")]


class JsonlEvents(Scenario):
    id = "jsonl_events"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)
        for r in inst.rows:
            r.extra["time"] = clock(rng)
            r.extra["msg"] = phrase(rng)

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.extra["time"], r.key))
        lines = [json.dumps({"ts": f"{r.date}T{r.extra['time']}Z", "host": r.key, "type": r.group, "duration_ms": r.value,
                             "payload": r.extra["token"], "message": r.note or r.extra["msg"]}) for r in rows]
        return [F.write(self.PATH, "\n".join(lines) + "\n")]


class XmlConfig(XmlRows, Scenario):
    id = "xml_config"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["nested"] = rng.random() < 0.35

    def _el(self, r, pad):
        desc = r.note or f"{r.key} service"
        return f'{pad}<service name="{r.key}" tier="{r.group}" description="{desc}">\n{pad}  <limit>{r.value}</limit>\n{pad}</service>\n'

    def texts(self, inst):
        out = ['<?xml version="1.0" encoding="UTF-8"?>\n<registry>\n']
        out += [self._el(r, "  ") for r in inst.rows if not r.extra.get("nested")]
        nested = [r for r in inst.rows if r.extra.get("nested")]
        if nested:
            out.append('  <group name="legacy">\n' + "".join(self._el(r, "    ") for r in nested) + "  </group>\n")
        out.append("</registry>\n")
        return {self.PATH: "".join(out)}

    def xml(self, inst):
        head = "import xml.etree.ElementTree as ET\n\ndef rows():\n" f"    root = ET.parse({self.PATH!r}).getroot()\n"
        body = "        yield s.get('name'), s.get('tier'), int(s.findtext('limit')), ''\n"
        return element_tree_reader(head, "service", body, "    ")


class K8sSecrets(TextFileScenario):
    id = "k8s_secrets"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)

    def texts(self, inst):
        docs = [f"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {r.key}-credentials\n  namespace: {r.group}\n"
                f'  annotations:\n    rotation-days: "{r.value}"\ntype: Opaque\ndata:\n  token: {r.extra["token"]}\n'
                for r in inst.rows]
        return {self.PATH: "".join(docs)}


SCENARIOS = (IniConfig, YamlConfig, JsonConfig, JsonlEvents, XmlConfig, K8sSecrets)
