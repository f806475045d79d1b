/*
 * Structured target: the bytes choose a family (every registered one, by name or alias),
 * sizes, the family's options, costs (0, subnormals, 1e300, NaN, ...), per-stage costs,
 * memory deltas and limits, a MoE model, and an allocation to fail; pipeline.c then checks
 * generate, validate, simulate, every export and lowering, and the allocator checks that every
 * free names its size and that nothing is left.
 *
 * Sizes stay small (pp <= 8, vpp <= 4, m <= 48, MoE layers <= 8) so that an input runs in
 * milliseconds; the families' loops do not change shape beyond them.
 * SPDX-License-Identifier: MIT
 */
#include "pipeline.h"

/* Sets a problem parameter; a refused value must come with a message and leave the old one. */
static void set_int(ps_problem *pb, ps_param which, long long v)
{
    long long before = ps_problem_get_int(pb, which);
    int rc = ps_problem_set_int(pb, which, v);
    if (rc) {
        FZ_CHECK(rc == PS_ERANGE || rc == PS_EINVAL, "set_int(%d, %lld): %s", (int)which, v,
                 ps_err_name(rc));
        FZ_CHECK(ps_problem_get_int(pb, which) == before, "refused set_int(%d) changed the value",
                 (int)which);
    }
}

static void set_cost(ps_problem *pb, ps_cost which, double v)
{
    int rc = ps_problem_set_cost(pb, which, v);
    int ok = isfinite(v) && v <= PS_MAX_COST && (v >= 0 || which == PS_COST_FB);
    FZ_CHECK(ok || rc != 0, "set_cost(%d, %g) accepted a value outside the contract", (int)which,
             v);
    if (rc == 0 && v >= 0)
        FZ_CHECK(ps_problem_get_cost(pb, which) == v, "set_cost(%d, %g) reads back %g", (int)which,
                 v, ps_problem_get_cost(pb, which));
}

static int name_count(const char *aliases)
{
    int n = 1;
    for (const char *c = aliases; *c; c++)
        n += *c == ',';
    return n;
}

/* The family's canonical name or one of its aliases, into buf. */
static void family_name(fz_reader *r, char *buf, size_t cap)
{
    ps_family_info info;
    size_t nfam = ps_family_count();
    FZ_CHECK(ps_family_get(fz_u8(r) % nfam, &info) == 0, "ps_family_get failed");
    int pick = (int)(fz_u8(r) % (unsigned)(name_count(info.aliases) + 1));
    const char *name = info.name;
    size_t len = strlen(name);
    if (pick > 0) { /* alias pick - 1 */
        const char *a = info.aliases;
        for (int i = 1; i < pick; i++)
            a = strchr(a, ',') + 1;
        const char *e = strchr(a, ',');
        name = a;
        len = e ? (size_t)(e - a) : strlen(a);
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
}

static void set_stage_fbw(fz_reader *r, ps_problem *pb, int memory)
{
    ps_fbw v[40];
    size_t n = (size_t)fz_range(r, 0, 40);
    for (size_t i = 0; i < n; i++) {
        v[i].f = fz_number(r);
        if (memory && fz_u8(r) % 4) { /* mostly tables that sum to 0 */
            v[i].b = -v[i].f / 2;
            v[i].w = -v[i].f / 2;
        } else {
            v[i].b = fz_number(r);
            v[i].w = fz_number(r);
        }
    }
    int rc = memory ? ps_problem_set_stage_memory(pb, v, n) : ps_problem_set_stage_costs(pb, v, n);
    if (rc)
        FZ_CHECK(ps_problem_last_error(pb)[0], "a refused per-stage table left no message");
}

static void set_moe(fz_reader *r, ps_problem *pb)
{
    ps_moe_model m;
    memset(&m, 0, sizeof m);
    m.layers = (int32_t)fz_range(r, 1, 8);
    m.dense_layers = (int32_t)fz_range(r, 0, m.layers);
    for (int i = 0; i < PS_OP_LAYER_COUNT; i++) {
        m.moe.t[i] = fz_number(r);
        m.dense.t[i] = ps_op_is_comm(i) ? 0 : fz_number(r);
    }
    if (fz_u8(r) & 1)
        m.p2p = fz_number(r);
    if (fz_u8(r) & 1)
        m.slowdown = fz_number(r);
    m.planner = (int32_t)fz_range(r, -1, 4);
    int rc = ps_problem_set_moe(pb, &m);
    if (rc) {
        FZ_CHECK(ps_problem_last_error(pb)[0], "a refused MoE model left no message");
        return;
    }
    if (fz_u8(r) % 4 == 0) { /* an explicit split of the layers over the model stages */
        int32_t layers[16];
        size_t n = (size_t)fz_range(r, 1, 16);
        for (size_t i = 0; i < n; i++)
            layers[i] = (int32_t)fz_range(r, -1, 8);
        if (ps_problem_set_stage_layers(pb, layers, n))
            FZ_CHECK(ps_problem_last_error(pb)[0], "refused stage layers left no message");
    }
}

/* Builds the problem from the bytes. */
static void build(fz_reader *r, ps_problem *pb)
{
    char name[64];
    family_name(r, name, sizeof name);
    FZ_CHECK(ps_problem_set_schedule(pb, name) == 0, "family name %s not found", name);

    set_int(pb, PS_PARAM_PP, fz_range(r, 1, 8));
    set_int(pb, PS_PARAM_VPP, fz_range(r, 0, 4));
    set_int(pb, PS_PARAM_MICROBATCHES, fz_range(r, 1, fz_u8(r) % 4 ? 16 : 48));
    unsigned opts = fz_u8(r);
    if (opts & 1)
        set_int(pb, PS_PARAM_GROUP_SIZE, fz_range(r, -1, 20));
    if (opts & 2)
        set_int(pb, PS_PARAM_EXTRA_WARMUP, fz_range(r, -2, 6));
    if (opts & 4)
        set_int(pb, PS_PARAM_SPLIT_BACKWARD, fz_range(r, -1, 2));
    if (opts & 8) { /* the scalar costs */
        for (int c = PS_COST_F; c <= PS_COST_FB; c++)
            if (fz_u8(r) & 1)
                set_cost(pb, (ps_cost)c, fz_number(r));
    }
    if (opts & 16)
        set_stage_fbw(r, pb, 0);
    if (opts & 32) { /* memory model and limit */
        double f = fz_number(r);
        double b = fz_u8(r) % 4 ? -f / 2 : fz_number(r);
        double w = fz_u8(r) % 4 ? -f / 2 : fz_number(r);
        if (ps_problem_set_memory(pb, f, b, w))
            FZ_CHECK(ps_problem_last_error(pb)[0], "a refused memory model left no message");
        if (fz_u8(r) & 1)
            set_stage_fbw(r, pb, 1);
        double limit = fz_u8(r) & 1 ? fz_range(r, 0, 64) / 2.0 : fz_number(r);
        int rc = ps_problem_set_mem_limit(pb, limit);
        FZ_CHECK(rc != 0 || (isfinite(limit) && limit >= 0), "set_mem_limit accepted %g", limit);
    }
    if (opts & 64)
        set_moe(r, pb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    fz_alloc a = {0};
    unsigned inject = fz_u8(&r);
    if (inject % 8 == 0) /* fail one allocation of the pipeline */
        a.fail_at = 1 + (long)fz_u16(&r) % 400;
    ps_allocator al = fz_allocator(&a);
    ps_problem *pb = NULL;
    int rc = ps_problem_new(&pb, &al);
    if (rc) {
        FZ_CHECK(rc == PS_ENOMEM && a.failed, "ps_problem_new: %s", ps_err_name(rc));
        fz_alloc_check_empty(&a, "ps_problem_new");
        return 0;
    }
    build(&r, pb);
    fz_check_pipeline(pb, &a);
    ps_problem_free(pb);
    fz_alloc_check_empty(&a, "schedule target");
    return 0;
}
