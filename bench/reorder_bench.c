/*
 * Data reordering (issue 15, section 2): the time of ps_balance_data on 4096 packed samples
 * over 64 data-parallel ranks, for a few pipelines, and the step times it reaches; and the cost
 * of the micro-batch weights (section 1) in the simulator's step, per action, with and without
 * them. bench/README.md, "Data reordering", gives the command and the figures.
 *
 *   build/bench/pipesched-reorder-bench [RUNS]
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/balance.h>
#include <pipesched/pipesched.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x853c49e6748fea9bULL;

static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* Packed samples of `seq` tokens, documents of lognormal lengths (mu 6.5, sigma 1.3), the
 * last cut to fit: times a . sum l^2 + c . sum l (a = 1e-9, c = 1e-5). */
static void samples(double *t, size_t n, int seq)
{
    for (size_t i = 0; i < n; i++) {
        double left = seq, sq = 0;
        while (left > 0) {
            double z = sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
            double l = floor(exp(6.5 + 1.3 * z)) + 1;
            l = l < left ? l : left;
            sq += l * l;
            left -= l;
        }
        t[i] = 1e-9 * sq + 1e-5 * seq;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct cfg {
    const char *family;
    int p, v, m, mbs;
} cfg;

static int bench_reorder(int runs)
{
    enum { N = 4096, D = 64 };
    static double t[N];
    static int32_t rank[N], slot[N];
    samples(t, N, 8192);
    static const cfg cfgs[] = {{"1f1b", 4, 1, 16, 4},
                               {"interleaved", 4, 2, 16, 4},
                               {"zb-h1", 4, 1, 16, 4},
                               {"1f1b", 8, 1, 64, 1}};
    printf("balance data: %d samples of 8192 tokens over dp %d (median of %d runs)\n", N, D, runs);
    printf("%-24s %9s %9s %9s %9s %8s %8s\n", "pipeline", "time_s", "evals", "baseline", "lpt",
           "result", "gain");
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        const cfg *c = &cfgs[k];
        ps_problem *pb;
        if (ps_problem_new(&pb, NULL) || ps_problem_set_schedule(pb, c->family) ||
            ps_problem_set_int(pb, PS_PARAM_PP, c->p) || ps_problem_set_int(pb, PS_PARAM_VPP, c->v))
            return 1;
        ps_data_config dc = {D, c->m, c->mbs, 0};
        ps_data_result r;
        double times[16];
        char err[256];
        for (int i = 0; i < runs; i++) {
            double t0 = now();
            if (ps_balance_data(pb, t, N, &dc, rank, slot, &r, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            times[i] = now() - t0;
        }
        qsort(times, (size_t)runs, sizeof *times, cmp);
        char name[64];
        snprintf(name, sizeof name, "%s p%d v%d m%d mbs%d", c->family, c->p, c->v, c->m, c->mbs);
        printf("%-24s %9.3f %9lld %9.4f %9.4f %8.4f %+7.1f%%\n", name, times[runs / 2],
               (long long)r.evals, r.baseline_step_time, r.lpt_step_time, r.step_time,
               100 * (r.baseline_step_time / r.step_time - 1));
        ps_problem_free(pb);
    }
    return 0;
}

/* ns per action of ps_sim_run on interleaved pp 16, vpp 2, m 64: no weights, weights all 1,
 * weights spread over [0.5, 1.5), the three interleaved round by round. */
static int bench_weights(int runs)
{
    enum { M = 64, REPS = 2000 };
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
    if (ps_problem_new(&pb, NULL) || ps_problem_set_schedule(pb, "interleaved") ||
        ps_problem_set_int(pb, PS_PARAM_PP, 16) || ps_problem_set_int(pb, PS_PARAM_VPP, 2) ||
        ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, M) || ps_schedule_new(&s, NULL) ||
        ps_sim_new(&sim, NULL) || ps_schedule_generate(s, pb) || ps_schedule_validate(s))
        return 1;
    double ones[M], spread[M];
    for (int j = 0; j < M; j++)
        ones[j] = 1, spread[j] = 0.5 + uniform();
    const double *w[3] = {NULL, ones, spread};
    const char *names[3] = {"no weights", "weights all 1", "weights 0.5..1.5"};
    double best[3] = {INFINITY, INFINITY, INFINITY};
    double acts = (double)ps_schedule_total_actions(s);
    for (int round = 0; round < runs; round++) {
        for (int k = 0; k < 3; k++) {
            if (ps_problem_set_microbatch_weights(pb, w[k], w[k] ? M : 0))
                return 1;
            double t0 = now();
            for (int i = 0; i < REPS; i++)
                if (ps_sim_run(sim, s, pb))
                    return 1;
            double ns = (now() - t0) / REPS / acts * 1e9;
            best[k] = ns < best[k] ? ns : best[k];
        }
    }
    printf("\nsimulator step, interleaved pp 16 vpp 2 m 64 (%.0f actions), best of %d rounds of "
           "%d runs\n",
           acts, runs, REPS);
    for (int k = 0; k < 3; k++)
        printf("%-18s %6.2f ns/action  (%.2fx no weights)\n", names[k], best[k], best[k] / best[0]);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1 || runs > 16)
        runs = 5;
    return bench_reorder(runs) || bench_weights(runs);
}
