/*
 * libpipesched-viz loaded on first use (viz_dl.h). The program's run path (RUNPATH) leads
 * dlopen to the library: build/viz in the build tree, the installed library folder
 * ($ORIGIN/../lib...) once installed, as for the libraries it links.
 * SPDX-License-Identifier: MIT
 */
#include "viz_dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifndef CLI_VIZ_SONAME
#error "meson defines CLI_VIZ_SONAME, the file name of libpipesched-viz"
#endif

cli_viz_api cli_viz;

/* Looks sym up in lib into *fn (a function pointer of any type, by its bytes: ISO C has no
 * conversion from void * to a function pointer). */
static int sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (!p || size != sizeof p) {
        fprintf(stderr, "pipesched: cannot load %s: no %s\n", CLI_VIZ_SONAME, name);
        return -1;
    }
    memcpy(fn, &p, size);
    return 0;
}

#define SYM(field, name) sym(lib, name, &api.field, sizeof api.field)

int cli_viz_load(void)
{
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    if (state)
        return state < 0;
    state = -1;
    void *lib = dlopen(CLI_VIZ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        fprintf(stderr, "pipesched: cannot load %s: %s\n", CLI_VIZ_SONAME,
                why ? why : "dlopen failed");
        return 1;
    }
    cli_viz_api api;
    if (SYM(config_init, "ps_viz_config_init") || SYM(new_, "ps_viz_new") ||
        SYM(free_, "ps_viz_free") || SYM(last_error, "ps_viz_last_error") ||
        SYM(timeline_svg, "ps_viz_timeline_svg") || SYM(overlap_svg, "ps_viz_overlap_svg") ||
        SYM(dag_svg, "ps_viz_dag_svg")) {
        dlclose(lib);
        return 1;
    }
    cli_viz = api; /* the library stays loaded until exit */
    state = 1;
    return 0;
}
