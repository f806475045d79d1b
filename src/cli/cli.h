/*
 * Helpers of the pipesched command-line tool.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_H
#define PS_CLI_H

#include <pipesched/pipesched.h>

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

/* Reads a whole file (or stdin for "-") of at most limit bytes. Caller frees *data. Prints
 * the reason and returns non-zero on failure. */
int cli_read_file(const char *path, size_t limit, char **data, size_t *len);
/* Strict integer parsing: the whole string, in [lo, hi]. Prints the reason on failure. */
int cli_parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out);
/* ps_write_fn over a FILE*. */
int cli_write_file(void *ud, const char *data, size_t len);
/* Maps a library error code to the exit status: 1 validation, 2 input, 3 internal. */
int cli_exit_code(int rc);

/* Planner method by name (adaptive, mindspeed, megatron, serial), or -1 with a message. */
int cli_parse_method(const char *name);
/* The model stage (of `stages`) with the most MoE layers, the first of them: the typical
 * chunk of the steady phase. */
int cli_default_stage(const ps_problem *pb, int stages);
/* `pipesched plan`: writes the plans of a fused pair and a warm-up chunk of s's model stages
 * (fstage/bstage < 0: defaults) to f. Returns the exit status. */
int cli_plan(FILE *f, const ps_problem *pb, const ps_schedule *s, int method, int fstage,
             int bstage, int json);
/* The MoE part of `pipesched demo`: Adaptive Pipe on the given config (JSON text). */
int cli_demo_moe(FILE *f, const char *json, const char *source);

#endif
