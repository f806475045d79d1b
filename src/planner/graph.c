/*
 * The operation DAG of a step: the forward of a chunk of layers, the backward of a chunk, or
 * both (a fused pair, different micro-batches, so the two parts share no edge and an
 * all-to-all of one can run under a computation of the other).
 *
 * Inside a layer the operations form the small DAG documented with ps_op in pipesched.h; the
 * layers of a part form a chain (forward layers in order, backward layers in reverse), the
 * end of one layer feeding the start of the next. An operation of zero duration (no shared
 * expert, no re-dispatch, the communication of a dense layer) gets no node: its successors
 * depend on its own inputs instead, so the DAG has no empty steps for the schedulers to walk.
 * The "ends" of a link of the chain (at most two nodes) are what the next operation waits on.
 *
 * Nodes are created in a topological order; the priorities (longest path to the end) are
 * computed afterwards in one backward sweep, which is all the list scheduler needs.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

/* The nodes a following operation depends on (n of them, at most two). */
typedef struct ends {
    int32_t id[2];
    int n;
} ends;

/*
 * Adds operation op of layer li (within the part's chunk) depending on the nodes in `in` and
 * on `extra` (-1: none); records it in the (part, layer, op) index. Returns its id, or -1
 * without adding anything when the operation takes no time.
 */
static int32_t add(ps_plan *pl, int op, int part, int32_t li, int dense, double dur, const ends *in,
                   int32_t extra)
{
    if (!(dur > 0))
        return -1;
    int32_t k = (int32_t)pl->nn++;
    ps__plan_node *x = &pl->n[k];
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

/* Ends holding one id, or the previous ends when id < 0 (the operation was skipped). */
static ends one(int32_t id, const ends *otherwise)
{
    if (id < 0)
        return *otherwise;
    ends e = {{id, -1}, 1};
    return e;
}

/* Forward layer i after `in`: attention, then the shared expert beside dispatch -> experts ->
 * combine. Returns what the next layer waits on: combine (or, when it takes no time, its own
 * inputs) and the shared expert. */
static ends forward_layer(ps_plan *pl, int32_t i, int dense, const double *t, const ends *in)
{
    ends a = one(add(pl, PS_OP_ATTN, 0, i, dense, t[PS_OP_ATTN], in, -1), in);
    int32_t sh = add(pl, PS_OP_SHARED, 0, i, dense, t[PS_OP_SHARED], &a, -1);
    ends d = one(add(pl, PS_OP_DISPATCH, 0, i, dense, t[PS_OP_DISPATCH], &a, -1), &a);
    ends x = one(add(pl, PS_OP_MLP, 0, i, dense, t[PS_OP_MLP], &d, -1), &d);
    ends c = one(add(pl, PS_OP_COMBINE, 0, i, dense, t[PS_OP_COMBINE], &x, -1), &x);
    if (sh >= 0 && !(c.n == 1 && c.id[0] == sh) && c.n < 2)
        c.id[c.n++] = sh;
    return c;
}

static void build_forward(ps_plan *pl, const ps_moe_model *m, int32_t l0, int32_t nl)
{
    ends in = {{-1, -1}, 0};
    for (int32_t i = 0; i < nl; i++) {
        int dense = l0 + i < m->dense_layers;
        in = forward_layer(pl, i, dense, dense ? m->dense.t : m->moe.t, &in);
    }
    if (m->p2p > 0)
        add(pl, PS_OP_P2P, 0, nl > 0 ? nl - 1 : 0, 0, m->p2p, &in, -1);
}

/*
 * Backward layer i after `in` (the output gradient): combine_b (and the re-dispatch) ->
 * expert dX -> dispatch_b -> attention dX, with the shared expert's dX beside them; with_dw
 * adds the weight gradients after their dX. Returns what the next layer waits on: attention
 * dX, or, when it takes no time, its own inputs (dispatch_b's ends and the shared dX).
 */
static ends backward_layer(ps_plan *pl, int32_t i, int dense, const double *t, const ends *in,
                           int with_dw)
{
    ends cb = one(add(pl, PS_OP_COMBINE_B, 1, i, dense, t[PS_OP_COMBINE_B], in, -1), in);
    int32_t rd = add(pl, PS_OP_REDISPATCH, 1, i, dense, t[PS_OP_REDISPATCH], in, -1);
    int32_t sdx = add(pl, PS_OP_SHARED_DX, 1, i, dense, t[PS_OP_SHARED_DX], in, -1);
    ends mdx = one(add(pl, PS_OP_MLP_DX, 1, i, dense, t[PS_OP_MLP_DX], &cb, rd), &cb);
    if (mdx.n == cb.n && mdx.id[0] == cb.id[0] && rd >= 0 && mdx.n < 2)
        mdx.id[mdx.n++] = rd; /* no expert dX: the re-dispatch still precedes dispatch_b */
    ends db = one(add(pl, PS_OP_DISPATCH_B, 1, i, dense, t[PS_OP_DISPATCH_B], &mdx, -1), &mdx);
    if (with_dw) {
        ends w = one(pl->idx[1][(size_t)i * PS_OP_COUNT + PS_OP_MLP_DX], &cb);
        add(pl, PS_OP_MLP_DW, 1, i, dense, t[PS_OP_MLP_DW], &w, -1);
        ends s = one(sdx, in);
        add(pl, PS_OP_SHARED_DW, 1, i, dense, t[PS_OP_SHARED_DW], &s, -1);
    }
    ends adx = one(add(pl, PS_OP_ATTN_DX, 1, i, dense, t[PS_OP_ATTN_DX], &db, sdx), &db);
    if (adx.n == db.n && adx.id[0] == db.id[0] && sdx >= 0 && adx.n < 2)
        adx.id[adx.n++] = sdx;
    if (with_dw)
        add(pl, PS_OP_ATTN_DW, 1, i, dense, t[PS_OP_ATTN_DW], &adx, -1);
    return adx;
}

/* The weight gradients of layer i alone (a W): no dependencies inside the step. */
static void weight_layer(ps_plan *pl, int32_t i, int dense, const double *t)
{
    add(pl, PS_OP_MLP_DW, 1, i, dense, t[PS_OP_MLP_DW], NULL, -1);
    add(pl, PS_OP_SHARED_DW, 1, i, dense, t[PS_OP_SHARED_DW], NULL, -1);
    add(pl, PS_OP_ATTN_DW, 1, i, dense, t[PS_OP_ATTN_DW], NULL, -1);
}

/* The backward of layers l0 .. l0+nl-1 in reverse; bkind PS_B, PS_I or PS_W. */
static void build_backward(ps_plan *pl, const ps_moe_model *m, int32_t l0, int32_t nl, int bkind)
{
    ends in = {{-1, -1}, 0};
    for (int32_t i = nl - 1; i >= 0; i--) {
        int dense = l0 + i < m->dense_layers;
        const double *t = dense ? m->dense.t : m->moe.t;
        if (bkind == PS_W)
            weight_layer(pl, i, dense, t);
        else
            in = backward_layer(pl, i, dense, t, &in, bkind == PS_B);
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
        ps__plan_node *x = &pl->n[k];
        for (int i = 0; i < x->ndep; i++) {
            ps__plan_node *d = &pl->n[x->dep[i]];
            if (d->dur + x->prio > d->prio)
                d->prio = d->dur + x->prio;
            if (x->stream == 1)
                d->feeds = 1;
        }
    }
}

void ps__graph_build(ps_plan *pl, const ps_moe_model *m, int32_t fl0, int32_t fn, int bkind,
                     int32_t bl0, int32_t bn)
{
    pl->nl[0] = fn;
    pl->nl[1] = bn;
    pl->l0[0] = fl0;
    pl->l0[1] = bl0;
    if (fn)
        build_forward(pl, m, fl0, fn);
    if (bn)
        build_backward(pl, m, bl0, bn, bkind);
    finish_dag(pl);
}
