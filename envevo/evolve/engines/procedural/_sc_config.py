"""Structured configuration scenarios: INI, YAML, JSON, JSON lines, XML, Kubernetes secret manifests."""

from __future__ import annotations

import json

from envevo.evolve.engines.procedural import _fixtures as F
from envevo.evolve.engines.procedural import _recipes as R
from envevo.evolve.engines.procedural._scenario import Scenario, add_tokens, phrase


class IniConfig(Scenario):
    id = "ini_config"
    title = "an INI service configuration"
    where = "Services are configured in the INI file `/app/config/services.ini`: one `[name]` section per service with `tier`, `workers` and `owner` keys."
    entity, group_label, value_label, row_label = "service", "tier", "worker count", "section"
    groups = ("critical", "standard", "batch")
    value_range = (1, 64)
    caps = frozenset({"awk", "py", "sed", "text", "unique"})
    weight = 5.0
    paths = ("/app/config/services.ini",)
    PATH = "/app/config/services.ini"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["owner"] = rng.choice(["alice", "bob", "chen", "dara", "eli"])

    def texts(self, inst):
        out = ["; Service definitions, one section per service.\n"]
        out += [f"\n[{r.key}]\ntier = {r.group}\nworkers = {r.value}\nowner = {r.extra['owner']}\n" for r in inst.rows]
        return {self.PATH: "".join(out)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^\\[[a-z0-9]+\\]$/ { if (k != "") emit(k, g, v, ""); k = substr($0, 2, length($0) - 2); g = ""; v = "" }\n'
                '/^tier = / { g = $3 }\n/^workers = / { v = $3 }\n'
                'END { if (k != "") emit(k, g, v, "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"/^\\[{k}\\]\\$/,/^\\[/ s/^tier = .*/tier = {v}/",
                        wrong=lambda k, v: f"/^\\[{k}/,/^\\[/ s/^tier = .*/tier = {v}/",
                        exists=lambda k: f"^\\[{k}\\]\\$", trap=lambda k: f"{k}2", new_groups=("batch", "retired"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/config/services.ini.new", label="INI file")

    def py(self, inst):
        return R.PySrc(
            "import configparser\n\ndef rows():\n"
            "    cp = configparser.ConfigParser()\n"
            f"    cp.read({self.PATH!r})\n"
            "    for name in cp.sections():\n"
            "        yield name, cp[name]['tier'], int(cp[name]['workers']), ''\n"
        )


class YamlConfig(Scenario):
    id = "yaml_config"
    title = "a YAML service catalogue"
    where = ("The service catalogue is `/app/config/services.yaml`: under `services:` each service name maps to its "
             "`env`, `replicas` and `owner` (two-space indentation; PyYAML is not installed).")
    entity, group_label, value_label, row_label = "service", "environment", "replica count", "service entry"
    groups = ("prod", "staging", "dev")
    value_range = (1, 40)
    caps = frozenset({"awk", "py", "sed", "text", "unique"})
    weight = 7.0
    paths = ("/app/config/services.yaml",)
    PATH = "/app/config/services.yaml"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["owner"] = rng.choice(["alice", "bob", "chen", "dara", "eli"])

    def texts(self, inst):
        out = ["# Service catalogue (generated)\nversion: 2\nservices:\n"]
        out += [f"  {r.key}:\n    env: {r.group}\n    replicas: {r.value}\n    owner: {r.extra['owner']}\n" for r in inst.rows]
        return {self.PATH: "".join(out)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^  [a-z0-9]+:$/ { if (k != "") emit(k, g, v, ""); k = substr($1, 1, length($1) - 1); g = ""; v = "" }\n'
                '/^    env: / { g = $2 }\n/^    replicas: / { v = $2 }\n'
                'END { if (k != "") emit(k, g, v, "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"/^  {k}:\\$/,/^  [a-z0-9]+:\\$/ s/^(    env: ).*/\\1{v}/",
                        wrong=lambda k, v: f"/^  {k}/,/^  [a-z0-9]+:\\$/ s/^(    env: ).*/\\1{v}/",
                        exists=lambda k: f"^  {k}:\\$", trap=lambda k: f"{k}2", new_groups=("dev", "retired"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/config/services.yaml.new", label="YAML catalogue")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            "    cur, data = None, {}\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            if line.startswith('  ') and not line.startswith('    ') and line.rstrip().endswith(':'):\n"
            "                cur = line.strip()[:-1]\n"
            "                data[cur] = {}\n"
            "            elif line.startswith('    ') and cur:\n"
            "                key, _, val = line.strip().partition(': ')\n"
            "                data[cur][key] = val\n"
            "    for k, d in data.items():\n"
            "        yield k, d['env'], int(d['replicas']), ''\n"
        )


class JsonConfig(Scenario):
    id = "json_config"
    title = "a JSON service configuration"
    where = ('Services are configured in `/app/config/services.json`: a `"services"` array of objects with `name`, '
             '`tier`, `max_conn`, `token` and `updated` fields.')
    entity, group_label, value_label, row_label = "service", "tier", "max_conn", "service object"
    groups = ("gold", "silver", "bronze")
    value_range = (10, 5000)
    caps = frozenset({"jq", "py", "b64", "unique"})
    weight = 8.0
    paths = ("/app/config/services.json",)
    PATH = "/app/config/services.json"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)

    def render(self, inst):
        doc = {"version": 3, "services": [
            {"name": r.key, "tier": r.group, "max_conn": r.value, "token": r.extra["token"], "updated": r.date} for r in inst.rows]}
        return [F.write(self.PATH, json.dumps(doc, indent=2) + "\n")]

    def jq(self, inst):
        return R.JqSrc(f"jq -c '.services[] | {{key: .name, group: .tier, value: .max_conn, date: .updated}}' {self.PATH}")

    def b64(self, inst):
        return R.B64Src(f"jq -r '.services[] | [.name, .token] | @tsv' {self.PATH}")

    def py(self, inst):
        return R.PySrc(
            "import json\n\ndef rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for s in json.load(f)['services']:\n"
            "            yield s['name'], s['tier'], s['max_conn'], s['updated']\n"
        )


class JsonlEvents(Scenario):
    id = "jsonl_events"
    title = "a JSON-lines event stream"
    where = ('Operational events are in `/app/events/events.jsonl`, one JSON object per line with `ts`, `host`, `type`, '
             '`duration_ms`, `payload` and `message` fields.')
    entity, group_label, value_label, row_label = "host", "event type", "duration in ms", "event"
    groups = ("deploy", "restart", "alert", "scale")
    value_range = (10, 9000)
    per_key = (1, 5)
    entity_group = False
    caps = frozenset({"jq", "py", "b64", "grep", "multi"})
    weight = 6.0
    paths = ("/app/events/events.jsonl",)
    PATH = "/app/events/events.jsonl"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)
        for r in inst.rows:
            r.extra["time"] = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            r.extra["msg"] = phrase(rng)

    def note_with(self, word):
        return f"follow-up after {word} storm"

    def render(self, inst):
        rows = sorted(inst.rows, key=lambda r: (r.date, r.extra["time"], r.key))
        lines = [json.dumps({"ts": f"{r.date}T{r.extra['time']}Z", "host": r.key, "type": r.group, "duration_ms": r.value,
                             "payload": r.extra["token"], "message": r.note or r.extra["msg"]}) for r in rows]
        return [F.write(self.PATH, "\n".join(lines) + "\n")]

    def jq(self, inst):
        return R.JqSrc(f"jq -c '{{key: .host, group: .type, value: .duration_ms, date: .ts[0:10]}}' {self.PATH}")

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f'"type": "{g}"', wrong=lambda g: f"-w '{g}'",
                         extract="sed -E 's/.*\"host\": \"([^\"]+)\".*/\\1/'", files=self.PATH)

    def b64(self, inst):
        return R.B64Src(f"jq -r '[.host, .payload] | @tsv' {self.PATH}")

    def py(self, inst):
        return R.PySrc(
            "import json\n\ndef rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        for line in f:\n"
            "            e = json.loads(line)\n"
            "            yield e['host'], e['type'], e['duration_ms'], e['ts'][:10]\n"
        )


class XmlConfig(Scenario):
    id = "xml_config"
    title = "an XML service registry"
    where = ('The service registry is `/app/config/services.xml`: `<service name=".." tier=".." description="..">` '
             "elements with a `<limit>` child; some services sit inside `<group>` elements.")
    entity, group_label, value_label, row_label = "service", "tier", "limit", "service element"
    groups = ("gold", "silver", "bronze")
    value_range = (1, 999)
    caps = frozenset({"xml", "py", "grep", "sed", "unique"})
    weight = 3.0
    paths = ("/app/config/services.xml",)
    PATH = "/app/config/services.xml"

    def decorate(self, rng, inst):
        for r in inst.rows:
            r.extra["nested"] = rng.random() < 0.35

    def note_with(self, word):
        return f"replaces the {word} pool"

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

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def xml(self, inst):
        head = "import xml.etree.ElementTree as ET\n\ndef rows():\n" f"    root = ET.parse({self.PATH!r}).getroot()\n"
        body = "        yield s.get('name'), s.get('tier'), int(s.findtext('limit')), ''\n"
        return R.XmlSrc(code=head + "    for s in root.iter('service'):\n" + body,
                        wrong=head + "    for s in root.findall('service'):\n" + body,
                        wrong_sim=lambda rows: [(r.key, r.group, r.value) for r in rows if not r.extra.get("nested")])

    def py(self, inst):
        return R.PySrc(self.xml(inst).code)

    def grep(self, inst):
        return R.GrepSrc(regex=lambda g: f'<service name="[a-z0-9]+" tier="{g}"', wrong=lambda g: f"-w '{g}'",
                         extract="sed -E 's/.*<service name=\"([^\"]+)\".*/\\1/'", files=self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f's/(<service name="{k}" tier=")[^"]*/\\1{v}/',
                        wrong=lambda k, v: f's/(<service name="{k}[^"]*" tier=")[^"]*/\\1{v}/',
                        exists=lambda k: f'<service name="{k}"', trap=lambda k: f"{k}2", new_groups=("bronze", "retired"))


class K8sSecrets(Scenario):
    id = "k8s_secrets"
    title = "Kubernetes secret manifests"
    where = ("Credentials are Kubernetes Secret manifests in `/app/k8s/secrets.yaml` (several `---`-separated documents; "
             "each secret is named `<service>-credentials` and has a `namespace`, a `rotation-days` annotation and a `data.token`).")
    entity, group_label, value_label, row_label = "service", "namespace", "rotation days", "secret"
    groups = ("prod", "staging", "dev")
    value_range = (7, 365)
    caps = frozenset({"b64", "awk", "py", "sed", "text", "unique"})
    weight = 2.0
    paths = ("/app/k8s/secrets.yaml",)
    PATH = "/app/k8s/secrets.yaml"

    def decorate(self, rng, inst):
        add_tokens(rng, inst)

    def texts(self, inst):
        docs = [f"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {r.key}-credentials\n  namespace: {r.group}\n"
                f'  annotations:\n    rotation-days: "{r.value}"\ntype: Opaque\ndata:\n  token: {r.extra["token"]}\n'
                for r in inst.rows]
        return {self.PATH: "".join(docs)}

    def render(self, inst):
        return [F.write(p, t) for p, t in self.texts(inst).items()]

    def awk(self, inst, path=None):
        prog = ('/^  name: / { k = $2; sub(/-credentials$/, "", k); order[++n] = k }\n'
                '/^  namespace: / { g[k] = $2 }\n/^    rotation-days: / { v[k] = $2; gsub(/"/, "", v[k]) }\n'
                'END { for (i = 1; i <= n; i++) emit(order[i], g[order[i]], v[order[i]], "") }')
        return R.AwkSrc(prog=prog, files=path or self.PATH)

    def b64(self, inst):
        return R.B64Src("awk '/^  name: / { k = $2; sub(/-credentials$/, \"\", k) } /^  token: / { print k \"\\t\" $2 }' " + self.PATH)

    def sed(self, inst):
        return R.SedSrc(path=self.PATH, edit=lambda k, v: f"/^  name: {k}-credentials\\$/,/^---/ s/^(  namespace: ).*/\\1{v}/",
                        wrong=lambda k, v: f"/^  name: {k}/,/^---/ s/^(  namespace: ).*/\\1{v}/",
                        exists=lambda k: f"^  name: {k}-credentials\\$", trap=lambda k: f"{k}2", new_groups=("dev", "retired"))

    def text(self, inst):
        return R.TextSrc(path=self.PATH, dist="/app/k8s/secrets.yaml.new", label="secret manifests")

    def py(self, inst):
        return R.PySrc(
            "def rows():\n"
            f"    with open({self.PATH!r}) as f:\n"
            "        docs = f.read().split('---\\n')\n"
            "    for doc in docs:\n"
            "        fields = {}\n"
            "        for line in doc.splitlines():\n"
            "            key, _, val = line.strip().partition(': ')\n"
            "            fields.setdefault(key, val)\n"
            "        if 'name' in fields:\n"
            "            yield fields['name'][:-len('-credentials')], fields['namespace'], int(fields['rotation-days'].strip('\"')), ''\n"
        )


SCENARIOS = (IniConfig, YamlConfig, JsonConfig, JsonlEvents, XmlConfig, K8sSecrets)
