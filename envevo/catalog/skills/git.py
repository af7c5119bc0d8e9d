"""Git skills: log search, reading a file at a tag, and bisecting the first bad commit."""

from __future__ import annotations

from envevo.catalog._kinds import describe_input
from envevo.catalog.skills._base import (
    Draft,
    Skill,
    enough,
    floor,
    keys_line,
    need,
    plural,
    population,
    restrict_grep,
    scope_phrase,
    soft,
    table_line,
)


class GitLog(Skill):
    id = "git_log"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        hist = inst.meta["history"]
        t = rng.choice(sorted({c["type"] for c in hist}))
        value = sorted({c["keys"][0] for c in hist if c["type"] == t and io.in_scope(c["keys"][0])})
        need(enough(len(value), io, strict))
        traps = [c for c in hist if c["type"] != t and io.in_scope(c["keys"][0]) and c["keys"][0] not in value]
        soft(bool(traps), strict)
        if traps:
            rng.choice(traps)["text"] = f"follow-up to the {t} rollout"
        g = sc.git(inst)
        sed = f"sed -E 's/^{t}\\(([^)]+)\\).*/\\1/'"
        req = (f"{sc.where} Find the {plural(sc.entity)} that are the scope of at least one `{t}` commit (subject "
               f"`{t}(<{sc.entity}>): ...`).{scope_phrase(sc, io)} " + keys_line("their names", io.out_path))
        return Draft(inst, value,
                     f"git -C {g.repo} log --format=%s --grep='^{t}(' | {sed} | sort -u{restrict_grep(io)} > {io.out_path}",
                     f"git -C {g.repo} log --oneline | grep '{t}' | sed -E 's/^[0-9a-f]+ [a-z]+\\(([^)]+)\\).*/\\1/' "
                     f"| sort -u{restrict_grep(io)} > {io.out_path}", req, wrong_differs=bool(traps))


class GitShow(Skill):
    id = "git_show"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        tagged = sc.states(inst)[inst.meta["tag_after"]]
        head = {r.key: r.value for r in inst.rows}
        value = sorted((k, v) for k, v in tagged.items() if io.in_scope(k))
        need(enough(len(value), io, strict))
        differs = any(head[k] != v for k, v in value)
        soft(differs, strict)
        g = sc.git(inst)
        names = f"/tmp/names{io.index + 1}.txt"
        listing = (f"git -C {g.repo} ls-tree --name-only v1.0 {g.dir}/ | sed 's#.*/##; s/\\.{g.ext}$//' | sort > {names}\n"
                   if io.first else "")
        src = io.keys if not io.first else names
        loop = lambda read: (f"{listing}while read -r k; do\n  printf '%s\\t%s\\n' \"$k\" \"$({read} | sed -n '{g.value_sed}')\"\n"
                             f"done < {src} > {io.out_path}")
        req = (f"{sc.where} Report the {sc.value_label} each {sc.entity} had in the tagged release `v1.0`.{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, f"{sc.value_label} at v1.0"))
        return Draft(inst, value, loop(f"git -C {g.repo} show v1.0:{g.dir}/$k.{g.ext}"), loop(f"cat {g.repo}/{g.dir}/$k.{g.ext}"),
                     req, wrong_differs=differs)


class GitBisect(Skill):
    id = "git_bisect"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        hist, states = inst.meta["history"], sc.states(inst)
        peak = [max(v for k, v in s.items() if io.in_scope(k)) for s in states]
        rises = [b for b in range(2, len(states)) if peak[b] > peak[b - 1]]
        need(bool(rises))
        b = rng.choice(rises)
        t = peak[b - 1]
        value = sorted(hist[b - 1]["keys"])
        soft(len(value) >= min(2, floor(io)), strict)
        wrong = sorted(hist[b - 2]["keys"])
        differs = wrong != value
        soft(differs, strict)
        g = sc.git(inst)
        check = f"/tmp/check{io.index + 1}.sh"
        files = f"$(sed 's#.*#{g.dir}/&.{g.ext}#' {io.keys})" if not io.first else f"{g.dir}/*.{g.ext}"
        script = (f"cat > {check} <<'SH'\n#!/bin/sh\n# bad (exit 1) once a setting exceeds {t}\n"
                  f"for f in {files}; do\n  [ -f \"$f\" ] || continue\n"
                  f"  v=$(sed -n '{g.value_sed}' \"$f\")\n  if [ \"$v\" -gt {t} ]; then exit 1; fi\ndone\nexit 0\nSH\n")
        run = (f"cd {g.repo}\ngit bisect start HEAD $(git rev-list --max-parents=0 HEAD) >/dev/null\n"
               f"git bisect run sh {check} >/dev/null\nbad=$(git rev-parse refs/bisect/bad)\ngit bisect reset >/dev/null\n")
        show = lambda rev: f"git show --name-only --format= {rev} | sed 's#.*/##; s/\\.{g.ext}$//' | sort -u > {io.out_path}"
        who = (f"the {plural(sc.entity)}" if io.first else
               f"the {plural(sc.entity)} among {describe_input(io.in_kind, io.in_path)}")
        req = (f"{sc.where} Consider {who}: at some commit the {sc.value_label} of one of them first rose above {t} (before "
               f"that commit none of them exceeded {t}). Find that first commit, and leave the repository checked out on "
               "`main`. " + keys_line(f"the names of the {plural(sc.entity)} whose files that commit changed", io.out_path))
        checks = [{"check": "text", "path": f"{g.repo}/.git/HEAD", "expected": "ref: refs/heads/main\n"}]
        return Draft(inst, value, script + run + show('"$bad"'), script + run + show('"$bad^"'), req,
                     wrong_differs=differs, checks=checks)


SKILLS = (GitLog, GitShow, GitBisect)
