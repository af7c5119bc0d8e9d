#!/bin/bash
# Reference solution: find the lost commits with fsck, rebuild the branch, re-apply the
# dropped stash on top of it, resolve the conflict, run the tests, commit.
set -euo pipefail
cd /app/ratelimiter
export GIT_AUTHOR_NAME="Priya Raman" GIT_AUTHOR_EMAIL="priya.raman@example.com"
export GIT_COMMITTER_NAME="Priya Raman" GIT_COMMITTER_EMAIL="priya.raman@example.com"

tip=""; stash=""
for c in $(git fsck --no-reflogs --dangling 2>/dev/null | awk '$2 == "commit" {print $3}'); do
  subject=$(git log -1 --format=%s "$c")
  echo "dangling $c: $subject"
  case "$subject" in
    *"support burst capacity"*) tip=$c ;;
    "On main: rate parser"*) stash=$c ;;
  esac
done
test -n "$tip" && test -n "$stash"
# sanity: the tip must be the third commit of the branch that added TokenBucket
git log --format='%h %an %s' main.."$tip"

git branch feature/token-bucket "$tip"
git checkout -q feature/token-bucket
git stash apply "$stash" || true   # conflicts in ratelimiter/config.py

# Resolution: keep the stash's new parse_rate() and the branch's burst helpers.
python3 - <<'PY'
import re
p = "ratelimiter/config.py"
s = open(p).read()
def resolve(m):
    ours, theirs = m.group(1), m.group(2)
    burst = ours[ours.index("DEFAULT_BURST"):]
    return theirs.rstrip("\n") + "\n\n\n" + burst
s = re.sub(r"<<<<<<< [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n", resolve, s, flags=re.S)
assert "<<<<<<<" not in s and ">>>>>>>" not in s
open(p, "w").write(s)
PY
git add ratelimiter/config.py tests/test_window.py
python3 -m unittest discover -s tests -t .
git commit -q -m "Apply recovered rate parser fix"
find . -name __pycache__ -prune -exec rm -rf {} +
printf 'branch_tip=%s\nstash=%s\n' "$tip" "$stash" > /app/recovered_shas.txt
git log --oneline -5
