/*
 * The orders that are not searched: the natural order (node ids split by stream, which is
 * topological because nodes are created in a topological order), the fused orders of
 * MindSpeed and Megatron, and the serial plan.
 *
 * The fused orders pair forward layer q with the q-th backward layer processed (layer nl-1-q
 * of the backward chunk) and give, per pair, the program order of the reference
 * implementation, written as a table so that it reads as the reference does:
 *
 *   MINDSPEED  (adaptive_pipe.md 4.3) compute attn(F), shared(F), shared_dx(B), mlp_dx(B),
 *              mlp_dw(B), shared_dw(B), mlp(F), attn_dx(B), attn_dw(B); communication
 *              combine_b(B), redispatch(B), dispatch(F), dispatch_b(B), combine(F);
 *   MEGATRON   the combined 1F1B order: compute attn(F), mlp_dx + shared_dx(B), mlp_dw +
 *              shared_dw(B), mlp + shared(F), attn_dx(B), attn_dw(B); same communication,
 *              but dispatch_b is issued after the expert dW, so it waits for it (an extra edge,
 *              xdep, that only the Megatron timing honours).
 *
 * Leftover layers of the longer chunk follow in their own order; the p2p sends come last.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <string.h>

/* One entry of a fused order: an operation of the forward (part 0) or backward (part 1)
 * layer of the pair. */
typedef struct slot {
    uint8_t part, op;
} slot;

enum { FW = 0, BW = 1 };

/* Per pair; each operation goes to its own stream's order. */
static const slot mindspeed[] = {
    /* communication */
    {BW, PS_OP_COMBINE_B},
    {BW, PS_OP_REDISPATCH},
    {FW, PS_OP_DISPATCH},
    {BW, PS_OP_DISPATCH_B},
    {FW, PS_OP_COMBINE},
    /* compute */
    {FW, PS_OP_ATTN},
    {FW, PS_OP_SHARED},
    {BW, PS_OP_SHARED_DX},
    {BW, PS_OP_MLP_DX},
    {BW, PS_OP_MLP_DW},
    {BW, PS_OP_SHARED_DW},
    {FW, PS_OP_MLP},
    {BW, PS_OP_ATTN_DX},
    {BW, PS_OP_ATTN_DW}};
static const slot megatron_1f1b[] = {
    /* communication */
    {BW, PS_OP_COMBINE_B},
    {BW, PS_OP_REDISPATCH},
    {FW, PS_OP_DISPATCH},
    {BW, PS_OP_DISPATCH_B},
    {FW, PS_OP_COMBINE},
    /* compute */
    {FW, PS_OP_ATTN},
    {BW, PS_OP_MLP_DX},
    {BW, PS_OP_SHARED_DX},
    {BW, PS_OP_MLP_DW},
    {BW, PS_OP_SHARED_DW},
    {FW, PS_OP_MLP},
    {FW, PS_OP_SHARED},
    {BW, PS_OP_ATTN_DX},
    {BW, PS_OP_ATTN_DW}};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

void ps__order_natural(ps_plan *pl)
{
    pl->len[0] = pl->len[1] = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        int s = pl->n[k].stream;
        pl->ord[s][pl->len[s]++] = (int32_t)k;
    }
}

/* Appends operation op of layer li of part to its stream's order, when that node exists. */
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

/* Megatron issues dispatch_b after the expert dW (its program order); MindSpeed does not. */
static void set_dispatch_b_edges(ps_plan *pl, int megatron)
{
    for (int32_t b = 0; b < pl->nl[1]; b++) {
        int32_t db = pl->idx[1][(size_t)b * PS_OP_COUNT + PS_OP_DISPATCH_B];
        int32_t dw = pl->idx[1][(size_t)b * PS_OP_COUNT + PS_OP_MLP_DW];
        if (db >= 0)
            pl->n[db].xdep = megatron ? dw : -1;
    }
}

void ps__order_fused(ps_plan *pl, int megatron)
{
    const slot *order = megatron ? megatron_1f1b : mindspeed;
    size_t nslots = megatron ? LEN(megatron_1f1b) : LEN(mindspeed);
    pl->len[0] = pl->len[1] = 0;
    int32_t nf = pl->nl[0], nb = pl->nl[1];
    int32_t pairs = nf > nb ? nf : nb;
    for (int32_t q = 0; q < pairs; q++) {
        int32_t layer[2] = {q < nf ? q : -1, q < nb ? nb - 1 - q : -1};
        for (size_t i = 0; i < nslots; i++)
            push(pl, order[i].part, layer[order[i].part], order[i].op);
    }
    push(pl, 0, nf - 1, PS_OP_P2P);
    push(pl, 1, 0, PS_OP_P2P);
    set_dispatch_b_edges(pl, megatron);
}

/* Every operation after the previous one, forward part first: no overlap at all. */
void ps__order_serial(ps_plan *pl)
{
    double t = 0;
    ps__order_natural(pl);
    for (size_t k = 0; k < pl->nn; k++) {
        pl->bst[k] = t;
        t += pl->n[k].dur;
        pl->ben[k] = t;
    }
    for (int s = 0; s < 2; s++)
        memcpy(pl->best[s], pl->ord[s], pl->len[s] * sizeof(int32_t));
}
