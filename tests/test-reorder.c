/*
 * Check suite "reorder": data reordering (ps_balance_data, include/pipesched/balance.h) and its
 * inputs, the samples file and the sample model. The optimum of tiny batches comes from an
 * enumeration of every assignment here, each scored by simulating its replicas with the
 * documented weights (a slot's time over a micro-batch's durations at weight 1, which for
 * uniform costs is p . v . (f + b + w)), not from the library's search.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <pipesched/balance.h>

#include <math.h>

/* ---- the samples file ------------------------------------------------------------------------ */

START_TEST(reorder_parse_samples)
{
    static const char text[] = "512,2048,128\n 3 , 4\r\n7\n";
    size_t n;
    char err[256];
    ck_assert_int_eq(ps_samples_parse(text, strlen(text), NULL, 0, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 3);
    ps_sample x[3];
    ck_assert_int_eq(ps_samples_parse(text, strlen(text), x, 3, &n, err, sizeof err), 0);
    ck_assert_double_eq(x[0].tokens, 512 + 2048 + 128);
    ck_assert_double_eq(x[0].sq, 512.0 * 512 + 2048.0 * 2048 + 128.0 * 128);
    ck_assert_int_eq(x[0].docs, 3);
    ck_assert_double_eq(x[1].tokens, 7);
    ck_assert_double_eq(x[1].sq, 25);
    ck_assert_double_eq(x[2].sq, 49);
    /* no final newline */
    ck_assert_int_eq(ps_samples_parse("5,5", 3, x, 3, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_double_eq(x[0].sq, 50);
    /* 2 (512^2 + 2048^2 + 128^2) . 1e-6 + 2688 . 1e-3 + 0.5 */
    ps_sample_model m = {1e-6, 1e-3, 0.5};
    ps_sample y = {2688, 512.0 * 512 + 2048.0 * 2048 + 128.0 * 128, 3};
    ck_assert_double_eq_tol(ps_sample_time(&m, &y), 4472832e-6 + 2.688 + 0.5, 1e-12);
    ck_assert_double_eq(ps_sample_time(NULL, &y), 0);
}
END_TEST

START_TEST(reorder_parse_errors)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"512,2048\n12,-3\n", "line 2, column 4: document length -3 is out of range (1 to "
                              "1000000000)"},
        {"1\n0\n", "line 2, column 1: document length 0 is out of range (1 to 1000000000)"},
        {"1,2,3000000000\n", "line 1, column 5: document length 3000000000 is out of range (1 "
                             "to 1000000000)"},
        {"7,x8\n", "line 1, column 3: \"x8\" is not a document length (a whole number from 1 to "
                   "1000000000)"},
        {"7,,8\n", "line 1, column 3: \"\" is not a document length (a whole number from 1 to "
                   "1000000000)"},
        {"7 8\n", "line 1, column 1: \"7 8\" is not a document length (a whole number from 1 to "
                  "1000000000)"},
        {"1.5\n", "line 1, column 1: \"1.5\" is not a document length (a whole number from 1 to "
                  "1000000000)"},
        {"4\n\n5\n", "line 2: empty; expected a sample's document lengths, e.g. 512,2048,128"},
        {"", "no samples: the file is empty (expected one sample per line, its document "
             "lengths, e.g. 512,2048,128)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t n = 99;
        char err[256];
        ck_assert_int_eq(
            ps_samples_parse(bad[k].text, strlen(bad[k].text), NULL, 0, &n, err, sizeof err),
            PS_EPARSE);
        ck_assert_str_eq(err, bad[k].msg);
        ck_assert_uint_eq(n, 0);
    }
    size_t n;
    ps_sample x[1];
    ck_assert_int_eq(ps_samples_parse("1\n2\n", 4, x, 1, &n, NULL, 0), PS_EINVAL);
    ck_assert_int_eq(ps_samples_parse(NULL, 0, NULL, 0, &n, NULL, 0), PS_EINVAL);
    ck_assert_int_eq(ps_samples_parse("1", 1, NULL, 0, NULL, NULL, 0), PS_EINVAL);
}
END_TEST

/* Llama 3 8B: 32 layers of 32 heads of 128: causal attention is 6 . 32 . 32 . (128 + 128) / 2
 * FLOPs per squared document length (three passes, Megatron's count halved). */
START_TEST(reorder_model_derive)
{
    ps_transformer t;
    ps_hardware hw;
    ck_assert_int_eq(ps_transformer_builtin("llama3-8b", &t), 0);
    ck_assert_int_eq(ps_hardware_builtin("h100-sxm", &hw), 0);
    ps_sample_model m;
    char err[256];
    ck_assert_int_eq(ps_sample_model_derive(&t, &hw, &m, err, sizeof err), 0);
    double a = 6.0 * 32 * 32 * 256 / 2 / (hw.peak_tflops_bf16 * 1e12 * hw.attn_eff);
    ck_assert_double_eq_tol(m.a, a, a * 1e-12);
    ck_assert_double_eq(m.d, 0);
    /* c: 6 FLOPs per GEMM parameter; the 8B parameters are all GEMMs but the input embedding */
    ps_param_count pc;
    ck_assert_int_eq(ps_transformer_params(&t, &pc), 0);
    double per_param = m.c * hw.peak_tflops_bf16 * 1e12 * hw.gemm_eff / 6;
    ck_assert_msg(per_param > 0.85 * pc.total && per_param < 1.0 * pc.total,
                  "c gives %g GEMM parameters of %g", per_param, pc.total);
    t.layers = 0;
    ck_assert_int_eq(ps_sample_model_derive(&t, &hw, &m, err, sizeof err), PS_ECONFIG);
    ck_assert_int_eq(ps_sample_model_derive(NULL, &hw, &m, err, sizeof err), PS_EINVAL);
}
END_TEST

/* ---- brute force ----------------------------------------------------------------------------- */

typedef struct setup {
    const char *family;
    int p, v;
    double f, b, w, c;
} setup;

/* A scorer of assignments: pb with m = M, its schedule, a simulator. */
typedef struct scorer {
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
    int D, M, B;
    double unit; /* p . v . (f + b + w): a micro-batch's durations at weight 1 */
    int regen;
} scorer;

static void scorer_init(scorer *sc, const setup *st, int D, int M, int B)
{
    sc->pb = make_problem(st->family, st->p, st->v, M, st->f, st->b, st->w, st->c);
    sc->D = D, sc->M = M, sc->B = B;
    sc->unit = (double)st->p * st->v * (st->f + st->b + st->w);
    sc->regen = !strcmp(st->family, "zb-auto");
    ck_assert_int_eq(ps_schedule_new(&sc->s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sc->sim, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(sc->s, sc->pb), 0);
}

static void scorer_free(scorer *sc)
{
    ps_sim_free(sc->sim);
    ps_schedule_free(sc->s);
    ps_problem_free(sc->pb);
}

/* The step time of the assignment rank[i], slot[i] of the samples of times t. */
static double score(scorer *sc, const double *t, size_t n, const int32_t *rank, const int32_t *slot)
{
    double step = 0, w[16];
    for (int r = 0; r < sc->D; r++) {
        for (int j = 0; j < sc->M; j++)
            w[j] = 0;
        for (size_t i = 0; i < n; i++)
            if (rank[i] == r)
                w[slot[i]] += t[i];
        for (int j = 0; j < sc->M; j++)
            w[j] = w[j] / sc->unit > 0 ? w[j] / sc->unit : 1e-300;
        ck_assert_int_eq(ps_problem_set_microbatch_weights(sc->pb, w, (size_t)sc->M), 0);
        if (sc->regen)
            ck_assert_int_eq(ps_schedule_generate(sc->s, sc->pb), 0);
        ck_assert_int_eq(ps_sim_run(sc->sim, sc->s, sc->pb), 0);
        ps_metrics m;
        ps_sim_metrics(sc->sim, &m);
        step = m.makespan > step ? m.makespan : step;
    }
    return step;
}

/* The least step time over every assignment: positions q = (r . M + j) . B + k hold the
 * samples in every order (Heap's algorithm). */
static double brute_force(scorer *sc, const double *t, size_t n)
{
    int32_t perm[12], c[12], rank[12], slot[12];
    for (size_t i = 0; i < n; i++)
        perm[i] = (int32_t)i, c[i] = 0;
    double best = INFINITY;
    for (size_t i = 0;;) {
        for (size_t q = 0; q < n; q++) {
            rank[perm[q]] = (int32_t)(q / (size_t)(sc->M * sc->B));
            slot[perm[q]] = (int32_t)(q / (size_t)sc->B % (size_t)sc->M);
        }
        int sorted = 1; /* one order of the samples inside each slot */
        for (size_t q = 0; q + 1 < n; q++)
            if ((q + 1) % (size_t)sc->B && perm[q] > perm[q + 1])
                sorted = 0;
        if (sorted) {
            double v = score(sc, t, n, rank, slot);
            best = v < best ? v : best;
        }
        while (i < n && c[i] >= (int32_t)i) /* next permutation */
            c[i++] = 0;
        if (i >= n)
            break;
        size_t x = i % 2 ? (size_t)c[i] : 0;
        int32_t tmp = perm[x];
        perm[x] = perm[i];
        perm[i] = tmp;
        c[i]++;
        i = 0;
    }
    return best;
}

/* A deterministic generator of sample times (xorshift), spread over [1, 9). */
static double next_time(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return 1 + (double)(*s % 8000) / 1000;
}

/* Checks that the assignment fills every slot with B samples and that its score is *step. */
static void check_assignment(scorer *sc, const double *t, size_t n, const int32_t *rank,
                             const int32_t *slot, double step)
{
    int fill[64] = {0};
    for (size_t i = 0; i < n; i++) {
        ck_assert(rank[i] >= 0 && rank[i] < sc->D && slot[i] >= 0 && slot[i] < sc->M);
        fill[rank[i] * sc->M + slot[i]]++;
    }
    for (int q = 0; q < sc->D * sc->M; q++)
        ck_assert_int_eq(fill[q], sc->B);
    double v = score(sc, t, n, rank, slot);
    ck_assert_double_eq_tol(v, step, 1e-9 * step);
}

static const setup tiny_setups[] = {
    {"1f1b", 2, 1, 1, 1, 1, 0},        {"1f1b", 3, 1, 1, 2, 0.5, 0.05},
    {"interleaved", 2, 2, 1, 1, 1, 0}, {"zb-h1", 2, 1, 1, 1, 1, 0},
    {"adaptive", 2, 1, 1, 1, 1, 0.1},  {"gpipe", 2, 1, 1, 2, 0, 0},
};
static const int tiny_shapes[][3] = {{2, 2, 1}, {2, 3, 1}, {3, 2, 1}, {2, 2, 2}};

/* Tiny batches: the search finds the optimum that the enumeration finds, on every setup and
 * shape, three batches each. */
START_TEST(reorder_equals_brute_force)
{
    const setup *st = &tiny_setups[_i / 4];
    const int *sh = tiny_shapes[_i % 4];
    if (!strcmp(st->family, "interleaved") && sh[1] % 2)
        return; /* interleaved needs m divisible by the group */
    uint64_t seed = 0x9e3779b97f4a7c15u + (uint64_t)_i;
    for (int trial = 0; trial < 3; trial++) {
        scorer sc;
        scorer_init(&sc, st, sh[0], sh[1], sh[2]);
        size_t n = (size_t)(sh[0] * sh[1] * sh[2]);
        double t[12];
        int32_t rank[12], slot[12];
        for (size_t i = 0; i < n; i++)
            t[i] = next_time(&seed);
        ps_data_config cfg = {sh[0], sh[1], sh[2], 0};
        ps_data_result r;
        char err[256];
        int rc = ps_balance_data(sc.pb, t, n, &cfg, rank, slot, &r, err, sizeof err);
        ck_assert_msg(rc == 0, "%s", err);
        double opt = brute_force(&sc, t, n);
        ck_assert_msg(fabs(r.step_time - opt) <= 1e-9 * opt,
                      "%s p%d v%d, dp %d m %d mbs %d, trial %d: search %.12g, optimum %.12g",
                      st->family, st->p, st->v, sh[0], sh[1], sh[2], trial, r.step_time, opt);
        check_assignment(&sc, t, n, rank, slot, r.step_time);
        scorer_free(&sc);
    }
}
END_TEST

/* ---- larger batches ----------------------------------------------------------------------------
 */

static const setup big_setups[] = {
    {"1f1b", 4, 1, 1, 1, 1, 0},      {"interleaved", 2, 2, 1, 1.5, 0.5, 0.02},
    {"zb-h1", 4, 1, 1, 1, 1, 0},     {"adaptive", 2, 2, 1, 1, 1, 0},
    {"dualpipev", 2, 2, 1, 1, 1, 0}, {"zb-auto", 2, 1, 1, 1, 1, 0.05},
};

/* Never worse than the baseline, whose step time is that of the input order dealt round-robin
 * (sample i to rank i mod D, a rank's k-th sample to slot k / B); the result's score is the
 * step time it reports, and it fills every slot. */
START_TEST(reorder_never_worse_than_baseline)
{
    const setup *st = &big_setups[_i];
    const int D = 4, M = 8, B = 2;
    size_t n = (size_t)(D * M * B);
    uint64_t seed = 12345 + (uint64_t)_i;
    double t[64];
    int32_t rank[64], slot[64], brank[64], bslot[64];
    for (size_t i = 0; i < n; i++) {
        t[i] = next_time(&seed);
        if (i % 7 == 0)
            t[i] *= 6; /* a few long samples */
        brank[i] = (int32_t)(i % D);
        bslot[i] = (int32_t)(i / D / B);
    }
    scorer sc;
    scorer_init(&sc, st, D, M, B);
    ps_data_config cfg = {D, M, B, 0};
    ps_data_result r;
    char err[256];
    ck_assert_int_eq(ps_balance_data(sc.pb, t, n, &cfg, rank, slot, &r, err, sizeof err), 0);
    double base = score(&sc, t, n, brank, bslot);
    ck_assert_double_eq_tol(r.baseline_step_time, base, 1e-9 * base);
    ck_assert(r.step_time <= r.baseline_step_time);
    ck_assert(r.step_time <= r.lpt_step_time);
    ck_assert_msg(r.step_time < 0.95 * base, "%s: %g of the baseline", st->family,
                  r.step_time / base);
    check_assignment(&sc, t, n, rank, slot, r.step_time);
    ck_assert(r.evals > 2 * D);
    scorer_free(&sc);
}
END_TEST

/* The baseline is returned when it cannot be beaten: every sample the same. */
START_TEST(reorder_equal_samples_keep_baseline)
{
    scorer sc;
    setup st = {"1f1b", 2, 1, 1, 1, 1, 0};
    scorer_init(&sc, &st, 2, 4, 1);
    double t[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    int32_t rank[8], slot[8];
    ps_data_config cfg = {2, 4, 1, 0};
    ps_data_result r;
    ck_assert_int_eq(ps_balance_data(sc.pb, t, 8, &cfg, rank, slot, &r, NULL, 0), 0);
    ck_assert_double_eq(r.step_time, r.baseline_step_time);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(rank[i], i % 2);
        ck_assert_int_eq(slot[i], i / 2);
    }
    /* 1f1b p = 2, m = 4, each micro-batch's 6 units of durations at weight 2 / 6: f = b = w =
     * 1/3, B = 2/3: 3 (m + p - 1) / 3 = 5 */
    ck_assert_double_eq_tol(r.step_time, 5, 1e-12);
    scorer_free(&sc);
}
END_TEST

START_TEST(reorder_bad_input)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 4, 1, 1, 1, 0);
    double t[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t rank[8], slot[8];
    ps_data_result r;
    char err[256];
    ps_data_config cfg = {2, 2, 2, 0};
    ck_assert_int_eq(ps_balance_data(pb, t, 7, &cfg, rank, slot, &r, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "balance data: 7 samples do not fill dp 2 x 2 micro-batches x mbs 2 = "
                          "8 slots exactly");
    t[3] = -1;
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, rank, slot, &r, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "balance data: the time of sample 3 must be finite and >= 0; got -1");
    t[3] = NAN;
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, rank, slot, &r, err, sizeof err), PS_ECONFIG);
    t[3] = 4;
    cfg.dp = 0;
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, rank, slot, &r, err, sizeof err), PS_ECONFIG);
    cfg.dp = 2;
    ck_assert_int_eq(ps_balance_data(NULL, t, 8, &cfg, rank, slot, &r, err, sizeof err), PS_EINVAL);
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, NULL, slot, &r, err, sizeof err), PS_EINVAL);
    /* a family that cannot run 2 micro-batches on 2 ranks */
    ck_assert_int_eq(ps_problem_set_schedule(pb, "dualpipe"), 0);
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, rank, slot, &r, err, sizeof err),
                     PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "balance data: dualpipe"));
    /* no cost at all */
    ck_assert_int_eq(ps_problem_set_schedule(pb, "1f1b"), 0);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=0,b=0,w=0"), 0);
    ck_assert_int_eq(ps_balance_data(pb, t, 8, &cfg, rank, slot, &r, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "balance data: the pipeline's costs are all 0: nothing to balance");
    ps_problem_free(pb);
}
END_TEST

START_TEST(reorder_allocation_failure)
{
    double t[16];
    uint64_t seed = 99;
    for (int i = 0; i < 16; i++)
        t[i] = next_time(&seed);
    double want = -1;
    for (long n = 1; n < 200; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
        int32_t rank[16], slot[16];
        ps_data_config cfg = {2, 4, 2, 0};
        ps_data_result r;
        char err[256];
        cnt.fail_at = cnt.calls + n;
        int rc = ps_balance_data(pb, t, 16, &cfg, rank, slot, &r, err, sizeof err);
        cnt.fail_at = 0;
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
        if (rc == 0) {
            want = r.step_time;
            ck_assert_int_gt(n, 3);
            break;
        }
        ck_assert_int_eq(rc, PS_ENOMEM);
    }
    ck_assert(want > 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("reorder");
    TCase *tc = tcase_create("samples");
    tcase_add_test(tc, reorder_parse_samples);
    tcase_add_test(tc, reorder_parse_errors);
    tcase_add_test(tc, reorder_model_derive);
    suite_add_tcase(su, tc);
    tc = tcase_create("search");
    tcase_add_loop_test(tc, reorder_equals_brute_force, 0,
                        (int)(sizeof tiny_setups / sizeof tiny_setups[0] * 4));
    tcase_add_loop_test(tc, reorder_never_worse_than_baseline, 0,
                        (int)(sizeof big_setups / sizeof big_setups[0]));
    tcase_add_test(tc, reorder_equal_samples_keep_baseline);
    tcase_add_test(tc, reorder_bad_input);
    tcase_add_test(tc, reorder_allocation_failure);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
