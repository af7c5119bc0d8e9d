#!/bin/bash
# Reference solution: fix the build (Makefile, headers, link flags), then the logic bugs
# exposed by `make test`, then produce the report with the fixed binary.
set -euo pipefail
cd /app/statcalc

# 1. Makefile: recipe indented with spaces; libm is defined as LIBS but linked as LDLIBS.
sed -i 's/^        \$(CC)/\t$(CC)/' Makefile
sed -i 's/^LIBS = -lm$/LDLIBS = -lm/' Makefile

# 2. Headers are included twice (main.c includes stats.h and parse.h): add include guards.
python3 - <<'PY'
for name, guard in (("src/stats.h", "STATCALC_STATS_H"), ("src/parse.h", "STATCALC_PARSE_H")):
    s = open(name).read()
    if guard not in s:
        lines = s.split("\n", 1)
        s = "%s\n#ifndef %s\n#define %s\n%s\n#endif /* %s */\n" % (lines[0], guard, guard, lines[1].rstrip("\n"), guard)
        open(name, "w").write(s)

# 3. Logic bugs: comparator truncates to int; median/stddev/p95 ignore the spec.
p = "src/stats.c"
s = open(p).read()
s = s.replace("""    return (int)(*(const double *)a - *(const double *)b);""",
              """    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);""")
s = s.replace("""    out->median = sorted[n / 2];""",
              """    out->median = (n % 2) ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;""")
s = s.replace("""    out->stddev = sqrt(ss / n);""",
              """    out->stddev = (n > 1) ? sqrt(ss / (double)(n - 1)) : 0.0;""")
s = s.replace("""    rank = (size_t)(0.95 * n);
    out->p95 = sorted[rank];""",
              """    rank = (95 * n + 99) / 100;          /* ceil(0.95 * n), 1-based */
    out->p95 = sorted[rank - 1];""")
open(p, "w").write(s)

# 4. Parser: skip blank/indented-comment lines, reject garbage instead of reading 0.
p = "src/parse.c"
s = open(p).read()
s = s.replace('#include <string.h>\n', '#include <ctype.h>\n#include <string.h>\n')
s = s.replace("""        lineno++;
        if (line[0] == '#')
            continue;""", """        char *start = line, *end;
        double value;

        lineno++;
        while (isspace((unsigned char)*start))
            start++;
        if (*start == '\\0' || *start == '#')
            continue;
        value = strtod(start, &end);
        if (end == start) {
            free(v);
            *out = NULL;
            return -lineno;
        }
        while (isspace((unsigned char)*end))
            end++;
        if (*end != '\\0') {
            free(v);
            *out = NULL;
            return -lineno;
        }""")
s = s.replace("""        v[n++] = atof(line);""", """        v[n++] = value;""")
open(p, "w").write(s)
PY

make clean
make
make test
./statcalc data/latency_ms.txt > report.txt
cat report.txt
