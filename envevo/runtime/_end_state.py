"""A solution's end state, fingerprinted inside its container (the mutation verifier's equivalence check).

An oracle trial with `TrialSpec.fingerprint` lists the container's file system before solve.sh and again after it,
and writes `/logs/agent/end-state.txt`: one record per path whose type, mode or content the solution changed, so
that the host can tell a near miss whose end state equals the full solution's (an *equivalent* mutant) from one
that differs. The same two scripts run for the oracle and for every mutant of a task, so their records compare.

Left out, as no test should read them: caches and temp dirs (/tmp, /var/tmp, /var/cache, /root/.cache, every
__pycache__), the kernel's and the runtime's (/proc, /sys, /dev, /run), and Harbor's own (/logs, /solution, /tests).

The file: a header line `envevo-end-state/1`, then NUL-terminated records `TYPE MODE CONTENT PATH` (the path last,
so it may hold spaces and newlines), then the record `end`; `truncated` instead when more than MAX_ENTRIES paths
changed. TYPE is find's %y letter or `absent` (deleted); MODE the octal permission bits; CONTENT a regular file's
sha256, `l` + the sha256 of a link's target, `image` for a file whose inode, size and mtime did not change (its bytes
are the image's: the quick check of make and rsync), or `-`. A path whose type and mode are as before and whose
content is `image` (a redundant chmod, a touched directory) is no change and gets no record.
"""

from __future__ import annotations

END_STATE = "end-state.txt"  # in the trial's agent log dir
HEADER = "envevo-end-state/1"
MAX_ENTRIES = 20_000
_BEFORE = "/run/envevo-end-state.before"
_AFTER = "/run/envevo-end-state.after"
EXCLUDED = ("/proc", "/sys", "/dev", "/run", "/logs", "/tmp", "/var/tmp", "/var/cache", "/root/.cache", "/solution",
            "/tests")

_SNAP = ("snap() { find / \\( " + " -o ".join(f"-path {p}" for p in EXCLUDED) + " -o -name __pycache__ \\) -prune "
         "-o -printf '%y %m %s %T@ %i %p\\0' 2>/dev/null | LC_ALL=C sort -z; }\n")

# Before solve.sh: the listing the end state is compared with.
BEFORE_SCRIPT = "set -u\nmkdir -p /run\n" + _SNAP + f"snap > {_BEFORE}.part && mv -f {_BEFORE}.part {_BEFORE}\n"

# After solve.sh: the records, written whole or not at all (a partial file is never read as an end state).
AFTER_SCRIPT = "set -u\nexport LC_ALL=C\n" + _SNAP + f"""\
[ -f {_BEFORE} ] || exit 3
snap > {_AFTER} || exit 3
out=/logs/agent/{END_STATE}
mkdir -p /logs/agent && rm -rf "$out" "$out.part" || exit 3
declare -A old seen
while IFS= read -r -d '' rec; do old[${{rec#* * * * * }}]=$rec; done < <(comm -z -23 {_BEFORE} {_AFTER})
{{
printf '%s\\n' {HEADER}
n=0 last=end
while IFS= read -r -d '' rec; do
  p=${{rec#* * * * * }}; seen[$p]=1
  read -r y m s t i <<< "${{rec% "$p"}}"
  was=${{old[$p]-}} wy='' wm='' ws='' wt='' wi=''
  [ -z "$was" ] || read -r wy wm ws wt wi <<< "${{was% "$p"}}"
  if [ "$y" = f ]; then
    if [ "$wy" = f ] && [ "$s $t $i" = "$ws $wt $wi" ]; then c=image
    elif c=$(sha256sum < "$p" 2>/dev/null); then c=${{c%% *}}
    else c=unreadable; fi
  elif [ "$y" = l ]; then c=$(readlink -- "$p" | sha256sum); c=l${{c%% *}}
  else c=-; fi
  if [ "$wy" = "$y" ] && [ "$wm" = "$m" ] && {{ [ "$c" = image ] || [ "$c" = - ]; }}; then continue; fi
  n=$((n + 1))
  if [ $n -gt {MAX_ENTRIES} ]; then last=truncated; break; fi
  printf '%s %s %s %s\\0' "$y" "$m" "$c" "$p"
done < <(comm -z -13 {_BEFORE} {_AFTER})
if [ $last = end ]; then
  for p in "${{!old[@]}}"; do [ -n "${{seen[$p]-}}" ] || printf 'absent - - %s\\0' "$p"; done
fi
printf '%s\\0' $last
}} > "$out.part" && mv -f "$out.part" "$out"
"""
