/*
 * tune under a launcher in a build without Open MPI (tune_mpi.h): refused, since every
 * process would search the whole space and print it.
 * SPDX-License-Identifier: MIT
 */
#include "tune_mpi.h"

#include "cli.h"

int cli_mpi_begin(int *rank, int *size)
{
    int env_rank, env_size;
    cli_mpi_launched(&env_rank, &env_size);
    if (env_rank <= 0) {
        char count[32] = "an unknown number of";
        if (env_size > 0)
            snprintf(count, sizeof count, "%d", env_size);
        fprintf(stderr,
                "pipesched: tune runs under mpirun (or another MPI launcher) with %s "
                "processes, and this pipesched was built without Open MPI (meson -Dmpi, "
                "libopenmpi-dev), so it cannot split the search: each process would run all of "
                "it. Run it without mpirun or with -np 1, or build with Open MPI\n",
                count);
    }
    *rank = env_rank, *size = env_size;
    return EXIT_USAGE;
}

int cli_mpi_run(ps_tune *t, const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j)
{
    return ps_tune_run(t, m, hw, j);
}

int cli_mpi_agree(int ex)
{
    return ex;
}

void cli_mpi_end(void)
{
}
