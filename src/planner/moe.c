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

const char *ps_planner_name(int planner)
{
    static const char *const names[] = {"adaptive", "mindspeed", "megatron", "serial"};
    return planner >= PS_PLANNER_ADAPTIVE && planner <= PS_PLANNER_SERIAL ? names[planner] : NULL;
}

int ps_op_is_comm(int op)
{
    return op == PS_OP_DISPATCH || op == PS_OP_COMBINE || op == PS_OP_COMBINE_B ||
           op == PS_OP_DISPATCH_B || op == PS_OP_REDISPATCH || op == PS_OP_P2P;
}

/* Milliseconds to move bytes at bw GB/s. */
static double xfer_ms(double bytes, double bw)
{
    return bytes > 0 ? bytes / (bw * 1e6) : 0.0;
}

/* Checks that *v is finite and in [lo, hi] (lo exclusive when open); names it in err. */
static int check_dim(const char *name, double v, double lo, int open, double hi, char *err,
                     size_t errlen)
{
    if (isfinite(v) && (open ? v > lo : v >= lo) && v <= hi)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s must be %s %g and <= %g; got %g", name, open ? ">" : ">=", lo, hi,
                 v);
    return PS_ECONFIG;
}

void ps__a2a_estimate(const ps_model_dims *md, const ps_cluster *cl, ps_a2a_info *out)
{
    double S = md->tokens, H = md->hidden, k = md->top_k;
    double b = md->bytes > 0 ? md->bytes : 2.0;
    double N = cl->nodes, G = cl->devices_per_node;
    double tok = S * H * b; /* bytes of one copy of every local token */
    out->flat_inter = tok * k * (N - 1) / N;
    out->flat_intra = tok * k * (G - 1) / (N * G);
    out->hier_inter = tok * (N - 1);
    out->hier_intra = tok * k * (G - 1) / G;
    double ai = cl->lat_intra / 1000.0, ae = cl->lat_inter / 1000.0;
    /* Flat: one collective; the inter- and intra-node parts travel at the same time. */
    double ti = xfer_ms(out->flat_intra, cl->bw_intra), te = xfer_ms(out->flat_inter, cl->bw_inter);
    out->flat_time = (N > 1 ? ae : ai) + (te > ti ? te : ti);
    /* Hierarchical: the inter-node all-gather, then the intra-node all-to-all. */
    out->hier_time = (N > 1 ? ae + xfer_ms(out->hier_inter, cl->bw_inter) : 0.0) +
                     (G > 1 ? ai + xfer_ms(out->hier_intra, cl->bw_intra) : 0.0);
    out->chosen = out->hier_time < out->flat_time ? PS_A2A_HIERARCHICAL : PS_A2A_FLAT;
}

int ps_moe_derive(const ps_model_dims *md, const ps_cluster *cl, int a2a, ps_moe_model *out,
                  ps_a2a_info *info, char *err, size_t errlen)
{
    if (!md || !cl || !out)
        return PS_EINVAL;
    const double big = 1e15;
    int rc = 0;
#define DIM(name, v, lo, open, hi)                                                                 \
    if (!rc)                                                                                       \
    rc = check_dim(name, v, lo, open, hi, err, errlen)
    DIM("model.hidden", md->hidden, 0, 1, big);
    DIM("model.tokens", md->tokens, 0, 1, big);
    DIM("model.seq_len", md->seq_len, 0, 0, big);
    DIM("model.experts", md->experts, 1, 0, big);
    DIM("model.top_k", md->top_k, 1, 0, md->experts);
    DIM("model.expert_ffn", md->expert_ffn, 0, 1, big);
    DIM("model.shared_experts", md->shared_experts, 0, 0, big);
    DIM("model.shared_ffn", md->shared_ffn, 0, 0, big);
    DIM("model.dense_ffn", md->dense_ffn, 0, 0, big);
    DIM("model.attn_flops", md->attn_flops, 0, 0, big);
    DIM("model.heads_dim", md->heads_dim, 0, 0, big);
    DIM("model.bytes", md->bytes, 0, 0, 64);
    DIM("model.layers", md->layers, 1, 0, PS_MAX_LAYERS);
    DIM("model.dense_layers", md->dense_layers, 0, 0, md->layers);
    DIM("cluster.devices_per_node", cl->devices_per_node, 1, 0, 1e6);
    DIM("cluster.nodes", cl->nodes, 1, 0, 1e6);
    DIM("cluster.bw_intra", cl->bw_intra, 0, cl->devices_per_node > 1, big);
    DIM("cluster.bw_inter", cl->bw_inter, 0, cl->nodes > 1, big);
    DIM("cluster.lat_intra", cl->lat_intra, 0, 0, 1e9);
    DIM("cluster.lat_inter", cl->lat_inter, 0, 0, 1e9);
    DIM("cluster.tflops", cl->tflops, 0, 1, 1e9);
    DIM("cluster.efficiency", cl->efficiency, 0, 1, 1);
    DIM("cluster.slowdown", cl->slowdown, 0, 0, 100);
#undef DIM
    if (!rc && md->dense_layers > 0 && !(md->dense_ffn > 0)) {
        if (err && errlen)
            snprintf(err, errlen, "model.dense_ffn must be > 0 when model.dense_layers > 0");
        rc = PS_ECONFIG;
    }
    if (!rc && (a2a < PS_A2A_AUTO || a2a > PS_A2A_HIERARCHICAL)) {
        if (err && errlen)
            snprintf(err, errlen, "unknown all-to-all algorithm %d", a2a);
        rc = PS_ECONFIG;
    }
    if (rc)
        return rc;

    double H = md->hidden, S = md->tokens, k = md->top_k;
    double seq = md->seq_len > 0 ? md->seq_len : S;
    double ms_per_flop = 1e3 / (cl->tflops * 1e12 * cl->efficiency);
    /* Attention per token: projections (attn_flops, default 8 H^2) plus the router (2 H E);
     * causal scores QK^T and AV: 2 seq hd / 2 with hd = heads x (qk + v) dims (default 2 H). */
    double gemm = (md->attn_flops > 0 ? md->attn_flops : 8.0 * H * H) + 2.0 * H * md->experts;
    double hd = md->heads_dim > 0 ? md->heads_dim : 2.0 * H;
    double score = seq * hd;
    double expert = 6.0 * H * md->expert_ffn; /* SwiGLU: three matrices, 2 FLOPs per MAC */
    double sffn = md->shared_ffn > 0 ? md->shared_ffn : md->expert_ffn;
    double shared = 6.0 * H * sffn * md->shared_experts;

    ps_a2a_info a;
    ps__a2a_estimate(md, cl, &a);
    if (a2a != PS_A2A_AUTO)
        a.chosen = a2a;
    double t_a2a = a.chosen == PS_A2A_HIERARCHICAL ? a.hier_time : a.flat_time;

    memset(out, 0, sizeof *out);
    out->layers = md->layers;
    out->dense_layers = md->dense_layers;
    out->slowdown = cl->slowdown;
    out->planner = PS_PLANNER_ADAPTIVE;
    double *m = out->moe.t, *d = out->dense.t;
    m[PS_OP_ATTN] = d[PS_OP_ATTN] = S * (gemm + score) * ms_per_flop;
    m[PS_OP_ATTN_DX] = d[PS_OP_ATTN_DX] = S * (gemm + 2.0 * score) * ms_per_flop;
    m[PS_OP_ATTN_DW] = d[PS_OP_ATTN_DW] = S * gemm * ms_per_flop;
    m[PS_OP_MLP] = m[PS_OP_MLP_DX] = m[PS_OP_MLP_DW] = S * k * expert * ms_per_flop;
    m[PS_OP_SHARED] = m[PS_OP_SHARED_DX] = m[PS_OP_SHARED_DW] = S * shared * ms_per_flop;
    m[PS_OP_DISPATCH] = m[PS_OP_COMBINE] = m[PS_OP_COMBINE_B] = m[PS_OP_DISPATCH_B] = t_a2a;
    m[PS_OP_REDISPATCH] = md->permute_recompute ? t_a2a : 0.0;
    d[PS_OP_MLP] = d[PS_OP_MLP_DX] = d[PS_OP_MLP_DW] = S * 6.0 * H * md->dense_ffn * ms_per_flop;
    if (md->dense_layers == 0)
        d[PS_OP_MLP] = d[PS_OP_MLP_DX] = d[PS_OP_MLP_DW] = 0.0;
    if (info)
        *info = a;
    return 0;
}
