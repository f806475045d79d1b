/*
 * The JSON configuration loader (ps_problem_load_json, docs/config.md). The input is the file's
 * text. Checks: a refused file leaves a message and the problem unchanged; an accepted one
 * is accepted again on top of itself; when the problem it describes is small, the whole
 * pipeline holds (pipeline.c); the loader's allocations name their sizes, nothing leaks, and
 * a run that fails one of its allocations (chosen from the input) cleans up as well.
 * SPDX-License-Identifier: MIT
 */
#include "pipeline.h"

/* What a refused load must leave as it was (through the public getters). */
typedef struct snapshot {
    const char *family;
    long long ints[6];
    double costs[5];
    double mem_limit;
    ps_stage_mem mem0;
    size_t n_stage_costs;
    size_t n_weights;
    double weight0; /* the first micro-batch weight (0: none) */
    int has_moe;
    ps_moe_model moe;
} snapshot;

static void take(const ps_problem *pb, snapshot *sn)
{
    memset(sn, 0, sizeof *sn);
    sn->family = ps_problem_schedule(pb);
    for (int i = 0; i < 6; i++)
        sn->ints[i] = ps_problem_get_int(pb, (ps_param)i);
    for (int i = 0; i < 5; i++)
        sn->costs[i] = ps_problem_get_cost(pb, (ps_cost)i);
    sn->mem_limit = ps_problem_mem_limit(pb);
    sn->mem0 = ps_problem_memory(pb, 0);
    sn->n_stage_costs = ps_problem_stage_costs(pb, NULL);
    const double *w = NULL;
    sn->n_weights = ps_problem_microbatch_weights(pb, &w);
    sn->weight0 = sn->n_weights ? w[0] : 0;
    sn->has_moe = ps_problem_get_moe(pb, &sn->moe) == 0;
}

static int same(const snapshot *x, const snapshot *y)
{
    /* Field by field: memcmp would compare the padding. NaN never gets in (the setters refuse
     * it), so == is exact. */
    if (strcmp(x->family, y->family) || x->mem_limit != y->mem_limit ||
        x->n_stage_costs != y->n_stage_costs || x->has_moe != y->has_moe ||
        x->n_weights != y->n_weights || x->weight0 != y->weight0 || x->mem0.f != y->mem0.f ||
        x->mem0.b != y->mem0.b || x->mem0.w != y->mem0.w)
        return 0;
    for (int i = 0; i < 6; i++)
        if (x->ints[i] != y->ints[i])
            return 0;
    for (int i = 0; i < 5; i++)
        if (x->costs[i] != y->costs[i])
            return 0;
    if (x->has_moe) {
        if (x->moe.layers != y->moe.layers || x->moe.dense_layers != y->moe.dense_layers ||
            x->moe.planner != y->moe.planner)
            return 0;
        for (int i = 0; i < PS_OP_LAYER_COUNT; i++)
            if (x->moe.moe.t[i] != y->moe.moe.t[i])
                return 0;
    }
    return 1;
}

/* Small enough that the pipeline runs in milliseconds under the sanitizers. */
static int small(const ps_problem *pb)
{
    long long pp = ps_problem_get_int(pb, PS_PARAM_PP), v = ps_problem_get_int(pb, PS_PARAM_VPP),
              m = ps_problem_get_int(pb, PS_PARAM_MICROBATCHES);
    ps_moe_model moe;
    if (ps_problem_get_moe(pb, &moe) == 0 && moe.layers > 16)
        return 0;
    return pp <= 8 && v <= 4 && m <= 32 && pp * (v ? v : 2) * m <= 512;
}

/* A large configuration runs the pipeline at pp 4, m 8 (a per-stage table of the old size
 * then takes the refusal path). Returns 0 when it stays too large (a long MoE model). */
static int shrink(ps_problem *pb)
{
    if (ps_problem_get_int(pb, PS_PARAM_PP) > 4)
        ps_problem_set_int(pb, PS_PARAM_PP, 4);
    if (ps_problem_get_int(pb, PS_PARAM_VPP) > 2)
        ps_problem_set_int(pb, PS_PARAM_VPP, 2);
    if (ps_problem_get_int(pb, PS_PARAM_MICROBATCHES) > 8)
        ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 8);
    return small(pb);
}

/* Allocations made up to the end of the last load_once's load. */
static long load_calls;

/* One load on a fresh problem with allocator state a. Returns the load's code. */
static int load_once(const char *text, size_t len, fz_alloc *a, int pipeline)
{
    ps_allocator al = fz_allocator(a);
    ps_problem *pb = NULL;
    int rc = ps_problem_new(&pb, &al);
    if (rc) {
        FZ_CHECK(rc == PS_ENOMEM && a->failed, "ps_problem_new: %s", ps_err_name(rc));
        return rc;
    }
    snapshot before, after;
    take(pb, &before);
    rc = ps_problem_load_json(pb, text, len);
    load_calls = a->calls;
    take(pb, &after);
    if (rc) {
        FZ_CHECK(rc == PS_EPARSE || rc == PS_ECONFIG || rc == PS_ENOMEM || rc == PS_ERANGE ||
                     rc == PS_ENOTFOUND,
                 "load_json returned %s", ps_err_name(rc));
        FZ_CHECK(ps_problem_last_error(pb)[0], "load_json failed with %s and no message",
                 ps_err_name(rc));
        FZ_CHECK(same(&before, &after), "a refused configuration (%s: %s) changed the problem",
                 ps_err_name(rc), ps_problem_last_error(pb));
    } else if (!a->failed) {
        /* Loading the same file again over its own result must succeed and change nothing. */
        int again = ps_problem_load_json(pb, text, len);
        if (!(again == PS_ENOMEM && a->failed)) {
            FZ_CHECK(again == 0, "a configuration accepted once is refused over itself: %s: %s",
                     ps_err_name(again), ps_problem_last_error(pb));
            snapshot twice;
            take(pb, &twice);
            FZ_CHECK(same(&after, &twice), "loading a configuration twice changed the problem");
        }
        if (pipeline && (small(pb) || shrink(pb)))
            fz_check_pipeline(pb, a);
    }
    ps_problem_free(pb);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fz_exact_copy(data, size);
    fz_alloc a = {0};
    load_once(text, size, &a, 1);
    fz_alloc_check_empty(&a, "config load");

    /* The same load again, failing one of its allocations (which one: from the input). */
    long n = load_calls;
    if (n > 0) {
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < size; i++)
            h = (h ^ data[i]) * 16777619u;
        fz_alloc b = {0};
        b.fail_at = 1 + (long)(h % (uint32_t)n);
        load_once(text, size, &b, 0);
        fz_alloc_check_empty(&b, "config load with a failed allocation");
    }
    free(text);
    return 0;
}
