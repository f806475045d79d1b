/*
 * The model's layers over the pipeline's model stages, and what the planner makes of a stage.
 *
 * A problem either lists the layer count of every model stage (stage_layers, checked against
 * the schedule's stage count here, since only the schedule knows it) or splits the layers
 * evenly, the stages with one layer fewer first. Callers that visit every stage in order walk
 * with ps__stage_next(), which is O(1) per stage with explicit counts too (where
 * ps__stage_layer_range() sums the counts before the stage).
 *
 * ps__moe_stage_fbw() gives zb-auto its per-stage F, I and W durations by planning each
 * stage's chunks alone; a stage of the same composition (layer and dense-layer counts) as the
 * one before reuses its plans, so an even split costs a few plans, not one per stage. The
 * problem's per-stage extras are added last, as the simulator adds them, so that zb-auto plans
 * with the durations the simulation will use.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

/* First layer and layer count of model stage `stage` of `stages`. */
void ps__stage_layer_range(const ps_problem *pb, int32_t stages, int32_t stage, int32_t *l0,
                           int32_t *n)
{
    if (pb->n_stage_layers) {
        int32_t a = 0;
        for (int32_t s = 0; s < stage; s++)
            a += pb->stage_layers[s];
        *l0 = a;
        *n = pb->stage_layers[stage];
        return;
    }
    int32_t L = pb->moe.layers, q = L / stages, r = L % stages;
    int32_t few = stages - r; /* stages with q layers come first */
    *l0 = stage * q + (stage > few ? stage - few : 0);
    *n = q + (stage >= few);
}

void ps__stage_next(const ps_problem *pb, int32_t ms, int32_t st, int32_t *l0, int32_t *n,
                    int32_t *nd)
{
    if (pb->n_stage_layers) { /* explicit counts: the first layers add up */
        *l0 += *n;
        *n = pb->stage_layers[st];
    } else {
        ps__stage_layer_range(pb, ms, st, l0, n);
    }
    int32_t d = pb->moe.dense_layers - *l0;
    *nd = d < 0 ? 0 : (d > *n ? *n : d);
}

/* Checks pb's stage_layers against the number of model stages. */
int ps__check_stage_layers(const ps_problem *pb, int32_t stages, char *err)
{
    if (!pb->n_stage_layers)
        return 0;
    if (pb->n_stage_layers != (size_t)stages)
        return ps__seterr(err, PS_ECONFIG,
                          "stage_layers has %zu entries but the schedule has %d model stages",
                          pb->n_stage_layers, stages);
    long long sum = 0;
    for (size_t i = 0; i < pb->n_stage_layers; i++)
        sum += pb->stage_layers[i];
    if (sum != pb->moe.layers)
        return ps__seterr(err, PS_ECONFIG, "stage_layers sums to %lld layers but the model has %d",
                          sum, (int)pb->moe.layers);
    return 0;
}

int ps_problem_stage_split(const ps_problem *pb, int stages, int32_t *first, int32_t *count,
                           int32_t *dense)
{
    if (!pb || stages < 1 || stages > PS_MAX_STAGES || !first || !count || !dense)
        return PS_EINVAL;
    if (!pb->has_moe)
        return PS_ENOTFOUND;
    char err[PS__ERRLEN];
    int rc = ps__check_stage_layers(pb, stages, err);
    if (rc)
        return rc;
    int32_t l0 = 0, n = 0, nd;
    for (int32_t st = 0; st < stages; st++) {
        ps__stage_next(pb, stages, st, &l0, &n, &nd);
        first[st] = l0;
        count[st] = n;
        dense[st] = nd;
    }
    return 0;
}

/* Plans the F (forward), I (backward without dW) and W (dW alone) of layers [l0, l0+n) into
 * *out. */
static int plan_fiw(ps_plan *pl, const ps_moe_model *m, int32_t l0, int32_t n, ps_stage_cost *out,
                    char *err)
{
    double *v[3] = {&out->f, &out->b, &out->w};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        rc = k == 0 ? ps__plan_layers(pl, m, m->planner, l0, n, PS_B, 0, 0)
                    : ps__plan_layers(pl, m, m->planner, 0, 0, k == 1 ? PS_I : PS_W, l0, n);
        if (rc)
            ps__seterr(err, rc, "overlap planner: %s", ps_plan_last_error(pl));
        else
            *v[k] = ps__plan_stats(pl)->duration;
    }
    return rc;
}

/* Adds the problem's per-stage extras (the embedding, the output layer and the loss of the
 * performance model; ps__problem_set_moe_extra) to the planned parts, as the simulator does. */
static void add_extras(const ps_problem *pb, int32_t nstages, ps_stage_cost *out)
{
    for (int32_t s = 0; s < nstages && pb->n_moe_extra; s++) {
        out[s].f += pb->moe_extra[s].f;
        out[s].b += pb->moe_extra[s].b;
        out[s].w += pb->moe_extra[s].w;
    }
}

int ps__moe_stage_fbw(const ps_problem *pb, int32_t nstages, int32_t copies, ps_stage_cost *out,
                      char *err)
{
    int32_t ms = nstages / (copies > 0 ? copies : 1);
    int rc = ps__check_stage_layers(pb, ms, err);
    if (rc)
        return rc;
    if (pb->n_moe_extra && pb->n_moe_extra != (size_t)nstages)
        return ps__seterr(err, PS_ECONFIG,
                          "the MoE extra costs have %zu entr%s but the schedule has %d stages",
                          pb->n_moe_extra, pb->n_moe_extra == 1 ? "y" : "ies", (int)nstages);
    ps_plan *pl;
    if (ps_plan_new(&pl, &pb->al))
        return ps__seterr(err, PS_ENOMEM, "out of memory");
    int32_t pd = -1, pn = -1; /* previous stage's composition: reuse its plans */
    int32_t l0 = 0, n = 0, nd;
    for (int32_t s = 0; s < ms && !rc; s++) {
        ps__stage_next(pb, ms, s, &l0, &n, &nd);
        if (s > 0 && nd == pd && n == pn) {
            out[s] = out[s - 1];
            continue;
        }
        pd = nd;
        pn = n;
        rc = plan_fiw(pl, &pb->moe, l0, n, &out[s], err);
    }
    for (int32_t s = ms; s < nstages && !rc; s++)
        out[s] = out[s % ms];
    if (!rc) /* after the copies above, which must not carry one stage's extras to another */
        add_extras(pb, nstages, out);
    ps_plan_free(pl);
    return rc;
}
