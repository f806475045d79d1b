/*
 * The simulator's MoE mode: with a MoE model, an action's duration and its exposed all-to-all
 * time come from the overlap planner instead of the cost model.
 *
 * Planning every action would plan the same layers again and again: stages with the same
 * layer composition (dense layers come first in the model, so a composition is a stage's
 * dense and MoE layer counts) have the same plans. So the stages are put in classes, F, I, W
 * and B are planned once per class and each fused pair once per (forward class, backward
 * class, backward kind) that the schedule contains; the clock's step then reads an action's
 * plan from two small tables (sim.h). The planned operations are kept for the trace.
 *
 * A plan depends only on the MoE model and the class's composition, so the classes and their
 * plans stay from one run to the next while the model is the same (bit for bit: the struct's
 * fields are compared, not its bytes): a search that changes the schedule, the split or the
 * dense costs around one MoE model plans only the compositions and pairs it has not seen.
 * SPDX-License-Identifier: MIT
 */
#include "sim.h"

#include <string.h>

#define MAX_CLASSES 256 /* distinct layer compositions of the stages of a MoE model */
#define KEEP_CLASSES 32 /* a memo with more classes is dropped before the next run adds more */

static void memo_free(const ps_allocator *a, ps__moe_memo *mo)
{
    ps__free(a, mo->classes, mo->cap_classes, sizeof *mo->classes);
    ps__free(a, mo->class_plans, mo->cap_class_plans, sizeof *mo->class_plans);
    ps__free(a, mo->pair_plans, mo->cap_pair_plans, sizeof *mo->pair_plans);
    ps__free(a, mo->plan_ops, mo->cap_plan_ops, sizeof *mo->plan_ops);
    memset(mo, 0, sizeof *mo);
}

void ps__sim_moe_free(ps_sim *sim)
{
    const ps_allocator *a = &sim->al;
    ps__free(a, sim->stage_class, 2 * sim->cap_class_stages, sizeof *sim->stage_class);
    memo_free(a, &sim->memo);
    for (int32_t i = 0; i < sim->nspare; i++)
        memo_free(a, &sim->spare[i]);
    if (sim->spare)
        ps__free(a, sim->spare, PS__SIM_SPARE_MEMOS, sizeof *sim->spare);
    ps_plan_free(sim->planner);
    sim->spare = NULL;
    sim->nspare = 0;
    sim->memo_clock = 0;
    sim->planner = NULL;
    sim->stage_class = sim->stage_first_layer = NULL;
    sim->cap_class_stages = 0;
    sim->moe = 0;
}

/* Empties a memo: no classes, no plans, no operations. The tables keep their memory. */
static void forget(ps__moe_memo *mo)
{
    mo->nclass = 0;
    mo->nplan_ops = 0;
    for (size_t i = 0; i < mo->cap_pair_plans; i++)
        mo->pair_plans[i].dur = -1;
    mo->valid = 0;
}

void ps__sim_forget_plans(ps_sim *sim)
{
    if (!sim)
        return;
    forget(&sim->memo);
    for (int32_t i = 0; i < sim->nspare; i++)
        forget(&sim->spare[i]);
}

/* 1 when a and b give the same plans: every field the planner reads, bit for bit (the struct's
 * padding is not compared; the assertion below fails when a field is added). */
static int same_model(const ps_moe_model *a, const ps_moe_model *b)
{
    return a->layers == b->layers && a->dense_layers == b->dense_layers &&
           a->planner == b->planner && !memcmp(&a->moe, &b->moe, sizeof a->moe) &&
           !memcmp(&a->dense, &b->dense, sizeof a->dense) &&
           !memcmp(&a->p2p, &b->p2p, sizeof a->p2p) &&
           !memcmp(&a->slowdown, &b->slowdown, sizeof a->slowdown);
}
_Static_assert(sizeof(ps_moe_model) ==
                   ((3 * sizeof(int32_t) + 2 * sizeof(ps_layer_cost) + 2 * sizeof(double) + 7) &
                    ~(size_t)7),
               "same_model() compares every field of ps_moe_model");

/* FNV-1a over n bytes, continuing h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* A hash of the fields same_model() compares (equal models, equal hashes), so that looking a
 * model up among the memos compares whole models only where the hashes agree. */
static uint64_t model_hash(const ps_moe_model *m)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, &m->layers, sizeof m->layers);
    h = fnv(h, &m->dense_layers, sizeof m->dense_layers);
    h = fnv(h, &m->planner, sizeof m->planner);
    h = fnv(h, &m->moe, sizeof m->moe);
    h = fnv(h, &m->dense, sizeof m->dense);
    h = fnv(h, &m->p2p, sizeof m->p2p);
    return fnv(h, &m->slowdown, sizeof m->slowdown);
}

/*
 * Makes sim->memo the memo of model m: the current one when it is m's; else the spare that is
 * m's, swapped in; else the least recently used spare (or a new one while there are fewer
 * than PS__SIM_SPARE_MEMOS), emptied and swapped in. The memo the run replaces becomes a
 * spare, plans and all. A memo is a function of its model (each plan is one of the model and
 * a class's composition), so which memo holds a model's plans changes no result. PS_ENOMEM
 * when the spares' table cannot be allocated.
 */
static int memo_select(ps_sim *sim, const ps_moe_model *m)
{
    uint64_t h = model_hash(m);
    sim->memo_clock++;
    ps__moe_memo *cur = &sim->memo;
    if (cur->valid && cur->hash == h && same_model(&cur->model, m)) {
        cur->used = sim->memo_clock;
        return 0;
    }
    if (!sim->spare) {
        sim->spare = ps__calloc(&sim->al, PS__SIM_SPARE_MEMOS, sizeof *sim->spare);
        if (!sim->spare)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
    }
    int32_t pick = -1;
    for (int32_t i = 0; i < sim->nspare; i++)
        if (sim->spare[i].valid && sim->spare[i].hash == h && same_model(&sim->spare[i].model, m)) {
            pick = i;
            break;
        }
    if (pick < 0) {
        if (sim->nspare < PS__SIM_SPARE_MEMOS) {
            pick = sim->nspare++; /* zeroed by the calloc: empty, no tables */
        } else {
            pick = 0;
            for (int32_t i = 1; i < sim->nspare; i++)
                if (!sim->spare[i].valid ||
                    (sim->spare[pick].valid && sim->spare[i].used < sim->spare[pick].used))
                    pick = i;
            forget(&sim->spare[pick]);
        }
    }
    ps__moe_memo tmp = *cur;
    *cur = sim->spare[pick];
    sim->spare[pick] = tmp;
    cur->used = sim->memo_clock;
    return 0;
}

/* ---- plans ------------------------------------------------------------------------------- */

/* Appends the planner's last operations to plan_ops as out's, with layers relative to the
 * first layer of each part's stage (fl0, bl0): the trace adds the layers of the stage each
 * action runs. */
static int keep_ops(ps_sim *sim, int32_t fl0, int32_t bl0, ps__moe_cost *out)
{
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(sim->planner, &ops);
    out->first_op = sim->memo.nplan_ops;
    out->nops = n;
    if (n == 0) /* a stage of no layers: nothing to keep (and plan_ops may still be NULL) */
        return 0;
    if (sim->memo.nplan_ops + n > sim->memo.cap_plan_ops) {
        size_t cap = sim->memo.cap_plan_ops ? sim->memo.cap_plan_ops : 256;
        while (cap < sim->memo.nplan_ops + n)
            cap *= 2;
        ps_plan_op *p =
            ps__realloc(&sim->al, sim->memo.plan_ops, sim->memo.cap_plan_ops, cap, sizeof *p);
        if (!p)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        sim->memo.plan_ops = p;
        sim->memo.cap_plan_ops = cap;
    }
    ps_plan_op *kept = sim->memo.plan_ops + sim->memo.nplan_ops;
    memcpy(kept, ops, n * sizeof *ops);
    for (size_t k = 0; k < n; k++)
        kept[k].layer -= kept[k].part ? bl0 : fl0;
    sim->memo.nplan_ops += n;
    return 0;
}

/* Plans an action (the forward of layers [fl0, fl0+fn) and/or the backward of kind bkind of
 * layers [bl0, bl0+bn); fn or bn 0: that part is absent) into *out. */
static int plan_into(ps_sim *sim, const ps_moe_model *m, int32_t fl0, int32_t fn, int bkind,
                     int32_t bl0, int32_t bn, ps__moe_cost *out)
{
    int rc = ps__plan_layers(sim->planner, m, m->planner, fl0, fn, bkind, bl0, bn);
    if (rc)
        return ps__seterr(sim->err, rc, "overlap planner: %s", ps_plan_last_error(sim->planner));
    sim->planned++;
    const ps_plan_stats *st = ps__plan_stats(sim->planner);
    out->dur = st->duration;
    out->comm_total = st->comm;
    out->comm_exposed = st->exposed;
    return keep_ops(sim, fl0, bl0, out);
}

/* ---- setup ------------------------------------------------------------------------------- */

/* Room for the class and the first layer of each of nstages stages (one block). */
static int reserve_stage_classes(ps_sim *sim, int32_t nstages)
{
    const ps_allocator *a = &sim->al;
    if ((size_t)nstages > sim->cap_class_stages) {
        int32_t *blk = ps__alloc(a, 2 * (size_t)nstages, sizeof *blk);
        if (!blk)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        ps__free(a, sim->stage_class, 2 * sim->cap_class_stages, sizeof *sim->stage_class);
        sim->stage_class = blk;
        sim->cap_class_stages = (size_t)nstages;
    }
    sim->stage_first_layer = sim->stage_class + sim->cap_class_stages;
    return 0;
}

/* The class of each of the ms model stages, found among the memo's classes or added to them
 * (at most MAX_CLASSES: PS_EUNSUPPORTED beyond); the stages of a second model copy (DualPipe)
 * take the classes of the first. */
static int classify_stages(ps_sim *sim, const ps_schedule *s, const ps_problem *pb, int32_t ms)
{
    int32_t nc = sim->memo.nclass, l0 = 0, n = 0, nd;
    for (int32_t st = 0; st < ms; st++) {
        ps__stage_next(pb, ms, st, &l0, &n, &nd);
        sim->stage_first_layer[st] = l0;
        int32_t c = 0;
        while (c < nc && !(sim->memo.classes[c].dense == nd && sim->memo.classes[c].moe == n - nd))
            c++;
        if (c == nc) {
            if (nc == MAX_CLASSES)
                return ps__seterr(sim->err, PS_EUNSUPPORTED,
                                  "more than %d distinct stage layer compositions", MAX_CLASSES);
            if ((size_t)nc == sim->memo.cap_classes) {
                size_t cap = sim->memo.cap_classes ? 2 * sim->memo.cap_classes : 16;
                ps__moe_class *x =
                    ps__realloc(&sim->al, sim->memo.classes, sim->memo.cap_classes, cap, sizeof *x);
                if (!x)
                    return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
                sim->memo.classes = x;
                sim->memo.cap_classes = cap;
            }
            ps__moe_class k = {nd, n - nd, l0};
            sim->memo.classes[nc++] = k;
        }
        sim->stage_class[st] = c;
    }
    for (int32_t st = ms; st < s->nstages; st++) {
        sim->stage_class[st] = sim->stage_class[st % ms];
        sim->stage_first_layer[st] = sim->stage_first_layer[st % ms];
    }
    sim->memo.nclass = nc;
    return 0;
}

/* Room for the plans of the nclass classes: class_plans keeps its entries (realloc), and
 * pair_plans, when its rows are too short, is laid out again with longer rows, the pairs
 * planned so far moved to their new places and the rest marked unplanned. The tables only
 * grow, so that simulating again does not allocate. */
static int reserve_plans(ps_sim *sim, int32_t old_nclass)
{
    const ps_allocator *a = &sim->al;
    int32_t nc = sim->memo.nclass;
    size_t nclass_plans = (size_t)nc * 4;
    if (nclass_plans > sim->memo.cap_class_plans) {
        ps__moe_cost *x = ps__realloc(a, sim->memo.class_plans, sim->memo.cap_class_plans,
                                      nclass_plans, sizeof *x);
        if (!x)
            return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
        sim->memo.class_plans = x;
        sim->memo.cap_class_plans = nclass_plans;
    }
    if (nc <= sim->memo.pair_stride)
        return 0;
    int32_t stride = sim->memo.pair_stride ? 2 * sim->memo.pair_stride : 8;
    stride = stride < nc ? nc : stride > MAX_CLASSES ? MAX_CLASSES : stride;
    size_t npair_plans = (size_t)stride * (size_t)stride * 2;
    ps__moe_cost *x = ps__alloc(a, npair_plans, sizeof *x);
    if (!x)
        return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; i < npair_plans; i++)
        x[i].dur = -1;
    for (int32_t f = 0; f < old_nclass; f++)
        for (int32_t b = 0; b < old_nclass; b++)
            for (int k = 0; k < 2; k++) {
                int kind = k ? PS_I : PS_B;
                x[ps__sim_pair_at(stride, f, b, kind)] =
                    sim->memo.pair_plans[ps__sim_pair_at(sim->memo.pair_stride, f, b, kind)];
            }
    ps__free(a, sim->memo.pair_plans, sim->memo.cap_pair_plans, sizeof *sim->memo.pair_plans);
    sim->memo.pair_plans = x;
    sim->memo.cap_pair_plans = npair_plans;
    sim->memo.pair_stride = stride;
    return 0;
}

/* The plans of F, I, W and B of the classes from `from` on, on the layers of each one's first
 * stage. */
static int plan_classes(ps_sim *sim, const ps_moe_model *m, int32_t from)
{
    for (int32_t c = from; c < sim->memo.nclass; c++) {
        int32_t l0 = sim->memo.classes[c].first_layer,
                n = sim->memo.classes[c].dense + sim->memo.classes[c].moe;
        for (int kind = PS_F; kind <= PS_B; kind++) {
            ps__moe_cost *out = &sim->memo.class_plans[ps__sim_class_at(c, kind)];
            int rc = kind == PS_F ? plan_into(sim, m, l0, n, PS_B, 0, 0, out)
                                  : plan_into(sim, m, 0, 0, kind, l0, n, out);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The plans of the fused pairs s contains that are not planned yet, each (forward class,
 * backward class, backward kind) once: most of the nclass^2 combinations never occur. */
static int plan_pairs(ps_sim *sim, const ps_schedule *s, const ps_moe_model *m)
{
    const ps__moe_class *key = sim->memo.classes;
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *acts = s->acts + s->off[r];
        for (int64_t i = 0; i < s->len[r]; i++) {
            const ps_action *x = &acts[i];
            if (x->kind != PS_FB)
                continue;
            int32_t cf = sim->stage_class[x->stage], cb = sim->stage_class[x->bstage];
            ps__moe_cost *e =
                &sim->memo.pair_plans[ps__sim_pair_at(sim->memo.pair_stride, cf, cb, x->bkind)];
            if (e->dur >= 0)
                continue;
            int rc = plan_into(sim, m, key[cf].first_layer, key[cf].dense + key[cf].moe, x->bkind,
                               key[cb].first_layer, key[cb].dense + key[cb].moe, e);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The classes of s's stages and the plans they need, with the memo's of the model when there
 * is one (memo_select). The memo is emptied first when it is large, or when the run's ms
 * stages could take its classes beyond MAX_CLASSES: a run fails for want of classes only
 * where a fresh simulator would. */
static int plan_all(ps_sim *sim, const ps_schedule *s, const ps_problem *pb, int32_t ms)
{
    ps__moe_memo *mo = &sim->memo;
    int rc = memo_select(sim, &pb->moe);
    if (rc)
        return rc;
    if (!mo->valid || mo->nclass > KEEP_CLASSES || ms > MAX_CLASSES - mo->nclass)
        forget(mo);
    int32_t old = mo->nclass;
    rc = classify_stages(sim, s, pb, ms);
    if (rc)
        return rc;
    mo->model = pb->moe;
    mo->hash = model_hash(&pb->moe);
    mo->valid = 1;
    if ((rc = reserve_plans(sim, old)) || (rc = plan_classes(sim, &pb->moe, old)) ||
        (rc = plan_pairs(sim, s, &pb->moe)))
        return rc;
    return 0;
}

int ps__sim_moe_setup(ps_sim *sim, const ps_schedule *s, const ps_problem *pb)
{
    int32_t ms = s->nstages / (s->param_copies > 0 ? s->param_copies : 1);
    int rc = ps__check_stage_layers(pb, ms, sim->err);
    if (rc)
        return rc;
    if (!sim->planner && ps_plan_new(&sim->planner, &sim->al))
        return ps__seterr(sim->err, PS_ENOMEM, "out of memory");
    rc = reserve_stage_classes(sim, s->nstages);
    if (rc)
        return rc;
    rc = plan_all(sim, s, pb, ms);
    if (rc) {
        forget(&sim->memo); /* a half-made memo is not kept */
        return rc;
    }
    sim->moe = 1;
    return 0;
}

/* ---- results ----------------------------------------------------------------------------- */

/* Warm-up is before a rank's first backward, cool-down after its last forward. */
void ps__sim_moe_metrics(ps_sim *sim, const ps_schedule *s)
{
    ps_comm_metrics *c = &sim->comm;
    memset(c, 0, sizeof *c);
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *acts = s->acts + s->off[r];
        int64_t n = s->len[r], first_b = 0, last_f = n - 1;
        while (first_b < n && acts[first_b].kind != PS_I && acts[first_b].kind != PS_B &&
               acts[first_b].kind != PS_FB)
            first_b++;
        while (last_f >= 0 && acts[last_f].kind != PS_F && acts[last_f].kind != PS_FB)
            last_f--;
        for (int64_t i = 0; i < n; i++) {
            const ps__moe_cost *e = ps__sim_moe_of(sim, &acts[i]);
            int ph =
                i < first_b ? PS_PHASE_WARMUP : (i > last_f ? PS_PHASE_COOLDOWN : PS_PHASE_STEADY);
            /* A heavier micro-batch moves more tokens: its all-to-alls scale with its time. */
            double k = ps__sim_scale(sim, &acts[i]);
            c->total[ph] += e->comm_total * k;
            c->exposed[ph] += e->comm_exposed * k;
            c->total[PS_PHASE_ALL] += e->comm_total * k;
            c->exposed[PS_PHASE_ALL] += e->comm_exposed * k;
        }
    }
    for (int ph = 0; ph < PS_PHASE_COUNT; ph++)
        c->overlap[ph] = c->total[ph] > 0 ? 1.0 - c->exposed[ph] / c->total[ph] : 1.0;
}

const ps_plan_op *ps__sim_moe_ops(const ps_sim *sim, const ps_action *a, size_t *n,
                                  int32_t first_layer[2])
{
    *n = 0;
    if (!ps__sim_current(sim) || !sim->moe)
        return NULL;
    const ps__moe_cost *e = ps__sim_moe_of(sim, a);
    first_layer[0] = sim->stage_first_layer[a->stage];
    first_layer[1] = sim->stage_first_layer[a->kind == PS_FB ? a->bstage : a->stage];
    *n = e->nops;
    return e->nops ? sim->memo.plan_ops + e->first_op : NULL;
}

int ps_sim_comm(const ps_sim *sim, ps_comm_metrics *out)
{
    if (!sim || !out)
        return PS_EINVAL;
    if (!ps__sim_current(sim))
        return PS_ESTATE;
    if (!sim->moe)
        return PS_ENOTFOUND;
    *out = sim->comm;
    return 0;
}
