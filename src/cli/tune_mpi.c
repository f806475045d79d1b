/*
 * tune under a launcher: the environment and the quiet ranks (tune_mpi.h).
 * SPDX-License-Identifier: MIT
 */
#include "tune_mpi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAPTURE_LEN 4096

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 0 || n > 1 << 24 ? -1 : (int)n;
}

int cli_mpi_launched(int *rank, int *size)
{
    *size = env_int("OMPI_COMM_WORLD_SIZE");
    *rank = env_int("OMPI_COMM_WORLD_RANK");
    if (*rank < 0)
        *rank = env_int("PMIX_RANK");
    if ((*size < 0 && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) || *size == 1) {
        *rank = 0, *size = 1; /* one process: the search as without a launcher */
        return 0;
    }
    return 1;
}

static FILE *captured_file;

void cli_mpi_quiet(void)
{
    int rank, size;
    if (!cli_mpi_launched(&rank, &size) || rank == 0)
        return;
    /* rank -1 (a launcher that does not say) is quiet too: MPI tells the rank later. */
    int null = open("/dev/null", O_WRONLY);
    captured_file = tmpfile();
    if (null >= 0) {
        fflush(stdout);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    if (captured_file) {
        fflush(stderr);
        dup2(fileno(captured_file), STDERR_FILENO);
    }
}

const char *cli_mpi_captured(void)
{
    static char text[CAPTURE_LEN];
    text[0] = 0;
    if (!captured_file)
        return text;
    fflush(stderr);
    rewind(captured_file);
    size_t n = fread(text, 1, sizeof text - 1, captured_file);
    text[n] = 0;
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = 0;
    return text;
}
