/*
 * pipesched viz — SVG drawings of schedules, simulated timelines and overlap plans.
 *
 * A separate library (libpipesched-viz) on top of libpipesched, so that a host can embed the
 * core without Graphviz. It renders in-process with Graphviz (cgraph + gvc) into memory and
 * hands the SVG to a ps_write_fn callback, like ps_export(). Four drawings:
 *
 *   ps_viz_timeline_svg  the bubble timeline: one lane per rank, x = simulated time
 *   ps_viz_overlap_svg   one planned step: compute and communication streams
 *   ps_viz_dag_svg       the dependency graph of a small schedule with its critical path
 *   ps_viz_scatter_svg   a scatter plot of labelled points (tune's Pareto front)
 *
 * Threads and process state. Graphviz is not thread-safe and keeps process-global state: the
 * library holds one Graphviz context for the whole process (created on first use; creating
 * and freeing several in one process is unsafe in Graphviz 2.42) and routes Graphviz's
 * messages into the handle's error buffer while it draws (agseterrf(), restored afterwards).
 * Call the functions below from one thread at a time. Memory that Graphviz allocates does
 * not go through the handle's allocator; the library's own buffers do.
 *
 * Output is deterministic for the same input on the same machine. Text widths come from the
 * installed fonts (the drawings ask for the generic "sans-serif" family), so the bytes may
 * differ across machines.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_VIZ_H
#define PIPESCHED_VIZ_H

#include <pipesched/pipesched.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard limits of the configuration below. */
#define PS_VIZ_MAX_BOXES 100000     /* timeline boxes (actions, fused halves, idle gaps) */
#define PS_VIZ_MAX_LANES 1024       /* timeline lanes (ranks) */
#define PS_VIZ_MAX_DAG_ACTIONS 2000 /* DAG nodes */

typedef struct ps_viz ps_viz;

typedef struct ps_viz_config {
    /* Timeline: at most this many boxes (default 8000). A larger timeline is cut at the time
     * where the budget runs out and the title says so. */
    int max_boxes;
    /* Timeline: at most this many lanes (default 64); further ranks are left out and the title
     * says so. */
    int max_lanes;
    /* Widest time axis in points (default 4000, at least 200). Timelines and overlap diagrams
     * are scaled to fit; labels are dropped from boxes too narrow to hold them. */
    double max_width;
    /* DAG: schedules with more compute actions are refused with PS_ERANGE (default 400). */
    int max_dag_actions;
    /* Timeline: the unit of the simulated times, written after the makespan, the bubble and
     * the axis ("s" for a simulation in seconds, as ps_estimate_sim's); "" (the default):
     * abstract cost units, written without a unit. Printable ASCII without a backslash,
     * NUL-terminated within the array. */
    char time_unit[16];
    /* Timeline: the time window drawn, [window_from, window_to) in the simulation's time
     * (default 0 and 0: the whole run; window_to 0 or beyond the makespan: to the makespan).
     * Actions that cross an end are drawn clipped to it; the axis starts at window_from and
     * the title names the window. Finite, 0 <= window_from, and window_to 0 or above
     * window_from. */
    double window_from, window_to;
    /* Timeline: 1 draws the whole window at a readable size (at most 1200 points wide) as
     * per-rank busy/idle bands instead of one box per action: the busy stretches of a rank,
     * with idle gaps shorter than a band's resolution merged into them, and the idle bands in
     * grey (classes "busy" and "idle"); each lane's label gives the rank's idle fraction in
     * the window. The box budget is not a cut in this mode: the resolution is chosen so that
     * the bands fit it. 0 (the default): the detailed timeline. */
    int overview;
} ps_viz_config;

/* Fills *cfg with the defaults above. */
PS_EXTERN void ps_viz_config_init(ps_viz_config *cfg);

/*
 * Creates a drawing handle. cfg may be NULL (defaults); it is copied. Returns 0, PS_EINVAL
 * (out NULL), PS_ERANGE (a configuration value outside its limit) or PS_ENOMEM. Caller frees
 * with ps_viz_free().
 */
PS_EXTERN int ps_viz_new(ps_viz **out, const ps_viz_config *cfg, const ps_allocator *alloc);
PS_EXTERN void ps_viz_free(ps_viz *v);
/* The message of the last failure on v ("" if none). Borrowed until the next call on v. */
PS_EXTERN const char *ps_viz_last_error(const ps_viz *v);

/*
 * Draws the bubble timeline of s as simulated by sim (ps_sim_run(sim, s, ...), or a measured
 * timeline): one lane per rank, a box per compute action at [start, end) labelled with its
 * micro-batch, coloured by kind (fused pairs as two halves, the forward above), lighter shades
 * for the later chunks of a rank, idle gaps in grey, a legend and a title with the schedule,
 * pp/vpp/m, makespan, bubble, bubble ratio and peak activations. With a time_unit in the
 * configuration, the makespan and the bubble carry it and the axis ends with "time (unit)".
 *
 * SVG structure, for programs that read it: each drawn item is a <g class="node ..."> whose
 * <title> names it: "r{rank}.{index}" an action (index into ps_schedule_rank_actions; classes
 * "act", the kind "F"/"I"/"W"/"B", "c{chunk}"), "r{rank}.{index}f" / "r{rank}.{index}b" the
 * halves of a fused pair (class "act FB ..."), "r{rank}.gap{k}" an idle gap (class "idle"),
 * "lane{rank}" a lane label, "tick{k}" an axis label, "axis.unit" the axis's unit (with a
 * time_unit), "legend..." the legend (class "legend").
 *
 * Returns 0; PS_EINVAL (NULL arguments, an empty schedule, a timeline of another pp);
 * PS_ESTATE (sim holds no timeline of s); PS_ENOMEM; PS_ESYS (Graphviz failed, with its
 * message); PS_EIO (write returned non-zero). write is not called when an error is returned,
 * except for PS_EIO.
 */
PS_EXTERN int ps_viz_timeline_svg(ps_viz *v, const ps_schedule *s, const ps_sim *sim,
                                  ps_write_fn write, void *ud);

/*
 * Draws one planned step (ps_plan_ops(), ps_plan_stats_get(), or hand-made arrays): a compute
 * lane and a communication lane (by ps_plan_op.stream), a box per operation labelled with
 * ps_op_name() and the layer, the forward chunk's operations in blue shades and the backward
 * chunk's in orange shades, the exposed communication (communication time during which no
 * compute operation runs, computed from ops) as red bars under the communication lane, and a
 * title of `title` (may be NULL; any text, escaped) with the duration, the exposed time and the
 * overlap percentage of stats.
 *
 * Titles in the SVG: "op{i}" operation i of ops (classes "op", "compute"/"comm", "fwd"/"bwd"),
 * "exposed{k}" an exposed interval (class "exposed"), "lane0"/"lane1", "tick{k}", "legend...".
 *
 * Returns 0; PS_EINVAL (ops or stats NULL, n == 0, an operation with a bad op, stream or part
 * or with end < start or non-finite times); PS_ERANGE (n > PS_VIZ_MAX_BOXES); PS_ENOMEM;
 * PS_ESYS; PS_EIO.
 */
PS_EXTERN int ps_viz_overlap_svg(ps_viz *v, const ps_plan_op *ops, size_t n,
                                 const ps_plan_stats *stats, const char *title, ps_write_fn write,
                                 void *ud);

/*
 * Draws the dependency graph of s (Graphviz dot, time from left to right, one cluster per
 * rank): a node per compute action labelled with its PyTorch action string, data dependencies
 * as solid edges, the order of a rank's list as dashed grey edges (left out where a data edge
 * joins the same two actions), and in red the critical path of sim's timeline: from an action
 * that ends at the makespan, back through the predecessors that end exactly when their successor
 * starts (or, across ranks, the latest-ending data predecessor: the transfer time explains the
 * gap), to an action with no such predecessor.
 *
 * Titles in the SVG: nodes "r{rank}.{index}" (classes "act", the kind, and "critical" on the
 * path); edges "r{a}.{i}->r{b}.{j}" (classes "data" or "order", and "critical").
 *
 * Returns 0; PS_EINVAL (NULL arguments, an empty schedule); PS_ESTATE (no timeline of s);
 * PS_ERANGE (more actions than max_dag_actions: draw a timeline instead); PS_ENOMEM; PS_ESYS;
 * PS_EIO.
 */
PS_EXTERN int ps_viz_dag_svg(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_write_fn write,
                             void *ud);

/*
 * Draws a scatter plot of the n points (x[i], y[i]) on linear axes (each widened to whole
 * ticks), the axes labelled x_label and y_label (the units in them: "peak memory (GiB)"), a
 * title (may be NULL) with the point count, and each point a small circle with labels[i]
 * beside it (labels or an entry may be NULL: no text; plain text of at most 120 bytes, no
 * backslash). tune --pareto-svg draws its Pareto front with it.
 *
 * No two texts overlap, and none covers a point: each label goes to the first spot beside its
 * point that is free (right of it, left, above, below, then a line or two higher or lower),
 * points in their order; a label with no free spot goes to a table under the plot (a row per
 * point: its number i + 1, its coordinates, its label), and the point gets that number beside
 * it where the number fits. The title adds how many labels the table holds. Above 500 points
 * every label goes to the table (the placement is quadratic in the points).
 *
 * Titles in the SVG: "point{i}" the mark of point i (class "point"), "label{i}" its text
 * (class "point-label", and "table" in the table), "tag{i}" its number beside it (class
 * "point-tag"), "key{i}" its number and coordinates in the table and "table.head" the table's
 * heading (class "table"), "xtick{k}"/"ytick{k}" the tick labels, "axis.x"/"axis.y" the axis
 * labels (class "axis-label"), lines of class "axis".
 *
 * Returns 0; PS_EINVAL (x, y or write NULL, n == 0, a coordinate not finite, a label longer
 * than 120 bytes or with a backslash, naming the point); PS_ERANGE (n > PS_VIZ_MAX_BOXES);
 * PS_ENOMEM; PS_ESYS; PS_EIO.
 */
PS_EXTERN int ps_viz_scatter_svg(ps_viz *v, const double *x, const double *y,
                                 const char *const *labels, size_t n, const char *x_label,
                                 const char *y_label, const char *title, ps_write_fn write,
                                 void *ud);

/*
 * Frees the process's Graphviz context. Optional: call it once at the end of the process (for
 * leak checkers). Afterwards the drawing functions fail with PS_ESTATE, because Graphviz 2.42
 * cannot safely create a second context in the same process.
 */
PS_EXTERN void ps_viz_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_VIZ_H */
