/*
 * The simulator: the engine (engine.c) driven by a virtual clock. Every action completes
 * during its issue callback; its start is the later of its rank becoming free and its inputs
 * arriving (producer end + c across ranks). Because ranks run their lists strictly in order,
 * this as-soon-as-possible time is the same whatever order the engine visits ranks in, so the
 * result equals an event-queue simulation without paying for the queue.
 * SPDX-License-Identifier: MIT
 */
#include "engine.h"

#include <string.h>

#define PER_RANK 7      /* 8-byte per-rank arrays: the rank_* members of ps_sim */
#define MAX_CLASSES 256 /* distinct layer compositions of the stages of a MoE model */

/* A planned action: its duration and its all-to-all time, total and exposed. */
typedef struct moe_cost {
    double dur, comm_total, comm_exposed;
    size_t first_op, nops; /* its planned operations: plan_ops[first_op .. first_op + nops) */
} moe_cost;

struct ps_sim {
    ps_allocator al;
    const ps_schedule *s;

    /* Cost model, copied from the problem so that durations stay available after the run:
     * the problem's costs, the per-stage costs (stage_cost, NULL when uniform) and the uniform
     * duration of each action kind. */
    double cost[5];
    ps_stage_cost *stage_cost;
    size_t nstage_cost;
    double dur_by_kind[PS_KIND_COUNT];

    /* Memory model, copied likewise: per stage (stage_mem, NULL when uniform) or the memory
     * each kind adds (mem_by_kind; a fused pair's forward part adds mem_fwd first). */
    ps_stage_mem *stage_mem;
    size_t nstage_mem;
    double mem_by_kind[PS_KIND_COUNT], mem_fwd, mem_limit;
    /* The first action that took its rank above the limit (over_rank < 0: none). */
    int32_t over_rank;
    int64_t over_idx;
    double over_value;

    /* Timeline, indexed like the schedule's action array. */
    double *start, *end;
    size_t cap_acts;
    /* End of F(s, j) and of its backward (I or B, or the parts of a fused pair), index
     * ps__sm(s, j): the times its consumers wait for. */
    double *fwd_end, *bwd_end;
    size_t cap_stage_mb;

    /* Per rank, one block of PER_RANK arrays (see reserve()): when the rank is free, its busy
     * time, its memory and peak memory, its live activations and their peak, and the replay's
     * cursor into its list. */
    double *rank_free, *rank_busy, *rank_mem, *rank_mem_peak;
    int64_t *rank_live, *rank_live_peak, *rank_cur;
    int32_t cap_pp;
    ps_metrics metrics;

    /* MoE mode (moe set): durations from the overlap planner. Stages with the same layer
     * composition share a class; class_plans holds per class the plans of F, I, W and B,
     * pair_plans per (forward class, backward class, backward kind B/I) the fused pairs that
     * occur; the cap_ fields are their capacities. */
    int moe;
    int32_t nclass;
    int32_t *stage_class; /* nstages entries, then the first layer of each stage */
    int32_t *stage_first_layer;
    size_t cap_class_stages; /* stages the block has room for (2 int32 each) */
    struct moe_cost *class_plans, *pair_plans;
    size_t cap_class_plans, cap_pair_plans;
    ps_plan *planner;
    ps_plan_op *plan_ops; /* the operations of every plan above (for the trace) */
    size_t nplan_ops, cap_plan_ops;
    ps_comm_metrics comm;

    uint64_t version; /* of the schedule when it was simulated */
    int have;
    char err[PS__ERRLEN];
};

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
    ps__free(a, sim->rank_free, (size_t)sim->cap_pp * PER_RANK, 8);
    ps__free(a, sim->stage_cost, sim->nstage_cost, sizeof *sim->stage_cost);
    ps__free(a, sim->stage_mem, sim->nstage_mem, sizeof *sim->stage_mem);
    ps__free(a, sim->stage_class, 2 * sim->cap_class_stages, sizeof *sim->stage_class);
    ps__free(a, sim->class_plans, sim->cap_class_plans, sizeof *sim->class_plans);
    ps__free(a, sim->pair_plans, sim->cap_pair_plans, sizeof *sim->pair_plans);
    ps_plan_free(sim->planner);
    ps__free(a, sim->plan_ops, sim->cap_plan_ops, sizeof *sim->plan_ops);
    sim->plan_ops = NULL;
    sim->nplan_ops = sim->cap_plan_ops = 0;
    sim->planner = NULL;
    sim->stage_class = sim->stage_first_layer = NULL;
    sim->class_plans = sim->pair_plans = NULL;
    sim->cap_class_plans = sim->cap_pair_plans = sim->cap_class_stages = 0;
    sim->moe = 0;
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

/* Grows the buffers to fit s; keeps them across runs so repeated simulations do not
 * allocate. */
static int reserve(ps_sim *sim, const ps_schedule *s)
{
    const ps_allocator *a = &sim->al;
    size_t sm = (size_t)s->nstages * (size_t)s->m;
    if (s->acts_cap > sim->cap_acts) {
        double *st = ps__alloc(a, s->acts_cap, sizeof(double));
        double *en = ps__alloc(a, s->acts_cap, sizeof(double));
        if (!st || !en) {
            ps__free(a, st, s->acts_cap, sizeof(double));
            ps__free(a, en, s->acts_cap, sizeof(double));
            return PS_ENOMEM;
        }
        ps__free(a, sim->start, sim->cap_acts, sizeof(double));
        ps__free(a, sim->end, sim->cap_acts, sizeof(double));
        sim->start = st;
        sim->end = en;
        sim->cap_acts = s->acts_cap;
    }
    if (sm > sim->cap_stage_mb) {
        double *fwd = ps__alloc(a, sm, sizeof(double));
        double *bwd = ps__alloc(a, sm, sizeof(double));
        if (!fwd || !bwd) {
            ps__free(a, fwd, sm, sizeof(double));
            ps__free(a, bwd, sm, sizeof(double));
            return PS_ENOMEM;
        }
        ps__free(a, sim->fwd_end, sim->cap_stage_mb, sizeof(double));
        ps__free(a, sim->bwd_end, sim->cap_stage_mb, sizeof(double));
        sim->fwd_end = fwd;
        sim->bwd_end = bwd;
        sim->cap_stage_mb = sm;
    }
    if (s->pp > sim->cap_pp) {
        /* One block for the per-rank arrays: four of double, then three of int64. */
        size_t p = (size_t)s->pp;
        double *blk = ps__alloc(a, p * PER_RANK, 8);
        if (!blk)
            return PS_ENOMEM;
        ps__free(a, sim->rank_free, (size_t)sim->cap_pp * PER_RANK, 8);
        sim->rank_free = blk;
        sim->rank_busy = blk + p;
        sim->rank_mem = blk + 2 * p;
        sim->rank_mem_peak = blk + 3 * p;
        sim->rank_live = (int64_t *)(void *)(blk + 4 * p);
        sim->rank_live_peak = sim->rank_live + p;
        sim->rank_cur = sim->rank_live_peak + p;
        sim->cap_pp = s->pp;
    }
    return 0;
}

static int current(const ps_sim *sim);

/* The planned costs of action a in MoE mode. */
static const moe_cost *moe_of(const ps_sim *sim, const ps_action *a)
{
    static const moe_cost none = {0, 0, 0, 0, 0};
    const int32_t *c = sim->stage_class;
    switch (a->kind) {
    case PS_F:
        return &sim->class_plans[(size_t)c[a->stage] * 4 + 0];
    case PS_I:
        return &sim->class_plans[(size_t)c[a->stage] * 4 + 1];
    case PS_W:
        return &sim->class_plans[(size_t)c[a->stage] * 4 + 2];
    case PS_B:
        return &sim->class_plans[(size_t)c[a->stage] * 4 + 3];
    case PS_FB:
        return &sim->pair_plans[((size_t)c[a->stage] * (size_t)sim->nclass + (size_t)c[a->bstage]) *
                                    2 +
                                (a->bkind == PS_B ? 0 : 1)];
    default:
        return &none;
    }
}

static double duration(const ps_sim *sim, const ps_action *a)
{
    if (sim->moe)
        return moe_of(sim, a)->dur;
    if (!sim->stage_cost) {
        /* A fused pair whose backward part is an I leaves its W for later. */
        if (a->kind == PS_FB && a->bkind == PS_I && sim->cost[PS_COST_FB] < 0)
            return sim->dur_by_kind[PS_F] + sim->dur_by_kind[PS_I];
        return sim->dur_by_kind[a->kind];
    }
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
        if (sim->cost[PS_COST_FB] >= 0)
            return sim->cost[PS_COST_FB];
        const ps_stage_cost *d = &sim->stage_cost[a->bstage];
        return c->f + d->b + (a->bkind == PS_B ? d->w : 0.0);
    }
    default:
        return 0.0;
    }
}

double ps_sim_duration(const ps_sim *sim, const ps_action *a)
{
    if (!sim || !a || a->kind >= PS_KIND_COUNT)
        return 0.0;
    if ((sim->stage_cost || sim->moe) &&
        (!sim->s || a->stage < 0 || a->stage >= sim->s->nstages ||
         (a->kind == PS_FB && (a->bstage < 0 || a->bstage >= sim->s->nstages))))
        return 0.0;
    return duration(sim, a);
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
    if (sim->stage_cost || sim->moe || (a->kind == PS_FB && a->bkind == PS_I))
        return duration(sim, a);
    return sim->dur_by_kind[a->kind];
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
    size_t k = (size_t)(s->off[r] + i);
    sim->start[k] = t;
    sim->end[k] = e;
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
 * timeline): no readiness to re-derive, only the clock's arithmetic.
 */
static void replay(ps_sim *sim, const ps_schedule *s)
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
    }
}

/* Makespan, largest idle and bubble ratio of the timeline in start/end and busy. */
static void compute_metrics(ps_sim *sim, const ps_schedule *s)
{
    double makespan = 0.0, bubble = 0.0, busy = 0.0;
    for (int32_t r = 0; r < s->pp; r++) {
        busy += sim->rank_busy[r];
        if (s->len[r] == 0)
            continue;
        double last = sim->end[s->off[r] + s->len[r] - 1];
        double span = last - sim->start[s->off[r]];
        if (last > makespan)
            makespan = last;
        if (span - sim->rank_busy[r] > bubble)
            bubble = span - sim->rank_busy[r];
    }
    sim->metrics.makespan = makespan;
    sim->metrics.bubble = bubble;
    sim->metrics.bubble_ratio = makespan > 0 ? 1.0 - busy / ((double)s->pp * makespan) : 0.0;
    sim->metrics.pp = s->pp;
}

/* Plans method's action (forward layers fl0/fn, backward bl0/bn of kind bkind) into *out. */
static int plan_into(ps_sim *sim, const ps_moe_model *m, int32_t fl0, int32_t fn, int bkind,
                     int32_t bl0, int32_t bn, moe_cost *out)
{
    int rc = ps__plan_layers(sim->planner, m, m->planner, fl0, fn, bkind, bl0, bn);
    if (rc)
        return ps__seterr(sim->err, rc, "overlap planner: %s", ps_plan_last_error(sim->planner));
    const ps_plan_stats *st = ps__plan_stats(sim->planner);
    out->dur = st->duration;
    out->comm_total = st->comm;
    out->comm_exposed = st->exposed;
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(sim->planner, &ops);
    if (sim->nplan_ops + n > sim->cap_plan_ops) {
        size_t cap = sim->cap_plan_ops ? sim->cap_plan_ops : 256;
        while (cap < sim->nplan_ops + n)
            cap *= 2;
        ps_plan_op *p = ps__realloc(&sim->al, sim->plan_ops, sim->cap_plan_ops, cap, sizeof *p);
        if (!p)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        sim->plan_ops = p;
        sim->cap_plan_ops = cap;
    }
    memcpy(sim->plan_ops + sim->nplan_ops, ops, n * sizeof *ops);
    for (size_t k = 0; k < n; k++) /* layers relative to the chunk's first layer */
        sim->plan_ops[sim->nplan_ops + k].layer -=
            sim->plan_ops[sim->nplan_ops + k].part ? bl0 : fl0;
    out->first_op = sim->nplan_ops;
    out->nops = n;
    sim->nplan_ops += n;
    return 0;
}

/*
 * MoE mode: classes of stages by layer composition (dense layers come first in the model, so
 * a stage's composition is its dense and MoE layer counts), the plans of F, I, W and B per
 * class, and the plans of every fused pair the schedule contains.
 */
static int moe_setup(ps_sim *sim, const ps_schedule *s, const ps_problem *pb)
{
    const ps_allocator *a = &sim->al;
    const ps_moe_model *m = &pb->moe;
    int32_t ms = s->nstages / (s->param_copies > 0 ? s->param_copies : 1);
    int rc = ps__check_stage_layers(pb, ms, sim->err);
    if (rc)
        return rc;
    if (!sim->planner && ps_plan_new(&sim->planner, &sim->al))
        return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
    if ((size_t)s->nstages > sim->cap_class_stages) {
        int32_t *sc = ps__alloc(a, 2 * (size_t)s->nstages, sizeof *sc);
        if (!sc)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        ps__free(a, sim->stage_class, 2 * sim->cap_class_stages, sizeof *sim->stage_class);
        sim->stage_class = sc;
        sim->cap_class_stages = (size_t)s->nstages;
    }
    sim->stage_first_layer = sim->stage_class + sim->cap_class_stages;
    int32_t key[MAX_CLASSES][3]; /* dense count, MoE count, first layer */
    int32_t nc = 0, l0 = 0, n = 0, nd;
    for (int32_t st = 0; st < ms; st++) {
        ps__stage_next(pb, ms, st, &l0, &n, &nd);
        sim->stage_first_layer[st] = l0;
        int32_t c = 0;
        while (c < nc && !(key[c][0] == nd && key[c][1] == n - nd))
            c++;
        if (c == nc) {
            if (nc == MAX_CLASSES)
                return ps__seterr(sim->err, PS_EUNSUPPORTED,
                                  "more than %d distinct stage layer compositions", MAX_CLASSES);
            key[c][0] = nd;
            key[c][1] = n - nd;
            key[c][2] = l0;
            nc++;
        }
        sim->stage_class[st] = c;
    }
    for (int32_t st = ms; st < s->nstages; st++) {
        sim->stage_class[st] = sim->stage_class[st % ms];
        sim->stage_first_layer[st] = sim->stage_first_layer[st % ms];
    }
    /* The tables only grow, so that simulating again does not allocate. */
    size_t ncls = (size_t)nc * 4, nfb = (size_t)nc * (size_t)nc * 2;
    if (ncls > sim->cap_class_plans) {
        moe_cost *x = ps__realloc(a, sim->class_plans, sim->cap_class_plans, ncls, sizeof *x);
        if (!x)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        sim->class_plans = x;
        sim->cap_class_plans = ncls;
    }
    if (nfb > sim->cap_pair_plans) {
        moe_cost *x = ps__realloc(a, sim->pair_plans, sim->cap_pair_plans, nfb, sizeof *x);
        if (!x)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        sim->pair_plans = x;
        sim->cap_pair_plans = nfb;
    }
    sim->nclass = nc;
    sim->nplan_ops = 0;
    static const int bkinds[4] = {0, PS_I, PS_W, PS_B};
    for (int32_t c = 0; c < nc; c++) {
        int32_t c0 = key[c][2], cn = key[c][0] + key[c][1];
        for (int k = 0; k < 4; k++) {
            rc = k == 0 ? plan_into(sim, m, c0, cn, PS_B, 0, 0, &sim->class_plans[(size_t)c * 4])
                        : plan_into(sim, m, 0, 0, bkinds[k], c0, cn,
                                    &sim->class_plans[(size_t)c * 4 + k]);
            if (rc)
                return rc;
        }
    }
    for (size_t i = 0; i < nfb; i++)
        sim->pair_plans[i].dur = -1;
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *acts = s->acts + s->off[r];
        for (int64_t i = 0; i < s->len[r]; i++) {
            const ps_action *x = &acts[i];
            if (x->kind != PS_FB)
                continue;
            int32_t cf = sim->stage_class[x->stage], cb = sim->stage_class[x->bstage];
            moe_cost *e = &sim->pair_plans[((size_t)cf * (size_t)nc + (size_t)cb) * 2 +
                                           (x->bkind == PS_B ? 0 : 1)];
            if (e->dur >= 0)
                continue;
            rc = plan_into(sim, m, key[cf][2], key[cf][0] + key[cf][1], x->bkind, key[cb][2],
                           key[cb][0] + key[cb][1], e);
            if (rc)
                return rc;
        }
    }
    sim->moe = 1;
    return 0;
}

/* Per phase all-to-all totals of the timeline (MoE mode): warm-up before a rank's first
 * backward, cool-down after its last forward. */
static void comm_metrics(ps_sim *sim, const ps_schedule *s)
{
    ps_comm_metrics *c = &sim->comm;
    memset(c, 0, sizeof *c);
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *acts = s->acts + s->off[r];
        int64_t n = s->len[r], first_b = n, last_f = -1;
        for (int64_t i = 0; i < n; i++) {
            int k = acts[i].kind;
            if ((k == PS_I || k == PS_B || k == PS_FB) && first_b == n)
                first_b = i;
            if (k == PS_F || k == PS_FB)
                last_f = i;
        }
        for (int64_t i = 0; i < n; i++) {
            const moe_cost *e = moe_of(sim, &acts[i]);
            int ph =
                i < first_b ? PS_PHASE_WARMUP : (i > last_f ? PS_PHASE_COOLDOWN : PS_PHASE_STEADY);
            c->total[ph] += e->comm_total;
            c->exposed[ph] += e->comm_exposed;
            c->total[PS_PHASE_ALL] += e->comm_total;
            c->exposed[PS_PHASE_ALL] += e->comm_exposed;
        }
    }
    for (int ph = 0; ph < PS_PHASE_COUNT; ph++)
        c->overlap[ph] = c->total[ph] > 0 ? 1.0 - c->exposed[ph] / c->total[ph] : 1.0;
}

const ps_plan_op *ps__sim_moe_ops(const ps_sim *sim, const ps_action *a, size_t *n,
                                  int32_t first_layer[2])
{
    *n = 0;
    if (!current(sim) || !sim->moe)
        return NULL;
    const moe_cost *e = moe_of(sim, a);
    first_layer[0] = sim->stage_first_layer[a->stage];
    first_layer[1] = sim->stage_first_layer[a->kind == PS_FB ? a->bstage : a->stage];
    *n = e->nops;
    return e->nops ? sim->plan_ops + e->first_op : NULL;
}

int ps_sim_comm(const ps_sim *sim, ps_comm_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!current(sim))
        return PS_ESTATE;
    if (!sim->moe)
        return PS_ENOTFOUND;
    *out = sim->comm;
    return 0;
}

int ps_sim_run(ps_sim *sim, const ps_schedule *s, const ps_problem *pb)
{
    if (!sim)
        return PS_EINVAL;
    sim->have = 0;
    sim->s = NULL;
    if (!s || !pb)
        return ps__seterr(sim->err, PS_EINVAL, "ps_sim_run needs a schedule and a problem");
    if (s->pp <= 0 || !s->acts)
        return ps__seterr(sim->err, PS_EINVAL, "the schedule is empty");
    if (pb->n_stage_costs && pb->n_stage_costs != (size_t)s->nstages)
        return ps__seterr(sim->err, PS_ECONFIG,
                          "stage_costs has %zu entr%s but the schedule has %d stages",
                          pb->n_stage_costs, pb->n_stage_costs == 1 ? "y" : "ies", s->nstages);
    if (pb->n_stage_mem && pb->n_stage_mem != (size_t)s->nstages)
        return ps__seterr(sim->err, PS_ECONFIG,
                          "stage_memory has %zu entr%s but the schedule has %d stages",
                          pb->n_stage_mem, pb->n_stage_mem == 1 ? "y" : "ies", s->nstages);
    if (pb->has_moe && pb->n_stage_costs)
        return ps__seterr(sim->err, PS_ECONFIG,
                          "both stage_costs and a MoE model give durations; use one of them");
    int rc = reserve(sim, s);
    if (rc)
        return ps__seterr(sim->err, rc, "out of memory for the simulation of %zu actions",
                          ps_schedule_total_actions(s));
    sim->moe = 0;
    if (pb->has_moe && (rc = moe_setup(sim, s, pb)))
        return rc;
    /* Copy the cost model. */
    ps__free(&sim->al, sim->stage_cost, sim->nstage_cost, sizeof *sim->stage_cost);
    sim->stage_cost = NULL;
    sim->nstage_cost = 0;
    if (pb->n_stage_costs) {
        sim->stage_cost = ps__alloc(&sim->al, pb->n_stage_costs, sizeof *sim->stage_cost);
        if (!sim->stage_cost)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        memcpy(sim->stage_cost, pb->stage_costs, pb->n_stage_costs * sizeof *sim->stage_cost);
        sim->nstage_cost = pb->n_stage_costs;
    }
    ps__free(&sim->al, sim->stage_mem, sim->nstage_mem, sizeof *sim->stage_mem);
    sim->stage_mem = NULL;
    sim->nstage_mem = 0;
    if (pb->n_stage_mem) {
        sim->stage_mem = ps__alloc(&sim->al, pb->n_stage_mem, sizeof *sim->stage_mem);
        if (!sim->stage_mem)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        memcpy(sim->stage_mem, pb->stage_mem, pb->n_stage_mem * sizeof *sim->stage_mem);
        sim->nstage_mem = pb->n_stage_mem;
    }
    for (int k = 0; k < PS_KIND_COUNT; k++)
        sim->mem_by_kind[k] = 0.0;
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
    for (int k = 0; k < PS_KIND_COUNT; k++)
        sim->dur_by_kind[k] = 0.0;
    sim->dur_by_kind[PS_F] = f;
    sim->dur_by_kind[PS_I] = b;
    sim->dur_by_kind[PS_W] = w;
    sim->dur_by_kind[PS_B] = b + w;
    sim->dur_by_kind[PS_FB] = pb->cost[PS_COST_FB] >= 0 ? pb->cost[PS_COST_FB] : f + b + w;
    sim->s = s;
    for (int32_t r = 0; r < s->pp; r++) {
        sim->rank_free[r] = sim->rank_busy[r] = sim->rank_mem[r] = sim->rank_mem_peak[r] = 0.0;
        sim->rank_live[r] = sim->rank_live_peak[r] = 0;
    }
    if (s->order_ok) {
        replay(sim, s);
        goto metrics;
    }
    ps__engine e;
    rc = ps__engine_init(&e, s, &sim_ops, sim, &sim->al);
    if (rc) {
        sim->s = NULL;
        return ps__seterr(sim->err, rc, "out of memory");
    }
    ps__engine_run_sync(&e, &sim_ops);
    if (!ps__engine_finished(&e)) {
        ps__seterr(sim->err, PS_EDEADLOCK,
                   "deadlock after %lld of %lld actions:", (long long)ps__engine_done(&e),
                   (long long)e.total);
        ps__engine_describe(&e, sim->err);
        ps__engine_destroy(&e);
        sim->s = NULL;
        return PS_EDEADLOCK;
    }
    ps__engine_destroy(&e);
metrics:
    compute_metrics(sim, s);
    if (sim->moe)
        comm_metrics(sim, s);
    sim->version = s->version;
    sim->have = 1;
    sim->err[0] = 0;
    if (sim->over_rank >= 0) {
        char name[96];
        int32_t r = sim->over_rank;
        ps__action_str(&s->acts[s->off[r] + sim->over_idx], name, sizeof name);
        return ps__seterr(sim->err, PS_EINVALID,
                          "rank %d exceeds the memory limit %g at step %lld (%s): %g", r,
                          sim->mem_limit, (long long)sim->over_idx, name, sim->over_value);
    }
    return 0;
}

/* 1 when sim holds a timeline of its schedule as it is now. */
static int current(const ps_sim *sim)
{
    return sim->have && sim->s && sim->s->version == sim->version;
}

int ps_sim_metrics(const ps_sim *sim, ps_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!current(sim))
        return PS_ESTATE;
    *out = sim->metrics;
    return 0;
}

int ps_sim_rank_metrics(const ps_sim *sim, int rank, ps_rank_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!current(sim))
        return PS_ESTATE;
    const ps_schedule *s = sim->s;
    if (rank < 0 || rank >= s->pp)
        return PS_EINVAL;
    out->busy = sim->rank_busy[rank];
    if (s->len[rank]) {
        out->span = sim->end[s->off[rank] + s->len[rank] - 1] - sim->start[s->off[rank]];
    } else {
        out->span = 0.0;
    }
    out->idle = out->span - out->busy;
    out->peak_activations = sim->rank_live_peak[rank];
    out->peak_memory = sim->rank_mem_peak[rank];
    out->param_copies = s->param_copies;
    return 0;
}

const double *ps_sim_starts(const ps_sim *sim, int rank)
{
    if (!sim || !current(sim) || rank < 0 || rank >= sim->s->pp)
        return NULL;
    return sim->start + sim->s->off[rank];
}

const double *ps_sim_ends(const ps_sim *sim, int rank)
{
    if (!sim || !current(sim) || rank < 0 || rank >= sim->s->pp)
        return NULL;
    return sim->end + sim->s->off[rank];
}

int ps__sim_set_timeline(ps_sim *sim, const double *start, const double *end, double unit)
{
    if (!current(sim))
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
    return sim && current(sim) ? sim->s : NULL;
}
