/*
 * Small helpers of the CLI: whole-file reading with a size limit, strict integer parsing,
 * output through a FILE*, and the exit-status policy.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *cli_num(double v, char *buf)
{
    if (!isfinite(v))
        return strcpy(buf, "null");
    if (v == 0)
        v = 0; /* no "-0" */
    /* %.15g always reads back for a value that came from 15 or fewer digits (0.1, 330.8) and
     * prints no float noise for it; values that need more get 16, then 17, which always reads
     * back. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, CLI_NUM_SIZE, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

int cli_read_file(const char *path, size_t limit, char **data, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    *data = NULL;
    *len = 0;
    if (!f) {
        fprintf(stderr, "pipesched: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap > limit)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    int err = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "pipesched: out of memory reading %s\n", path);
        return -1;
    }
    if (err) {
        fprintf(stderr, "pipesched: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    if (n > limit) {
        fprintf(stderr, "pipesched: %s is larger than the limit of %zu bytes\n", path, limit);
        free(buf);
        return -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

int cli_parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno) {
        fprintf(stderr, "pipesched: %s needs an integer; got \"%s\"\n", opt, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "pipesched: %s must be in [%lld, %lld]; got %lld\n", opt, lo, hi, v);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_write_file(void *ud, const char *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ud) == len ? 0 : -1;
}

int cli_exit_code(int rc)
{
    switch (rc) {
    case 0:
        return EXIT_OK;
    case PS_EINVALID:
    case PS_EDEADLOCK:
        return EXIT_INVALID;
    case PS_ENOMEM:
    case PS_EIO:
    case PS_ESTATE:
    case PS_ECANCELED:
    case PS_ESTALL:
    case PS_EHOST:
    case PS_ESYS:
    case PS_EINTERNAL:
        return EXIT_INTERNAL;
    default:
        return EXIT_USAGE;
    }
}
