/*
 * `mpirun -np N pipesched tune`: what tune.c needs of MPI (docs/tune.md, "Across processes").
 *
 * Builds with Open MPI compile tune_mpi_dl.c, which loads libpipesched-tune-mpi (and libmpi
 * through it) with dlopen only when tune runs under a launcher; builds without it compile
 * tune_mpi_none.c, which refuses to run a search under a launcher with more than one process
 * (every process would search the whole space and print it). tune_mpi.c holds what both share:
 * the launcher's environment and the quiet of the ranks other than 0.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_TUNE_MPI_H
#define PS_CLI_TUNE_MPI_H

#include <pipesched/tune.h>

#include <stddef.h>

/* From the environment alone (before MPI starts): 1 when the process was started by mpirun
 * (OMPI_COMM_WORLD_SIZE) or another PMIx launcher (PMIX_RANK) with more than one process or an
 * unknown count, with *rank its rank there (-1 unknown) and *size the count (-1 unknown); 0
 * otherwise (no launcher, or mpirun -np 1). */
int cli_mpi_launched(int *rank, int *size);

/* Called before tune parses its options: under a launcher, a rank other than 0 writes its
 * standard output nowhere and keeps its standard error in a temporary file, which
 * cli_mpi_agree sends to rank 0 when this rank fails alone. */
void cli_mpi_quiet(void);
/* What the quiet rank wrote on standard error (a static buffer, "" when none). */
const char *cli_mpi_captured(void);

/* Starts MPI for tune (after cli_mpi_launched said 1): *rank and *size of MPI_COMM_WORLD.
 * EXIT_OK, or EXIT_USAGE after saying why (this build has no MPI; the library or MPI cannot
 * start). */
int cli_mpi_begin(int *rank, int *size);
/* ps_tune_mpi_run over MPI_COMM_WORLD: the same return on every process. */
int cli_mpi_run(ps_tune *t, const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j);
/* Every process's exit status agreed: the status of the lowest rank that failed (EXIT_OK when
 * none), on every process; rank 0 prints the message of a rank other than itself that failed
 * (its captured standard error). */
int cli_mpi_agree(int ex);
/* MPI_Finalize. */
void cli_mpi_end(void);

#endif
