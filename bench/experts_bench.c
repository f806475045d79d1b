/*
 * Expert placement (issue 15, part E): the time to place 256 experts on 64 devices (8 nodes)
 * for each of 61 MoE layers, from a synthetic Zipf trace, and the imbalance the placement
 * reaches against the identity placement and plain LPT.
 *
 *   build/bench/pipesched-experts-bench [runs]     (default 7 runs; the median is printed)
 *
 * Each run places all 61 layers from the same EMA prediction, once without a current
 * placement and once with the previous run's placement as the current one (the --from path:
 * the current placement as a start, the relabelling, the migration's seconds).
 * SPDX-License-Identifier: MIT
 */
#include "bench_util.h"

#include <pipesched/balance.h>
#include <pipesched/model.h>

#include <string.h>

enum { LAYERS = 61, EXPERTS = 256, DEVICES = 64, NODES = 8, CAP = EXPERTS / DEVICES };

/* Plain LPT with a cap: the baseline the placement must beat. */
static double plain_lpt(const double *w)
{
    int32_t order[EXPERTS], count[DEVICES] = {0};
    double load[DEVICES] = {0}, top = 0;
    for (int32_t e = 0; e < EXPERTS; e++)
        order[e] = e;
    for (int32_t i = 1; i < EXPERTS; i++)
        for (int32_t k = i; k > 0 && w[order[k]] > w[order[k - 1]]; k--) {
            int32_t x = order[k];
            order[k] = order[k - 1];
            order[k - 1] = x;
        }
    for (int32_t i = 0; i < EXPERTS; i++) {
        int32_t best = -1;
        for (int32_t d = 0; d < DEVICES; d++)
            if (count[d] < CAP && (best < 0 || load[d] < load[best]))
                best = d;
        load[best] += w[order[i]];
        count[best]++;
    }
    for (int32_t d = 0; d < DEVICES; d++)
        top = load[d] > top ? load[d] : top;
    return top;
}

/* Times the placement of every layer of one synthetic trace and prints the figures. */
static int bench_trace(const char *spec, int runs, double *fresh, double *again)
{
    ps_expert_trace *t = NULL;
    static double pred[LAYERS * EXPERTS], dev_load[DEVICES];
    static int32_t place[LAYERS * EXPERTS], prev[LAYERS * EXPERTS], ident[EXPERTS];
    ps_expert_group g = {DEVICES, NODES, 0};
    ps_hardware hw;
    ps_transformer m;
    if (ps_expert_trace_new(&t, NULL) || ps_hardware_builtin("h100-sxm", &hw) ||
        ps_transformer_builtin("deepseek-v3", &m))
        return 1;
    double t0 = now();
    if (ps_expert_trace_synthetic(t, spec, LAYERS, EXPERTS))
        return 1;
    double t_synth = now() - t0;
    t0 = now();
    ps_expert_trace_predict(t, 0.9, pred);
    double t_ema = now() - t0;
    ps_expert_trace_free(t);
    ps_expert_identity(EXPERTS, &g, ident);
    double bytes = ps_expert_migration_bytes(&m);
    for (int r = 0; r < runs; r++) {
        t0 = now();
        for (int l = 0; l < LAYERS; l++)
            if (ps_expert_place(pred + l * EXPERTS, EXPERTS, &g, NULL, place + l * EXPERTS, NULL,
                                NULL, 0))
                return 1;
        fresh[r] = now() - t0;
        memcpy(prev, place, sizeof place);
        t0 = now();
        for (int l = 0; l < LAYERS; l++) {
            const int32_t *cur = prev + l * EXPERTS;
            int32_t *p = place + l * EXPERTS, moved;
            double s;
            if (ps_expert_place(pred + l * EXPERTS, EXPERTS, &g, cur, p, NULL, NULL, 0) ||
                ps_expert_align(cur, p, EXPERTS, &g, NULL) ||
                ps_expert_migration_s(cur, p, EXPERTS, &g, bytes, &hw, &moved, &s))
                return 1;
        }
        again[r] = now() - t0;
    }
    /* The imbalance (max / mean device load), mean over layers, and its lower bound: no
     * placement beats the mean, nor the device of the hottest expert, which holds CAP experts:
     * at least the hottest plus the CAP - 1 coolest. */
    double imb_ident = 0, imb_lpt = 0, imb_place = 0, imb_bound = 0;
    for (int l = 0; l < LAYERS; l++) {
        const double *w = pred + l * EXPERTS;
        double total = 0, hottest = 0, sorted[EXPERTS];
        for (int e = 0; e < EXPERTS; e++) {
            total += w[e];
            sorted[e] = w[e];
        }
        qsort(sorted, EXPERTS, sizeof *sorted, cmp_double);
        hottest = sorted[EXPERTS - 1];
        for (int k = 0; k < CAP - 1; k++)
            hottest += sorted[k];
        double mean = total / DEVICES;
        imb_ident += ps_expert_device_loads(w, EXPERTS, ident, DEVICES, dev_load) / mean / LAYERS;
        imb_lpt += plain_lpt(w) / mean / LAYERS;
        imb_place += ps_expert_device_loads(w, EXPERTS, prev + l * EXPERTS, DEVICES, dev_load) /
                     mean / LAYERS;
        imb_bound += (hottest > mean ? hottest : mean) / mean / LAYERS;
    }
    printf("trace %s\n", spec);
    printf("  synthetic trace          %8.3f ms (once)\n", t_synth * 1e3);
    printf("  EMA prediction           %8.3f ms (once)\n", t_ema * 1e3);
    printf("  placement, all layers    %8.3f ms (median of %d)\n", median(fresh, runs) * 1e3, runs);
    printf("  the same with --from     %8.3f ms (median of %d; start, align, migration)\n",
           median(again, runs) * 1e3, runs);
    printf("  imbalance (max/mean, mean over layers): identity %.4f, plain LPT %.4f, placement "
           "%.4f, lower bound %.4f\n",
           imb_ident, imb_lpt, imb_place, imb_bound);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 7;
    if (runs < 1 || runs > 1000)
        runs = 7;
    double *fresh = malloc((size_t)runs * sizeof *fresh);
    double *again = malloc((size_t)runs * sizeof *again);
    if (!fresh || !again)
        return 1;
    printf("expert placement: %d layers x %d experts on %d devices (%d nodes, %d per device)\n",
           LAYERS, EXPERTS, DEVICES, NODES, CAP);
    print_load("at start");
    /* A mild skew, where the placement decides the imbalance, and a strong one, where the
     * hottest expert does. */
    int rc = bench_trace("zipf:0.3,drift:0.05,seed:1,steps:50", runs, fresh, again) ||
             bench_trace("zipf:1.2,drift:0.05,seed:1,steps:50", runs, fresh, again);
    print_load("at end");
    free(fresh);
    free(again);
    return rc;
}
