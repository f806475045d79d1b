/*
 * The overlap planner's handle: its life cycle and memory, the public entry points, and the
 * results (the operations in start order and the stats of the step).
 *
 * A plan is a pair of stream orders (compute, communication) for the operations of one step;
 * ps__plan_layers() reads as its phases: build the DAG (graph.c), choose the orders for the
 * method (order.c, search.c), publish the best. The simulator calls it for every distinct step
 * of an iteration with the same handle, so the handle's arrays only grow: once they fit the
 * largest step, planning allocates nothing.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

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

/* Frees the node array and the per-node arrays (all ncap long). */
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
    for (int k = 0; k < 2; k++) {
        ps__free(a, pl->cp[k], c, sizeof *pl->cp[k]);
        pl->cp[k] = NULL;
    }
    ps__free(a, pl->fin_order, c, sizeof *pl->fin_order);
    ps__free(a, pl->dirty, c, sizeof *pl->dirty);
    pl->dirty = NULL;
    ps__free(a, pl->cst, c, sizeof(double));
    ps__free(a, pl->cen, c, sizeof(double));
    pl->fin_order = NULL;
    pl->cst = pl->cen = NULL;
    ps__free(a, pl->lsw, c ? 9 * c + 1 : 0, sizeof(int32_t));
    ps__free(a, pl->lsort, c, sizeof *pl->lsort);
    pl->lsw = NULL;
    pl->lsort = NULL;
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
    ps__free(&pl->al, pl->anc, pl->anc_cap, sizeof *pl->anc);
    ps__free(&pl->al, pl->ops, pl->opscap, sizeof *pl->ops);
    ps_allocator a = pl->al;
    ps__free(&a, pl, 1, sizeof *pl);
}

const char *ps_plan_last_error(const ps_plan *pl)
{
    return pl ? pl->err : "invalid argument: NULL plan";
}

/* Makes room for n nodes (and the per-node arrays), doubling from 64. */
static int reserve_nodes(ps_plan *pl, size_t n)
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
    for (int k = 0; k < 2; k++) {
        pl->cp[k] = ps__alloc(a, c, sizeof *pl->cp[k]);
        ok = ok && pl->cp[k];
    }
    pl->fin_order = ps__alloc(a, c, sizeof *pl->fin_order);
    pl->dirty = ps__alloc(a, c, sizeof *pl->dirty);
    ok = ok && pl->dirty;
    pl->cst = ps__alloc(a, c, sizeof(double));
    pl->cen = ps__alloc(a, c, sizeof(double));
    ok = ok && pl->fin_order && pl->cst && pl->cen;
    pl->lsw = ps__alloc(a, 9 * c + 1, sizeof(int32_t));
    pl->lsort = ps__alloc(a, c, sizeof *pl->lsort);
    ok = ok && pl->lsw && pl->lsort;
    pl->ncap = c;
    if (!ok) {
        free_nodes(pl);
        return PS_ENOMEM;
    }
    return 0;
}

/* Room for a step of fn forward and bn backward layers, and an empty (part, layer, op) index
 * for graph.c to fill. */
static int reserve(ps_plan *pl, int32_t fn, int32_t bn)
{
    size_t need = (size_t)(fn + bn) * PS_OP_LAYER_COUNT + 2;
    int rc = reserve_nodes(pl, need);
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
    return 0;
}

/* The time of [a, b) that the compute operations o0[*j .. hi) cover: their intervals are
 * sorted and disjoint, and *j moves past those that end by a (the callers' next a is later). */
static double covered(const int32_t *o0, size_t *j, size_t hi, double a, double b, const double *st,
                      const double *en)
{
    double c = 0;
    while (*j < hi && en[o0[*j]] <= a)
        (*j)++;
    for (size_t r = *j; r < hi && st[o0[r]] < b; r++) {
        double x = st[o0[r]] > a ? st[o0[r]] : a;
        double y = en[o0[r]] < b ? en[o0[r]] : b;
        if (y > x)
            c += y - x;
    }
    return c;
}

void ps__plan_exposure(const ps_plan *pl, int32_t *const o[2], const size_t len[2],
                       const double *st, const double *en, ps_plan_stats *out)
{
    double comm = 0, exposed = 0, p2p = 0, p2p_exp = 0, compute = 0;
    size_t j = 0;
    for (size_t q = 0; q < len[0]; q++)
        compute += en[o[0][q]] - st[o[0][q]];
    for (size_t q = 0; q < len[1]; q++) {
        int32_t k = o[1][q];
        double a = st[k], b = en[k], cov = covered(o[0], &j, len[0], a, b, st, en);
        if (pl->n[k].op == PS_OP_P2P) {
            p2p += b - a;
            p2p_exp += b - a - cov;
        } else {
            comm += b - a;
            exposed += b - a - cov;
        }
    }
    out->compute = compute;
    out->comm = comm;
    out->exposed = exposed > 0 ? exposed : 0;
    out->overlap = comm > 0 ? 1.0 - out->exposed / comm : 1.0;
    out->p2p = p2p;
    out->p2p_exposed = p2p_exp > 0 ? p2p_exp : 0;
}

double ps__plan_exposure_part(const ps_plan *pl, int32_t *const o[2], const size_t lo[2],
                              const size_t hi[2], const double *st, const double *en)
{
    double exposed = 0;
    size_t j = lo[0];
    for (size_t q = lo[1]; q < hi[1]; q++) {
        int32_t k = o[1][q];
        if (pl->n[k].op != PS_OP_P2P)
            exposed += en[k] - st[k] - covered(o[0], &j, hi[0], st[k], en[k], st, en);
    }
    return exposed;
}

/* Start order; the compute stream first on ties. */
static int cmp_op(const void *a, const void *b)
{
    const ps_plan_op *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return 0;
}

/* Publishes the best orders and times: the stats, and the operations in start order. */
static int publish(ps_plan *pl)
{
    if (pl->nn > pl->opscap) {
        ps_plan_op *o = ps__alloc(&pl->al, pl->ncap, sizeof *o);
        if (!o)
            return ps__seterr(pl->err, PS_ENOMEM, "out of memory");
        ps__free(&pl->al, pl->ops, pl->opscap, sizeof *pl->ops);
        pl->ops = o;
        pl->opscap = pl->ncap;
    }
    memset(&pl->stats, 0, sizeof pl->stats);
    ps__plan_exposure(pl, pl->best, pl->len, pl->bst, pl->ben, &pl->stats);
    pl->stats.duration = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        ps_plan_op *o = &pl->ops[k];
        const ps__plan_node *x = &pl->n[k];
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
    if (pl->nops) /* a stage of no layers plans nothing, and qsort(NULL, 0) is undefined */
        qsort(pl->ops, pl->nops, sizeof *pl->ops, cmp_op);
    pl->have = 1;
    return 0;
}

int ps__plan_layers(ps_plan *pl, const ps_moe_model *m, int method, int32_t fl0, int32_t fn,
                    int bkind, int32_t bl0, int32_t bn)
{
    pl->have = 0;
    pl->nn = 0;
    pl->clean = 0;
    pl->slowdown = m->slowdown;
    if (fn < 0)
        fn = 0;
    if (bn < 0)
        bn = 0;
    int rc = reserve(pl, fn, bn);
    if (rc)
        return rc;
    ps__graph_build(pl, m, fl0, fn, bkind, bl0, bn);
    if (method == PS_PLANNER_SERIAL)
        ps__order_serial(pl);
    else if (ps__search_orders(pl, method)) /* cannot happen: the natural order is topological */
        return ps__seterr(pl->err, PS_EINVAL, "no feasible order");
    return publish(pl);
}

const ps_plan_stats *ps__plan_stats(const ps_plan *pl)
{
    return &pl->stats;
}

/* The checks of ps_plan_step()'s arguments, each with its message. */
static int check_step(ps_plan *pl, const ps_problem *pb, int method, int stages, int fstage,
                      int bkind, int bstage)
{
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
    return ps__check_stage_layers(pb, stages, pl->err);
}

int ps_plan_step(ps_plan *pl, const ps_problem *pb, int method, int stages, int fstage, int bkind,
                 int bstage)
{
    if (!pl)
        return PS_EINVAL;
    pl->have = 0;
    int rc = check_step(pl, pb, method, stages, fstage, bkind, bstage);
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
