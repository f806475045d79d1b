/*
 * The performance model: a small dense model worked by hand (durations, p2p cost, step time,
 * memory), the closed forms of the memory model, a MoE model through the planner, every
 * schedule family, the trace of a step in seconds, the configuration errors, invariants, and
 * allocation failure.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"
#include "estimate_alloc.h"

#include "internal.h"       /* ps__moe_stage_fbw: the durations zb-auto plans with */
#include "model/cost.h"     /* the closed forms, checked directly */
#include "model/estimate.h" /* ps__estimate_forget */

#include <cJSON.h>
#include <math.h>
#include <pipesched/model.h>

#define REL 1e-9
#define GIB (1024.0 * 1024.0 * 1024.0)

static void near(double got, double want)
{
    ck_assert_msg(fabs(got - want) <= REL * fabs(want) + 1e-300, "got %.17g, want %.17g", got,
                  want);
}

/* 4 layers, h 1024, a 16 (MHA, d_h 64), f 4096 GeLU, LayerNorm, V 32000, untied. */
static ps_transformer small_model(void)
{
    ps_transformer m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "small");
    m.layers = 4, m.hidden = 1024, m.ffn = 4096, m.heads = 16, m.kv_heads = 16, m.vocab = 32000;
    return m;
}

/* The small model with 8 layers, the first dense, 8 experts top-2 of 512, one shared expert,
 * SwiGLU and RMSNorm: the MoE model of several tests below. */
static ps_transformer small_moe_model(void)
{
    ps_transformer m = small_model();
    m.layers = 8, m.experts = 8, m.top_k = 2, m.moe_ffn = 512, m.first_dense = 1;
    m.shared_experts = 1, m.gated_mlp = 1, m.rms_norm = 1;
    return m;
}

/* 100 TFLOP/s bf16 (200 fp8), flat GEMM efficiency 0.5, attention 0.25, HBM 1000 GB/s at
 * 0.5, links 100 / 10 GB/s at full bus efficiency, 1 us / 5 us latency, 8 per node. */
static ps_hardware small_hw(void)
{
    ps_hardware h;
    memset(&h, 0, sizeof h);
    strcpy(h.name, "toy");
    h.peak_tflops_bf16 = 100, h.peak_tflops_fp8 = 200, h.hbm_gib = 80, h.hbm_gbps = 1000;
    h.devices_per_node = 8, h.intra_gbps = 100, h.inter_gbps = 10;
    h.lat_intra_us = 1, h.lat_inter_us = 5;
    h.gemm_eff = 0.5, h.gemm_half_dim = 0, h.attn_eff = 0.25, h.mem_eff = 0.5;
    h.bus_eff_intra = 1, h.bus_eff_inter = 1, h.overhead_gib = 2, h.grouped_gemm_eff = 1;
    return h;
}

static ps_train small_train(void)
{
    ps_train t;
    memset(&t, 0, sizeof t);
    t.gpus = 2, t.tp = 1, t.pp = 2, t.vpp = 1, t.cp = 1, t.ep = 1;
    t.gbs = 4, t.mbs = 1, t.seq = 1024;
    t.distributed_optimizer = 1, t.overlap_grad_reduce = 1, t.overlap_param_gather = 1;
    return t;
}

static ps_estimate *run_ok(const ps_transformer *m, const ps_hardware *h, const ps_train *t)
{
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    int rc = ps_estimate_run(e, m, h, t);
    ck_assert_msg(rc == 0, "run: %d %s", rc, ps_estimate_last_error(e));
    return e;
}

/*
 * By hand. T = b.s = 1024 tokens; GEMMs at 100e12 x 0.5 = 5e13 FLOP/s; U = 2^30 / 5e13 s.
 * Per layer: QKV 2.T.h.3h = 6.2^30, O 2.T.h.h = 2.2^30: attention GEMMs 8U; MLP 2 x 2.T.h.4h =
 * 16U; attention core T.s.a.2d_h = 2^31 FLOPs at 2.5e13 = 4U. F = 8 + 16 + 4 = 28U,
 * I = 24 + 2.4 = 32U, W = 24U. Memory-bound kernels per token in F: two LayerNorms
 * (2h + 2h bytes each), two residual adds (4h + 2h each), GeLU (2f + 2f): 20h + 4f bytes, so
 * M = T.(20h + 4f) / (1000e9 x 0.5) per layer, in F once and in I twice. Output layer GEMM
 * 2.T.h.V / 5e13 = out, loss 2.4.T.V / (1000e9 x 0.5) = loss. Stage 0 (layers 0-1,
 * embedding): F 56U + 2M, I 64U + 4M, W 48U; stage 1 (layers 2-3, output): F 56U + 2M + out +
 * loss, I 64U + 4M + out + loss, W 48U + out.
 * p2p: T.h.2 = 2 MiB over 100 GB/s + 1 us (tp.cp.dp = 1 < 8: intra-node).
 * 1F1B, p = 2, m = 4: rank 1 is the bottleneck (2c + F0 + B0 <= F1 + B1), so the makespan is
 * F0 + c + 4 (F1 + B1) + c + B0 with B = I + W, ending on rank 0.
 * Parameters: a layer 4h^2 + 4h (two LayerNorms) + 8h^2; rank 0: 2 layers + V.h; rank 1:
 * 2 layers + h (final norm) + V.h. dp = 1: 18 bytes each (6 + 12/1), no DP communication.
 * Optimizer: 16 bytes per parameter over 500 GB/s. Activations per layer 34.s.b.h (t = 1);
 * stage 0 adds the embedding's dropout mask s.b.h, stage 1 the fp32 logits 4.s.b.V. 1F1B
 * holds 2 micro-batches on rank 0 and 1 on rank 1.
 */
START_TEST(estimate_dense_by_hand)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    ps_estimate *e = run_ok(&m, &h, &t);
    const double U = 1073741824.0 / 5e13, T = 1024, H = 1024, V = 32000;
    const double out = 2 * T * H * V / 5e13, loss = 2 * 4 * T * V / 5e11;
    const double M = T * (20 * H + 4 * 4096) / 5e11;
    const double F0 = 56 * U + 2 * M, I0 = 64 * U + 4 * M, W0 = 48 * U;
    const double F1 = 56 * U + 2 * M + out + loss, I1 = 64 * U + 4 * M + out + loss,
                 W1 = 48 * U + out;
    const double c = 2.0 * 1024 * 1024 / 100e9 + 1e-6;
    const ps_problem *pb = ps_estimate_problem(e);
    ck_assert_ptr_nonnull(pb);
    const ps_stage_cost *sc;
    ck_assert_uint_eq(ps_problem_stage_costs(pb, &sc), 2);
    near(sc[0].f, F0), near(sc[0].b, I0), near(sc[0].w, W0);
    near(sc[1].f, F1), near(sc[1].b, I1), near(sc[1].w, W1);
    near(ps_problem_get_cost(pb, PS_COST_C), c);
    ck_assert_int_eq(ps_schedule_microbatches(ps_estimate_schedule(e)), 4);
    ck_assert_str_eq(ps_schedule_family(ps_estimate_schedule(e)), "1f1b");

    double layer = 12 * H * H + 4 * H, P0 = 2 * layer + V * H, P1 = 2 * layer + H + V * H;
    double end0 = F0 + c + 4 * (F1 + I1 + W1) + c + I0 + W0;
    double opt0 = 16 * P0 / 5e11;
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    near(r.step_time_s, end0 + opt0);
    near(r.optimizer_s, opt0);
    near(r.exposed_s[PS_COMM_PP], 2 * c);
    ck_assert(r.exposed_s[PS_COMM_TP] == 0 && r.exposed_s[PS_COMM_DP] == 0);
    ck_assert_int_eq(r.dp, 1);
    ck_assert_int_eq(r.microbatches, 4);
    double tokens = 4 * 1024;
    near(r.tokens_per_s_per_gpu, tokens / (r.step_time_s * 2));
    /* 6 (4 layers x 12h^2 + V.h) per token + attention 4 x 6.s.a.2d_h (full, Megatron) */
    double flops = tokens * (6 * (4 * 12 * H * H + V * H) + 4 * 6 * 1024 * 16 * 128);
    near(r.model_tflops_per_gpu, flops / (r.step_time_s * 2) / 1e12);
    near(r.mfu, r.model_tflops_per_gpu / 100);

    ps_rank_memory m0, m1;
    ck_assert_int_eq(ps_estimate_rank_memory(e, 0, &m0), 0);
    ck_assert_int_eq(ps_estimate_rank_memory(e, 1, &m1), 0);
    near(m0.weights, 2 * P0 / GIB), near(m0.grads, 4 * P0 / GIB);
    near(m0.optimizer, 12 * P0 / GIB);
    near(m1.weights + m1.grads + m1.optimizer, 18 * P1 / GIB);
    ck_assert_int_eq(m0.peak_inflight, 2);
    ck_assert_int_eq(m1.peak_inflight, 1);
    near(m0.activations, 2 * (2 * 34 + 1) * T * H / GIB);
    near(m1.activations, (2 * 34 * T * H + 4 * T * V) / GIB);
    near(m0.total, m0.weights + m0.grads + m0.optimizer + m0.activations + 2);
    ck_assert_int_eq(r.peak_rank, m0.total > m1.total ? 0 : 1);
    ck_assert_int_eq(r.fits, 1);
    ck_assert_int_eq(ps_estimate_rank_memory(e, 2, &m0), PS_EINVAL);
    ps_estimate_free(e);
}
END_TEST

/*
 * estimate_dense_by_hand in FP8: the GEMMs at 200e12 x 0.5 = 1e14 FLOP/s (U/2), the attention
 * core still at the BF16 peak (4U), and each GEMM's activation operand cast to FP8 first at 4
 * bytes an element (read bf16, write FP8 row- and column-wise): per token the QKV input h, the
 * output projection's a.d_h = h, the MLP's input h and its down projection's f, so
 * M8 = T.(20h + 4f + 4.(3h + f)) / 5e11 per layer, in F once and in I twice. Per layer
 * F = 12U + 4U, I = 12U + 8U, W = 12U; the output layer's GEMM at the FP8 peak too.
 */
START_TEST(estimate_fp8_by_hand)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.precision = PS_PREC_FP8;
    ps_estimate *e = run_ok(&m, &h, &t);
    const double U = 1073741824.0 / 5e13, T = 1024, H = 1024, V = 32000, f = 4096;
    const double out = 2 * T * H * V / 1e14, loss = 2 * 4 * T * V / 5e11;
    const double M8 = T * (20 * H + 4 * f + 4 * (3 * H + f)) / 5e11;
    const ps_problem *pb = ps_estimate_problem(e);
    const ps_stage_cost *sc;
    ck_assert_uint_eq(ps_problem_stage_costs(pb, &sc), 2);
    near(sc[0].f, 32 * U + 2 * M8), near(sc[0].b, 40 * U + 4 * M8), near(sc[0].w, 24 * U);
    near(sc[1].f, 32 * U + 2 * M8 + out + loss), near(sc[1].b, 40 * U + 4 * M8 + out + loss);
    near(sc[1].w, 24 * U + out);
    ps_estimate_free(e);
}
END_TEST

/* Korthikanti et al.: 34.s.b.h/t with TP + SP (MHA, f = 4h, flash); sbh(10 + 24/t) with TP
 * alone; Megatron's s.b.h.(18 + 4f/h)/t for f != 4h; 2.s.b.h/t kept by a recomputed layer. */
START_TEST(estimate_activation_closed_forms)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    ps__setup u;
    memset(&u, 0, sizeof u);
    u.m = &m, u.hw = &h, u.tr = &t;
    u.tp = 4, u.cp = 1, u.T = 2048, u.dh = 64, u.kv_dev = 4, u.ts = 4;
    double tot, wg, sbh = 2048.0 * 1024;
    ps__layer_act_bytes(&u, 0, 0, &tot, &wg);
    near(tot, 34 * sbh / 4);
    u.ts = 1;
    ps__layer_act_bytes(&u, 0, 0, &tot, &wg);
    near(tot, sbh * (10 + 24.0 / 4));
    u.ts = 4;
    m.ffn = 3000;
    ps__layer_act_bytes(&u, 0, 0, &tot, &wg);
    near(tot, sbh * (18 + 4 * 3000.0 / 1024) / 4);
    ps__layer_act_bytes(&u, 0, 1, &tot, &wg);
    near(tot, 2 * sbh / 4);
    ck_assert(wg == 0);
}
END_TEST

/* 18 bytes per parameter, 6 + 12/d with the distributed optimizer over d = dp.cp. */
START_TEST(estimate_bytes_per_param)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 16, t.cp = 2, t.gbs = 16; /* dp = 4, d = 8 */
    ps_estimate *e = run_ok(&m, &h, &t);
    ps_rank_memory rm;
    ck_assert_int_eq(ps_estimate_rank_memory(e, 0, &rm), 0);
    double p = rm.weights / 2;
    near(rm.weights + rm.grads + rm.optimizer, p * (6 + 12.0 / 8));
    t.distributed_optimizer = 0;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    ck_assert_int_eq(ps_estimate_rank_memory(e, 0, &rm), 0);
    near(rm.weights + rm.grads + rm.optimizer, 18 * p);
    ps_estimate_free(e);
}
END_TEST

/* The makespan of the estimate's pipeline with free transfers, simulated independently: a
 * problem of the estimate's family, sizes and per-stage costs, with c = 0 (dense models). */
static double makespan_free_transfers(const ps_estimate *e)
{
    const ps_problem *src = ps_estimate_problem(e);
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_problem_set_schedule(pb, ps_schedule_family(ps_estimate_schedule(e))), 0);
    const ps_param sizes[] = {PS_PARAM_PP, PS_PARAM_VPP, PS_PARAM_MICROBATCHES};
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(ps_problem_set_int(pb, sizes[k], ps_problem_get_int(src, sizes[k])), 0);
    const ps_stage_cost *sc;
    size_t n = ps_problem_stage_costs(src, &sc);
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, n), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_C, 0.0), 0);
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return m.makespan;
}

/* Every family runs, and the step is at least the busiest rank's compute; the exposed PP time
 * (the transfers on the critical path) is at most the makespan and at least what free
 * transfers would save (docs/model.md). */
START_TEST(estimate_every_family)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    ps_transformer m = small_model();
    m.layers = 8;
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 4, t.pp = 4, t.gbs = 16;
    strcpy(t.schedule, fi.name);
    if (strcmp(fi.placement, "v") == 0)
        t.vpp = 2;
    if (strcmp(fi.name, "interleaved") == 0 || strcmp(fi.name, "interleaved-rounds") == 0 ||
        strcmp(fi.name, "looped-bfs") == 0 || strcmp(fi.name, "interleaved-zb") == 0)
        t.vpp = 2;
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    int rc = ps_estimate_run(e, &m, &h, &t);
    ck_assert_msg(rc == 0, "%s: %s", fi.name, ps_estimate_last_error(e));
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    ck_assert(r.compute_s > 0);
    ck_assert_msg(r.step_time_s >= r.compute_s, "%s: %g < %g", fi.name, r.step_time_s, r.compute_s);
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(ps_estimate_sim(e), &met), 0);
    ck_assert(r.step_time_s >= met.makespan);
    double pp = r.exposed_s[PS_COMM_PP], saved = met.makespan - makespan_free_transfers(e);
    ck_assert_msg(pp > 0 && pp <= met.makespan && pp >= saved * (1 - 1e-12), "%s: %g, saved %g",
                  fi.name, pp, saved);
    ps_estimate_free(e);
}
END_TEST

static void expect_error(ps_train t, ps_transformer m, int code, const char *msg)
{
    ps_hardware h = small_hw();
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    int rc = ps_estimate_run(e, &m, &h, &t);
    ck_assert_msg(rc == code, "got %d (%s), want %d (%s)", rc, ps_estimate_last_error(e), code,
                  msg);
    ck_assert_msg(strstr(ps_estimate_last_error(e), msg), "'%s' lacks '%s'",
                  ps_estimate_last_error(e), msg);
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), PS_ESTATE);
    ck_assert_ptr_null(ps_estimate_sim(e));
    ps_estimate_free(e);
}

START_TEST(estimate_config_errors)
{
    ps_transformer m = small_model(), moe = small_model();
    moe.experts = 8, moe.top_k = 2, moe.moe_ffn = 512, moe.gated_mlp = 1;
    ps_train t = small_train();
    ps_train x = t;
    x.gpus = 3;
    expect_error(x, m, PS_ECONFIG, "gpus (3) must be divisible by tp*pp*cp");
    x = t, x.tp = 3, x.gpus = 6;
    expect_error(x, m, PS_ECONFIG, "heads (16) must be divisible by tp (3)");
    ps_transformer g = m;
    g.heads = 24, g.kv_heads = 8, g.head_dim = 64, x = t, x.tp = 6, x.gpus = 12;
    expect_error(x, g, PS_ECONFIG, "kv_heads (8) and tp (6)");
    g = m, g.kv_heads = 4, x.tp = 8, x.gpus = 16; /* 8 % 4 == 0: replicated, allowed */
    x.gbs = 8;
    ps_hardware h = small_hw();
    ps_estimate *e = run_ok(&g, &h, &x);
    ps_estimate_free(e);
    x = t, x.gpus = 4, x.gbs = 5; /* dp 2 */
    expect_error(x, m, PS_ECONFIG, "gbs (5) must be divisible by dp*mbs");
    x = t, x.cp = 2, x.gpus = 4, x.seq = 1026;
    expect_error(x, m, PS_ECONFIG, "divisible by 2*cp");
    x = t, x.vpp = 2;
    strcpy(x.schedule, "1f1b");
    expect_error(x, m, PS_ECONFIG, "needs a schedule that takes vpp");
    x = t, x.pp = 2, x.vpp = 3; /* 4 layers over 6 stages */
    expect_error(x, m, PS_ECONFIG, "do not divide evenly over 6 stages");
    x = t, x.ep = 3;
    expect_error(x, moe, PS_ECONFIG, "experts (8) must be divisible by ep (3)");
    x = t, x.ep = 4;
    expect_error(x, moe, PS_ECONFIG, "ep*etp = 4*1 must divide dp*cp*tp");
    x = t;
    strcpy(x.schedule, "nope");
    expect_error(x, m, PS_ECONFIG, "unknown schedule 'nope'");
    x = t, x.precision = PS_PREC_FP8;
    h.peak_tflops_fp8 = 0;
    ps_estimate_new(&e, NULL);
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &x), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_estimate_last_error(e), "no FP8 peak"));
    ck_assert_int_eq(ps_estimate_run(e, NULL, &h, &x), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_run(NULL, &m, &h, &x), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_new(NULL, NULL), PS_EINVAL);
    ps_estimate_free(e);
    ps_estimate_free(NULL);
}
END_TEST

/* Faster compute, links or memory never make the step longer; a faster GEMM peak makes it
 * shorter. Same for the handle reused across runs. */
START_TEST(estimate_faster_hardware)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.tp = 2, t.gpus = 8, t.gbs = 16, t.sequence_parallel = 1; /* dp 2 */
    ps_estimate *e = run_ok(&m, &h, &t);
    ps_estimate_result r0, r1;
    ck_assert_int_eq(ps_estimate_result_get(e, &r0), 0);
    ck_assert(r0.exposed_s[PS_COMM_TP] > 0);
    double *knob[] = {&h.peak_tflops_bf16, &h.intra_gbps, &h.inter_gbps, &h.hbm_gbps};
    for (int k = 0; k < 4; k++) {
        *knob[k] *= 2;
        ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
        ck_assert_int_eq(ps_estimate_result_get(e, &r1), 0);
        ck_assert_msg(r1.step_time_s <= r0.step_time_s, "knob %d: %g > %g", k, r1.step_time_s,
                      r0.step_time_s);
        if (k == 0)
            ck_assert(r1.step_time_s < r0.step_time_s);
        r0 = r1;
    }
    ps_estimate_free(e);
}
END_TEST

/*
 * MoE: 8 layers, the first dense, 8 experts top-2, ep 2 over dp 2, pp 4 with 1f1b. Stage 1
 * (layers 2-3) has neither embedding nor output layer, so its F is the planner's F of its
 * layers alone: checked against ps_plan_step on the estimate's problem. Stage 3 adds the
 * output layer: its F is larger than stage 2's by exactly the dense model's output layer.
 */
START_TEST(estimate_moe_through_planner)
{
    ps_transformer m = small_moe_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 8, t.pp = 4, t.ep = 2, t.gbs = 16;
    strcpy(t.schedule, "1f1b");
    ps_estimate *e = run_ok(&m, &h, &t);
    const ps_problem *pb = ps_estimate_problem(e);
    ps_moe_model mm;
    ck_assert_int_eq(ps_problem_get_moe(pb, &mm), 0);
    ck_assert_int_eq(mm.layers, 8);
    ck_assert_int_eq(mm.dense_layers, 1);
    ck_assert(mm.moe.t[PS_OP_DISPATCH] > 0);
    ck_assert(mm.dense.t[PS_OP_DISPATCH] == 0);
    ps_plan *pl;
    ck_assert_int_eq(ps_plan_new(&pl, NULL), 0);
    ck_assert_int_eq(ps_plan_step(pl, pb, mm.planner, 4, 1, PS_B, -1), 0);
    ps_plan_stats st;
    ck_assert_int_eq(ps_plan_stats_get(pl, &st), 0);
    const ps_sim *sim = ps_estimate_sim(e);
    ps_action f1 = {PS_F, 0, 0, 1, 0, 0, 0}, f2 = {PS_F, 0, 0, 2, 0, 0, 0};
    ps_action f3 = {PS_F, 0, 0, 3, 0, 0, 0};
    near(ps_sim_duration(sim, &f1), st.duration);
    /* serial check of the same stage: the planner adds up every operation of two MoE layers */
    ck_assert_int_eq(ps_plan_step(pl, pb, PS_PLANNER_SERIAL, 4, 1, PS_B, -1), 0);
    ck_assert_int_eq(ps_plan_stats_get(pl, &st), 0);
    const double *x = mm.moe.t;
    near(st.duration, 2 * (x[PS_OP_ATTN] + x[PS_OP_DISPATCH] + x[PS_OP_MLP] + x[PS_OP_SHARED] +
                           x[PS_OP_COMBINE]));
    /* the output layer: the dense model's stage 1 F minus its layers' 56U */
    const double out = 2 * 1024.0 * 1024 * 32000 / 5e13, loss = 2 * 4 * 1024.0 * 32000 / 5e11;
    near(ps_sim_duration(sim, &f3) - ps_sim_duration(sim, &f2), out + loss);
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    ck_assert(r.exposed_s[PS_COMM_EP] > 0);
    ps_rank_memory rm;
    ck_assert_int_eq(ps_estimate_rank_memory(e, 1, &rm), 0);
    ck_assert(rm.total > 0);
    /* adaptive (fused pairs) runs too */
    strcpy(t.schedule, "adaptive");
    t.vpp = 2;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    ps_plan_free(pl);
    ps_estimate_free(e);
}
END_TEST

/* The routed experts' grouped GEMM runs at grouped_gemm_eff of a dense GEMM's efficiency. A
 * MoE layer's weight-gradient MLP entry is its experts' GEMMs alone, by hand: T = 1024 tokens,
 * top-2 of 8 experts over ep 2, so each of a device's 4 experts has 1024.2.2/8 = 512 rows, and
 * its SwiGLU GEMMs 2.512.1024.(2.512) + 2.512.512.1024 FLOPs, at 100 TFLOP/s x 0.5 x the
 * figure. The dense layer's MLP and the attention do not change; 0 is refused by name. */
START_TEST(estimate_moe_grouped_gemm)
{
    ps_transformer m = small_moe_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 8, t.pp = 4, t.ep = 2, t.gbs = 16;
    strcpy(t.schedule, "1f1b");
    const double flops = 4 * (2.0 * 512 * 1024 * 1024 + 2.0 * 512 * 512 * 1024);
    double dense = 0, attn = 0;
    static const double grouped[] = {1, 0.4};
    for (int i = 0; i < 2; i++) {
        h.grouped_gemm_eff = grouped[i];
        ps_estimate *e = run_ok(&m, &h, &t);
        ps_moe_model mm;
        ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &mm), 0);
        near(mm.moe.t[PS_OP_MLP_DW], flops / (100e12 * 0.5 * grouped[i]));
        if (i == 0)
            dense = mm.dense.t[PS_OP_MLP_DW], attn = mm.moe.t[PS_OP_ATTN_DW];
        near(mm.dense.t[PS_OP_MLP_DW], dense);
        near(mm.moe.t[PS_OP_ATTN_DW], attn);
        ps_estimate_free(e);
    }
    h.grouped_gemm_eff = 0;
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_estimate_last_error(e), "grouped_gemm_eff"));
    ps_estimate_free(e);
}
END_TEST

/* Collectives by hand on the toy hardware (intra 100 GB/s, inter 10 GB/s per device, 8 per
 * node, 1 us / 5 us per step): a group within a node runs at 100 GB/s; spread over nodes with
 * g members on each, its g rings share the nodes' g NICs: min(100, 10 g) GB/s. */
START_TEST(estimate_collective_spread)
{
    ps_hardware h = small_hw();
    ps__setup u;
    memset(&u, 0, sizeof u);
    u.hw = &h, u.gpn = 8;
    const double B = 1e9, ar16 = 2.0 * 15 / 16 * B; /* all-reduce of 16 ranks: bytes on the wire */
    near(ps__coll_s(&u, PS__ALL_REDUCE, 8, B, 8), 2.0 * 7 / 8 * B / 100e9 + 2 * 7 * 1e-6);
    near(ps__coll_s(&u, PS__ALL_REDUCE, 16, B, 8), ar16 / 80e9 + 2 * 15 * 5e-6);
    near(ps__coll_s(&u, PS__ALL_REDUCE, 16, B, 2), ar16 / 20e9 + 2 * 15 * 5e-6);
    near(ps__coll_s(&u, PS__ALL_REDUCE, 16, B, 1), ar16 / 10e9 + 2 * 15 * 5e-6);
    near(ps__coll_s(&u, PS__REDUCE_SCATTER, 64, B, 4), 63.0 / 64 * B / 40e9 + 63 * 5e-6);
    near(ps__coll_s(&u, PS__P2P, 2, B, 1), B / 10e9 + 5e-6);
    near(ps__coll_s(&u, PS__P2P, 2, B, 2), B / 100e9 + 1e-6);
    h.inter_gbps = 50; /* 8 NICs of 50 outrun the 100 GB/s link: the link bounds */
    near(ps__coll_s(&u, PS__ALL_REDUCE, 16, B, 8), ar16 / 100e9 + 2 * 15 * 5e-6);
    /* Megatron's order: consecutive ranks share a node. tp 2 of 8 per node: a dp group of 16
     * has 4 on each node; tp 8: 1; tp 16: 1; a group of 2 ranks 2 apart: both on one node. */
    near(ps__per_node(&u, 16, 2), 4);
    near(ps__per_node(&u, 16, 8), 1);
    near(ps__per_node(&u, 16, 16), 1);
    near(ps__per_node(&u, 2, 2), 2);
    near(ps__per_node(&u, 16, 1), 8);
}
END_TEST

/* group_size reaches the schedule: the estimate's interleaved table with G = 4 is the one
 * generate makes for p 2, v 2, m 8, G 4, and differs from the default G = p = 2. */
START_TEST(estimate_group_size)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.vpp = 2, t.gbs = 8;
    strcpy(t.schedule, "interleaved");
    ps_estimate *e = run_ok(&m, &h, &t);
    ps_problem *pb;
    ps_schedule *s[2];
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_problem_set_schedule(pb, "interleaved"), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_VPP, 2), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 8), 0);
    for (int g = 0; g < 2; g++) {
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, g ? 4 : 0), 0);
        ck_assert_int_eq(ps_schedule_new(&s[g], NULL), 0);
        ck_assert_int_eq(ps_schedule_generate(s[g], pb), 0);
    }
    for (int g = 0; g < 2; g++) {
        t.group_size = g ? 4 : 0;
        ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
        const ps_schedule *got = ps_estimate_schedule(e);
        for (int32_t r = 0; r < 2; r++) {
            size_t n = ps_schedule_rank_length(got, r);
            ck_assert_uint_eq(n, ps_schedule_rank_length(s[g], r));
            ck_assert(memcmp(ps_schedule_rank_actions(got, r), ps_schedule_rank_actions(s[g], r),
                             n * sizeof(ps_action)) == 0);
        }
    }
    size_t n0 = ps_schedule_rank_length(s[0], 0);
    ck_assert(memcmp(ps_schedule_rank_actions(s[0], 0), ps_schedule_rank_actions(s[1], 0),
                     n0 * sizeof(ps_action)) != 0);
    t.group_size = 4;
    strcpy(t.schedule, "1f1b");
    t.vpp = 1;
    ck_assert_int_ne(ps_estimate_run(e, &m, &h, &t), 0); /* 1f1b has no group size */
    for (int g = 0; g < 2; g++)
        ps_schedule_free(s[g]);
    ps_problem_free(pb);
    ps_estimate_free(e);
}
END_TEST

/* moe_layer_us is the host's floor of a MoE layer's forward and of its input gradient: the
 * pass takes max(its compute-stream parts, the floor), the difference spent in the MLP
 * operation; a floor below the parts changes nothing, and a dense layer, the weight gradient
 * and token drop (the routing's sizes known in advance) are never touched. The expected
 * values come from the run without a floor. */
/* Full recompute of N layers per stage on a MoE model: each recomputed layer adds its forward
 * (attention, experts and shared expert of the layer table, no host floor here) to the stage's
 * backward, so stage 1 (layers 2 and 3, both MoE) pays one such forward more at N = 2 than at
 * N = 1; and N = 1 is faster than recomputing every layer (it once charged every layer). */
START_TEST(estimate_moe_recompute_layers)
{
    ps_transformer m = small_moe_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 8, t.pp = 4, t.ep = 2, t.gbs = 16;
    strcpy(t.schedule, "1f1b");
    t.recompute = PS_RECOMPUTE_FULL;
    ps_estimate *e = run_ok(&m, &h, &t);
    ps_estimate_result all, one;
    ck_assert_int_eq(ps_estimate_result_get(e, &all), 0);
    ps_action b1 = {PS_B, 0, 0, 1, 0, 0, 0};
    t.recompute_layers = 1;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    ck_assert_int_eq(ps_estimate_result_get(e, &one), 0);
    ps_moe_model mm;
    ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &mm), 0);
    double d1 = ps_sim_duration(ps_estimate_sim(e), &b1);
    t.recompute_layers = 2;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    double d2 = ps_sim_duration(ps_estimate_sim(e), &b1);
    const double *x = mm.moe.t;
    near(d2 - d1, x[PS_OP_ATTN] + x[PS_OP_MLP] + x[PS_OP_SHARED]);
    ck_assert(one.step_time_s < all.step_time_s);
    ps_estimate_free(e);
}
END_TEST

/* zb-auto plans under the device: its memory limit is the activation memory the rank with the
 * least of it has left (hbm less weights, gradients, optimizer state and overhead, read off
 * each rank's breakdown; no recompute, so no working set), in the stage memory's KiB, and every
 * rank's activations stay under it. With nothing left it plans without a limit and reports
 * that the run does not fit, rather than fail. Both placements: the loop with vpp 1 (_i 0),
 * the V with vpp 2 (_i 1: stage 3 on rank 0, stage 2 on rank 1). */
START_TEST(estimate_zb_auto_memory_limit)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gbs = 8, t.vpp = 1 + _i;
    strcpy(t.schedule, "zb-auto");
    ps_estimate *e = run_ok(&m, &h, &t);
    const ps_schedule *sc = ps_estimate_schedule(e);
    ck_assert_int_eq(ps_schedule_stage_rank(sc, 1), 1);
    if (_i) {
        ck_assert_int_eq(ps_schedule_stage_rank(sc, 2), 1);
        ck_assert_int_eq(ps_schedule_stage_rank(sc, 3), 0);
    } else
        ck_assert_int_eq(ps_schedule_stage_rank(sc, 2), -1);
    double least = INFINITY, most_act = 0.0;
    for (int r = 0; r < 2; r++) {
        ps_rank_memory rm;
        ck_assert_int_eq(ps_estimate_rank_memory(e, r, &rm), 0);
        double left = h.hbm_gib - rm.weights - rm.grads - rm.optimizer - rm.overhead;
        least = left < least ? left : least;
        most_act = rm.activations > most_act ? rm.activations : most_act;
    }
    double limit = ps_problem_mem_limit(ps_estimate_problem(e));
    near(limit, least * 1024.0 * 1024.0);
    /* A device with 60% of the largest unconstrained activation peak to spare on its fuller
     * rank: zb-auto keeps every rank under it. */
    double spare = 0.6 * most_act;
    h.hbm_gib = h.hbm_gib - least + spare;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    near(ps_problem_mem_limit(ps_estimate_problem(e)), spare * 1024.0 * 1024.0);
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    for (int k = 0; k < 2; k++) {
        ps_rank_memory rm;
        ck_assert_int_eq(ps_estimate_rank_memory(e, k, &rm), 0);
        ck_assert(rm.total <= h.hbm_gib * (1 + 1e-12));
        ck_assert(rm.activations <= spare * (1 + 1e-9)); /* below the unconstrained most_act */
    }
    ck_assert(r.fits);
    /* Nothing left: no limit, not fitting, no failure. */
    h.hbm_gib = 1.0;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    ck_assert(ps_problem_mem_limit(ps_estimate_problem(e)) == 0.0);
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    ck_assert(!r.fits);
    /* zb-auto has no placement of 3 chunks per rank. */
    t.vpp = 4, t.pp = 1, t.gpus = 1;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), PS_ECONFIG);
    ck_assert_str_eq(ps_estimate_last_error(e),
                     "zb-auto plans vpp = 1 (loop placement) or 2 (V placement); vpp = 4");
    ps_estimate_free(e);
}
END_TEST

START_TEST(estimate_moe_fixed_time)
{
    ps_transformer m = small_model();
    m.layers = 4, m.experts = 8, m.top_k = 2, m.moe_ffn = 512, m.first_dense = 1;
    m.gated_mlp = 1, m.rms_norm = 1;
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 4, t.pp = 2, t.ep = 2, t.gbs = 8;
    ps_estimate *e = run_ok(&m, &h, &t);
    ps_moe_model a, b;
    ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &a), 0);
    double f = a.moe.t[PS_OP_ATTN] + a.moe.t[PS_OP_MLP] + a.moe.t[PS_OP_SHARED];
    double i = a.moe.t[PS_OP_ATTN_DX] + a.moe.t[PS_OP_MLP_DX] + a.moe.t[PS_OP_SHARED_DX];
    ck_assert(f > 0 && i > f);
    /* A floor between F and I: F is lifted to it, I (longer) is not; then one above both. */
    double floors[3] = {0.5 * f, 0.5 * (f + i), 2.0 * i};
    for (int c = 0; c < 3; c++) {
        h.moe_layer_us = floors[c] * 1e6;
        ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
        ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &b), 0);
        for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
            double want = 0.0;
            if (k == PS_OP_MLP && floors[c] > f)
                want = floors[c] - f;
            if (k == PS_OP_MLP_DX && floors[c] > i)
                want = floors[c] - i;
            near(b.moe.t[k] - a.moe.t[k] + 1.0, 1.0 + want);
            near(b.dense.t[k], a.dense.t[k]);
        }
    }
    t.moe_token_drop = 1;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &b), 0);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
        near(b.moe.t[k], a.moe.t[k]);
    ps_estimate_free(e);
}
END_TEST

/* ---- the trace of a step (ps_estimate_write_trace) ------------------------------------------ */

typedef struct tbuf {
    char *data;
    size_t len, cap;
    int fail; /* the writer fails */
} tbuf;

static int tbuf_write(void *ud, const char *data, size_t len)
{
    tbuf *b = ud;
    if (b->fail)
        return -1;
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->data = realloc(b->data, b->cap);
        ck_assert_ptr_nonnull(b->data);
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

/* The trace of e's step, parsed: it must be JSON (cJSON) with a traceEvents array. */
static cJSON *trace_of(const ps_estimate *e)
{
    tbuf b = {0};
    ck_assert_int_eq(ps_estimate_write_trace(e, tbuf_write, &b), 0);
    cJSON *root = cJSON_ParseWithLength(b.data, b.len);
    ck_assert_msg(root != NULL, "the trace is not JSON near: %.60s", cJSON_GetErrorPtr());
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(root, "traceEvents")));
    free(b.data);
    return root;
}

static double num(const cJSON *ev, const char *key)
{
    const cJSON *x = cJSON_GetObjectItem(ev, key);
    ck_assert_msg(cJSON_IsNumber(x), "event without a numeric %s", key);
    return x->valuedouble;
}

static const char *str(const cJSON *ev, const char *key)
{
    const cJSON *x = cJSON_GetObjectItem(ev, key);
    ck_assert_msg(cJSON_IsString(x), "event without %s", key);
    return x->valuestring;
}

/* The n-th complete event ("X") of rank pid on track tid in category cat (NULL: any), or
 * NULL. */
static const cJSON *event(const cJSON *root, int pid, int tid, const char *cat, int n)
{
    const cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents"))
    {
        if (strcmp(str(ev, "ph"), "X") || (int)num(ev, "pid") != pid ||
            (int)num(ev, "tid") != tid || (cat && strcmp(str(ev, "cat"), cat)))
            continue;
        if (n-- == 0)
            return ev;
    }
    return NULL;
}

/*
 * The trace against e's own figures: every rank is a process "rank r"; every action of its
 * list is on its compute track, in list order, named as the schedule names it, with ts and dur
 * the simulated start and duration in microseconds (the same doubles: the trace writes numbers
 * that read back exactly); after the rank's last action its exposed DP time (when any), then
 * its optimizer step; the latest of them ends at the step time, and that rank's tail is the
 * result's exposed DP and optimizer times.
 */
static void check_trace(const ps_estimate *e, const cJSON *root)
{
    const ps_schedule *s = ps_estimate_schedule(e);
    const ps_sim *sim = ps_estimate_sim(e);
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    int pp = ps_schedule_pp(s), ranks = 0, crit = -1;
    double last = -1, crit_dp = 0, crit_opt = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents"))
    {
        if (!strcmp(str(ev, "ph"), "M") && !strcmp(str(ev, "name"), "process_name")) {
            char want[32];
            snprintf(want, sizeof want, "rank %d", (int)num(ev, "pid"));
            ck_assert_str_eq(str(cJSON_GetObjectItem(ev, "args"), "name"), want);
            ranks++;
        }
    }
    ck_assert_int_eq(ranks, pp);
    for (int rk = 0; rk < pp; rk++) {
        const ps_action *a = ps_schedule_rank_actions(s, rk);
        const double *st = ps_sim_starts(sim, rk), *en = ps_sim_ends(sim, rk);
        size_t n = ps_schedule_rank_length(s, rk), i = 0;
        char name[96];
        for (int k = 0; (ev = event(root, rk, 0, NULL, k)); k++) {
            if (!strcmp(str(ev, "cat"), "optimizer"))
                continue;
            ck_assert_uint_lt(i, n);
            ps__action_str(&a[i], name, sizeof name);
            ck_assert_str_eq(str(ev, "name"), name);
            ck_assert_double_eq(num(ev, "ts"), st[i] * 1e6);
            ck_assert_double_eq(num(ev, "dur"), (en[i] - st[i]) * 1e6);
            i++;
        }
        ck_assert_uint_eq(i, n);
        const cJSON *dp = event(root, rk, 1, "data_parallel", 0);
        const cJSON *opt = event(root, rk, 0, "optimizer", 0);
        ck_assert_ptr_null(event(root, rk, 1, "data_parallel", 1));
        ck_assert_ptr_null(event(root, rk, 0, "optimizer", 1));
        ck_assert_ptr_nonnull(opt);
        ck_assert_str_eq(str(opt, "name"), "optimizer step");
        double t = en[n - 1] * 1e6, dp_us = 0;
        if (dp) {
            ck_assert_str_eq(str(dp, "name"), "DP communication (exposed)");
            ck_assert_double_eq(num(dp, "ts"), t);
            dp_us = num(dp, "dur");
            ck_assert(dp_us > 0);
        }
        near(num(opt, "ts"), t + dp_us);
        double end = num(opt, "ts") + num(opt, "dur");
        if (end > last)
            last = end, crit = rk, crit_dp = dp_us, crit_opt = num(opt, "dur");
    }
    ck_assert_int_ge(crit, 0);
    near(last, r.step_time_s * 1e6);
    near(crit_opt, r.optimizer_s * 1e6);
    if (r.exposed_s[PS_COMM_DP] > 0)
        near(crit_dp, r.exposed_s[PS_COMM_DP] * 1e6);
    else
        ck_assert(crit_dp == 0);
}

/*
 * The hand-worked model above: its trace checked against the simulation, and a few events by
 * hand. Rank 0 starts with 0F0 at 0 for F0 = 56U + 2M s; rank 1's first forward starts when that
 * forward's activation arrives, F0 + c; every pipeline transfer is c = 2 MiB / 100 GB/s + 1 us
 * = 21.97152 us; dp = 1: no DP event, and rank 0's optimizer step (16 bytes per parameter
 * over 500 GB/s) starts at end0, where its pipeline ends.
 */
START_TEST(estimate_trace_by_hand)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ck_assert_int_eq(ps_estimate_write_trace(e, tbuf_write, &(tbuf){0}), PS_ESTATE);
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    cJSON *root = trace_of(e);
    check_trace(e, root);
    const double U = 1073741824.0 / 5e13, T = 1024, H = 1024, V = 32000;
    const double out = 2 * T * H * V / 5e13, loss = 2 * 4 * T * V / 5e11;
    const double M = T * (20 * H + 4 * 4096) / 5e11; /* memory-bound kernels, as above */
    const double F0 = 56 * U + 2 * M, I0 = 64 * U + 4 * M, W0 = 48 * U;
    const double F1 = 56 * U + 2 * M + out + loss, I1 = 64 * U + 4 * M + out + loss,
                 W1 = 48 * U + out;
    const double c = 2.0 * 1024 * 1024 / 100e9 + 1e-6;
    const cJSON *f = event(root, 0, 0, NULL, 0);
    ck_assert_str_eq(str(f, "name"), "0F0");
    ck_assert_str_eq(str(f, "cat"), "forward");
    ck_assert_double_eq(num(f, "ts"), 0);
    /* 56U + 2M in us: 56 x 2^30 / 5e7 + 2 x 1024 x 36864 / 5e5 = 1202.59084288 + 150.994944 */
    near(num(f, "dur"), 56 * 1073741824.0 / 5e7 + 2 * 1024 * 36864 / 5e5);
    near(num(f, "dur"), 1353.58578688);
    f = event(root, 1, 0, NULL, 0);
    ck_assert_str_eq(str(f, "name"), "1F0");
    near(num(f, "ts"), (F0 + c) * 1e6);
    near(num(f, "dur"), F1 * 1e6);
    const cJSON *send = event(root, 0, 1, "communication", 0);
    ck_assert_str_eq(str(send, "name"), "0SEND_F0 -> rank 1");
    near(num(send, "ts"), F0 * 1e6);
    near(num(send, "dur"), 21.97152);
    ck_assert_ptr_null(event(root, 0, 1, "data_parallel", 0));
    ck_assert_ptr_null(event(root, 1, 1, "data_parallel", 0));
    double layer = 12 * H * H + 4 * H, P0 = 2 * layer + V * H;
    double end0 = F0 + c + 4 * (F1 + I1 + W1) + c + I0 + W0;
    const cJSON *opt = event(root, 0, 0, "optimizer", 0);
    near(num(opt, "ts"), end0 * 1e6);
    near(num(opt, "dur"), 16 * P0 / 5e11 * 1e6);
    cJSON_Delete(root);
    /* A writer that fails, and the arguments. */
    ck_assert_int_eq(ps_estimate_write_trace(e, tbuf_write, &(tbuf){.fail = 1}), PS_EIO);
    ck_assert_int_eq(ps_estimate_write_trace(NULL, tbuf_write, &(tbuf){0}), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_write_trace(e, NULL, NULL), PS_EINVAL);
    ps_estimate_free(e);
}
END_TEST

/* Data parallelism (dp = 2, the reduction partly exposed, then without overlap), interleaved,
 * the automatic layout, a MoE model with its planned tracks: the trace agrees with the run. */
START_TEST(estimate_trace_tail)
{
    ps_transformer m = small_model();
    m.layers = 8;
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 8, t.pp = 4, t.gbs = 16; /* dp 2 */
    ps_estimate *e = run_ok(&m, &h, &t);
    cJSON *root = trace_of(e);
    check_trace(e, root);
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    ck_assert(r.exposed_s[PS_COMM_DP] > 0);
    ck_assert_ptr_nonnull(event(root, 0, 1, "data_parallel", 0));
    cJSON_Delete(root);
    t.overlap_grad_reduce = t.overlap_param_gather = 0;
    t.distributed_optimizer = 0;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    check_trace(e, root = trace_of(e));
    cJSON_Delete(root);
    t.vpp = 2;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    check_trace(e, root = trace_of(e));
    cJSON_Delete(root);
    t.vpp = 1, t.layout = "auto";
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
    check_trace(e, root = trace_of(e));
    cJSON_Delete(root);
    ps_estimate_free(e);

    ps_transformer moe = small_model();
    moe.layers = 8, moe.experts = 8, moe.top_k = 2, moe.moe_ffn = 512, moe.gated_mlp = 1;
    t = small_train();
    t.gpus = 8, t.pp = 4, t.ep = 2, t.gbs = 16;
    strcpy(t.schedule, "adaptive");
    t.vpp = 2;
    e = run_ok(&moe, &h, &t);
    check_trace(e, root = trace_of(e));
    ck_assert_ptr_nonnull(event(root, 0, 2, "moe_compute", 0));
    ck_assert_ptr_nonnull(event(root, 0, 3, "moe_comm", 0));
    cJSON_Delete(root);
    ps_estimate_free(e);
}
END_TEST

/*
 * MoE with zb-auto, which plans with its own per-stage durations: they must be the simulator's,
 * the output layer included. The model of estimate_moe_through_planner on pp 4: stages 2 and 3
 * hold two MoE layers each, and stage 3 adds the output layer and the loss, worked by hand as
 * in estimate_dense_by_hand: F and I by out + loss, W by out (the output layer's dW).
 */
START_TEST(estimate_moe_zb_auto_extras)
{
    ps_transformer m = small_moe_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    t.gpus = 8, t.pp = 4, t.ep = 2, t.gbs = 16;
    strcpy(t.schedule, "zb-auto");
    ps_estimate *e = run_ok(&m, &h, &t);
    ck_assert_str_eq(ps_schedule_family(ps_estimate_schedule(e)), "zb-auto");
    const ps_problem *pb = ps_estimate_problem(e);
    ps_stage_cost fbw[4];
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(ps__moe_stage_fbw(pb, 4, 1, fbw, err), 0);
    const double out = 2 * 1024.0 * 1024 * 32000 / 5e13, loss = 2 * 4 * 1024.0 * 32000 / 5e11;
    near(fbw[3].f - fbw[2].f, out + loss);
    near(fbw[3].b - fbw[2].b, out + loss);
    near(fbw[3].w - fbw[2].w, out);
    /* and they are the simulator's, stage by stage */
    const ps_sim *sim = ps_estimate_sim(e);
    for (int32_t st = 0; st < 4; st++) {
        ps_action f = {PS_F, 0, 0, st, 0, 0, 0}, i = {PS_I, 0, 0, st, 0, 0, 0};
        ps_action w = {PS_W, 0, 0, st, 0, 0, 0};
        near(ps_sim_duration(sim, &f), fbw[st].f);
        near(ps_sim_duration(sim, &i), fbw[st].b);
        near(ps_sim_duration(sim, &w), fbw[st].w);
    }
    ps_estimate_free(e);
}
END_TEST

/* Everything a run reports, and the timeline, equal bit for bit in a and b. */
static void expect_same_run(const ps_estimate *a, const ps_estimate *b, int step)
{
    ps_estimate_result x, y;
    ck_assert_int_eq(ps_estimate_result_get(a, &x), 0);
    ck_assert_int_eq(ps_estimate_result_get(b, &y), 0);
    const double dx[] = {x.step_time_s,
                         x.tokens_per_s_per_gpu,
                         x.model_tflops_per_gpu,
                         x.mfu,
                         x.bubble_s,
                         x.compute_s,
                         x.optimizer_s,
                         x.peak_gib};
    const double dy[] = {y.step_time_s,
                         y.tokens_per_s_per_gpu,
                         y.model_tflops_per_gpu,
                         y.mfu,
                         y.bubble_s,
                         y.compute_s,
                         y.optimizer_s,
                         y.peak_gib};
    ck_assert_msg(!memcmp(dx, dy, sizeof dx) &&
                      !memcmp(x.exposed_s, y.exposed_s, sizeof x.exposed_s),
                  "step %d: %.17g vs %.17g", step, x.step_time_s, y.step_time_s);
    ck_assert(x.dp == y.dp && x.microbatches == y.microbatches && x.peak_rank == y.peak_rank &&
              x.fits == y.fits);
    const ps_schedule *sa = ps_estimate_schedule(a), *sb = ps_estimate_schedule(b);
    const ps_sim *ma = ps_estimate_sim(a), *mb = ps_estimate_sim(b);
    ck_assert_int_eq(ps_schedule_pp(sa), ps_schedule_pp(sb));
    for (int r = 0; r < ps_schedule_pp(sa); r++) {
        size_t n = ps_schedule_rank_length(sa, r);
        ck_assert_uint_eq(n, ps_schedule_rank_length(sb, r));
        ck_assert(!memcmp(ps_schedule_rank_actions(sa, r), ps_schedule_rank_actions(sb, r),
                          n * sizeof(ps_action)));
        ck_assert(!memcmp(ps_sim_starts(ma, r), ps_sim_starts(mb, r), n * sizeof(double)));
        ck_assert(!memcmp(ps_sim_ends(ma, r), ps_sim_ends(mb, r), n * sizeof(double)));
        ps_rank_memory p, q;
        ck_assert_int_eq(ps_estimate_rank_memory(a, r, &p), 0);
        ck_assert_int_eq(ps_estimate_rank_memory(b, r, &q), 0);
        ck_assert(p.total == q.total && p.activations == q.activations &&
                  p.peak_inflight == q.peak_inflight);
    }
}

/*
 * One handle through a sequence of runs that change the costs (hardware), the shape (batch,
 * family, layout) and the model (dense, MoE), and come back: each run equals a fresh handle's
 * bit for bit. The schedule is generated again (its version moves) exactly when the shape
 * changed, for every run of zb-auto (it plans with the costs), and after ps__estimate_forget.
 */
START_TEST(estimate_reuse_matches_fresh)
{
    ps_transformer dense = small_model(), moe = small_model();
    moe.layers = 8, moe.experts = 8, moe.top_k = 2, moe.moe_ffn = 512, moe.first_dense = 1;
    moe.shared_experts = 1, moe.gated_mlp = 1, moe.rms_norm = 1;
    ps_hardware slow = small_hw(), fast = small_hw();
    fast.peak_tflops_bf16 *= 2, fast.intra_gbps *= 3;
    ps_train t0 = small_train(), t1 = t0, tz = t0, tm = t0, tm2, tv, tv2;
    t1.gbs = 8;
    strcpy(tz.schedule, "zb-auto");
    tm.gpus = 8, tm.pp = 4, tm.ep = 2, tm.gbs = 16;
    strcpy(tm.schedule, "1f1b");
    tm2 = tm, tm2.layout = "Et|t*2|t*2|t*3L";
    tv = tm, tv.vpp = 2;
    strcpy(tv.schedule, "dualpipev");
    tv2 = tv, tv2.layout = "Et*2|t|t||t|t|t|tL";
    const struct {
        const ps_transformer *m;
        const ps_hardware *h;
        const ps_train *t;
        int regenerated, forget;
    } steps[] = {{&dense, &slow, &t0, 1, 0}, {&dense, &fast, &t0, 0, 0}, {&dense, &fast, &t1, 1, 0},
                 {&dense, &slow, &t1, 0, 0}, {&dense, &slow, &tz, 1, 0}, {&dense, &fast, &tz, 1, 0},
                 {&moe, &slow, &tm, 1, 0},   {&moe, &fast, &tm, 0, 0},   {&moe, &fast, &tm2, 0, 0},
                 {&moe, &fast, &tm, 0, 0},   {&moe, &slow, &tv, 1, 0},   {&moe, &slow, &tv2, 0, 0},
                 {&moe, &slow, &tv, 0, 0},   {&moe, &fast, &tv2, 0, 0},  {&moe, &slow, &tv, 1, 1},
                 {&dense, &slow, &t0, 1, 0}, {&dense, &slow, &t0, 1, 1}};
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    uint64_t version = 0;
    for (int k = 0; k < (int)(sizeof steps / sizeof steps[0]); k++) {
        if (steps[k].forget)
            ps__estimate_forget(e);
        int rc = ps_estimate_run(e, steps[k].m, steps[k].h, steps[k].t);
        ck_assert_msg(rc == 0, "step %d: %s", k, ps_estimate_last_error(e));
        ps_estimate *fresh = run_ok(steps[k].m, steps[k].h, steps[k].t);
        expect_same_run(e, fresh, k);
        ps_estimate_free(fresh);
        uint64_t v = ps_estimate_schedule(e)->version;
        ck_assert_msg((v != version) == steps[k].regenerated, "step %d: version %llu after %llu", k,
                      (unsigned long long)v, (unsigned long long)version);
        version = v;
    }
    ps__estimate_forget(NULL);
    ps_estimate_free(e);
}
END_TEST

/* The trace's allocations fail cleanly. */
START_TEST(estimate_trace_alloc_failure)
{
    ps_transformer m = small_model();
    ps_hardware h = small_hw();
    ps_train t = small_train();
    for (long k = 1;; k++) {
        counting_alloc ca = {0};
        ps_allocator al = counting_allocator(&ca);
        ps_estimate *e;
        ck_assert_int_eq(ps_estimate_new(&e, &al), 0);
        ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), 0);
        ca.fail_at = ca.calls + k;
        tbuf b = {0};
        int rc = ps_estimate_write_trace(e, tbuf_write, &b);
        free(b.data);
        ps_estimate_free(e);
        ck_assert_int_eq(ca.live, 0);
        if (rc == 0)
            break;
        ck_assert_int_eq(rc, PS_ENOMEM);
        ck_assert_int_eq(b.len, 0);
    }
}
END_TEST

/* Every allocation of a first run and of a repeated run can fail: PS_ENOMEM, nothing leaks. */
START_TEST(estimate_alloc_failure)
{
    ps_transformer m = small_model(), moe = small_model();
    moe.layers = 8, moe.experts = 8, moe.top_k = 2, moe.moe_ffn = 512, moe.gated_mlp = 1;
    ps_hardware h = small_hw();
    ps_train t = small_train();
    const ps_transformer *models[2] = {&m, &moe};
    check_estimate_alloc_failure(models, 2, &h, &t);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("estimate");
    TCase *tc = tcase_create("dense");
    tcase_add_test(tc, estimate_dense_by_hand);
    tcase_add_test(tc, estimate_fp8_by_hand);
    tcase_add_test(tc, estimate_activation_closed_forms);
    tcase_add_test(tc, estimate_bytes_per_param);
    tcase_add_loop_test(tc, estimate_every_family, 0, (int)ps_family_count());
    tcase_add_test(tc, estimate_faster_hardware);
    suite_add_tcase(su, tc);
    tc = tcase_create("moe");
    tcase_add_test(tc, estimate_moe_through_planner);
    tcase_add_test(tc, estimate_moe_grouped_gemm);
    tcase_add_test(tc, estimate_moe_fixed_time);
    tcase_add_loop_test(tc, estimate_zb_auto_memory_limit, 0, 2);
    tcase_add_test(tc, estimate_moe_recompute_layers);
    tcase_add_test(tc, estimate_group_size);
    tcase_add_test(tc, estimate_collective_spread);
    suite_add_tcase(su, tc);
    tc = tcase_create("trace");
    tcase_add_test(tc, estimate_trace_by_hand);
    tcase_add_test(tc, estimate_trace_tail);
    tcase_add_test(tc, estimate_trace_alloc_failure);
    tcase_add_test(tc, estimate_moe_zb_auto_extras);
    tcase_add_test(tc, estimate_reuse_matches_fresh);
    suite_add_tcase(su, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, estimate_config_errors);
    tcase_add_test(tc, estimate_alloc_failure);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
