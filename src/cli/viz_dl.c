/*
 * libpipesched-viz loaded on first use (viz_dl.h, dl.h).
 * SPDX-License-Identifier: MIT
 */
#include "viz_dl.h"

#include "dl.h"

#ifndef CLI_VIZ_SONAME
#error "meson defines CLI_VIZ_SONAME, the file name of libpipesched-viz"
#endif

cli_viz_api cli_viz;

int cli_viz_load(void)
{
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    if (state)
        return state < 0;
    state = -1;
    cli_viz_api api;
    const cli_dl_sym syms[] = {
        CLI_DL_SYM(api, config_init, "ps_viz_config_init"),
        CLI_DL_SYM(api, new_, "ps_viz_new"),
        CLI_DL_SYM(api, free_, "ps_viz_free"),
        CLI_DL_SYM(api, last_error, "ps_viz_last_error"),
        CLI_DL_SYM(api, timeline_svg, "ps_viz_timeline_svg"),
        CLI_DL_SYM(api, overlap_svg, "ps_viz_overlap_svg"),
        CLI_DL_SYM(api, dag_svg, "ps_viz_dag_svg"),
        CLI_DL_SYM(api, scatter_svg, "ps_viz_scatter_svg"),
    };
    if (cli_dl_load(CLI_VIZ_SONAME, syms, sizeof syms / sizeof *syms))
        return 1;
    cli_viz = api;
    state = 1;
    return 0;
}
