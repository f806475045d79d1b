/*
 * The optional libraries the CLI loads on first use with dlopen (viz_dl.h: libpipesched-viz
 * for draw; exec_dl.h: libpipesched-exec, and through it libuv, for run), so that the
 * commands that draw and run nothing start with the core library alone (issue 13).
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_DL_H
#define PS_CLI_DL_H

#include <stddef.h>

/* One function of a library: its symbol and where its pointer goes (a function pointer of any
 * type, of size bytes). */
typedef struct cli_dl_sym {
    const char *name;
    void *fn;
    size_t size;
} cli_dl_sym;

#define CLI_DL_SYM(api, field, name)                                                               \
    {                                                                                              \
        name, &(api).field, sizeof(api).field                                                      \
    }

/*
 * Opens soname (RTLD_NOW | RTLD_LOCAL; the program's run path leads dlopen to it: the build
 * folder in the build tree, the installed library folder once installed) and fills the n
 * pointers of syms, which may also name functions of the libraries soname depends on. The
 * library stays loaded until exit. Returns 0, or non-zero after printing why on stderr
 * ("pipesched: cannot load ..."); some pointers may be filled then (fill a local table and
 * copy it on success).
 */
int cli_dl_load(const char *soname, const cli_dl_sym *syms, size_t n);

#endif
