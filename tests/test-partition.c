/*
 * The automatic layer partition (layout "auto", src/model/partition.c): on small cases it
 * finds the least step time a brute force over every split finds (each split run through the
 * estimate as an explicit layout string), it is never worse than the even split, it is
 * deterministic, a heavy output layer pulls layers off the last stage, and a MoE model and an
 * interleaved schedule run. ps_layout_format round-trips through ps_layout_split.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"
#include "estimate_alloc.h"

#include "model/partition.h" /* the search's statistics */

#include <math.h>
#include <pipesched/model.h>
#include <stdio.h>

#define MAXS 8 /* stages of the small cases */

/* h 1024, a 16, f 4096 GeLU, V 256000: the output layer (2.T.h.V) weighs about 21 decoder
 * layers' GEMMs (24.T.h^2), so the last stage should hold fewer layers. */
static ps_transformer heavy_model(int32_t layers)
{
    ps_transformer m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "heavy");
    m.layers = layers, m.hidden = 1024, m.ffn = 4096, m.heads = 16, m.kv_heads = 16;
    m.vocab = 256000;
    return m;
}

/* The same shape with an ordinary vocabulary (32000: about 2.7 layers). */
static ps_transformer light_model(int32_t layers)
{
    ps_transformer m = heavy_model(layers);
    m.vocab = 32000;
    return m;
}

/* 8 experts, top 2, the first layer dense, one shared expert. */
static ps_transformer moe_model(int32_t layers)
{
    ps_transformer m = light_model(layers);
    m.experts = 8, m.top_k = 2, m.moe_ffn = 512, m.first_dense = 1;
    m.shared_experts = 1, m.gated_mlp = 1, m.rms_norm = 1;
    return m;
}

static ps_hardware toy_hw(void)
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

/* pp ranks, vpp chunks, one replica, gbs micro-batches of one sequence. */
static ps_train toy_train(int32_t pp, int32_t vpp, int64_t gbs, const char *schedule)
{
    ps_train t;
    ps_train_init(&t);
    t.gpus = pp, t.tp = 1, t.pp = pp, t.vpp = vpp, t.gbs = gbs, t.mbs = 1, t.seq = 1024;
    t.distributed_optimizer = 1;
    strcpy(t.schedule, schedule);
    return t;
}

static double run_step(ps_estimate *e, const ps_transformer *m, const ps_hardware *h,
                       const ps_train *t)
{
    int rc = ps_estimate_run(e, m, h, t);
    ck_assert_msg(rc == 0, "run (%s): %d %s", t->layout ? t->layout : "even", rc,
                  ps_estimate_last_error(e));
    ps_estimate_result r;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    return r.step_time_s;
}

/* The layout string of counts[stages] through ps_layout_format. */
static void layout_of(const int32_t *counts, int32_t stages, int32_t mtp, char *buf, size_t cap)
{
    ps_stage_layers sl[MAXS];
    memset(sl, 0, sizeof sl);
    for (int32_t i = 0; i < stages; i++)
        sl[i].layers = counts[i];
    sl[0].embedding = 1;
    sl[stages - 1].loss = 1;
    sl[stages - 1].mtp = mtp;
    int n = ps_layout_format(sl, stages, buf, cap);
    ck_assert_msg(n > 0, "format: %d", n);
}

/* The least step time over every split of the model's layers (>= 0 per stage), in order. */
typedef struct brute {
    ps_estimate *e;
    const ps_transformer *m;
    const ps_hardware *h;
    ps_train t;
    int32_t stages;
    int32_t counts[MAXS];
    double best;
    long splits;
} brute;

static void brute_rec(brute *b, int32_t i, int32_t left)
{
    if (i == b->stages - 1) {
        char buf[256];
        b->counts[i] = left;
        layout_of(b->counts, b->stages, b->m->mtp_layers, buf, sizeof buf);
        b->t.layout = buf;
        double step = run_step(b->e, b->m, b->h, &b->t);
        if (b->best < 0 || step < b->best)
            b->best = step;
        b->splits++;
        return;
    }
    for (int32_t c = 0; c <= left; c++) {
        b->counts[i] = c;
        brute_rec(b, i + 1, left - c);
    }
}

static double brute_force(const ps_transformer *m, const ps_hardware *h, const ps_train *t,
                          int32_t stages, long *splits)
{
    brute b;
    memset(&b, 0, sizeof b);
    ck_assert_int_eq(ps_estimate_new(&b.e, NULL), 0);
    b.m = m, b.h = h, b.t = *t, b.stages = stages, b.best = -1;
    brute_rec(&b, 0, m->layers);
    ps_estimate_free(b.e);
    *splits = b.splits;
    return b.best;
}

/* The auto run: its step time, its split (counts) and the search's statistics. */
static double auto_step(const ps_transformer *m, const ps_hardware *h, const ps_train *t,
                        int32_t *counts, ps__partition_stats *st)
{
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_train ta = *t;
    ta.layout = "auto";
    double step = run_step(e, m, h, &ta);
    const ps_stage_layers *sl;
    int n = ps_estimate_stage_layers(e, &sl);
    ck_assert_int_eq(n, t->pp * (t->vpp > 0 ? t->vpp : 1));
    int32_t sum = 0;
    for (int i = 0; i < n; i++) {
        counts[i] = sl[i].layers;
        ck_assert_int_eq(sl[i].first_layer, sum);
        ck_assert_int_eq(sl[i].embedding, i == 0);
        ck_assert_int_eq(sl[i].loss, i == n - 1);
        ck_assert_int_eq(sl[i].mtp, i == n - 1 ? m->mtp_layers : 0);
        sum += sl[i].layers;
    }
    ck_assert_int_eq(sum, m->layers);
    ck_assert_int_eq(ps__estimate_partition_stats(e, st), 0);
    ck_assert_msg(st->best_step == step, "stats %.17g, result %.17g", st->best_step, step);
    ck_assert_int_le(st->evals, st->bound);
    /* The handle holds the chosen split's simulation: an explicit layout of it agrees. */
    char buf[256];
    layout_of(counts, n, m->mtp_layers, buf, sizeof buf);
    ta.layout = buf;
    ck_assert(run_step(e, m, h, &ta) == step);
    ps_estimate_free(e);
    return step;
}

/* The small cases: (model, pp, vpp, micro-batches, schedule). */
typedef struct small_case {
    int heavy; /* 1: V 256000, 0: V 32000, 2: MoE */
    int32_t layers, pp, vpp;
    int64_t gbs;
    const char *schedule;
} small_case;

/* The interleaved 8-layer case is one where the local search alone stops on a plateau 4.5%
 * above the minimum (docs/layout.md); the exhaustive search of small spaces finds it. */
static const small_case cases[] = {
    {1, 4, 2, 1, 4, "1f1b"},        {1, 7, 2, 1, 4, "1f1b"},        {1, 10, 2, 1, 8, "1f1b"},
    {0, 6, 2, 1, 4, "1f1b"},        {1, 6, 3, 1, 6, "1f1b"},        {1, 9, 3, 1, 6, "1f1b"},
    {0, 8, 3, 1, 3, "1f1b"},        {1, 4, 4, 1, 4, "1f1b"},        {1, 8, 4, 1, 8, "1f1b"},
    {1, 10, 4, 1, 8, "1f1b"},       {0, 10, 4, 1, 4, "1f1b"},       {1, 8, 4, 1, 8, "zb-h1"},
    {1, 8, 2, 2, 4, "interleaved"}, {0, 9, 2, 2, 6, "interleaved"}, {1, 6, 3, 1, 1, "gpipe"},
    {2, 4, 2, 1, 4, "1f1b"},        {2, 6, 3, 1, 6, "1f1b"},
};

/* The automatic split's step time equals the brute-force minimum (1e-12 relative) and is
 * never above the even split's. */
START_TEST(partition_brute_force)
{
    const small_case *c = &cases[_i];
    ps_transformer m = c->heavy == 2 ? moe_model(c->layers)
                       : c->heavy    ? heavy_model(c->layers)
                                     : light_model(c->layers);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(c->pp, c->vpp, c->gbs, c->schedule);
    int32_t stages = c->pp * c->vpp, counts[MAXS];
    ps__partition_stats st;
    double got = auto_step(&m, &h, &t, counts, &st);
    long splits;
    double want = brute_force(&m, &h, &t, stages, &splits);
    ck_assert_msg(fabs(got - want) <= 1e-12 * want,
                  "case %d (%s, %d layers, %d stages): auto %.17g, brute force %.17g over %ld "
                  "splits",
                  _i, c->schedule, c->layers, stages, got, want, splits);
    if (c->layers % stages == 0) {
        ck_assert(st.even_step > 0);
        ck_assert(got <= st.even_step);
    } else {
        ck_assert(st.even_step == -1);
    }
}
END_TEST

/* ps__partition_splits: C(layers + stages - 1, stages - 1) by hand, and its cap. */
START_TEST(partition_split_count)
{
    ck_assert_int_eq(ps__partition_splits(4, 2, 4096), 5);    /* 0+4 ... 4+0 */
    ck_assert_int_eq(ps__partition_splits(8, 4, 4096), 165);  /* C(11, 3) */
    ck_assert_int_eq(ps__partition_splits(10, 4, 4096), 286); /* C(13, 3) */
    ck_assert_int_eq(ps__partition_splits(2, 3, 4096), 6);    /* C(4, 2) */
    ck_assert_int_eq(ps__partition_splits(7, 1, 4096), 1);
    ck_assert_int_eq(ps__partition_splits(0, 5, 4096), 1);
    ck_assert_int_eq(ps__partition_splits(12, 6, 4096), 4096 + 1); /* C(17, 5) = 6188 */
    ck_assert_int_eq(ps__partition_splits(80, 40, 4096), 4096 + 1);
    ck_assert_int_eq(ps__partition_splits(16, 5, 1 << 30), 4845); /* C(20, 4) */
}
END_TEST

/* A synthetic objective with plateaus: the step is the slowest stage, stage i costing
 * counts[i] * w[i] + x[i]. The exhaustive search visits every split once and returns the
 * brute-force minimum; the local search alone (exhaustive 0) is never worse than its start. */
typedef struct synth {
    const double *w, *x;
    int32_t n;
    long calls;
} synth;

static int synth_eval(void *ctx, const int32_t *counts, double *step)
{
    synth *sy = ctx;
    double worst = 0;
    for (int32_t i = 0; i < sy->n; i++) {
        double t = counts[i] * sy->w[i] + sy->x[i];
        worst = t > worst ? t : worst;
    }
    sy->calls++;
    *step = worst;
    return 0;
}

static double synth_brute(synth *sy, int32_t *c, int32_t i, int32_t left)
{
    if (i == sy->n - 1) {
        c[i] = left;
        double s;
        synth_eval(sy, c, &s);
        return s;
    }
    double best = -1;
    for (int32_t k = 0; k <= left; k++) {
        c[i] = k;
        double s = synth_brute(sy, c, i + 1, left - k);
        best = best < 0 || s < best ? s : best;
    }
    return best;
}

START_TEST(partition_exhaustive_synthetic)
{
    static const double w[5] = {3, 1, 1, 2, 5}, x[5] = {4, 0, 0, 0, 9};
    int32_t c[5], best[5], cand[5];
    for (int32_t layers = 0; layers <= 9; layers++) {
        synth sy = {w, x, 5, 0};
        double want = synth_brute(&sy, c, 0, layers);
        long splits = sy.calls;
        ck_assert_int_eq(splits, ps__partition_splits(layers, 5, 1 << 20));
        sy.calls = 0;
        ps__partition p = {5, layers, 1, 1, layers, 4, 9, synth_eval, &sy, 4096};
        ps__partition_stats st;
        ck_assert_int_eq(ps__partition_search(&p, best, cand, &st), 0);
        ck_assert_msg(best[0] + best[1] + best[2] + best[3] + best[4] == layers, "sum");
        ck_assert_msg(st.best_step == want, "layers %d: exhaustive %g, brute force %g", layers,
                      st.best_step, want);
        ck_assert_int_le(st.evals, st.bound);
        ck_assert_int_le(sy.calls, splits + 3); /* the starts, every split, the final one */
        sy.calls = 0;
        p.exhaustive = 0; /* the local search alone */
        ck_assert_int_eq(ps__partition_search(&p, best, cand, &st), 0);
        ck_assert(st.best_step >= want && st.best_step <= st.start_step);
    }
}
END_TEST

/* The last stage's output layer weighs ~21 layers: with 2 ranks and 8 layers the last stage
 * gets fewer layers than the first, and the step time falls below the even split's. */
START_TEST(partition_heavy_output_layer)
{
    ps_transformer m = heavy_model(8);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(2, 1, 8, "1f1b");
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    double even = run_step(e, &m, &h, &t);
    ps_estimate_free(e);
    int32_t counts[MAXS];
    ps__partition_stats st;
    double got = auto_step(&m, &h, &t, counts, &st);
    ck_assert_int_lt(counts[1], counts[0]);
    ck_assert(got < even);
    ck_assert(st.even_step == even);
}
END_TEST

/* Two runs on fresh handles and a repeated run on one handle give the same split and the same
 * step time, to the bit. */
START_TEST(partition_deterministic)
{
    ps_transformer m = heavy_model(10);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(4, 1, 8, "1f1b");
    int32_t a[MAXS], b[MAXS];
    ps__partition_stats sa, sb;
    double x = auto_step(&m, &h, &t, a, &sa), y = auto_step(&m, &h, &t, b, &sb);
    ck_assert(x == y);
    ck_assert_mem_eq(a, b, 4 * sizeof *a);
    ck_assert_int_eq(sa.evals, sb.evals);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    t.layout = "auto";
    double r1 = run_step(e, &m, &h, &t), r2 = run_step(e, &m, &h, &t);
    ck_assert(r1 == x && r2 == x);
    ps_estimate_free(e);
}
END_TEST

/* Layers that do not divide (no even split), MTP layers, and the interleaved placement of a
 * bigger case: the search runs within its bound and returns a legal split. */
START_TEST(partition_uneven_and_mtp)
{
    ps_transformer m = heavy_model(13);
    m.mtp_layers = 1;
    ps_hardware h = toy_hw();
    ps_train t = toy_train(4, 2, 16, "interleaved");
    int32_t counts[MAXS];
    ps__partition_stats st;
    double got = auto_step(&m, &h, &t, counts, &st);
    ck_assert(got > 0);
    ck_assert(st.even_step == -1);
    ck_assert(st.best_step <= st.start_step);
    ck_assert_int_eq(st.bound, 8 * 8 * 8 + 3);
}
END_TEST

/* A MoE model through the planner: the automatic split is never worse than the even one. */
START_TEST(partition_moe)
{
    ps_transformer m = moe_model(8);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(4, 1, 8, "1f1b");
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    double even = run_step(e, &m, &h, &t);
    ps_estimate_free(e);
    int32_t counts[MAXS];
    ps__partition_stats st;
    double got = auto_step(&m, &h, &t, counts, &st);
    ck_assert(st.even_step == even);
    ck_assert(got <= even);
}
END_TEST

/* Splits written by ps_layout_format read back by ps_layout_split as the same split. */
START_TEST(partition_format_round_trip)
{
    static const struct {
        int32_t stages, mtp, counts[4];
        const char *want;
    } rt[] = {
        {1, 0, {5}, "Et*5L"},
        {1, 2, {1}, "Etm*2L"},
        {2, 0, {3, 1}, "Et*3|tL"},
        {3, 0, {0, 2, 0}, "E|t*2|L"},
        {4, 1, {3, 0, 2, 1}, "Et*3||t*2|tmL"},
        {4, 0, {0, 0, 0, 0}, "E|||L"},
    };
    for (size_t k = 0; k < sizeof rt / sizeof rt[0]; k++) {
        ps_stage_layers sl[4], back[4];
        int32_t layers = 0;
        memset(sl, 0, sizeof sl);
        for (int32_t i = 0; i < rt[k].stages; i++) {
            sl[i].first_layer = layers;
            sl[i].layers = rt[k].counts[i];
            layers += rt[k].counts[i];
        }
        sl[0].embedding = 1;
        sl[rt[k].stages - 1].loss = 1;
        sl[rt[k].stages - 1].mtp = rt[k].mtp;
        char buf[64];
        int n = ps_layout_format(sl, rt[k].stages, buf, sizeof buf);
        ck_assert_str_eq(buf, rt[k].want);
        ck_assert_int_eq(n, (int)strlen(rt[k].want));
        ck_assert_int_eq(
            ps_layout_split(buf, rt[k].stages, 1, layers, rt[k].mtp, 0, 0, back, NULL, 0), 0);
        ck_assert_mem_eq(back, sl, (size_t)rt[k].stages * sizeof *sl);
        /* Exactly room for the string and its NUL; one byte less is PS_ERANGE and "". */
        ck_assert_int_eq(ps_layout_format(sl, rt[k].stages, buf, (size_t)n + 1), n);
        ck_assert_int_eq(ps_layout_format(sl, rt[k].stages, buf, (size_t)n), PS_ERANGE);
        ck_assert_str_eq(buf, "");
    }
}
END_TEST

/* ps_layout_format's refusals and the estimate's errors around "auto". */
START_TEST(partition_errors)
{
    ps_stage_layers sl[3];
    char buf[32];
    memset(sl, 0, sizeof sl);
    sl[0].embedding = 1, sl[2].loss = 1, sl[1].layers = 2;
    ck_assert_int_eq(ps_layout_format(NULL, 3, buf, sizeof buf), PS_EINVAL);
    ck_assert_int_eq(ps_layout_format(sl, 3, NULL, sizeof buf), PS_EINVAL);
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, 0), PS_EINVAL);
    ck_assert_int_eq(ps_layout_format(sl, 0, buf, sizeof buf), PS_ERANGE);
    ck_assert_int_eq(ps_layout_format(sl, PS_MAX_STAGES + 1, buf, sizeof buf), PS_ERANGE);
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), 7); /* "E|t*2|L" */
    sl[1].layers = -1;
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), PS_ECONFIG);
    sl[1].layers = 2, sl[1].embedding = 1; /* a second embedding */
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), PS_ECONFIG);
    sl[1].embedding = 0, sl[1].loss = 1; /* the loss before the last stage */
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), PS_ECONFIG);
    sl[1].loss = 0, sl[0].mtp = 1; /* an MTP layer before decoder layers */
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), PS_ECONFIG);
    sl[0].mtp = 0, sl[1].mtp = 1, sl[2].mtp = 1; /* MTP layers in two stages */
    ck_assert_int_eq(ps_layout_format(sl, 3, buf, sizeof buf), PS_ECONFIG);
    ck_assert_str_eq(buf, "");

    ps_estimate *e;
    const ps_stage_layers *out = sl;
    ck_assert_int_eq(ps_estimate_stage_layers(NULL, &out), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ck_assert_int_eq(ps_estimate_stage_layers(e, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_estimate_stage_layers(e, &out), PS_ESTATE);
    ck_assert_ptr_null(out);
    ps_transformer m = light_model(8);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(2, 1, 4, "1f1b");
    t.layout = "auto";
    t.first_stage_layers = 3;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_estimate_last_error(e), "layout auto"));
    ck_assert_int_eq(ps_estimate_stage_layers(e, &out), PS_ESTATE);
    /* Without a layout: the even split, 4 + 4. */
    t.layout = NULL, t.first_stage_layers = 0;
    run_step(e, &m, &h, &t);
    ck_assert_int_eq(ps_estimate_stage_layers(e, &out), 2);
    ck_assert_int_eq(out[0].layers, 4);
    ck_assert_int_eq(out[1].layers, 4);
    ps__partition_stats st;
    ck_assert_int_eq(ps__estimate_partition_stats(e, &st), 0);
    ck_assert_int_eq(st.evals, 0);
    ps_estimate_free(e);
}
END_TEST

/* Every allocation of an automatic run (and a repeated one) can fail: PS_ENOMEM, no leak. */
/* The estimate splits by pipeline rank as Megatron does: pp 4, vpp 2, 20 layers, first 4 and
 * last 4 give ranks 0 and 3 two layers per chunk and the middle ranks (20 - 8) / 2 / 2 = 3
 * (docs/layout.md; the hand-worked split of test-layout.c). */
START_TEST(partition_first_last_interleaved)
{
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps_transformer m = light_model(20);
    ps_hardware h = toy_hw();
    ps_train t = toy_train(4, 2, 8, "interleaved");
    t.first_stage_layers = 4, t.last_stage_layers = 4;
    run_step(e, &m, &h, &t);
    const ps_stage_layers *out;
    ck_assert_int_eq(ps_estimate_stage_layers(e, &out), 8);
    const int32_t want[8] = {2, 3, 3, 2, 2, 3, 3, 2};
    for (int s = 0; s < 8; s++)
        ck_assert_msg(out[s].layers == want[s], "stage %d: %d layers, expected %d", s,
                      (int)out[s].layers, (int)want[s]);
    /* An odd first rank cannot split over its 2 chunks. */
    t.first_stage_layers = 3, t.last_stage_layers = 0;
    ck_assert_int_eq(ps_estimate_run(e, &m, &h, &t), PS_ECONFIG);
    ck_assert_str_eq(ps_estimate_last_error(e), "first stage layers (3) do not divide evenly over "
                                                "the 2 virtual stages of the first rank");
    ps_estimate_free(e);
}
END_TEST

START_TEST(partition_alloc_failure)
{
    ps_transformer dense = heavy_model(6), moe = moe_model(6);
    const ps_transformer *models[2] = {&dense, &moe};
    ps_hardware h = toy_hw();
    ps_train t = toy_train(3, 1, 6, "1f1b");
    t.layout = "auto";
    check_estimate_alloc_failure(models, 2, &h, &t);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("partition");
    TCase *tc = tcase_create("search");
    tcase_add_loop_test(tc, partition_brute_force, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, partition_heavy_output_layer);
    tcase_add_test(tc, partition_split_count);
    tcase_add_test(tc, partition_exhaustive_synthetic);
    tcase_add_test(tc, partition_deterministic);
    tcase_add_test(tc, partition_uneven_and_mtp);
    tcase_add_test(tc, partition_moe);
    suite_add_tcase(su, tc);
    tc = tcase_create("format");
    tcase_add_test(tc, partition_format_round_trip);
    suite_add_tcase(su, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, partition_errors);
    tcase_add_test(tc, partition_first_last_interleaved);
    tcase_add_test(tc, partition_alloc_failure);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
