/*
 * D, data reordering (include/pipesched/balance.h, docs/balance.md): the samples of a global
 * batch to data-parallel ranks and micro-batch slots so that the slowest replica's simulated
 * pipeline is shortest.
 *
 * Every replica runs the same pipeline; only its micro-batches' weights differ (the simulator's
 * per-micro-batch weights, issue 15 section 1). So one schedule serves every evaluation (but
 * zb-auto's, which plans with the weights and is generated again), and an evaluation is one
 * simulation of one rank. The search keeps a table of which sample sits where and the time of
 * every slot, starts from the longest-processing-time assignment, and improves the slowest
 * rank by swaps while they help. The reconstruction of the method is in
 * reference/adaptive_pipe.md section 5.2 (only the headline is public).
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"
#include "model/cost.h"

#include <pipesched/balance.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the samples file ----------------------------------------------------------------------- */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses one line [p, end) (without its newline) into *x; line is 1-based, col of p is 1. */
static int parse_line(const char *p, const char *end, size_t line, ps_sample *x, char *err,
                      size_t errlen)
{
    const char *start = p;
    x->tokens = x->sq = 0;
    x->docs = 0;
    if (end > p && end[-1] == '\r')
        end--;
    const char *q = p;
    while (q < end && is_blank(*q))
        q++;
    if (q == end)
        return ps__seterr_n(err, errlen, PS_EPARSE,
                            "line %zu: empty; expected a sample's document lengths, e.g. "
                            "512,2048,128",
                            line);
    for (;;) {
        while (p < end && is_blank(*p))
            p++;
        size_t col = (size_t)(p - start) + 1;
        const char *num = p;
        int neg = p < end && *p == '-';
        if (neg || (p < end && *p == '+'))
            p++;
        double v = 0;
        int digits = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            digits++;
            p++;
        }
        const char *tok_end = p;
        while (p < end && is_blank(*p))
            p++;
        if (!digits || (p < end && *p != ',')) {
            const char *bad = num;
            size_t blen = 0;
            while (bad + blen < end && bad[blen] != ',')
                blen++;
            return ps__seterr_n(err, errlen, PS_EPARSE,
                                "line %zu, column %zu: \"%.*s\" is not a document length (a "
                                "whole number from 1 to %d)",
                                line, col, (int)(blen > 40 ? 40 : blen), bad, PS_MAX_DOC_LEN);
        }
        if (neg || v < 1 || v > PS_MAX_DOC_LEN)
            return ps__seterr_n(err, errlen, PS_EPARSE,
                                "line %zu, column %zu: document length %s%.*s is out of range "
                                "(1 to %d)",
                                line, col, neg ? "-" : "", (int)(tok_end - num - neg), num + neg,
                                PS_MAX_DOC_LEN);
        if (x->docs == INT32_MAX)
            return ps__seterr_n(err, errlen, PS_EPARSE, "line %zu: too many documents", line);
        x->tokens += v;
        x->sq += v * v;
        x->docs++;
        if (p == end)
            return 0;
        p++; /* the comma */
    }
}

int ps_samples_parse(const char *text, size_t len, ps_sample *out, size_t cap, size_t *n, char *err,
                     size_t errlen)
{
    if (!text || !n)
        return PS_EINVAL;
    *n = 0;
    if (err && errlen)
        err[0] = '\0';
    const char *p = text, *end = text + len;
    size_t line = 0, count = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        ps_sample x;
        line++;
        int rc = parse_line(p, le, line, &x, err, errlen);
        if (rc)
            return rc;
        if (out) {
            if (count >= cap)
                return ps__seterr_n(err, errlen, PS_EINVAL,
                                    "room for %zu samples, the text has more", cap);
            out[count] = x;
        }
        count++;
        p = nl ? nl + 1 : end;
    }
    if (count == 0)
        return ps__seterr_n(err, errlen, PS_EPARSE,
                            "no samples: the file is empty (expected one sample per line, its "
                            "document lengths, e.g. 512,2048,128)");
    *n = count;
    return 0;
}

double ps_sample_time(const ps_sample_model *m, const ps_sample *x)
{
    if (!m || !x)
        return 0.0;
    return m->a * x->sq + m->c * x->tokens + m->d;
}

int ps_sample_model_derive(const ps_transformer *t, const ps_hardware *hw, ps_sample_model *out,
                           char *err, size_t errlen)
{
    if (!t || !hw || !out)
        return PS_EINVAL;
    int rc = ps_transformer_check(t, err, errlen);
    if (!rc)
        rc = ps_hardware_check(hw, err, errlen);
    if (rc)
        return rc;
    /* ps__model_flops counts attention without the causal half, linear in the sequence: the
     * difference of a sequence of 1 and of none is its per-token, per-position term. */
    double linear = ps__model_flops(t, 1, 0), attn = ps__model_flops(t, 1, 1) - linear;
    double peak = hw->peak_tflops_bf16 * 1e12;
    out->c = linear / (peak * hw->gemm_eff);
    out->a = attn / 2 / (peak * hw->attn_eff);
    out->d = 0;
    return 0;
}

/* ---- the search ----------------------------------------------------------------------------- */

typedef struct bal {
    const ps_allocator *al;
    ps_problem tmp; /* pb's shallow copy: m slots, weights in w */
    ps_schedule *s;
    ps_sim *sim;
    int regen; /* the family plans with the costs (zb-auto): a schedule per evaluation */
    int32_t D, M, B;
    size_t n;
    const double *t;
    int32_t *at;    /* the sample at position (r . M + j) . B + k */
    double *load;   /* the time of slot r . M + j */
    double *mk;     /* each rank's simulated makespan */
    double *w;      /* the weights of one evaluation (M) */
    uint8_t *clean; /* per rank: its own moves were tried since it last changed */
    double scale;   /* weight of one unit of time: 1 / a micro-batch's durations at weight 1 */
    int64_t evals, max_evals;
    char *err;
    size_t errlen;
} bal;

/* The makespan of rank r's pipeline with its slots' times as weights. */
static int eval_rank(bal *b, int32_t r, double *out)
{
    for (int32_t j = 0; j < b->M; j++)
        b->w[j] = b->load[(size_t)r * b->M + j] * b->scale;
    int rc;
    if (b->regen) {
        if ((rc = ps_schedule_generate(b->s, &b->tmp)) || (rc = ps_schedule_validate(b->s)))
            return ps__seterr_n(b->err, b->errlen, rc, "balance data: %s",
                                ps_schedule_last_error(b->s));
    }
    rc = ps_sim_run(b->sim, b->s, &b->tmp);
    if (rc && rc != PS_EINVALID) /* above a memory limit still times every action */
        return ps__seterr_n(b->err, b->errlen, rc, "balance data: %s", ps_sim_last_error(b->sim));
    ps_metrics m;
    ps_sim_metrics(b->sim, &m);
    *out = m.makespan;
    b->evals++;
    return 0;
}

static int eval_all(bal *b, double *step)
{
    *step = 0;
    for (int32_t r = 0; r < b->D; r++) {
        int rc = eval_rank(b, r, &b->mk[r]);
        if (rc)
            return rc;
        *step = b->mk[r] > *step ? b->mk[r] : *step;
    }
    return 0;
}

static double step_of(const bal *b)
{
    double step = 0;
    for (int32_t r = 0; r < b->D; r++)
        step = b->mk[r] > step ? b->mk[r] : step;
    return step;
}

static void fill_loads(bal *b)
{
    size_t slots = (size_t)b->D * b->M;
    for (size_t q = 0; q < slots; q++) {
        double sum = 0;
        for (int32_t k = 0; k < b->B; k++)
            sum += b->t[b->at[q * b->B + k]];
        b->load[q] = sum;
    }
}

/* The baseline: sample i to rank i mod D, a rank's k-th sample to its slot k / B. */
static void baseline(bal *b)
{
    for (size_t i = 0; i < b->n; i++) {
        size_t r = i % (size_t)b->D, k = i / (size_t)b->D;
        b->at[r * (size_t)b->M * b->B + k] = (int32_t)i;
    }
    fill_loads(b);
}

typedef struct by_time {
    double t;
    int32_t i;
} by_time;

static int cmp_desc(const void *x, const void *y)
{
    const by_time *a = x, *c = y;
    if (a->t != c->t)
        return a->t < c->t ? 1 : -1;
    return a->i < c->i ? -1 : a->i > c->i;
}

/*
 * Longest processing time first: each sample, longest first, to the rank with the least time
 * that has room, and there to its slot with the least time that has room. Then each rank's
 * slots in a pyramid, lightest at both ends: a pipeline's warm-up runs its first micro-batch
 * through every stage and its cool-down its last one, so those two lie on the critical path
 * once more than the others.
 */
static int lpt(bal *b)
{
    size_t n = b->n, slots = (size_t)b->D * b->M;
    by_time *o = ps__alloc(b->al, n, sizeof *o);
    int32_t *fill = ps__calloc(b->al, slots, sizeof *fill);
    double *total = ps__calloc(b->al, (size_t)b->D, sizeof *total);
    int32_t *cnt = ps__calloc(b->al, (size_t)b->D, sizeof *cnt);
    int32_t *tmp = NULL;
    int rc = 0;
    if (!o || !fill || !total || !cnt) {
        rc = PS_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        o[i].t = b->t[i], o[i].i = (int32_t)i;
    qsort(o, n, sizeof *o, cmp_desc);
    int32_t per_rank = b->M * b->B;
    for (size_t q = 0; q < slots; q++)
        b->load[q] = 0;
    for (size_t x = 0; x < n; x++) {
        int32_t r = -1;
        for (int32_t q = 0; q < b->D; q++)
            if (cnt[q] < per_rank && (r < 0 || total[q] < total[r]))
                r = q;
        int32_t j = -1;
        for (int32_t q = 0; q < b->M; q++) {
            size_t sq = (size_t)r * b->M + q;
            if (fill[sq] < b->B && (j < 0 || b->load[sq] < b->load[(size_t)r * b->M + j]))
                j = q;
        }
        size_t sj = (size_t)r * b->M + j;
        b->at[sj * b->B + fill[sj]++] = o[x].i;
        b->load[sj] += o[x].t;
        total[r] += o[x].t;
        cnt[r]++;
    }
    /* the pyramid: slots by time, ascending, to positions 0, M-1, 1, M-2, ... */
    size_t per = (size_t)b->M * b->B;
    tmp = ps__alloc(b->al, per, sizeof *tmp);
    if (!tmp) {
        rc = PS_ENOMEM;
        goto out;
    }
    for (int32_t r = 0; r < b->D; r++) {
        by_time *sl = o; /* room for M entries: n = D.M.B */
        for (int32_t j = 0; j < b->M; j++)
            sl[j].t = -b->load[(size_t)r * b->M + j], sl[j].i = j;
        qsort(sl, (size_t)b->M, sizeof *sl, cmp_desc); /* ascending time */
        int32_t *src = b->at + (size_t)r * per;
        for (int32_t q = 0; q < b->M; q++) {
            int32_t pos = q % 2 == 0 ? q / 2 : b->M - 1 - q / 2;
            memcpy(tmp + (size_t)pos * b->B, src + (size_t)sl[q].i * b->B,
                   (size_t)b->B * sizeof *tmp);
        }
        memcpy(src, tmp, per * sizeof *tmp);
    }
    fill_loads(b);
out:
    ps__free(b->al, o, n, sizeof *o);
    ps__free(b->al, fill, slots, sizeof *fill);
    ps__free(b->al, total, (size_t)b->D, sizeof *total);
    ps__free(b->al, cnt, (size_t)b->D, sizeof *cnt);
    ps__free(b->al, tmp, (size_t)b->M * b->B, sizeof *tmp);
    return rc;
}

/*
 * Rank r's samples (sorted ascending in o) arranged with light ends: the shortest B samples to
 * slot 0, the next B to slot M-1, then slots 1, M-2, ... for `ends` slots on each side; the
 * rest by longest processing time over the middle slots (each to the lightest one with room).
 */
static void light_ends(bal *b, int32_t r, const by_time *o, int32_t ends, int32_t *fill)
{
    size_t per = (size_t)b->M * b->B, x = 0;
    int32_t *src = b->at + (size_t)r * per;
    double *load = b->load + (size_t)r * b->M;
    for (int32_t j = 0; j < b->M; j++)
        load[j] = 0, fill[j] = 0;
    for (int32_t q = 0; q < 2 * ends; q++) {
        int32_t pos = q % 2 == 0 ? q / 2 : b->M - 1 - q / 2;
        for (int32_t k = 0; k < b->B; k++, x++) {
            src[(size_t)pos * b->B + k] = o[x].i;
            load[pos] += b->t[o[x].i];
        }
        fill[pos] = b->B;
    }
    for (size_t y = per; y-- > x;) {
        int32_t j = -1;
        for (int32_t q = ends; q < b->M - ends; q++)
            if (fill[q] < b->B && (j < 0 || load[q] < load[j]))
                j = q;
        src[(size_t)j * b->B + fill[j]++] = o[y].i;
        load[j] += b->t[o[y].i];
    }
}

/*
 * Each rank's arrangement with light ends: a pipeline's warm-up runs its first micro-batch
 * through every stage and its cool-down its last one, so those two are on the critical path
 * more than the others; the middle stays balanced (a steady phase whose neighbours differ waits
 * on the heavier). One to three light slots on each side are simulated, and the best of them
 * and of the balanced slots of lpt() is kept for the rank. mk must hold every rank's makespan.
 */
static int arrange(bal *b)
{
    size_t per = (size_t)b->M * b->B;
    by_time *o = ps__alloc(b->al, per, sizeof *o);
    int32_t *keep = ps__alloc(b->al, per, sizeof *keep);
    int32_t *fill = ps__alloc(b->al, (size_t)b->M, sizeof *fill);
    double *keep_load = ps__alloc(b->al, (size_t)b->M, sizeof *keep_load);
    int rc = 0;
    if (!o || !keep || !fill || !keep_load) {
        rc = PS_ENOMEM;
        goto out;
    }
    int32_t most = b->M / 2 < 3 ? b->M / 2 : 3;
    for (int32_t r = 0; r < b->D; r++) {
        int32_t *src = b->at + (size_t)r * per;
        double *load = b->load + (size_t)r * b->M;
        for (size_t x = 0; x < per; x++)
            o[x].t = -b->t[src[x]], o[x].i = src[x];
        qsort(o, per, sizeof *o, cmp_desc); /* ascending time */
        for (int32_t ends = 1; ends <= most; ends++) {
            memcpy(keep, src, per * sizeof *keep);
            memcpy(keep_load, load, (size_t)b->M * sizeof *keep_load);
            light_ends(b, r, o, ends, fill);
            double v;
            if ((rc = eval_rank(b, r, &v)))
                goto out;
            if (v < b->mk[r]) {
                b->mk[r] = v;
            } else {
                memcpy(src, keep, per * sizeof *keep);
                memcpy(load, keep_load, (size_t)b->M * sizeof *keep_load);
            }
        }
    }
out:
    ps__free(b->al, o, per, sizeof *o);
    ps__free(b->al, keep, per, sizeof *keep);
    ps__free(b->al, fill, (size_t)b->M, sizeof *fill);
    ps__free(b->al, keep_load, (size_t)b->M, sizeof *keep_load);
    return rc;
}

/* Below the old value by more than rounding. */
static inline int better(double v, double old)
{
    return v < old * (1 - 1e-12);
}

static void swap_slots(bal *b, size_t x, size_t y)
{
    for (int32_t k = 0; k < b->B; k++) {
        int32_t t = b->at[x * b->B + k];
        b->at[x * b->B + k] = b->at[y * b->B + k];
        b->at[y * b->B + k] = t;
    }
    double l = b->load[x];
    b->load[x] = b->load[y];
    b->load[y] = l;
}

/* Swaps the samples at positions x and y (of slots sx and sy). */
static void swap_samples(bal *b, size_t x, size_t y)
{
    size_t sx = x / (size_t)b->B, sy = y / (size_t)b->B;
    int32_t a = b->at[x], c = b->at[y];
    b->at[x] = c;
    b->at[y] = a;
    b->load[sx] += b->t[c] - b->t[a];
    b->load[sy] += b->t[a] - b->t[c];
}

/* One move of rank r's local search: swap(b, x, y), simulate the rank, keep the swap when
 * it shortens the rank, else undo it (a swap is its own inverse). 1: kept; 0: undone; -1:
 * stop (the evaluation budget is spent, or *rc holds an error). */
static int try_swap(bal *b, int32_t r, void (*swap)(bal *, size_t, size_t), size_t x, size_t y,
                    int *rc)
{
    if (b->evals >= b->max_evals)
        return -1;
    swap(b, x, y);
    double v;
    if ((*rc = eval_rank(b, r, &v)))
        return -1;
    if (better(v, b->mk[r])) {
        b->mk[r] = v;
        return 1;
    }
    swap(b, x, y);
    return 0;
}

/* Rank r's micro-batch order: two slots swapped. Returns 1 when a swap was kept. */
static int try_slot_swaps(bal *b, int32_t r, int *rc)
{
    size_t base = (size_t)r * b->M;
    for (int32_t j = 0; j < b->M; j++) {
        for (int32_t k = j + 1; k < b->M; k++) {
            if (b->load[base + j] == b->load[base + k])
                continue;
            int kept = try_swap(b, r, swap_slots, base + j, base + k, rc);
            if (kept)
                return kept > 0;
        }
    }
    return 0;
}

/* Two samples of two slots of rank r swapped (the rank's total stays). */
static int try_inner_swaps(bal *b, int32_t r, int *rc)
{
    size_t base = (size_t)r * b->M * b->B, per = (size_t)b->M * b->B;
    if (b->B < 2)
        return 0;
    for (size_t x = 0; x < per; x++) {
        for (size_t y = (x / b->B + 1) * b->B; y < per; y++) {
            if (b->t[b->at[base + x]] == b->t[b->at[base + y]])
                continue;
            int kept = try_swap(b, r, swap_samples, base + x, base + y, rc);
            if (kept)
                return kept > 0;
        }
    }
    return 0;
}

/* A candidate of the cross-rank swaps: positions x on the slowest rank, y on another. */
typedef struct cand {
    double score;
    size_t x, y;
} cand;

#define CROSS_TRIES 16

/*
 * One of rank r's samples swapped with a shorter one of another rank q, the other ranks from
 * the fastest up. For each q, the CROSS_TRIES pairs whose difference comes closest to half the
 * gap between the two ranks' totals are simulated, both ranks; a swap is kept when r gets
 * faster and q stays below r's old makespan.
 */
static int try_cross_swaps(bal *b, int32_t r, int32_t *order, int *rc)
{
    int32_t D = b->D;
    size_t per = (size_t)b->M * b->B;
    for (int32_t q = 0; q < D; q++)
        order[q] = q;
    for (int32_t i = 1; i < D; i++) { /* insertion sort by makespan (D is small) */
        int32_t x = order[i], j = i;
        while (j > 0 && b->mk[order[j - 1]] > b->mk[x])
            order[j] = order[j - 1], j--;
        order[j] = x;
    }
    double tr = 0;
    for (int32_t j = 0; j < b->M; j++)
        tr += b->load[(size_t)r * b->M + j];
    for (int32_t oi = 0; oi < D; oi++) {
        int32_t q = order[oi];
        if (q == r || !better(b->mk[q], b->mk[r]))
            continue;
        double tq = 0;
        for (int32_t j = 0; j < b->M; j++)
            tq += b->load[(size_t)q * b->M + j];
        double target = (tr - tq) / 2;
        cand best[CROSS_TRIES];
        int nb = 0;
        size_t br = (size_t)r * per, bq = (size_t)q * per;
        for (size_t x = 0; x < per; x++) {
            double ta = b->t[b->at[br + x]];
            for (size_t y = 0; y < per; y++) {
                double d = ta - b->t[b->at[bq + y]];
                if (!(d > 0))
                    continue;
                double sc = fabs(d - target);
                if (nb == CROSS_TRIES && sc >= best[nb - 1].score)
                    continue;
                int at = nb < CROSS_TRIES ? nb++ : nb - 1;
                while (at > 0 && best[at - 1].score > sc)
                    best[at] = best[at - 1], at--;
                best[at].score = sc, best[at].x = br + x, best[at].y = bq + y;
            }
        }
        for (int c = 0; c < nb; c++) {
            if (b->evals + 2 > b->max_evals)
                return 0;
            swap_samples(b, best[c].x, best[c].y);
            double vr, vq;
            if ((*rc = eval_rank(b, r, &vr)) || (*rc = eval_rank(b, q, &vq)))
                return 0;
            if (better(vr, b->mk[r]) && better(vq, b->mk[r])) {
                b->mk[r] = vr;
                b->mk[q] = vq;
                b->clean[q] = 0;
                return 1;
            }
            swap_samples(b, best[c].x, best[c].y);
        }
    }
    return 0;
}

/* Improves the slowest rank while a move helps (or until the evaluations run out). */
static int improve(bal *b)
{
    int32_t *order = ps__alloc(b->al, (size_t)b->D, sizeof *order);
    if (!order)
        return PS_ENOMEM;
    int rc = 0;
    memset(b->clean, 0, (size_t)b->D);
    while (b->evals < b->max_evals) {
        int32_t r = 0;
        for (int32_t q = 1; q < b->D; q++)
            if (b->mk[q] > b->mk[r])
                r = q;
        int kept = 0;
        if (!b->clean[r]) {
            kept = try_slot_swaps(b, r, &rc);
            if (!kept && !rc)
                kept = try_inner_swaps(b, r, &rc);
            if (!kept && !rc)
                b->clean[r] = 1;
        }
        if (!kept && !rc) {
            kept = try_cross_swaps(b, r, order, &rc);
            if (kept)
                b->clean[r] = 0;
        }
        if (rc || !kept)
            break;
    }
    ps__free(b->al, order, (size_t)b->D, sizeof *order);
    return rc;
}

/* A deterministic generator for the kicks (xorshift64). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Kicks of the iterated local search: more for small batches, where a local optimum is most
 * often not the global one and a search costs little; none from 1024 samples up. */
static int kicks_for(size_t n)
{
    return n <= 16 ? 48 : n <= 128 ? 16 : n < 1024 ? 4 : 0;
}

/*
 * Iterated local search: from the best assignment so far, a kick (two swaps of random samples
 * in different slots) and the local search again; the better of the two is kept. A swap on
 * the slowest rank only cannot leave some local optima (a better assignment may need two
 * ranks to change at once); the kicks do. The generator's seed is fixed, so the result is
 * reproducible.
 */
static int iterate(bal *b)
{
    int kicks = kicks_for(b->n);
    if (!kicks || b->D * b->M < 2)
        return 0;
    size_t slots = (size_t)b->D * b->M;
    int32_t *best_at = ps__alloc(b->al, b->n, sizeof *best_at);
    double *best_load = ps__alloc(b->al, slots, sizeof *best_load);
    double *best_mk = ps__alloc(b->al, (size_t)b->D, sizeof *best_mk);
    int rc = 0;
    if (!best_at || !best_load || !best_mk) {
        rc = PS_ENOMEM;
        goto out;
    }
    memcpy(best_at, b->at, b->n * sizeof *best_at);
    memcpy(best_load, b->load, slots * sizeof *best_load);
    memcpy(best_mk, b->mk, (size_t)b->D * sizeof *best_mk);
    double best = step_of(b);
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (int k = 0; k < kicks && b->evals < b->max_evals; k++) {
        for (int q = 0; q < 2; q++) {
            size_t x = (size_t)(next_rand(&seed) % b->n), y = (size_t)(next_rand(&seed) % b->n);
            if (x / (size_t)b->B == y / (size_t)b->B)
                continue;
            swap_samples(b, x, y);
        }
        memset(b->clean, 0, (size_t)b->D);
        double step;
        if ((rc = eval_all(b, &step)) || (rc = improve(b)))
            goto out;
        step = step_of(b);
        if (better(step, best)) {
            best = step;
            memcpy(best_at, b->at, b->n * sizeof *best_at);
            memcpy(best_load, b->load, slots * sizeof *best_load);
            memcpy(best_mk, b->mk, (size_t)b->D * sizeof *best_mk);
        } else {
            memcpy(b->at, best_at, b->n * sizeof *best_at);
            memcpy(b->load, best_load, slots * sizeof *best_load);
            memcpy(b->mk, best_mk, (size_t)b->D * sizeof *best_mk);
        }
    }
out:
    ps__free(b->al, best_at, b->n, sizeof *best_at);
    ps__free(b->al, best_load, slots, sizeof *best_load);
    ps__free(b->al, best_mk, (size_t)b->D, sizeof *best_mk);
    return rc;
}

/* The durations of micro-batch 0 over its path at weight 1 (its forwards and backwards), which
 * the weights are scaled by: a micro-batch of time T then computes T over all its stages. */
static int unit_time(bal *b, double *out)
{
    for (int32_t j = 0; j < b->M; j++)
        b->w[j] = 1;
    int rc = ps_sim_run(b->sim, b->s, &b->tmp);
    if (rc && rc != PS_EINVALID)
        return ps__seterr_n(b->err, b->errlen, rc, "balance data: %s", ps_sim_last_error(b->sim));
    const int32_t *stages;
    int np, first, count;
    double sum = 0;
    for (int i = 0; ps_schedule_path(b->s, i, &stages, &np, &first, &count) == 0; i++) {
        if (first != 0)
            continue;
        for (int k = 0; k < np; k++) {
            ps_action f = {PS_F, 0, 0, stages[k], 0, 0, 0}, g = {PS_B, 0, 0, stages[k], 0, 0, 0};
            sum += ps_sim_duration(b->sim, &f) + ps_sim_duration(b->sim, &g);
        }
    }
    *out = sum;
    return 0;
}

static int check_args(const ps_problem *pb, const double *times, size_t n,
                      const ps_data_config *cfg, char *err, size_t errlen)
{
    if (cfg->dp < 1 || cfg->microbatches < 1 || cfg->mbs < 1 || cfg->max_evals < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "balance data: dp, microbatches and mbs must be >= 1 (got %d, %d, "
                            "%d) and max_evals >= 0",
                            (int)cfg->dp, (int)cfg->microbatches, (int)cfg->mbs);
    if (cfg->microbatches > PS_MAX_MICROBATCHES)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "balance data: %d micro-batches is beyond the limit %d",
                            (int)cfg->microbatches, PS_MAX_MICROBATCHES);
    double want = (double)cfg->dp * cfg->microbatches * cfg->mbs;
    if ((double)n != want)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "balance data: %zu samples do not fill dp %d x %d micro-batches x "
                            "mbs %d = %.0f slots exactly",
                            n, (int)cfg->dp, (int)cfg->microbatches, (int)cfg->mbs, want);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(times[i]) || times[i] < 0)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "balance data: the time of sample %zu must be finite and >= 0; "
                                "got %g",
                                i, times[i]);
    (void)pb;
    return 0;
}

static void bal_free(bal *b)
{
    const ps_allocator *a = b->al;
    size_t slots = (size_t)b->D * b->M;
    ps__free(a, b->at, b->n, sizeof *b->at);
    ps__free(a, b->load, slots, sizeof *b->load);
    ps__free(a, b->mk, (size_t)b->D, sizeof *b->mk);
    ps__free(a, b->w, (size_t)b->M, sizeof *b->w);
    ps__free(a, b->clean, (size_t)b->D, 1);
    ps_sim_free(b->sim);
    ps_schedule_free(b->s);
}

/* Writes the assignment in b->at into rank[] and slot[]. */
static void write_out(const bal *b, int32_t *rank, int32_t *slot)
{
    for (size_t p = 0; p < b->n; p++) {
        size_t sl = p / (size_t)b->B;
        rank[b->at[p]] = (int32_t)(sl / (size_t)b->M);
        slot[b->at[p]] = (int32_t)(sl % (size_t)b->M);
    }
}

int ps_balance_data(const ps_problem *pb, const double *times, size_t n, const ps_data_config *cfg,
                    int32_t *rank, int32_t *slot, ps_data_result *out, char *err, size_t errlen)
{
    return ps__balance_data(pb, times, n, cfg, 0, rank, slot, out, err, errlen);
}

int ps__balance_data(const ps_problem *pb, const double *times, size_t n, const ps_data_config *cfg,
                     int weights, int32_t *rank, int32_t *slot, ps_data_result *out, char *err,
                     size_t errlen)
{
    if (!pb || !times || !cfg || !rank || !slot || !out)
        return PS_EINVAL;
    memset(out, 0, sizeof *out);
    int rc = check_args(pb, times, n, cfg, err, errlen);
    if (rc)
        return rc;
    bal b;
    memset(&b, 0, sizeof b);
    b.al = &pb->al;
    b.tmp = *pb; /* shallow: pb's arrays are only read; the weights are b.w */
    b.D = cfg->dp, b.M = cfg->microbatches, b.B = cfg->mbs;
    b.n = n;
    b.t = times;
    b.err = err, b.errlen = errlen;
    size_t slots = (size_t)b.D * b.M;
    b.at = ps__alloc(b.al, n, sizeof *b.at);
    b.load = ps__alloc(b.al, slots, sizeof *b.load);
    b.mk = ps__alloc(b.al, (size_t)b.D, sizeof *b.mk);
    b.w = ps__alloc(b.al, (size_t)b.M, sizeof *b.w);
    b.clean = ps__alloc(b.al, (size_t)b.D, 1);
    if (!b.at || !b.load || !b.mk || !b.w || !b.clean) {
        rc = ps__seterr_n(err, errlen, PS_ENOMEM, "out of memory");
        goto out;
    }
    b.tmp.m = b.M;
    b.tmp.mb_weights = b.w;
    b.tmp.n_mb_weights = (size_t)b.M;
    b.regen = ps__families[pb->family].costs;
    if ((rc = ps_schedule_new(&b.s, b.al)) || (rc = ps_sim_new(&b.sim, b.al))) {
        rc = ps__seterr_n(err, errlen, rc, "out of memory");
        goto out;
    }
    for (int32_t j = 0; j < b.M; j++)
        b.w[j] = 1;
    if ((rc = ps_schedule_generate(b.s, &b.tmp)) || (rc = ps_schedule_validate(b.s))) {
        ps__seterr_n(err, errlen, rc, "balance data: %s", ps_schedule_last_error(b.s));
        goto out;
    }
    double unit = 1; /* times given as weights: a slot's weight is the sum of its samples' */
    if (!weights && (rc = unit_time(&b, &unit)))
        goto out;
    if (!(unit > 0)) {
        rc = ps__seterr_n(err, errlen, PS_ECONFIG,
                          "balance data: the pipeline's costs are all 0: nothing to balance");
        goto out;
    }
    b.scale = 1 / unit;
    /* The default budget: a simulation costs about 1 us plus 20 ns an action (bench/), so
     * this is some 0.3 s of one core whatever the size; deterministic, unlike a clock. */
    double acts = (double)ps_schedule_total_actions(b.s);
    double budget = 3e5 / (1 + acts / 50);
    b.max_evals = cfg->max_evals ? cfg->max_evals
                                 : (int64_t)(budget < 1000  ? 1000
                                             : budget > 1e6 ? 1e6
                                                            : budget);

    baseline(&b);
    if ((rc = eval_all(&b, &out->baseline_step_time)))
        goto out;
    write_out(&b, rank, slot); /* the baseline, should nothing beat it */
    if ((rc = lpt(&b))) {
        rc = ps__seterr_n(err, errlen, rc, "out of memory");
        goto out;
    }
    if ((rc = eval_all(&b, &out->lpt_step_time)) || (rc = arrange(&b)))
        goto out;
    out->lpt_step_time = step_of(&b);
    if ((rc = improve(&b)) || (rc = iterate(&b)))
        goto out;
    double step = step_of(&b);
    if (step < out->baseline_step_time) {
        write_out(&b, rank, slot);
        out->step_time = step;
    } else {
        out->step_time = out->baseline_step_time;
    }
    if (rc == PS_ENOMEM)
        ps__seterr_n(err, errlen, rc, "out of memory");
out:
    out->evals = b.evals;
    bal_free(&b);
    return rc;
}
