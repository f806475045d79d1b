/*
 * The search (include/pipesched/tune.h): on small spaces its top K and its front equal a brute
 * force that calls ps_estimate_run on every combination of the documented value lists, for a
 * dense, a GQA and a MoE model; pruning off gives the same answer; 1, 2 and 4 threads give the
 * same answer; the memory bound equals the estimate's weights + gradients + optimizer +
 * overhead and the step bound never exceeds a simulated step; bad input is refused.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "model/estimate.h" /* ps__estimate_bound */
#include "tune/tune_int.h"  /* ps__space_build, ps__space_bounds: the bounds checked directly */

#include <math.h>
#include <pipesched/tune.h>
#include <pthread.h>

#define GPUS 8
#define GBS 8
#define SEQ 1024

/* 4 layers, h 1024, 16 heads, GeLU, V 32000 (tests/test-estimate.c's small model). */
static ps_transformer dense_model(void)
{
    ps_transformer m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "small");
    m.layers = 4, m.hidden = 1024, m.ffn = 4096, m.heads = 16, m.kv_heads = 16, m.vocab = 32000;
    return m;
}

/* The same with 6 layers, 4 KV heads and a SwiGLU MLP, RMSNorm, tied embeddings. */
static ps_transformer gqa_model(void)
{
    ps_transformer m = dense_model();
    strcpy(m.name, "small-gqa");
    m.kv_heads = 4, m.gated_mlp = 1, m.rms_norm = 1, m.tied_embeddings = 1, m.ffn = 2816;
    m.layers = 6; /* 6 layers on 4 stages: the balanced layout (1, 2, 2, 1) */
    return m;
}

/* 4 layers, the first dense, 8 experts top 2 of 512, one shared expert. */
static ps_transformer moe_model(void)
{
    ps_transformer m = dense_model();
    strcpy(m.name, "small-moe");
    m.experts = 8, m.top_k = 2, m.moe_ffn = 512, m.shared_experts = 1, m.first_dense = 1;
    return m;
}

/* tests/test-estimate.c's toy hardware with 4 GiB, so that memory decides some candidates. */
static ps_hardware small_hw(void)
{
    ps_hardware h;
    memset(&h, 0, sizeof h);
    strcpy(h.name, "toy");
    h.peak_tflops_bf16 = 100, h.peak_tflops_fp8 = 200, h.hbm_gib = 4, h.hbm_gbps = 1000;
    h.devices_per_node = 4, h.intra_gbps = 100, h.inter_gbps = 10;
    h.lat_intra_us = 1, h.lat_inter_us = 5;
    h.gemm_eff = 0.5, h.gemm_half_dim = 0, h.attn_eff = 0.25, h.mem_eff = 0.5;
    h.bus_eff_intra = 1, h.bus_eff_inter = 1, h.overhead_gib = 0.5, h.moe_layer_us = 10;
    h.grouped_gemm_eff = 1;
    return h;
}

static ps_tune_job small_job(int top)
{
    ps_tune_job j;
    ps_tune_job_init(&j);
    j.gpus = GPUS, j.gbs = GBS, j.seq = SEQ, j.top_k = top, j.mem_reserve_gib = 0.25;
    j.threads = 1;
    return j;
}

/* ---- the brute force ----------------------------------------------------------------------- */

/* One result of the brute force, with its knobs in the documented order. */
typedef struct brute_row {
    int32_t knob[PS_KNOBS];
    int32_t rl; /* recompute fit: the layers */
    double step, peak;
    long order; /* position in the loops below: the documented tie order */
} brute_row;

static int brute_cmp(const void *a, const void *b)
{
    const brute_row *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int divides(long long n, long long d)
{
    return n % d == 0;
}

/* Recompute "fit" by brute force: when t does not fit without recompute, the simulated peak of
 * full recompute of every count N from 1 to the largest stage's layers L (each must not exceed
 * the one before: the monotonicity the search's bisection relies on), and the first N below L
 * that fits. Sets t to recompute N layers and returns N; 0 when there is no such candidate
 * (refused, fits without recompute, or only N = L fits). */
static int32_t brute_fit(ps_estimate *e, const ps_transformer *m, const ps_hardware *hw,
                         ps_train *t, double limit)
{
    ps_estimate_result r;
    t->recompute = PS_RECOMPUTE_NONE, t->recompute_layers = 0;
    if (ps_estimate_run(e, m, hw, t))
        return 0;
    ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
    if (r.peak_gib <= limit)
        return 0;
    const ps_stage_layers *sl;
    int ns = ps_estimate_stage_layers(e, &sl);
    int32_t most = 0, found = 0;
    for (int i = 0; i < ns; i++)
        most = sl[i].layers > most ? sl[i].layers : most;
    double before = 0;
    t->recompute = PS_RECOMPUTE_FULL;
    for (int32_t n = 1; n <= most; n++) {
        t->recompute_layers = n;
        ck_assert_int_eq(ps_estimate_run(e, m, hw, t), 0);
        ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
        ck_assert_msg(n == 1 || r.peak_gib <= before,
                      "%s pp%d: recompute of %d layers needs %.17g "
                      "GiB, of %d layers %.17g GiB",
                      m->name, t->pp, n, r.peak_gib, n - 1, before);
        before = r.peak_gib;
        if (!found && n < most && r.peak_gib <= limit)
            found = n;
    }
    t->recompute_layers = found;
    return found;
}

/* The layouts the brute force tries: 2 (even, balanced, first, last, first-last), or 3 with
 * auto too (--allow layout=...,auto); 1 (even, balanced) for the tests that repeat a search
 * many times over threads and shares, whose spaces the end layouts would make 2.5 times as
 * large without reaching other code (the brute forces cover those layouts). */
static int brute_layouts = 2;

/* Layout first (ends 1), last (2), first-last (3) by brute force (docs/layout.md): every count
 * x of the end rank(s), a multiple of vpp, whose rest divides evenly over the middle ranks
 * into a multiple of vpp above x; the largest. 0 where there is none, or where its split is
 * the balanced one (tried as balanced; docs/tune.md). */
static int32_t brute_ends(int32_t layers, int32_t pp, int32_t vpp, int ends)
{
    int n = ends == 3 ? 2 : 1, mid = pp - n;
    int32_t best = 0;
    for (int32_t x = vpp; mid > 0 && x <= layers; x += vpp) {
        int32_t left = layers - n * x;
        if (left > 0 && left % mid == 0 && (left / mid) % vpp == 0 && left / mid > x)
            best = x;
    }
    if (!best || layers % (pp * vpp) == 0)
        return best;
    int same = 1;
    for (int32_t st = 0; st < pp * vpp; st++) {
        int32_t r = st % pp, end = (r == 0 && (ends & 1)) || (r == pp - 1 && (ends & 2));
        int32_t count = end ? best / vpp : (layers - n * best) / mid / vpp;
        same &= count == ps_layout_balanced_count(layers, pp * vpp, st);
    }
    return same ? 0 : best;
}
/* 1: also adaptive's warmup 2 and split backward (--allow warmup=1,2,split-backward=off,on). */
static int brute_adaptive = 0;

/* The documented lists (docs/tune.md, "The space") with group 1 and 2 (--allow group=1,2),
 * written out here, and the documented
 * structural rules: pp = 1 runs 1f1b with vpp 1; 1f1b, zb-h1, zb-h2, dualpipe take vpp 1;
 * zb-v, v-half, v-min, dualpipev vpp 2; interleaved vpp > 1; adaptive any. Every combination
 * is run through ps_estimate_run; what it refuses or what does not fit is left out. Also
 * checks the bounds on every run. Returns the fitting rows, sorted. */
static brute_row *brute_force(const ps_transformer *m, const ps_hardware *hw,
                              const ps_tune_job *job, size_t *count)
{
    static const char *const fam[] = {"1f1b",   "interleaved", "zb-h1",    "zb-h2",     "zb-v",
                                      "v-half", "v-min",       "dualpipe", "dualpipev", "adaptive"};
    static const int fam_vpp[] = {1, -1, 1, 1, 2, 2, 2, 1, 2, 0};
    int moe = m->experts > 0;
    size_t cap = 1 << 16, n = 0;
    brute_row *rows = malloc(cap * sizeof *rows);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    ps__space sp;
    char err[PS__ERRLEN];
    ps__constraints none;
    memset(&none, 0, sizeof none);
    ck_assert_int_eq(ps__space_build(&sp, m, hw, job, &none, err), 0);
    double limit = hw->hbm_gib - job->mem_reserve_gib;
    long order = 0;
    for (int tp = 1; tp <= hw->devices_per_node; tp++)
        for (int cp = 1; cp <= GPUS; cp++)
            for (int pp = 1; pp <= m->layers && pp <= GPUS; pp++)
                for (int ep = 1; ep <= (moe ? GPUS : 1); ep++)
                    for (int etp = moe ? 1 : 0; etp <= (moe ? hw->devices_per_node : 0); etp++)
                        for (int vpp = 1; vpp <= m->layers; vpp++)
                            for (int f = 0; f < 10; f++)
                                for (int mbs = 1; mbs <= GBS; mbs++)
                                    for (int rec = 0; rec < 4; rec++)
                                        for (int dist = 0; dist < 2; dist++)
                                            for (int a2a = moe ? 1 : 0; a2a <= (moe ? 2 : 0); a2a++)
                                                for (int lay = 0; lay < 6; lay++)
                                                    for (int grp = 1; grp <= 2; grp++)
                                                        for (int wu = 1; wu <= 1 + brute_adaptive;
                                                             wu++)
                                                            for (int sb = 0; sb <= brute_adaptive;
                                                                 sb++) {
                                                                if (!divides(GPUS, tp) ||
                                                                    !divides(GPUS, cp) ||
                                                                    !divides(GPUS, pp) ||
                                                                    (moe &&
                                                                     !divides(m->experts, ep)) ||
                                                                    (moe && !divides(GPUS, etp)) ||
                                                                    (vpp > 1 &&
                                                                     !divides(m->layers, vpp)) ||
                                                                    !divides(GBS, mbs) ||
                                                                    (lay == 2 && brute_layouts < 3))
                                                                    continue; /* not in the lists */
                                                                order++;
                                                                if (pp == 1 && (f != 0 || vpp != 1))
                                                                    continue;
                                                                if ((fam_vpp[f] > 0 &&
                                                                     vpp != fam_vpp[f]) ||
                                                                    (fam_vpp[f] < 0 && vpp < 2))
                                                                    continue;
                                                                /* A group of 2 pp: interleaved and
                                                                 * adaptive with vpp > 1 only. */
                                                                if (grp > 1 &&
                                                                    !((f == 1 || f == 9) &&
                                                                      vpp > 1))
                                                                    continue;
                                                                /* warmup 2, split backward:
                                                                 * adaptive. */
                                                                if ((wu > 1 || sb) && f != 9)
                                                                    continue;
                                                                /* The even split, or balanced where
                                                                 * it differs and every stage has a
                                                                 * layer. */
                                                                int split =
                                                                    m->layers % (pp * vpp) != 0;
                                                                if (lay < 2 &&
                                                                    (lay != split ||
                                                                     m->layers < pp * vpp))
                                                                    continue;
                                                                if (lay == 2 && rec == 3)
                                                                    continue; /* fit and auto:
                                                                                 refused */
                                                                int32_t ends =
                                                                    lay >= 3
                                                                        ? brute_ends(m->layers, pp,
                                                                                     vpp, lay - 2)
                                                                        : 0;
                                                                if (lay >= 3 && !ends)
                                                                    continue;
                                                                ps_train t;
                                                                ps_train_init(&t);
                                                                t.gpus = GPUS, t.gbs = GBS,
                                                                t.seq = SEQ;
                                                                t.tp = tp, t.cp = cp, t.pp = pp,
                                                                t.ep = ep, t.etp = etp, t.vpp = vpp,
                                                                t.mbs = mbs;
                                                                t.recompute = rec,
                                                                t.distributed_optimizer = dist,
                                                                t.a2a = a2a;
                                                                strcpy(t.schedule, fam[f]);
                                                                t.layout = lay == 2   ? "auto"
                                                                           : lay == 1 ? "balanced"
                                                                                      : NULL;
                                                                /* first/last: the counts, as
                                                                 * the row's command gives them */
                                                                if (lay == 3 || lay == 5)
                                                                    t.first_stage_layers = ends;
                                                                if (lay == 4 || lay == 5)
                                                                    t.last_stage_layers = ends;
                                                                t.group_size =
                                                                    grp > 1 ? grp * pp : 0;
                                                                t.extra_warmup = wu > 1 ? wu : 0;
                                                                t.split_backward = sb;
                                                                int32_t rl = 0;
                                                                if (rec == 3 &&
                                                                    !(rl = brute_fit(e, m, hw, &t,
                                                                                     limit)))
                                                                    continue;
                                                                /* The strong bounds first, on the
                                                                 * same handle: the run after them
                                                                 * must not notice. */
                                                                ps__estimate_lb elb;
                                                                int brc = ps__estimate_bound(
                                                                    e, m, hw, &t, 1, &elb);
                                                                if (ps_estimate_run(e, m, hw, &t))
                                                                    continue;
                                                                ck_assert_int_eq(brc, 0);
                                                                ps_estimate_result r;
                                                                ck_assert_int_eq(
                                                                    ps_estimate_result_get(e, &r),
                                                                    0);
                                                                ck_assert_msg(
                                                                    lay == 2 ||
                                                                        /* auto: no bound */ (
                                                                            elb.step_s <=
                                                                                r.step_time_s *
                                                                                    (1 + 1e-12) &&
                                                                            elb.mem_exact &&
                                                                            elb.mem_gib ==
                                                                                r.peak_gib &&
                                                                            elb.peak_rank ==
                                                                                r.peak_rank),
                                                                    "%s %s tp%d pp%d vpp%d: bound "
                                                                    "%g s, "
                                                                    "memory %.17g GiB; run %g s, "
                                                                    "%.17g GiB",
                                                                    m->name, fam[f], tp, pp, vpp,
                                                                    elb.step_s, elb.mem_gib,
                                                                    r.step_time_s, r.peak_gib);
                                                                /* The bounds: the static memory is
                                                                 * the estimate's own, the step
                                                                 * bound below it.
                                                                 */
                                                                ps_tune_config c = {
                                                                    {tp, cp, pp, ep, etp, vpp, f,
                                                                     mbs, rec, dist, 0, a2a, lay,
                                                                     grp, wu, sb},
                                                                    rl};
                                                                double gib, lb, worst = 0;
                                                                ps__space_bounds(&sp, &c, r.dp,
                                                                                 &gib, &lb);
                                                                for (int rk = 0; rk < pp; rk++) {
                                                                    ps_rank_memory rm;
                                                                    ck_assert_int_eq(
                                                                        ps_estimate_rank_memory(
                                                                            e, rk, &rm),
                                                                        0);
                                                                    double s =
                                                                        rm.weights + rm.grads +
                                                                        rm.optimizer + rm.overhead;
                                                                    worst = s > worst ? s : worst;
                                                                }
                                                                /* auto: the mean over the ranks. */
                                                                ck_assert_msg(
                                                                    lay == 2
                                                                        ? gib <= worst * (1 + 1e-12)
                                                                        : fabs(gib - worst) <=
                                                                              1e-9 * worst,
                                                                    "%s %s tp%d pp%d vpp%d: bound "
                                                                    "%.12g, "
                                                                    "estimate %.12g",
                                                                    m->name, fam[f], tp, pp, vpp,
                                                                    gib, worst);
                                                                ck_assert_msg(lb <= r.step_time_s,
                                                                              "step bound %g above "
                                                                              "the step %g",
                                                                              lb, r.step_time_s);
                                                                if (r.peak_gib > limit)
                                                                    continue;
                                                                if (n == cap)
                                                                    rows = realloc(
                                                                        rows,
                                                                        (cap *= 2) * sizeof *rows);
                                                                brute_row *b = &rows[n++];
                                                                memcpy(b->knob, c.knob,
                                                                       sizeof b->knob);
                                                                b->rl = rl;
                                                                b->step = r.step_time_s,
                                                                b->peak = r.peak_gib,
                                                                b->order = order;
                                                            }
    ps_estimate_free(e);
    qsort(rows, n, sizeof *rows, brute_cmp);
    *count = n;
    return rows;
}

/* The brute force's front: in order, each row with less memory than every row before it. */
static size_t brute_front(brute_row *rows, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || rows[i].peak < rows[k - 1].peak)
            rows[k++] = rows[i];
    return k;
}

/* A search of the documented space with the group sizes pp and 2 pp (--allow group=1,2). */
/* The knobs the brute force adds to the default space (group 2; with brute_layouts 3 the
 * automatic layout; with brute_adaptive adaptive's options). */
static void brute_allows(ps_tune *t)
{
    static const int32_t groups[] = {1, 2}, layouts[] = {0, 1, 2, 3, 4, 5};
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_GROUP, groups, 2), 0);
    if (brute_layouts == 3)
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_LAYOUT, layouts, 6), 0);
    else if (brute_layouts == 1)
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_LAYOUT, layouts, 2), 0);
    static const int32_t warmups[] = {1, 2}, splits[] = {0, 1};
    if (brute_adaptive) {
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_WARMUP, warmups, 2), 0);
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SPLIT, splits, 2), 0);
    }
}

static ps_tune *tune_ok(const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j)
{
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    brute_allows(t);
    int rc = ps_tune_run(t, m, hw, j);
    ck_assert_msg(rc == 0, "tune: %d %s", rc, ps_tune_last_error(t));
    return t;
}

static void same_row(const ps_tune_row *r, const brute_row *b, size_t i)
{
    ck_assert_msg(!memcmp(r->config.knob, b->knob, sizeof b->knob),
                  "row %zu: the knobs differ (tune tp%d pp%d vpp%d sched %d mbs %d, brute tp%d "
                  "pp%d vpp%d sched %d mbs %d)",
                  i, r->config.knob[0], r->config.knob[2], r->config.knob[5], r->config.knob[6],
                  r->config.knob[7], b->knob[0], b->knob[2], b->knob[5], b->knob[6], b->knob[7]);
    ck_assert_int_eq(r->config.recompute_layers, b->rl);
    ck_assert(r->result.step_time_s == b->step);
    ck_assert(r->result.peak_gib == b->peak);
}

/* The search against the brute force: top K, front, and the accounting of every candidate. */
static void against_brute(const ps_transformer *m, double hbm_gib, size_t min_fit)
{
    ps_hardware hw = small_hw();
    hw.hbm_gib = hbm_gib;
    ps_tune_job j = small_job(10);
    size_t n;
    brute_row *b = brute_force(m, &hw, &j, &n);
    ck_assert_msg(n > 20, "%s: the brute force found only %zu fitting configurations", m->name, n);
    size_t fits = 0;
    for (size_t i = 0; i < n; i++)
        fits += b[i].rl > 0;
    ck_assert_msg(fits >= min_fit, "%s: %zu configurations of recompute fit, expected %zu or more",
                  m->name, fits, min_fit);
    size_t groups = 0; /* the spaces hold fitting configurations of group 2 */
    for (size_t i = 0; i < n; i++)
        groups += b[i].knob[PS_KNOB_GROUP] == 2;
    ck_assert_msg(groups > 0, "%s: no configuration of group 2 fits", m->name);
    size_t ends = 0; /* layouts first, last, first-last: fitting rows */
    for (size_t i = 0; i < n; i++)
        ends += b[i].knob[PS_KNOB_LAYOUT] >= 3;
    ck_assert_msg(ends > 0, "%s: no configuration of layout first/last fits", m->name);
    size_t autos = 0; /* with auto: some rank among the top 10 compared below */
    for (size_t i = 0; i < 10 && i < n; i++)
        autos += b[i].knob[PS_KNOB_LAYOUT] == 2;
    ck_assert_msg(brute_layouts < 3 || autos > 0, "%s: no layout auto in the top 10", m->name);
    size_t warm2 = 0, split = 0; /* with adaptive's options: fitting rows of each */
    for (size_t i = 0; i < n; i++)
        warm2 += b[i].knob[PS_KNOB_WARMUP] == 2, split += b[i].knob[PS_KNOB_SPLIT] == 1;
    ck_assert_msg(!brute_adaptive || (warm2 > 0 && split > 0),
                  "%s: %zu fitting rows of warmup 2, %zu of split backward", m->name, warm2, split);
    ps_tune *t = tune_ok(m, &hw, &j);
    ps_tune_stats st;
    ck_assert_int_eq(ps_tune_stats_get(t, &st), 0);
    /* Pruned candidates are not simulated: some fitting ones may be among them. */
    ck_assert_uint_le(st.fitting, n);
    ck_assert_uint_ge(st.fitting + st.pruned, n);
    ck_assert_uint_eq(st.bound_breaks, 0);
    ck_assert_uint_eq(st.rejected + st.simulated + st.over_unsimulated + st.pruned, st.candidates);
    ck_assert_uint_eq(st.simulated + st.over_unsimulated, st.failed + st.over_memory + st.fitting);
    ck_assert_uint_eq(ps_tune_top_count(t), 10);
    for (size_t i = 0; i < 10; i++) {
        ps_tune_row r;
        ck_assert_int_eq(ps_tune_top(t, i, &r), 0);
        same_row(&r, &b[i], i);
    }
    size_t nf = brute_front(b, n);
    ck_assert_uint_eq(ps_tune_front_count(t), nf);
    for (size_t i = 0; i < nf; i++) {
        ps_tune_row r;
        ck_assert_int_eq(ps_tune_front(t, i, &r), 0);
        same_row(&r, &b[i], i);
    }
    /* The reasons count every rejection. */
    uint64_t sum = 0;
    for (size_t i = 0; i < ps_tune_reason_count(t); i++) {
        uint64_t c;
        ck_assert_int_eq(ps_tune_reason(t, i, NULL, NULL, &c), 0);
        sum += c;
    }
    ck_assert_uint_eq(sum, st.rejected + st.failed + st.over_memory);
    ps_tune_free(t);
    free(b);
}

START_TEST(brute_dense)
{
    ps_transformer m = dense_model();
    against_brute(&m, 4.0, 0);
}
END_TEST

/* With 1.5 GiB, some configurations fit only with recompute: the fewest layers found by the
 * search's bisection equal the brute force's scan (which also checks that the memory never
 * grows with the layers recomputed). */
/* The search restricted to recompute fit (--fix recompute=fit), without pruning: exactly the
 * brute force's fit rows fit, the same top K with the same layer counts. */
static void fit_only(const ps_transformer *m, double hbm_gib)
{
    ps_hardware hw = small_hw();
    hw.hbm_gib = hbm_gib;
    ps_tune_job j = small_job(10);
    j.no_prune = 1;
    size_t n, nfit = 0;
    brute_row *b = brute_force(m, &hw, &j, &n);
    for (size_t i = 0; i < n; i++)
        if (b[i].rl > 0)
            b[nfit++] = b[i];
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    int32_t fit = PS_TUNE_RECOMPUTE_FIT;
    static const int32_t groups[] = {1, 2};
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_RECOMPUTE, &fit, 1), 0);
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_GROUP, groups, 2), 0);
    ck_assert_int_eq(ps_tune_run(t, m, &hw, &j), 0);
    ps_tune_stats st;
    ck_assert_int_eq(ps_tune_stats_get(t, &st), 0);
    ck_assert_uint_eq(st.fitting, nfit);
    size_t k = nfit < 10 ? nfit : 10;
    ck_assert_uint_eq(ps_tune_top_count(t), k);
    for (size_t i = 0; i < k; i++) {
        ps_tune_row r;
        ck_assert_int_eq(ps_tune_top(t, i, &r), 0);
        same_row(&r, &b[i], i);
    }
    ps_tune_free(t);
    free(b);
}

START_TEST(brute_recompute_fit)
{
    ps_transformer g = gqa_model(), m = moe_model();
    against_brute(&g, 1.5, 20);
    against_brute(&m, 1.5, 5);
    fit_only(&g, 1.5);
    fit_only(&m, 1.5);
}
END_TEST

/* Layout auto (--allow layout=even,balanced,auto): the estimate's automatic partition, with
 * the mean static memory as its cheap bound; pruning on. */
START_TEST(brute_layout_auto)
{
    ps_transformer g = gqa_model();
    brute_layouts = 3;
    against_brute(&g, 4.0, 0);
    brute_layouts = 2;
}
END_TEST

/* Adaptive's options (--allow warmup=1,2,split-backward=off,on), with the bounds checked on
 * every configuration (the split backward chains only its I parts). */
START_TEST(brute_adaptive_options)
{
    ps_transformer g = gqa_model(), m = moe_model();
    brute_adaptive = 1;
    against_brute(&g, 4.0, 0);
    against_brute(&m, 4.0, 0);
    brute_adaptive = 0;
}
END_TEST

START_TEST(brute_gqa)
{
    ps_transformer m = gqa_model();
    against_brute(&m, 4.0, 0);
}
END_TEST

START_TEST(brute_moe)
{
    ps_transformer m = moe_model();
    against_brute(&m, 4.0, 0);
}
END_TEST

/* zb-auto: only with --allow, then planned under the device (every row of it fits and equals
 * its estimate); the default space never holds it. */
START_TEST(zb_auto_allowed)
{
    ps_transformer m = gqa_model();
    ps_hardware hw = small_hw();
    hw.hbm_gib = 4.0;
    ps_tune_job j = small_job(400);
    ck_assert_str_eq(ps_tune_family_name(10), "zb-auto");
    ck_assert_ptr_null(ps_tune_family_name(11));
    ps_tune *plain = tune_ok(&m, &hw, &j);
    for (size_t i = 0; i < ps_tune_top_count(plain); i++) {
        ps_tune_row r;
        ck_assert_int_eq(ps_tune_top(plain, i, &r), 0);
        ck_assert_int_ne(r.config.knob[PS_KNOB_SCHEDULE], 10);
    }
    ps_tune_free(plain);
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    static const int32_t fams[] = {3, 10}; /* zb-h2, zb-auto */
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SCHEDULE, fams, 2), 0);
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    size_t autos = 0;
    for (size_t i = 0; i < ps_tune_top_count(t); i++) {
        ps_tune_row r;
        ck_assert_int_eq(ps_tune_top(t, i, &r), 0);
        if (r.config.knob[PS_KNOB_SCHEDULE] != 10)
            continue;
        autos++;
        ck_assert(r.result.peak_gib <= hw.hbm_gib - j.mem_reserve_gib);
        ps_train tr;
        ps_tune_config_train(&j, &r.config, &tr);
        ck_assert_int_eq(ps_estimate_run(e, &m, &hw, &tr), 0);
        ps_estimate_result x;
        ck_assert_int_eq(ps_estimate_result_get(e, &x), 0);
        ck_assert(x.step_time_s == r.result.step_time_s);
        ck_assert(x.peak_gib == r.result.peak_gib);
    }
    ck_assert_uint_gt(autos, 0);
    ps_estimate_free(e);
    ps_tune_free(t);
}
END_TEST

/* zb-auto on the V placement (vpp 2, --allow schedule=...,zb-auto): its rows fit under the
 * limit and equal their estimate. Against ZB-V with the same knobs, where ZB-V fits: zb-auto
 * runs, and is faster on some; it is not never slower (docs/tune.md, "zb-auto in the search":
 * one activation budget for every rank, the smallest, binds where ZB-V's fuller ranks still
 * fit), so the comparison is counted, not asserted row by row. */
START_TEST(zb_auto_v)
{
    ps_transformer models[3] = {gqa_model(), dense_model(), moe_model()};
    ps_hardware hw = small_hw();
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    size_t v_rows = 0, compared = 0, faster = 0;
    for (int k = 0; k < 3; k++) {
        const ps_transformer *m = &models[k];
        ps_tune_job j = small_job(2000);
        double limit = hw.hbm_gib - j.mem_reserve_gib;
        ps_tune *t;
        ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
        /* zb-v and zb-auto on the V, micro-batches of 1 and 2, the distributed optimizer. */
        static const int32_t fams[] = {4, 10}, vpp2[] = {2}, on[] = {1};
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SCHEDULE, fams, 2), 0);
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_VPP, vpp2, 1), 0);
        ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_DISTOPT, on, 1), 0);
        ck_assert_int_eq(ps_tune_max(t, PS_KNOB_MBS, 2), 0);
        ck_assert_int_eq(ps_tune_run(t, m, &hw, &j), 0);
        ck_assert_uint_lt(ps_tune_top_count(t), 2000); /* every fitting row is here */
        for (size_t i = 0; i < ps_tune_top_count(t); i++) {
            ps_tune_row r;
            ck_assert_int_eq(ps_tune_top(t, i, &r), 0);
            ck_assert_int_eq(r.config.knob[PS_KNOB_VPP], 2);
            ck_assert(r.result.peak_gib <= limit);
            ps_train tr;
            ps_tune_config_train(&j, &r.config, &tr);
            ck_assert_int_eq(ps_estimate_run(e, m, &hw, &tr), 0);
            ps_estimate_result x;
            ck_assert_int_eq(ps_estimate_result_get(e, &x), 0);
            ck_assert(x.step_time_s == r.result.step_time_s);
            ck_assert(x.peak_gib == r.result.peak_gib);
            if (r.config.knob[PS_KNOB_SCHEDULE] == 10) {
                v_rows++;
                continue;
            }
            /* ZB-V fits: zb-auto with the same knobs (recompute fit: the layers ZB-V needs). */
            strcpy(tr.schedule, "zb-auto");
            ck_assert_int_eq(ps_estimate_run(e, m, &hw, &tr), 0);
            ck_assert_int_eq(ps_estimate_result_get(e, &x), 0);
            compared++;
            faster += x.peak_gib <= limit && x.step_time_s < r.result.step_time_s * (1 - 1e-9);
        }
        ps_tune_free(t);
    }
    ck_assert_uint_gt(v_rows, 0);
    ck_assert_uint_gt(compared, 0);
    ck_assert_uint_gt(faster, 0);
    ps_estimate_free(e);
}
END_TEST

/* ---- determinism ---------------------------------------------------------------------------- */

static void same_answer(const ps_tune *a, const ps_tune *b)
{
    ck_assert_uint_eq(ps_tune_top_count(a), ps_tune_top_count(b));
    ck_assert_uint_eq(ps_tune_front_count(a), ps_tune_front_count(b));
    for (size_t i = 0; i < ps_tune_top_count(a); i++) {
        ps_tune_row x, y;
        ps_tune_top(a, i, &x);
        ps_tune_top(b, i, &y);
        ck_assert_uint_eq(x.index, y.index);
        ck_assert(x.result.step_time_s == y.result.step_time_s);
    }
    for (size_t i = 0; i < ps_tune_front_count(a); i++) {
        ps_tune_row x, y;
        ps_tune_front(a, i, &x);
        ps_tune_front(b, i, &y);
        ck_assert_uint_eq(x.index, y.index);
    }
}

static void same_reasons(const ps_tune *a, const ps_tune *b)
{
    ck_assert_uint_eq(ps_tune_reason_count(a), ps_tune_reason_count(b));
    for (size_t i = 0; i < ps_tune_reason_count(a); i++) {
        const char *ta, *tb, *ea, *eb;
        uint64_t ca, cb;
        ps_tune_reason(a, i, &ta, &ea, &ca);
        ps_tune_reason(b, i, &tb, &eb, &cb);
        ck_assert_str_eq(ta, tb);
        ck_assert_str_eq(ea, eb);
        ck_assert_uint_eq(ca, cb);
    }
}

/* 1, 2 and 4 threads: the same top K, front and reasons. */
START_TEST(threads_same)
{
    ps_transformer m = moe_model();
    ps_hardware hw = small_hw();
    ps_tune_job j = small_job(7);
    ps_tune *one = tune_ok(&m, &hw, &j);
    for (int th = 2; th <= 4; th += 2) {
        j.threads = th;
        ps_tune *more = tune_ok(&m, &hw, &j);
        ps_tune_stats st;
        ps_tune_stats_get(more, &st);
        ck_assert_int_eq(st.threads, th);
        same_answer(one, more);
        same_reasons(one, more);
        ps_tune_free(more);
    }
    ps_tune_free(one);
}
END_TEST

/* Pruning off: the same answer. Fast hardware with top 1 makes the bound prune. */
START_TEST(prune_same)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    for (int i = 0; i < 2; i++) {
        ps_hardware hw = small_hw();
        hw.hbm_gib = 80;
        ps_tune_job j = small_job(1);
        ps_tune *on = tune_ok(&models[i], &hw, &j);
        j.no_prune = 1;
        ps_tune *off = tune_ok(&models[i], &hw, &j);
        ps_tune_stats a, b;
        ps_tune_stats_get(on, &a);
        ps_tune_stats_get(off, &b);
        ck_assert_uint_eq(b.pruned, 0);
        ck_assert_msg(a.pruned > 0, "%s: nothing pruned, the test proves nothing", models[i].name);
        ck_assert_uint_eq(a.simulated + a.pruned, b.simulated);
        same_answer(on, off);
        ps_tune_free(on);
        ps_tune_free(off);
    }
}
END_TEST

/* ---- the bound on random configurations --------------------------------------------------- */

/* A deterministic generator (xorshift64*), so that a failure names a reproducible case. */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12, *x ^= *x << 25, *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

static int pick(uint64_t *x, int n)
{
    return (int)(rng_next(x) % (uint64_t)n);
}

static double uniform(uint64_t *x, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next(x) >> 11) / 9007199254740992.0;
}

/*
 * Whatever the model, the machine and the setup, the step-time and memory bounds that prune the
 * search are at most the simulated step time and peak memory: random models (dense, GQA, MoE,
 * 2 to 24 layers), random hardware (peaks, bandwidths, latencies, efficiencies, overhead) and
 * random setups of every family the search tries (pp up to 8, vpp as the family takes, up to 48
 * micro-batches, recompute, the distributed optimizer, both overlaps on or off, the all-to-all
 * algorithm, first and last stage layer counts). Each family must have been checked on many
 * simulated configurations, or the test proves little.
 */
START_TEST(bound_random)
{
    static const char *const fam[] = {"1f1b",   "interleaved", "zb-h1",    "zb-h2",     "zb-v",
                                      "v-half", "v-min",       "dualpipe", "dualpipev", "adaptive"};
    enum { CASES = 8000 };
    int checked[10] = {0};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    ps_estimate *e;
    ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
    for (int n = 0; n < CASES; n++) {
        int kind = pick(&x, 3);
        ps_transformer m = kind == 0 ? dense_model() : kind == 1 ? gqa_model() : moe_model();
        m.layers = 2 + pick(&x, 23);
        if (m.experts)
            m.first_dense = pick(&x, 3) < m.layers ? pick(&x, 3) : 0;
        ps_hardware hw = small_hw();
        hw.hbm_gib = 1000;
        hw.peak_tflops_bf16 = uniform(&x, 20, 2000), hw.hbm_gbps = uniform(&x, 100, 5000);
        hw.intra_gbps = uniform(&x, 5, 500), hw.inter_gbps = uniform(&x, 1, 100);
        hw.lat_intra_us = uniform(&x, 0, 20), hw.lat_inter_us = uniform(&x, 0, 50);
        hw.gemm_eff = uniform(&x, 0.2, 1), hw.attn_eff = uniform(&x, 0.1, 1);
        hw.mem_eff = uniform(&x, 0.2, 1), hw.gemm_half_dim = pick(&x, 2) ? 0 : 512;
        hw.overhead_gib = uniform(&x, 0, 2);
        int f = pick(&x, 10);
        ps_train t;
        ps_train_init(&t);
        t.pp = 1 + pick(&x, 8);
        if (!strcmp(fam[f], "dualpipe") && t.pp % 2)
            t.pp++;
        t.vpp = f == 1 ? 2 + pick(&x, 3) : f == 9 ? 1 + pick(&x, 3) : (f >= 4 && f != 7) ? 2 : 1;
        if (pick(&x, 2)) /* most draws split evenly, as the search does */
            m.layers = t.pp * t.vpp * (1 + pick(&x, 3));
        t.tp = 1 << pick(&x, 3), t.cp = 1 << pick(&x, 2);
        int dp = 1 << pick(&x, 2);
        t.gpus = t.tp * t.cp * t.pp * dp;
        t.gpus_per_node = 1 << pick(&x, 4);
        t.mbs = 1 + pick(&x, 2);
        int micro = 1 + pick(&x, 48);
        t.gbs = (int64_t)dp * t.mbs * micro;
        t.seq = 1024;
        t.recompute = pick(&x, 3);
        t.recompute_layers = pick(&x, 3) ? 0 : 1;
        t.distributed_optimizer = pick(&x, 2);
        t.overlap_grad_reduce = pick(&x, 2), t.overlap_param_gather = pick(&x, 2);
        t.precision = pick(&x, 2);
        if (m.experts) {
            t.ep = 1 << pick(&x, 3), t.etp = 1 << pick(&x, 2);
            t.a2a = 1 + pick(&x, 2);
        }
        if (pick(&x, 4) == 0 && t.pp > 2)
            t.first_stage_layers = t.vpp * (1 + pick(&x, 2)),
            t.last_stage_layers = t.vpp * pick(&x, 2);
        strcpy(t.schedule, fam[f]);
        ps__estimate_lb lb;
        int brc = ps__estimate_bound(e, &m, &hw, &t, 1, &lb);
        if (ps_estimate_run(e, &m, &hw, &t))
            continue; /* refused: the family's or the split's conditions */
        ck_assert_int_eq(brc, 0);
        ps_estimate_result r;
        ck_assert_int_eq(ps_estimate_result_get(e, &r), 0);
        ck_assert_msg(lb.step_s <= r.step_time_s * (1 + 1e-12),
                      "case %d (%s, %s, pp %d, vpp %d, m %d): step bound %.9g above the step %.9g",
                      n, m.name, fam[f], t.pp, t.vpp, micro, lb.step_s, r.step_time_s);
        ck_assert_msg(lb.mem_exact && lb.mem_gib == r.peak_gib && lb.peak_rank == r.peak_rank,
                      "case %d (%s, %s, pp %d, vpp %d, m %d): memory %.17g on rank %d, the run's "
                      "%.17g on rank %d",
                      n, m.name, fam[f], t.pp, t.vpp, micro, lb.mem_gib, (int)lb.peak_rank,
                      r.peak_gib, (int)r.peak_rank);
        ck_assert(lb.step_s > 0 && lb.mem_gib > 0);
        checked[f]++;
    }

    ps_estimate_free(e);
    for (int f = 0; f < 10; f++)
        ck_assert_msg(checked[f] >= 100, "%s: only %d configurations simulated", fam[f],
                      checked[f]);
}
END_TEST

/* ---- reuse of identical simulations -------------------------------------------------------- */

/*
 * The estimate reuses the simulation of the run before when the schedule and every simulated
 * input are the same: it must give the result a fresh handle gives, bit for bit, and reuse
 * exactly when only what follows the pipeline changed (the distributed optimizer, the
 * overlaps), never after
 * a change of the durations (the micro-batch size, recompute) or of the schedule.
 */
START_TEST(reuse_same)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    ps_hardware hw = small_hw();
    hw.hbm_gib = 80;
    for (int i = 0; i < 2; i++) {
        ps_estimate *kept, *fresh;
        ck_assert_int_eq(ps_estimate_new(&kept, NULL), 0);
        ck_assert_int_eq(ps_estimate_new(&fresh, NULL), 0);
        /* Each step changes one thing; `same` says whether the pipeline's inputs stay. */
        static const struct {
            const char *what;
            int same;
        } steps[] = {{"first", 0},   {"distopt", 1},      {"overlap_grad", 1}, {"overlap_param", 1},
                     {"mbs", 0},     {"distopt", 1},      {"recompute", 0},    {"schedule", 0},
                     {"distopt", 1}, {"overlap_grad", 1}, {"pp", 0},           {"distopt", 1}};
        ps_train t;
        ps_train_init(&t);
        t.gpus = 8, t.gbs = 16, t.seq = SEQ, t.tp = 2, t.pp = 2, t.vpp = 2, t.mbs = 1;
        strcpy(t.schedule, "interleaved");
        uint64_t expect = 0;
        for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
            const char *w = steps[k].what;
            if (!strcmp(w, "distopt"))
                t.distributed_optimizer ^= 1;
            else if (!strcmp(w, "overlap_grad"))
                t.overlap_grad_reduce ^= 1;
            else if (!strcmp(w, "overlap_param"))
                t.overlap_param_gather ^= 1;
            else if (!strcmp(w, "mbs"))
                t.mbs = 2;
            else if (!strcmp(w, "recompute"))
                t.recompute = PS_RECOMPUTE_SELECTIVE;
            else if (!strcmp(w, "schedule"))
                strcpy(t.schedule, "adaptive");
            else if (!strcmp(w, "pp"))
                t.pp = 4, t.vpp = 1, strcpy(t.schedule, "1f1b");
            expect += (uint64_t)steps[k].same;
            ck_assert_int_eq(ps_estimate_run(kept, &models[i], &hw, &t), 0);
            ps__estimate_forget(fresh);
            ck_assert_int_eq(ps_estimate_run(fresh, &models[i], &hw, &t), 0);
            ck_assert_msg(ps__estimate_reused(kept) == expect,
                          "%s, step %zu (%s): reused %llu, "
                          "expected %llu",
                          models[i].name, k, w, (unsigned long long)ps__estimate_reused(kept),
                          (unsigned long long)expect);
            ck_assert_uint_eq(ps__estimate_reused(fresh), 0);
            ps_estimate_result a, b;
            ck_assert_int_eq(ps_estimate_result_get(kept, &a), 0);
            ck_assert_int_eq(ps_estimate_result_get(fresh, &b), 0);
            ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s, step %zu (%s): step %.17g, fresh %.17g",
                          models[i].name, k, w, a.step_time_s, b.step_time_s);
            for (int r = 0; r < t.pp; r++) {
                ps_rank_memory x, y;
                ck_assert_int_eq(ps_estimate_rank_memory(kept, r, &x), 0);
                ck_assert_int_eq(ps_estimate_rank_memory(fresh, r, &y), 0);
                ck_assert(!memcmp(&x, &y, sizeof x));
            }
        }
        ck_assert_uint_gt(expect, 4);
        ps_estimate_free(kept);
        ps_estimate_free(fresh);
    }
}
END_TEST

/*
 * The exact peak memory keeps the ranks' peaks of the last walks (estimate.c, peak_cache): a
 * bound on a kept handle must give what a fresh handle gives and what the simulation gives,
 * bit for bit, and take a kept walk exactly when the schedule is the one the walk was made on
 * and the stage memory is the same: after a change of what only follows the pipeline or of
 * the all-to-all (the same pair), or back to a memory met on the same schedule; never after a
 * change of the activations (recompute, the layer split) or of the schedule (the micro-batch
 * count, pp), even when a later change returns to an earlier schedule's inputs (the schedule
 * is then a new one).
 */
START_TEST(peaks_kept)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    models[0].layers = models[1].layers = 8; /* 2 per stage, or the layout's 3, 2, 1, 2 */
    ps_hardware hw = small_hw();
    hw.hbm_gib = 80;
    for (int i = 0; i < 2; i++) {
        ps_estimate *kept, *fresh;
        ck_assert_int_eq(ps_estimate_new(&kept, NULL), 0);
        ck_assert_int_eq(ps_estimate_new(&fresh, NULL), 0);
        /* Each step changes one thing; `kept` says whether the pair was walked before. */
        static const struct {
            const char *what;
            int kept;
        } steps[] = {{"first", 0},     {"distopt", 1},  {"a2a", 1},       {"overlap_grad", 1},
                     {"recompute", 0}, {"distopt", 1},  {"recompute", 1}, {"layout", 0},
                     {"layout", 1},    {"mbs", 0},      {"mbs", 0},       {"distopt", 1},
                     {"recompute", 0}, {"pp", 0},       {"distopt", 1},   {"a2a", 1},
                     {"recompute", 0}, {"recompute", 1}};
        ps_train t;
        ps_train_init(&t);
        t.gpus = 8, t.gbs = 16, t.seq = SEQ, t.tp = 2, t.pp = 2, t.vpp = 2, t.mbs = 1;
        if (models[i].experts)
            t.ep = 2, t.etp = 1, t.a2a = PS_A2A_FLAT;
        strcpy(t.schedule, "interleaved");
        uint64_t expect = 0;
        for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
            const char *w = steps[k].what;
            if (!strcmp(w, "distopt"))
                t.distributed_optimizer ^= 1;
            else if (!strcmp(w, "a2a"))
                t.a2a = models[i].experts == 0 ? t.a2a
                        : t.a2a == PS_A2A_FLAT ? PS_A2A_HIERARCHICAL
                                               : PS_A2A_FLAT;
            else if (!strcmp(w, "overlap_grad"))
                t.overlap_grad_reduce ^= 1;
            else if (!strcmp(w, "recompute"))
                t.recompute =
                    t.recompute == PS_RECOMPUTE_NONE ? PS_RECOMPUTE_FULL : PS_RECOMPUTE_NONE;
            else if (!strcmp(w, "layout"))
                t.layout = t.layout ? NULL : "Ettt|tt|t|ttL";
            else if (!strcmp(w, "mbs"))
                t.mbs = 3 - t.mbs;
            else if (!strcmp(w, "pp"))
                t.pp = 4, t.vpp = 1, strcpy(t.schedule, "1f1b");
            expect += (uint64_t)steps[k].kept;
            ps__estimate_lb a, b;
            ck_assert_msg(ps__estimate_bound(kept, &models[i], &hw, &t, 1, &a) == 0,
                          "%s, step %zu (%s): %s", models[i].name, k, w,
                          ps_estimate_last_error(kept));
            ps__estimate_forget(fresh);
            ck_assert_int_eq(ps__estimate_bound(fresh, &models[i], &hw, &t, 1, &b), 0);
            ck_assert_msg(ps__estimate_peaks_kept(kept) == expect,
                          "%s, step %zu (%s): kept %llu, expected %llu", models[i].name, k, w,
                          (unsigned long long)ps__estimate_peaks_kept(kept),
                          (unsigned long long)expect);
            ck_assert_uint_eq(ps__estimate_peaks_kept(fresh), 0);
            ck_assert_msg(a.mem_exact && a.mem_gib == b.mem_gib && a.peak_rank == b.peak_rank,
                          "%s, step %zu (%s): peak %.17g on rank %d, fresh %.17g on rank %d",
                          models[i].name, k, w, a.mem_gib, (int)a.peak_rank, b.mem_gib,
                          (int)b.peak_rank);
            /* The simulation on the kept handle (it keeps the schedule: the next bound's walk
             * is of the same one) has the same peak. */
            ck_assert_int_eq(ps_estimate_run(kept, &models[i], &hw, &t), 0);
            ps_estimate_result r;
            ck_assert_int_eq(ps_estimate_result_get(kept, &r), 0);
            ck_assert_msg(a.mem_gib == r.peak_gib && a.peak_rank == r.peak_rank,
                          "%s, step %zu (%s): peak %.17g, simulated %.17g", models[i].name, k, w,
                          a.mem_gib, r.peak_gib);
        }
        ck_assert_uint_gt(expect, 8);
        ps_estimate_free(kept);
        ps_estimate_free(fresh);
    }
}
END_TEST

/* ---- progress ------------------------------------------------------------------------------ */

typedef struct progress_log {
    int calls, finals;
    uint64_t last_done, total;
    double best;
    int monotone;
} progress_log;

static void on_progress(void *ud, const ps_tune_progress *p)
{
    progress_log *l = ud;
    l->monotone &= p->done >= l->last_done && p->done <= p->total;
    l->calls++;
    l->finals += p->done == p->total;
    l->last_done = p->done, l->total = p->total, l->best = p->best_step_s;
}

/* The progress callback: done never goes back, the last call has done = total and the best
 * step is the ranking's first; whatever the threads. */
START_TEST(progress_calls)
{
    ps_transformer m = dense_model();
    ps_hardware hw = small_hw();
    for (int th = 1; th <= 2; th++) {
        ps_tune_job j = small_job(3);
        progress_log l = {0, 0, 0, 0, 0.0, 1};
        j.threads = th, j.progress = on_progress, j.progress_ud = &l;
        ps_tune *t = tune_ok(&m, &hw, &j);
        ps_tune_stats st;
        ps_tune_row first;
        ck_assert_int_eq(ps_tune_stats_get(t, &st), 0);
        ck_assert_int_eq(ps_tune_top(t, 0, &first), 0);
        ck_assert(l.monotone);
        ck_assert_int_ge(l.calls, 1);
        ck_assert_int_eq(l.finals, 1);
        ck_assert_uint_eq(l.last_done, st.candidates);
        ck_assert_uint_eq(l.total, st.candidates);
        ck_assert(l.best == first.result.step_time_s);
        ps_tune_free(t);
    }
}
END_TEST

/* ---- constraints and errors ----------------------------------------------------------------- */

START_TEST(constraints)
{
    ps_transformer m = dense_model();
    ps_hardware hw = small_hw();
    ps_tune_job j = small_job(50);
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    int32_t tp = 2, sched[2];
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "ZBVZeroBubble", &sched[0]), 0);
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "1F1B", &sched[1]), 0);
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_TP, &tp, 1), 0);
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SCHEDULE, sched, 2), 0);
    ck_assert_int_eq(ps_tune_max(t, PS_KNOB_MBS, 2), 0);
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
    ck_assert_uint_gt(ps_tune_top_count(t), 0);
    for (size_t i = 0; i < ps_tune_top_count(t); i++) {
        ps_tune_row r;
        ps_tune_top(t, i, &r);
        ck_assert_int_eq(r.config.knob[PS_KNOB_TP], 2);
        ck_assert_int_le(r.config.knob[PS_KNOB_MBS], 2);
        const char *f = ps_tune_family_name((size_t)r.config.knob[PS_KNOB_SCHEDULE]);
        ck_assert_msg(!strcmp(f, "zb-v") || !strcmp(f, "1f1b"), "schedule %s", f);
    }
    /* tp 3 does not divide 8 devices: no value left, named. */
    tp = 3;
    ps_tune_allow(t, PS_KNOB_TP, &tp, 1);
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "no value of tp is left"));
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "allow 3"));
    ck_assert_uint_eq(ps_tune_top_count(t), 0);
    /* fp8 on hardware without it. */
    ps_tune_allow(t, PS_KNOB_TP, NULL, 0);
    int32_t fp8 = PS_PREC_FP8;
    ps_tune_allow(t, PS_KNOB_PRECISION, &fp8, 1);
    hw.peak_tflops_fp8 = 0;
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "no FP8 peak"));
    ps_tune_free(t);
}
END_TEST

START_TEST(bad_input)
{
    ps_transformer m = dense_model();
    ps_hardware hw = small_hw();
    ps_tune_job j = small_job(5);
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    j.gpus = 0;
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "gpus must be >= 1; got 0"));
    j = small_job(5);
    j.mem_reserve_gib = 4;
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "leaves no memory"));
    ck_assert_int_eq(ps_tune_run(t, NULL, &hw, &j), PS_EINVAL);
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOBS, NULL, 0), PS_EINVAL);
    ck_assert_int_eq(ps_tune_knob_lookup("tpp"), PS_ENOTFOUND);
    int32_t v;
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "gpipe", &v), PS_ECONFIG);
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_TP, "4x", &v), PS_ECONFIG);
    /* Nothing fits in 1 GiB: not an error; the least need is reported. */
    j = small_job(5);
    hw.hbm_gib = 1;
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
    ck_assert_uint_eq(ps_tune_top_count(t), 0);
    ps_tune_stats st;
    ps_tune_stats_get(t, &st);
    ck_assert_uint_eq(st.fitting, 0);
    ck_assert(st.min_need_gib > 0.75);
    ps_tune_free(t);
}
END_TEST

static int to_buffer(void *ud, const char *data, size_t len)
{
    fwrite(data, 1, len, ud);
    return 0;
}

/* The CSV: a header and one line per candidate, its status and figures. */
START_TEST(csv_all)
{
    ps_transformer m = gqa_model();
    ps_hardware hw = small_hw();
    ps_tune_job j = small_job(3);
    j.record_all = 1;
    j.threads = 2;
    ps_tune *t = tune_ok(&m, &hw, &j);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ps_tune_write_csv(t, to_buffer, f), 0);
    fclose(f);
    ps_tune_stats st;
    ps_tune_stats_get(t, &st);
    uint64_t lines = 0, ok = 0;
    for (char *p = buf; (p = strchr(p, '\n')); p++)
        lines++;
    for (char *p = buf; (p = strstr(p, ",ok,")); p++)
        ok++;
    ck_assert_uint_eq(lines, st.candidates + 1);
    ck_assert_uint_eq(ok, st.fitting);
    ck_assert_ptr_nonnull(strstr(buf, "index,tp,cp,pp,ep,etp,vpp,schedule,mbs,"));
    ck_assert_ptr_nonnull(strstr(buf, "\"gbs not divisible by dp*mbs\""));
    free(buf);
    j.record_all = 0;
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
    ck_assert_int_eq(ps_tune_write_csv(t, to_buffer, stdout), PS_ESTATE);
    ps_tune_free(t);
}
END_TEST

/* ---- across processes: shares of the space, packed and merged (what tune_mpi.c sends) ------ */

static char *csv_text(const ps_tune *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ps_tune_write_csv(t, to_buffer, f), 0);
    fclose(f);
    return buf;
}

/* ---- the CSV as the search goes (job.csv_write) --------------------------------------------- */

/* The most one slot of the window can hold: a chunk of 256 lines of at most 1280 bytes
 * (search.c's LINE_LEN: the knobs, a reason of 640 quoted bytes, the figures), its buffer
 * grown by doubling. */
#define SLOT_MAX (2 * 256 * 1280)

/* A stream into memory, that can fail from its fail-th call on (0: never); calls counted. */
typedef struct sink {
    char *buf;
    size_t len;
    FILE *f;
    long calls, fail;
} sink;

static int sink_write(void *ud, const char *data, size_t len)
{
    sink *k = ud;
    k->calls++;
    if (k->fail && k->calls >= k->fail)
        return PS_EIO;
    ck_assert(len > 0 && data[len - 1] == '\n'); /* whole lines */
    fwrite(data, 1, len, k->f);
    return 0;
}

static void sink_open(sink *k, long fail)
{
    memset(k, 0, sizeof *k);
    k->f = open_memstream(&k->buf, &k->len);
    k->fail = fail;
}

static void sink_close(sink *k)
{
    fclose(k->f);
}

/* A space of some thousand candidates with few simulations: pp at most 2, mbs 1, three
 * families (the stream's order, not the search, is under test). */
static ps_tune *tune_pp2(const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j)
{
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    int32_t fams[3];
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "1f1b", &fams[0]), 0);
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "interleaved", &fams[1]), 0);
    ck_assert_int_eq(ps_tune_value_parse(PS_KNOB_SCHEDULE, "zb-v", &fams[2]), 0);
    ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SCHEDULE, fams, 3), 0);
    ck_assert_int_eq(ps_tune_max(t, PS_KNOB_PP, 2), 0);
    ck_assert_int_eq(ps_tune_max(t, PS_KNOB_MBS, 1), 0);
    int rc = ps_tune_run(t, m, hw, j);
    ck_assert_msg(rc == 0, "tune: %d %s", rc, ps_tune_last_error(t));
    return t;
}

/* With record_all and csv_write on the same run: the stream is ps_tune_write_csv's bytes, for
 * 1, 2 and 4 threads without pruning (the same file whatever the threads) and 2 threads with
 * it (which candidates were pruned depends on the threads, docs/tune.md). */
START_TEST(csv_stream_same)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    for (int mi = 0; mi < 2; mi++) {
        ps_hardware hw = small_hw();
        for (int prune = 0; prune < 2; prune++) {
            char *first = NULL;
            for (int threads = 1 + prune; threads <= 4 - 2 * prune; threads *= 2) {
                ps_tune_job j = small_job(5);
                j.no_prune = !prune, j.threads = threads, j.record_all = 1;
                sink k;
                sink_open(&k, 0);
                j.csv_write = sink_write, j.csv_ud = &k;
                ps_tune *t = tune_pp2(&models[mi], &hw, &j);
                sink_close(&k);
                char *want = csv_text(t);
                ck_assert_msg(!strcmp(k.buf, want), "%s, %d threads, prune %d: the stream differs",
                              models[mi].name, threads, prune);
                /* The window held at most 2 x threads + 2 chunks of lines. */
                ck_assert_uint_le(ps__tune_csv_high(t), (size_t)(2 * threads + 2) * SLOT_MAX);
                if (!prune && !first)
                    first = k.buf, k.buf = NULL;
                else if (!prune)
                    ck_assert_msg(!strcmp(k.buf, first), "%s: %d threads stream another file",
                                  models[mi].name, threads);
                free(k.buf);
                free(want);
                ps_tune_free(t);
            }
            free(first);
        }
    }
}
END_TEST

/* A write that fails (at the header, at the first chunk, later) stops the search with PS_EIO
 * and a message, on 1, 2 and 4 threads, without a hang; the handle runs again afterwards (once:
 * the search is the same every time). */
START_TEST(csv_stream_fails)
{
    ps_transformer m = moe_model();
    ps_hardware hw = small_hw();
    const long at[] = {1, 2, 5};
    for (int threads = 1; threads <= 4; threads *= 2)
        for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
            ps_tune_job j = small_job(5);
            j.threads = threads;
            sink k;
            sink_open(&k, at[i]);
            j.csv_write = sink_write, j.csv_ud = &k;
            ps_tune *t;
            ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
            brute_allows(t);
            ck_assert_int_eq(ps_tune_max(t, PS_KNOB_PP, 2), 0);
            ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_EIO);
            ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "CSV"));
            ck_assert_int_eq(k.calls, at[i]); /* nothing written after the failure */
            ck_assert_uint_eq(ps_tune_top_count(t), 0);
            sink_close(&k);
            free(k.buf);
            j.csv_write = NULL;
            if (threads == 4 && i == 2) /* the handle is not spoilt */
                ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
            ps_tune_free(t);
        }
}
END_TEST

/* A counted allocator: the bytes held now and at most. */
typedef struct counted {
    pthread_mutex_t mu;
    size_t now, peak;
} counted;

static void *counted_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    counted *c = ud;
    void *p = NULL;
    if (nsize) {
        p = realloc(ptr, nsize);
        if (!p)
            return NULL;
    } else {
        free(ptr);
    }
    pthread_mutex_lock(&c->mu);
    c->now = c->now - (ptr ? osize : 0) + nsize;
    if (c->now > c->peak)
        c->peak = c->now;
    pthread_mutex_unlock(&c->mu);
    return p;
}

static int drop(void *ud, const char *data, size_t len)
{
    *(uint64_t *)ud += len;
    return 0;
}

/* Bounded memory: on a space of over a million candidates (every one rejected by a cheap
 * check, so that the test takes seconds), the stream's window holds at most
 * 2 x threads + 2 chunks of lines, and the run's peak allocation with the stream exceeds the
 * peak without it by less than that, while recording every candidate (record_all) takes at
 * least 40 bytes each. */
START_TEST(csv_stream_bounded)
{
    ps_transformer m = dense_model();
    m.layers = 64, m.heads = 64, m.kv_heads = 64, m.hidden = 8192;
    ps_hardware hw = small_hw();
    hw.hbm_gib = 1; /* no candidate fits: the memory check rejects what the others leave */
    ps_tune_job j = small_job(5);
    j.gpus = 256, j.gbs = 256, j.threads = 2;
    size_t peak[3];
    uint64_t total = 0, bytes = 0;
    for (int mode = 0; mode < 3; mode++) { /* nothing, the stream, record_all */
        counted c = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
        ps_allocator a = {counted_alloc, &c};
        ps_tune *t;
        ck_assert_int_eq(ps_tune_new(&t, &a), 0);
        j.csv_write = mode == 1 ? drop : NULL, j.csv_ud = &bytes;
        j.record_all = mode == 2;
        ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
        ps_tune_stats st;
        ps_tune_stats_get(t, &st);
        total = st.candidates;
        if (mode == 1) {
            size_t window = (size_t)(2 * j.threads + 2) * SLOT_MAX;
            ck_assert_uint_gt(ps__tune_csv_high(t), 0);
            ck_assert_uint_le(ps__tune_csv_high(t), window);
            ck_assert_uint_gt(bytes, total * 40); /* a line per candidate */
        }
        ps_tune_free(t);
        ck_assert_uint_eq(c.now, 0);
        peak[mode] = c.peak;
    }
    ck_assert_uint_gt(total, 1000000);
    size_t window = (size_t)(2 * j.threads + 2) * SLOT_MAX + 2 * 256 * 40;
    ck_assert_msg(peak[1] <= peak[0] + window, "peak %zu with the stream, %zu without", peak[1],
                  peak[0]);
    ck_assert_uint_ge(peak[2], peak[0] + total * 40);
}
END_TEST

/* A share function that knows the whole run's K-th best step from the start: the most the
 * other processes could ever tell; pruning against it must not change the answer either. */
static double share_exact(void *ud, double kth)
{
    ck_assert(kth >= 0);
    return *(const double *)ud;
}

/* The space cut into `parts` shares, each run alone (process i of parts), the others' packs
 * merged into share 0's handle. */
static ps_tune *run_shares(const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j,
                           uint32_t parts, double *kth)
{
    ps_tune *t[4];
    void *packs[4];
    size_t lens[4];
    uint64_t owned = 0;
    for (uint32_t i = 0; i < parts; i++) {
        ps__tune_part part = {i, parts, kth ? share_exact : NULL, kth, NULL, NULL};
        ck_assert_int_eq(ps_tune_new(&t[i], NULL), 0);
        brute_allows(t[i]); /* the space tune_ok searches */
        int rc = ps__tune_run_part(t[i], m, hw, j, &part);
        ck_assert_msg(rc == 0, "share %u of %u: %s", i, parts, ps_tune_last_error(t[i]));
        ps_tune_stats st;
        ps_tune_stats_get(t[i], &st);
        owned += st.candidates;
        ck_assert_uint_eq(st.rejected + st.simulated + st.pruned, st.candidates);
        if (i > 0) {
            ck_assert_int_eq(ps__tune_pack(t[i], 0, &packs[i - 1], &lens[i - 1]), 0);
            ck_assert_int_eq(ps__tune_pack_rc(packs[i - 1], lens[i - 1], NULL), 0);
        }
    }
    /* Every share but the root's is needed, each once; the shares own every candidate once. */
    if (parts > 2) {
        ck_assert_int_eq(ps__tune_merge(t[0], (const void *const *)packs, lens, parts - 2, 1.0),
                         PS_EINVAL);
        const void *twice[] = {packs[0], packs[0]};
        size_t twice_len[] = {lens[0], lens[0]};
        ck_assert_int_eq(ps__tune_merge(t[0], twice, twice_len, 2, 1.0), PS_EINVAL);
        ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t[0]), "two results of share 1"));
    }
    ck_assert_int_eq(ps__tune_merge(t[0], (const void *const *)packs, lens, parts - 1, 1.5), 0);
    ps_tune_stats st;
    ps_tune_stats_get(t[0], &st);
    ck_assert_uint_eq(st.candidates, owned);
    ck_assert_int_eq(st.processes, (int)parts);
    ck_assert(st.seconds == 1.5);
    for (uint32_t i = 1; i < parts; i++) {
        free(packs[i - 1]);
        ps_tune_free(t[i]);
    }
    return t[0];
}

/* 2, 3 and 4 shares of the dense, GQA and MoE spaces merged: the single run's top K, front,
 * reasons, counts and, without pruning, its CSV byte for byte. */
START_TEST(parts_same)
{
    ps_transformer models[] = {dense_model(), gqa_model(), moe_model()};
    brute_layouts = 1;
    for (int mi = 0; mi < 3; mi++) {
        ps_hardware hw = small_hw();
        ps_tune_job j = small_job(5);
        j.record_all = 1;
        for (int prune = 0; prune < 2; prune++) {
            j.no_prune = !prune;
            ps_tune *one = tune_ok(&models[mi], &hw, &j);
            ps_tune_stats a;
            ps_tune_stats_get(one, &a);
            char *want = csv_text(one);
            for (uint32_t parts = 2; parts <= 4; parts++) {
                j.threads = (int32_t)(parts % 2 + 1); /* 1 and 2 threads per share */
                ps_tune *merged = run_shares(&models[mi], &hw, &j, parts, NULL);
                ps_tune_stats b;
                ps_tune_stats_get(merged, &b);
                same_answer(one, merged);
                same_reasons(one, merged);
                ck_assert_uint_eq(b.candidates, a.candidates);
                ck_assert_uint_eq(b.rejected, a.rejected);
                ck_assert_uint_eq(b.over_memory, a.over_memory);
                ck_assert_uint_eq(b.failed, a.failed);
                ck_assert(b.min_need_gib == a.min_need_gib);
                if (!prune) {
                    ck_assert_uint_eq(b.simulated, a.simulated);
                    ck_assert_uint_eq(b.fitting, a.fitting);
                    char *got = csv_text(merged);
                    ck_assert_msg(!strcmp(got, want), "%s, %u shares: the CSV differs",
                                  models[mi].name, parts);
                    free(got);
                }
                ps_tune_free(merged);
                j.threads = 1;
            }
            free(want);
            ps_tune_free(one);
        }
    }
    brute_layouts = 2;
}
END_TEST

/* The K-th best step shared from the start (the tightest any process could share): more is
 * pruned, the answer is the same. */
START_TEST(parts_shared_bound)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    for (int mi = 0; mi < 2; mi++) {
        ps_hardware hw = small_hw();
        hw.hbm_gib = 80;
        ps_tune_job j = small_job(3);
        ps_tune *one = tune_ok(&models[mi], &hw, &j);
        ps_tune_row last;
        ck_assert_int_eq(ps_tune_top(one, 2, &last), 0);
        double kth = last.result.step_time_s;
        ps_tune *merged = run_shares(&models[mi], &hw, &j, 3, &kth);
        same_answer(one, merged);
        same_reasons(one, merged);
        ps_tune_stats a, b;
        ps_tune_stats_get(one, &a);
        ps_tune_stats_get(merged, &b);
        ck_assert_uint_eq(b.bound_breaks, 0);
        ck_assert_msg(b.pruned > 0, "%s: nothing pruned, the test proves nothing", models[mi].name);
        ps_tune_free(merged);
        ps_tune_free(one);
    }
}
END_TEST

/* A failed share travels as its code and message; a buffer that is no pack is refused. */
START_TEST(parts_pack_errors)
{
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    ps_transformer m = dense_model();
    ps_hardware hw = small_hw();
    ps_tune_job j = small_job(3);
    j.gpus = 0;
    int rc = ps_tune_run(t, &m, &hw, &j);
    ck_assert_int_lt(rc, 0);
    void *pack;
    size_t len;
    ck_assert_int_eq(ps__tune_pack(t, rc, &pack, &len), 0);
    const char *msg;
    ck_assert_int_eq(ps__tune_pack_rc(pack, len, &msg), rc);
    ck_assert_str_eq(msg, ps_tune_last_error(t));
    ck_assert_int_eq(ps__tune_pack_rc(pack, len - 1, &msg), PS_EINVAL);
    ck_assert_int_eq(ps__tune_pack(t, 0, &pack, &len) == PS_ESTATE, 1);
    /* A share of a run with 1 part cannot take a pack; a run needs the part in range. */
    ck_assert_int_eq(ps__tune_merge(t, NULL, NULL, 0, 1), PS_ESTATE);
    ps__tune_part bad = {2, 2, NULL, NULL, NULL, NULL};
    j.gpus = GPUS;
    ck_assert_int_eq(ps__tune_run_part(t, &m, &hw, &j, &bad), PS_EINVAL);
    free(pack);
    ps_tune_free(t);
}
END_TEST

/*
 * The search counts a block of candidates that share the knobs a failed check reads (up to
 * ps__space_reason_level of its reason) from the block's first candidate. On the whole spaces
 * of the three models (a 16-GPU job too, where tp.pp.cp fails more often), every candidate of
 * such a block fails the same check as its first, and the search's count of every cheap reason,
 * with 1 and 2 threads, equals a count over every candidate one by one.
 */
START_TEST(reason_levels)
{
    ps_transformer models[3] = {dense_model(), gqa_model(), moe_model()};
    ps_hardware hw = small_hw();
    /* Cases 6 to 11: the group and adaptive's options too, knobs after the schedule that the
     * checks of the group and of adaptive's options read. */
    static const int32_t groups[] = {1, 2}, warmups[] = {1, 2}, splits[] = {0, 1};
    for (int k = 0; k < 12; k++) {
        const ps_transformer *m = &models[k % 3];
        ps_tune_job j = small_job(3);
        if (k % 6 >= 3)
            j.gpus = 16;
        int more = k >= 6;
        ps__space sp;
        char err[PS__ERRLEN];
        ps__constraints none;
        memset(&none, 0, sizeof none);
        if (more) {
            memcpy(none.allow[PS_KNOB_GROUP], groups, sizeof groups);
            memcpy(none.allow[PS_KNOB_WARMUP], warmups, sizeof warmups);
            memcpy(none.allow[PS_KNOB_SPLIT], splits, sizeof splits);
            none.nallow[PS_KNOB_GROUP] = none.nallow[PS_KNOB_WARMUP] = 2;
            none.nallow[PS_KNOB_SPLIT] = 2;
        }
        /* The 16-GPU spaces and the MoE one with the group and adaptive's options without the
         * end layouts (2.5 times the candidates; the other 8-GPU ones have them and their
         * reason). */
        static const int32_t slim[] = {0, 1}, flat[] = {PS_A2A_FLAT};
        int slimmed = j.gpus == 16 || (more && m->experts > 0);
        int one_a2a = more && m->experts > 0; /* and one all-to-all: 2 us a candidate here */
        if (slimmed) {
            memcpy(none.allow[PS_KNOB_LAYOUT], slim, sizeof slim);
            none.nallow[PS_KNOB_LAYOUT] = 2;
        }
        if (one_a2a) {
            memcpy(none.allow[PS_KNOB_A2A], flat, sizeof flat);
            none.nallow[PS_KNOB_A2A] = 1;
        }
        ck_assert_int_eq(ps__space_build(&sp, m, &hw, &j, &none, err), 0);
        /* One pass: every candidate of the block a rejection starts (the block of its reason's
         * level, from bstart to bend) must fail the same check. */
        uint64_t count[PS__R_CHEAP] = {0}, blocks = 0, bstart = 0, bend = 0;
        int bwhy = -1;
        for (uint64_t x = 0; x < sp.total; x++) {
            ps_tune_config c;
            ps__cheap ch;
            ps__space_decode(&sp, x, &c);
            int why = ps__space_check(&sp, &c, &ch);
            ck_assert_msg(x >= bend || why == bwhy,
                          "case %d: candidate %llu fails another check than %llu", k,
                          (unsigned long long)x, (unsigned long long)bstart);
            if (why < 0)
                continue;
            count[why]++;
            int level = ps__space_reason_level(why);
            uint64_t b = sp.stride[level];
            if (level == PS_KNOBS - 1 || x % b)
                continue;
            blocks++;
            if (x + b > bend)
                bstart = x, bend = x + b, bwhy = why;
        }
        ck_assert_uint_gt(blocks, 0);
        for (int threads = 1; threads <= 2; threads++) {
            j.threads = threads;
            ps_tune *t;
            ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
            if (more) {
                ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_GROUP, groups, 2), 0);
                ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_WARMUP, warmups, 2), 0);
                ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_SPLIT, splits, 2), 0);
            }
            if (slimmed)
                ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_LAYOUT, slim, 2), 0);
            if (one_a2a)
                ck_assert_int_eq(ps_tune_allow(t, PS_KNOB_A2A, flat, 1), 0);
            ck_assert_int_eq(ps_tune_run(t, m, &hw, &j), 0);
            /* The reasons of ps__space_check (memory and recompute fit come later). */
            for (int r = 0; r < PS__R_MEMORY; r++) {
                uint64_t got = 0;
                for (size_t i = 0; i < ps_tune_reason_count(t); i++) {
                    const char *text;
                    uint64_t n;
                    ck_assert_int_eq(ps_tune_reason(t, i, &text, NULL, &n), 0);
                    if (!strcmp(text, ps__tune_reason_text(r)))
                        got = n;
                }
                ck_assert_msg(got == count[r], "case %d, %d threads, reason %d: %llu, not %llu", k,
                              threads, r, (unsigned long long)got, (unsigned long long)count[r]);
            }
            ps_tune_free(t);
        }
    }
}
END_TEST

/* The front against step time, peak memory and GPU count of hand-made points. */
START_TEST(pareto3_hand)
{
    /* 0: fast, big, 64 GPUs; 1: slower, smaller, 64: both on it (a 2-D trade-off).
     * 2: slower and bigger than 0 on 128 GPUs: dominated by 0.
     * 3: the slowest but on 32 GPUs: on it (fewest GPUs).
     * 4: equal to 1 in step and memory, on 128 GPUs: dominated by 1.
     * 5: equal to 0 in all three: both on it.
     * 6: as fast as 0 with less memory, on 256 GPUs: on it (its memory is the least). */
    const double step[] = {1.0, 2.0, 1.5, 5.0, 2.0, 1.0, 1.0};
    const double peak[] = {60, 40, 70, 80, 40, 60, 30};
    const int32_t gpus[] = {64, 64, 128, 32, 128, 64, 256};
    const unsigned char want[] = {1, 1, 0, 1, 0, 1, 1};
    unsigned char on[7];
    ck_assert_uint_eq(ps_tune_pareto3(step, peak, gpus, 7, on), 5);
    for (int i = 0; i < 7; i++)
        ck_assert_msg(on[i] == want[i], "point %d: on %d, want %d", i, on[i], want[i]);
    /* Without point 0's twin and point 6, 0 is alone at the fastest; 1 stays. */
    ck_assert_uint_eq(ps_tune_pareto3(step, peak, gpus, 5, on), 3);
    ck_assert_uint_eq(on[0] + on[1] + on[3], 3);
    /* One point is its own front; none is an empty one. */
    ck_assert_uint_eq(ps_tune_pareto3(step + 2, peak + 2, gpus + 2, 1, on), 1);
    ck_assert_uint_eq(on[0], 1);
    ck_assert_uint_eq(ps_tune_pareto3(step, peak, gpus, 0, on), 0);
}
END_TEST

/* ---- known answers (docs/tune.md, "Known answers") ------------------------------------------ */

/*
 * The searches docs/tune.md reports next to the published runs, restricted with --fix where the
 * whole space would take long, each asserting what the docs state: the first configuration's
 * knobs and step time, and the rank of the published configuration (its first row: the
 * search's best setting of the knobs the publication leaves open) with its step-time ratio
 * to the first. These figures come from the cost model and the hardware presets: a change of
 * either (a recalibration) can move them, and then this test fails on purpose, naming the
 * case; re-run the command it names, update docs/tune.md's "Known answers" and this table
 * together, and say why in the commit.
 */
typedef struct known_case {
    const char *what, *model, *hw;
    int32_t gpus;
    int64_t gbs;
    int32_t seq;
    const char *fix, *allow; /* "knob=value,..." (one value each), or NULL */
    const char *best;        /* knobs of the first row */
    double best_step;        /* its step time (s), within 1% */
    const char *published;   /* knobs of the published configuration */
    int published_rl;        /* its recompute_layers (recompute fit), -1: not checked */
    int rank;                /* its rank (1 = first), exact */
    double ratio;            /* its step over the first's, within 0.5% */
} known_case;

static const known_case known_cases[] = {
    {"llama3-70b, 64 h100-sxm, bf16 (Megatron-Bridge tp4 pp4 cp2 vpp5)", "llama3-70b", "h100-sxm",
     64, 128, 8192, NULL, NULL, "tp=4,cp=1,pp=4,vpp=2,schedule=v-half,mbs=1,recompute=none",
     14.3714, "tp=4,cp=2,pp=4,vpp=5,schedule=interleaved", -1, 18, 1.02365},
    {"llama3-70b, 64 h100-sxm, bf16 within tp4 pp4 cp2", "llama3-70b", "h100-sxm", 64, 128, 8192,
     "tp=4,cp=2,pp=4", NULL, "vpp=2,schedule=v-half,mbs=2,recompute=none", 14.3714,
     "vpp=5,schedule=interleaved", -1, 7, 1.02365},
    {"llama3-70b, 64 h100-sxm, fp8 within tp4 pp8 cp1 (Megatron-Bridge's FP8 vpp5)", "llama3-70b",
     "h100-sxm", 64, 128, 8192, "tp=4,pp=8,cp=1", "precision=fp8",
     "vpp=2,schedule=zb-v,mbs=1,recompute=none", 9.7690, "vpp=5,schedule=interleaved,recompute=fit",
     1, 32, 1.17340},
    {"deepseek-v3, 1024 h100-sxm, gbs 7680, within tp1 pp16 cp1 (DeepSeek's DualPipe ep64)",
     "deepseek-v3", "h100-sxm", 1024, 7680, 4096, "tp=1,pp=16,cp=1", NULL,
     "vpp=1,schedule=dualpipe,ep=32,etp=1,a2a=hierarchical,recompute=full,layout=balanced", 34.4224,
     "schedule=dualpipe,ep=64", -1, 26, 1.06573},
    {"pangu-ultra-moe-718b, 6144 ascend-910b, within tp8 pp16 cp1 (Huawei's vpp2 ep32 adaptive)",
     "pangu-ultra-moe-718b", "ascend-910b", 6144, 1536, 8192, "pp=16,tp=8,cp=1", NULL,
     "vpp=2,schedule=zb-v,ep=2,etp=8,a2a=hierarchical,recompute=none,layout=balanced", 6.2336,
     "vpp=2,schedule=adaptive,ep=32", -1, 8, 1.04158},
    {"pangu-ultra-moe-718b, the same with expert tp 1", "pangu-ultra-moe-718b", "ascend-910b", 6144,
     1536, 8192, "pp=16,tp=8,cp=1", NULL,
     "vpp=2,schedule=zb-v,ep=2,etp=8,a2a=hierarchical,recompute=none,layout=balanced", 6.2336,
     "vpp=2,schedule=adaptive,ep=32,etp=1", 1, 123, 1.15742},
};

/* Parses "knob=value,..." (one value per knob) into knob[], val[]: the count. */
static int known_spec(const char *spec, int *knob, int32_t *val)
{
    char buf[256];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save), n++) {
        char *eq = strchr(w, '=');
        ck_assert_msg(eq != NULL, "bad spec %s", spec);
        *eq = 0;
        knob[n] = ps_tune_knob_lookup(w);
        ck_assert_msg(knob[n] >= 0, "unknown knob %s", w);
        ck_assert_msg(ps_tune_value_parse(knob[n], eq + 1, &val[n]) == 0, "bad value %s", eq + 1);
    }
    return n;
}

static int known_match(const ps_tune_row *r, const char *spec)
{
    int knob[PS_KNOBS];
    int32_t val[PS_KNOBS];
    int n = known_spec(spec, knob, val);
    for (int i = 0; i < n; i++)
        if (r->config.knob[knob[i]] != val[i])
            return 0;
    return 1;
}

START_TEST(known_answers)
{
    const known_case *c = &known_cases[_i];
    ps_transformer m;
    ps_hardware hw;
    ck_assert_int_eq(ps_transformer_builtin(c->model, &m), 0);
    ck_assert_int_eq(ps_hardware_builtin(c->hw, &hw), 0);
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    int knob[PS_KNOBS];
    int32_t val[PS_KNOBS];
    const char *specs[] = {c->fix, c->allow};
    for (int s = 0; s < 2; s++)
        for (int i = 0, n = specs[s] ? known_spec(specs[s], knob, val) : 0; i < n; i++)
            ck_assert_int_eq(ps_tune_allow(t, knob[i], &val[i], 1), 0);
    ps_tune_job j;
    ps_tune_job_init(&j);
    j.gpus = c->gpus, j.gbs = c->gbs, j.seq = c->seq;
    j.top_k = c->rank + 5 > 400 ? c->rank + 5 : 400;
    int rc = ps_tune_run(t, &m, &hw, &j);
    ck_assert_msg(rc == 0, "%s: %s", c->what, ps_tune_last_error(t));
    ps_tune_row best, r;
    ck_assert_int_eq(ps_tune_top(t, 0, &best), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "pipesched tune --model %s --hardware %s --gpus %d --gbs %lld --seq %d%s%s%s%s "
             "--top %d",
             c->model, c->hw, c->gpus, (long long)c->gbs, c->seq, c->fix ? " --fix " : "",
             c->fix ? c->fix : "", c->allow ? " --allow " : "", c->allow ? c->allow : "",
             c->rank + 5);
    const char *redo = "the known answer moved: re-check docs/tune.md (\"Known answers\") with";
    ck_assert_msg(known_match(&best, c->best) &&
                      fabs(best.result.step_time_s / c->best_step - 1) <= 0.01,
                  "%s: the first is not %s at %g s (it takes %.4f s); %s %s", c->what, c->best,
                  c->best_step, best.result.step_time_s, redo, cmd);
    int rank = 0;
    for (size_t i = 0; i < ps_tune_top_count(t) && !rank; i++) {
        ck_assert_int_eq(ps_tune_top(t, i, &r), 0);
        if (known_match(&r, c->published))
            rank = (int)i + 1;
    }
    double ratio = rank ? r.result.step_time_s / best.result.step_time_s : 0;
    ck_assert_msg(rank == c->rank && fabs(ratio / c->ratio - 1) <= 0.005 &&
                      (c->published_rl < 0 || r.config.recompute_layers == c->published_rl),
                  "%s: %s ranks %d at %.5f x the first (recompute layers %d), documented %d at "
                  "%.5f x; %s %s",
                  c->what, c->published, rank, ratio, rank ? r.config.recompute_layers : -1,
                  c->rank, c->ratio, redo, cmd);
    ps_tune_free(t);
}
END_TEST

/* ---- the imbalance (ps_tune_set_imbalance) -------------------------------------------------- */

/* Skewed samples and loads for the small models: GBS packed samples, a Zipf trace. */
typedef struct imb_inputs {
    ps_sample x[GBS];
    ps_expert_trace *tr;
    ps_edpb_input in;
} imb_inputs;

static void imb_make(imb_inputs *v, const ps_transformer *m, int with_trace)
{
    char err[256];
    ck_assert_int_eq(
        ps_samples_synthetic("lognormal:5,1.5,seed:2", SEQ, v->x, GBS, err, sizeof err), 0);
    v->tr = NULL;
    if (with_trace) {
        ck_assert_int_eq(ps_expert_trace_new(&v->tr, NULL), 0);
        ck_assert_int_eq(ps_expert_trace_synthetic(v->tr, "zipf:1.2,seed:3,steps:3",
                                                   m->layers - m->first_dense, m->experts),
                         0);
    }
    v->in = (ps_edpb_input){v->x, GBS, v->tr, 0.9, 50};
}

/* With the imbalance, pruning changes nothing, no bound is broken, and every row's step is
 * ps_edpb_estimate's balanced step of its configuration. */
START_TEST(imbalance_prune_same)
{
    ps_transformer models[] = {dense_model(), moe_model()};
    for (int i = 0; i < 2; i++) {
        ps_hardware hw = small_hw();
        hw.hbm_gib = 80;
        imb_inputs v;
        imb_make(&v, &models[i], i == 1);
        ps_tune_job j = small_job(1);
        ps_tune *on, *off;
        ck_assert_int_eq(ps_tune_new(&on, NULL), 0);
        ck_assert_int_eq(ps_tune_new(&off, NULL), 0);
        ck_assert_int_eq(ps_tune_set_imbalance(on, &v.in), 0);
        ck_assert_int_eq(ps_tune_set_imbalance(off, &v.in), 0);
        ck_assert_msg(ps_tune_run(on, &models[i], &hw, &j) == 0, "%s", ps_tune_last_error(on));
        j.no_prune = 1;
        ck_assert_msg(ps_tune_run(off, &models[i], &hw, &j) == 0, "%s", ps_tune_last_error(off));
        ps_tune_stats a, b;
        ps_tune_stats_get(on, &a);
        ps_tune_stats_get(off, &b);
        ck_assert_uint_eq(a.bound_breaks, 0);
        ck_assert_uint_eq(b.bound_breaks, 0);
        ck_assert_uint_eq(a.simulated + a.pruned, b.simulated);
        ck_assert_msg(a.pruned > 0, "%s: nothing pruned, the test proves nothing", models[i].name);
        same_answer(on, off);
        ps_estimate *e;
        ck_assert_int_eq(ps_estimate_new(&e, NULL), 0);
        for (size_t r = 0; r < ps_tune_front_count(on); r++) {
            ps_tune_row row;
            ps_tune_front(on, r, &row);
            ps_train tr;
            ps_tune_config_train(&j, &row.config, &tr);
            ps_edpb_result ir;
            char err[256];
            ck_assert_int_eq(
                ps_edpb_estimate(e, &models[i], &hw, &tr, &v.in, &ir, NULL, NULL, err, sizeof err),
                0);
            ck_assert(row.result.step_time_s == ir.balanced_step_time_s);
            ck_assert(row.result.peak_gib > 0);
        }
        ps_estimate_free(e);
        ps_tune_free(on);
        ps_tune_free(off);
        ps_expert_trace_free(v.tr);
    }
}
END_TEST

/* A sample count other than gbs, or a trace of other experts, stops the run. */
START_TEST(imbalance_bad_input)
{
    ps_transformer m = moe_model();
    ps_hardware hw = small_hw();
    imb_inputs v;
    imb_make(&v, &m, 1);
    ps_tune_job j = small_job(1);
    ps_tune *t;
    ck_assert_int_eq(ps_tune_new(&t, NULL), 0);
    v.in.n_samples = GBS - 1;
    ck_assert_int_eq(ps_tune_set_imbalance(t, &v.in), 0);
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "samples: 7 given"));
    v.in.n_samples = GBS;
    ck_assert_int_eq(ps_expert_trace_load(v.tr, "1,2,3\n", 6), 0);
    ck_assert_int_eq(ps_tune_set_imbalance(t, &v.in), 0);
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_tune_last_error(t), "1 layers of 3 experts"));
    ck_assert_int_eq(ps_tune_set_imbalance(NULL, &v.in), PS_EINVAL);
    ck_assert_int_eq(ps_tune_set_imbalance(t, NULL), 0); /* cleared: a plain search */
    ck_assert_int_eq(ps_tune_run(t, &m, &hw, &j), 0);
    ps_tune_free(t);
    ps_expert_trace_free(v.tr);
}
END_TEST

static Suite *tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, reuse_same);
    tcase_add_test(tc, peaks_kept);
    tcase_add_test(tc, progress_calls);
    tcase_add_test(tc, constraints);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, pareto3_hand);
    tcase_add_test(tc, parts_pack_errors);
    tcase_add_test(tc, imbalance_bad_input);
    suite_add_tcase(s, tc);
    /* The brute forces and the searches repeated over threads, shares and pruning (about 140
     * CPU s) and the real models' searches: the valgrind setup (tests/meson.build) sets
     * PS_TEST_LIGHT and leaves them to the plain and sanitizer runs. */
    if (getenv("PS_TEST_LIGHT")) {
        fprintf(stderr, "tune: PS_TEST_LIGHT set: the heavy and known cases are left out\n");
        return s;
    }
    TCase *heavy = tcase_create("heavy");
    tcase_set_timeout(heavy, 600);
    tcase_add_test(heavy, brute_dense);
    tcase_add_test(heavy, brute_gqa);
    tcase_add_test(heavy, brute_recompute_fit);
    tcase_add_test(heavy, brute_layout_auto);
    tcase_add_test(heavy, brute_adaptive_options);
    tcase_add_test(heavy, brute_moe);
    tcase_add_test(heavy, threads_same);
    tcase_add_test(heavy, prune_same);
    tcase_add_test(heavy, bound_random);
    tcase_add_test(heavy, csv_all);
    tcase_add_test(heavy, reason_levels);
    tcase_add_test(heavy, zb_auto_allowed);
    tcase_add_test(heavy, zb_auto_v);
    tcase_add_test(heavy, parts_same);
    tcase_add_test(heavy, parts_shared_bound);
    tcase_add_test(heavy, imbalance_prune_same);
    suite_add_tcase(s, heavy);
    /* The CSV as the search goes: the stream against ps_tune_write_csv over threads and
     * shares, failing writes, the bounded window (a space of millions). */
    TCase *stream = tcase_create("csv");
    tcase_set_timeout(stream, 600);
    tcase_add_test(stream, csv_stream_same);
    tcase_add_test(stream, csv_stream_fails);
    tcase_add_test(stream, csv_stream_bounded);
    suite_add_tcase(s, stream);
    /* About 3 CPU s in all (bench/README.md has the search's speed). */
    TCase *known = tcase_create("known");
    tcase_set_timeout(known, 300);
    tcase_add_loop_test(known, known_answers, 0, (int)(sizeof known_cases / sizeof known_cases[0]));
    suite_add_tcase(s, known);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tune_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
