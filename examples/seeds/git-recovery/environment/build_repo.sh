#!/bin/bash
# Builds /app/ratelimiter with a reproducible history, then "loses" work the way a
# careless cleanup would: branches deleted, stashes dropped, reflogs expired, no gc.
set -euo pipefail
REPO=/app/ratelimiter
rm -rf "$REPO"; mkdir -p "$REPO"; cd "$REPO"
export GIT_CONFIG_NOSYSTEM=1 HOME=/tmp/gitbuild-home
mkdir -p "$HOME"
git init -q -b main .
git config core.autocrlf false

T=1709280000   # 2024-03-01T08:00:00Z
commit() {  # commit <author> <message>
  T=$((T + 3600 * 7 + 1234))
  export GIT_AUTHOR_NAME="$1" GIT_COMMITTER_NAME="$1"
  export GIT_AUTHOR_EMAIL="$(echo "$1" | tr 'A-Z ' 'a-z.')@example.com" GIT_COMMITTER_EMAIL="$(echo "$1" | tr 'A-Z ' 'a-z.')@example.com"
  export GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000"
  git add -A
  git commit -q -m "$2"
}

# ---------------------------------------------------------------- main history
mkdir -p ratelimiter tests
cat > .gitignore <<'EOF'
__pycache__/
*.pyc
EOF
cat > README.md <<'EOF'
# ratelimiter

Small in-process rate limiters used by the API gateway.

Run the tests with `python3 -m unittest discover -s tests -t .`
EOF
cat > ratelimiter/__init__.py <<'EOF'
from .config import parse_rate
from .window import FixedWindow

__all__ = ["FixedWindow", "parse_rate"]
EOF
cat > ratelimiter/config.py <<'EOF'
"""Configuration helpers."""

DEFAULT_RATE = "10/s"


def parse_rate(spec):
    """Parse a rate such as "10/s" into requests per second (float)."""
    count, unit = spec.split("/")
    if unit != "s":
        raise ValueError("unsupported rate unit: %r" % unit)
    return float(count)
EOF
cat > ratelimiter/window.py <<'EOF'
"""Fixed-window counter."""


class FixedWindow:
    def __init__(self, limit, window_seconds, clock):
        self.limit = limit
        self.window = window_seconds
        self.clock = clock
        self._start = None
        self._count = 0

    def allow(self):
        now = self.clock()
        if self._start is None or now - self._start >= self.window:
            self._start = now
            self._count = 0
        if self._count < self.limit:
            self._count += 1
            return True
        return False
EOF
cat > tests/__init__.py <<'EOF'
EOF
cat > tests/test_window.py <<'EOF'
import unittest

from ratelimiter import FixedWindow, parse_rate


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class FixedWindowTest(unittest.TestCase):
    def test_limit_and_reset(self):
        clock = FakeClock()
        w = FixedWindow(3, 1.0, clock)
        self.assertEqual([w.allow() for _ in range(4)], [True, True, True, False])
        clock.t = 1.0
        self.assertTrue(w.allow())

    def test_parse_rate_seconds(self):
        self.assertEqual(parse_rate("10/s"), 10.0)


if __name__ == "__main__":
    unittest.main()
EOF
commit "Marta Kowalczyk" "Initial fixed-window limiter"

sed -i 's/^Small in-process rate limiters used by the API gateway./Small in-process rate limiters used by the API gateway.\nAll limiters take an injectable clock so they can be tested deterministically./' README.md
commit "Marta Kowalczyk" "README: mention injectable clocks"

cat >> ratelimiter/window.py <<'EOF'

    def remaining(self):
        """Requests still allowed in the current window."""
        return max(0, self.limit - self._count)
EOF
cat >> tests/test_window.py.new <<'EOF'
EOF
rm tests/test_window.py.new
python3 - <<'EOF'
p = "tests/test_window.py"
s = open(p).read()
s = s.replace('''    def test_parse_rate_seconds(self):''', '''    def test_remaining(self):
        w = FixedWindow(2, 1.0, FakeClock())
        w.allow()
        self.assertEqual(w.remaining(), 1)

    def test_parse_rate_seconds(self):''')
open(p, "w").write(s)
EOF
commit "Jonas Weber" "FixedWindow: add remaining()"
BASE_FOR_FEATURE=$(git rev-parse HEAD)

# -------------------------------------- an abandoned experiment (red herring)
git checkout -q -b experiment/leaky-bucket
cat > ratelimiter/leaky.py <<'EOF'
"""Leaky bucket (experiment, do not use)."""


class LeakyBucket:
    def __init__(self, rate, capacity, clock):
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self.level = 0.0
        self.last = clock()

    def allow(self):
        now = self.clock()
        self.level = max(0.0, self.level - (now - self.last) * self.rate)
        self.last = now
        if self.level + 1 <= self.capacity:
            self.level += 1
            return True
        return False
EOF
commit "Jonas Weber" "WIP: leaky bucket experiment"
git checkout -q main

# ---------------------------------------------- more main history
cat > CHANGELOG.md <<'EOF'
# Changelog

## 0.2.0
- FixedWindow.remaining()

## 0.1.0
- FixedWindow limiter
EOF
commit "Marta Kowalczyk" "Add changelog"

# ------------------------------------ an old, irrelevant stash (red herring)
sed -i 's/^DEFAULT_RATE = "10\/s"/DEFAULT_RATE = "1000\/s"  # TEMP: load test, do not commit/' ratelimiter/config.py
T=$((T + 1800)); export GIT_COMMITTER_DATE="@$T +0000" GIT_AUTHOR_DATE="@$T +0000"
git stash push -q -m "load test settings"

# ------------------------------------------ the feature branch (will be lost)
git checkout -q -b feature/token-bucket
cat > ratelimiter/bucket.py <<'EOF'
"""Token bucket limiter."""


class TokenBucket:
    """Refills `rate` tokens per second up to `capacity`; each request takes one token."""

    def __init__(self, rate, capacity, clock):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self.clock = clock
        self.tokens = self.capacity
        self.last = clock()

    def _refill(self):
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now

    def allow(self, cost=1.0):
        self._refill()
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False
EOF
cat > ratelimiter/__init__.py <<'EOF'
from .bucket import TokenBucket
from .config import parse_rate
from .window import FixedWindow

__all__ = ["FixedWindow", "TokenBucket", "parse_rate"]
EOF
commit "Priya Raman" "Add TokenBucket limiter"

cat > tests/test_bucket.py <<'EOF'
import unittest

from ratelimiter import TokenBucket


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class TokenBucketTest(unittest.TestCase):
    def test_starts_full_and_drains(self):
        clock = FakeClock()
        b = TokenBucket(rate=1, capacity=3, clock=clock)
        self.assertEqual([b.allow() for _ in range(4)], [True, True, True, False])

    def test_refills_over_time(self):
        clock = FakeClock()
        b = TokenBucket(rate=2, capacity=2, clock=clock)
        b.allow(); b.allow()
        self.assertFalse(b.allow())
        clock.t = 0.5
        self.assertTrue(b.allow())
        self.assertFalse(b.allow())

    def test_rejects_bad_parameters(self):
        with self.assertRaises(ValueError):
            TokenBucket(rate=0, capacity=1, clock=FakeClock())


if __name__ == "__main__":
    unittest.main()
EOF
commit "Priya Raman" "TokenBucket: unit tests"

python3 - <<'EOF'
p = "ratelimiter/bucket.py"
s = open(p).read()
s = s.replace('''    def __init__(self, rate, capacity, clock):
        if rate <= 0 or capacity <= 0:''', '''    @classmethod
    def from_config(cls, rate_spec, burst, clock):
        """Build a bucket from a rate string ("600/min") and a burst size."""
        from .config import parse_rate
        return cls(parse_rate(rate_spec), burst, clock)

    def __init__(self, rate, capacity, clock):
        if rate <= 0 or capacity <= 0:''')
open(p, "w").write(s)
p = "ratelimiter/config.py"
s = open(p).read()
s += '''

DEFAULT_BURST = 20


def parse_burst(value):
    """Burst sizes must be positive integers."""
    burst = int(value)
    if burst <= 0:
        raise ValueError("burst must be positive")
    return burst
'''
open(p, "w").write(s)
p = "tests/test_bucket.py"
s = open(p).read()
s = s.replace('''

if __name__''', '''
    def test_from_config_with_burst(self):
        clock = FakeClock()
        b = TokenBucket.from_config("600/min", 5, clock)
        self.assertEqual(b.rate, 10.0)
        self.assertEqual(sum(b.allow() for _ in range(10)), 5)
        clock.t = 0.3
        self.assertEqual(sum(b.allow() for _ in range(10)), 3)

    def test_hourly_rate(self):
        b = TokenBucket.from_config("3600 / h", 1, FakeClock())
        self.assertEqual(b.rate, 1.0)


if __name__''')
open(p, "w").write(s)
EOF
commit "Priya Raman" "TokenBucket: support burst capacity via from_config"
LOST_TIP=$(git rev-parse HEAD)

# ------------------------- the rate-parser fix, stashed on main (will be lost)
git checkout -q main
python3 - <<'EOF'
p = "ratelimiter/config.py"
s = open(p).read()
s = s.replace('''def parse_rate(spec):
    """Parse a rate such as "10/s" into requests per second (float)."""
    count, unit = spec.split("/")
    if unit != "s":
        raise ValueError("unsupported rate unit: %r" % unit)
    return float(count)''', '''_UNIT_SECONDS = {
    "s": 1, "sec": 1, "second": 1,
    "m": 60, "min": 60, "minute": 60,
    "h": 3600, "hour": 3600,
}


def parse_rate(spec):
    """Parse a rate such as "10/s", "600/min" or "3600 / h" into requests per second."""
    try:
        count, unit = (part.strip() for part in spec.split("/"))
        seconds = _UNIT_SECONDS[unit.lower()]
        value = float(count)
    except (ValueError, KeyError):
        raise ValueError("invalid rate: %r" % spec) from None
    if value <= 0:
        raise ValueError("rate must be positive: %r" % spec)
    return value / seconds''')
open(p, "w").write(s)
p = "tests/test_window.py"
s = open(p).read()
s = s.replace('''        self.assertEqual(parse_rate("10/s"), 10.0)''', '''        self.assertEqual(parse_rate("10/s"), 10.0)

    def test_parse_rate_units(self):
        self.assertEqual(parse_rate("600/min"), 10.0)
        self.assertEqual(parse_rate("7200/hour"), 2.0)
        for bad in ("10", "10/fortnight", "-1/s", "x/s"):
            with self.assertRaises(ValueError):
                parse_rate(bad)''')
open(p, "w").write(s)
EOF
T=$((T + 1800)); export GIT_COMMITTER_DATE="@$T +0000" GIT_AUTHOR_DATE="@$T +0000"
export GIT_COMMITTER_NAME="Priya Raman" GIT_COMMITTER_EMAIL="priya.raman@example.com"
git stash push -q -m "rate parser: accept min/hour units"

# -------------------------------------------------------------- the "cleanup"
git branch -D -q feature/token-bucket experiment/leaky-bucket
git stash clear
git reflog expire --expire=now --all
rm -rf "$HOME"
test -z "$(git status --porcelain)"
