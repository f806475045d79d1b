/*
 * The routing-trace loader of `balance experts --load` (ps_expert_trace_load), and the
 * placement of what it loads. The input is the file's text. Checks: a refused trace has a
 * message and is empty; an accepted one has a positive shape within the bounds and finite
 * tokens >= 0; its EMA prediction (theta chosen from the input) is finite and >= 0; a small
 * one (at most 64 experts) placed on devices chosen from the input respects the capacity and
 * is never worse than the identity placement; every free names its size, nothing leaks, and a
 * second load that fails one of its allocations (chosen from the input) cleans up.
 *
 * Bounds: inputs up to 16 KiB whose numbers are all below 4096, so that the trace's table
 * stays small and an input runs in milliseconds.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz.h"

#include <pipesched/balance.h>

#define MAX_INPUT (16 * 1024)
#define MAX_NUMBER 4096

static int numbers_small(const uint8_t *data, size_t size)
{
    unsigned long v = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] >= '0' && data[i] <= '9') {
            v = v * 10 + (data[i] - '0');
            if (v >= MAX_NUMBER)
                return 0;
        } else {
            v = 0;
        }
    }
    return 1;
}

static void check_placement(const ps_expert_trace *t, uint32_t h, fz_alloc *a)
{
    int32_t steps, layers, experts;
    ps_expert_trace_shape(t, &steps, &layers, &experts);
    double theta = (double)(h % 100) / 100.0;
    double *pred = malloc((size_t)layers * (size_t)experts * sizeof *pred);
    FZ_CHECK(pred != NULL, "out of memory");
    FZ_CHECK(ps_expert_trace_predict(t, theta, pred) == 0, "predict failed on a loaded trace");
    for (size_t i = 0; i < (size_t)layers * (size_t)experts; i++)
        FZ_CHECK(isfinite(pred[i]) && pred[i] >= 0, "prediction %zu is %g", i, pred[i]);
    if (experts <= 64) {
        ps_expert_group g = {1 + (int32_t)((h >> 8) % 8), 1, 0};
        g.nodes = (h >> 12) % 2 && g.devices % 2 == 0 ? 2 : 1;
        g.capacity = (experts + g.devices - 1) / g.devices + (int32_t)((h >> 16) % 2);
        int32_t dev[64], ident[64], count[8];
        double loads[8];
        ps_allocator al = fz_allocator(a);
        char err[256];
        int rc = ps_expert_place(pred, experts, &g, NULL, dev, &al, err, sizeof err);
        if (rc == 0) {
            memset(count, 0, sizeof count);
            for (int32_t e = 0; e < experts; e++) {
                FZ_CHECK(dev[e] >= 0 && dev[e] < g.devices, "expert %d on device %d", e, dev[e]);
                FZ_CHECK(++count[dev[e]] <= g.capacity, "device %d over capacity", dev[e]);
            }
            FZ_CHECK(ps_expert_identity(experts, &g, ident) == 0, "identity refused");
            double mine = ps_expert_device_loads(pred, experts, dev, g.devices, loads);
            double base = ps_expert_device_loads(pred, experts, ident, g.devices, loads);
            FZ_CHECK(mine <= base, "placement %g worse than the identity %g", mine, base);
        } else {
            FZ_CHECK(rc == PS_ENOMEM && a->failed, "ps_expert_place: %s: %s", ps_err_name(rc), err);
        }
    }
    free(pred);
}

static void load_once(const char *text, size_t len, uint32_t h, fz_alloc *a, int deep)
{
    ps_allocator al = fz_allocator(a);
    ps_expert_trace *t = NULL;
    int rc = ps_expert_trace_new(&t, &al);
    if (rc) {
        FZ_CHECK(rc == PS_ENOMEM && a->failed, "ps_expert_trace_new: %s", ps_err_name(rc));
        return;
    }
    rc = ps_expert_trace_load(t, text, len);
    int32_t steps, layers, experts;
    int shape = ps_expert_trace_shape(t, &steps, &layers, &experts);
    if (rc) {
        FZ_CHECK(rc == PS_EPARSE || rc == PS_ERANGE || (rc == PS_ENOMEM && a->failed),
                 "load returned %s", ps_err_name(rc));
        FZ_CHECK(ps_expert_trace_last_error(t)[0], "load failed with %s and no message",
                 ps_err_name(rc));
        FZ_CHECK(shape == PS_ESTATE, "a refused trace is not empty");
    } else {
        FZ_CHECK(shape == 0 && steps >= 1 && layers >= 1 && experts >= 1 &&
                     (double)steps * layers * experts <= (double)PS_MAX_TRACE_CELLS,
                 "shape %d x %d x %d", steps, layers, experts);
        for (int32_t s = 0; s < steps; s++)
            for (int32_t l = 0; l < layers; l++)
                for (int32_t e = 0; e < experts; e++) {
                    double v = ps_expert_trace_tokens(t, s, l, e);
                    FZ_CHECK(isfinite(v) && v >= 0, "tokens %g at %d %d %d", v, s, l, e);
                }
        if (deep)
            check_placement(t, h, a);
    }
    ps_expert_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT || !numbers_small(data, size))
        return 0;
    char *text = fz_exact_copy(data, size);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    fz_alloc a = {0};
    load_once(text, size, h, &a, 1);
    fz_alloc_check_empty(&a, "trace load");
    fz_alloc b = {0};
    b.fail_at = 1 + (long)(h % 8);
    load_once(text, size, h, &b, 0);
    fz_alloc_check_empty(&b, "trace load with a failed allocation");
    free(text);
    return 0;
}
