/*
 * The exhaustive sweep: every registered family over pp 1..8 x vpp 1..4 x m 1..32. At every
 * grid point a family accepts, the schedule must validate, every micro-batch must visit every
 * stage of its path once forward and once backward (counted here from the public lists), the
 * simulated timeline must respect every dependency and the rank order, and, for the families
 * with a published closed form, makespan, bubble and rank-0 peak activations must equal it
 * for several cost ratios. Families added later are swept automatically; they get the
 * invariants, and a closed form once one is added to expected() below.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <math.h>
#include <stdio.h>

static const double cost_sets[][3] = {
    {1, 1, 1}, {1, 2, 1}, {2, 1, 0.5}, {0.75, 0.25, 0.125}, {3, 1, 2}};
#define NCOSTS (int)(sizeof cost_sets / sizeof cost_sets[0])

typedef struct expect {
    int known;        /* some closed form below applies */
    int has_makespan; /* makespan is known */
    int has_bubble;   /* bubble is known */
    int zero_idle;    /* every rank's idle is 0 */
    double makespan, bubble;
    long long peak0; /* always known when known is set */
} expect;

static long long min_ll(long long a, long long b)
{
    return a < b ? a : b;
}

static long long max_ll(long long a, long long b)
{
    return a > b ? a : b;
}

/*
 * Acceptance rules and closed forms (uniform per-chunk costs, c = 0), from DESIGN.md and
 * reference/schedules.md. Returns -1 when the family must reject the point, 0 otherwise.
 * F = f, B = b + w (full backward).
 */
static int expected(const char *fam, int p, int v, int m, double F, double B, double W, expect *e)
{
    memset(e, 0, sizeof *e);
    e->has_makespan = e->has_bubble = 1;
    if (!strcmp(fam, "gpipe") || !strcmp(fam, "1f1b")) {
        if (v != 1)
            return -1;
        e->known = 1;
        e->makespan = (m + p - 1) * (F + B);
        e->bubble = (p - 1) * (F + B);
        e->peak0 = !strcmp(fam, "gpipe") ? m : min_ll(p, m);
        return 0;
    }
    if (!strcmp(fam, "interleaved")) {
        /* Default group size G = p: needs m >= p and m mod p == 0 when v > 1. */
        if (v > 1 && (m < p || m % p))
            return -1;
        e->known = 1;
        e->makespan = ((long long)m * v + p - 1) * (F + B);
        e->bubble = (p - 1) * (F + B);
        e->peak0 = v == 1 ? min_ll(p, m)
                          : min_ll(2LL * (p - 1) + (long long)(v - 1) * p + 1, (long long)m * v);
        return 0;
    }
    if (!strcmp(fam, "interleaved-rounds")) {
        int rounds = m / p > 1 ? m / p : 1;
        if (m % rounds)
            return -1;
        int mpr = m / rounds;
        /* For m >= p this is the interleaved closed form; for m < p every rank but the last
         * ones runs all forwards first and the wave takes (v p + m - 1) steps, the looped-BFS
         * form. Both are ((v-1) max(m,p) + m + p - 1)(F+B). */
        long long M = max_ll(m, p);
        e->known = 1;
        e->makespan = ((v - 1) * M + m + p - 1) * (F + B);
        e->bubble = e->makespan - (double)m * v * (F + B);
        e->peak0 = min_ll(2LL * (p - 1) + (long long)(v - 1) * mpr + 1, (long long)m * v);
        return 0;
    }
    if (!strcmp(fam, "looped-bfs")) {
        long long M = max_ll(m, p);
        e->known = 1;
        e->makespan = ((v - 1) * M + m + p - 1) * (F + B);
        e->bubble = e->makespan - (double)m * v * (F + B);
        e->peak0 = (long long)m * v;
        return 0;
    }
    /* Zero-bubble family: B here is the full backward b + w, so b = B - W. The published
     * bubbles hold once the pipeline is full (m >= p for ZB-H1, m >= 2p-1 for ZB-H2 and
     * ZB-V) and the deferred Ws fit into it (w <= f+b, 2w <= f+b); smaller m or larger w get
     * the invariants and the peak only. The bubble is the largest idle, which need not be
     * rank 0's: the makespan is not busy + bubble here, so only the bubble is asserted. */
    double b = B - W;
    if (!strcmp(fam, "zb-h1") || !strcmp(fam, "zb-h2")) {
        int c = fam[4] == '1' ? 1 : 2;
        if (v != 1)
            return -1;
        e->known = 1;
        e->peak0 = min_ll((long long)c * (p - 1) + 1, m);
        e->has_bubble = m >= c * (p - 1) + 1 && c * W <= F + b;
        e->bubble = (p - 1) * (F + b - c * W);
        e->has_makespan = 0;
        return 0;
    }
    if (!strcmp(fam, "zb-v")) {
        if (v != 2)
            return -1;
        e->known = 1;
        e->peak0 = min_ll(2LL * p, m + 1LL);
        e->has_makespan = e->has_bubble = 0;
        e->zero_idle = m >= 2 * p - 1 && F == b && b == W;
        return 0;
    }
    if (!strcmp(fam, "interleaved-zb")) {
        int rounds = m / p > 1 ? m / p : 1;
        if (m % rounds)
            return -1;
        e->known = 1;
        e->peak0 = min_ll((long long)(v - 1) * (m / rounds) + p, (long long)m * v);
        e->has_makespan = e->has_bubble = 0;
        if (v == 1 && m >= p && W <= F + b) {
            /* With one chunk the rule is ZB-H1's. */
            e->has_bubble = 1;
            e->bubble = (p - 1) * (F + b - W);
        }
        return 0;
    }
    if (!strcmp(fam, "dualpipe") || !strcmp(fam, "dualpipev")) {
        /* DualPipe: vpp 1 (two model copies), p and m even, m >= 2p; DualPipeV: vpp 2,
         * m >= 2p. k = p/2 - 1 resp. p - 1 (the stage count's half, minus one). The published
         * bubble k(F&B + B - 3W) with F&B = f + b + w (the sweep's default fused cost) is
         * k(f + 2b - w). It is exact when f = b and w <= b (the papers' setting, F = B);
         * elsewhere (found by simulation, see below) it is:
         *   f >= b: k(2f + max(b - w, 0)),
         *   f <  b: k(f + 2b - min(w, b)) - min(f, k(b - f)),
         * both equal to the published form at f = b, w <= b. We found this form by simulating
         * every f, b, w in {0, 1/4, 1/2, 1, 3/2, 2, 3} for p <= 8 and m from 2p to 2p+8 (the
         * bubble does not depend on m), and check it here on the sweep's own cost ratios;
         * tests/test-fused.c works a case of each branch out by hand. Rank 0 starts at 0, ends
         * last and has the largest idle, so the makespan is its busy time (m chunk-pairs of
         * f + b + w, twice that on the V) plus the bubble. Peak activations on rank 0: p + 1
         * (DualPipe, the reference's PP + 1), 2p + 1 chunks (DualPipeV). */
        int dual = !strcmp(fam, "dualpipe");
        if (dual ? (v != 1 || p % 2 || m % 2 || m < 2 * p) : (v != 2 || m < 2 * p))
            return -1;
        double k = dual ? p / 2 - 1 : p - 1;
        double bub = F >= b ? k * (2 * F + (b > W ? b - W : 0))
                            : k * (F + 2 * b - (W < b ? W : b)) - fmin(F, k * (b - F));
        if (F == b && W <= b)
            bub = k * ((F + B) + B - 3 * W); /* the published form, where it holds */
        e->known = 1;
        e->bubble = bub;
        e->makespan = (dual ? 1.0 : 2.0) * m * (F + B) + bub;
        e->peak0 = dual ? p + 1 : 2LL * p + 1;
        return 0;
    }
    if (!strcmp(fam, "adaptive")) {
        /* Interleaved's acceptance rule and table (group size p), delta = 1 extra warm-up
         * forward, every steady step one fused pair costing f + b + w by default. The bound
         * asked of it is interleaved's makespan (m v + p - 1)(F + B) plus delta f; it meets
         * interleaved's exactly, and interleaved's bubble (p-1)(F + B): a fused step lasts as
         * long as interleaved's F then B, and the extra forward only moves work into time
         * the rank spends waiting in the warm-up (exact for delta 0 to 3 over this grid; for
         * v = 1 thanks to the warm-up's factor 2, see schedules/adaptive.c). Rank 0 holds
         * interleaved's warm-up plus delta plus one chunk activations, capped at m v. */
        if (v > 1 && (m < p || m % p))
            return -1;
        long long delta = 1;
        e->known = 1;
        e->makespan = ((long long)m * v + p - 1) * (F + B);
        e->bubble = (p - 1) * (F + B);
        e->peak0 = min_ll(2LL * (p - 1) + (long long)(v - 1) * p + 1 + delta, (long long)m * v);
        return 0;
    }
    e->has_makespan = e->has_bubble = 0;
    return 0; /* no closed form: invariants only */
}

/* Per (stage, mb): end times of F and of the backward (I or B), and of I for W. */
typedef struct times {
    double *tf, *tg;
    unsigned char *nf, *ni, *nw, *nb;
} times;

static double dur_of(const ps_action *a, const double c3[3])
{
    switch (a->kind) {
    case PS_F:
        return c3[0];
    case PS_I:
        return c3[1];
    case PS_W:
        return c3[2];
    case PS_B:
        return c3[1] + c3[2];
    case PS_FB:
        return c3[0] + c3[1] + (a->bkind == PS_B ? c3[2] : 0);
    }
    return -1;
}

/* Neighbours of stage on mb's path, from the public path accessors. */
static void path_nb(const ps_schedule *s, int stage, int mb, int *prev, int *next)
{
    *prev = *next = -2;
    for (int k = 0; k < ps_schedule_num_paths(s); k++) {
        const int32_t *st;
        int n, first, count;
        ps_schedule_path(s, k, &st, &n, &first, &count);
        if (mb < first || mb >= first + count)
            continue;
        for (int i = 0; i < n; i++)
            if (st[i] == stage) {
                *prev = i ? st[i - 1] : -1;
                *next = i + 1 < n ? st[i + 1] : -1;
            }
    }
}

static void check_point(const char *fam, ps_schedule *s, ps_sim *sim, ps_problem *pb, int p, int v,
                        int m, int ci)
{
    const double *c3 = cost_sets[ci];
    char where[160];
    snprintf(where, sizeof where, "%s pp=%d vpp=%d m=%d costs=%g,%g,%g", fam, p, v, m, c3[0], c3[1],
             c3[2]);
    int rc = ps_schedule_validate(s);
    ck_assert_msg(rc == 0, "%s: validate: %s", where, ps_schedule_last_error(s));
    rc = ps_sim_run(sim, s, pb);
    ck_assert_msg(rc == 0, "%s: simulate: %s", where, ps_sim_last_error(sim));

    int S = ps_schedule_num_stages(s);
    size_t sm = (size_t)S * (size_t)m;
    times t;
    t.tf = calloc(sm, sizeof(double));
    t.tg = calloc(sm, sizeof(double));
    t.nf = calloc(sm, 1);
    t.ni = calloc(sm, 1);
    t.nw = calloc(sm, 1);
    t.nb = calloc(sm, 1);
    ck_assert(t.tf && t.tg && t.nf && t.ni && t.nw && t.nb);
    double makespan = 0, bubble = 0;
    /* Pass 1: counts, durations, rank order, and end times per (stage, mb). */
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
        size_t n = ps_schedule_rank_length(s, r);
        double busy = 0;
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(fabs(en[i] - st[i] - dur_of(&a[i], c3)) < 1e-9, "%s: duration", where);
            ck_assert_msg(i == 0 || st[i] >= en[i - 1] - 1e-12, "%s: rank %d overlaps", where, r);
            ck_assert_int_eq(ps_schedule_stage_rank(s, a[i].stage), r);
            size_t k = (size_t)a[i].stage * (size_t)m + (size_t)a[i].mb;
            busy += en[i] - st[i];
            switch (a[i].kind) {
            case PS_F:
                t.nf[k]++, t.tf[k] = en[i];
                break;
            case PS_I:
                t.ni[k]++, t.tg[k] = en[i];
                break;
            case PS_B:
                t.nb[k]++, t.tg[k] = en[i];
                break;
            case PS_W:
                t.nw[k]++;
                break;
            case PS_FB: {
                size_t kb = (size_t)a[i].bstage * (size_t)m + (size_t)a[i].bmb;
                t.nf[k]++, t.tf[k] = en[i];
                if (a[i].bkind == PS_B)
                    t.nb[kb]++;
                else
                    t.ni[kb]++;
                t.tg[kb] = en[i];
                break;
            }
            default:
                ck_abort_msg("%s: non-compute action on a compute list", where);
            }
        }
        if (n) {
            if (en[n - 1] > makespan)
                makespan = en[n - 1];
            if (en[n - 1] - st[0] - busy > bubble)
                bubble = en[n - 1] - st[0] - busy;
        }
    }
    /* Every (stage, mb) on the path: one F, and one B or one I plus one W. */
    for (int j = 0; j < m; j++)
        for (int stg = 0; stg < S; stg++) {
            int prev, next;
            size_t k = (size_t)stg * (size_t)m + (size_t)j;
            path_nb(s, stg, j, &prev, &next);
            if (prev == -2) {
                ck_assert_msg(!t.nf[k] && !t.ni[k] && !t.nw[k] && !t.nb[k], "%s: off-path", where);
                continue;
            }
            ck_assert_msg(t.nf[k] == 1, "%s: F(%d,%d) x%d", where, stg, j, t.nf[k]);
            ck_assert_msg((t.nb[k] == 1 && !t.ni[k] && !t.nw[k]) ||
                              (!t.nb[k] && t.ni[k] == 1 && t.nw[k] == 1),
                          "%s: backward of (%d,%d)", where, stg, j);
        }
    /* Pass 2: dependencies hold in time. */
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        const double *st = ps_sim_starts(sim, r);
        for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
            int prev, next;
            if (a[i].kind == PS_F || a[i].kind == PS_FB) {
                path_nb(s, a[i].stage, a[i].mb, &prev, &next);
                if (prev >= 0)
                    ck_assert_msg(st[i] >= t.tf[(size_t)prev * m + a[i].mb] - 1e-12,
                                  "%s: F before its input", where);
            }
            if (a[i].kind == PS_I || a[i].kind == PS_B || a[i].kind == PS_FB) {
                int bs = a[i].kind == PS_FB ? a[i].bstage : a[i].stage;
                int bm = a[i].kind == PS_FB ? a[i].bmb : a[i].mb;
                path_nb(s, bs, bm, &prev, &next);
                ck_assert(st[i] >= t.tf[(size_t)bs * m + bm] - 1e-12);
                if (next >= 0)
                    ck_assert_msg(st[i] >= t.tg[(size_t)next * m + bm] - 1e-12,
                                  "%s: backward before its gradient", where);
            }
            if (a[i].kind == PS_W)
                ck_assert(st[i] >= t.tg[(size_t)a[i].stage * m + a[i].mb] - 1e-12);
        }
    }
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    ck_assert_msg(fabs(met.makespan - makespan) < 1e-9, "%s: makespan", where);
    ck_assert_msg(fabs(met.bubble - bubble) < 1e-9, "%s: bubble", where);

    expect e;
    expected(fam, p, v, m, c3[0], c3[1] + c3[2], c3[2], &e);
    if (e.known) {
        ps_rank_metrics r0;
        ck_assert_int_eq(ps_sim_rank_metrics(sim, 0, &r0), 0);
        if (e.has_makespan)
            ck_assert_msg(fabs(met.makespan - e.makespan) < 1e-9, "%s: makespan %g, expected %g",
                          where, met.makespan, e.makespan);
        if (e.has_bubble)
            ck_assert_msg(fabs(met.bubble - e.bubble) < 1e-9, "%s: bubble %g, expected %g", where,
                          met.bubble, e.bubble);
        if (e.zero_idle)
            for (int r = 0; r < p; r++) {
                ps_rank_metrics rm;
                ck_assert_int_eq(ps_sim_rank_metrics(sim, r, &rm), 0);
                ck_assert_msg(fabs(rm.idle) < 1e-9, "%s: rank %d idle %g", where, r, rm.idle);
            }
        ck_assert_msg(r0.peak_activations == e.peak0, "%s: peak %lld, expected %lld", where,
                      (long long)r0.peak_activations, e.peak0);
    }
    free(t.tf);
    free(t.tg);
    free(t.nf);
    free(t.ni);
    free(t.nw);
    free(t.nb);
}

START_TEST(sweep_family)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    int accepted = 0;
    for (int p = 1; p <= 8; p++)
        for (int v = 1; v <= 4; v++)
            for (int m = 1; m <= 32; m++) {
                ps_problem *pb = make_problem(fi.name, p, v, m, 1, 1, 1, 0);
                int rc = ps_schedule_generate(s, pb);
                expect e;
                int want = expected(fi.name, p, v, m, 1, 2, 1, &e);
                if (want < 0) {
                    ck_assert_msg(rc == PS_EUNSUPPORTED, "%s pp=%d vpp=%d m=%d accepted", fi.name,
                                  p, v, m);
                    ck_assert(strlen(ps_schedule_last_error(s)) > 10);
                    ps_problem_free(pb);
                    continue;
                }
                if (rc == PS_EUNSUPPORTED && !e.known) {
                    ps_problem_free(pb); /* a family with constraints we do not model here */
                    continue;
                }
                ck_assert_msg(rc == 0, "%s pp=%d vpp=%d m=%d rejected: %s", fi.name, p, v, m,
                              ps_schedule_last_error(s));
                accepted++;
                for (int ci = 0; ci < NCOSTS; ci++) {
                    ps_problem_set_cost(pb, PS_COST_F, cost_sets[ci][0]);
                    ps_problem_set_cost(pb, PS_COST_B, cost_sets[ci][1]);
                    ps_problem_set_cost(pb, PS_COST_W, cost_sets[ci][2]);
                    check_point(fi.name, s, sim, pb, p, v, m, ci);
                }
                ps_problem_free(pb);
            }
    ck_assert_msg(accepted > 0, "%s accepted no grid point", fi.name);
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/*
 * With a transfer cost c > 0 there is no closed form; compare against a naive reference
 * evaluator written here: repeated passes that start each rank's next action once its inputs
 * have end times, at max(rank free, input end + c across ranks).
 */
static double reference_makespan(const ps_schedule *s, double c, const double c3[3])
{
    int p = ps_schedule_pp(s), S = ps_schedule_num_stages(s), m = ps_schedule_microbatches(s);
    double *tf = malloc(sizeof(double) * S * m), *tg = malloc(sizeof(double) * S * m);
    char *hf = calloc((size_t)S * m, 1), *hg = calloc((size_t)S * m, 1);
    size_t *pos = calloc((size_t)p, sizeof(size_t));
    double *free_at = calloc((size_t)p, sizeof(double)), makespan = 0;
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int r = 0; r < p; r++) {
            const ps_action *a = ps_schedule_rank_actions(s, r);
            while (pos[r] < ps_schedule_rank_length(s, r)) {
                const ps_action *x = &a[pos[r]];
                double ready = free_at[r];
                int prev, next, ok = 1;
                if (x->kind == PS_F || x->kind == PS_FB) {
                    path_nb(s, x->stage, x->mb, &prev, &next);
                    if (prev >= 0) {
                        ok &= hf[prev * m + x->mb];
                        double t =
                            tf[prev * m + x->mb] + (ps_schedule_stage_rank(s, prev) != r ? c : 0);
                        ready = t > ready ? t : ready;
                    }
                }
                if (x->kind == PS_I || x->kind == PS_B || x->kind == PS_FB) {
                    int bs = x->kind == PS_FB ? x->bstage : x->stage;
                    int bm = x->kind == PS_FB ? x->bmb : x->mb;
                    path_nb(s, bs, bm, &prev, &next);
                    ok &= hf[bs * m + bm];
                    if (next >= 0) {
                        ok &= hg[next * m + bm];
                        double t =
                            tg[next * m + bm] + (ps_schedule_stage_rank(s, next) != r ? c : 0);
                        ready = t > ready ? t : ready;
                    }
                }
                if (!ok)
                    break;
                double end = ready + dur_of(x, c3);
                if (x->kind == PS_F || x->kind == PS_FB)
                    tf[x->stage * m + x->mb] = end, hf[x->stage * m + x->mb] = 1;
                if (x->kind == PS_I || x->kind == PS_B)
                    tg[x->stage * m + x->mb] = end, hg[x->stage * m + x->mb] = 1;
                if (x->kind == PS_FB)
                    tg[x->bstage * m + x->bmb] = end, hg[x->bstage * m + x->bmb] = 1;
                free_at[r] = end;
                makespan = end > makespan ? end : makespan;
                pos[r]++;
                progress = 1;
            }
        }
    }
    free(tf);
    free(tg);
    free(hf);
    free(hg);
    free(pos);
    free(free_at);
    return makespan;
}

START_TEST(sweep_transfer_cost)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    for (int p = 1; p <= 5; p++)
        for (int v = 1; v <= 3; v++)
            for (int m = 1; m <= 12; m++) {
                ps_problem *pb = make_problem(fi.name, p, v, m, 1, 1.5, 0.5, 0.25);
                if (ps_schedule_generate(s, pb) == 0) {
                    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
                    ps_metrics met;
                    ps_sim_metrics(sim, &met);
                    const double c3[3] = {1, 1.5, 0.5};
                    double want = reference_makespan(s, 0.25, c3);
                    ck_assert_msg(fabs(met.makespan - want) < 1e-9,
                                  "%s pp=%d vpp=%d m=%d c=0.25: makespan %g, reference %g", fi.name,
                                  p, v, m, met.makespan, want);
                    /* c > 0 only delays: never faster than with c = 0 */
                    ps_problem_set_cost(pb, PS_COST_C, 0);
                    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
                    ps_metrics m0;
                    ps_sim_metrics(sim, &m0);
                    ck_assert(m0.makespan <= met.makespan + 1e-12);
                }
                ps_problem_free(pb);
            }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sweep");
    TCase *tc = tcase_create("grid");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, sweep_family, 0, (int)ps_family_count());
    tcase_add_loop_test(tc, sweep_transfer_cost, 0, (int)ps_family_count());
    suite_add_tcase(su, tc);
    return run_suite(su);
}
