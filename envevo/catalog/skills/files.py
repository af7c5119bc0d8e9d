"""File skills: find predicates, permission repair, checksum verification, tar restore, xargs batches, openssl."""

from __future__ import annotations

import hashlib

from envevo.catalog import _fixtures as F
from envevo.catalog._kinds import describe_input
from envevo.catalog._rows import day, days_between
from envevo.catalog.skills._base import (
    Draft,
    Skill,
    can_drop,
    enough,
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


def _in_scope_sh(io) -> str:
    return "true" if io.first else f'grep -qx "$k" {io.keys}'


class FindPredicates(Skill):
    id = "find_predicates"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        src = sc.files(inst)
        size = {k: len(t.encode()) for k, t in src.texts.items()}
        scope = sorted(k for k in size if io.in_scope(k))
        cands = sorted({size[k] for k in scope})
        need(bool(cands))
        n = rng.choice(cands[:-1]) if len(cands) > 1 and can_drop(io) else cands[0] - 1
        value = sorted(k for k in scope if size[k] > n)
        need(enough(len(value), io, strict))
        blocks = sorted(k for k in scope if -(-size[k] // 512) > n)
        differs = blocks != value
        soft(differs, strict)
        cmd = lambda pred: (f"find {src.root} -type f -name '{src.glob}' {pred} -printf '%P\\n' | sed '{src.key_sed}' "
                            f"| sort -u{restrict_grep(io)} > {io.out_path}")
        req = (f"{sc.where} Find the {sc.entity} files (`{src.glob}` under `{src.root}`) that are larger than {n} bytes."
               f"{scope_phrase(sc, io)} " + keys_line(f"the {sc.entity} names", io.out_path))
        return Draft(inst, value, cmd(f"-size +{n}c"), cmd(f"-size +{n}"), req, wrong_differs=differs)


class PermissionRepair(Skill):
    id = "permission_repair"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        src = sc.perm(inst)
        mode = f"{src.mode:o}"
        value = sorted(k for k, m in src.modes.items() if io.in_scope(k) and m != src.mode)
        need(enough(len(value), io, strict))
        oracle = (f"find {src.root} -type f -name '{src.glob}' ! -perm {mode} -printf '%P\\n' | while IFS= read -r p; do\n"
                  f"  k=$(printf '%s\\n' \"$p\" | sed '{src.key_sed}')\n"
                  f"  if {_in_scope_sh(io)}; then chmod {mode} \"{src.root}/$p\"; echo \"$k\"; fi\n"
                  f"done | sort -u > {io.out_path}")
        wrong = (f"find {src.root} -type f -name '{src.glob}' ! -perm {mode} -printf '%P\\n' | sed '{src.key_sed}' "
                 f"| sort -u{restrict_grep(io)} > {io.out_path}\nchmod -R {mode} {src.root}")
        checks = [{"check": "mode", "path": f"{src.root}/{rel}",
                   "expected": src.mode if (io.in_scope(k)) else src.modes[k]} for k, rel in sorted(src.files.items())]
        checks.append({"check": "mode", "path": src.root, "expected": 0o755})
        only = "" if io.first else (f" Only fix the {plural(sc.entity)} among {describe_input(io.in_kind, io.in_path)}; leave every "
                                    "other file as it is.")
        req = (f"{sc.where} Every {src.what} `{src.glob}` in `{src.root}` must have mode {src.mode:04o}. Fix the modes that "
               f"differ, without changing anything else (directories keep their modes).{only} Then w"
               + keys_line(f"the {sc.entity} names whose mode you changed", io.out_path)[1:])
        return Draft(inst, value, oracle, wrong, req, checks=checks, produces=[src.root])


class ChecksumVerify(Skill):
    id = "checksum_verify"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        src = sc.files(inst)
        keys = sorted(src.files)
        scope = [k for k in keys if io.in_scope(k)]
        need(bool(scope))
        inside = can_drop(io)  # the missing file is only a trap when it is in scope; tiny inputs stay whole
        missing = rng.choice(scope if inside else [k for k in keys if k not in scope] or scope)
        rest = [k for k in scope if k != missing]
        need(bool(rest))
        tampered = set(rng.sample(rest, rng.randint(1, len(rest)) if inside else len(rest)))
        tampered |= {k for k in keys if k not in scope and k != missing and rng.random() < 0.4}
        value = sorted(k for k in tampered if io.in_scope(k))
        need(enough(len(value), io, strict))
        soft(inside and (len(value) < len(rest) or not can_drop(io)), strict)
        manifest = "".join(f"{hashlib.sha256(src.texts[k].encode()).hexdigest()}  {src.files[k]}\n"
                           for k in sorted(keys, key=lambda k: src.files[k]))
        tail = f" | sed '{src.key_sed}' | sort -u{restrict_grep(io)} > {io.out_path}"
        head = f"cd {src.root} && sha256sum -c SHA256SUMS 2>/dev/null"
        req = (f"{sc.where} `{src.root}/SHA256SUMS` lists the expected SHA-256 checksums of the {sc.entity} files (paths "
               f"relative to `{src.root}`). Find the {plural(sc.entity)} whose file exists but does not match its checksum (listed "
               f"files that are missing do not count).{scope_phrase(sc, io)} " + keys_line(f"the {sc.entity} names", io.out_path))
        return Draft(inst, value, f"{head} | sed -n 's/: FAILED$//p'{tail}",
                     f"{head} | grep -v ': OK$' | sed 's/: FAILED.*$//'{tail}", req, wrong_differs=inside,
                     extra_ops=[F.write(f"{src.root}/SHA256SUMS", manifest)],
                     drop={f"{src.root}/{src.files[missing]}"},
                     replace={f"{src.root}/{src.files[k]}": src.texts[k] + "local change\n" for k in tampered})


class TarGzip(Skill):
    id = "tar_gzip"

    def attempt(self, sc, io, rng, strict):
        traps = [f"{k}2" for k in rng.sample(io.in_keys, min(2, len(io.in_keys))) if f"{k}2" not in io.in_keys]
        soft(bool(traps), strict)  # without a trap member the loose wildcard extracts exactly the right files
        keys = population(io, rng, traps=traps)
        if len(io.in_keys) >= 3 and rng.random() < 0.4:
            keys.remove(rng.choice(io.in_keys))  # not in the backup
        inst = sc.make(rng, keys)
        src = sc.archive(inst)
        value = sorted(k for k in src.members if k in io.in_keys)
        need(enough(len(value), io, strict))
        dest = f"/app/work/restore{io.index + 1}"
        lst = f"/tmp/members{io.index + 1}.txt"
        oracle = (f"mkdir -p {dest}\ntar -tzf {src.path} | grep -E \"{src.key_re(f'$(paste -sd\"|\" {io.keys})')}\" > {lst}\n"
                  f"tar -xzf {src.path} -C {dest} -T {lst}\nsed '{src.key_sed}' {lst} | sort -u > {io.out_path}")
        wrong = (f"mkdir -p {dest}\nwhile read -r k; do tar -xzf {src.path} -C {dest} --wildcards \"*$k*\" 2>/dev/null; done < {io.keys}\n"
                 f"(cd {dest} && find . -type f) | sed '{src.key_sed}' | sort -u > {io.out_path}")
        tree = {src.members[k]: src.texts[k] for k in value}
        req = (f"{sc.where} Restore the files of the {plural(sc.entity)} among {describe_input(io.in_kind, io.in_path)} from the "
               f"backup `{src.path}` into `{dest}/`, keeping the archive's member paths; nothing else may be extracted there. "
               "Then w" + keys_line("the names you restored", io.out_path)[1:])
        return Draft(inst, value, oracle, wrong, req, checks=[{"check": "tree", "path": dest, "expected": tree}],
                     produces=[dest], wrong_differs=bool(traps))


class XargsBatch(Skill):
    id = "xargs_batch"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        src = sc.files(inst)
        value = sorted((k, t.count("\n")) for k, t in src.texts.items() if io.in_scope(k))
        need(enough(len(value), io, strict))
        soft(len(value) >= 2, strict)
        listing = (f"find {src.root} -type f -name '{src.glob}' -printf '%P\\n' | while IFS= read -r p; do\n"
                   f"  k=$(printf '%s\\n' \"$p\" | sed '{src.key_sed}')\n"
                   f"  if {'true' if io.first else 'grep -qx \"$k\" ' + io.keys}; then printf '%s\\n' \"{src.root}/$p\"; fi\ndone")
        post = (f" | while read -r n p; do\n"
                f"  printf '%s\\t%s\\n' \"$(printf '%s\\n' \"${{p#{src.root}/}}\" | sed '{src.key_sed}')\" \"$n\"\n"
                f"done | sort > {io.out_path}")
        differs = len(value) >= 2  # wc adds a "total" line when it gets several files at once
        req = (f"{sc.where} Count the lines of each {sc.entity}'s file (`{src.glob}` under `{src.root}`).{scope_phrase(sc, io)} "
               + table_line(io.out_path, sc.entity, "line count"))
        return Draft(inst, value, f"{listing} | xargs -d '\\n' -n 1 wc -l{post}", f"{listing} | xargs wc -l{post}", req,
                     wrong_differs=differs)


class OpensslInspect(Skill):
    id = "openssl_inspect"

    def attempt(self, sc, io, rng, strict):
        inst = sc.make(rng, population(io, rng))
        rows = scoped(inst, io)
        dates = sorted({r.date for r in rows})
        need(bool(dates))
        if can_drop(io):
            need(len(dates) >= 2)
            ref = rng.choice(dates[1:-1] if len(dates) > 2 else dates[1:])  # a certificate expires exactly then
        else:
            ref = day(days_between(day(0), dates[-1]) + rng.randint(1, 30))  # tiny inputs stay whole
        value = sorted((r.key, r.date) for r in rows if r.date < ref)
        need(enough(len(value), io, strict))
        src = sc.pem(inst)
        if src.bundle:
            tmp = f"/tmp/bundle{io.index + 1}"
            split = (f"mkdir -p {tmp}\nawk -v d={tmp} '/BEGIN CERTIFICATE/ {{ n++ }} n {{ print > (d \"/\" n \".pem\") }}' {src.bundle}\n")
            glob = f"{tmp}/*.pem"
        else:
            split, glob = "", src.glob
        restrict = restrict_join(io)
        loop = lambda test: (
            f"{split}for f in {glob}; do\n"
            "  k=$(openssl x509 -in \"$f\" -noout -subject -nameopt RFC2253 | sed -E 's/.*CN=([^.,]+).*/\\1/')\n"
            "  end=$(date -ud \"$(openssl x509 -in \"$f\" -noout -enddate | cut -d= -f2)\" +%F)\n"
            f"  if {test}; then printf '%s\\t%s\\n' \"$k\" \"$end\"; fi\n"
            f"done | sort{restrict} > {io.out_path}")
        req = (f"{sc.where} Find the certificates whose expiry date (notAfter, as a UTC calendar date) is before {ref}; a "
               f"certificate's name is the first label of its subject CN.{scope_phrase(sc, io)} "
               + table_line(io.out_path, "name", "expiry date as YYYY-MM-DD"))
        return Draft(inst, value, loop(f'[[ "$end" < "{ref}" ]]'), loop(f'! [[ "$end" > "{ref}" ]]'), req,
                     wrong_differs=can_drop(io))


SKILLS = (FindPredicates, PermissionRepair, ChecksumVerify, TarGzip, XargsBatch, OpensslInspect)
