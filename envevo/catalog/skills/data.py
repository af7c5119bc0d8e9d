"""Data skills: jq, SQL aggregates and joins, Python scripting, XML with ElementTree, base64 decoding."""

from __future__ import annotations

from envevo.catalog.skills._base import (
    Draft,
    Skill,
    can_drop,
    enough,
    group_best,
    grouped_draw,
    grouped_instance,
    keys_line,
    need,
    plural,
    population,
    records_line,
    scope_phrase,
    scoped,
    soft,
    table_line,
)

TAB = "$'\\t'"


def _sql_keys(io) -> tuple[str, str]:
    """Shell that loads the input names as an SQL list, and the matching WHERE clause."""
    if io.first:
        return "", ""
    return f"ks=$(sed \"s/.*/'&'/\" {io.keys} | paste -sd, -)\n", " AND key IN ($ks)"


class JqTransform(Skill):
    id = "jq_transform"

    def attempt(self, sc, io, rng, strict):
        g, inst, tot = grouped_draw(sc, io, rng, strict)
        value = [{"key": k, "value": v} for k, v in sorted(tot.items())]
        differs = sorted(value, key=lambda x: x["value"]) != value
        soft(differs, strict)
        if io.first:
            opts, want, cond = "", "", f'.group == "{g}"'
        else:
            opts = f" --rawfile ks {io.keys}"
            want = '($ks | split("\\n") | map(select(length > 0))) as $want | '
            cond = f'.group == "{g}" and (.key | IN($want[]))'
        prog = f'{want}map(select({cond})) | group_by(.key) | map({{key: .[0].key, value: (map(.value) | add)}})'
        src = sc.jq(inst)
        req = (f"{sc.where} For each {sc.entity}, total the {sc.value_label} of its {plural(sc.row_label)} whose {sc.group_label} "
               f"is `{g}` ({plural(sc.entity)} without any are left out).{scope_phrase(sc, io)} " + records_line(io.out_path, "total"))
        return Draft(inst, value, f"{src.source} | jq -sc{opts} '{prog} | .[]' > {io.out_path}",
                     f"{src.source} | jq -sc{opts} '{prog} | sort_by(.value) | .[]' > {io.out_path}", req, wrong_differs=differs)


class SqlAggregate(Skill):
    id = "sql_aggregate"

    def attempt(self, sc, io, rng, strict):
        g, inst, tot = grouped_draw(sc, io, rng, strict)
        value = sorted(tot.items())
        differs = sorted(value, key=lambda kv: -kv[1]) != value
        soft(differs, strict)
        src = sc.sql(inst)
        load, cond = _sql_keys(io)
        q = lambda order: (f"SELECT key, SUM(value) FROM ({src.rows_sql}) WHERE grp = '{g}'{cond} GROUP BY key ORDER BY {order};")
        req = (f"{sc.where} Using SQL, total the {sc.value_label} per {sc.entity} over the {plural(sc.row_label)} "
               f"of {plural(sc.entity)} whose "
               f"{sc.group_label} is `{g}`.{scope_phrase(sc, io)} " + table_line(io.out_path, sc.entity, "total"))
        return Draft(inst, value, f"{load}{src.cmd(q('key'))} > {io.out_path}", f"{load}{src.cmd(q('2 DESC'))} > {io.out_path}",
                     req, wrong_differs=differs)


class SqlJoin(Skill):
    id = "sql_join"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        facts = [r for r in scoped(inst, io) if r.group == g]
        need(bool(facts))
        t = rng.choice(sorted({r.value for r in facts}))
        value = sorted({r.key for r in facts if r.value >= t})
        need(enough(len(value), io, strict))
        soft(len(value) < len({r.key for r in scoped(inst, io)}) or not can_drop(io), strict)
        by_eid = {i: k for k, i in inst.meta["ids"].items()}
        group = {r.key: r.group for r in inst.rows}
        wrong = sorted({by_eid[r.extra["id"]] for r in inst.rows if r.extra["id"] in by_eid and r.value >= t
                        and group[by_eid[r.extra["id"]]] == g and io.in_scope(by_eid[r.extra["id"]])})
        differs = wrong != value
        soft(differs, strict)
        j = sc.sqljoin(inst)
        load, _ = _sql_keys(io)
        cond = "" if io.first else f" AND e.{j.ent_key} IN ($ks)"
        q = lambda on: (f'sqlite3 -batch {j.db} "SELECT DISTINCT e.{j.ent_key} FROM {j.ent} e JOIN {j.fact} f ON {on} '
                        f"WHERE e.{j.ent_group} = '{g}' AND f.{j.fact_value} >= {t}{cond} ORDER BY 1;\" > {io.out_path}")
        req = (f"{sc.where} Find the {plural(sc.entity)} whose {sc.group_label} is `{g}` and that have at least one row in "
               f"`{j.fact}` with {j.fact_value} of {t} or more.{scope_phrase(sc, io)} " + keys_line("their names", io.out_path))
        return Draft(inst, value, load + q(f"f.{j.fact_fk} = e.id"), load + q("f.id = e.id"), req, wrong_differs=differs)


def _py_keys(io) -> str:
    return "None" if io.first else f"set(open({io.keys!r}).read().split())"


class PythonScript(Skill):
    id = "python_script"

    def attempt(self, sc, io, rng, strict):
        g, inst, best = grouped_draw(sc, io, rng, strict, group_best)
        value = [{"key": k, "value": v} for k, v in sorted(best.items())]
        code = sc.py(inst).code
        script = lambda val: (
            f"python3 - <<'PY'\n{code}\nimport json\n\nwant = {_py_keys(io)}\nbest = {{}}\n"
            f"for k, g, v, d in rows():\n    if g == {g!r} and (want is None or k in want):\n"
            "        best[k] = max(best.get(k, v), v)\n"
            f"with open({io.out_path!r}, 'w') as f:\n    for k in sorted(best):\n"
            f"        f.write(json.dumps({{'key': k, 'value': {val}}}) + '\\n')\nPY")
        req = (f"{sc.where} Find, for each {sc.entity}, the largest {sc.value_label} among its {plural(sc.row_label)} whose "
               f"{sc.group_label} is `{g}` ({plural(sc.entity)} without any are left out).{scope_phrase(sc, io)} "
               + records_line(io.out_path, "largest value"))
        return Draft(inst, value, script("best[k]"), script("str(best[k])"), req)


class XmlPython(Skill):
    id = "xml_python"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        src = sc.xml(inst)
        value = sorted((r.key, r.value) for r in scoped(inst, io) if r.group == g)
        need(enough(len(value), io, strict))
        seen = src.wrong_sim(inst.rows) if src.wrong_sim else []
        wrong = sorted((k, v) for k, grp, v in seen if grp == g and io.in_scope(k))
        differs = wrong != value
        soft(differs, strict)
        script = lambda code: (
            f"python3 - <<'PY'\n{code}\nwant = {_py_keys(io)}\n"
            f"with open({io.out_path!r}, 'w') as f:\n"
            f"    for k, v in sorted((k, v) for k, g, v, d in rows() if g == {g!r} and (want is None or k in want)):\n"
            "        f.write(f'{k}\\t{v}\\n')\nPY")
        req = (f"{sc.where} Parse the XML and list the {plural(sc.entity)} whose {sc.group_label} is `{g}`, with their "
               f"{sc.value_label} (nested elements count too).{scope_phrase(sc, io)} " + table_line(io.out_path, sc.entity, sc.value_label))
        return Draft(inst, value, script(src.code), script(src.wrong), req, wrong_differs=differs)


class Base64Decode(Skill):
    id = "base64_decode"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        rows = scoped(inst, io)
        value = sorted({(r.key, r.extra["secret"]) for r in rows})
        need(enough(len({k for k, _ in value}), io, strict))
        differs = any("-" in r.extra["token"] or "_" in r.extra["token"] for r in rows)
        soft(differs, strict)
        src = sc.b64(inst)
        restrict = "" if io.first else f" | join -t{TAB} {io.keys} -"
        fix = ("  t=$(printf '%s' \"$t\" | tr '_-' '/+')\n"
               "  case $(( ${#t} % 4 )) in 2) t=\"$t==\" ;; 3) t=\"$t=\" ;; esac\n")
        loop = lambda body: (f"{src.stream} | while IFS={TAB} read -r k t; do\n{body}"
                             "  printf '%s\\t%s\\n' \"$k\" \"$(printf '%s' \"$t\" | base64 -d)\"\n"
                             f"done | sort{restrict} > {io.out_path}")
        req = (f"{sc.where} Each {sc.row_label} carries a base64-encoded token; some tokens use the URL-safe alphabet "
               f"(`-` and `_`) without `=` padding. Decode them.{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, "decoded token", "sorted in byte order (one line per token)"))
        return Draft(inst, value, loop(fix), loop(""), req, wrong_differs=differs)


SKILLS = (JqTransform, SqlAggregate, SqlJoin, PythonScript, XmlPython, Base64Decode)
