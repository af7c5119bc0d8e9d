/* stats.h - summary statistics over an array of doubles */
#include <stddef.h>

struct summary {
    size_t count;
    double min;
    double max;
    double mean;
    double median;
    double stddev; /* sample standard deviation (n - 1); 0 when count == 1 */
    double p95;    /* 95th percentile, nearest-rank method */
};

/* Fills *out. Returns 0 on success, -1 if n == 0 or on allocation failure. */
int summarize(const double *values, size_t n, struct summary *out);
