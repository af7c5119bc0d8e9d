#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
    return (int)(*(const double *)a - *(const double *)b);
}

int summarize(const double *values, size_t n, struct summary *out)
{
    double *sorted;
    double sum = 0.0, ss = 0.0;
    size_t i, rank;

    if (n == 0)
        return -1;
    sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL)
        return -1;
    memcpy(sorted, values, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);

    for (i = 0; i < n; i++)
        sum += sorted[i];
    out->count = n;
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->mean = sum / n;
    out->median = sorted[n / 2];
    for (i = 0; i < n; i++)
        ss += (sorted[i] - out->mean) * (sorted[i] - out->mean);
    out->stddev = sqrt(ss / n);
    rank = (size_t)(0.95 * n);
    out->p95 = sorted[rank];
    free(sorted);
    return 0;
}
