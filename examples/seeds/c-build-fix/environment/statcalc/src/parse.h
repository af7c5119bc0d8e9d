/* parse.h - reading measurement files */
#include <stdio.h>
#include "stats.h"

/*
 * Reads one number per line from fp into a newly allocated array (*out).
 * Blank lines and lines whose first non-blank character is '#' are ignored;
 * surrounding whitespace (including a trailing '\r') is allowed.
 * Returns the number of values read, or -(line number) of the first line that
 * is not a valid number.
 */
long read_values(FILE *fp, double **out);
