#include <stdlib.h>
#include <string.h>
#include "parse.h"

long read_values(FILE *fp, double **out)
{
    char line[512];
    size_t cap = 64, n = 0;
    long lineno = 0;
    double *v = malloc(cap * sizeof *v);

    if (v == NULL)
        return 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        lineno++;
        if (line[0] == '#')
            continue;
        if (n == cap) {
            double *bigger = realloc(v, 2 * cap * sizeof *v);
            if (bigger == NULL) {
                free(v);
                return 0;
            }
            v = bigger;
            cap *= 2;
        }
        v[n++] = atof(line);
    }
    *out = v;
    return (long)n;
}
