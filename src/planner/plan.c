/*
 * The communication-overlap planner.
 *
 * A step of one device runs the sub-operations (ps_op) of a forward chunk and/or a backward
 * chunk on two streams, compute and communication. The chunk's layers form a chain per part
 * (forward layers in order, backward layers in reverse); inside a layer the operations form
 * the small DAG documented with ps_op in pipesched.h. The two parts of a fused step share no
 * edge (different micro-batches), so an all-to-all of one can run under a computation of the
 * other.
 *
 * A plan is a pair of stream orders. evaluate() turns orders into times: each stream runs its
 * operations in order, an operation starts when its stream is free and its predecessors have
 * ended; while the communication stream is busy, compute runs (1 + slowdown) times slower.
 * The methods:
 *   SERIAL     every operation after the previous one (no overlap at all);
 *   MINDSPEED  MindSpeed's fused order (reference adaptive_pipe.md 4.3): per layer pair,
 *              compute attn(F), shared(F), shared_dx(B), mlp_dx(B), mlp_dw(B), mlp(F),
 *              attn_dx(B), attn_dw(B); communication combine_b(B), dispatch(F), dispatch_b(B),
 *              combine(F); dispatch_b launched right after mlp_dx;
 *   MEGATRON   Megatron's combined 1F1B order: compute attn(F), mlp_dx + shared_dx(B),
 *              mlp_dw + shared_dw(B), mlp + shared(F), attn_dx(B), attn_dw(B); dispatch_b is
 *              issued after the expert dW, so it waits for it;
 *   ADAPTIVE   the best of two list schedules (critical-path priority, with and without a
 *              preference for operations that feed the communication stream) and both fixed
 *              orders, then local search: move one operation to another place in its
 *              stream's order while it shortens the step (then the exposed communication).
 * Single chunks (warm-up, cool-down, W) use self-overlap: the shared expert hides the
 * dispatch, shared dX hides combine_b, the weight gradients hide dispatch_b; the fixed
 * methods use the natural order, ADAPTIVE searches as above.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXDEP 3
#define SEARCH_MAX_OPS 4096 /* larger steps keep the best constructed plan */
#define SEARCH_WINDOW 24    /* how far an operation moves in one local-search step */
#define SEARCH_PASSES 50

typedef struct pnode {
    uint8_t op, stream, part, dense;
    int32_t layer;
    double dur;
    int32_t dep[MAXDEP];
    int32_t ndep;
    int32_t xdep;  /* extra edge of a fixed order (Megatron), -1 = none */
    uint8_t feeds; /* some successor runs on the communication stream */
    double prio;   /* longest path from this operation's start to the end */
} pnode;

struct ps_plan {
    ps_allocator al;
    pnode *n;
    size_t nn, ncap;
    /* Working orders, the best orders, times and flags, all ncap long. */
    int32_t *ord[2], *best[2], *tmp[2];
    size_t len[2];
    double *st, *en, *bst, *ben;
    uint8_t *fin;
    /* (part, layer in chunk, op) -> node id, for the fixed orders: idx[part] has
     * nlayers[part] * PS_OP_COUNT entries. */
    int32_t *idx[2];
    size_t idxcap[2];
    int32_t nl[2], l0[2];
    double slowdown;
    ps_plan_op *ops;
    size_t nops, opscap;
    ps_plan_stats stats;
    int have;
    char err[PS__ERRLEN];
};

int ps_plan_new(ps_plan **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_plan *pl = ps__calloc(&al, 1, sizeof *pl);
    if (!pl)
        return PS_ENOMEM;
    pl->al = al;
    *out = pl;
    return 0;
}

static void free_nodes(ps_plan *pl)
{
    const ps_allocator *a = &pl->al;
    size_t c = pl->ncap;
    ps__free(a, pl->n, c, sizeof *pl->n);
    for (int k = 0; k < 2; k++) {
        ps__free(a, pl->ord[k], c, sizeof(int32_t));
        ps__free(a, pl->best[k], c, sizeof(int32_t));
        ps__free(a, pl->tmp[k], c, sizeof(int32_t));
        pl->ord[k] = pl->best[k] = pl->tmp[k] = NULL;
    }
    ps__free(a, pl->st, c, sizeof(double));
    ps__free(a, pl->en, c, sizeof(double));
    ps__free(a, pl->bst, c, sizeof(double));
    ps__free(a, pl->ben, c, sizeof(double));
    ps__free(a, pl->fin, c, 1);
    pl->n = NULL;
    pl->st = pl->en = pl->bst = pl->ben = NULL;
    pl->fin = NULL;
    pl->ncap = 0;
}

void ps_plan_free(ps_plan *pl)
{
    if (!pl)
        return;
    free_nodes(pl);
    for (int k = 0; k < 2; k++)
        ps__free(&pl->al, pl->idx[k], pl->idxcap[k], sizeof(int32_t));
    ps__free(&pl->al, pl->ops, pl->opscap, sizeof *pl->ops);
    ps_allocator a = pl->al;
    ps__free(&a, pl, 1, sizeof *pl);
}

const char *ps_plan_last_error(const ps_plan *pl)
{
    return pl ? pl->err : "invalid argument: NULL plan";
}

/* Makes room for n nodes (and the per-node arrays). */
static int reserve(ps_plan *pl, size_t n)
{
    if (n <= pl->ncap)
        return 0;
    size_t c = pl->ncap ? pl->ncap : 64;
    while (c < n)
        c *= 2;
    free_nodes(pl);
    const ps_allocator *a = &pl->al;
    pl->n = ps__alloc(a, c, sizeof *pl->n);
    int ok = pl->n != NULL;
    for (int k = 0; k < 2; k++) {
        pl->ord[k] = ps__alloc(a, c, sizeof(int32_t));
        pl->best[k] = ps__alloc(a, c, sizeof(int32_t));
        pl->tmp[k] = ps__alloc(a, c, sizeof(int32_t));
        ok = ok && pl->ord[k] && pl->best[k] && pl->tmp[k];
    }
    pl->st = ps__alloc(a, c, sizeof(double));
    pl->en = ps__alloc(a, c, sizeof(double));
    pl->bst = ps__alloc(a, c, sizeof(double));
    pl->ben = ps__alloc(a, c, sizeof(double));
    pl->fin = ps__alloc(a, c, 1);
    ok = ok && pl->st && pl->en && pl->bst && pl->ben && pl->fin;
    pl->ncap = c;
    if (!ok) {
        free_nodes(pl);
        return PS_ENOMEM;
    }
    return 0;
}

/* ---- building the DAG of a step --------------------------------------------------------- */

typedef struct ends {
    int32_t id[2];
    int n;
} ends;

static int32_t add(ps_plan *pl, int op, int part, int32_t li, int dense, double dur, const ends *in,
                   int32_t extra)
{
    if (!(dur > 0))
        return -1;
    int32_t k = (int32_t)pl->nn++;
    pnode *x = &pl->n[k];
    x->op = (uint8_t)op;
    x->stream = (uint8_t)ps_op_is_comm(op);
    x->part = (uint8_t)part;
    x->dense = (uint8_t)dense;
    x->layer = pl->l0[part] + li;
    x->dur = dur;
    x->ndep = 0;
    x->xdep = -1;
    x->feeds = 0;
    for (int i = 0; in && i < in->n; i++)
        x->dep[x->ndep++] = in->id[i];
    if (extra >= 0)
        x->dep[x->ndep++] = extra;
    pl->idx[part][(size_t)li * PS_OP_COUNT + (size_t)op] = k;
    return k;
}

/* ends holding one id (or none when id < 0, then the previous ends carry on). */
static ends one(int32_t id, const ends *otherwise)
{
    if (id < 0)
        return *otherwise;
    ends e = {{id, -1}, 1};
    return e;
}

static void build_forward(ps_plan *pl, const ps_moe_model *m, int32_t l0, int32_t nl)
{
    ends in = {{-1, -1}, 0};
    for (int32_t i = 0; i < nl; i++) {
        int dense = l0 + i < m->dense_layers;
        const double *t = dense ? m->dense.t : m->moe.t;
        ends a = one(add(pl, PS_OP_ATTN, 0, i, dense, t[PS_OP_ATTN], &in, -1), &in);
        int32_t sh = add(pl, PS_OP_SHARED, 0, i, dense, t[PS_OP_SHARED], &a, -1);
        ends d = one(add(pl, PS_OP_DISPATCH, 0, i, dense, t[PS_OP_DISPATCH], &a, -1), &a);
        ends x = one(add(pl, PS_OP_MLP, 0, i, dense, t[PS_OP_MLP], &d, -1), &d);
        ends c = one(add(pl, PS_OP_COMBINE, 0, i, dense, t[PS_OP_COMBINE], &x, -1), &x);
        in = c;
        if (sh >= 0 && !(c.n == 1 && c.id[0] == sh)) {
            if (in.n < 2)
                in.id[in.n++] = sh;
        }
    }
    if (m->p2p > 0) {
        int32_t li = nl > 0 ? nl - 1 : 0;
        int32_t k = add(pl, PS_OP_P2P, 0, li, 0, m->p2p, &in, -1);
        (void)k;
    }
}

/* The backward of layers l0 .. l0+nl-1 in reverse; bkind PS_B, PS_I or PS_W. */
static void build_backward(ps_plan *pl, const ps_moe_model *m, int32_t l0, int32_t nl, int bkind)
{
    ends in = {{-1, -1}, 0};
    for (int32_t i = nl - 1; i >= 0; i--) {
        int dense = l0 + i < m->dense_layers;
        const double *t = dense ? m->dense.t : m->moe.t;
        if (bkind == PS_W) {
            add(pl, PS_OP_MLP_DW, 1, i, dense, t[PS_OP_MLP_DW], NULL, -1);
            add(pl, PS_OP_SHARED_DW, 1, i, dense, t[PS_OP_SHARED_DW], NULL, -1);
            add(pl, PS_OP_ATTN_DW, 1, i, dense, t[PS_OP_ATTN_DW], NULL, -1);
            continue;
        }
        ends cb = one(add(pl, PS_OP_COMBINE_B, 1, i, dense, t[PS_OP_COMBINE_B], &in, -1), &in);
        int32_t rd = add(pl, PS_OP_REDISPATCH, 1, i, dense, t[PS_OP_REDISPATCH], &in, -1);
        int32_t sdx = add(pl, PS_OP_SHARED_DX, 1, i, dense, t[PS_OP_SHARED_DX], &in, -1);
        ends mdx = one(add(pl, PS_OP_MLP_DX, 1, i, dense, t[PS_OP_MLP_DX], &cb, rd), &cb);
        if (mdx.n == cb.n && mdx.id[0] == cb.id[0] && rd >= 0 && mdx.n < 2)
            mdx.id[mdx.n++] = rd; /* no expert dX: the re-dispatch still precedes dispatch_b */
        ends db = one(add(pl, PS_OP_DISPATCH_B, 1, i, dense, t[PS_OP_DISPATCH_B], &mdx, -1), &mdx);
        int32_t wdw = -1, sdw = -1;
        if (bkind == PS_B) {
            ends w = one(pl->idx[1][(size_t)i * PS_OP_COUNT + PS_OP_MLP_DX], &cb);
            wdw = add(pl, PS_OP_MLP_DW, 1, i, dense, t[PS_OP_MLP_DW], &w, -1);
            ends s = one(sdx, &in);
            sdw = add(pl, PS_OP_SHARED_DW, 1, i, dense, t[PS_OP_SHARED_DW], &s, -1);
        }
        (void)wdw, (void)sdw;
        ends adx = one(add(pl, PS_OP_ATTN_DX, 1, i, dense, t[PS_OP_ATTN_DX], &db, sdx), &db);
        if (adx.n == db.n && adx.id[0] == db.id[0] && sdx >= 0 && adx.n < 2)
            adx.id[adx.n++] = sdx;
        if (bkind == PS_B)
            add(pl, PS_OP_ATTN_DW, 1, i, dense, t[PS_OP_ATTN_DW], &adx, -1);
        in = adx;
    }
    if (m->p2p > 0 && bkind != PS_W)
        add(pl, PS_OP_P2P, 1, 0, 0, m->p2p, &in, -1);
}

/* Successor flags and priorities (nodes are created in a topological order). */
static void finish_dag(ps_plan *pl)
{
    for (size_t k = 0; k < pl->nn; k++)
        pl->n[k].prio = pl->n[k].dur;
    for (size_t k = pl->nn; k-- > 0;) {
        pnode *x = &pl->n[k];
        for (int i = 0; i < x->ndep; i++) {
            pnode *d = &pl->n[x->dep[i]];
            if (d->dur + x->prio > d->prio)
                d->prio = d->dur + x->prio;
            if (x->stream == 1)
                d->feeds = 1;
        }
    }
}

/* ---- evaluation ------------------------------------------------------------------------- */

static int ready(const ps_plan *pl, int32_t k, int use_x)
{
    const pnode *x = &pl->n[k];
    for (int i = 0; i < x->ndep; i++)
        if (!pl->fin[x->dep[i]])
            return 0;
    return !(use_x && x->xdep >= 0 && !pl->fin[x->xdep]);
}

/*
 * Times of the orders o[0] (compute) and o[1] (communication) into st/en. Returns the
 * makespan, or -1 when the orders contradict the dependencies. With greedy set, the orders
 * are built instead: whenever a stream is free it takes the ready operation of highest
 * priority (prefer_feed: operations feeding the communication stream first).
 */
static double run(ps_plan *pl, int32_t *o[2], const size_t len[2], int use_x, int greedy,
                  int prefer_feed)
{
    const double slow = 1.0 + pl->slowdown;
    size_t i[2] = {0, 0};
    int32_t cur[2] = {-1, -1};
    double rem = 0, end1 = 0, t = 0, makespan = 0;
    memset(pl->fin, 0, pl->nn);
    for (;;) {
        for (int s = 0; s < 2; s++) {
            if (cur[s] >= 0 || i[s] >= len[s])
                continue;
            if (greedy) {
                size_t pick = len[s];
                for (size_t q = i[s]; q < len[s]; q++) {
                    int32_t k = o[s][q];
                    if (!ready(pl, k, use_x))
                        continue;
                    if (pick == len[s]) {
                        pick = q;
                        continue;
                    }
                    const pnode *a = &pl->n[k], *b = &pl->n[o[s][pick]];
                    int af = prefer_feed && a->feeds, bf = prefer_feed && b->feeds;
                    if (af > bf || (af == bf && a->prio > b->prio + 1e-12))
                        pick = q;
                }
                if (pick == len[s])
                    continue;
                int32_t k = o[s][pick];
                memmove(&o[s][i[s] + 1], &o[s][i[s]], (pick - i[s]) * sizeof(int32_t));
                o[s][i[s]] = k;
            } else if (!ready(pl, o[s][i[s]], use_x)) {
                continue;
            }
            int32_t k = o[s][i[s]];
            cur[s] = k;
            pl->st[k] = t;
            if (s == 0)
                rem = pl->n[k].dur;
            else
                end1 = t + pl->n[k].dur;
        }
        if (cur[0] < 0 && cur[1] < 0) {
            if (i[0] == len[0] && i[1] == len[1])
                return makespan;
            return -1.0;
        }
        double t0 = INFINITY, t1 = cur[1] >= 0 ? end1 : INFINITY;
        if (cur[0] >= 0)
            t0 = t + rem * (cur[1] >= 0 ? slow : 1.0);
        double tn = t0 < t1 ? t0 : t1;
        if (cur[0] >= 0)
            rem -= (tn - t) / (cur[1] >= 0 ? slow : 1.0);
        t = tn;
        if (cur[1] >= 0 && t1 <= tn) {
            pl->en[cur[1]] = t;
            pl->fin[cur[1]] = 1;
            cur[1] = -1;
            i[1]++;
        }
        if (cur[0] >= 0 && t0 <= tn) {
            pl->en[cur[0]] = t;
            pl->fin[cur[0]] = 1;
            cur[0] = -1;
            i[0]++;
        }
        if (t > makespan)
            makespan = t;
    }
}

/* All-to-all time (and p2p time) not covered by compute, from the times in st/en. */
static void exposure(const ps_plan *pl, int32_t *const o[2], const size_t len[2], const double *st,
                     const double *en, ps_plan_stats *out)
{
    double comm = 0, exposed = 0, p2p = 0, p2p_exp = 0, compute = 0;
    size_t j = 0;
    for (size_t q = 0; q < len[0]; q++)
        compute += en[o[0][q]] - st[o[0][q]];
    for (size_t q = 0; q < len[1]; q++) {
        int32_t k = o[1][q];
        double a = st[k], b = en[k], covered = 0;
        /* compute intervals are sorted and disjoint; skip those ending before a */
        while (j < len[0] && en[o[0][j]] <= a)
            j++;
        for (size_t r = j; r < len[0] && st[o[0][r]] < b; r++) {
            double x = st[o[0][r]] > a ? st[o[0][r]] : a;
            double y = en[o[0][r]] < b ? en[o[0][r]] : b;
            if (y > x)
                covered += y - x;
        }
        if (pl->n[k].op == PS_OP_P2P) {
            p2p += b - a;
            p2p_exp += b - a - covered;
        } else {
            comm += b - a;
            exposed += b - a - covered;
        }
    }
    out->compute = compute;
    out->comm = comm;
    out->exposed = exposed > 0 ? exposed : 0;
    out->overlap = comm > 0 ? 1.0 - out->exposed / comm : 1.0;
    out->p2p = p2p;
    out->p2p_exposed = p2p_exp > 0 ? p2p_exp : 0;
}

/* Copies the working orders and times as the best so far when they beat it. */
static int better(double d, double e, double bd, double be)
{
    double tol = 1e-9 * (bd > 1 ? bd : 1);
    return d < bd - tol || (d <= bd + tol && e < be - tol);
}

typedef struct cand {
    double dur, exp;
} cand;

/* Evaluates the working orders; keeps them as the best when better. */
static cand try_orders(ps_plan *pl, int use_x, cand *best)
{
    cand c = {-1, 0};
    double d = run(pl, pl->ord, pl->len, use_x, 0, 0);
    if (d < 0)
        return c;
    ps_plan_stats st;
    exposure(pl, pl->ord, pl->len, pl->st, pl->en, &st);
    c.dur = d;
    c.exp = st.exposed;
    if (best->dur < 0 || better(c.dur, c.exp, best->dur, best->exp)) {
        *best = c;
        for (int s = 0; s < 2; s++)
            memcpy(pl->best[s], pl->ord[s], pl->len[s] * sizeof(int32_t));
        memcpy(pl->bst, pl->st, pl->nn * sizeof(double));
        memcpy(pl->ben, pl->en, pl->nn * sizeof(double));
    }
    return c;
}

/* The natural order: node ids split by stream. */
static void natural(ps_plan *pl)
{
    pl->len[0] = pl->len[1] = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        int s = pl->n[k].stream;
        pl->ord[s][pl->len[s]++] = (int32_t)k;
    }
}

static void push(ps_plan *pl, int part, int32_t li, int op)
{
    if (li < 0 || li >= pl->nl[part])
        return;
    int32_t k = pl->idx[part][(size_t)li * PS_OP_COUNT + (size_t)op];
    if (k < 0)
        return;
    int s = pl->n[k].stream;
    pl->ord[s][pl->len[s]++] = k;
}

/*
 * A fixed fused order: forward layer q paired with the q-th backward layer processed (layer
 * nl-1-q of the backward chunk); leftover layers of the longer chunk follow in their own order.
 */
static void fixed_order(ps_plan *pl, int megatron)
{
    pl->len[0] = pl->len[1] = 0;
    int32_t nf = pl->nl[0], nb = pl->nl[1];
    int32_t pairs = nf > nb ? nf : nb;
    for (int32_t q = 0; q < pairs; q++) {
        int32_t f = q < nf ? q : -1, b = q < nb ? nb - 1 - q : -1;
        /* communication */
        push(pl, 1, b, PS_OP_COMBINE_B);
        push(pl, 1, b, PS_OP_REDISPATCH);
        push(pl, 0, f, PS_OP_DISPATCH);
        push(pl, 1, b, PS_OP_DISPATCH_B);
        push(pl, 0, f, PS_OP_COMBINE);
        /* compute */
        push(pl, 0, f, PS_OP_ATTN);
        if (!megatron) {
            push(pl, 0, f, PS_OP_SHARED);
            push(pl, 1, b, PS_OP_SHARED_DX);
            push(pl, 1, b, PS_OP_MLP_DX);
            push(pl, 1, b, PS_OP_MLP_DW);
            push(pl, 1, b, PS_OP_SHARED_DW);
            push(pl, 0, f, PS_OP_MLP);
        } else {
            push(pl, 1, b, PS_OP_MLP_DX);
            push(pl, 1, b, PS_OP_SHARED_DX);
            push(pl, 1, b, PS_OP_MLP_DW);
            push(pl, 1, b, PS_OP_SHARED_DW);
            push(pl, 0, f, PS_OP_MLP);
            push(pl, 0, f, PS_OP_SHARED);
        }
        push(pl, 1, b, PS_OP_ATTN_DX);
        push(pl, 1, b, PS_OP_ATTN_DW);
    }
    push(pl, 0, nf - 1, PS_OP_P2P);
    push(pl, 1, 0, PS_OP_P2P);
    /* Megatron issues dispatch_b after the expert dW (its program order). */
    for (int32_t b = 0; b < nb; b++) {
        int32_t db = pl->idx[1][(size_t)b * PS_OP_COUNT + PS_OP_DISPATCH_B];
        int32_t dw = pl->idx[1][(size_t)b * PS_OP_COUNT + PS_OP_MLP_DW];
        if (db >= 0)
            pl->n[db].xdep = megatron ? dw : -1;
    }
}

/* Local search: move one operation within its stream while the plan improves. */
static void local_search(ps_plan *pl, cand *best)
{
    for (int s = 0; s < 2; s++)
        memcpy(pl->ord[s], pl->best[s], pl->len[s] * sizeof(int32_t));
    for (int pass = 0; pass < SEARCH_PASSES; pass++) {
        int improved = 0;
        for (int s = 0; s < 2; s++) {
            size_t n = pl->len[s];
            for (size_t a = 0; a < n; a++) {
                size_t lo = a > SEARCH_WINDOW ? a - SEARCH_WINDOW : 0;
                size_t hi = a + SEARCH_WINDOW < n ? a + SEARCH_WINDOW : n - 1;
                for (size_t b = lo; b <= hi; b++) {
                    if (b == a)
                        continue;
                    int32_t *o = pl->ord[s];
                    int32_t k = o[a];
                    /* moving k before one of its own predecessors cannot work */
                    if (b < a) {
                        int bad = 0;
                        for (size_t q = b; q < a && !bad; q++)
                            for (int d = 0; d < pl->n[k].ndep; d++)
                                bad |= pl->n[k].dep[d] == o[q];
                        if (bad)
                            continue;
                        memmove(&o[b + 1], &o[b], (a - b) * sizeof(int32_t));
                    } else {
                        memmove(&o[a], &o[a + 1], (b - a) * sizeof(int32_t));
                    }
                    o[b] = k;
                    cand before = *best;
                    try_orders(pl, 0, best);
                    if (best->dur != before.dur || best->exp != before.exp) {
                        improved = 1;
                        a = b;
                        break;
                    }
                    memcpy(o, pl->best[s], n * sizeof(int32_t));
                }
            }
        }
        if (!improved)
            break;
    }
}

/*
 * 1 when best provably cannot be improved: it lasts as long as one stream's total work (the
 * compute stream needs at least its unstretched sum) and exposes no more all-to-all than the
 * compute could not cover. The local search is skipped then.
 */
static int optimal(const ps_plan *pl, const cand *best)
{
    double comp = 0, comm = 0, a2a = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        const pnode *x = &pl->n[k];
        if (x->stream) {
            comm += x->dur;
            a2a += x->op == PS_OP_P2P ? 0 : x->dur;
        } else {
            comp += x->dur;
        }
    }
    double lb = comp > comm ? comp : comm, tol = 1e-9 * (lb > 1 ? lb : 1);
    /* while communication slows compute down, stretched compute may cover more: only a
     * plan that exposes nothing is then known to be best */
    double least_exposed = a2a > comp && pl->slowdown == 0 ? a2a - comp : 0;
    return best->dur <= lb + tol && best->exp <= least_exposed + tol;
}

/* Serial plan: every operation after the previous one, forward part first. */
static void serial(ps_plan *pl)
{
    double t = 0;
    natural(pl);
    for (size_t k = 0; k < pl->nn; k++) {
        pl->bst[k] = t;
        t += pl->n[k].dur;
        pl->ben[k] = t;
    }
    for (int s = 0; s < 2; s++)
        memcpy(pl->best[s], pl->ord[s], pl->len[s] * sizeof(int32_t));
}

static int cmp_op(const void *a, const void *b)
{
    const ps_plan_op *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return 0;
}

int ps__plan_layers(ps_plan *pl, const ps_moe_model *m, int method, int32_t fl0, int32_t fn,
                    int bkind, int32_t bl0, int32_t bn)
{
    pl->have = 0;
    pl->nn = 0;
    pl->slowdown = m->slowdown;
    if (fn < 0)
        fn = 0;
    if (bn < 0)
        bn = 0;
    size_t need = (size_t)(fn + bn) * PS_OP_LAYER_COUNT + 2;
    int rc = reserve(pl, need);
    for (int p = 0; p < 2 && !rc; p++) {
        size_t n = (size_t)(p ? bn : fn) * PS_OP_COUNT + PS_OP_COUNT;
        if (n > pl->idxcap[p]) {
            int32_t *x = ps__alloc(&pl->al, n, sizeof(int32_t));
            if (!x) {
                rc = PS_ENOMEM;
                break;
            }
            ps__free(&pl->al, pl->idx[p], pl->idxcap[p], sizeof(int32_t));
            pl->idx[p] = x;
            pl->idxcap[p] = n;
        }
        for (size_t q = 0; q < n; q++)
            pl->idx[p][q] = -1;
    }
    if (rc)
        return ps__seterr(pl->err, rc, "out of memory for a plan of %zu operations", need);
    pl->nl[0] = fn;
    pl->nl[1] = bn;
    pl->l0[0] = fl0;
    pl->l0[1] = bl0;
    if (fn)
        build_forward(pl, m, fl0, fn);
    if (bn)
        build_backward(pl, m, bl0, bn, bkind);
    finish_dag(pl);

    cand best = {-1, 0};
    if (method == PS_PLANNER_SERIAL) {
        serial(pl);
        best.dur = pl->nn ? pl->ben[pl->nn - 1] : 0;
    } else {
        int fused = fn > 0 && bn > 0;
        if (method == PS_PLANNER_ADAPTIVE || !fused) {
            natural(pl);
            try_orders(pl, 0, &best);
        }
        if (fused && (method == PS_PLANNER_ADAPTIVE || method == PS_PLANNER_MINDSPEED)) {
            fixed_order(pl, 0);
            try_orders(pl, 0, &best);
        }
        if (fused && (method == PS_PLANNER_ADAPTIVE || method == PS_PLANNER_MEGATRON)) {
            fixed_order(pl, 1);
            try_orders(pl, 1, &best);
            for (size_t k = 0; k < pl->nn; k++)
                pl->n[k].xdep = -1;
        }
        if (method == PS_PLANNER_ADAPTIVE) {
            for (int feed = 0; feed < 2; feed++) {
                natural(pl);
                if (run(pl, pl->ord, pl->len, 0, 1, feed) >= 0)
                    try_orders(pl, 0, &best);
            }
            if (pl->nn <= SEARCH_MAX_OPS && !optimal(pl, &best))
                local_search(pl, &best);
        }
        if (best.dur < 0) /* cannot happen: the natural order is topological */
            return ps__seterr(pl->err, PS_EINVAL, "no feasible order");
    }

    /* Results. */
    if (pl->nn > pl->opscap) {
        ps_plan_op *o = ps__alloc(&pl->al, pl->ncap, sizeof *o);
        if (!o)
            return ps__seterr(pl->err, PS_ENOMEM, "out of memory");
        ps__free(&pl->al, pl->ops, pl->opscap, sizeof *pl->ops);
        pl->ops = o;
        pl->opscap = pl->ncap;
    }
    memset(&pl->stats, 0, sizeof pl->stats);
    exposure(pl, pl->best, pl->len, pl->bst, pl->ben, &pl->stats);
    pl->stats.duration = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        ps_plan_op *o = &pl->ops[k];
        const pnode *x = &pl->n[k];
        o->op = x->op;
        o->stream = x->stream;
        o->part = x->part;
        o->dense = x->dense;
        o->layer = x->layer;
        o->start = pl->bst[k];
        o->end = pl->ben[k];
        if (o->end > pl->stats.duration)
            pl->stats.duration = o->end;
    }
    pl->nops = pl->nn;
    qsort(pl->ops, pl->nops, sizeof *pl->ops, cmp_op);
    pl->have = 1;
    return 0;
}

const ps_plan_stats *ps__plan_stats(const ps_plan *pl)
{
    return &pl->stats;
}

/* First layer and layer count of model stage `stage` of `stages`. */
void ps__stage_layer_range(const ps_problem *pb, int32_t stages, int32_t stage, int32_t *l0,
                           int32_t *n)
{
    if (pb->n_stage_layers) {
        int32_t a = 0;
        for (int32_t s = 0; s < stage; s++)
            a += pb->stage_layers[s];
        *l0 = a;
        *n = pb->stage_layers[stage];
        return;
    }
    int32_t L = pb->moe.layers, q = L / stages, r = L % stages;
    int32_t few = stages - r; /* stages with q layers come first */
    *l0 = stage * q + (stage > few ? stage - few : 0);
    *n = q + (stage >= few);
}

void ps__stage_next(const ps_problem *pb, int32_t ms, int32_t st, int32_t *l0, int32_t *n,
                    int32_t *nd)
{
    if (pb->n_stage_layers) { /* explicit counts: the first layers add up */
        *l0 += *n;
        *n = pb->stage_layers[st];
    } else {
        ps__stage_layer_range(pb, ms, st, l0, n);
    }
    int32_t d = pb->moe.dense_layers - *l0;
    *nd = d < 0 ? 0 : (d > *n ? *n : d);
}

int ps_problem_stage_split(const ps_problem *pb, int stages, int32_t *first, int32_t *count,
                           int32_t *dense)
{
    if (!pb || stages < 1 || stages > PS_MAX_STAGES || !first || !count || !dense)
        return PS_EINVAL;
    if (!pb->has_moe)
        return PS_ENOTFOUND;
    char err[PS__ERRLEN];
    int rc = ps__check_stage_layers(pb, stages, err);
    if (rc)
        return rc;
    int32_t l0 = 0, n = 0, nd;
    for (int32_t st = 0; st < stages; st++) {
        ps__stage_next(pb, stages, st, &l0, &n, &nd);
        first[st] = l0;
        count[st] = n;
        dense[st] = nd;
    }
    return 0;
}

/* Checks pb's stage_layers against the number of model stages. */
int ps__check_stage_layers(const ps_problem *pb, int32_t stages, char *err)
{
    if (!pb->n_stage_layers)
        return 0;
    if (pb->n_stage_layers != (size_t)stages)
        return ps__seterr(err, PS_ECONFIG,
                          "stage_layers has %zu entries but the schedule has %d model stages",
                          pb->n_stage_layers, stages);
    long long sum = 0;
    for (size_t i = 0; i < pb->n_stage_layers; i++)
        sum += pb->stage_layers[i];
    if (sum != pb->moe.layers)
        return ps__seterr(err, PS_ECONFIG, "stage_layers sums to %lld layers but the model has %d",
                          sum, (int)pb->moe.layers);
    return 0;
}

int ps_plan_step(ps_plan *pl, const ps_problem *pb, int method, int stages, int fstage, int bkind,
                 int bstage)
{
    if (!pl)
        return PS_EINVAL;
    pl->have = 0;
    if (!pb)
        return ps__seterr(pl->err, PS_EINVAL, "ps_plan_step needs a problem");
    if (!pb->has_moe)
        return ps__seterr(pl->err, PS_ENOTFOUND, "the problem has no MoE model to plan");
    if (method < PS_PLANNER_ADAPTIVE || method > PS_PLANNER_SERIAL)
        return ps__seterr(pl->err, PS_EINVAL, "unknown planner method %d", method);
    if (stages < 1 || stages > PS_MAX_STAGES)
        return ps__seterr(pl->err, PS_EINVAL, "stages must be in [1, %d]; got %d", PS_MAX_STAGES,
                          stages);
    if (fstage < -1 || fstage >= stages || bstage < -1 || bstage >= stages)
        return ps__seterr(pl->err, PS_EINVAL,
                          "stages out of range: forward %d, backward %d of %d model stages", fstage,
                          bstage, stages);
    if (fstage < 0 && bstage < 0)
        return ps__seterr(pl->err, PS_EINVAL, "nothing to plan: no forward and no backward stage");
    if (bstage >= 0 && bkind != PS_B && bkind != PS_I && bkind != PS_W)
        return ps__seterr(pl->err, PS_EINVAL, "the backward kind must be B, I or W; got %d", bkind);
    if (fstage >= 0 && bstage >= 0 && bkind == PS_W)
        return ps__seterr(pl->err, PS_EINVAL, "a W cannot be fused with a forward");
    int rc = ps__check_stage_layers(pb, stages, pl->err);
    if (rc)
        return rc;
    int32_t fl0 = 0, fn = 0, bl0 = 0, bn = 0;
    if (fstage >= 0)
        ps__stage_layer_range(pb, stages, fstage, &fl0, &fn);
    if (bstage >= 0)
        ps__stage_layer_range(pb, stages, bstage, &bl0, &bn);
    return ps__plan_layers(pl, &pb->moe, method, fl0, fn, bkind, bl0, bn);
}

int ps_plan_stats_get(const ps_plan *pl, ps_plan_stats *out)
{
    if (!pl || !out)
        return PS_EINVAL;
    if (!pl->have)
        return PS_ESTATE;
    *out = pl->stats;
    return 0;
}

size_t ps_plan_ops(const ps_plan *pl, const ps_plan_op **ops)
{
    if (ops)
        *ops = pl && pl->have ? pl->ops : NULL;
    return pl && pl->have ? pl->nops : 0;
}

int ps__moe_stage_fbw(const ps_problem *pb, int32_t nstages, int32_t copies, ps_stage_cost *out,
                      char *err)
{
    int32_t ms = nstages / (copies > 0 ? copies : 1);
    int rc = ps__check_stage_layers(pb, ms, err);
    if (rc)
        return rc;
    ps_plan *pl;
    if (ps_plan_new(&pl, &pb->al))
        return ps__seterr(err, PS_ENOMEM, "out of memory");
    const ps_moe_model *m = &pb->moe;
    int32_t pd = -1, pn = -1; /* previous stage's composition: reuse its plans */
    int32_t l0 = 0, n = 0, nd;
    for (int32_t s = 0; s < ms && !rc; s++) {
        ps__stage_next(pb, ms, s, &l0, &n, &nd);
        if (s > 0 && nd == pd && n == pn) {
            out[s] = out[s - 1];
            continue;
        }
        pd = nd;
        pn = n;
        double *v[3] = {&out[s].f, &out[s].b, &out[s].w};
        for (int k = 0; k < 3 && !rc; k++) {
            rc = k == 0 ? ps__plan_layers(pl, m, m->planner, l0, n, PS_B, 0, 0)
                        : ps__plan_layers(pl, m, m->planner, 0, 0, k == 1 ? PS_I : PS_W, l0, n);
            if (rc)
                ps__seterr(err, rc, "overlap planner: %s", ps_plan_last_error(pl));
            else
                *v[k] = pl->stats.duration;
        }
    }
    for (int32_t s = ms; s < nstages && !rc; s++)
        out[s] = out[s % ms];
    ps_plan_free(pl);
    return rc;
}
