/*
 * The MoE layer model: operation names, and durations derived from model and cluster
 * dimensions (FLOPs over the achieved throughput; all-to-all volumes over bandwidths, flat or
 * hierarchical).
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const op_names[PS_OP_COUNT] = {
    "attn",       "dispatch", "mlp",    "shared",    "combine", "combine_b",  "shared_dx", "mlp_dx",
    "dispatch_b", "attn_dx",  "mlp_dw", "shared_dw", "attn_dw", "redispatch", "p2p"};

const char *ps_op_name(int op)
{
    return op >= 0 && op < PS_OP_COUNT ? op_names[op] : NULL;
}

int ps_op_is_comm(int op)
{
    return op == PS_OP_DISPATCH || op == PS_OP_COMBINE || op == PS_OP_COMBINE_B ||
           op == PS_OP_DISPATCH_B || op == PS_OP_REDISPATCH || op == PS_OP_P2P;
}

int ps_moe_derive(const ps_model_dims *model, const ps_cluster *cluster, int a2a, ps_moe_model *out,
                  ps_a2a_info *info, char *err, size_t errlen)
{
    (void)model, (void)cluster, (void)a2a, (void)out, (void)info;
    if (err && errlen)
        snprintf(err, errlen, "not implemented yet");
    return PS_EUNSUPPORTED;
}
