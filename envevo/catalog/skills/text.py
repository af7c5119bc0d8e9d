"""Text skills: grep, awk, sort/uniq, sort ranking, join, comm, cut/paste/tr, wc, date, sed, diff, patch."""

from __future__ import annotations

import difflib

from envevo.catalog import _fixtures as F
from envevo.catalog._kinds import describe_input
from envevo.catalog._rows import day, days_between
from envevo.catalog.skills._base import (
    AWK_IN,
    AWK_KEYS,
    TAB,
    Draft,
    Skill,
    awk_var,
    can_drop,
    choose_group,
    enough,
    floor,
    group_totals,
    grouped_instance,
    keys_line,
    need,
    plural,
    population,
    restrict_grep,
    restrict_join,
    scope_phrase,
    scoped,
    soft,
    table_line,
)


def has_group(sc, g: str) -> str:
    if sc.entity_group and sc.per_key == (1, 1):
        return f"whose {sc.group_label} is exactly `{g}`"
    return f"with at least one {sc.row_label} whose {sc.group_label} is exactly `{g}`"


def _grep_trap(sc, io, rng, inst, g, exclusive: bool):
    """Put the group's word into the note of an in-scope row outside the group (what a loose grep catches)."""
    rows = scoped(inst, io)
    hit = {r.key for r in rows if r.group == g}
    cands = [r for r in rows if r.group != g and (not exclusive or r.key not in hit)]
    if not cands:
        return False
    rng.choice(cands).note = sc.note_with(g)
    return True


def grep_variants(src, g: str, tail: str) -> tuple[str, str]:
    """(oracle, wrong): the exact pattern for group g, and the tempting loose one, each piped into `tail`."""
    return f"{src.cmd(g)}{tail}", f"{src.cmd(g, wrong=True)}{tail}"


class RegexFilter(Skill):
    id = "regex_filter"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        rows = scoped(inst, io)
        sel = sorted({r.key for r in rows if r.group == g})
        need(enough(len(sel), io, strict))
        soft(len({r.key for r in rows}) > len(sel) or not can_drop(io), strict)
        trapped = _grep_trap(sc, io, rng, inst, g, exclusive=True)
        soft(trapped, strict)  # without a trap the loose pattern finds the same names: the checks could not tell
        src = sc.grep(inst)
        req = (f"{sc.where} Find every {sc.entity} {has_group(sc, g)}.{scope_phrase(sc, io)} "
               + keys_line("their names", io.out_path))
        return Draft(inst, sel, *grep_variants(src, g, f" | sort -u{restrict_grep(io)} > {io.out_path}"), req,
                     wrong_differs=trapped)


class WcCount(Skill):
    id = "wc_count"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        rows = scoped(inst, io)
        n = sum(r.group == g for r in rows)
        need(n >= 1)
        trapped = _grep_trap(sc, io, rng, inst, g, exclusive=False)
        soft(trapped, strict)
        src = sc.grep(inst)
        req = (f"{sc.where} Count the {plural(sc.row_label)} whose {sc.group_label} is exactly `{g}`.{scope_phrase(sc, io)} "
               f"Write the count to `{io.out_path}` as a single integer.")
        return Draft(inst, n, *grep_variants(src, g, f"{restrict_grep(io)} | wc -l > {io.out_path}"), req, wrong_differs=trapped)


class AwkAggregate(Skill):
    id = "awk_aggregate"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        rows = scoped(inst, io)
        tot = group_totals(rows, g)
        need(enough(len(tot), io, strict))
        differs = any(r.group != g for r in rows)
        soft(differs, strict)
        src = sc.awk(inst)
        head = AWK_KEYS + "\nfunction emit(k, g, v, d) { if (g == \"%s\" && %s) tot[k] += v }"
        tail = 'END { for (k in tot) printf "%s\\t%d\\n", k, tot[k] }'
        oracle = src.cmd(head % (g, AWK_IN), tail, awk_var(io)) + f" | sort > {io.out_path}"
        wrong = (src.cmd(AWK_KEYS + f"\nfunction emit(k, g, v, d) {{ if ({AWK_IN}) tot[k] += v }}", tail, awk_var(io))
                 + f" | sort > {io.out_path}")
        req = (f"{sc.where} For each {sc.entity}, add up the {sc.value_label} of its {plural(sc.row_label)} whose {sc.group_label} "
               f"is `{g}` ({plural(sc.entity)} without any such {sc.row_label} are left out).{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, "total"))
        return Draft(inst, sorted(tot.items()), oracle, wrong, req, wrong_differs=differs)


class SortUniqCount(Skill):
    id = "sort_uniq_count"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng, per_key=(2, 9))
        counts: dict[str, int] = {}
        for r in scoped(inst, io):
            if r.group == g:
                counts[r.key] = counts.get(r.key, 0) + 1
        need(enough(len(counts), io, strict))
        value = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        wrong = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        differs = wrong != value
        soft(differs, strict)
        src = sc.awk(inst)
        head = AWK_KEYS + f'\nfunction emit(k, g, v, d) {{ if (g == "{g}" && {AWK_IN}) print k }}'
        pre = src.cmd(head, "", awk_var(io)) + " | sort | uniq -c"
        post = f" | awk '{{ printf \"%s\\t%s\\n\", $2, $1 }}' > {io.out_path}"
        req = (f"{sc.where} Count, for each {sc.entity}, its {plural(sc.row_label)} whose {sc.group_label} is `{g}`.{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, "count", "highest count first, and by name (byte order) among equal counts"))
        return Draft(inst, value, pre + " | sort -k1,1nr -k2,2" + post, pre + " | sort -nr" + post, req, wrong_differs=differs)


class SortRank(Skill):
    id = "sort_rank"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        best: dict[str, int] = {}
        for r in scoped(inst, io):
            best[r.key] = max(best.get(r.key, r.value), r.value)
        n = len(best)
        k = max(min(rng.randint(3, 5), n if n <= 3 else n - 1), floor(io) if strict else 1)
        need(1 <= k <= n)
        value = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        lexi = sorted(sorted(best.items()), key=lambda kv: str(kv[1]), reverse=True)[:k]
        differs = lexi != value
        soft(differs, strict)
        src = sc.awk(inst)
        head = AWK_KEYS + f"\nfunction emit(k, g, v, d) {{ if ({AWK_IN} && (!(k in best) || v + 0 > best[k])) best[k] = v + 0 }}"
        pre = src.cmd(head, 'END { for (k in best) printf "%s\\t%d\\n", k, best[k] }', awk_var(io))
        over = f" over all its {plural(sc.row_label)}" if not sc.entity_group or sc.per_key != (1, 1) else ""
        req = (f"{sc.where} Rank the {plural(sc.entity)} by their largest {sc.value_label}{over} "
               f"and keep the top {k}.{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, sc.value_label, "highest value first, ties broken by name in byte order"))
        return Draft(inst, value, f"{pre} | sort -t{TAB} -k2,2nr -k1,1 | head -n {k} > {io.out_path}",
                     f"{pre} | sort -t{TAB} -k2,2r -k1,1 | head -n {k} > {io.out_path}", req, wrong_differs=differs)


class CoreutilsJoin(Skill):
    id = "coreutils_join"

    def attempt(self, sc, io, rng, strict):
        keys = population(io, rng)
        if len(io.in_keys) >= 3 and rng.random() < 0.5:
            keys.remove(rng.choice(io.in_keys))  # a name the lookup will not find
        inst = sc.make(rng, keys)
        right = [(r.key, r.value) for r in inst.rows]
        value = sorted((k, v) for k, v in right if k in io.in_keys)
        need(enough(len(value), io, strict))
        src = sc.awk(inst)
        emit = src.cmd('function emit(k, g, v, d) { printf "%s\\t%s\\n", k, v }', "")
        tmp = f"/tmp/right{io.index + 1}.tsv"
        req = (f"{sc.where} Look up the {sc.value_label} of every {sc.entity} among {describe_input(io.in_kind, io.in_path)}; "
               f"{plural(sc.entity)} that are not present are left out. " + table_line(io.out_path, sc.entity, sc.value_label))
        # The wrong variant skips the sort and the -t: join then misses unsorted lines and joins with spaces.
        return Draft(inst, value, f"{emit} | sort -t{TAB} -k1,1 > {tmp}\njoin -t{TAB} {io.keys} {tmp} > {io.out_path}",
                     f"{emit} > {tmp}\njoin {io.keys} {tmp} > {io.out_path}", req)


class CommCompare(Skill):
    id = "comm_compare"

    def attempt(self, sc, io, rng, strict):
        g = choose_group(sc, rng)
        inst = sc.make(rng, population(io, rng), (g, set(io.in_keys), 0.3 if can_drop(io) else 0.0))
        in_g = {r.key for r in inst.rows if r.group == g}
        value = sorted(k for k in io.in_keys if k not in in_g)
        need(enough(len(value), io, strict))
        differs = any(k in in_g for k in io.in_keys)
        soft(differs, strict)
        src = sc.awk(inst)
        tmp = f"/tmp/group{io.index + 1}.txt"
        pre = src.cmd(f'function emit(k, g, v, d) {{ if (g == "{g}") print k }}', "") + f" | sort -u > {tmp}\n"
        req = (f"{sc.where} Which {plural(sc.entity)} among {describe_input(io.in_kind, io.in_path)} have no {sc.row_label} whose "
               f"{sc.group_label} is `{g}` there? (Names that do not appear at all count as having none.) "
               + keys_line("those names", io.out_path))
        return Draft(inst, value, pre + f"comm -23 {io.keys} {tmp} > {io.out_path}", pre + f"comm -12 {io.keys} {tmp} > {io.out_path}", req,
                     wrong_differs=differs)


class CutPasteTr(Skill):
    id = "cut_paste_tr"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        value = sorted({(r.key, r.group.lower()) for r in scoped(inst, io)})
        need(enough(len({k for k, _ in value}), io, strict))
        src = sc.cut(inst)
        restrict = restrict_join(io)
        make = lambda grp: (f"paste <({src.stream} | {src.key}) <({src.stream} | {grp} | tr '[:upper:]' '[:lower:]') "
                            f"| sort -u{restrict} > {io.out_path}")
        req = (f"{sc.where} List every {sc.entity} with its {sc.group_label} converted to lower case, one line per distinct "
               f"pair.{scope_phrase(sc, io)} " + table_line(io.out_path, sc.entity, sc.group_label, "sorted in byte order"))
        return Draft(inst, value, make(src.group), make(src.wrong_group), req)


class DateArith(Skill):
    id = "date_arith"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        ref = day(180 + rng.randint(5, 60))
        last: dict[str, str] = {}
        for r in scoped(inst, io):
            last[r.key] = max(last.get(r.key, ""), r.date)
        ages = {k: days_between(d, ref) for k, d in last.items()}
        cands = sorted(set(ages.values()))
        need(bool(cands))
        n = rng.choice(cands[:-1]) if len(cands) > 2 else cands[0]
        value = sorted((k, a) for k, a in ages.items() if a >= n)
        need(enough(len(value), io, strict))
        soft(len(value) < len(ages) or not can_drop(io), strict)
        src = sc.awk(inst)
        head = AWK_KEYS + f"\nfunction emit(k, g, v, d) {{ if ({AWK_IN} && d > last[k]) last[k] = d }}"
        pre = src.cmd(head, 'END { for (k in last) print k, last[k] }', awk_var(io))
        loop = lambda op: (f"ref=$(date -ud {ref} +%s)\n{pre} | sort | while read -r k d; do\n"
                           f'  age=$(( (ref - $(date -ud "$d" +%s)) / 86400 ))\n'
                           f"  if [ \"$age\" {op} {n} ]; then printf '%s\\t%s\\n' \"$k\" \"$age\"; fi\n"
                           f"done > {io.out_path}")
        req = (f"{sc.where} Taking {ref} (UTC) as today, compute for each {sc.entity} the number of whole days since its most "
               f"recent {sc.date_label}, and keep the {plural(sc.entity)} for which that is at least {n} days.{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, "days"))
        return Draft(inst, value, loop("-ge"), loop("-gt"), req)


class SedEdit(Skill):
    id = "sed_edit"

    def attempt(self, sc, io, rng, strict):
        probe = sc.sed(None)
        traps = []
        if probe.trap is not None:
            traps = [probe.trap(k) for k in rng.sample(io.in_keys, min(2, len(io.in_keys)))]
            traps = [t for t in traps if t not in io.in_keys]
        inst = sc.make(rng, population(io, rng, traps=traps))
        for k in io.in_keys:  # a trap sits right before its look-alike: after it, a sed range would swallow its header
            if probe.trap is not None and probe.trap(k) in traps:
                trap = next(r for r in inst.rows if r.key == probe.trap(k))
                inst.rows.remove(trap)
                inst.rows.insert(next(i for i, r in enumerate(inst.rows) if r.key == k), trap)
        src = sc.sed(inst)
        new = rng.choice(src.new_groups)
        present = sorted({r.key for r in inst.rows} & set(io.in_keys))
        need(enough(len(present), io, strict))
        changes = any(r.group != new for r in inst.rows if r.key in io.in_keys)
        trapped = any(r.group != new for r in inst.rows if r.key in traps) or (probe.trap is None and changes)
        soft(changes and trapped, strict)
        edited = inst.copy()
        for r in edited.rows:
            if r.key in io.in_keys:
                r.group = new
        pre = f"{src.prelude}\n  " if src.prelude else ""
        dq = lambda x: x.replace('"', '\\"')  # the expressions go inside double quotes, so ${k} expands
        loop = lambda expr: (f": > {io.out_path}\nwhile read -r k; do\n  {pre}if grep -qE \"{dq(src.exists('${k}'))}\" {src.path}; then\n"
                             f"    sed -i -E \"{dq(expr)}\" {src.path}\n    echo \"$k\" >> {io.out_path}\n  fi\ndone < {io.keys}")
        req = (f"{sc.where} In `{src.path}`, set the {sc.group_label} of every {sc.entity} among "
               f"{describe_input(io.in_kind, io.in_path)} to `{new}`, editing the file in place and leaving every other "
               f"line byte-for-byte unchanged. Then w" + keys_line("the names you changed (those present in the file)", io.out_path)[1:])
        checks = [{"check": "text", "path": p, "expected": t} for p, t in sc.texts(edited).items()]
        return Draft(inst, present, loop(src.edit("${k}", new)), loop(src.wrong("${k}", new)), req,
                     wrong_differs=changes and trapped, checks=checks, produces=list(sc.texts(edited)))


class DiffCompare(Skill):
    id = "diff_compare"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        src = sc.text(inst)
        new = inst.copy()
        lo, hi = sc.value_range
        for r in new.rows:
            if rng.random() < (0.45 if can_drop(io) else 1.0):  # tiny inputs: every listed value changes
                step = rng.randint(1, max(1, (hi - lo) // 5))
                r.value = r.value + step if r.value - step < lo else r.value - step
        new.rows.reverse()  # the packaged version lists entries in the opposite order
        old_v = {r.key: r.value for r in inst.rows}
        value = sorted(r.key for r in new.rows if io.in_scope(r.key) and old_v.get(r.key) != r.value)
        need(enough(len(value), io, strict))
        # Reversed order: an unsorted diff can keep at most one entry as common, so with two unchanged
        # names in scope it must report one of them as changed.
        differs = sum(1 for r in new.rows if io.in_scope(r.key) and r.key not in value) >= 2
        soft(differs, strict)
        emit = 'function emit(k, g, v, d) { print k " " v }'
        a, b = sc.awk(inst, src.path).cmd(emit, ""), sc.awk(new, src.dist).cmd(emit, "")
        tail = f" | sed -n 's/^> //p' | cut -d' ' -f1 | sort -u{restrict_grep(io)} > {io.out_path}"
        req = (f"{sc.where} `{src.dist}` is a proposed new version of `{src.path}` (its entries may be in a different order). "
               f"Find the {plural(sc.entity)} whose {sc.value_label} differs between the two files or that exist only in the new one."
               f"{scope_phrase(sc, io)} " + keys_line("their names", io.out_path))
        return Draft(inst, value, f"diff <({a} | sort) <({b} | sort){tail}", f"diff <({a}) <({b}){tail}", req,
                     wrong_differs=differs, extra_ops=[F.write(src.dist, sc.texts(new)[src.path])])


class PatchApply(Skill):
    id = "patch_apply"

    def attempt(self, sc, io, rng, strict):
        g, inst = grouped_instance(sc, io, rng)
        src = sc.text(inst)
        new = inst.copy()
        for r in new.rows:
            if rng.random() < 0.35:
                r.group = rng.choice([x for x in sc.groups if x != r.group])
            if not can_drop(io) and io.in_scope(r.key):
                r.group = g  # tiny inputs stay whole: the patch moves every listed name into the group
        before = sorted({r.key for r in inst.rows if r.group == g and io.in_scope(r.key)})
        value = sorted({r.key for r in new.rows if r.group == g and io.in_scope(r.key)})
        need(enough(len(value), io, strict))
        soft(before != value, strict)
        old_text, new_text = sc.texts(inst)[src.path], sc.texts(new)[src.path]
        name = src.path.rsplit("/", 1)[1]
        diff = "".join(difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), f"a/{name}", f"b/{name}"))
        patch = f"/app/patches/{name}.patch"
        d = src.path.rsplit("/", 1)[0]
        sel = sc.awk(inst).cmd(AWK_KEYS + f'\nfunction emit(k, g, v, d) {{ if (g == "{g}" && {AWK_IN}) print k }}', "", awk_var(io))
        req = (f"{sc.where} Apply the patch `{patch}` to `{src.path}` (made in that file's directory with `a/` and `b/` "
               f"prefixes). Then find the {plural(sc.entity)} whose {sc.group_label} is `{g}` in the patched file.{scope_phrase(sc, io)} "
               + keys_line("their names", io.out_path))
        return Draft(inst, value, f"patch -p1 -d {d} < {patch}\n{sel} | sort -u > {io.out_path}",
                     f"patch --dry-run -p1 -d {d} < {patch}\n{sel} | sort -u > {io.out_path}", req,
                     extra_ops=[F.write(patch, diff)], checks=[{"check": "text", "path": src.path, "expected": new_text}],
                     produces=[src.path], wrong_differs=True)


SKILLS = (RegexFilter, WcCount, AwkAggregate, SortUniqCount, SortRank, CoreutilsJoin, CommCompare, CutPasteTr, DateArith,
          SedEdit, DiffCompare, PatchApply)
