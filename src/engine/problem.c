/*
 * The problem handle: schedule family, sizes and the cost model, with range checks at the
 * boundary so that every later stage can trust them.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ps_problem_new(ps_problem **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_problem *pb = ps__calloc(&al, 1, sizeof *pb);
    if (!pb)
        return PS_ENOMEM;
    pb->al = al;
    pb->family = ps_family_lookup("1f1b", NULL);
    pb->pp = 4;
    pb->vpp = 0;
    pb->m = 8;
    pb->group = 0;
    pb->cost[PS_COST_F] = pb->cost[PS_COST_B] = pb->cost[PS_COST_W] = 1.0;
    pb->cost[PS_COST_C] = 0.0;
    pb->cost[PS_COST_FB] = -1.0;
    pb->mem.f = 1.0;
    pb->mem.b = -0.5;
    pb->mem.w = -0.5;
    pb->extra_warmup = -1;
    *out = pb;
    return 0;
}

void ps_problem_free(ps_problem *pb)
{
    if (!pb)
        return;
    ps_allocator a = pb->al;
    ps__free(&a, pb->stage_costs, pb->n_stage_costs, sizeof *pb->stage_costs);
    ps__free(&a, pb->stage_mem, pb->n_stage_mem, sizeof *pb->stage_mem);
    ps__free(&a, pb->stage_layers, pb->n_stage_layers, sizeof *pb->stage_layers);
    ps__free(&a, pb->moe_extra, pb->n_moe_extra, sizeof *pb->moe_extra);
    ps__free(&a, pb->mb_weights, pb->n_mb_weights, sizeof *pb->mb_weights);
    ps__free(&a, pb, 1, sizeof *pb);
}

const char *ps_problem_last_error(const ps_problem *pb)
{
    return pb ? pb->err : "invalid argument: NULL problem";
}

int ps_problem_set_schedule(ps_problem *pb, const char *name)
{
    if (!pb || !name)
        return PS_EINVAL;
    int i = ps_family_lookup(name, NULL);
    if (i < 0)
        return ps__seterr(pb->err, PS_ENOTFOUND,
                          "unknown schedule \"%s\" (pipesched list shows the families)", name);
    pb->family = i;
    return 0;
}

const char *ps_problem_schedule(const ps_problem *pb)
{
    return pb ? ps__families[pb->family].name : NULL;
}

int ps_problem_set_int(ps_problem *pb, ps_param which, long long v)
{
    if (!pb)
        return PS_EINVAL;
    switch (which) {
    case PS_PARAM_PP:
        if (v < 1 || v > PS_MAX_PP)
            return ps__seterr(pb->err, PS_ERANGE, "pp must be in [1, %d]; got %lld", PS_MAX_PP, v);
        pb->pp = v;
        return 0;
    case PS_PARAM_VPP:
        if (v < 0 || v > PS_MAX_VPP)
            return ps__seterr(pb->err, PS_ERANGE,
                              "vpp must be in [1, %d] (0 = the family's default); got %lld",
                              PS_MAX_VPP, v);
        pb->vpp = v;
        return 0;
    case PS_PARAM_MICROBATCHES:
        if (v < 1 || v > PS_MAX_MICROBATCHES)
            return ps__seterr(pb->err, PS_ERANGE, "microbatches must be in [1, %d]; got %lld",
                              PS_MAX_MICROBATCHES, v);
        pb->m = v;
        return 0;
    case PS_PARAM_GROUP_SIZE:
        if (v < 0 || v > PS_MAX_MICROBATCHES)
            return ps__seterr(pb->err, PS_ERANGE,
                              "group_size must be in [0, %d] (0 = pp); got %lld",
                              PS_MAX_MICROBATCHES, v);
        pb->group = v;
        return 0;
    case PS_PARAM_EXTRA_WARMUP:
        if (v < -1 || v > PS_MAX_MICROBATCHES)
            return ps__seterr(pb->err, PS_ERANGE,
                              "extra_warmup must be in [0, %d] (-1 = the default 1); got %lld",
                              PS_MAX_MICROBATCHES, v);
        pb->extra_warmup = v;
        return 0;
    case PS_PARAM_SPLIT_BACKWARD:
        if (v != 0 && v != 1)
            return ps__seterr(pb->err, PS_ERANGE, "split_backward must be 0 or 1; got %lld", v);
        pb->split_bwd = (int)v;
        return 0;
    }
    return ps__seterr(pb->err, PS_EINVAL, "unknown parameter %d", (int)which);
}

long long ps_problem_get_int(const ps_problem *pb, ps_param which)
{
    if (!pb)
        return 0;
    switch (which) {
    case PS_PARAM_PP:
        return pb->pp;
    case PS_PARAM_VPP:
        return pb->vpp;
    case PS_PARAM_MICROBATCHES:
        return pb->m;
    case PS_PARAM_GROUP_SIZE:
        return pb->group;
    case PS_PARAM_EXTRA_WARMUP:
        return pb->extra_warmup;
    case PS_PARAM_SPLIT_BACKWARD:
        return pb->split_bwd;
    }
    return 0;
}

static const char *const cost_names[] = {"f", "b", "w", "c", "fb"};

int ps_problem_set_cost(ps_problem *pb, ps_cost which, double v)
{
    if (!pb)
        return PS_EINVAL;
    if ((unsigned)which > PS_COST_FB)
        return ps__seterr(pb->err, PS_EINVAL, "unknown cost %d", (int)which);
    if (which == PS_COST_FB && v < 0 && isfinite(v)) {
        pb->cost[which] = -1.0;
        return 0;
    }
    if (!isfinite(v) || v < 0 || v > PS_MAX_COST)
        return ps__seterr(pb->err, PS_ERANGE, "cost %s must be finite and in [0, %g]; got %g",
                          cost_names[which], PS_MAX_COST, v);
    pb->cost[which] = v;
    return 0;
}

double ps_problem_get_cost(const ps_problem *pb, ps_cost which)
{
    if (!pb || (unsigned)which > PS_COST_FB)
        return 0.0;
    return pb->cost[which];
}

/* Replaces the per-stage array *dst (of *dn entries) by a copy of src; n == 0 clears it. On
 * failure nothing changes. An array of the same length is overwritten in place: a caller that
 * sets its tables for every run (the estimate) allocates nothing. */
static int replace_stages(ps_problem *pb, ps_fbw **dst, size_t *dn, const ps_fbw *src, size_t n)
{
    if (n && n == *dn) {
        memmove(*dst, src, n * sizeof *src);
        return 0;
    }
    ps_fbw *copy = NULL;
    if (n) {
        copy = ps__alloc(&pb->al, n, sizeof *copy);
        if (!copy)
            return ps__seterr(pb->err, PS_ENOMEM, "out of memory");
        memcpy(copy, src, n * sizeof *copy);
    }
    ps__free(&pb->al, *dst, *dn, sizeof **dst);
    *dst = copy;
    *dn = n;
    return 0;
}

int ps_problem_set_stage_costs(ps_problem *pb, const ps_stage_cost *c, size_t n)
{
    if (!pb || (n && !c))
        return PS_EINVAL;
    if (n > PS_MAX_STAGES)
        return ps__seterr(pb->err, PS_ERANGE, "stage_costs has %zu entries; the limit is %d", n,
                          PS_MAX_STAGES);
    for (size_t i = 0; i < n; i++) {
        const double v[3] = {c[i].f, c[i].b, c[i].w};
        for (int k = 0; k < 3; k++)
            if (!isfinite(v[k]) || v[k] < 0 || v[k] > PS_MAX_COST)
                return ps__seterr(pb->err, PS_ERANGE,
                                  "stage_costs[%zu].%s must be finite and in [0, %g]; got %g", i,
                                  cost_names[k], PS_MAX_COST, v[k]);
    }
    return replace_stages(pb, &pb->stage_costs, &pb->n_stage_costs, c, n);
}

/* The performance model (src/model/) adds the work of a stage that is not a layer (embedding,
 * output layer, loss) to the planner's durations of a MoE model through this table; the public
 * stage_costs stay exclusive with a MoE model (both would give the layers' durations). */
int ps__problem_set_moe_extra(ps_problem *pb, const ps_stage_cost *c, size_t n)
{
    if (!pb || (n && !c))
        return PS_EINVAL;
    if (n > PS_MAX_STAGES)
        return ps__seterr(pb->err, PS_ERANGE, "moe extra costs have %zu entries; the limit is %d",
                          n, PS_MAX_STAGES);
    for (size_t i = 0; i < n; i++) {
        const double v[3] = {c[i].f, c[i].b, c[i].w};
        for (int k = 0; k < 3; k++)
            if (!isfinite(v[k]) || v[k] < 0 || v[k] > PS_MAX_COST)
                return ps__seterr(pb->err, PS_ERANGE,
                                  "moe extra cost [%zu].%s must be finite and in [0, %g]; got %g",
                                  i, cost_names[k], PS_MAX_COST, v[k]);
    }
    return replace_stages(pb, &pb->moe_extra, &pb->n_moe_extra, c, n);
}

size_t ps_problem_stage_costs(const ps_problem *pb, const ps_stage_cost **out)
{
    if (!pb)
        return 0;
    if (out)
        *out = pb->stage_costs;
    return pb->n_stage_costs;
}

/*
 * Parses "key=value,key=value" with keys from names[0..n): writes each value into val[k] and
 * sets set[k]. what names the option in messages ("costs", "memory"). Returns 0 or
 * PS_ECONFIG naming the key, column or value.
 */
static int parse_spec(ps_problem *pb, const char *what, const char *spec, int n, double *val,
                      int *set)
{
    const char *p = spec;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end)
            return ps__seterr(pb->err, PS_ECONFIG, "%s: expected key=value at column %d of \"%s\"",
                              what, (int)(p - spec) + 1, spec);
        int k;
        for (k = 0; k < n; k++)
            if ((size_t)(eq - p) == strlen(cost_names[k]) &&
                !strncmp(p, cost_names[k], (size_t)(eq - p)))
                break;
        if (k == n)
            return ps__seterr(
                pb->err, PS_ECONFIG, "%s: unknown key \"%.*s\" at column %d (known: %s)", what,
                (int)(eq - p), p, (int)(p - spec) + 1, n == 5 ? "f, b, w, c, fb" : "f, b, w");
        if (set[k])
            return ps__seterr(
                pb->err, PS_ECONFIG,
                "%s: duplicate key \"%s\" at column %d of \"%s\" (give each key once)", what,
                cost_names[k], (int)(p - spec) + 1, spec);
        char *num_end;
        errno = 0;
        double v = strtod(eq + 1, &num_end);
        if (num_end == eq + 1 || num_end != end || errno)
            return ps__seterr(pb->err, PS_ECONFIG, "%s: %s needs a number; got \"%.*s\"", what,
                              cost_names[k], (int)(end - eq - 1), eq + 1);
        val[k] = v;
        set[k] = 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int ps_problem_set_costs_string(ps_problem *pb, const char *spec)
{
    if (!pb || !spec)
        return PS_EINVAL;
    double val[5];
    int set[5] = {0};
    int rc = parse_spec(pb, "costs", spec, 5, val, set);
    if (rc)
        return rc;
    for (int k = 0; k < 5; k++)
        if (set[k] &&
            (!isfinite(val[k]) || (val[k] < 0 && k != PS_COST_FB) || val[k] > PS_MAX_COST))
            return ps__seterr(pb->err, PS_ECONFIG, "costs: %s must be in [0, %g]; got %g",
                              cost_names[k], PS_MAX_COST, val[k]);
    for (int k = 0; k < 5; k++)
        if (set[k])
            pb->cost[k] = (k == PS_COST_FB && val[k] < 0) ? -1.0 : val[k];
    return 0;
}

/* The name of a memory triple in messages: key, or key[idx] when idx >= 0. */
static const char *mem_name(char buf[48], const char *key, long idx)
{
    if (idx < 0)
        return key;
    snprintf(buf, 48, "%s[%ld]", key, idx);
    return buf;
}

/* Checks one memory triple, named key or key[idx] in the message ("memory",
 * "stage_memory[3]"); the name is formatted only for a message. */
static int check_mem(ps_problem *pb, const char *key, long idx, double f, double b, double w)
{
    const double v[3] = {f, b, w};
    double big = 0;
    char name[48];
    for (int k = 0; k < 3; k++) {
        if (!isfinite(v[k]) || fabs(v[k]) > PS_MAX_COST)
            return ps__seterr(pb->err, PS_ECONFIG, "%s.%s must be finite and in [-%g, %g]; got %g",
                              mem_name(name, key, idx), cost_names[k], PS_MAX_COST, PS_MAX_COST,
                              v[k]);
        if (fabs(v[k]) > big)
            big = fabs(v[k]);
    }
    if (fabs(f + b + w) > 1e-9 * big)
        return ps__seterr(pb->err, PS_ECONFIG,
                          "%s: f + b + w must be 0 (a micro-batch frees what its forward took); "
                          "got f=%g, b=%g, w=%g, sum %g (keys not given keep their values, "
                          "by default f=1, b=-0.5, w=-0.5)",
                          mem_name(name, key, idx), f, b, w, f + b + w);
    return 0;
}

int ps_problem_set_memory(ps_problem *pb, double mem_f, double mem_b, double mem_w)
{
    if (!pb)
        return PS_EINVAL;
    int rc = check_mem(pb, "memory", -1, mem_f, mem_b, mem_w);
    if (rc)
        return rc;
    pb->mem.f = mem_f;
    pb->mem.b = mem_b;
    pb->mem.w = mem_w;
    return 0;
}

int ps_problem_set_stage_memory(ps_problem *pb, const ps_stage_mem *m, size_t n)
{
    if (!pb || (n && !m))
        return PS_EINVAL;
    if (n > PS_MAX_STAGES)
        return ps__seterr(pb->err, PS_ERANGE, "stage_memory has %zu entries; the limit is %d", n,
                          PS_MAX_STAGES);
    for (size_t i = 0; i < n; i++) {
        int rc = check_mem(pb, "stage_memory", (long)i, m[i].f, m[i].b, m[i].w);
        if (rc)
            return rc;
    }
    return replace_stages(pb, &pb->stage_mem, &pb->n_stage_mem, m, n);
}

ps_stage_mem ps_problem_memory(const ps_problem *pb, int stage)
{
    ps_stage_mem none = {0, 0, 0};
    if (!pb)
        return none;
    if (pb->stage_mem && stage >= 0 && (size_t)stage < pb->n_stage_mem)
        return pb->stage_mem[stage];
    return pb->mem;
}

int ps_problem_set_mem_limit(ps_problem *pb, double limit)
{
    if (!pb)
        return PS_EINVAL;
    if (!isfinite(limit) || limit < 0 || limit > PS_MAX_COST)
        return ps__seterr(pb->err, PS_ERANGE, "mem_limit must be in [0, %g] (0 = none); got %g",
                          PS_MAX_COST, limit);
    pb->mem_limit = limit;
    return 0;
}

double ps_problem_mem_limit(const ps_problem *pb)
{
    return pb ? pb->mem_limit : 0.0;
}

int ps_problem_set_memory_string(ps_problem *pb, const char *spec)
{
    if (!pb || !spec)
        return PS_EINVAL;
    double v[3] = {pb->mem.f, pb->mem.b, pb->mem.w};
    int set[3] = {0};
    int rc = parse_spec(pb, "memory", spec, 3, v, set);
    if (rc)
        return rc;
    return ps_problem_set_memory(pb, v[0], v[1], v[2]);
}

/* ---- micro-batch weights -------------------------------------------------------------------- */

int ps_problem_set_microbatch_weights(ps_problem *pb, const double *w, size_t n)
{
    if (!pb || (n && !w))
        return PS_EINVAL;
    if (n > PS_MAX_MICROBATCHES)
        return ps__seterr(pb->err, PS_ERANGE,
                          "microbatch_weights has %zu entries; the limit is %d (one per "
                          "micro-batch)",
                          n, PS_MAX_MICROBATCHES);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]) || !(w[i] > 0) || w[i] > PS_MAX_COST)
            return ps__seterr(pb->err, PS_ERANGE,
                              "microbatch_weights[%zu] must be a finite number > 0 and <= %g; "
                              "got %g",
                              i, PS_MAX_COST, w[i]);
    if (n && n == pb->n_mb_weights) {
        memmove(pb->mb_weights, w, n * sizeof *w);
        return 0;
    }
    double *copy = NULL;
    if (n) {
        copy = ps__alloc(&pb->al, n, sizeof *copy);
        if (!copy)
            return ps__seterr(pb->err, PS_ENOMEM, "out of memory");
        memcpy(copy, w, n * sizeof *copy);
    }
    ps__free(&pb->al, pb->mb_weights, pb->n_mb_weights, sizeof *pb->mb_weights);
    pb->mb_weights = copy;
    pb->n_mb_weights = n;
    return 0;
}

size_t ps_problem_microbatch_weights(const ps_problem *pb, const double **out)
{
    if (!pb)
        return 0;
    if (out)
        *out = pb->mb_weights;
    return pb->n_mb_weights;
}

/* The entries of "w0,w1,...": their count, and each one parsed into w (when not NULL). */
static int parse_weights(ps_problem *pb, const char *spec, double *w, size_t *n)
{
    const char *p = spec;
    size_t i = 0;
    if (!*p)
        return ps__seterr(pb->err, PS_ECONFIG,
                          "microbatch weights: empty list; expected one positive number per "
                          "micro-batch, separated by commas (\"1,2,0.5\")");
    for (;; i++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        char *num_end;
        errno = 0;
        double v = strtod(p, &num_end);
        if (num_end == p || num_end != end || errno || !isfinite(v) || !(v > 0) || v > PS_MAX_COST)
            return ps__seterr(pb->err, PS_ECONFIG,
                              "microbatch weights: weight %zu (column %d) must be a finite "
                              "number > 0 and <= %g; got \"%.*s\"",
                              i, (int)(p - spec) + 1, PS_MAX_COST, (int)(end - p), p);
        if (w)
            w[i] = v;
        if (!*end)
            break;
        p = end + 1;
    }
    *n = i + 1;
    return 0;
}

int ps_problem_set_microbatch_weights_string(ps_problem *pb, const char *spec)
{
    if (!pb || !spec)
        return PS_EINVAL;
    size_t n;
    int rc = parse_weights(pb, spec, NULL, &n);
    if (rc)
        return rc;
    if (n > PS_MAX_MICROBATCHES)
        return ps__seterr(pb->err, PS_ERANGE,
                          "microbatch weights: %zu entries; the limit is %d (one per "
                          "micro-batch)",
                          n, PS_MAX_MICROBATCHES);
    double *w = ps__alloc(&pb->al, n, sizeof *w);
    if (!w)
        return ps__seterr(pb->err, PS_ENOMEM, "out of memory");
    parse_weights(pb, spec, w, &n);
    rc = ps_problem_set_microbatch_weights(pb, w, n);
    ps__free(&pb->al, w, n, sizeof *w);
    return rc;
}

/* ---- MoE model ------------------------------------------------------------------------------ */

int ps_problem_set_moe(ps_problem *pb, const ps_moe_model *m)
{
    if (!pb)
        return PS_EINVAL;
    if (!m) {
        pb->has_moe = pb->has_a2a = 0;
        return 0;
    }
    if (m->layers < 1 || m->layers > PS_MAX_LAYERS)
        return ps__seterr(pb->err, PS_ERANGE, "moe: layers must be in [1, %d]; got %d",
                          PS_MAX_LAYERS, (int)m->layers);
    if (m->dense_layers < 0 || m->dense_layers > m->layers)
        return ps__seterr(pb->err, PS_ERANGE,
                          "moe: dense_layers must be in [0, layers = %d]; got %d", (int)m->layers,
                          (int)m->dense_layers);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        const double v[2] = {m->moe.t[k], m->dense.t[k]};
        for (int d = 0; d < 2; d++)
            if (!isfinite(v[d]) || v[d] < 0 || v[d] > PS_MAX_COST)
                return ps__seterr(pb->err, PS_ERANGE,
                                  "moe: %s.%s must be finite and in [0, %g]; got %g",
                                  d ? "dense_layer" : "layer", ps_op_name(k), PS_MAX_COST, v[d]);
        if (ps_op_is_comm(k) && m->dense.t[k] > 0)
            return ps__seterr(pb->err, PS_ECONFIG,
                              "moe: a dense layer has no all-to-all; dense_layer.%s must be 0, "
                              "got %g",
                              ps_op_name(k), m->dense.t[k]);
    }
    if (!isfinite(m->p2p) || m->p2p < 0 || m->p2p > PS_MAX_COST)
        return ps__seterr(pb->err, PS_ERANGE, "moe: p2p must be finite and in [0, %g]; got %g",
                          PS_MAX_COST, m->p2p);
    if (!isfinite(m->slowdown) || m->slowdown < 0 || m->slowdown > 100)
        return ps__seterr(pb->err, PS_ERANGE,
                          "moe: slowdown must be finite and in [0, 100]; got %g", m->slowdown);
    if (m->planner < PS_PLANNER_ADAPTIVE || m->planner > PS_PLANNER_SERIAL)
        return ps__seterr(pb->err, PS_ERANGE, "moe: unknown planner %d", (int)m->planner);
    pb->moe = *m;
    pb->has_moe = 1;
    pb->has_a2a = 0;
    return 0;
}

int ps_problem_get_moe(const ps_problem *pb, ps_moe_model *out)
{
    if (!pb || !out)
        return PS_EINVAL;
    if (!pb->has_moe)
        return PS_ENOTFOUND;
    *out = pb->moe;
    return 0;
}

int ps_problem_set_stage_layers(ps_problem *pb, const int32_t *layers, size_t n)
{
    if (!pb || (n && !layers))
        return PS_EINVAL;
    if (n > PS_MAX_STAGES)
        return ps__seterr(pb->err, PS_ERANGE, "stage_layers has %zu entries; the limit is %d", n,
                          PS_MAX_STAGES);
    for (size_t i = 0; i < n; i++)
        if (layers[i] < 0 || layers[i] > PS_MAX_LAYERS)
            return ps__seterr(pb->err, PS_ERANGE, "stage_layers[%zu] must be in [0, %d]; got %d", i,
                              PS_MAX_LAYERS, (int)layers[i]);
    if (n && n == pb->n_stage_layers) { /* in place, as replace_stages() */
        memmove(pb->stage_layers, layers, n * sizeof *layers);
        return 0;
    }
    int32_t *copy = NULL;
    if (n) {
        copy = ps__alloc(&pb->al, n, sizeof *copy);
        if (!copy)
            return ps__seterr(pb->err, PS_ENOMEM, "out of memory");
        memcpy(copy, layers, n * sizeof *copy);
    }
    ps__free(&pb->al, pb->stage_layers, pb->n_stage_layers, sizeof *pb->stage_layers);
    pb->stage_layers = copy;
    pb->n_stage_layers = n;
    return 0;
}

int ps_problem_set_moe_dims(ps_problem *pb, const ps_model_dims *model, const ps_cluster *cluster,
                            int a2a)
{
    if (!pb || !model || !cluster)
        return PS_EINVAL;
    ps_moe_model m;
    ps_a2a_info info;
    int rc = ps_moe_derive(model, cluster, a2a, &m, &info, pb->err, PS__ERRLEN);
    if (rc)
        return rc;
    rc = ps_problem_set_moe(pb, &m);
    if (rc)
        return rc;
    pb->a2a = info;
    pb->has_a2a = 1;
    return 0;
}

int ps_problem_a2a_info(const ps_problem *pb, ps_a2a_info *out)
{
    if (!pb || !out)
        return PS_EINVAL;
    if (!pb->has_moe || !pb->has_a2a)
        return PS_ENOTFOUND;
    *out = pb->a2a;
    return 0;
}
