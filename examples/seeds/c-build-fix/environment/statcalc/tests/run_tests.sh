#!/bin/sh
# Runs every tests/cases/*.in through ./statcalc.
#   NAME.expected - expected standard output (exit status must be 0)
#   NAME.status   - expected non-zero exit status (standard output is ignored)
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
for input in tests/cases/*.in; do
    name=${input%.in}
    actual=$(./statcalc "$input" 2>/dev/null)
    status=$?
    if [ -f "$name.status" ]; then
        want=$(cat "$name.status")
        if [ "$status" -eq "$want" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $name: exit status $status, expected $want"
        fi
        continue
    fi
    if [ "$status" -ne 0 ]; then
        fail=$((fail + 1))
        echo "FAIL $name: exit status $status"
        continue
    fi
    if [ "$actual" = "$(cat "$name.expected")" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name:"
        printf '%s\n' "$actual" | diff "$name.expected" - | sed 's/^/    /'
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
