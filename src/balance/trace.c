/*
 * The routing trace: its two text formats, its table and the EMA predictor
 * (include/pipesched/balance.h, docs/balance.md).
 *
 * Both formats are read in two passes over the text: the first checks every line and finds
 * the table's size, so that the bounds are checked before anything is allocated; the second
 * fills the table. The passes share one reader, so that both report a fault at the same
 * line and column.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ps_expert_trace_new(ps_expert_trace **out, const ps_allocator *alloc)
{
    if (!out)
        return PS_EINVAL;
    ps_allocator al;
    ps__alloc_init(&al, alloc);
    ps_expert_trace *t = ps__calloc(&al, 1, sizeof *t);
    if (!(*out = t))
        return PS_ENOMEM;
    t->al = al;
    t->max = PS_MAX_TRACE_TOKENS;
    return 0;
}

int ps_expert_trace_set_max(ps_expert_trace *t, double max)
{
    if (!t || !(max > 0 && max <= DBL_MAX))
        return PS_EINVAL;
    t->max = max;
    return 0;
}

void ps__trace_clear(ps_expert_trace *t)
{
    size_t n = (size_t)t->steps * (size_t)t->layers * (size_t)t->experts;
    ps__free(&t->al, t->tokens, n, sizeof *t->tokens);
    t->tokens = NULL;
    t->steps = t->layers = t->experts = 0;
}

void ps_expert_trace_free(ps_expert_trace *t)
{
    if (!t)
        return;
    ps__trace_clear(t);
    ps_allocator al = t->al;
    ps__free(&al, t, 1, sizeof *t);
}

const char *ps_expert_trace_last_error(const ps_expert_trace *t)
{
    return t ? t->err : "";
}

int ps__trace_reset(ps_expert_trace *t, int32_t steps, int32_t layers, int32_t experts)
{
    ps__trace_clear(t);
    size_t n = (size_t)steps * (size_t)layers * (size_t)experts;
    t->tokens = ps__calloc(&t->al, n, sizeof *t->tokens);
    if (!t->tokens)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory for a trace of %zu numbers", n);
    t->steps = steps;
    t->layers = layers;
    t->experts = experts;
    return 0;
}

/* ---- the reader ----------------------------------------------------------------------------- */

/* A cursor over the text: the current line [p, end) and its number. */
typedef struct reader {
    const char *text, *stop; /* the whole text */
    const char *line, *eol;  /* the current line, without its newline (and '\r') */
    const char *p;           /* the next byte of the line */
    long lineno;
    char *err;
    double max; /* the largest number accepted */
} reader;

static void reader_init(reader *r, const char *text, size_t len, char *err, double max)
{
    r->max = max;
    r->text = text;
    r->stop = text + len;
    r->line = r->eol = r->p = NULL;
    r->lineno = 0;
    r->err = err;
}

/* Moves to the next line that is neither blank nor a comment; 0 at the end of the text. */
static int next_line(reader *r)
{
    const char *at = r->line ? r->eol : r->text;
    if (r->line && at < r->stop)
        at += (*at == '\r') + 1; /* past "\n" or "\r\n" */
    while (at < r->stop) {
        const char *nl = memchr(at, '\n', (size_t)(r->stop - at));
        const char *eol = nl ? nl : r->stop;
        r->lineno++;
        r->line = r->p = at;
        r->eol = eol > at && eol[-1] == '\r' ? eol - 1 : eol;
        while (r->p < r->eol && (*r->p == ' ' || *r->p == '\t'))
            r->p++;
        if (r->p < r->eol && *r->p != '#')
            return 1;
        at = nl ? nl + 1 : r->stop;
        r->eol = at; /* a blank last line: the next call starts past it */
    }
    return 0;
}

static int col(const reader *r, const char *at)
{
    return (int)(at - r->line) + 1;
}

static int fail(reader *r, const char *at, int code, const char *what)
{
    return ps__seterr(r->err, code, "line %ld, column %d: %s", r->lineno, col(r, at), what);
}

/* The next field of the line into [*start, *start + *n): fields are separated by a comma
 * (and, when blanks is set, by blanks), with blanks around them ignored. Returns 1 for a
 * field, 0 at the end of the line, -1 (message set) for an empty field. */
static int next_field(reader *r, int blanks, const char **start, size_t *n)
{
    const char *p = r->p;
    while (p < r->eol && (*p == ' ' || *p == '\t'))
        p++;
    if (p == r->eol) {
        r->p = p;
        return 0;
    }
    const char *f = p;
    while (p < r->eol && *p != ',' && *p != ' ' && *p != '\t')
        p++;
    if (p == f)
        return fail(r, f, PS_EPARSE, "an empty field"), -1;
    *start = f;
    *n = (size_t)(p - f);
    while (p < r->eol && (*p == ' ' || *p == '\t'))
        p++;
    if (p < r->eol && *p == ',') {
        p++;
        const char *q = p;
        while (q < r->eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q == r->eol || *q == ',')
            return fail(r, q, PS_EPARSE, "an empty field after a comma"), -1;
    } else if (p < r->eol && !blanks) {
        return fail(r, p, PS_EPARSE, "fields are separated by commas"), -1;
    }
    r->p = p;
    return 1;
}

/* A number of tokens: a decimal >= 0 (digits, a point, an exponent), at most r->max. */
static int parse_tokens(reader *r, const char *f, size_t n, double *out)
{
    char buf[64];
    if (*f == '-')
        return ps__seterr(r->err, PS_EPARSE,
                          "line %ld, column %d: negative tokens \"%.*s\" (tokens are counts, >= 0)",
                          r->lineno, col(r, f), (int)(n < 40 ? n : 40), f);
    if (n >= sizeof buf)
        goto bad;
    memcpy(buf, f, n);
    buf[n] = 0;
    if (strspn(buf, "0123456789.eE+-") < n)
        goto bad;
    char *end;
    *out = strtod(buf, &end);
    if (end == buf + n && isfinite(*out) && *out >= 0 && *out > r->max)
        return ps__seterr(r->err, PS_ERANGE,
                          "line %ld, column %d: tokens %.*s is beyond the limit %g", r->lineno,
                          col(r, f), (int)(n < 40 ? n : 40), f, r->max);
    if (end == buf + n && isfinite(*out) && *out >= 0)
        return 0;
bad:
    return ps__seterr(r->err, PS_EPARSE,
                      "line %ld, column %d: \"%.*s\" is not a number of tokens (a decimal >= 0)",
                      r->lineno, col(r, f), (int)(n < 40 ? n : 40), f);
}

/* An index: digits only, below limit. */
static int parse_index(reader *r, const char *f, size_t n, const char *what, long limit,
                       int32_t *out)
{
    long v = 0;
    size_t i = 0;
    for (; i < n && isdigit((unsigned char)f[i]) && v < limit; i++)
        v = v * 10 + (f[i] - '0');
    if (i == n && n > 0 && v < limit) {
        *out = (int32_t)v;
        return 0;
    }
    if (i == n && n > 0)
        return ps__seterr(r->err, PS_ERANGE, "line %ld, column %d: %s %.*s is beyond the limit %ld",
                          r->lineno, col(r, f), what, (int)(n < 40 ? n : 40), f, limit - 1);
    return ps__seterr(r->err, PS_EPARSE,
                      "line %ld, column %d: %s \"%.*s\" is not an index (an integer >= 0)",
                      r->lineno, col(r, f), what, (int)(n < 40 ? n : 40), f);
}

/* ---- the CSV trace -------------------------------------------------------------------------- */

static const char *const csv_fields[4] = {"step", "layer", "expert", "tokens"};

/* Whether the current line is the header (the four names, case-insensitive). */
static int is_header(reader *r)
{
    reader save = *r;
    const char *f;
    size_t n;
    int i = 0;
    for (; i < 4; i++)
        if (next_field(r, 0, &f, &n) != 1 || n != strlen(csv_fields[i]) ||
            strncasecmp(f, csv_fields[i], n))
            break;
    int header = i == 4 && next_field(r, 0, &f, &n) == 0;
    *r = save;
    r->err[0] = 0;
    return header;
}

/* One pass over the rows after the header. Without t->tokens, checks them and finds the
 * size into dims[3]; with it, fills the table (cells start at -1 to find repeated rows). */
static int csv_pass(ps_expert_trace *t, reader *r, int32_t dims[3])
{
    static const long limits[3] = {PS_MAX_TRACE_STEPS, PS_MAX_MOE_LAYERS, PS_MAX_EXPERTS};
    while (next_line(r)) {
        int32_t idx[3];
        double tokens = 0;
        const char *f = r->p;
        size_t n;
        for (int i = 0; i < 4; i++) {
            const char *at = r->p;
            int got = next_field(r, 0, &f, &n);
            if (got < 0)
                return PS_EPARSE;
            if (!got)
                return ps__seterr(r->err, PS_EPARSE,
                                  "line %ld, column %d: a ragged row: %d fields, expected 4 "
                                  "(step,layer,expert,tokens)",
                                  r->lineno, col(r, at), i);
            int rc = i < 3 ? parse_index(r, f, n, csv_fields[i], limits[i], &idx[i])
                           : parse_tokens(r, f, n, &tokens);
            if (rc)
                return rc;
        }
        if (next_field(r, 0, &f, &n) != 0)
            return fail(r, f, PS_EPARSE,
                        "a ragged row: more than 4 fields (step,layer,expert,tokens)");
        if (!t->tokens) {
            for (int i = 0; i < 3; i++)
                if (idx[i] >= dims[i])
                    dims[i] = idx[i] + 1;
            continue;
        }
        double *cell =
            &t->tokens[((size_t)idx[0] * (size_t)t->layers + (size_t)idx[1]) * (size_t)t->experts +
                       (size_t)idx[2]];
        if (*cell >= 0)
            return ps__seterr(r->err, PS_EPARSE,
                              "line %ld: step %d, layer %d, expert %d is given a second time",
                              r->lineno, idx[0], idx[1], idx[2]);
        *cell = tokens;
    }
    return 0;
}

static int check_cells(ps_expert_trace *t, long line, int32_t steps, int32_t layers,
                       int32_t experts)
{
    double cells = (double)steps * layers * experts;
    if (cells > (double)PS_MAX_TRACE_CELLS)
        return ps__seterr(t->err, PS_ERANGE,
                          "line %ld: a trace of %d steps x %d layers x %d experts is beyond the "
                          "limit of %ld numbers",
                          line, steps, layers, experts, (long)PS_MAX_TRACE_CELLS);
    return 0;
}

static int load_csv(ps_expert_trace *t, const reader *start)
{
    reader r = *start;
    int32_t dims[3] = {0, 0, 0};
    int rc = csv_pass(t, &r, dims);
    if (rc)
        return rc;
    if (!dims[0])
        return ps__seterr(t->err, PS_EPARSE, "line %ld: no rows after the header",
                          start->lineno + 1);
    if ((rc = check_cells(t, r.lineno, dims[0], dims[1], dims[2])) ||
        (rc = ps__trace_reset(t, dims[0], dims[1], dims[2])))
        return rc;
    size_t n = (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2];
    for (size_t i = 0; i < n; i++)
        t->tokens[i] = -1;
    r = *start;
    if ((rc = csv_pass(t, &r, dims)))
        return rc;
    for (size_t i = 0; i < n; i++) /* a row not given: no tokens */
        if (t->tokens[i] < 0)
            t->tokens[i] = 0;
    return 0;
}

/* ---- the per-layer lines -------------------------------------------------------------------- */

/* One pass: without t->tokens, counts the layers and checks that every line has as many
 * numbers as the first; with it, fills the table. */
static int lines_pass(ps_expert_trace *t, reader *r, int32_t *layers, int32_t *experts)
{
    long first = r->lineno;
    int32_t l = 0;
    do {
        int32_t e = 0;
        const char *f;
        size_t n;
        int got;
        while ((got = next_field(r, 1, &f, &n)) > 0) {
            double v;
            int rc = parse_tokens(r, f, n, &v);
            if (rc)
                return rc;
            if (e >= PS_MAX_EXPERTS)
                return fail(r, f, PS_ERANGE, "more experts than the limit of 65536");
            if (t->tokens && e < t->experts)
                t->tokens[(size_t)l * (size_t)t->experts + (size_t)e] = v;
            e++;
        }
        if (got < 0)
            return PS_EPARSE;
        if (l == 0 && !t->tokens)
            *experts = e;
        else if (e != *experts)
            return ps__seterr(r->err, PS_EPARSE,
                              "line %ld: a ragged trace: %d experts, but line %ld has %d",
                              r->lineno, e, first, *experts);
        if (++l > PS_MAX_MOE_LAYERS)
            return ps__seterr(r->err, PS_ERANGE, "line %ld: more layers than the limit of %d",
                              r->lineno, PS_MAX_MOE_LAYERS);
    } while (next_line(r));
    *layers = l;
    return 0;
}

static int load_lines(ps_expert_trace *t, const reader *start)
{
    reader r = *start;
    int32_t layers = 0, experts = 0;
    int rc = lines_pass(t, &r, &layers, &experts);
    if (rc || (rc = check_cells(t, r.lineno, 1, layers, experts)) ||
        (rc = ps__trace_reset(t, 1, layers, experts)))
        return rc;
    r = *start;
    return lines_pass(t, &r, &layers, &experts);
}

int ps_expert_trace_load(ps_expert_trace *t, const char *text, size_t len)
{
    if (!t || !text)
        return PS_EINVAL;
    ps__trace_clear(t);
    t->err[0] = 0;
    reader r;
    reader_init(&r, text, len, t->err, t->max);
    int rc;
    if (!next_line(&r))
        rc = ps__seterr(t->err, PS_EPARSE,
                        "line %ld: no data: expected the header step,layer,expert,tokens or one "
                        "line of per-expert tokens per layer",
                        r.lineno + 1);
    else if (is_header(&r))
        rc = load_csv(t, &r);
    else
        rc = load_lines(t, &r);
    if (rc)
        ps__trace_clear(t);
    return rc;
}

/* ---- reading it back ------------------------------------------------------------------------ */

int ps_expert_trace_shape(const ps_expert_trace *t, int32_t *steps, int32_t *layers,
                          int32_t *experts)
{
    if (!t)
        return PS_EINVAL;
    if (steps)
        *steps = t->steps;
    if (layers)
        *layers = t->layers;
    if (experts)
        *experts = t->experts;
    return t->tokens ? 0 : PS_ESTATE;
}

double ps_expert_trace_tokens(const ps_expert_trace *t, int32_t s, int32_t l, int32_t e)
{
    if (!t || !t->tokens || s < 0 || s >= t->steps || l < 0 || l >= t->layers || e < 0 ||
        e >= t->experts)
        return -1;
    return t->tokens[((size_t)s * (size_t)t->layers + (size_t)l) * (size_t)t->experts + (size_t)e];
}

int ps_expert_trace_predict(const ps_expert_trace *t, double theta, double *out)
{
    if (!t || !out)
        return PS_EINVAL;
    if (!(theta >= 0 && theta < 1))
        return PS_ERANGE;
    if (!t->tokens)
        return PS_ESTATE;
    size_t cells = (size_t)t->layers * (size_t)t->experts;
    memcpy(out, t->tokens, cells * sizeof *out); /* P_1 = EL_0 */
    for (int32_t s = 1; s < t->steps; s++) {
        const double *el = t->tokens + (size_t)s * cells;
        for (size_t i = 0; i < cells; i++)
            out[i] = theta * out[i] + (1 - theta) * el[i];
    }
    return 0;
}
