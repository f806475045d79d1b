/*
 * --model and --hardware, shared by the commands of the performance model (estimate, balance):
 * a built-in name, or else a file (a HuggingFace config.json, a hardware file).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <pipesched/model.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A HuggingFace config or a hardware file is a few kilobytes. */
#define SPEC_LIMIT (16u << 20)
#define ERR_LEN 1024

/* Lists the built-in names of a table, for the message of an unknown one. */
static void list_names(const char *(*name)(size_t i))
{
    for (size_t i = 0; name(i); i++)
        fprintf(stderr, "%s%s", i ? ", " : "", name(i));
}

/* Reads the file behind a --model or --hardware that is not a built-in name. */
static int read_spec(const char *what, const char *arg, const char *(*name)(size_t i), char **text,
                     size_t *len)
{
    if (strcmp(arg, "-") && access(arg, F_OK)) {
        fprintf(stderr, "pipesched: --%s \"%s\" is neither a built-in (", what, arg);
        list_names(name);
        fprintf(stderr, ") nor a file\n");
        return EXIT_USAGE;
    }
    return cli_read_file(arg, SPEC_LIMIT, text, len) ? EXIT_USAGE : EXIT_OK;
}

int cli_load_model(const char *arg, ps_transformer *t)
{
    if (ps_transformer_builtin(arg, t) == 0)
        return EXIT_OK;
    char *text, err[ERR_LEN] = "";
    size_t len;
    int ex = read_spec("model", arg, ps_transformer_builtin_name, &text, &len);
    if (ex)
        return ex;
    int rc = ps_transformer_from_hf(text, len, t, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", arg, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    return EXIT_OK;
}

int cli_load_hardware(const char *arg, ps_hardware *hw)
{
    if (ps_hardware_builtin(arg, hw) == 0)
        return EXIT_OK;
    char *text, err[ERR_LEN] = "";
    size_t len;
    int ex = read_spec("hardware", arg, ps_hardware_builtin_name, &text, &len);
    if (ex)
        return ex;
    int rc = ps_hardware_from_json(text, len, hw, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", arg, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    return EXIT_OK;
}
