/*
 * The MoE blocks of a config ("model", "cluster", "moe"), which describe one MoE model
 * together. Each block's keys are checked by their declarations like any other object; what is
 * here relates the blocks, which may come in any order, so it runs after the whole root was
 * read (ps__cfg_moe_combine). The durations are derived (ps_moe_derive) or given, merged and
 * checked at that point, so that a derivation failure is one more reported item and applying
 * cannot meet a new error.
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <math.h>
#include <string.h>

bool ps__cfg_check_model(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                         void *target)
{
    ps__cfg_moe_in *in = &((ps__cfg_staged *)target)->in;
    in->model_seen = true;
    in->model_ok = ps__cfg_check_object(c, k->object, path, it, target);
    return in->model_ok;
}

bool ps__cfg_check_cluster(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                           void *target)
{
    ps__cfg_moe_in *in = &((ps__cfg_staged *)target)->in;
    in->cluster_seen = true;
    in->cluster_ok = ps__cfg_check_object(c, k->object, path, it, target);
    return in->cluster_ok;
}

bool ps__cfg_check_moe(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                       void *target)
{
    ps__cfg_moe_in *in = &((ps__cfg_staged *)target)->in;
    in->moe_seen = true;
    in->moe_object = cJSON_IsObject(it);
    return ps__cfg_check_object(c, k->object, path, it, target);
}

static bool ok(ps__cfg_state s)
{
    return s == PS__CFG_OK;
}

/* With "model" or "cluster": both blocks are needed, and the layer counts are the model's. */
static void require_derived_blocks(ps__json_diag *d, const ps__cfg_moe_in *in)
{
    if (!in->cluster_seen)
        ps__json_error(d, "$.cluster",
                       "required key missing (\"model\" is given, and the durations are derived "
                       "from both)");
    if (!in->model_seen)
        ps__json_error(d, "$.model",
                       "required key missing (\"cluster\" is given, and the durations are derived "
                       "from both)");
    if (in->layers_st != PS__CFG_ABSENT)
        ps__json_error(d, "$.moe.layers",
                       "not allowed with \"model\" (the layer count is $.model.layers)");
    if (in->dense_layers_st != PS__CFG_ABSENT)
        ps__json_error(d, "$.moe.dense_layers",
                       "not allowed with \"model\" (the dense layer count is "
                       "$.model.dense_layers)");
}

/*
 * Derives the durations from valid "model" and "cluster" blocks into *m and *info. Returns
 * whether the inputs were valid and the derivation succeeded; its failure is reported under
 * "$.model", since no key of the config holds the value it refused.
 */
static bool derive(ps__json_diag *d, const ps__cfg_moe_in *in, ps_moe_model *m, ps_a2a_info *info)
{
    if (!in->model_ok || !in->cluster_ok || in->a2a_st == PS__CFG_BAD)
        return false;
    char err[512] = "";
    int a2a = ok(in->a2a_st) ? in->a2a : PS_A2A_AUTO;
    int rc = ps_moe_derive(&in->dims, &in->cluster, a2a, m, info, err, sizeof err);
    if (rc) {
        ps__json_error(d, "$.model", "%s", err[0] ? err : ps_strerror(rc));
        return false;
    }
    m->layers = in->dims.layers;
    m->dense_layers = in->dims.dense_layers;
    return true;
}

/* Without "model" and "cluster": "moe" gives the durations and the layer counts. */
static void require_direct_keys(ps__json_diag *d, const ps__cfg_moe_in *in)
{
    if (in->moe_object && in->layer_st == PS__CFG_ABSENT)
        ps__json_error(d, "$.moe.layer",
                       "required key missing (without \"model\" and \"cluster\", the durations "
                       "are given here)");
    if (in->moe_object && in->layers_st == PS__CFG_ABSENT)
        ps__json_error(d, "$.moe.layers",
                       "required key missing (without \"model\", the layer count is given here)");
    if (ok(in->a2a_st))
        ps__json_error(d, "$.moe.a2a",
                       "applies only to durations derived from \"model\" and \"cluster\"");
}

/* "moe.stage_layers" must add up to the model's layer count (layers; < 1 when unknown). */
static void check_stage_layer_sum(ps__json_diag *d, const ps__cfg_moe_in *in, long long layers)
{
    const ps__cfg_array *sl = &in->stage_layers;
    if (layers > 0 && ok(in->stage_layers_st) && sl->n > 0 && sl->sum != layers)
        ps__json_error(d, "$.moe.stage_layers",
                       "the entries sum to %lld, but the model has %lld layers", sl->sum, layers);
}

/* The durations, p2p, slowdown and planner that "moe" gives, over the derived values or zeros. */
static void override(const ps__cfg_moe_in *in, ps_moe_model *m)
{
    for (int dense = 0; dense < 2; dense++)
        for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
            if (ok(in->op_st[dense][k]))
                (dense ? &m->dense : &m->moe)->t[k] = in->op[dense][k];
    if (ok(in->p2p_st))
        m->p2p = in->p2p;
    if (ok(in->slowdown_st))
        m->slowdown = in->slowdown;
    if (ok(in->planner_st))
        m->planner = in->planner;
}

/*
 * Checks a derived model against the rules of ps_problem_set_moe(), for the values the config
 * did not override (those were checked as they were read). A derivation that broke them is
 * reported under "$.model", since no key of the config holds the bad value.
 */
static void check_derived(ps__json_diag *d, const ps__cfg_moe_in *in, const ps_moe_model *m)
{
    for (int dense = 0; dense < 2; dense++) {
        const ps_layer_cost *lc = dense ? &m->dense : &m->moe;
        const char *name = dense ? "dense_layer" : "layer";
        for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
            double v = lc->t[k];
            if (ok(in->op_st[dense][k]))
                continue;
            if (!isfinite(v) || v < 0 || v > PS_MAX_COST)
                ps__json_error(d, "$.model", "the derived duration %s.%s is %g, outside [0, %g]",
                               name, ps_op_name(k), v, PS_MAX_COST);
            else if (dense && ps_op_is_comm(k) && v > 0)
                ps__json_error(d, "$.model",
                               "the derived duration dense_layer.%s is %g; a dense layer has no "
                               "all-to-all",
                               ps_op_name(k), v);
        }
    }
    if (!ok(in->p2p_st) && !(isfinite(m->p2p) && m->p2p >= 0 && m->p2p <= PS_MAX_COST))
        ps__json_error(d, "$.model", "the derived p2p is %g, outside [0, %g]", m->p2p, PS_MAX_COST);
    if (!ok(in->slowdown_st) &&
        !(isfinite(m->slowdown) && m->slowdown >= 0 && m->slowdown <= PS__CFG_MAX_SLOWDOWN))
        ps__json_error(d, "$.model", "the derived slowdown is %g, outside [0, %d]", m->slowdown,
                       PS__CFG_MAX_SLOWDOWN);
    if (!ok(in->planner_st) && (m->planner < PS_PLANNER_ADAPTIVE || m->planner > PS_PLANNER_SERIAL))
        ps__json_error(d, "$.model", "the derivation chose an unknown planner %d", (int)m->planner);
}

/*
 * Combines the three blocks into one model. With "model" and "cluster" the durations are
 * derived, then overridden by the keys of "moe.layer" and "moe.dense_layer"; without them "moe"
 * gives the durations. The result is staged only when the whole config is free of errors: it is
 * applied only then.
 */
void ps__cfg_moe_combine(ps__cfg_ctx *c)
{
    ps__cfg_staged *st = c->st;
    const ps__cfg_moe_in *in = &st->in;
    bool derived = in->model_seen || in->cluster_seen;
    if (!derived && !in->moe_seen)
        return;
    ps_moe_model m;
    ps_a2a_info info;
    memset(&m, 0, sizeof m);
    memset(&info, 0, sizeof info);
    long long layers = -1; /* the model's layer count, once known to be valid */
    bool inputs_ok;
    if (derived) {
        require_derived_blocks(c->d, in);
        if (in->model_ok)
            layers = in->dims.layers;
        inputs_ok = derive(c->d, in, &m, &info);
    } else {
        require_direct_keys(c->d, in);
        if (ok(in->layers_st))
            layers = in->layers;
        m.layers = (int32_t)in->layers;
        m.dense_layers = ok(in->dense_layers_st) ? (int32_t)in->dense_layers : 0;
        inputs_ok = in->moe_object;
    }
    check_stage_layer_sum(c->d, in, layers);
    override(in, &m);
    if (derived && inputs_ok)
        check_derived(c->d, in, &m);

    if (c->d->errors)
        return;
    st->has_moe = true;
    st->moe = m;
    st->has_a2a = derived;
    st->a2a = info;
    st->stage_layers = ok(in->stage_layers_st) ? in->stage_layers.v : NULL;
    st->n_stage_layers = ok(in->stage_layers_st) ? in->stage_layers.n : 0;
}
