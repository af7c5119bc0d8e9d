#include <stdio.h>
#include <stdlib.h>
#include "stats.h"
#include "parse.h"

static void usage(void)
{
    fprintf(stderr, "usage: statcalc FILE   (use - for standard input)\n");
}

int main(int argc, char **argv)
{
    FILE *fp;
    double *values = NULL;
    long n;
    struct summary s;

    if (argc != 2) {
        usage();
        return 64;
    }
    fp = (argv[1][0] == '-' && argv[1][1] == '\0') ? stdin : fopen(argv[1], "r");
    if (fp == NULL) {
        perror(argv[1]);
        return 66;
    }
    n = read_values(fp, &values);
    if (fp != stdin)
        fclose(fp);
    if (n < 0) {
        fprintf(stderr, "statcalc: %s:%ld: not a number\n", argv[1], -n);
        free(values);
        return 65;
    }
    if (summarize(values, (size_t)n, &s) != 0) {
        fprintf(stderr, "statcalc: %s: no values\n", argv[1]);
        free(values);
        return 65;
    }
    printf("count=%zu\n", s.count);
    printf("min=%.3f\n", s.min);
    printf("max=%.3f\n", s.max);
    printf("mean=%.3f\n", s.mean);
    printf("median=%.3f\n", s.median);
    printf("stddev=%.3f\n", s.stddev);
    printf("p95=%.3f\n", s.p95);
    free(values);
    return 0;
}
