/*
 * The communication-overlap planner: its handle and the names its files share. Not installed.
 *
 * A step of one device runs the sub-operations (ps_op) of a forward chunk and/or a backward
 * chunk on two streams, compute and communication. The planner turns the step into a small
 * DAG of operations, chooses an order for each stream, and times the orders. One file per job:
 *
 *   plan.c        the handle, its memory, the public entry points, the results and stats;
 *   graph.c       the operation DAG of a forward chunk, a backward chunk, or a fused pair;
 *   list_sched.c  the two-stream timing of orders, and the greedy list scheduler on top of it;
 *   order.c       the orders that are not searched: natural, MindSpeed, Megatron, serial;
 *   search.c      the choice per method: every candidate order, the best kept, local search;
 *   stage.c       the model's layers over the model stages, and the per-stage F/I/W costs.
 *
 * Everything lives in flat arrays on the handle, sized for the largest step planned so far:
 * the simulator plans thousands of steps per iteration, so a plan allocates nothing once the
 * handle has grown. The operations of a step are nodes in creation order, which is a
 * topological order; an order of a stream is an array of node ids.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_PLANNER_H
#define PS_PLANNER_H

#include "internal.h"

/* At most two predecessors from the layer's chain plus one extra edge (see graph.c). */
#define PS__PLAN_MAXDEP 3

/* One operation of the step. */
typedef struct ps__plan_node {
    uint8_t op, stream, part, dense;
    int32_t layer;
    double dur;
    int32_t dep[PS__PLAN_MAXDEP];
    int32_t ndep;
    int32_t xdep;  /* extra edge of a fixed order (Megatron), -1 = none */
    uint8_t feeds; /* some successor runs on the communication stream */
    double prio;   /* longest path from this operation's start to the end */
} ps__plan_node;

/* The two-stream machine's state at the start of one turn of its loop (list_sched.c): the
 * clock, the compute work left and the communication end, the makespan so far, each stream's
 * work not started yet (the sum of its waiting operations' durations), each stream's running
 * operation and place in its order, and how many operations had finished. */
typedef struct ps__plan_state {
    double t, rem, end1, makespan, wait[2];
    int32_t cur[2];
    size_t i[2], nfin;
} ps__plan_state;

/* A node's priority and id, sorted by the list scheduler to rank the priorities. */
typedef struct ps__plan_prio {
    double prio;
    int32_t id;
} ps__plan_prio;

struct ps_plan {
    ps_allocator al;
    ps__plan_node *n;
    size_t nn, ncap;
    /* Working orders (ord, len) and the best orders found (best); the times of the working
     * orders (st, en) and of the best (bst, ben); finished flags (fin). All ncap long; len[s]
     * is the length of stream s's order in ord and best alike. tmp keeps the list scheduler's
     * given orders. */
    int32_t *ord[2], *best[2], *tmp[2];
    size_t len[2];
    double *st, *en, *bst, *ben;
    uint8_t *fin;
    /* Checkpoints of a timing of the best orders without extra edges (ps__list_sched_record):
     * cp[s][p] is the state when stream s first stood idle at place p, fin_order the
     * operations in the order they finished, cst/cen their times. ncap long each. */
    ps__plan_state *cp[2];
    int32_t *fin_order;
    double *cst, *cen;
    double rec_makespan; /* the makespan of the recorded timing */
    /* What resumed timings changed since st/en/fin last held the recorded state (clean): the
     * operations they started (dirty, ndirty of them, ncap long) and how many of fin_order
     * fin flags (fin_upto). list_sched.c, recorded_state(). */
    int32_t *dirty;
    size_t ndirty, fin_upto;
    int clean;
    /* Whether the last timing stopped where it met the recorded one (met), and the places
     * each stream had reached then, counting a running operation (met_at): before them and
     * from the checkpoint it started at, the two timings may differ; elsewhere they agree. */
    int met;
    size_t met_at[2];
    /* The local search's ancestor sets (search.c): node k's ancestors, transitively, are the
     * set bits of anc[k * anc_words ...], anc_words = ceil(nn / 64); anc_cap words allocated
     * (0: none, the direct predecessors are checked instead). */
    uint64_t *anc;
    size_t anc_words, anc_cap;
    /* The list scheduler's workspace (list_sched.c): 9 ncap + 1 int32 (priority classes,
     * places, predecessor counts, streams, the two heaps, successor lists) and ncap
     * priorities to sort. */
    int32_t *lsw;
    ps__plan_prio *lsort;
    /* Operations the two-stream machine has finished timing (list_sched.c counts, the local
     * search zeroes it and stops at its budget). */
    size_t timed;
    /* (part, layer in chunk, op) -> node id, for the fixed orders: idx[part] has
     * nl[part] * PS_OP_COUNT entries in use. */
    int32_t *idx[2];
    size_t idxcap[2];
    /* Layer count and first model layer of the forward (0) and backward (1) chunk. */
    int32_t nl[2], l0[2];
    double slowdown;
    /* The result: the operations in start order, and the stats of the best plan. */
    ps_plan_op *ops;
    size_t nops, opscap;
    ps_plan_stats stats;
    int have;
    char err[PS__ERRLEN];
};

/* ---- plan.c --------------------------------------------------------------------------------- */

/* All-to-all time (and p2p time) not covered by compute, from the times st/en of the orders
 * o[0] (compute) and o[1] (communication) of lengths len[]. */
void ps__plan_exposure(const ps_plan *pl, int32_t *const o[2], const size_t len[2],
                       const double *st, const double *en, ps_plan_stats *out);

/* ---- graph.c -------------------------------------------------------------------------------- */

/* Builds the DAG of the forward of layers [fl0, fl0+fn) and the backward (bkind PS_B, PS_I or
 * PS_W) of layers [bl0, bl0+bn) into pl (fn or bn 0: that part is absent), with priorities
 * and successor flags. pl must have room (plan.c reserves it) and nl/l0 set. */
void ps__graph_build(ps_plan *pl, const ps_moe_model *m, int32_t fl0, int32_t fn, int bkind,
                     int32_t bl0, int32_t bn);

/* ---- list_sched.c --------------------------------------------------------------------------- */

/* Times the working orders into st/en; use_x: honour the fixed order's extra edges. Returns
 * the makespan, -1 when the orders contradict the dependencies, or -2 once the makespan is
 * known to exceed limit (INFINITY: none; st/en are then incomplete). */
double ps__list_sched_time(ps_plan *pl, int use_x, double limit);
/* Times the working orders, which must be the best ones, like ps__list_sched_time without a
 * limit, and records the checkpoints that ps__list_sched_resume starts from. */
double ps__list_sched_record(ps_plan *pl);
/* ps__list_sched_time of working orders that equal the recorded ones except in places
 * [p0, p1) of stream s: the timing starts from the checkpoint where they part, and stops
 * where its state meets the recorded timing's again after them, with the same result bit for
 * bit (the machine is deterministic and its state there is the same). */
double ps__list_sched_resume(ps_plan *pl, int s, size_t p0, size_t p1, double limit);
/* The all-to-all time exposed by places [lo[s], hi[s]) of the orders o[s] with times st/en,
 * the operations' own time less the compute of the other range that covers it (p2p not
 * counted). Once a resumed timing has met the recorded one (met), the change of its exposure
 * from the recorded one's is this over the places where they differ, the working orders and
 * times less the best ones: every operation that runs between the checkpoint and the meeting
 * lies there in both, and everything else runs at the same times in both. */
double ps__plan_exposure_part(const ps_plan *pl, int32_t *const o[2], const size_t lo[2],
                              const size_t hi[2], const double *st, const double *en);
/* Reorders the working orders into a list schedule (whenever a stream is free it takes the
 * ready operation of highest priority; prefer_feed: operations feeding the communication
 * stream first) and times it. Returns the makespan, or -1 when it gets stuck. */
double ps__list_sched_build(ps_plan *pl, int prefer_feed);

/* ---- order.c -------------------------------------------------------------------------------- */

/* The natural order: node ids split by stream. */
void ps__order_natural(ps_plan *pl);
/* MindSpeed's (megatron 0) or Megatron's (megatron 1) fused order into the working orders;
 * Megatron's also sets the extra edges (xdep) of its program order. */
void ps__order_fused(ps_plan *pl, int megatron);
/* The serial plan, straight into the best orders and times. */
void ps__order_serial(ps_plan *pl);

/* ---- search.c ------------------------------------------------------------------------------- */

/* Chooses the best orders for method (not SERIAL) into best/bst/ben. PS_EINVAL when no
 * candidate order is feasible (which the natural order rules out). */
int ps__search_orders(ps_plan *pl, int method);
/* The ancestor sets of the step's nodes into pl->anc (NULL when memory is short). */
void ps__plan_ancestors(ps_plan *pl);

#endif /* PS_PLANNER_H */
