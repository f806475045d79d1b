/*
 * libpipesched-exec loaded on first use (dlopen, dl.h), so that the commands that run nothing
 * do not load libuv at start-up (issue 13). run.c includes this after <pipesched/exec.h>; its
 * calls of ps_exec_* and of the libuv functions it drives its loop with go through the table
 * that cli_exec_load() fills (libuv's from the library's own dependency). Call cli_exec_load()
 * before any of them.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_EXEC_DL_H
#define PS_CLI_EXEC_DL_H

#include <pipesched/exec.h>

typedef struct cli_exec_api {
    void (*config_init)(ps_exec_config *cfg);
    int (*new_)(ps_exec **out, uv_loop_t *loop, const ps_schedule *s, const ps_exec_config *cfg,
                const ps_allocator *alloc);
    int (*start)(ps_exec *x);
    int (*status)(const ps_exec *x);
    const char *(*last_error)(const ps_exec *x);
    int (*measured)(const ps_exec *x, double unit, ps_sim *sim);
    void (*close)(ps_exec *x, ps_exec_close_cb close_cb);
    int (*loop_init)(uv_loop_t *loop);
    int (*run)(uv_loop_t *loop, uv_run_mode mode);
    int (*loop_close)(uv_loop_t *loop);
} cli_exec_api;

extern cli_exec_api cli_exec;

/* Loads the library once (later calls return at once). Returns 0, or non-zero after printing
 * why on stderr ("pipesched: cannot load ..."). */
int cli_exec_load(void);

#define ps_exec_config_init (cli_exec.config_init)
#define ps_exec_new (cli_exec.new_)
#define ps_exec_start (cli_exec.start)
#define ps_exec_status (cli_exec.status)
#define ps_exec_last_error (cli_exec.last_error)
#define ps_exec_measured (cli_exec.measured)
#define ps_exec_close (cli_exec.close)
#define uv_loop_init (cli_exec.loop_init)
#define uv_run (cli_exec.run)
#define uv_loop_close (cli_exec.loop_close)

#endif
