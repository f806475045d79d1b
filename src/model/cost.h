/*
 * The formulas of the performance model (cost.c): FLOPs and seconds of one layer's kernels,
 * collectives in the alpha-beta model, parameters and activation bytes. estimate.c turns them
 * into per-stage durations and bytes and simulates the iteration. Every formula and its source
 * is in docs/model.md; the names here follow its notation. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_COST_H
#define PS_MODEL_COST_H

#include "internal.h"

#include <pipesched/model.h>

/* A checked run with its derived sizes: what every formula reads, computed once per run. */
typedef struct ps__setup {
    const ps_transformer *m;
    const ps_hardware *hw;
    const ps_train *tr;
    int32_t tp, pp, vpp, cp, ep, etp, dp, gpn, sp;
    int32_t stages, model_stages, copies; /* virtual stages, model stages, model copies */
    int zb_auto;      /* the family is zb-auto: planned under a memory limit (estimate.c) */
    int64_t micro;    /* micro-batches per iteration */
    double b, s, T;   /* micro-batch sequences, sequence length, tokens b.s/cp on a device */
    double ts;        /* token sharding of the tensors outside attention/MLP: t with SP, else 1 */
    double dh;        /* head dim */
    double kv_dev;    /* KV heads on one TP rank (g / t, at least 1: replicated below t) */
    double peak_gemm; /* FLOP/s of the GEMMs (the precision's peak) */
    double peak_bf16; /* FLOP/s of the non-GEMM work (attention core) */
} ps__setup;

/* Collective kinds of ps__coll_s. */
enum { PS__ALL_REDUCE, PS__REDUCE_SCATTER, PS__ALL_GATHER, PS__P2P };

/* Seconds of one collective among n ranks of S bytes (model.md section 3) on the intra-node
 * (inter = 0) or inter-node link. 0 when n <= 1 (but a p2p always costs). */
/* Seconds of a collective of `kind` over n ranks, `bytes` per rank, g of them on each node
 * (g >= n: within one node; a P2P passes n = 2 and g = 1 across nodes, 2 within). */
double ps__coll_s(const ps__setup *u, int kind, double n, double bytes, double g);
/* Members on one node of a group of n ranks that are `stride` ranks apart (Megatron's order
 * places consecutive ranks on one node). */
double ps__per_node(const ps__setup *u, double n, double stride);
/* Seconds of a GEMM of 2.M.K.N FLOPs at the precision's peak times the shape efficiency. */
double ps__gemm_s(const ps__setup *u, double M, double K, double N);
/* gemm_eff . d / (d + gemm_half_dim) (flat when gemm_half_dim is 0). */
double ps__gemm_eff(const ps_hardware *hw, double d);

/* One layer's forward times in seconds on one device (input- and weight-gradient GEMMs each
 * take the forward GEMM time; the attention core's backward takes twice its forward). */
typedef struct ps__layer_s {
    double attn_gemm;       /* QKV (or MLA projections) and output projection */
    double attn_core;       /* scores and weighted sum, causal half, at attn_eff */
    double mlp_gemm;        /* the dense MLP (0 in a MoE layer) */
    double router;          /* MoE router GEMM */
    double expert;          /* top_k routed experts */
    double shared;          /* shared experts */
    double mem_attn;        /* memory-bound kernels of the attention half in F (norm, residual) */
    double mem_mlp;         /* ... of the MLP half in F (norm, residual, activation, permutes) */
    double fixed;           /* the host's floor of the layer's F and of its I (MoE) */
    double tp_attn, tp_mlp; /* TP collectives around attention / the MLP, one direction */
    double cp_f, cp_b;      /* exposed CP ring exchange in F and in I */
    double cp_total;        /* the CP ring exchange of F (its total, hidden or not) */
} ps__layer_s;

void ps__layer_times(const ps__setup *u, int moe, ps__layer_s *out);
/* The output layer (GEMM 2.T.h.V/t each of F, dX, dW) and the loss (fp32 logits read and
 * written once in F and once in I, memory-bound), plus the TP all-gather before the output
 * layer (F) and its reduce-scatter (I): *f, *i, *w seconds and *tp of them TP comm per
 * direction. */
void ps__output_times(const ps__setup *u, double *f, double *i, double *w, double *tp);

/* Parameters of one layer: *dense (sharded by t) and *expert (routed experts, sharded by
 * ep.etp); whole model, not sharded. moe: a MoE layer. */
void ps__layer_params(const ps_transformer *m, int moe, double *dense, double *expert);
/* GEMM parameters one token passes through in a layer (attention projections, dense MLP or
 * router + top_k experts + shared experts): the model-FLOPs count. */
double ps__layer_active_params(const ps_transformer *m, int moe);
/* Model FLOPs of one iteration (docs/model.md: Megatron's formula generalised). */
double ps__model_flops(const ps_transformer *m, double tokens, double seq);

/* Activation bytes one micro-batch leaves on a device for one layer (*total) and, of them, the
 * inputs the weight gradients read (*wgrad). recomputed: a fully recomputed layer (keeps only
 * its input). */
void ps__layer_act_bytes(const ps__setup *u, int moe, int recomputed, double *total, double *wgrad);

/* 1 when layer l (0-based) of the model is a MoE layer. */
static inline int ps__is_moe_layer(const ps_transformer *m, int32_t l)
{
    return m->experts > 0 && l >= m->first_dense;
}

#endif
