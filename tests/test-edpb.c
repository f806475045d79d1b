/*
 * Check suite "edpb": the imbalance in the estimate (ps_edpb_estimate, the estimate's weight and
 * MoE-factor knobs, ps_samples_synthetic; docs/balance.md, "In the estimate"). The expected
 * values are worked by hand: the synthetic documents of a constant length, the first values of
 * the lognormal generator from an independent implementation of xoshiro256** and Box-Muller
 * (Python), a one-stage pipeline whose step time is linear in its micro-batches' weights, and a
 * two-device expert placement whose max/mean is counted by hand.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <pipesched/balance.h>

#include <math.h>

/* Whether two sample arrays hold the same values (memcmp would read the padding). */
static int same_samples(const ps_sample *a, const ps_sample *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].tokens != b[i].tokens || a[i].sq != b[i].sq || a[i].docs != b[i].docs)
            return 0;
    return 1;
}

/* ---- synthetic samples ---------------------------------------------------------------------- */

START_TEST(edpb_synthetic_constant_documents)
{
    /* SIGMA 0: every document is round(exp(ln 1000)) = 1000 tokens, packed into 4096-token
     * samples and cut at their ends. */
    char spec[64];
    snprintf(spec, sizeof spec, "lognormal:%.17g,0", log(1000.0));
    ps_sample x[3];
    char err[256];
    ck_assert_int_eq(ps_samples_synthetic(spec, 4096, x, 3, err, sizeof err), 0);
    /* 1000 1000 1000 1000 96 | 904 1000 1000 1000 192 | 808 1000 1000 1000 288 */
    ck_assert_double_eq(x[0].tokens, 4096);
    ck_assert_int_eq(x[0].docs, 5);
    ck_assert_double_eq(x[0].sq, 4e6 + 96.0 * 96);
    ck_assert_int_eq(x[1].docs, 5);
    ck_assert_double_eq(x[1].sq, 904.0 * 904 + 3e6 + 192.0 * 192);
    ck_assert_double_eq(x[2].sq, 808.0 * 808 + 3e6 + 288.0 * 288);
    ck_assert_double_eq(x[2].tokens, 4096);
}
END_TEST

START_TEST(edpb_synthetic_known_values)
{
    /* The first document lengths of seed 3 at MU 7, SIGMA 1, from an independent Python
     * implementation of the generator: 415 552 469 946 2459 417 ... */
    ps_sample x[3], y[3];
    char err[256];
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1,seed:3", 4096, x, 3, err, sizeof err), 0);
    ck_assert_double_eq(x[0].sq, 415.0 * 415 + 552.0 * 552 + 469.0 * 469 + 946.0 * 946 +
                                     1714.0 * 1714); /* 2459 cut after 1714 */
    ck_assert_int_eq(x[0].docs, 5);
    ck_assert_double_eq(x[1].sq, 5244342);
    ck_assert_int_eq(x[1].docs, 4);
    ck_assert_double_eq(x[2].sq, 5977294);
    /* The same seed, the same samples; another seed, others. */
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1,seed:3", 4096, y, 3, err, sizeof err), 0);
    ck_assert(same_samples(x, y, 3));
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1,seed:4", 4096, y, 3, err, sizeof err), 0);
    ck_assert(!same_samples(x, y, 3));
    /* The default seed is 1. */
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1", 4096, x, 3, err, sizeof err), 0);
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1,seed:1", 4096, y, 3, err, sizeof err), 0);
    ck_assert(same_samples(x, y, 3));
}
END_TEST

START_TEST(edpb_synthetic_bad_spec)
{
    static const struct {
        const char *spec, *word;
    } bad[] = {
        {"gauss:7,1", "does not start with lognormal"},
        {"lognormal:7", "SIGMA is missing"},
        {"lognormal:x,1", "MU needs a number"},
        {"lognormal:7,-1", "SIGMA needs a number"},
        {"lognormal:7,1,seed:1.5", "seed needs an integer"},
        {"lognormal:7,1,spread:2", "unknown word \"spread:2\""},
        {"lognormal:7,1,", "unknown word \"\""},
    };
    ps_sample x[2];
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        ck_assert_int_eq(ps_samples_synthetic(bad[i].spec, 4096, x, 2, err, sizeof err),
                         PS_ECONFIG);
        ck_assert_msg(strstr(err, bad[i].word), "%s: %s", bad[i].spec, err);
    }
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1", 0, x, 2, err, sizeof err), PS_ERANGE);
    /* 8 samples of 2^30 tokens: 2^33, beyond the 2^32 tokens packed at most */
    ps_sample big[8];
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1", 1 << 30, big, 8, err, sizeof err),
                     PS_ERANGE);
    ck_assert_int_eq(ps_samples_synthetic(NULL, 4096, x, 2, err, sizeof err), PS_EINVAL);
    ck_assert_int_eq(ps_samples_synthetic("lognormal:7,1", 4096, NULL, 2, err, sizeof err),
                     PS_EINVAL);
}
END_TEST

/* ---- the estimate's knobs ------------------------------------------------------------------- */

/* llama3-8b on 2 H100, tp 1 pp 1: 2 replicas of a one-stage pipeline; gbs micro-batches of 1. */
static void small_job(ps_transformer *m, ps_hardware *hw, ps_train *t, const char *model, int gbs)
{
    ck_assert_int_eq(ps_transformer_builtin(model, m), 0);
    ck_assert_int_eq(ps_hardware_builtin("h100-sxm", hw), 0);
    ps_train_init(t);
    t->gpus = 2;
    t->gbs = gbs;
    t->mbs = 1;
    t->seq = 4096;
    t->overlap_grad_reduce = t->overlap_param_gather = 0; /* the tail does not move */
}

static double step_of(ps_estimate *e, const ps_transformer *m, const ps_hardware *hw,
                      const ps_train *t)
{
    ck_assert_msg(ps_estimate_run(e, m, hw, t) == 0, "%s", ps_estimate_last_error(e));
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    return r.step_time_s;
}

START_TEST(edpb_weights_knob)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "llama3-8b", 8); /* dp 2, 4 micro-batches */
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    double even = step_of(e, &m, &hw, &t);
    double ones[4] = {1, 1, 1, 1}, twos[4] = {2, 2, 2, 2}, mix[4] = {0.5, 1.5, 3, 1};
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, ones, 4), 0);
    ck_assert(step_of(e, &m, &hw, &t) == even); /* bit for bit */
    /* One stage: the pipeline is the sum of its micro-batches, so the step is linear in the
     * weights' sum: tail + sum . u. */
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, twos, 4), 0);
    double u = (step_of(e, &m, &hw, &t) - even) / 4;
    ck_assert(u > 0);
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, mix, 4), 0);
    ck_assert_double_eq_tol(step_of(e, &m, &hw, &t), even + 2 * u, 1e-9 * even);
    /* A count other than the micro-batches refuses the run, naming both. */
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, mix, 3), 0);
    ck_assert_int_eq(ps_estimate_run(e, &m, &hw, &t), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_estimate_last_error(e), "3 micro-batch weights"));
    ck_assert_ptr_nonnull(strstr(ps_estimate_last_error(e), "4 micro-batches"));
    double bad[2] = {1, 0};
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, bad, 2), PS_ERANGE);
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, NULL, 2), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(NULL, ones, 4), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, NULL, 0), 0);
    ck_assert(step_of(e, &m, &hw, &t) == even);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_moe_factor_knob)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 8);
    t.ep = 2;
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    double even = step_of(e, &m, &hw, &t);
    ps_moe_model a, b;
    ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &a), 0);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 1.5, 2), 0);
    double slow = step_of(e, &m, &hw, &t);
    ck_assert(slow > even);
    ck_assert_int_eq(ps_problem_get_moe(ps_estimate_problem(e), &b), 0);
    /* The weight gradient of the experts is their GEMM alone: 1.5 times; the all-to-all twice;
     * attention untouched. */
    ck_assert_double_eq_tol(b.moe.t[PS_OP_MLP_DW], 1.5 * a.moe.t[PS_OP_MLP_DW], 1e-15);
    ck_assert_double_eq_tol(b.moe.t[PS_OP_DISPATCH], 2 * a.moe.t[PS_OP_DISPATCH], 1e-15);
    ck_assert_double_eq_tol(b.moe.t[PS_OP_COMBINE_B], 2 * a.moe.t[PS_OP_COMBINE_B], 1e-15);
    ck_assert(b.moe.t[PS_OP_ATTN] == a.moe.t[PS_OP_ATTN]);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 0.5, 1), PS_ERANGE);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 1, NAN), PS_ERANGE);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(NULL, 1, 1), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 1, 1), 0);
    ck_assert(step_of(e, &m, &hw, &t) == even);
    ps_estimate_free(e);
}
END_TEST

/* ---- ps_edpb_estimate ----------------------------------------------------------------------- */

/* n single-document samples of the given lengths. */
static void docs(ps_sample *x, const double *len, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (ps_sample){len[i], len[i] * len[i], 1};
}

START_TEST(edpb_two_replicas_by_hand)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "llama3-8b", 4); /* dp 2, m 2 */
    /* In input order round-robin, replica 0 gets samples 0 and 2 (both long), replica 1 the
     * short ones; the reordering gives each replica one of each. */
    double len[4] = {4096, 1024, 4096, 1024};
    ps_sample x[4];
    docs(x, len, 4);
    ps_sample_model sm;
    char err[256];
    ck_assert_int_eq(ps_sample_model_derive(&m, &hw, &sm, err, sizeof err), 0);
    double th = sm.a * 4096.0 * 4096 + sm.c * 4096, tl = sm.a * 1024.0 * 1024 + sm.c * 1024;
    double heavy = 2 * th / ((th + tl) / 2); /* replica 0's weights' sum; the mean slot is 1 */
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    double even = step_of(e, &m, &hw, &t);
    double twos[2] = {2, 2};
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, twos, 2), 0);
    double u = (step_of(e, &m, &hw, &t) - even) / 2; /* one micro-batch at weight 1 */
    ck_assert_int_eq(ps_estimate_set_microbatch_weights(e, NULL, 0), 0);

    ps_edpb_input in = {x, 4, NULL, 0.9, 0};
    ps_edpb_result r;
    int32_t rank[4], slot[4];
    ck_assert_msg(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, rank, slot, err, sizeof err) == 0, "%s",
                  err);
    ck_assert(r.even_step_time_s == even);
    ck_assert_double_eq_tol(r.data_imbalance, heavy / 2, 1e-12);
    ck_assert_double_eq_tol(r.imbalanced_step_time_s, even + (heavy - 2) * u, 1e-9 * even);
    ck_assert_int_eq(r.slowest_replica, 0);
    ck_assert(r.experts_step_time_s == r.imbalanced_step_time_s); /* no trace */
    ck_assert_double_eq_tol(r.balanced_step_time_s, even, 1e-9 * even);
    ck_assert_double_eq_tol(r.data_imbalance_balanced, 1, 1e-12);
    ck_assert_int_ne(rank[0], rank[2]); /* the long samples on two replicas */
    ck_assert_int_ne(rank[1], rank[3]);
    ck_assert(r.expert_factor == 1 && r.expert_factor_balanced == 1);
    /* The slot weights of both assignments, by hand: the mean slot is (th + tl) / 2. */
    double w[4], mean = (th + tl) / 2;
    ck_assert_int_eq(ps_edpb_slot_weights(&m, &hw, x, 4, NULL, NULL, 2, 2, w, err, sizeof err), 0);
    ck_assert_double_eq_tol(w[0], th / mean, 1e-12); /* replica 0, slot 0: sample 0 */
    ck_assert_double_eq_tol(w[1], th / mean, 1e-12); /* replica 0, slot 1: sample 2 */
    ck_assert_double_eq_tol(w[2], tl / mean, 1e-12);
    ck_assert_double_eq_tol(w[3], tl / mean, 1e-12);
    ck_assert_int_eq(ps_edpb_slot_weights(&m, &hw, x, 4, rank, slot, 2, 2, w, err, sizeof err), 0);
    ck_assert_double_eq_tol(w[0] + w[1], 2, 1e-12);
    ck_assert_double_eq_tol(w[2] + w[3], 2, 1e-12);
    int32_t bad_rank[4] = {0, 1, 2, 0};
    ck_assert_int_eq(ps_edpb_slot_weights(&m, &hw, x, 4, bad_rank, slot, 2, 2, w, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_msg(strstr(err, "sample 2 at rank 2"), "%s", err);
    ck_assert_int_eq(ps_edpb_slot_weights(&m, &hw, x, 3, NULL, NULL, 2, 2, w, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_int_eq(ps_edpb_slot_weights(&m, &hw, x, 4, rank, NULL, 2, 2, w, err, sizeof err),
                     PS_EINVAL);
    /* e holds the even estimate again. */
    ps_estimate_result er;
    ck_assert_int_eq(ps_estimate_result_get(e, &er), 0);
    ck_assert(er.step_time_s == even);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_uniform_is_even)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 8);
    t.ep = 2;
    t.overlap_grad_reduce = t.overlap_param_gather = 1;
    ps_sample x[8];
    double len[8] = {4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096};
    docs(x, len, 8);
    ps_expert_trace *tr;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    static const char even_load[] = "5,5,5,5,5,5,5,5\n5,5,5,5,5,5,5,5\n";
    ck_assert_int_eq(ps_expert_trace_load(tr, even_load, strlen(even_load)), 0);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_edpb_input in = {x, 8, tr, 0.9, 0};
    ps_edpb_result r;
    char err[256];
    ck_assert_msg(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err) == 0, "%s",
                  err);
    ck_assert(r.expert_factor == 1 && r.expert_factor_balanced == 1);
    ck_assert(r.data_imbalance == 1 && r.data_imbalance_balanced == 1);
    ck_assert(r.imbalanced_step_time_s == r.even_step_time_s);
    ck_assert(r.experts_step_time_s == r.even_step_time_s);
    ck_assert(r.balanced_step_time_s == r.even_step_time_s);
    ps_expert_trace_free(tr);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_two_devices_by_hand)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 8);
    t.ep = 2;
    /* Loads 8 7 1 1 1 1 1 1 (21, mean 10.5 a device): the identity puts 8 7 1 1 on device 0
     * (17), the best placement 8 1 1 1 and 7 1 1 1 (11 and 10). One step: the EMA is the step. */
    ps_expert_trace *tr;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    static const char load[] = "8,7,1,1,1,1,1,1\n";
    ck_assert_int_eq(ps_expert_trace_load(tr, load, strlen(load)), 0);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_edpb_input in = {NULL, 0, tr, 0.9, 0};
    ps_edpb_result r;
    char err[256];
    ck_assert_msg(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_double_eq_tol(r.expert_factor, 17 / 10.5, 1e-12);
    ck_assert_double_eq_tol(r.expert_factor_balanced, 11 / 10.5, 1e-12);
    /* The step of each factor is the estimate's with that factor on GEMMs and all-to-all. */
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 17 / 10.5, 17 / 10.5), 0);
    ck_assert_double_eq_tol(r.imbalanced_step_time_s, step_of(e, &m, &hw, &t), 1e-12);
    ck_assert_int_eq(ps_estimate_set_moe_imbalance(e, 11 / 10.5, 11 / 10.5), 0);
    ck_assert_double_eq_tol(r.balanced_step_time_s, step_of(e, &m, &hw, &t), 1e-12);
    ck_assert(r.even_step_time_s < r.balanced_step_time_s);
    ck_assert(r.balanced_step_time_s < r.imbalanced_step_time_s);
    ck_assert(r.experts_step_time_s == r.balanced_step_time_s); /* no samples */
    ps_expert_trace_free(tr);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_balancing_never_worse)
{
    /* Synthetic samples and loads on pipelines of 4 stages: the balanced step is never above
     * the unbalanced one. */
    static const char *const specs[] = {"lognormal:7,1.5,seed:1", "lognormal:6,2,seed:2",
                                        "lognormal:8,0.5,seed:3"};
    int i = _i;
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 32);
    t.gpus = 16, t.pp = 4, t.ep = 2, t.vpp = i == 2 ? 2 : 1;
    t.overlap_grad_reduce = t.overlap_param_gather = 1;
    ps_sample x[32];
    char err[256];
    ck_assert_int_eq(ps_samples_synthetic(specs[i], 4096, x, 32, err, sizeof err), 0);
    ps_expert_trace *tr;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_synthetic(tr, "zipf:1,seed:5,steps:4", 32, 8), 0);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_edpb_input in = {x, 32, tr, 0.9, 2000};
    ps_edpb_result r;
    ck_assert_msg(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err) == 0, "%s",
                  err);
    ck_assert(r.balanced_step_time_s <= r.experts_step_time_s);
    ck_assert(r.expert_factor_balanced <= r.expert_factor);
    ck_assert(r.expert_factor >= 1);
    ck_assert(r.imbalanced_step_time_s > r.even_step_time_s);
    ps_expert_trace_free(tr);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_bad_input)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 8);
    t.ep = 2;
    ps_sample x[8];
    double len[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    docs(x, len, 8);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_edpb_result r;
    char err[256];
    /* Seven samples for a global batch of eight. */
    ps_edpb_input in = {x, 7, NULL, 0.9, 0};
    ck_assert_int_eq(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_msg(strstr(err, "samples: 7 given") && strstr(err, "= 8 samples"), "%s", err);
    /* A sample without tokens. */
    x[3].tokens = 0;
    in.n_samples = 8;
    ck_assert_int_eq(ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_msg(strstr(err, "sample 3"), "%s", err);
    /* A trace of 4 experts for a model of 8. */
    ps_expert_trace *tr;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_load(tr, "1,2,3,4\n", 8), 0);
    ps_edpb_input in2 = {NULL, 0, tr, 0.9, 0};
    ck_assert_int_eq(ps_edpb_estimate(e, &m, &hw, &t, &in2, &r, NULL, NULL, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_msg(strstr(err, "1 layers of 4 experts"), "%s", err);
    /* theta out of range */
    ck_assert_int_eq(ps_expert_trace_load(tr, "1,2,3,4,5,6,7,8\n", 16), 0);
    in2.theta = 1;
    ck_assert_int_eq(ps_edpb_estimate(e, &m, &hw, &t, &in2, &r, NULL, NULL, err, sizeof err),
                     PS_ERANGE);
    /* A dense model with a trace. */
    ps_transformer dense;
    ck_assert_int_eq(ps_transformer_builtin("llama3-8b", &dense), 0);
    in2.theta = 0.9;
    t.ep = 1;
    ck_assert_int_eq(ps_edpb_estimate(e, &dense, &hw, &t, &in2, &r, NULL, NULL, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_msg(strstr(err, "dense"), "%s", err);
    ck_assert_int_eq(ps_edpb_estimate(NULL, &m, &hw, &t, &in2, &r, NULL, NULL, err, sizeof err),
                     PS_EINVAL);
    ps_expert_trace_free(tr);
    ps_estimate_free(e);
}
END_TEST

START_TEST(edpb_allocation_failure)
{
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    small_job(&m, &hw, &t, "mixtral-8x7b", 8);
    t.ep = 2;
    ps_sample x[8];
    double len[8] = {4096, 512, 2048, 1024, 4096, 256, 128, 64};
    docs(x, len, 8);
    ps_expert_trace *tr;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_load(tr, "8,7,1,1,1,1,1,1\n", 16), 0);
    ps_estimate *plain;
    ck_assert_int_eq(ps_estimate_new(&plain, NULL), 0);
    double even = step_of(plain, &m, &hw, &t);
    ps_estimate_free(plain);
    int done = 0;
    for (long n = 1; n < 400 && !done; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_estimate *e;
        ck_assert_int_eq(ps_estimate_new(&e, &al), 0);
        ps_edpb_input in = {x, 8, tr, 0.9, 200};
        ps_edpb_result r;
        char err[256];
        cnt.fail_at = cnt.calls + n;
        int rc = ps_edpb_estimate(e, &m, &hw, &t, &in, &r, NULL, NULL, err, sizeof err);
        cnt.fail_at = 0;
        /* Failed or not, e is left without weights or factors: its next run is the even one. */
        if (rc == PS_ENOMEM)
            ck_assert(step_of(e, &m, &hw, &t) == even);
        ps_estimate_free(e);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
        if (rc == 0)
            done = 1;
        else
            ck_assert_msg(rc == PS_ENOMEM, "call %ld: %d %s", n, rc, err);
    }
    ck_assert(done);
    ps_expert_trace_free(tr);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("edpb");
    TCase *tc = tcase_create("synthetic");
    tcase_add_test(tc, edpb_synthetic_constant_documents);
    tcase_add_test(tc, edpb_synthetic_known_values);
    tcase_add_test(tc, edpb_synthetic_bad_spec);
    suite_add_tcase(su, tc);
    tc = tcase_create("knobs");
    tcase_add_test(tc, edpb_weights_knob);
    tcase_add_test(tc, edpb_moe_factor_knob);
    suite_add_tcase(su, tc);
    tc = tcase_create("estimate");
    tcase_add_test(tc, edpb_two_replicas_by_hand);
    tcase_add_test(tc, edpb_uniform_is_even);
    tcase_add_test(tc, edpb_two_devices_by_hand);
    tcase_add_loop_test(tc, edpb_balancing_never_worse, 0, 3);
    tcase_add_test(tc, edpb_bad_input);
    tcase_add_test(tc, edpb_allocation_failure);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
