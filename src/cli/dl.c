/*
 * dlopen of the CLI's optional libraries (dl.h).
 * SPDX-License-Identifier: MIT
 */
#include "dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int cli_dl_load(const char *soname, const cli_dl_sym *syms, size_t n)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        fprintf(stderr, "pipesched: cannot load %s: %s\n", soname, why ? why : "dlopen failed");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (!p || syms[i].size != sizeof p) {
            fprintf(stderr, "pipesched: cannot load %s: no %s\n", soname, syms[i].name);
            dlclose(lib);
            return 1;
        }
        /* ISO C has no conversion from void * to a function pointer: copy the bytes. */
        memcpy(syms[i].fn, &p, syms[i].size);
    }
    return 0;
}
