/*
 * pipesched benchmark: generate + validate + simulate.
 *
 *   pipesched-bench [--quick]
 *   pipesched-bench --growth                 section 5 alone
 *   pipesched-bench --one FAMILY PP VPP M N  N scenarios in one process, nothing printed but
 *                                            the actions (bench/growth.sh counts their
 *                                            instructions under callgrind)
 *
 * 1. pp16/vpp2/m64 interleaved: microseconds per scenario (median of batches) and scenarios
 *    per second on one core, then with one worker process per core.
 * 2. pp128/vpp8/m4096 interleaved: seconds and peak RSS, in a child process so that its RSS
 *    is its own.
 * 3. Cost per action across sizes 4x8 ... 128x4096 (nanoseconds per action, median).
 * 5. Growth of the cost per action from pp16/vpp2/m64 to pp32/vpp4/m256 and pp128/vpp8/m4096
 *    (interleaved) and from 16x64 to 128x4096 (1F1B): wall and CPU time, the ratios.
 * Figures are medians; compare ratios from one run, machines are noisy.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/pipesched.h>

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct ctx {
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
} ctx;

static void ctx_init(ctx *c, const char *fam, int pp, int vpp, int m)
{
    if (ps_problem_new(&c->pb, NULL) || ps_problem_set_schedule(c->pb, fam) ||
        ps_problem_set_int(c->pb, PS_PARAM_PP, pp) ||
        ps_problem_set_int(c->pb, PS_PARAM_VPP, vpp) ||
        ps_problem_set_int(c->pb, PS_PARAM_MICROBATCHES, m) || ps_schedule_new(&c->s, NULL) ||
        ps_sim_new(&c->sim, NULL)) {
        fprintf(stderr, "bench: setup failed\n");
        exit(1);
    }
}

static void ctx_free(ctx *c)
{
    ps_sim_free(c->sim);
    ps_schedule_free(c->s);
    ps_problem_free(c->pb);
}

/* One scenario: generate, validate, simulate. Returns the makespan. */
static double scenario(ctx *c)
{
    int rc = ps_schedule_generate(c->s, c->pb);
    if (!rc)
        rc = ps_schedule_validate(c->s);
    if (!rc)
        rc = ps_sim_run(c->sim, c->s, c->pb);
    if (rc) {
        fprintf(stderr, "bench: %s\n", ps_strerror(rc));
        exit(1);
    }
    ps_metrics m;
    ps_sim_metrics(c->sim, &m);
    return m.makespan;
}

static void bench_small(int quick)
{
    ctx c;
    ctx_init(&c, "interleaved", 16, 2, 64);
    enum { BATCHES = 15 };
    int per = quick ? 200 : 2000;
    double t[BATCHES], mk = 0;
    for (int i = 0; i < 100; i++)
        mk = scenario(&c);
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now();
        for (int i = 0; i < per; i++)
            mk = scenario(&c);
        t[b] = (now() - t0) / per;
    }
    double med = median(t, BATCHES); /* sorts t */
    printf("pp16/vpp2/m64 interleaved: %zu actions, makespan %g\n", ps_schedule_total_actions(c.s),
           mk);
    printf("  one core: %.1f us per scenario (median of %d batches of %d; fastest batch %.1f us), "
           "%.0f scenarios/s\n",
           med * 1e6, BATCHES, per, t[0] * 1e6, 1 / med);
    ctx_free(&c);

    /* One worker process per core, fixed work each; wall time of the whole. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    int work = quick ? 5000 : 50000;
    double t0 = now();
    for (long w = 0; w < ncpu; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            ctx k;
            ctx_init(&k, "interleaved", 16, 2, 64);
            for (int i = 0; i < work; i++)
                scenario(&k);
            ctx_free(&k);
            _exit(0);
        }
    }
    while (wait(NULL) > 0)
        ;
    double wall = now() - t0;
    double rate = (double)work * (double)ncpu / wall;
    printf("  %ld cores: %.0f scenarios/s -> 1,000,000 scenarios in %.1f s\n", ncpu, rate,
           1e6 / rate);
}

static void bench_huge(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        ctx c;
        double t0 = now();
        ctx_init(&c, "interleaved", 128, 8, 4096);
        double mk = scenario(&c);
        double t = now() - t0;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("pp128/vpp8/m4096 interleaved: %zu actions, makespan %g\n",
               ps_schedule_total_actions(c.s), mk);
        printf("  generate+validate+simulate %.2f s, peak RSS %.0f MiB\n", t,
               (double)ru.ru_maxrss / 1024.0);
        fflush(stdout);
        ctx_free(&c);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
}

static void bench_sizes(int quick)
{
    static const int sizes[][2] = {{4, 8}, {8, 32}, {16, 64}, {32, 256}, {64, 1024}, {128, 4096}};
    static const char *fams[] = {"1f1b", "interleaved"};
    printf("cost per action (generate+validate+simulate), vpp=2 for interleaved:\n");
    printf("  %-12s %-10s %12s %12s %14s\n", "family", "pp x m", "actions", "ns/action",
           "actions/s");
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 6; k++) {
            ctx c;
            int vpp = f ? 2 : 1;
            ctx_init(&c, fams[f], sizes[k][0], vpp, sizes[k][1]);
            double n = (double)sizes[k][0] * vpp * sizes[k][1] * 2;
            int reps = (int)(2e6 / n);
            if (quick)
                reps /= 10;
            if (reps < 1)
                reps = 1;
            int rounds = n > 1e6 ? 3 : 7;
            double t[7];
            scenario(&c);
            for (int r = 0; r < rounds; r++) {
                double t0 = now();
                for (int i = 0; i < reps; i++)
                    scenario(&c);
                t[r] = (now() - t0) / reps;
            }
            double med = median(t, rounds);
            char dims[32];
            snprintf(dims, sizeof dims, "%dx%d", sizes[k][0], sizes[k][1]);
            printf("  %-12s %-10s %12.0f %12.1f %14.3g\n", fams[f], dims, n, med / n * 1e9,
                   n / med);
            ctx_free(&c);
        }
}

/*
 * The zero-bubble families at pp x m = 4x8 ... 64x1024 (and 128x4096): median time of
 * generate + validate + simulate and the makespan with f = b = w = 1, next to the zero-bubble
 * project's Python generators (generator time alone, and their makespans). The peers' figures
 * are STORED, not measured here: they were measured on 2026-11-30 on the project's shared
 * 2-core VM (shared/reference/peer-figures.md), and the output says so.
 */
static void bench_zero_bubble(int quick)
{
    static const int sizes[][2] = {{4, 8}, {8, 32}, {16, 64}, {32, 256}, {64, 1024}, {128, 4096}};
    static const struct {
        const char *family, *label, *peer;
        int vpp;
        double mem_limit_per_p; /* limit = this x pp (0 = none) */
        double peer_s[5];       /* < 0: timed out (> 60 s) */
        int peer_makespan[5];
    } rows[] = {
        {"zb-h1",
         "zb-h1",
         "zb:zb",
         1,
         0,
         {0.00371, 0.02, 0.077, 0.641, 6.75},
         {27, 103, 207, 799, 3135}},
        {"zb-h2",
         "zb-h2",
         "zb:zb",
         1,
         0,
         {0.00371, 0.02, 0.077, 0.641, 6.75},
         {27, 103, 207, 799, 3135}},
        {"zb-auto",
         "zb-auto v1",
         "zb:zb",
         1,
         0,
         {0.00371, 0.02, 0.077, 0.641, 6.75},
         {27, 103, 207, 799, 3135}},
        {"zb-auto",
         "zb-auto v1 lim p",
         "zb:zb mem 1",
         1,
         1,
         {0.00284, 0.0216, 0.15, 0.673, 7.06},
         {27, 103, 207, 799, 3135}},
        {"interleaved-zb",
         "interleaved-zb",
         "torch ZB1P",
         2,
         0,
         {0.000387, 0.00246, 0.0113, 0.134, -1},
         {51, 199, 399, 1567, 6207}},
        {"zb-v",
         "zb-v",
         "zb:zbv",
         2,
         0,
         {0.0081, 0.0606, 0.199, 1.46, 11.8},
         {51, 199, 399, 1567, 6207}},
        {"zb-auto",
         "zb-auto v2 lim 2p",
         "zb:zbv",
         2,
         2,
         {0.0081, 0.0606, 0.199, 1.46, 11.8},
         {51, 199, 399, 1567, 6207}},
        {"v-half",
         "v-half",
         "zb:zbv_half",
         2,
         0,
         {0.0193, 0.231, 1.74, 29.1, -1},
         {53, 209, 425, 1625, 0}},
        {"v-min",
         "v-min",
         "zb:zbv_min",
         2,
         0,
         {0.0113, 0.15, 1.44, 19.3, -1},
         {59, 219, 443, 1659, 0}},
    };
    printf("zero-bubble families, f=b=w=1: our generator alone and generate+validate+simulate "
           "(medians)\nvs the peer's generator alone; speedup = peer generator / our "
           "generator.\nThe peer columns are STORED, not measured in this run: generator times "
           "measured on\n2026-11-30 on the project's shared 2-core VM "
           "(shared/reference/peer-figures.md); the\nspeedup divides that stored figure by "
           "ours measured now:\n");
    printf("  %-18s %-9s %9s %10s %9s | %-12s %10s %9s %9s\n", "family", "pp x m", "gen us",
           "all us", "makespan", "peer", "stored us", "makespan", "speedup");
    for (size_t f = 0; f < sizeof rows / sizeof rows[0]; f++)
        for (int k = 0; k < 6; k++) {
            ctx c;
            ctx_init(&c, rows[f].family, sizes[k][0], rows[f].vpp, sizes[k][1]);
            if (rows[f].mem_limit_per_p > 0 &&
                ps_problem_set_mem_limit(c.pb, rows[f].mem_limit_per_p * sizes[k][0])) {
                fprintf(stderr, "bench: %s\n", ps_problem_last_error(c.pb));
                exit(1);
            }
            double n = (double)sizes[k][0] * rows[f].vpp * sizes[k][1] * 3;
            int reps = (int)(1e6 / n);
            if (quick)
                reps /= 10;
            if (reps < 1)
                reps = 1;
            int rounds = n > 1e6 ? 3 : 5;
            double t[5], g[5], mk = scenario(&c);
            for (int r = 0; r < rounds; r++) {
                double t0 = now();
                for (int i = 0; i < reps; i++)
                    scenario(&c);
                t[r] = (now() - t0) / reps;
                t0 = now();
                for (int i = 0; i < reps; i++)
                    if (ps_schedule_generate(c.s, c.pb))
                        exit(1);
                g[r] = (now() - t0) / reps;
            }
            double med = median(t, rounds), gen = median(g, rounds);
            char dims[32], peer_us[32] = "-", peer_mk[32] = "-", speed[32] = "-";
            snprintf(dims, sizeof dims, "%dx%d", sizes[k][0], sizes[k][1]);
            if (k < 5) {
                double ps = rows[f].peer_s[k];
                if (ps < 0) {
                    snprintf(peer_us, sizeof peer_us, ">60 s");
                    snprintf(speed, sizeof speed, ">%.0fx", 60 / gen);
                } else {
                    snprintf(peer_us, sizeof peer_us, "%.0f", ps * 1e6);
                    snprintf(speed, sizeof speed, "%.0fx", ps / gen);
                }
                if (rows[f].peer_makespan[k])
                    snprintf(peer_mk, sizeof peer_mk, "%d", rows[f].peer_makespan[k]);
            }
            printf("  %-18s %-9s %9.1f %10.1f %9g | %-12s %10s %9s %9s\n", rows[f].label, dims,
                   gen * 1e6, med * 1e6, mk, rows[f].peer, peer_us, peer_mk, speed);
            ctx_free(&c);
        }
}

/* CPU time of this process (user + system), seconds. */
static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/*
 * Section 5: the cost per action of generate + validate + simulate into reused handles, at
 * the sizes issue 13 names, median of rounds of at least 4 M actions each (one scenario at
 * pp128/vpp8/m4096), wall and CPU time; then each family's growth from its smallest size.
 * The CPU time moves less with the machine's load than the wall time (a loaded machine takes
 * the core away, it does not make the work longer), and bench/growth.sh adds the instruction
 * counts, which do not move at all. The first scenario of each size (fresh pages) is left out.
 */
static void bench_growth(void)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } sizes[] = {{"interleaved", 16, 2, 64},
                 {"interleaved", 32, 4, 256},
                 {"interleaved", 128, 8, 4096},
                 {"1f1b", 16, 1, 64},
                 {"1f1b", 128, 1, 4096}};
    enum { N = sizeof sizes / sizeof sizes[0], ROUNDS = 9 };
    printf("growth of the cost per action (generate+validate+simulate, reused handles, median "
           "of %d rounds\nthat take the sizes in turn):\n",
           ROUNDS);
    ctx c[N];
    double n[N], w[N][ROUNDS], u[N][ROUNDS];
    int reps[N];
    for (size_t k = 0; k < N; k++) {
        ctx_init(&c[k], sizes[k].family, sizes[k].pp, sizes[k].vpp, sizes[k].m);
        scenario(&c[k]);
        n[k] = (double)ps_schedule_total_actions(c[k].s);
        reps[k] = n[k] < 4e6 ? (int)(4e6 / n[k]) : 1;
    }
    /* Round-robin, so that every size meets the machine's load of every moment alike. */
    for (int r = 0; r < ROUNDS; r++)
        for (size_t k = 0; k < N; k++) {
            double t0 = now(), c0 = cpu_now();
            for (int i = 0; i < reps[k]; i++)
                scenario(&c[k]);
            w[k][r] = (now() - t0) / reps[k] / n[k] * 1e9;
            u[k][r] = (cpu_now() - c0) / reps[k] / n[k] * 1e9;
        }
    printf("  %-12s %-12s %10s %12s %12s %10s %10s\n", "family", "pp/vpp/m", "actions",
           "wall ns/act", "cpu ns/act", "wall x", "cpu x");
    double base_wall = 0, base_cpu = 0;
    for (size_t k = 0; k < N; k++) {
        double wm = median(w[k], ROUNDS), um = median(u[k], ROUNDS);
        if (k == 0 || strcmp(sizes[k].family, sizes[k - 1].family)) {
            base_wall = wm;
            base_cpu = um;
        }
        char dims[32];
        snprintf(dims, sizeof dims, "%d/%d/%d", sizes[k].pp, sizes[k].vpp, sizes[k].m);
        printf("  %-12s %-12s %10.0f %12.1f %12.1f %9.2fx %9.2fx\n", sizes[k].family, dims, n[k],
               wm, um, wm / base_wall, um / base_cpu);
        ctx_free(&c[k]);
    }
}

/* --one: n scenarios of one size in this process, for instruction counts (bench/growth.sh
 * takes the difference between n = 2 and n = 1: one scenario into reused handles). */
static int bench_one(const char *family, int pp, int vpp, int m, int n)
{
    ctx c;
    ctx_init(&c, family, pp, vpp, m);
    for (int i = 0; i < n; i++)
        scenario(&c);
    printf("%zu\n", ps_schedule_total_actions(c.s));
    ctx_free(&c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && !strcmp(argv[1], "--one"))
        return bench_one(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if (argc == 2 && !strcmp(argv[1], "--growth")) {
        print_load("at start");
        bench_growth();
        print_load("at end");
        return 0;
    }
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: pipesched-bench [--quick | --growth | --one FAMILY PP VPP M N]\n");
        return 2;
    }
    print_load("at start");
    bench_small(quick);
    fflush(stdout);
    bench_huge();
    print_load("after sections 1-2");
    bench_sizes(quick);
    print_load("after section 3");
    bench_zero_bubble(quick);
    print_load("after section 4");
    bench_growth();
    print_load("at end");
    return 0;
}
