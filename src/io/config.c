/*
 * ps_problem_load_json(): the JSON configuration of a problem (docs/config.md). The text is
 * parsed with cJSON; every key is checked once against its declaration and staged, every
 * problem reported (config.h tells the phases); only a config without errors is applied, through
 * the ps_problem_set_* functions, and a setter failure undoes what was applied, so that a
 * failing load leaves the problem exactly as it was.
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

/* Larger texts are refused before parsing: no real config comes close. */
#define CONFIG_MAX_BYTES ((size_t)64 << 20)
/* Bytes of the input quoted after "near" in a parse error. */

/* ---- parse errors -------------------------------------------------------------------------- */

/* ---- checking ------------------------------------------------------------------------------ */

/* An empty staging struct for pb: "memory" merges into pb's current memory model. */
static void stage_init(ps__cfg_staged *st, const ps_problem *pb)
{
    memset(st, 0, sizeof *st);
    st->base_mem = pb->mem;
}

/* Frees the arrays staged through pb's allocator. */
static void stage_free(ps__cfg_staged *st, const ps_allocator *al)
{
    ps__free(al, st->stage_costs.v, st->stage_costs.n, sizeof(ps_fbw));
    ps__free(al, st->stage_mem.v, st->stage_mem.n, sizeof(ps_fbw));
    ps__free(al, st->mb_weights.v, st->mb_weights.n, sizeof(double));
    ps__free(al, st->in.stage_layers.v, st->in.stage_layers.n, sizeof(int32_t));
}

/*
 * Writes the message of a failed check into pb->err: the items, then, for each object where an
 * unknown key had no close match, the keys accepted there.
 */
static int report(ps_problem *pb, const ps__json_diag *d, unsigned unsuggested)
{
    ps__json_diag_render(d, pb->err);
    for (int id = 0; id < PS__CFG_OBJECT_COUNT; id++) {
        if (!(unsuggested & (1u << id)))
            continue;
        ps__adderr(pb->err, ". Known keys of %s:", ps__cfg_objects[id].path);
        const char *k;
        for (size_t i = 0; (k = ps__cfg_key_name(&id, i)) != NULL; i++)
            ps__adderr(pb->err, "%s %s", i ? "," : "", k);
    }
    return PS_ECONFIG;
}

/* ---- applying ------------------------------------------------------------------------------ */

/* Hands a staged array of {"f","b","w"} entries to set (the per-stage costs or memory setter),
 * which copies it; key names it in the out-of-memory message. */
static int apply_stage_array(ps_problem *pb, const ps__cfg_array *arr, const char *key,
                             int (*set)(ps_problem *, const ps_fbw *, size_t))
{
    int rc = set(pb, arr->v, arr->n);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.%s: out of memory for %zu entries", key, arr->n);
    return rc;
}

static int apply_weights(ps_problem *pb, const ps__cfg_array *arr)
{
    int rc = ps_problem_set_microbatch_weights(pb, arr->v, arr->n);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.microbatch_weights: out of memory for %zu entries", arr->n);
    return rc;
}

static int apply_stage_layers(ps_problem *pb, const ps__cfg_staged *st)
{
    int rc = ps_problem_set_stage_layers(pb, st->stage_layers, st->n_stage_layers);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.moe.stage_layers: out of memory for %zu entries",
                   st->n_stage_layers);
    return rc;
}

/* The steps that cannot allocate, in a fixed order. */
static int apply_scalars(ps_problem *pb, const ps__cfg_staged *st)
{
    int rc;
    if (st->schedule && (rc = ps_problem_set_schedule(pb, st->schedule)) != 0)
        return rc;
    for (int p = 0; p < PS__CFG_N_PARAMS; p++)
        if (st->int_st[p] == PS__CFG_OK &&
            (rc = ps_problem_set_int(pb, (ps_param)p, st->ints[p])) != 0)
            return rc;
    for (int k = 0; k < 5; k++)
        if (st->cost_st[k] == PS__CFG_OK &&
            (rc = ps_problem_set_cost(pb, (ps_cost)k, st->costs[k])) != 0)
            return rc;
    if (st->has_mem && (rc = ps_problem_set_memory(pb, st->mem.f, st->mem.b, st->mem.w)) != 0)
        return rc;
    if (st->limit_st == PS__CFG_OK && (rc = ps_problem_set_mem_limit(pb, st->limit)) != 0)
        return rc;
    if (st->has_moe) {
        if ((rc = ps_problem_set_moe(pb, &st->moe)) != 0)
            return rc;
        /* ps_problem_set_moe() forgets the estimate of an earlier derivation; a derived model
         * keeps the one it was derived with, as ps_problem_set_moe_dims() does (the overrides
         * do not change it: it describes the all-to-all algorithm and volumes). */
        if (st->has_a2a) {
            pb->a2a = st->a2a;
            pb->has_a2a = 1;
        }
    }
    return 0;
}

/*
 * Applies checked values through the setters. Four setters allocate (the per-stage costs, the
 * per-stage memory, the micro-batch weights and the MoE model's layers per stage), so a later one
 * can fail after an earlier one has succeeded; the scalar setters (the MoE model among them) should
 * not fail on values that passed the same checks, but are not trusted to. The load is made atomic
 * by undoing rather than by ordering: the arrays being replaced are detached from pb before their
 * setters run (so the setters do not free them) and the scalars are saved. On any failure the new
 * arrays are freed and the old ones and the scalars put back, which needs no allocation and so
 * cannot fail itself; on success the old arrays are freed.
 */
static int apply(ps_problem *pb, const ps__cfg_staged *st)
{
    bool costs = st->stage_costs_st == PS__CFG_OK, mem = st->stage_mem_st == PS__CFG_OK;
    bool weights = st->mb_weights_st == PS__CFG_OK;
    ps_problem saved = *pb; /* the scalars, the MoE model and the old arrays; err is not restored */
    if (costs) {
        pb->stage_costs = NULL;
        pb->n_stage_costs = 0;
    }
    if (mem) {
        pb->stage_mem = NULL;
        pb->n_stage_mem = 0;
    }
    if (st->has_moe) {
        pb->stage_layers = NULL;
        pb->n_stage_layers = 0;
    }
    if (weights) {
        pb->mb_weights = NULL;
        pb->n_mb_weights = 0;
    }
    int rc = 0;
    if (costs)
        rc = apply_stage_array(pb, &st->stage_costs, "stage_costs", ps_problem_set_stage_costs);
    if (!rc && mem)
        rc = apply_stage_array(pb, &st->stage_mem, "stage_memory", ps_problem_set_stage_memory);
    if (!rc && st->has_moe)
        rc = apply_stage_layers(pb, st);
    if (!rc && weights)
        rc = apply_weights(pb, &st->mb_weights);
    if (!rc)
        rc = apply_scalars(pb, st);
    if (rc) {
        if (costs)
            ps__free(&pb->al, pb->stage_costs, pb->n_stage_costs, sizeof *pb->stage_costs);
        if (mem)
            ps__free(&pb->al, pb->stage_mem, pb->n_stage_mem, sizeof *pb->stage_mem);
        if (st->has_moe)
            ps__free(&pb->al, pb->stage_layers, pb->n_stage_layers, sizeof *pb->stage_layers);
        if (weights)
            ps__free(&pb->al, pb->mb_weights, pb->n_mb_weights, sizeof *pb->mb_weights);
        memcpy(saved.err, pb->err, sizeof saved.err);
        *pb = saved;
        return rc;
    }
    if (costs)
        ps__free(&pb->al, saved.stage_costs, saved.n_stage_costs, sizeof *saved.stage_costs);
    if (mem)
        ps__free(&pb->al, saved.stage_mem, saved.n_stage_mem, sizeof *saved.stage_mem);
    if (st->has_moe)
        ps__free(&pb->al, saved.stage_layers, saved.n_stage_layers, sizeof *saved.stage_layers);
    if (weights)
        ps__free(&pb->al, saved.mb_weights, saved.n_mb_weights, sizeof *saved.mb_weights);
    return 0;
}

/* ---- the entry point ----------------------------------------------------------------------- */

/* Checks the parsed root object and, when nothing is wrong, applies it. */
static int check_and_apply(ps_problem *pb, const cJSON *root)
{
    ps__json_diag d;
    ps__cfg_staged st;
    ps__json_diag_init(&d);
    stage_init(&st, pb);
    ps__cfg_ctx c = {&d, &st, &pb->al, 0};
    ps__cfg_check_object(&c, PS__CFG_ROOT, "$", root, &st);
    ps__cfg_moe_combine(&c);
    int rc;
    if (d.errors)
        rc = report(pb, &d, c.unsuggested);
    else if (st.oom)
        rc = ps__seterr(pb->err, PS_ENOMEM, "%s: out of memory for %zu entries", st.oom_path,
                        st.oom_n);
    else
        rc = apply(pb, &st);
    stage_free(&st, &pb->al);
    return rc;
}

int ps_problem_load_json(ps_problem *pb, const char *text, size_t len)
{
    if (!pb)
        return PS_EINVAL;
    if (!text)
        return ps__seterr(pb->err, PS_EINVAL, "invalid argument: NULL config text");
    if (len > CONFIG_MAX_BYTES)
        return ps__seterr(pb->err, PS_ERANGE, "config is %zu bytes; the limit is %zu (64 MiB)", len,
                          CONFIG_MAX_BYTES);
    cJSON *root = NULL;
    int rc = ps__json_parse(text, len, &root, pb->err);
    if (rc)
        goto out;
    if (!cJSON_IsObject(root)) {
        char got[PS__JSON_ITEM_LEN / 2];
        ps__json_describe(got, sizeof got, root);
        rc = ps__seterr(pb->err, PS_ECONFIG, "$: expected an object, got %s", got);
        goto out;
    }
    rc = check_and_apply(pb, root);
out:
    cJSON_Delete(root);
    return rc;
}
