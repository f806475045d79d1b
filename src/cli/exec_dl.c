/*
 * libpipesched-exec loaded on first use (exec_dl.h, dl.h).
 * SPDX-License-Identifier: MIT
 */
#include "exec_dl.h"

#include "dl.h"

#ifndef CLI_EXEC_SONAME
#error "meson defines CLI_EXEC_SONAME, the file name of libpipesched-exec"
#endif

cli_exec_api cli_exec;

int cli_exec_load(void)
{
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    if (state)
        return state < 0;
    state = -1;
    cli_exec_api api;
    const cli_dl_sym syms[] = {
        CLI_DL_SYM(api, config_init, "ps_exec_config_init"),
        CLI_DL_SYM(api, new_, "ps_exec_new"),
        CLI_DL_SYM(api, start, "ps_exec_start"),
        CLI_DL_SYM(api, status, "ps_exec_status"),
        CLI_DL_SYM(api, last_error, "ps_exec_last_error"),
        CLI_DL_SYM(api, measured, "ps_exec_measured"),
        CLI_DL_SYM(api, close, "ps_exec_close"),
        /* libuv, a dependency of libpipesched-exec: dlsym searches it through the handle. */
        CLI_DL_SYM(api, loop_init, "uv_loop_init"),
        CLI_DL_SYM(api, run, "uv_run"),
        CLI_DL_SYM(api, loop_close, "uv_loop_close"),
    };
    if (cli_dl_load(CLI_EXEC_SONAME, syms, sizeof syms / sizeof *syms))
        return 1;
    cli_exec = api;
    state = 1;
    return 0;
}
