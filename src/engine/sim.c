/*
 * The simulator: the engine (engine.c) driven by a virtual clock. Every action completes
 * during its issue callback; its start is the later of its rank becoming free and its inputs
 * arriving (producer end + c across ranks). Because ranks run their lists strictly in order,
 * this as-soon-as-possible time is the same whatever order the engine visits ranks in, so the
 * result equals an event-queue simulation without paying for the queue.
 *
 * Durations come from the problem's uniform or per-stage costs, or, in MoE mode, from the
 * overlap planner (sim_moe.c). The state is in sim.h.
 * SPDX-License-Identifier: MIT
 */
#include "sim.h"

#include <string.h>

int ps_sim_new(ps_sim **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_sim *sim = ps__calloc(&al, 1, sizeof *sim);
    if (!sim)
        return PS_ENOMEM;
    sim->al = al;
    *out = sim;
    return 0;
}

static void free_buffers(ps_sim *sim)
{
    const ps_allocator *a = &sim->al;
    ps__free(a, sim->start, sim->cap_acts, sizeof(double));
    ps__free(a, sim->end, sim->cap_acts, sizeof(double));
    ps__free(a, sim->fwd_end, sim->cap_stage_mb, sizeof(double));
    ps__free(a, sim->bwd_end, sim->cap_stage_mb, sizeof(double));
    ps__free(a, sim->rank_free, (size_t)sim->cap_pp * PS__SIM_PER_RANK, 8);
    ps__free(a, sim->stage_cost, sim->nstage_cost, sizeof *sim->stage_cost);
    ps__free(a, sim->stage_mem, sim->nstage_mem, sizeof *sim->stage_mem);
    ps__free(a, sim->mb_weight, sim->n_mb_weight, sizeof *sim->mb_weight);
    sim->mb_weight = NULL;
    sim->n_mb_weight = 0;
    ps__free(a, sim->step_dur, 8 * sim->cap_step, sizeof(double));
    sim->step_dur = sim->step_mem = NULL;
    sim->cap_step = 0;
    ps__sim_moe_free(sim);
    sim->stage_mem = NULL;
    sim->nstage_mem = 0;
    sim->start = sim->end = sim->fwd_end = sim->bwd_end = sim->rank_free = sim->rank_busy = NULL;
    sim->rank_live = sim->rank_live_peak = sim->rank_cur = NULL;
    sim->stage_cost = NULL;
    sim->nstage_cost = sim->cap_acts = sim->cap_stage_mb = 0;
    sim->cap_pp = 0;
}

void ps_sim_free(ps_sim *sim)
{
    if (!sim)
        return;
    free_buffers(sim);
    ps_allocator a = sim->al;
    ps__free(&a, sim, 1, sizeof *sim);
}

const char *ps_sim_last_error(const ps_sim *sim)
{
    return sim ? sim->err : "invalid argument: NULL simulator";
}

/* Replaces the arrays *x and *y, of *cap doubles each, by two of n doubles (contents not
 * kept). On failure they stay as they were. */
static int grow_pair(const ps_allocator *a, double **x, double **y, size_t *cap, size_t n)
{
    double *nx = ps__alloc(a, n, sizeof(double));
    double *ny = ps__alloc(a, n, sizeof(double));
    if (!nx || !ny) {
        ps__free(a, nx, n, sizeof(double));
        ps__free(a, ny, n, sizeof(double));
        return PS_ENOMEM;
    }
    ps__free(a, *x, *cap, sizeof(double));
    ps__free(a, *y, *cap, sizeof(double));
    *x = nx;
    *y = ny;
    *cap = n;
    return 0;
}

/* Grows the buffers to fit s; keeps them across runs so repeated simulations do not
 * allocate. */
static int reserve(ps_sim *sim, const ps_schedule *s)
{
    const ps_allocator *a = &sim->al;
    size_t sm = (size_t)s->nstages * (size_t)s->m;
    if (!sim->no_timeline && s->acts_cap > sim->cap_acts &&
        grow_pair(a, &sim->start, &sim->end, &sim->cap_acts, s->acts_cap))
        return PS_ENOMEM;
    if (sm > sim->cap_stage_mb &&
        grow_pair(a, &sim->fwd_end, &sim->bwd_end, &sim->cap_stage_mb, sm))
        return PS_ENOMEM;
    if ((size_t)s->nstages > sim->cap_step) {
        size_t n = (size_t)s->nstages;
        double *blk = ps__alloc(a, 8 * n, sizeof(double));
        if (!blk)
            return PS_ENOMEM;
        ps__free(a, sim->step_dur, 8 * sim->cap_step, sizeof(double));
        sim->step_dur = blk;
        sim->step_mem = blk + 4 * n;
        sim->cap_step = n;
    }
    if (s->pp > sim->cap_pp) {
        /* One block for the per-rank arrays: five of double, then three of int64. */
        size_t p = (size_t)s->pp;
        double *blk = ps__alloc(a, p * PS__SIM_PER_RANK, 8);
        if (!blk)
            return PS_ENOMEM;
        ps__free(a, sim->rank_free, (size_t)sim->cap_pp * PS__SIM_PER_RANK, 8);
        sim->rank_free = blk;
        sim->rank_busy = blk + p;
        sim->rank_mem = blk + 2 * p;
        sim->rank_mem_peak = blk + 3 * p;
        sim->rank_first = blk + 4 * p;
        sim->rank_live = (int64_t *)(void *)(blk + 5 * p);
        sim->rank_live_peak = sim->rank_live + p;
        sim->rank_cur = sim->rank_live_peak + p;
        sim->cap_pp = s->pp;
    }
    return 0;
}

/* Duration of a from the per-stage table; a fused pair's default is its parts' sum (fb_cost:
 * the problem's fused cost replaces it when set). */
static double stage_duration(const ps_sim *sim, const ps_action *a, int fb_cost)
{
    const ps_stage_cost *c = &sim->stage_cost[a->stage];
    switch (a->kind) {
    case PS_F:
        return c->f;
    case PS_I:
        return c->b;
    case PS_W:
        return c->w;
    case PS_B:
        return c->b + c->w;
    case PS_FB: {
        if (fb_cost && sim->cost[PS_COST_FB] >= 0)
            return sim->cost[PS_COST_FB];
        const ps_stage_cost *d = &sim->stage_cost[a->bstage];
        return c->f + d->b + (a->bkind == PS_B ? d->w : 0.0);
    }
    default:
        return 0.0;
    }
}

/* In MoE mode the plan gives the duration and stage_cost, when present, holds the problem's
 * per-stage extras (ps__problem_set_moe_extra), added to each part. */
static double duration(const ps_sim *sim, const ps_action *a)
{
    if (sim->moe) {
        double d = ps__sim_moe_of(sim, a)->dur;
        return sim->stage_cost ? d + stage_duration(sim, a, 0) : d;
    }
    if (!sim->stage_cost) {
        /* A fused pair whose backward part is an I leaves its W for later. */
        if (a->kind == PS_FB && a->bkind == PS_I && sim->cost[PS_COST_FB] < 0)
            return sim->dur_by_kind[PS_F] + sim->dur_by_kind[PS_I];
        return sim->dur_by_kind[a->kind];
    }
    return stage_duration(sim, a, 1);
}

/* The durations of the two parts of fused pair a, unfused: its forward (an F of its stage)
 * and its backward (a B or an I of its backward's stage). */
static void fused_parts(const ps_sim *sim, const ps_action *a, double *f, double *b)
{
    ps_action x;
    memset(&x, 0, sizeof x);
    x.kind = PS_F;
    x.stage = a->stage;
    *f = duration(sim, &x);
    x.kind = a->bkind == PS_B ? PS_B : PS_I;
    x.stage = a->bstage;
    *b = duration(sim, &x);
}

/*
 * Duration d of action a (as duration() gives it) under the micro-batch weights: a part of
 * micro-batch j costs w_j times its unweighted cost. A fused pair that costs the sum of its
 * parts is that sum with each part weighted, in duration()'s order of additions; a pair of its
 * own duration (the fb cost, a MoE plan) is scaled by the weighted mean of its parts'
 * durations. With every weight 1 each product is exact and the mean's quotient is x / x, so
 * the result is d bit for bit: uniform micro-batches need no separate path.
 */
static double weighted_duration(const ps_sim *sim, const ps_action *a, double d)
{
    const double *w = sim->mb_weight;
    if (a->kind != PS_FB)
        return d * w[a->mb];
    double wf = w[a->mb], wb = w[a->bmb];
    if (!sim->moe && sim->cost[PS_COST_FB] < 0) {
        double f, b, ww;
        if (sim->stage_cost) {
            const ps_stage_cost *c = &sim->stage_cost[a->stage], *e = &sim->stage_cost[a->bstage];
            f = c->f, b = e->b, ww = e->w;
        } else {
            f = sim->dur_by_kind[PS_F], b = sim->dur_by_kind[PS_I], ww = sim->dur_by_kind[PS_W];
        }
        return f * wf + b * wb + (a->bkind == PS_B ? ww * wb : 0.0);
    }
    double f, b;
    fused_parts(sim, a, &f, &b);
    if (!(f + b > 0))
        return d * ((wf + wb) / 2);
    return d * ((f * wf + b * wb) / (f + b));
}

double ps__sim_scale(const ps_sim *sim, const ps_action *a)
{
    if (!sim || !sim->mb_weight)
        return 1.0;
    if (a->kind != PS_FB)
        return sim->mb_weight[a->mb];
    double d = duration(sim, a);
    if (d > 0)
        return weighted_duration(sim, a, d) / d;
    return (sim->mb_weight[a->mb] + sim->mb_weight[a->bmb]) / 2;
}

double ps_sim_duration(const ps_sim *sim, const ps_action *a)
{
    if (!sim || !a || a->kind >= PS_KIND_COUNT)
        return 0.0;
    if ((sim->stage_cost || sim->moe) &&
        (!sim->s || a->stage < 0 || a->stage >= sim->s->nstages ||
         (a->kind == PS_FB && (a->bstage < 0 || a->bstage >= sim->s->nstages))))
        return 0.0;
    if (!sim->mb_weight)
        return duration(sim, a);
    size_t n = sim->n_mb_weight;
    if (a->mb < 0 || (size_t)a->mb >= n ||
        (a->kind == PS_FB && (a->bmb < 0 || (size_t)a->bmb >= n)))
        return 0.0;
    return weighted_duration(sim, a, duration(sim, a));
}

/* Time at which the result of stage dep (forward output in t, or gradient) for mb is on
 * rank r: the producer's end, plus c when it ran on another rank. */
static inline double arrival(const ps_sim *sim, const double *t, int32_t r, int32_t dep, int32_t mb)
{
    const ps_schedule *s = sim->s;
    double at = t[ps__sm((size_t)s->m, dep, mb)];
    return s->stage_rank[dep] == r ? at : at + sim->cost[PS_COST_C];
}

static inline double fast_duration(const ps_sim *sim, const ps_action *a)
{
    if (a->kind <= PS_B)
        return sim->step_dur[(size_t)a->stage * 4 + a->kind];
    return duration(sim, a);
}

/* A rank's running state: when it is free, its busy time, its live activations and peak. */
typedef struct rank_state {
    double free, busy, mem, mem_peak;
    int64_t live, live_peak;
} rank_state;

/* Memory added by an action: the forward part (*fwd, counted first for the peak) and the
 * rest. */
PS__HOT void mem_delta(const ps_sim *sim, const ps_action *a, double *fwd, double *rest)
{
    if (a->kind <= PS_B && sim->step_mem) {
        *fwd = 0;
        *rest = sim->step_mem[(size_t)a->stage * 4 + a->kind];
        return;
    }
    if (!sim->stage_mem) {
        if (a->kind == PS_FB) {
            *fwd = sim->mem_fwd;
            *rest = a->bkind == PS_B ? sim->mem_by_kind[PS_B] : sim->mem_by_kind[PS_I];
        } else {
            *fwd = 0;
            *rest = sim->mem_by_kind[a->kind];
        }
        return;
    }
    const ps_stage_mem *m = &sim->stage_mem[a->stage];
    *fwd = 0;
    switch (a->kind) {
    case PS_F:
        *rest = m->f;
        break;
    case PS_I:
        *rest = m->b;
        break;
    case PS_W:
        *rest = m->w;
        break;
    case PS_B:
        *rest = m->b + m->w;
        break;
    case PS_FB: {
        const ps_stage_mem *n = &sim->stage_mem[a->bstage];
        *fwd = m->f;
        *rest = n->b + (a->bkind == PS_B ? n->w : 0.0);
        break;
    }
    default:
        *rest = 0;
    }
}

/*
 * The virtual clock's step: action i of rank r starts when the rank is free and its inputs
 * have arrived, ends after its duration; records its times, the end times its consumers
 * wait for, and the activation count. rs is the rank's state, kept in registers by the
 * replay loop (a load and store of it per action would lengthen the dependency chain).
 */
PS__HOT void sim_step(ps_sim *sim, rank_state *rs, int32_t r, int64_t i, const ps_action *a,
                      const int32_t dep[2])
{
    const ps_schedule *s = sim->s;
    double t = rs->free, d = fast_duration(sim, a);
    if (sim->mb_weight) /* a fused pair weighs its parts apart (weighted_duration) */
        d = a->kind != PS_FB ? d * sim->mb_weight[a->mb] : weighted_duration(sim, a, d);
    size_t m = (size_t)s->m;
    int64_t live = rs->live;
    if (dep[0] >= 0) {
        double at = arrival(sim, sim->fwd_end, r, dep[0], a->mb);
        t = at > t ? at : t;
    }
    if (dep[1] >= 0) {
        int32_t bmb = a->kind == PS_FB ? a->bmb : a->mb;
        double at = arrival(sim, sim->bwd_end, r, dep[1], bmb);
        t = at > t ? at : t;
    }
    double e = t + d;
    int kind = a->kind;
    if (kind == PS_F) {
        sim->fwd_end[ps__sm(m, a->stage, a->mb)] = e;
        live++;
    } else if (kind == PS_B || kind == PS_I) {
        sim->bwd_end[ps__sm(m, a->stage, a->mb)] = e;
        live -= kind == PS_B;
    } else if (kind == PS_W) {
        live--;
    } else if (kind == PS_FB) {
        sim->fwd_end[ps__sm(m, a->stage, a->mb)] = e;
        sim->bwd_end[ps__sm(m, a->bstage, a->bmb)] = e;
        live++; /* the forward counts before the backward releases */
        if (live > rs->live_peak)
            rs->live_peak = live;
        live -= a->bkind == PS_B;
    }
    if (live > rs->live_peak)
        rs->live_peak = live;
    rs->live = live;
    double fwd, rest;
    mem_delta(sim, a, &fwd, &rest);
    double mem = rs->mem + fwd;
    double top = mem > mem + rest ? mem : mem + rest;
    rs->mem = mem + rest;
    if (top > rs->mem_peak) {
        rs->mem_peak = top;
        if (sim->mem_limit > 0 && top > sim->mem_limit * (1 + 1e-12) && sim->over_rank < 0) {
            sim->over_rank = r;
            sim->over_idx = i;
            sim->over_value = top;
        }
    }
    if (i == 0)
        sim->rank_first[r] = t;
    if (sim->timeline) {
        size_t k = (size_t)(s->off[r] + i);
        sim->start[k] = t;
        sim->end[k] = e;
    }
    rs->free = e;
    rs->busy += d;
}

static inline rank_state load_rank(const ps_sim *sim, int32_t r)
{
    rank_state rs = {sim->rank_free[r],     sim->rank_busy[r], sim->rank_mem[r],
                     sim->rank_mem_peak[r], sim->rank_live[r], sim->rank_live_peak[r]};
    return rs;
}

static inline void store_rank(ps_sim *sim, int32_t r, const rank_state *rs)
{
    sim->rank_free[r] = rs->free;
    sim->rank_busy[r] = rs->busy;
    sim->rank_mem[r] = rs->mem;
    sim->rank_mem_peak[r] = rs->mem_peak;
    sim->rank_live[r] = rs->live;
    sim->rank_live_peak[r] = rs->live_peak;
}

/* The engine's issue callback: one action, state through memory. */
PS__HOT int sim_issue(void *ud, int32_t r, int64_t i, const ps_action *a, const int32_t dep[2])
{
    ps_sim *sim = ud;
    rank_state rs = load_rank(sim, r);
    sim_step(sim, &rs, r, i, a, dep);
    store_rank(sim, r, &rs);
    return 1;
}

PS__HOT int sim_transfer(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to)
{
    /* The transfer time c is applied when the consumer computes its ready time. */
    (void)ud, (void)dir, (void)stage, (void)mb, (void)from, (void)to;
    return 1;
}

static const ps__engine_ops sim_ops = {sim_issue, sim_transfer, NULL};

/*
 * Replays the issue order the validator recorded (the engine's own order, so the same
 * timeline): no readiness to re-derive, only the clock's arithmetic. Forced inline into
 * ps_sim_run: as a function of its own (gcc 12 -O2 does not inline it) the loop measured 10%
 * slower per action (5.15 vs 4.66 ns at pp16 vpp2 m64).
 */
PS__HOT void replay(ps_sim *sim, const ps_schedule *s)
{
    ps__engine view_src;
    memset(&view_src, 0, sizeof view_src);
    view_src.next = s->path_next;
    view_src.prev = s->path_prev;
    view_src.stage_rank = s->stage_rank;
    view_src.mb_path = s->mb_path;
    view_src.nstages = (size_t)s->nstages;
    view_src.m = (size_t)s->m;
    const ps__eng_view v = ps__eng_view_of(&view_src);
    int64_t *cur = sim->rank_cur;
    for (int32_t r = 0; r < s->pp; r++)
        cur[r] = 0;
    for (size_t k = 0; k + 1 < s->order_len; k += 2) {
        int32_t r = s->order[k];
        int64_t i = cur[r], n = s->order[k + 1];
        const ps_action *base = s->acts + s->off[r];
        rank_state rs = load_rank(sim, r);
        for (int64_t q = 0; q < n; q++, i++) {
            int32_t dep[2];
            ps__eng_deps(&v, &base[i], dep);
            sim_step(sim, &rs, r, i, &base[i], dep);
        }
        store_rank(sim, r, &rs);
        cur[r] = i;
        /* Every other rank runs before this one runs again: fetch the lines its next run
         * reads and writes now (the hardware's prefetcher follows a few streams, not one per
         * rank), so that they wait in the cache instead of missing it then. */
        ps__prefetch(&base[i] + 3, 0);
        if (sim->timeline) {
            size_t at = (size_t)(s->off[r] + i);
            ps__prefetch(&sim->start[at] + 8, 1);
            ps__prefetch(&sim->end[at] + 8, 1);
        }
    }
}

/* Makespan, largest idle and bubble ratio from each rank's first start, last end and busy
 * time. */
static void compute_metrics(ps_sim *sim, const ps_schedule *s)
{
    double makespan = 0.0, bubble = 0.0, busy = 0.0;
    for (int32_t r = 0; r < s->pp; r++) {
        busy += sim->rank_busy[r];
        if (s->len[r] == 0)
            continue;
        double last = sim->rank_free[r];
        double span = last - sim->rank_first[r];
        if (last > makespan)
            makespan = last;
        if (span - sim->rank_busy[r] > bubble)
            bubble = span - sim->rank_busy[r];
    }
    sim->metrics.makespan = makespan;
    sim->metrics.bubble = bubble;
    /* busy / (pp makespan) can exceed 1 by the same absorption (see ps_sim_rank_metrics) */
    double ratio = makespan > 0 ? 1.0 - busy / ((double)s->pp * makespan) : 0.0;
    sim->metrics.bubble_ratio = ratio > 0 ? ratio : 0.0;
    sim->metrics.pp = s->pp;
}

/* ---- ps_sim_run ------------------------------------------------------------------------- */

/* PS_ECONFIG when a per-stage table of the problem (n entries, 0 = none) does not have one entry
 * per stage of the schedule. */
static int check_stage_count(ps_sim *sim, const char *key, size_t n, int32_t nstages)
{
    if (!n || n == (size_t)nstages)
        return 0;
    return ps__seterr(sim->err, PS_ECONFIG, "%s has %zu entr%s but the schedule has %d stages", key,
                      n, n == 1 ? "y" : "ies", nstages);
}

static int check_inputs(ps_sim *sim, const ps_schedule *s, const ps_problem *pb)
{
    if (!s || !pb)
        return ps__seterr(sim->err, PS_EINVAL, "ps_sim_run needs a schedule and a problem");
    if (s->pp <= 0 || !s->acts)
        return ps__seterr(sim->err, PS_EINVAL, "the schedule is empty");
    int rc = check_stage_count(sim, "stage_costs", pb->n_stage_costs, s->nstages);
    if (rc)
        return rc;
    rc = check_stage_count(sim, "stage_memory", pb->n_stage_mem, s->nstages);
    if (rc)
        return rc;
    if (pb->has_moe &&
        (rc = check_stage_count(sim, "the MoE extra costs", pb->n_moe_extra, s->nstages)))
        return rc;
    if (pb->n_mb_weights && pb->n_mb_weights != (size_t)s->m)
        return ps__seterr(sim->err, PS_ECONFIG,
                          "microbatch_weights has %zu entr%s but the schedule has %d "
                          "micro-batches (one weight per micro-batch)",
                          pb->n_mb_weights, pb->n_mb_weights == 1 ? "y" : "ies", s->m);
    if (pb->has_moe && pb->n_stage_costs)
        return ps__seterr(sim->err, PS_ECONFIG,
                          "both stage_costs and a MoE model give durations; use one of them");
    return 0;
}

/* Returns a copy of src[0 .. n) (elements of size bytes) in place of old (*dn elements): old
 * itself, overwritten, when the count is unchanged, so that simulating again does not
 * allocate; NULL when n is 0, or with *rc set when out of memory (*dn then 0). */
static void *copy_table(ps_sim *sim, void *old, size_t *dn, const void *src, size_t n, size_t size,
                        int *rc)
{
    void *d = old;
    if (n != *dn) {
        ps__free(&sim->al, old, *dn, size);
        d = NULL;
        *dn = 0;
        if (n && !(d = ps__alloc(&sim->al, n, size))) {
            *rc = ps__seterr(sim->err, PS_ENOMEM, "out of memory");
            return NULL;
        }
        *dn = n;
    }
    if (n)
        memcpy(d, src, n * size);
    return d;
}

/* Copies the problem's per-stage costs (in MoE mode its per-stage extras), memory and
 * micro-batch weights (the problem may change or go after the run, the durations must not). */
static int copy_stage_tables(ps_sim *sim, const ps_problem *pb)
{
    const ps_stage_cost *costs = pb->has_moe ? pb->moe_extra : pb->stage_costs;
    size_t ncost = pb->has_moe ? pb->n_moe_extra : pb->n_stage_costs;
    int rc = 0;
    sim->stage_cost =
        copy_table(sim, sim->stage_cost, &sim->nstage_cost, costs, ncost, sizeof *costs, &rc);
    if (!rc)
        sim->stage_mem = copy_table(sim, sim->stage_mem, &sim->nstage_mem, pb->stage_mem,
                                    pb->n_stage_mem, sizeof *pb->stage_mem, &rc);
    if (!rc)
        sim->mb_weight = copy_table(sim, sim->mb_weight, &sim->n_mb_weight, pb->mb_weights,
                                    pb->n_mb_weights, sizeof *pb->mb_weights, &rc);
    return rc;
}

/* The uniform models by action kind, read by the clock's step without a branch on the kind. */
static void copy_uniform_model(ps_sim *sim, const ps_problem *pb)
{
    for (int k = 0; k < PS_KIND_COUNT; k++)
        sim->mem_by_kind[k] = sim->dur_by_kind[k] = 0.0;
    sim->mem_by_kind[PS_F] = pb->mem.f;
    sim->mem_by_kind[PS_I] = pb->mem.b;
    sim->mem_by_kind[PS_W] = pb->mem.w;
    sim->mem_by_kind[PS_B] = pb->mem.b + pb->mem.w;
    sim->mem_by_kind[PS_FB] = 0; /* split by mem_delta() */
    sim->mem_fwd = pb->mem.f;
    sim->mem_limit = pb->mem_limit;
    sim->over_rank = -1;
    memcpy(sim->cost, pb->cost, sizeof sim->cost);
    double f = pb->cost[PS_COST_F], b = pb->cost[PS_COST_B], w = pb->cost[PS_COST_W];
    sim->dur_by_kind[PS_F] = f;
    sim->dur_by_kind[PS_I] = b;
    sim->dur_by_kind[PS_W] = w;
    sim->dur_by_kind[PS_B] = b + w;
    sim->dur_by_kind[PS_FB] = pb->cost[PS_COST_FB] >= 0 ? pb->cost[PS_COST_FB] : f + b + w;
}

/* The step tables of every stage of s, from the models as duration() and mem_delta() read
 * them (the same arithmetic, so the same values bit for bit). */
static void tabulate(ps_sim *sim, const ps_schedule *s)
{
    double *dur = sim->step_dur, *mem = sim->step_mem;
    sim->step_mem = NULL; /* mem_delta() reads the models, not the table being made */
    for (int32_t st = 0; st < s->nstages; st++) {
        for (int k = PS_F; k <= PS_B; k++) {
            ps_action x;
            memset(&x, 0, sizeof x);
            x.kind = (uint8_t)k;
            x.stage = st;
            double fwd;
            dur[(size_t)st * 4 + (size_t)k] = duration(sim, &x);
            mem_delta(sim, &x, &fwd, &mem[(size_t)st * 4 + (size_t)k]);
        }
    }
    sim->step_mem = mem;
}

static void reset_ranks(ps_sim *sim, const ps_schedule *s)
{
    for (int32_t r = 0; r < s->pp; r++) {
        sim->rank_free[r] = sim->rank_busy[r] = sim->rank_mem[r] = sim->rank_mem_peak[r] = 0.0;
        sim->rank_first[r] = 0.0;
        sim->rank_live[r] = sim->rank_live_peak[r] = 0;
    }
}

/* Without a recorded order (the schedule was not validated), the engine derives readiness and
 * finds a deadlock. sim_ops is a constant, so its callbacks inline into the engine's loop. */
static int run_engine(ps_sim *sim, const ps_schedule *s)
{
    ps__engine e;
    int rc = ps__engine_init(&e, s, &sim_ops, sim, &sim->al);
    if (rc)
        return ps__seterr(sim->err, rc, "out of memory");
    ps__engine_run_sync(&e, &sim_ops);
    if (!ps__engine_finished(&e)) {
        rc = ps__seterr(sim->err, PS_EDEADLOCK,
                        "deadlock after %lld of %lld actions:", (long long)ps__engine_done(&e),
                        (long long)e.total);
        ps__engine_describe(&e, sim->err);
    }
    ps__engine_destroy(&e);
    return rc;
}

/* Publishes the timeline and its metrics. A run above the memory limit keeps its timeline (the
 * caller may still read it) and fails with the first action that crossed the limit. */
static int finish(ps_sim *sim, const ps_schedule *s)
{
    compute_metrics(sim, s);
    if (sim->moe)
        ps__sim_moe_metrics(sim, s);
    sim->version = s->version;
    sim->have = 1;
    sim->err[0] = 0;
    if (sim->over_rank < 0)
        return 0;
    char name[96];
    int32_t r = sim->over_rank;
    ps__action_str(&s->acts[s->off[r] + sim->over_idx], name, sizeof name);
    return ps__seterr(sim->err, PS_EINVALID,
                      "rank %d exceeds the memory limit %g at step %lld (%s): %g", r,
                      sim->mem_limit, (long long)sim->over_idx, name, sim->over_value);
}

int ps_sim_run(ps_sim *sim, const ps_schedule *s, const ps_problem *pb)
{
    if (!sim)
        return PS_EINVAL;
    sim->have = 0;
    sim->s = NULL;
    int rc = check_inputs(sim, s, pb);
    if (rc)
        return rc;
    rc = reserve(sim, s);
    if (rc)
        return ps__seterr(sim->err, rc, "out of memory for the simulation of %zu actions",
                          ps_schedule_total_actions(s));
    sim->timeline = !sim->no_timeline;
    sim->moe = 0;
    if (pb->has_moe && (rc = ps__sim_moe_setup(sim, s, pb)))
        return rc;
    rc = copy_stage_tables(sim, pb);
    if (rc)
        return rc;
    copy_uniform_model(sim, pb);
    sim->s = s;
    tabulate(sim, s);
    reset_ranks(sim, s);
    if (s->order_ok) {
        replay(sim, s);
    } else if ((rc = run_engine(sim, s))) {
        sim->s = NULL;
        return rc;
    }
    return finish(sim, s);
}

/* ---- results ----------------------------------------------------------------------------- */

int ps_sim_metrics(const ps_sim *sim, ps_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!ps__sim_current(sim))
        return PS_ESTATE;
    *out = sim->metrics;
    return 0;
}

int ps_sim_rank_metrics(const ps_sim *sim, int rank, ps_rank_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!ps__sim_current(sim))
        return PS_ESTATE;
    const ps_schedule *s = sim->s;
    if (rank < 0 || rank >= s->pp)
        return PS_EINVAL;
    out->busy = sim->rank_busy[rank];
    if (s->len[rank]) {
        out->span = sim->rank_free[rank] - sim->rank_first[rank];
    } else {
        out->span = 0.0;
    }
    /* span and busy are exact sums of the same durations but in different orders: a
     * duration far below the times around it (f = 1e-300 next to c = 1) is absorbed into the
     * span (1 + 1e-300 == 1) and not into busy, so the difference can come out below 0 by
     * rounding. The rank is never idle for less than no time. */
    out->idle = out->span > out->busy ? out->span - out->busy : 0.0;
    out->peak_activations = sim->rank_live_peak[rank];
    out->peak_memory = sim->rank_mem_peak[rank];
    out->param_copies = s->param_copies;
    return 0;
}

int ps_sim_keep_timeline(ps_sim *sim, int keep)
{
    if (!sim)
        return PS_EINVAL;
    sim->no_timeline = !keep;
    return 0;
}

const double *ps_sim_starts(const ps_sim *sim, int rank)
{
    if (!sim || !ps__sim_current(sim) || !sim->timeline || rank < 0 || rank >= sim->s->pp)
        return NULL;
    return sim->start + sim->s->off[rank];
}

const double *ps_sim_ends(const ps_sim *sim, int rank)
{
    if (!sim || !ps__sim_current(sim) || !sim->timeline || rank < 0 || rank >= sim->s->pp)
        return NULL;
    return sim->end + sim->s->off[rank];
}

/* ---- the critical path ------------------------------------------------------------------ */

/* The action of rank r that produced the forward output (dir 0) or the gradient (dir 1) of
 * (stage, mb), found by its end time t among the rank's ends (which never decrease along the
 * rank's list); -1 when no action of the rank ends at t with that output. */
static int64_t producer(const ps_sim *sim, int32_t r, int dir, int32_t stage, int32_t mb, double t)
{
    const ps_schedule *s = sim->s;
    const double *end = sim->end + s->off[r];
    int64_t lo = 0, hi = s->len[r];
    while (lo < hi) { /* the first action that ends at t or later */
        int64_t mid = lo + (hi - lo) / 2;
        if (end[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int64_t i = lo; i < s->len[r] && end[i] == t; i++) {
        const ps_action *a = &s->acts[s->off[r] + i];
        int fwd = a->kind == PS_F || a->kind == PS_FB, bwd = a->kind == PS_B || a->kind == PS_I;
        if (dir == 0 && fwd && a->stage == stage && a->mb == mb)
            return i;
        if (dir == 1 && ((bwd && a->stage == stage && a->mb == mb) ||
                         (a->kind == PS_FB && a->bstage == stage && a->bmb == mb)))
            return i;
    }
    return -1;
}

/* The input of part dir (0: the forward output consumed, 1: the gradient) of action a that
 * bound its start t on rank r: *rank and *idx of its producer and *cross (it came from another
 * rank); 0 when that input arrived after t or a has none. */
static int bound_by(const ps_sim *sim, const ps_action *a, int dir, int32_t r, double t,
                    int32_t *rank, int64_t *idx, int *cross)
{
    const ps_schedule *s = sim->s;
    int fwd = a->kind == PS_F || a->kind == PS_FB;
    int bwd = a->kind == PS_B || a->kind == PS_I || a->kind == PS_FB;
    if (dir == 0 ? !fwd : !bwd)
        return 0;
    int32_t stage = dir == 0 || a->kind != PS_FB ? a->stage : a->bstage;
    int32_t mb = dir == 0 || a->kind != PS_FB ? a->mb : a->bmb;
    int32_t dep = ps__path_peer(s, dir == 0 ? 1 : 0, stage, mb);
    if (dep < 0)
        return 0;
    const double *ends = dir == 0 ? sim->fwd_end : sim->bwd_end;
    double at = ends[ps__sm((size_t)s->m, dep, mb)];
    *rank = s->stage_rank[dep];
    *cross = *rank != r;
    if ((*cross ? at + sim->cost[PS_COST_C] : at) != t) /* as arrival() computes it */
        return 0;
    *idx = producer(sim, *rank, dir, dep, mb, at);
    return *idx >= 0;
}

int ps__sim_critical_transfers(const ps_sim *sim, int64_t *transfers)
{
    if (!sim || !transfers)
        return PS_EINVAL;
    *transfers = 0;
    if (!ps__sim_current(sim) || !sim->timeline)
        return PS_ESTATE;
    const ps_schedule *s = sim->s;
    int32_t r = -1;
    for (int32_t q = 0; q < s->pp; q++)
        if (s->len[q] &&
            (r < 0 || sim->end[s->off[q] + s->len[q] - 1] > sim->end[s->off[r] + s->len[r] - 1]))
            r = q;
    if (r < 0)
        return 0;
    int64_t i = s->len[r] - 1, n = 0;
    /* Each step goes to an action that ends no later than this one starts and comes before it
     * in a topological order, so the walk ends; the bound guards a timeline that is not the
     * simulator's own. */
    for (int64_t steps = 0; steps < s->off[s->pp]; steps++) {
        const ps_action *a = &s->acts[s->off[r] + i];
        double t = sim->start[s->off[r] + i];
        if (!(t > 0))
            break;
        if (i > 0 && sim->end[s->off[r] + i - 1] == t) {
            i--;
            continue;
        }
        /* Same-rank inputs first: on a tie the path that carries fewer transfers. */
        int32_t pr[2];
        int64_t pi[2];
        int cross[2], ok[2];
        for (int d = 0; d < 2; d++)
            ok[d] = bound_by(sim, a, d, r, t, &pr[d], &pi[d], &cross[d]);
        int d = ok[0] && !cross[0] ? 0 : ok[1] && !cross[1] ? 1 : ok[0] ? 0 : ok[1] ? 1 : -1;
        if (d < 0)
            break; /* nothing explains the start: not a simulated timeline */
        n += cross[d];
        r = pr[d];
        i = pi[d];
    }
    *transfers = n;
    return 0;
}

int ps__sim_set_timeline(ps_sim *sim, const double *start, const double *end, double unit)
{
    if (!ps__sim_current(sim) || !sim->timeline)
        return PS_ESTATE;
    const ps_schedule *s = sim->s;
    for (int32_t r = 0; r < s->pp; r++) {
        double busy = 0.0;
        for (int64_t i = s->off[r]; i < s->off[r] + s->len[r]; i++) {
            sim->start[i] = start[i] / unit;
            sim->end[i] = end[i] / unit;
            busy += sim->end[i] - sim->start[i];
        }
        sim->rank_busy[r] = busy;
        if (s->len[r]) {
            sim->rank_first[r] = sim->start[s->off[r]];
            sim->rank_free[r] = sim->end[s->off[r] + s->len[r] - 1];
        }
    }
    compute_metrics(sim, s);
    return 0;
}

double ps__sim_cost(const ps_sim *sim, int which)
{
    return sim && which >= 0 && which < 5 ? sim->cost[which] : 0.0;
}

const ps_schedule *ps__sim_schedule(const ps_sim *sim)
{
    return sim && ps__sim_current(sim) ? sim->s : NULL;
}
