/*
 * The simulator's state, shared by its two files: sim.c (the virtual clock, the cost and
 * memory models, the metrics) and sim_moe.c (MoE mode: the overlap planner's plans of every
 * action, their communication metrics and operations). Not installed.
 *
 * What both files read in the clock's step (the plan of an action in MoE mode) is inline
 * here, so that splitting the file costs the replay loop no call.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_SIM_H
#define PS_SIM_H

#include "engine.h"

#define PS__SIM_PER_RANK 8 /* 8-byte per-rank arrays: the rank_* members of ps_sim */

/* A class of stages in MoE mode: its dense and MoE layer counts and the first layer of the
 * first stage it was found on, whose layers its plans are made on. */
typedef struct ps__moe_class {
    int32_t dense, moe, first_layer;
} ps__moe_class;

/* A planned action: its duration and its all-to-all time, total and exposed. */
typedef struct ps__moe_cost {
    double dur, comm_total, comm_exposed;
    size_t first_op, nops; /* its planned operations: plan_ops[first_op .. first_op + nops) */
} ps__moe_cost;

/* The plans of one MoE model (a memo). Stages with the same layer composition share a class
 * (classes[0 .. nclass)); class_plans holds per class the plans of F, I, W and B, pair_plans
 * per (forward class, backward class, backward kind B/I) the fused pairs that occur,
 * pair_stride classes to a row (ps__sim_class_at, ps__sim_pair_at; dur < 0: not planned); the
 * cap_ fields are their capacities, plan_ops the operations of every plan (for the trace).
 * valid 0: empty (its tables keep their memory). hash: of model (sim_moe.c, model_hash);
 * used: the sim's memo clock when a run last read it. */
typedef struct ps__moe_memo {
    ps_moe_model model;
    uint64_t hash, used;
    int valid;
    int32_t nclass, pair_stride;
    ps__moe_class *classes;
    size_t cap_classes;
    ps__moe_cost *class_plans, *pair_plans;
    size_t cap_class_plans, cap_pair_plans;
    ps_plan_op *plan_ops;
    size_t nplan_ops, cap_plan_ops;
} ps__moe_memo;

/* Memos a simulator keeps besides the current one: the models of the last runs (the search
 * comes back to a model after a few dozen others, the knobs that change it varying fastest,
 * and after every ep, etp and those knobs of a pipeline depth: 768 models on pangu's 6,144
 * devices with tp 8 and cp 1, which 256 memos could not hold; docs/moe.md). */
#define PS__SIM_SPARE_MEMOS 1023

struct ps_sim {
    ps_allocator al;
    const ps_schedule *s;

    /* Cost model, copied from the problem so that durations stay available after the run:
     * the problem's costs, the per-stage costs (stage_cost, NULL when uniform; in MoE mode the
     * per-stage extras added to the plans, NULL when none) and the uniform
     * duration of each action kind. */
    double cost[5];
    ps_stage_cost *stage_cost;
    size_t nstage_cost;
    double dur_by_kind[PS_KIND_COUNT];
    /* The problem's per-micro-batch cost weights, copied likewise (mb_weight NULL: none):
     * each part of an action costs its micro-batch's weight times the above (sim.c,
     * weighted_duration()). */
    double *mb_weight;
    size_t n_mb_weight;

    /* Memory model, copied likewise: per stage (stage_mem, NULL when uniform) or the memory
     * each kind adds (mem_by_kind; a fused pair's forward part adds mem_fwd first). */
    ps_stage_mem *stage_mem;
    size_t nstage_mem;
    double mem_by_kind[PS_KIND_COUNT], mem_fwd, mem_limit;
    /* The first action that took its rank above the limit (over_rank < 0: none). */
    int32_t over_rank;
    int64_t over_idx;
    double over_value;

    /* The models above tabulated for the clock's step (tabulate() in sim.c): the duration and
     * the memory added of kinds F, I, W and B on each stage, index stage * 4 + kind, so that
     * every action but a fused pair costs two loads; cap_step stages of room. */
    double *step_dur, *step_mem;
    size_t cap_step;

    /* Timeline, indexed like the schedule's action array (kept unless no_timeline; timeline:
     * the current run kept it). */
    double *start, *end;
    size_t cap_acts;
    int no_timeline, timeline;
    /* End of F(s, j) and of its backward (I or B, or the parts of a fused pair), index
     * ps__sm(s, j): the times its consumers wait for. */
    double *fwd_end, *bwd_end;
    size_t cap_stage_mb;

    /* Per rank, one block of PS__SIM_PER_RANK arrays (see reserve()): when the rank is free
     * (after the run: the end of its last action), its busy time, its memory and peak memory,
     * the start of its first action, its live activations and their peak, and the replay's
     * cursor into its list. The metrics come from them, not from the timeline. */
    double *rank_free, *rank_busy, *rank_mem, *rank_mem_peak, *rank_first;
    int64_t *rank_live, *rank_live_peak, *rank_cur;
    int32_t cap_pp;
    ps_metrics metrics;

    /* MoE mode (moe set): durations from the overlap planner, planned per class of stages
     * (a layer composition) under a model. memo holds the current model's plans, which the
     * run's stages read through stage_class; spare the plans of up to PS__SIM_SPARE_MEMOS
     * other models of earlier runs (nspare of them; allocated at the first MoE run), so that
     * a run whose model is one of them plans only what is new (sim_moe.c). */
    int moe;
    ps__moe_memo memo;
    ps__moe_memo *spare;
    int32_t nspare;
    uint64_t memo_clock;
    uint64_t planned;     /* plans made by the planner since the simulator was made (tests) */
    int32_t *stage_class; /* nstages entries, then the first layer of each stage */
    int32_t *stage_first_layer;
    size_t cap_class_stages; /* stages the block has room for (2 int32 each) */
    ps_plan *planner;
    ps_comm_metrics comm;

    uint64_t version; /* of the schedule when it was simulated */
    int have;
    char err[PS__ERRLEN];
};

/* 1 when sim holds a timeline of its schedule as it is now. */
static inline int ps__sim_current(const ps_sim *sim)
{
    return sim->have && sim->s && sim->s->version == sim->version;
}

/* Each class has four plans, one per kind F, I, W, B: the kind is the slot. */
_Static_assert(PS_F == 0 && PS_I == 1 && PS_W == 2 && PS_B == 3,
               "class_plans holds the plans of F, I, W and B at slots 0 to 3");

/* Index in class_plans of the plan of kind (PS_F, PS_I, PS_W or PS_B) for stage class cls. */
static inline size_t ps__sim_class_at(int32_t cls, int kind)
{
    return (size_t)cls * 4 + (size_t)kind;
}

/* Index in pair_plans (stride classes to a row) of the fused pair whose forward part runs a
 * stage of class fcls and whose backward part, of kind bkind (B or I), a stage of class bcls. */
static inline size_t ps__sim_pair_at(int32_t stride, int32_t fcls, int32_t bcls, int bkind)
{
    return ((size_t)fcls * (size_t)stride + (size_t)bcls) * 2 + (bkind == PS_B ? 0 : 1);
}

/* The planned costs of action a in MoE mode. */
static inline const ps__moe_cost *ps__sim_moe_of(const ps_sim *sim, const ps_action *a)
{
    static const ps__moe_cost none = {0, 0, 0, 0, 0};
    const int32_t *c = sim->stage_class;
    switch (a->kind) {
    case PS_F:
    case PS_I:
    case PS_W:
    case PS_B:
        return &sim->memo.class_plans[ps__sim_class_at(c[a->stage], a->kind)];
    case PS_FB:
        return &sim->memo.pair_plans[ps__sim_pair_at(sim->memo.pair_stride, c[a->stage],
                                                     c[a->bstage], a->bkind)];
    default:
        return &none;
    }
}

/* ---- MoE mode (sim_moe.c) ---------------------------------------------------------------- */

/* Classes the stages of s by layer composition and plans every action kind of every class and
 * every fused pair s contains under pb's MoE model, keeping the plans of the last runs when the
 * model is the same; sets sim->moe. The tables only grow, so simulating again does not
 * allocate. Returns 0 or the error, with its message in sim->err. */
int ps__sim_moe_setup(ps_sim *sim, const ps_schedule *s, const ps_problem *pb);
/* The per-phase all-to-all totals of the timeline (sim->comm). */
void ps__sim_moe_metrics(ps_sim *sim, const ps_schedule *s);
/* Frees the MoE tables and the planner; sim leaves MoE mode. */
void ps__sim_moe_free(ps_sim *sim);

#endif
