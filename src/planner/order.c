/*
 * The orders that are not searched: the natural order (node ids split by stream, which is
 * topological because nodes are created in a topological order), the fused orders of
 * MindSpeed and Megatron, and the serial plan.
 *
 * The fused orders pair forward layer q with the q-th backward layer processed (layer nl-1-q
 * of the backward chunk) and give, per pair, the program order of the reference
 * implementation:
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

void ps__order_natural(ps_plan *pl)
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
void ps__order_fused(ps_plan *pl, int megatron)
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

/* Serial plan: every operation after the previous one, forward part first. */
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
