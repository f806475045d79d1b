/*
 * libpipesched-viz loaded on first use (dlopen), so that commands that draw nothing do not
 * load Graphviz and its dependencies at start-up (issue 13: 8 of the program's 15 shared
 * libraries). draw.c includes this after <pipesched/viz.h>; its calls of ps_viz_* go through
 * the table that cli_viz_load() fills. Call cli_viz_load() before any of them.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_VIZ_DL_H
#define PS_CLI_VIZ_DL_H

#include <pipesched/viz.h>

typedef struct cli_viz_api {
    void (*config_init)(ps_viz_config *cfg);
    int (*new_)(ps_viz **out, const ps_viz_config *cfg, const ps_allocator *alloc);
    void (*free_)(ps_viz *v);
    const char *(*last_error)(const ps_viz *v);
    int (*timeline_svg)(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_write_fn write,
                        void *ud);
    int (*overlap_svg)(ps_viz *v, const ps_plan_op *ops, size_t n, const ps_plan_stats *stats,
                       const char *title, ps_write_fn write, void *ud);
    int (*dag_svg)(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_write_fn write, void *ud);
    int (*scatter_svg)(ps_viz *v, const double *x, const double *y, const char *const *labels,
                       size_t n, const char *x_label, const char *y_label, const char *title,
                       ps_write_fn write, void *ud);
} cli_viz_api;

extern cli_viz_api cli_viz;

/* Loads the library once (later calls return at once). Returns 0, or non-zero after printing
 * why on stderr ("pipesched: cannot load ..."). */
int cli_viz_load(void);

#define ps_viz_config_init (cli_viz.config_init)
#define ps_viz_new (cli_viz.new_)
#define ps_viz_free(v) ((v) ? cli_viz.free_(v) : (void)0)
#define ps_viz_last_error (cli_viz.last_error)
#define ps_viz_timeline_svg (cli_viz.timeline_svg)
#define ps_viz_overlap_svg (cli_viz.overlap_svg)
#define ps_viz_dag_svg (cli_viz.dag_svg)
#define ps_viz_scatter_svg (cli_viz.scatter_svg)

#endif
