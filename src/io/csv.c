/*
 * Loading PyTorch-style CSV schedule tables: one row per rank, one action string per cell,
 * an empty cell for an idle step. The text is walked three times instead of being copied:
 * once to parse every cell and learn the sizes (so that the limits are checked before any
 * allocation), once to count each rank's actions (so that the lists are allocated exactly),
 * and once to fill them and infer the placement.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_TEXT ((size_t)1 << 30)
#define SHOWN_CELL 60 /* bytes of a cell quoted in an error message */

/* One non-empty cell as the walker hands it to a pass. */
typedef struct cell {
    int32_t row;
    int64_t line; /* 1-based */
    size_t col;   /* 1-based column of the cell's first non-blank byte */
    const char *text;
    size_t len;
    ps_action a;
} cell;

typedef struct loader {
    ps_schedule *s;
    const char *text;
    size_t len;
    ps_csv_format fmt;
    int32_t given_m;
    int32_t rows; /* last non-blank line, so trailing blank lines do not count */
    int64_t ncompute, ncomm;
    int32_t max_stage, max_mb;
    int lowered;
    int64_t *caps, *lcaps;  /* per-rank counts of compute and of all actions */
    size_t ncaps;           /* entries of the caps block, for its free: every walk recounts
                             * rows, and one that stops early (find_cell) leaves it smaller */
    int32_t want_stage;     /* the stage find_cell() looks for */
    int32_t *mb_lo, *mb_hi; /* per micro-batch, the lowest and highest stage it runs on */
    int32_t span_m;
    int64_t found_line;
    size_t found_col;
    char err[PS__ERRLEN];
} loader;

typedef int (*cell_fn)(loader *ld, const cell *c);

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static int is_comm(int kind)
{
    return kind == PS_SEND_F || kind == PS_RECV_F || kind == PS_SEND_B || kind == PS_RECV_B;
}

/* Copies the cell, without its surrounding blanks, into out with unprintable bytes escaped. */
static void quote_cell(const char *t, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = 0;
    while (n > 0 && is_blank(t[0])) {
        t++;
        n--;
    }
    while (n > 0 && is_blank(t[n - 1]))
        n--;
    for (; i < n && i < SHOWN_CELL && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)t[i];
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch >= 0x20 && ch < 0x7f) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
    if (i < n && o + 4 <= cap)
        memcpy(out + o, "...", 4);
}

/* Writes "line L, column C: <what> in cell "..."" into the loader's message. */
static int cell_error(loader *ld, int code, int64_t line, size_t col, const char *t, size_t n,
                      const char *what)
{
    char shown[SHOWN_CELL * 4 + 8];
    quote_cell(t, n, shown, sizeof shown);
    return ps__seterr(ld->err, code, "line %lld, column %zu: %s in cell \"%s\"", (long long)line,
                      col, what, shown);
}

/*
 * Calls fn for every non-empty cell in file order. Lines end with LF or CRLF; the last one
 * may lack its newline. Parse errors stop the walk (they can only happen in the first pass,
 * since every pass reads the same text). fn returns 0 to go on, a negative code to fail or a
 * positive value to stop early.
 */
static int walk(loader *ld, cell_fn fn)
{
    const char *t = ld->text;
    size_t p = 0;
    int64_t line = 0;
    while (p < ld->len) {
        const char *nl = memchr(t + p, '\n', ld->len - p);
        size_t ls = p, le = nl ? (size_t)(nl - t) : ld->len;
        p = nl ? le + 1 : ld->len;
        line++;
        if (le > ls && t[le - 1] == '\r')
            le--;
        int blank = 1;
        for (size_t i = ls; i < le && blank; i++)
            blank = is_blank(t[i]);
        if (blank)
            continue;
        if (line > PS_MAX_PP)
            return ps__seterr(ld->err, PS_ERANGE, "line %lld: more than %d rows (ranks)",
                              (long long)line, PS_MAX_PP);
        ld->rows = (int32_t)line;
        size_t cs = ls;
        for (;;) {
            const char *comma = memchr(t + cs, ',', le - cs);
            size_t ce = comma ? (size_t)(comma - t) : le;
            cell c;
            size_t at = 0;
            const char *why = NULL;
            int rc = ps__action_parse_why(t + cs, ce - cs, &c.a, &at, &why);
            if (rc == PS_EPARSE)
                return cell_error(ld, rc, line, cs - ls + at + 1, t + cs, ce - cs, why);
            if (rc == 0) {
                size_t lead = 0;
                while (is_blank(t[cs + lead]))
                    lead++;
                c.row = (int32_t)(line - 1);
                c.line = line;
                c.col = cs - ls + lead + 1;
                c.text = t + cs;
                c.len = ce - cs;
                rc = fn(ld, &c);
                if (rc)
                    return rc;
            }
            if (!comma)
                break;
            cs = ce + 1;
        }
    }
    return 0;
}

/* Checks one stage and one micro-batch number of a cell against the limits and the given m. */
static int check_numbers(loader *ld, const cell *c, int32_t stage, int32_t mb)
{
    char what[128];
    if (stage >= PS_MAX_STAGES) {
        snprintf(what, sizeof what, "stage %d is beyond the limit of %d stages", (int)stage,
                 PS_MAX_STAGES);
        return cell_error(ld, PS_ERANGE, c->line, c->col, c->text, c->len, what);
    }
    if (mb >= PS_MAX_MICROBATCHES) {
        snprintf(what, sizeof what, "micro-batch %d is beyond the limit of %d micro-batches",
                 (int)mb, PS_MAX_MICROBATCHES);
        return cell_error(ld, PS_ERANGE, c->line, c->col, c->text, c->len, what);
    }
    if (ld->given_m > 0 && mb >= ld->given_m) {
        snprintf(what, sizeof what,
                 "micro-batch %d is out of range: -m gives %d micro-batches (0..m-1)", (int)mb,
                 (int)ld->given_m);
        return cell_error(ld, PS_EINVALID, c->line, c->col, c->text, c->len, what);
    }
    if (stage > ld->max_stage)
        ld->max_stage = stage;
    if (mb > ld->max_mb)
        ld->max_mb = mb;
    return 0;
}

/* Pass 1: sizes, limits and the format. */
static int scan_cell(loader *ld, const cell *c)
{
    int rc;
    if (is_comm(c->a.kind)) {
        if (ld->fmt == PS_CSV_COMPUTE_ONLY)
            return cell_error(ld, PS_EPARSE, c->line, c->col, c->text, c->len,
                              "communication action in a compute_only table");
        ld->ncomm++;
    } else {
        ld->ncompute++;
    }
    if (ld->ncompute + ld->ncomm > PS_MAX_ACTIONS) {
        char what[128];
        snprintf(what, sizeof what, "more actions than the limit of %lld",
                 (long long)PS_MAX_ACTIONS);
        return cell_error(ld, PS_ERANGE, c->line, c->col, c->text, c->len, what);
    }
    rc = check_numbers(ld, c, c->a.stage, c->a.mb);
    if (!rc && c->a.kind == PS_FB)
        rc = check_numbers(ld, c, c->a.bstage, c->a.bmb);
    return rc;
}

/* Pass 2: exact per-rank capacities. */
static int count_cell(loader *ld, const cell *c)
{
    if (!is_comm(c->a.kind))
        ld->caps[c->row]++;
    ld->lcaps[c->row]++;
    return 0;
}

/* Stage span of each micro-batch, for the path inference of load(). */
static void span_one(loader *ld, int32_t stage, int32_t mb)
{
    if (mb < 0 || mb >= ld->span_m)
        return;
    if (ld->mb_lo[mb] < 0 || stage < ld->mb_lo[mb])
        ld->mb_lo[mb] = stage;
    if (stage > ld->mb_hi[mb])
        ld->mb_hi[mb] = stage;
}

static int span_cell(loader *ld, const cell *c)
{
    if (is_comm(c->a.kind))
        return 0;
    span_one(ld, c->a.stage, c->a.mb);
    if (c->a.kind == PS_FB)
        span_one(ld, c->a.bstage, c->a.bmb);
    return 0;
}

/*
 * The paths of a table: one through all stages, unless the micro-batches split in two
 * groups, the first running stages 0..k only and the rest k+1..S-1 only (DualPipe's two
 * model copies). Returns the split micro-batch j (0 = one path) and stage k + 1 in *cut.
 */
static int32_t infer_paths(const loader *ld, int32_t nstages, int32_t *cut)
{
    int32_t m = ld->span_m, j = 0;
    *cut = 0;
    if (m < 2 || ld->mb_lo[0] != 0 || ld->mb_hi[0] >= nstages - 1)
        return 0;
    int32_t k = ld->mb_hi[0];
    while (j < m && ld->mb_lo[j] == 0 && ld->mb_hi[j] == k)
        j++;
    if (j == m)
        return 0;
    for (int32_t i = j; i < m; i++)
        if (ld->mb_lo[i] != k + 1 || ld->mb_hi[i] != nstages - 1)
            return 0;
    *cut = k + 1;
    return j;
}

static int find_cell(loader *ld, const cell *c)
{
    if (c->a.stage != ld->want_stage && !(c->a.kind == PS_FB && c->a.bstage == ld->want_stage))
        return 0;
    ld->found_line = c->line;
    ld->found_col = c->col;
    return 1;
}

/* Records that stage runs on the cell's rank; a stage seen on another rank is an error. */
static int place_stage(loader *ld, const cell *c, int32_t stage)
{
    ps_schedule *s = ld->s;
    char what[256];
    if (s->stage_rank[stage] < 0) {
        s->stage_rank[stage] = c->row;
        return 0;
    }
    if (s->stage_rank[stage] == c->row)
        return 0;
    /* The first occurrence is looked up again only here, so the fast path keeps no positions.
     * The walk cannot fail: the first pass already parsed the same text. */
    ld->want_stage = stage;
    ld->found_line = 0;
    ld->found_col = 0;
    walk(ld, find_cell);
    snprintf(what, sizeof what,
             "stage %d is on rank %d here but already on rank %d (line %lld, column %zu)",
             (int)stage, (int)c->row, (int)s->stage_rank[stage], (long long)ld->found_line,
             ld->found_col);
    return cell_error(ld, PS_EINVALID, c->line, c->col, c->text, c->len, what);
}

/*
 * Fills in the peer of a communication action on the single path: forward data flows from
 * stage s to s + 1, gradients from s to s - 1. An action whose peer would lie outside the
 * stages cannot be matched by any other cell.
 */
static int set_peer(loader *ld, const cell *c, ps_action *a)
{
    int32_t peer = a->kind == PS_SEND_F || a->kind == PS_RECV_B ? a->stage + 1 : a->stage - 1;
    if (peer < 0 || peer >= ld->s->nstages) {
        char what[160];
        snprintf(what, sizeof what, "%s at stage %d has no peer stage (stages 0..%d)",
                 ps_kind_name(a->kind), (int)a->stage, (int)ld->s->nstages - 1);
        return cell_error(ld, PS_EINVALID, c->line, c->col, c->text, c->len, what);
    }
    a->bstage = peer;
    a->bmb = a->mb;
    return 0;
}

/* Pass 3: placement and the action lists. */
static int fill_cell(loader *ld, const cell *c)
{
    ps_schedule *s = ld->s;
    ps_action a = c->a;
    int rc = place_stage(ld, c, a.stage);
    if (!rc && a.kind == PS_FB)
        rc = place_stage(ld, c, a.bstage);
    if (!rc && is_comm(a.kind))
        rc = set_peer(ld, c, &a);
    if (rc)
        return rc;
    if (!is_comm(a.kind))
        s->acts[s->off[c->row] + s->len[c->row]++] = a;
    if (ld->lowered)
        s->lacts[s->loff[c->row] + s->llen[c->row]++] = a;
    return 0;
}

static int oom(loader *ld)
{
    return ps__seterr(ld->err, PS_ENOMEM, "out of memory loading a CSV table of %d rows",
                      (int)ld->rows);
}

/* Allocates the lowered lists with the capacities counted in pass 2. */
static int alloc_lowered(loader *ld)
{
    ps_schedule *s = ld->s;
    size_t pp = (size_t)s->pp;
    int64_t total = 0;
    s->loff = ps__alloc(&s->al, pp + 1, sizeof *s->loff);
    s->llen = ps__calloc(&s->al, pp, sizeof *s->llen);
    if (!s->loff || !s->llen)
        return oom(ld);
    for (size_t r = 0; r < pp; r++) {
        s->loff[r] = total;
        total += ld->lcaps[r];
    }
    s->loff[pp] = total;
    s->lacts = ps__alloc(&s->al, (size_t)total, sizeof *s->lacts);
    if (!s->lacts)
        return oom(ld);
    s->lacts_cap = (size_t)total;
    return 0;
}

/*
 * The engine keeps a state per (stage, micro-batch) pair, so validating or simulating a table
 * costs memory and time in stages x micro-batches, which a sparse table can make far larger
 * than itself (one row naming stages 0..65535 and one micro-batch 7999: 513 KB of text,
 * 1.5 GB to validate). A table that validates runs a forward of every micro-batch on every
 * stage of its path (half the stages with two model copies), so it holds at least
 * stages x micro-batches / 2 compute actions; one far sparser than that cannot be a schedule
 * and is refused here, which bounds that memory by the table's size.
 */
/* Pairs any table may leave uncovered: a small one with a few missing cells still loads (its
 * validation lists them), and one stage may run up to PS_MAX_MICROBATCHES micro-batches; the
 * engine's state for them is a few tens of MB at most. */
#define DENSITY_SLACK ((int64_t)PS_MAX_MICROBATCHES)

static int check_density(loader *ld, int32_t nstages, int32_t m)
{
    int64_t pairs = (int64_t)nstages * m, limit = 4 * ld->ncompute + DENSITY_SLACK;
    if (pairs <= limit)
        return 0;
    return ps__seterr(ld->err, PS_ERANGE,
                      "%d stages x %d micro-batches = %lld pairs, but the table holds %lld compute "
                      "actions: a schedule runs a forward of every micro-batch on every stage of "
                      "its path, and the limit is 4 x compute actions + %lld = %lld pairs",
                      (int)nstages, (int)m, (long long)pairs, (long long)ld->ncompute,
                      (long long)DENSITY_SLACK, (long long)limit);
}

static int load(loader *ld)
{
    ps_schedule *s = ld->s;
    int rc = walk(ld, scan_cell);
    if (rc)
        return rc;
    if (ld->rows == 0)
        return ps__seterr(ld->err, PS_EPARSE, "the table is empty (no rows)");
    if (ld->ncompute + ld->ncomm == 0)
        return ps__seterr(ld->err, PS_EINVALID, "the table holds no actions");
    ld->lowered = ld->fmt == PS_CSV_COMPUTE_COMMS || (ld->fmt == PS_CSV_AUTO && ld->ncomm > 0);
    int32_t nstages = ld->max_stage + 1;
    int32_t m = ld->given_m > 0 ? ld->given_m : ld->max_mb + 1;
    rc = check_density(ld, nstages, m);
    if (rc)
        return rc;

    ld->caps = ps__calloc(&s->al, 2 * (size_t)ld->rows, sizeof *ld->caps);
    if (!ld->caps)
        return oom(ld);
    ld->ncaps = 2 * (size_t)ld->rows;
    ld->lcaps = ld->caps + ld->rows;
    walk(ld, count_cell);
    ld->span_m = m;
    ld->mb_lo = ps__alloc(&s->al, 2 * (size_t)m, sizeof *ld->mb_lo);
    if (!ld->mb_lo)
        return oom(ld);
    ld->mb_hi = ld->mb_lo + m;
    for (int32_t i = 0; i < m; i++)
        ld->mb_lo[i] = ld->mb_hi[i] = -1;
    walk(ld, span_cell);
    int32_t cut, split = infer_paths(ld, nstages, &cut);
    rc = ps__schedule_alloc(s, ld->rows, nstages, m, split ? 2 : 1, ld->caps, 0, nstages);
    if (rc)
        return oom(ld);
    if (ld->lowered && (rc = alloc_lowered(ld)) != 0)
        return rc;

    for (int32_t i = 0; i < nstages; i++)
        s->stage_rank[i] = -1;
    rc = walk(ld, fill_cell);
    if (rc)
        return rc;
    for (int32_t i = 0; i < nstages; i++)
        if (s->stage_rank[i] < 0)
            return ps__seterr(ld->err, PS_EINVALID,
                              "stage %d appears in no row; every stage 0..%d must be on a rank",
                              (int)i, (int)nstages - 1);

    /* A table has no family: it runs the one natural path through all stages, or two when
     * its micro-batches split over two disjoint halves of the stages (two model copies). */
    if (split) {
        for (int32_t i = 0; i < nstages; i++)
            s->path_stages[i] = i;
        s->path_off[0] = 0;
        s->path_off[1] = cut;
        s->path_off[2] = nstages;
        s->path_len[0] = cut;
        s->path_len[1] = nstages - cut;
        s->path_mb0[0] = 0;
        s->path_mbn[0] = split;
        s->path_mb0[1] = split;
        s->path_mbn[1] = m - split;
        ps__schedule_index_paths(s);
    } else {
        ps__schedule_single_path(s);
    }
    s->family = -1;
    s->placement = PS__PLACE_CUSTOM;
    s->param_copies = split ? 2 : 1;
    s->group = 0;
    s->lowered = ld->lowered;
    return 0;
}

int ps_schedule_load_csv(ps_schedule *s, const char *text, size_t len, ps_csv_format fmt,
                         int microbatches)
{
    loader ld;
    int rc;
    if (!s)
        return PS_EINVAL;
    memset(&ld, 0, sizeof ld);
    ld.s = s;
    ld.text = text;
    ld.len = len;
    ld.fmt = fmt;
    ld.given_m = microbatches;
    ld.max_stage = -1;
    ld.max_mb = -1;
    if (!text && len > 0)
        rc = ps__seterr(ld.err, PS_EINVAL, "invalid argument: NULL text");
    else if (fmt != PS_CSV_AUTO && fmt != PS_CSV_COMPUTE_ONLY && fmt != PS_CSV_COMPUTE_COMMS)
        rc = ps__seterr(ld.err, PS_EINVAL, "invalid argument: unknown CSV format %d", (int)fmt);
    else if (microbatches < 0)
        rc = ps__seterr(ld.err, PS_EINVAL, "invalid argument: %d micro-batches", microbatches);
    else if (microbatches > PS_MAX_MICROBATCHES)
        rc = ps__seterr(ld.err, PS_ERANGE, "%d micro-batches is beyond the limit of %d",
                        microbatches, PS_MAX_MICROBATCHES);
    else if (len > MAX_TEXT)
        rc = ps__seterr(ld.err, PS_ERANGE, "a CSV text of %zu bytes is beyond the limit of %zu",
                        len, MAX_TEXT);
    else
        rc = load(&ld);
    if (ld.caps)
        ps__free(&s->al, ld.caps, ld.ncaps, sizeof *ld.caps);
    if (ld.mb_lo)
        ps__free(&s->al, ld.mb_lo, 2 * (size_t)ld.span_m, sizeof *ld.mb_lo);
    if (rc) {
        /* Never leave a half-built schedule behind: clearing also wipes s->err. */
        ps__schedule_clear(s);
        memcpy(s->err, ld.err, sizeof s->err);
        return rc;
    }
    s->err[0] = '\0';
    return 0;
}
