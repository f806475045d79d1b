/*
 * zb-auto: a cost- and memory-aware zero-bubble list scheduler, in the spirit of the greedy
 * heuristic of the zero-bubble project (reference/schedules.md, sections 2.2 and 2.3) but
 * written as one event-driven simulation that serves both placements (vpp = 1, and the V of
 * vpp = 2).
 *
 * Every rank keeps a clock, and the ranks decide in the order of their clocks. A rank looks
 * at what it could run: the next input-gradient backward I and the next forward F of each of
 * its stages (both in micro-batch order), and the weight-gradient Ws whose I has run (oldest
 * first). An I that has arrived goes first: it is on the critical path and frees memory
 * (unless the next stage is about to starve for forwards, ZB_K). Otherwise a forward runs if
 * it has arrived and memory admits it, and pending Ws fill the time in which nothing has
 * arrived. A forward that would still be running when a known I arrives may give way to it,
 * and a W is forced whenever memory would otherwise keep a forward or an I waiting. Start
 * times are those of the simulator (the later of the rank becoming free and the producer's
 * end, plus c across ranks), so the makespan computed here is the one ps_sim_run() reports.
 *
 * A handful of policies (how far forwards run ahead, how eagerly gaps are filled, which chunk
 * goes first on a V rank) are tried in turn, as the reference tries 8 flag combinations; the
 * best makespan wins, ties to the smaller bubble, and the search stops at the first schedule
 * that reaches the lower bound with no avoidable bubble. A try costs O(1) per action while the
 * ranks move in lockstep and O(log p) otherwise (see loop_pass).
 *
 * Memory: a forward is admitted only if the rest of its micro-batch's work on the rank fits
 * on top of what the rank holds (on a V rank chunk 0's forward also keeps room for chunk 1's),
 * so the oldest micro-batch in flight can always advance under the usual model (F adds, I and
 * W release). Should a try still stall under an exotic model, it is dropped; if every try
 * stalls, the micro-batches run one after the other, which fits whenever check() accepted
 * the limit.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Policies, combined as bit flags. */
enum {
    /* A ready forward gives way to an I (on a V rank also to chunk 1's forward, when it is
     * chunk 0's) that arrives before the forward would end: a W that fits in the gap runs
     * instead, or the rank waits. */
    ZB_YIELD_F = 1,
    /* Without anything that has arrived, a W runs only if it ends before the next known I
     * arrival; otherwise the rank waits for the I. */
    ZB_W_FITS = 2,
    /* Between two ready Is on a V rank, the older micro-batch goes first (else chunk 1's,
     * which has the longer chain of Is ahead). */
    ZB_I_OLDER = 4,
    /* Chunk 0 runs at most `lead` forwards ahead: of its Is on a loop rank, of chunk 1's
     * forwards on a V rank (see set_leads). */
    ZB_LEAD = 8,
    /* A V rank admits chunk 0's forward when it fits now and its micro-batch's remaining
     * work fits beside the micro-batches still waiting for chunk 1 (they release nothing
     * until then), counting on the rest of what the rank holds to be released; else that
     * work must fit on top of everything the rank holds now. */
    ZB_LOOSE = 16,
    /* Like ZB_LEAD, with the lead counted in stages: the stages from chunk 0 to the last
     * one on a loop rank (1F1B's warm-up plus one), to chunk 1 on a V rank. */
    ZB_LEAD_STAGES = 32
};
/* ZB_K(k): when an I and a forward are both ready, the forward goes first while fewer than k
 * of its stage's outputs wait unconsumed at the next stage (keeps the next rank fed). */
#define ZB_K_SHIFT 6
#define ZB_K(k) ((unsigned)(k) << ZB_K_SHIFT)

/* The tries, most promising first: picked from a larger set over a grid of pp, m, costs and
 * limits, adding each time the policy that most reduced the total loss against the best of
 * all. On a loop placement the chunk flags make no difference and those tries are skipped. */
static const unsigned tries[] = {
    ZB_LEAD | ZB_K(1),
    0,
    ZB_LEAD | ZB_I_OLDER,
    ZB_LEAD_STAGES,
    ZB_LEAD | ZB_YIELD_F | ZB_I_OLDER | ZB_K(1),
    ZB_W_FITS | ZB_K(1),
    ZB_LEAD | ZB_YIELD_F | ZB_LOOSE | ZB_K(1),
    ZB_LEAD_STAGES | ZB_YIELD_F | ZB_K(1),
    ZB_YIELD_F,
};
#define NTRIES (sizeof tries / sizeof tries[0])
#define ZB_CHUNK_FLAGS (ZB_I_OLDER | ZB_LOOSE)

typedef struct zstage {
    double f, b, w;      /* durations of F, I, W */
    double mf, mb, mw;   /* memory deltas of F, I, W */
    double need;         /* memory a forward must find free (see the admission in decide) */
    double cin_f, cin_i; /* transfer into F(s) from s-1, into I(s) from s+1 */
    int32_t rank;        /* the rank that runs the stage */
    int32_t nf, ni, nw;  /* Fs, Is and Ws placed so far (each in micro-batch order) */
} zstage;

typedef struct zrank {
    double free;     /* end of the last action */
    double mem;      /* running memory */
    double first;    /* start of the first action */
    double busy;     /* sum of durations */
    int32_t st[2];   /* stage of chunk 0 and chunk 1 (the same stage twice on a loop rank) */
    int32_t lead[2]; /* most forwards chunk 0 runs ahead, by arrival and by stages */
} zrank;

/* A node of the winner tree: the earliest decision in its subtree and its rank. */
typedef struct znode {
    double t;
    int32_t r, pad;
} znode;

typedef struct zctx {
    ps_schedule *s;
    int32_t p, v, ns, m, leaves;
    double limit; /* INFINITY when there is none */
    double cap;   /* limit * (1 + 1e-12), the simulator's threshold */
    zstage *st;
    zrank *rk;
    double *td;      /* per rank: time of its next decision (INFINITY: waits for a producer) */
    znode *tree;     /* winner tree over the ranks: tree[1] has the earliest decision */
    int tree_on;     /* the tree orders the ranks (else the pass loop does, see loop_pass) */
    double now;      /* the pass loop's current decision time */
    int32_t rewind;  /* the pass loop: lowest rank woken to `now` behind the scan */
    double *tf, *ti; /* end of F(s, j) and of I(s, j), index ps__sm(m, s, j) */
    /* The problem's micro-batch weights (m entries), NULL when none. */
    const double *wt;
    int64_t placed, total;
} zctx;

/* The duration d of a stage's action for micro-batch mb under the weights: the simulator's
 * d * w[mb] (exactly d when w[mb] is 1). */
static inline double wdur(const zctx *z, double d, int32_t mb)
{
    return z->wt ? d * z->wt[mb] : d;
}

/* ---- the winner tree ----------------------------------------------------------------------- */

/* Sets the decision time of rank r and replays its path to the root, carrying the winner
 * in registers and reading only the siblings. Ties go to the lower rank, which keeps the
 * search deterministic. */
static void tree_set(zctx *z, int32_t r, double t)
{
    znode *n = z->tree;
    int32_t i = z->leaves + r, cr = r;
    z->td[r] = t;
    n[i].t = t;
    for (; i > 1; i >>= 1) {
        const znode *sib = &n[i ^ 1];
        int sw = (sib->t < t) | ((sib->t == t) & (sib->r < cr));
        t = sw ? sib->t : t;
        cr = sw ? sib->r : cr;
        n[i >> 1].t = t;
        n[i >> 1].r = cr;
    }
}

static void tree_build(zctx *z)
{
    znode *n = z->tree;
    for (int32_t i = 0; i < z->leaves; i++) {
        n[z->leaves + i].t = i < z->p ? z->td[i] : INFINITY;
        n[z->leaves + i].r = i < z->p ? i : INT32_MAX;
        n[z->leaves + i].pad = 0;
    }
    for (int32_t i = z->leaves - 1; i >= 1; i--) {
        const znode *a = &n[2 * i], *b = &n[2 * i + 1];
        n[i] = (b->t < a->t || (b->t == a->t && b->r < a->r)) ? *b : *a;
    }
}

/* ---- memory --------------------------------------------------------------------------------- */

/* The simulator's test: at most the limit, give or take rounding. */
static inline int fits(const zctx *z, double mem)
{
    return mem <= z->cap;
}

/* The largest of the running sums a, a+b, ... of n memory deltas (and 0, the start). */
static double peak_of(const double *d, int n)
{
    double run = 0, pk = 0;
    for (int i = 0; i < n; i++) {
        run += d[i];
        pk = run > pk ? run : pk;
    }
    return pk;
}

/*
 * The least memory a rank needs to run one micro-batch through its stages when the
 * micro-batches run one after the other: F I W on a loop rank; on a V rank (a = chunk 0,
 * b = chunk 1) F0 F1 I1 and then W1 I0 W0 (*order 0), I0 W1 W0 (1) or I0 W0 W1 (2),
 * whichever peaks lowest.
 */
static double one_mb_peak(const zstage *a, const zstage *b, int *order)
{
    *order = 0;
    if (!b) {
        const double d[] = {a->mf, a->mb, a->mw};
        return peak_of(d, 3);
    }
    const double d[3][6] = {{a->mf, b->mf, b->mb, b->mw, a->mb, a->mw},
                            {a->mf, b->mf, b->mb, a->mb, b->mw, a->mw},
                            {a->mf, b->mf, b->mb, a->mb, a->mw, b->mw}};
    double best = peak_of(d[0], 6);
    for (int k = 1; k < 3; k++) {
        double pk = peak_of(d[k], 6);
        if (pk < best) {
            best = pk;
            *order = k;
        }
    }
    return best;
}

/* ---- placing actions ------------------------------------------------------------------------- */

/* Moves the decision of r2 to t if that is earlier (a producer has just been placed). */
static inline void wake(zctx *z, int32_t r2, double t)
{
    const zrank *q = &z->rk[r2];
    if (t < q->free)
        t = q->free;
    if (t >= z->td[r2])
        return;
    if (z->tree_on) {
        tree_set(z, r2, t);
    } else {
        z->td[r2] = t;
        if (t <= z->now && r2 < z->rewind)
            z->rewind = r2; /* only with zero durations */
    }
}

/* Appends (kind, stage, next micro-batch of that kind) to rank r, starting at the later of
 * the rank's end and ready, and wakes the consumer on another rank. The caller updates the
 * rank's decision time. */
static void place(zctx *z, int32_t r, int kind, int32_t stage, double ready)
{
    zrank *q = &z->rk[r];
    zstage *g = &z->st[stage];
    double start = q->free > ready ? q->free : ready, d, e;
    int32_t mb;
    if (z->s->len[r] == 0)
        q->first = start;
    if (kind == PS_F) {
        mb = g->nf++;
        d = wdur(z, g->f, mb);
        e = start + d;
        z->tf[ps__sm((size_t)z->m, stage, mb)] = e;
        q->mem += g->mf;
        if (stage + 1 < z->ns) {
            const zstage *h = g + 1;
            if (h->rank != r && h->nf == mb)
                wake(z, h->rank, e + h->cin_f);
        }
    } else if (kind == PS_I) {
        mb = g->ni++;
        d = wdur(z, g->b, mb);
        e = start + d;
        z->ti[ps__sm((size_t)z->m, stage, mb)] = e;
        q->mem += g->mb;
        if (stage > 0) {
            const zstage *h = g - 1;
            if (h->rank != r && h->ni == mb)
                wake(z, h->rank, e + h->cin_i);
        }
    } else {
        mb = g->nw++;
        d = wdur(z, g->w, mb);
        e = start + d;
        q->mem += g->mw;
    }
    ps__emit(z->s, r, kind, stage, mb);
    q->free = e;
    q->busy += d;
    z->placed++;
}

/* The stage of the oldest I on r whose W has not run, or -1. Is end in order on a rank, so
 * the older of the two chunks' next Ws is the one whose I ended first. */
static inline int32_t front_w(const zctx *z, const zrank *q)
{
    int32_t a = q->st[0], b = q->st[1];
    const zstage *ga = &z->st[a], *gb = &z->st[b];
    int wa = ga->nw < ga->ni, wb = b != a && gb->nw < gb->ni;
    if (wa && wb)
        return z->ti[ps__sm((size_t)z->m, b, gb->nw)] < z->ti[ps__sm((size_t)z->m, a, ga->nw)] ? b
                                                                                               : a;
    return wa ? a : wb ? b : -1;
}

/* ---- one decision ---------------------------------------------------------------------------- */

/*
 * Rank r decides at time td what to run next, or how long to wait. Either one action is
 * placed and the next decision is at its end, or the decision moves to the next known
 * arrival (INFINITY if none is known: a producer elsewhere will wake the rank). Returns the
 * time of the next decision.
 */
static inline double decide(zctx *z, int32_t r, unsigned pol, const int v)
{
    zrank *q = &z->rk[r];
    const double t = z->td[r];
    const int32_t m = z->m, ns = z->ns;
    int32_t bi = -1, bf = -1;  /* chosen I / F stage */
    double ri = 0, rf = 0;     /* their arrival */
    double next_i = INFINITY;  /* next known I arrival after t */
    double next_f = INFINITY;  /* next known admissible F arrival after t */
    double next_f1 = INFINITY; /* the same for chunk 1's forward (V) */
    int blocked = 0;           /* a ready action waits for memory */
    for (int k = 0; k < v; k++) {
        int32_t s = q->st[k];
        zstage *g = &z->st[s];
        int32_t j = g->ni;
        if (j < m && g->nf > j && (s == ns - 1 || z->st[s + 1].ni > j)) {
            double a = z->tf[ps__sm((size_t)m, s, j)];
            if (s < ns - 1) {
                double u = z->ti[ps__sm((size_t)m, s + 1, j)] + g->cin_i;
                a = u > a ? u : a;
            }
            if (a <= t && !fits(z, q->mem + g->mb)) {
                blocked = 1;
            } else if (a <= t) {
                /* Chunk 1 (k = 1) is the later stage; its micro-batch is never older. */
                if (bi < 0 || ((pol & ZB_I_OLDER) && j < z->st[bi].ni) ||
                    (!(pol & ZB_I_OLDER) && s > bi)) {
                    bi = s;
                    ri = a;
                }
            } else if (a > t && a < next_i) {
                next_i = a;
            }
        }
        j = g->nf;
        if (j < m && (s == 0 || z->st[s - 1].nf > j)) {
            double a = s == 0 ? 0 : z->tf[ps__sm((size_t)m, s - 1, j)] + g->cin_f;
            if ((pol & (ZB_LEAD | ZB_LEAD_STAGES)) && k == 0 &&
                g->nf - (v == 2 ? z->st[q->st[1]].nf : g->ni) >=
                    q->lead[(pol & ZB_LEAD_STAGES) != 0])
                continue;
            /* Admission: the forward's micro-batch must be able to finish here on top of
             * what the rank holds (ZB_LOOSE: on top of the micro-batches still waiting for
             * chunk 1, which release nothing until then). */
            int adm = (pol & ZB_LOOSE) && v == 2 && k == 0
                          ? fits(z, q->mem + g->mf) &&
                                fits(z, (g->nf - z->st[q->st[1]].nf) * g->mf + g->need)
                          : fits(z, q->mem + g->need);
            if (a <= t) {
                if (!adm) {
                    blocked = 1;
                } else if (bf < 0 || s > bf) { /* chunk 1's micro-batch is older */
                    bf = s;
                    rf = a;
                }
            } else if (adm) {
                next_f = a < next_f ? a : next_f;
                if (k == 1)
                    next_f1 = a;
            }
        }
    }
    if (bi >= 0) {
        /* Keep the next stage fed: a forward goes first while fewer than K of this stage's
         * outputs wait there unconsumed. */
        if (bf >= 0 && bf + 1 < ns &&
            z->st[bf].nf - z->st[bf + 1].nf < (int32_t)(pol >> ZB_K_SHIFT)) {
            place(z, r, PS_F, bf, rf);
            return q->free;
        }
        place(z, r, PS_I, bi, ri);
        return q->free;
    }
    int32_t w = front_w(z, q);
    if (w >= 0 && !fits(z, q->mem + z->st[w].mw))
        w = -1;
    if (bf >= 0) {
        /* What the forward may give way to: an I, or on a V rank chunk 1's forward. */
        double hi = bf == q->st[0] && next_f1 < next_i ? next_f1 : next_i;
        if ((pol & ZB_YIELD_F) && hi < t + wdur(z, z->st[bf].f, z->st[bf].nf)) {
            if (w >= 0 && t + wdur(z, z->st[w].w, z->st[w].nw) <= hi) {
                place(z, r, PS_W, w, 0);
                return q->free;
            }
            return hi;
        }
        place(z, r, PS_F, bf, rf);
        return q->free;
    }
    if (w >= 0) {
        /* A forward that waits for memory needs the W now, whatever the policy. */
        if (!blocked && (pol & ZB_W_FITS) && next_i < t + wdur(z, z->st[w].w, z->st[w].nw))
            return next_i;
        place(z, r, PS_W, w, 0);
        return q->free;
    }
    return next_i < next_f ? next_i : next_f;
}

/* ---- one try ----------------------------------------------------------------------------------
 */

static void reset(zctx *z)
{
    for (int32_t s = 0; s < z->ns; s++)
        z->st[s].nf = z->st[s].ni = z->st[s].nw = 0;
    for (int32_t r = 0; r < z->p; r++) {
        zrank *q = &z->rk[r];
        q->free = q->mem = q->first = q->busy = 0;
        z->td[r] = 0;
        z->s->len[r] = 0;
    }
    z->placed = 0;
    z->tree_on = 0;
}

/*
 * The ranks decide in the order of (decision time, rank). Two loops produce that order. The
 * pass loop finds the earliest time and lets every rank due then decide, in rank order: a
 * decision moves its own rank later (durations are positive) and wakes others only to later
 * times, so one pass settles the time, and in lockstep pipelines (f = b = w) a pass serves
 * many ranks for one scan. When passes serve few ranks (irregular durations), the winner tree
 * takes over, at O(log p) per decision. Both are instantiated per chunk count so that
 * decide() unrolls.
 */
static inline int loop_tree(zctx *z, unsigned pol, const int v)
{
    z->tree_on = 1;
    tree_build(z);
    while (z->placed < z->total) {
        int32_t r = z->tree[1].r;
        if (z->tree[1].t == INFINITY)
            return -1;
        tree_set(z, r, decide(z, r, pol, v));
    }
    return 0;
}

static inline int loop_pass(zctx *z, unsigned pol, const int v)
{
    const int32_t p = z->p;
    double *td = z->td;
    int64_t passes = 0, decisions = 0;
    while (z->placed < z->total) {
        double t = INFINITY;
        for (int32_t r = 0; r < p; r++)
            t = td[r] < t ? td[r] : t;
        if (t == INFINITY)
            return -1;
        z->now = t;
        z->rewind = INT32_MAX;
        for (int32_t r = 0; r < p;) {
            if (td[r] != t) {
                r++;
                continue;
            }
            td[r] = decide(z, r, pol, v);
            decisions++;
            if (z->rewind < r) {
                r = z->rewind;
                z->rewind = INT32_MAX;
            }
        }
        /* Fewer than p/8 decisions a pass: the tree is cheaper. */
        if (++passes >= 64 && decisions * 8 < passes * p)
            return loop_tree(z, pol, v);
    }
    return 0;
}

/* Runs policy pol; returns 0 and the makespan and bubble, or -1 when the try stalled. */
static int run(zctx *z, unsigned pol, double *makespan, double *bubble)
{
    reset(z);
    if (z->v == 1 ? loop_pass(z, pol, 1) : loop_pass(z, pol, 2))
        return -1;
    double mk = 0, bb = 0;
    for (int32_t r = 0; r < z->p; r++) {
        const zrank *q = &z->rk[r];
        if (q->free > mk)
            mk = q->free;
        if (q->free - q->first - q->busy > bb)
            bb = q->free - q->first - q->busy;
    }
    *makespan = mk;
    *bubble = bb;
    return 0;
}

/* The fallback: micro-batches one after the other on every rank, in the order that
 * one_mb_peak() found lowest. */
static void sequential(zctx *z)
{
    ps_schedule *s = z->s;
    for (int32_t r = 0; r < z->p; r++) {
        int32_t a = z->rk[r].st[0], b = z->rk[r].st[1];
        int order;
        one_mb_peak(&z->st[a], z->v == 2 ? &z->st[b] : NULL, &order);
        s->len[r] = 0;
        for (int32_t j = 0; j < z->m; j++) {
            ps__emit(s, r, PS_F, a, j);
            if (z->v == 1) {
                ps__emit(s, r, PS_I, a, j);
                ps__emit(s, r, PS_W, a, j);
                continue;
            }
            ps__emit(s, r, PS_F, b, j);
            ps__emit(s, r, PS_I, b, j);
            if (order == 0)
                ps__emit(s, r, PS_W, b, j);
            ps__emit(s, r, PS_I, a, j);
            if (order == 1)
                ps__emit(s, r, PS_W, b, j);
            ps__emit(s, r, PS_W, a, j);
            if (order == 2)
                ps__emit(s, r, PS_W, b, j);
        }
    }
}

/* The arrival of micro-batch 0's forward at each stage (a) and of its gradient (e), with
 * the weight x on every duration: the round trip of a micro-batch of weight x. */
static void chain_times(zctx *z, double x, double *a, double *e)
{
    for (int32_t s = 0; s < z->ns; s++)
        a[s] = s == 0 ? 0 : a[s - 1] + z->st[s - 1].f * x + z->st[s].cin_f;
    for (int32_t s = z->ns - 1; s >= 0; s--)
        e[s] =
            s == z->ns - 1 ? a[s] + z->st[s].f * x : e[s + 1] + z->st[s + 1].b * x + z->st[s].cin_i;
}

/*
 * A lower bound on the makespan: every rank's work after its first forward can arrive, and
 * the round trip of the heaviest micro-batch. *idle receives the idle time that a rank
 * starting at that arrival cannot avoid: until its first I (micro-batch 0's) can arrive it
 * only has forwards, as many as memory and the micro-batches allow, each at most the heaviest.
 * A try that reaches both ends the search. Without weights every weight is 1 (an exact factor).
 * Uses tf and ti as scratch.
 */
static double lower_bound(zctx *z, double *idle)
{
    double *a = z->tf, *e = z->ti, lb = 0, wsum = z->m, wmax = 1, w0 = 1;
    if (z->wt) {
        wsum = 0;
        wmax = w0 = z->wt[0];
        for (int32_t j = 0; j < z->m; j++) {
            wsum += z->wt[j];
            wmax = z->wt[j] > wmax ? z->wt[j] : wmax;
        }
    }
    chain_times(z, wmax, a, e);
    double chain = e[0] + z->st[0].b * wmax + z->st[0].w * wmax;
    if (w0 != wmax)
        chain_times(z, w0, a, e);
    *idle = 0;
    for (int32_t r = 0; r < z->p; r++) {
        const zstage *g0 = &z->st[z->rk[r].st[0]], *g1 = &z->st[z->rk[r].st[1]];
        double work = (g0->f + g0->b + g0->w) * wsum;
        if (z->v == 2)
            work += (g1->f + g1->b + g1->w) * wsum;
        double start = a[g0 - z->st],
               first_i = e[g1 - z->st] < e[g0 - z->st] ? e[g1 - z->st] : e[g0 - z->st];
        if (start + work > lb)
            lb = start + work;
        double nf = (double)z->v * z->m, mf = g0->mf < g1->mf ? g0->mf : g1->mf;
        if (z->limit < INFINITY && mf > 0 && floor(z->limit / mf) < nf)
            nf = floor(z->limit / mf);
        double fmax = (g0->f > g1->f ? g0->f : g1->f) * wmax;
        if (first_i - start - nf * fmax > *idle)
            *idle = first_i - start - nf * fmax;
    }
    return chain > lb ? chain : lb;
}

/*
 * The leads of each rank (ZB_LEAD): how many forwards of chunk 0 fit between the arrival of
 * its first forward and the earliest arrival of what chunk 0 then waits for, counting compute
 * only. On a loop rank that is its first I (2(p-r)-1 forwards when f = b: ZB-H2's warm-up);
 * on a V rank, chunk 1's first forward (2(p-r)-1: ZB-V's warm-up). lead[1] counts stages
 * instead (ZB_LEAD_STAGES). Uses tf and ti as scratch.
 */
static void set_leads(zctx *z)
{
    double *a = z->tf, *e = z->ti;
    for (int32_t s = 0; s < z->ns; s++)
        a[s] = s == 0 ? 0 : a[s - 1] + z->st[s - 1].f;
    for (int32_t s = z->ns - 1; s >= 0; s--)
        e[s] = s == z->ns - 1 ? a[s] + z->st[s].f : e[s + 1] + z->st[s + 1].b;
    for (int32_t r = 0; r < z->p; r++) {
        zrank *q = &z->rk[r];
        int32_t s0 = q->st[0];
        double gap = z->v == 2 ? a[q->st[1]] - a[s0] : e[s0] - a[s0];
        double f = z->st[s0].f, n = f > 0 ? floor(gap / f + 1e-9) : z->m;
        q->lead[0] = n < 1 ? 1 : n > z->m ? z->m : (int32_t)n;
        n = z->v == 2 ? q->st[1] - s0 : z->ns - s0;
        q->lead[1] = n < 1 ? 1 : n > z->m ? z->m : (int32_t)n;
    }
}

/* ---- the family --------------------------------------------------------------------------- */

static void fill_stage(zstage *g, const ps__params *p, int32_t s)
{
    const ps_stage_cost *sc = NULL;
    size_t n = ps_problem_stage_costs(p->pb, &sc);
    if (n) {
        g->f = sc[s].f;
        g->b = sc[s].b;
        g->w = sc[s].w;
    } else {
        g->f = ps_problem_get_cost(p->pb, PS_COST_F);
        g->b = ps_problem_get_cost(p->pb, PS_COST_B);
        g->w = ps_problem_get_cost(p->pb, PS_COST_W);
    }
    ps_stage_mem mm = ps_problem_memory(p->pb, s);
    g->mf = mm.f;
    g->mb = mm.b;
    g->mw = mm.w;
}

/* Stage of chunk k on rank r under the placements zb-auto supports. */
static inline int32_t chunk_stage(int32_t p, int32_t r, int k)
{
    return k == 0 ? r : 2 * p - 1 - r;
}

int ps__zb_auto_check(const ps__params *p, char *why)
{
    if (p->v != 1 && p->v != 2) {
        snprintf(why, PS__ERRLEN, "zb-auto supports vpp = 1 (loop) or 2 (V placement); got vpp=%d",
                 p->v);
        return -1;
    }
    double limit = ps_problem_mem_limit(p->pb);
    if (limit <= 0)
        return 0;
    for (int32_t r = 0; r < p->p; r++) {
        zstage a, b;
        int order;
        int32_t sa = chunk_stage(p->p, r, 0), sb = chunk_stage(p->p, r, 1);
        fill_stage(&a, p, sa);
        if (p->v == 2)
            fill_stage(&b, p, sb);
        double need = one_mb_peak(&a, p->v == 2 ? &b : NULL, &order);
        if (need <= limit * (1 + 1e-12))
            continue;
        if (p->v == 1)
            snprintf(why, PS__ERRLEN,
                     "zb-auto: memory limit %g is below the %g that one micro-batch needs on "
                     "rank %d (stage %d: F %+g, I %+g, W %+g)",
                     limit, need, r, sa, a.mf, a.mb, a.mw);
        else
            snprintf(why, PS__ERRLEN,
                     "zb-auto: memory limit %g is below the %g that one micro-batch needs on "
                     "rank %d, which holds the forwards of stages %d and %d at once (stage %d: "
                     "F %+g, I %+g, W %+g; stage %d: F %+g, I %+g, W %+g)",
                     limit, need, r, sa, sb, sa, a.mf, a.mb, a.mw, sb, b.mf, b.mb, b.mw);
        return -1;
    }
    return 0;
}

/*
 * The greedy is a heuristic. When it did not reach the lower bound, the handcrafted
 * schedules (ZB-H1 and ZB-H2 with one chunk, ZB-V with the V) are simulated under the same
 * costs and memory limit and replace its result when they are faster, so zb-auto is never
 * worse than a handcrafted schedule that fits the limit. They share zb-auto's placement and
 * its three actions per (stage, micro-batch), so their lists fit s as they are.
 */
static int consider_handcrafted(ps_schedule *s, const ps__params *p)
{
    static const char *const one[] = {"zb-h1", "zb-h2", NULL}, *const two[] = {"zb-v", NULL};
    ps_problem tmp = *p->pb; /* shallow: read-only use of pb's arrays */
    ps_schedule *cand = NULL;
    ps_sim *sim = NULL;
    ps_metrics met;
    int rc = ps_schedule_new(&cand, &s->al);
    if (!rc)
        rc = ps_sim_new(&sim, &s->al);
    if (!rc)
        rc = ps_sim_run(sim, s, &tmp);
    if (rc && rc != PS_EINVALID)
        goto out;
    rc = 0;
    ps_sim_metrics(sim, &met);
    double best = met.makespan;
    for (const char *const *name = p->v == 1 ? one : two; *name; name++) {
        tmp.family = ps_family_lookup(*name, NULL);
        tmp.group = 0;
        int grc = ps_schedule_generate(cand, &tmp);
        if (grc == PS_ENOMEM) {
            rc = grc;
            goto out;
        }
        if (grc)
            continue;
        int src = ps_sim_run(sim, cand, &tmp);
        if (src == PS_ENOMEM) {
            rc = src;
            goto out;
        }
        if (src) /* above the memory limit (or invalid): not a candidate */
            continue;
        ps_sim_metrics(sim, &met);
        if (met.makespan < best * (1 - 1e-12)) {
            best = met.makespan;
            for (int32_t r = 0; r < s->pp; r++) {
                memcpy(s->acts + s->off[r], cand->acts + cand->off[r],
                       (size_t)cand->len[r] * sizeof *s->acts);
                s->len[r] = cand->len[r];
            }
        }
    }
out:
    ps_sim_free(sim);
    ps_schedule_free(cand);
    if (rc)
        return ps__seterr(s->err, rc, "zb-auto: %s comparing with the handcrafted schedules",
                          ps_strerror(rc));
    return 0;
}

int ps__zb_auto_generate(ps_schedule *s, const ps__params *p)
{
    zctx z;
    memset(&z, 0, sizeof z);
    z.s = s;
    z.p = p->p;
    z.v = p->v;
    z.ns = p->p * p->v;
    z.m = p->m;
    z.total = 3LL * z.ns * z.m;
    z.limit = ps_problem_mem_limit(p->pb) > 0 ? ps_problem_mem_limit(p->pb) : INFINITY;
    z.cap = z.limit * (1 + 1e-12);
    ps_problem_microbatch_weights(p->pb, &z.wt);
    z.leaves = 1;
    while (z.leaves < z.p)
        z.leaves *= 2;
    size_t sm = (size_t)z.ns * (size_t)z.m;
    size_t bytes = sizeof(double) * (2 * sm + (size_t)z.p) + sizeof(zstage) * (size_t)z.ns +
                   sizeof(zrank) * (size_t)z.p + sizeof(znode) * 2 * (size_t)z.leaves;
    char *block = ps__alloc(&s->al, bytes, 1);
    if (!block)
        return ps__seterr(s->err, PS_ENOMEM, "out of memory for the zb-auto search (%zu bytes)",
                          bytes);
    z.tf = (double *)block;
    z.ti = z.tf + sm;
    z.td = z.ti + sm;
    z.st = (zstage *)(z.td + z.p);
    z.rk = (zrank *)(z.st + z.ns);
    z.tree = (znode *)(z.rk + z.p);

    double c = ps_problem_get_cost(p->pb, PS_COST_C);
    for (int32_t st = 0; st < z.ns; st++) {
        zstage *g = &z.st[st];
        fill_stage(g, p, st);
        g->rank = s->stage_rank[st];
    }
    if (p->pb->has_moe) {
        /* With a MoE model the simulator prices F, I and W with the overlap planner: schedule
         * with the same durations. */
        ps_stage_cost *mc = ps__alloc(&s->al, (size_t)z.ns, sizeof *mc);
        int rc = mc ? ps__moe_stage_fbw(p->pb, z.ns, 1, mc, s->err) : PS_ENOMEM;
        for (int32_t st = 0; st < z.ns && !rc; st++) {
            z.st[st].f = mc[st].f;
            z.st[st].b = mc[st].b;
            z.st[st].w = mc[st].w;
        }
        ps__free(&s->al, mc, (size_t)z.ns, sizeof *mc);
        if (rc) {
            ps__free(&s->al, block, bytes, 1);
            return rc == PS_ENOMEM ? ps__seterr(s->err, rc, "out of memory") : rc;
        }
    }
    for (int32_t st = 0; st < z.ns; st++) {
        zstage *g = &z.st[st];
        g->cin_f = st > 0 && z.st[st - 1].rank != g->rank ? c : 0;
        g->cin_i = st + 1 < z.ns && z.st[st + 1].rank != g->rank ? c : 0;
    }
    for (int32_t r = 0; r < z.p; r++) {
        zrank *q = &z.rk[r];
        memset(q, 0, sizeof *q);
        q->st[0] = chunk_stage(z.p, r, 0);
        q->st[1] = z.v == 2 ? chunk_stage(z.p, r, 1) : q->st[0];
        zstage *a = &z.st[q->st[0]], *b = &z.st[q->st[1]];
        /* A forward is admitted when the rest of its micro-batch's work here fits on top of
         * what the rank holds: on a V rank chunk 0's forward needs room for chunk 1's too
         * (the micro-batch releases nothing before that), so that the oldest micro-batch in
         * flight can always advance. */
        int order;
        if (z.v == 1) {
            a->need = one_mb_peak(a, NULL, &order);
        } else {
            const double d[] = {b->mf, b->mb, b->mw};
            a->need = one_mb_peak(a, b, &order);
            b->need = peak_of(d, 3);
        }
    }
    double idle, lb = lower_bound(&z, &idle);
    set_leads(&z);

    /* Tries: keep the best (makespan, then bubble); stop at the lower bound without bubble. */
    int best = -1, last = -1;
    double best_mk = INFINITY, best_bb = INFINITY;
    for (size_t i = 0; i < NTRIES; i++) {
        if (z.v == 1 && (tries[i] & ZB_CHUNK_FLAGS))
            continue;
        double mk, bb;
        last = (int)i;
        if (run(&z, tries[i], &mk, &bb))
            continue;
        if (mk < best_mk * (1 - 1e-12) || (mk <= best_mk * (1 + 1e-12) && bb < best_bb)) {
            best = (int)i;
            best_mk = mk;
            best_bb = bb;
        }
        if (best_mk <= lb * (1 + 1e-12) && best_bb <= idle + 1e-12 * lb)
            break;
    }
    if (best < 0) {
        sequential(&z);
    } else if (best != last) {
        double mk, bb;
        run(&z, tries[best], &mk, &bb);
    }
    ps__free(&s->al, block, bytes, 1);
    if (best >= 0 && best_mk <= lb * (1 + 1e-12))
        return 0; /* optimal: nothing can beat it */
    return consider_handcrafted(s, p);
}
