/*
 * tune under mpirun in a build with Open MPI (tune_mpi.h): libpipesched-tune-mpi, and libmpi
 * with it, loaded with dlopen (dl.h) only now, so that no other run of pipesched loads MPI.
 * SPDX-License-Identifier: MIT
 */
#include "tune_mpi.h"

#include "cli.h"
#include "dl.h"

#include <pipesched/tune_mpi.h>

#ifndef CLI_TUNE_MPI_SONAME
#error "meson defines CLI_TUNE_MPI_SONAME, the file name of libpipesched-tune-mpi"
#endif

typedef struct tune_mpi_api {
    int (*run)(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
               const ps_tune_job *job, MPI_Comm comm);
    int (*init)(int *rank, int *size);
    MPI_Comm (*world)(void);
    int (*agree)(MPI_Comm comm, int status, const char *msg, char *out, size_t cap);
    void (*finalize)(void);
} tune_mpi_api;

static tune_mpi_api api;
static int started;

int cli_mpi_begin(int *rank, int *size)
{
    tune_mpi_api a;
    const cli_dl_sym syms[] = {
        CLI_DL_SYM(a, run, "ps_tune_mpi_run"),           CLI_DL_SYM(a, init, "ps_tune_mpi_init"),
        CLI_DL_SYM(a, world, "ps_tune_mpi_world"),       CLI_DL_SYM(a, agree, "ps_tune_mpi_agree"),
        CLI_DL_SYM(a, finalize, "ps_tune_mpi_finalize"),
    };
    /* Every process fails here alike (the same program, library and launcher), before any
     * collective, so that each exits on its own. */
    if (cli_dl_load(CLI_TUNE_MPI_SONAME, syms, sizeof syms / sizeof *syms))
        return EXIT_USAGE;
    if (a.init(rank, size)) {
        fprintf(stderr, "pipesched: tune: MPI did not start\n");
        return EXIT_USAGE;
    }
    api = a;
    started = 1;
    return EXIT_OK;
}

int cli_mpi_run(ps_tune *t, const ps_transformer *m, const ps_hardware *hw, const ps_tune_job *j)
{
    return api.run(t, m, hw, j, api.world());
}

int cli_mpi_agree(int ex)
{
    char msg[4096];
    int agreed = api.agree(api.world(), ex, cli_mpi_captured(), msg, sizeof msg);
    /* Rank 0 printed its own failure; a failure of another rank alone is printed here. */
    if (agreed && !ex && *msg)
        fprintf(stderr, "%s\n", msg);
    else if (agreed && !ex)
        fprintf(stderr, "pipesched: tune: another process failed (exit status %d)\n", agreed);
    return agreed;
}

void cli_mpi_end(void)
{
    if (started)
        api.finalize();
    started = 0;
}
