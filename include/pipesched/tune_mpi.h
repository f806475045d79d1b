/*
 * pipesched tune across MPI processes (libpipesched-tune-mpi, docs/tune.md "Across processes").
 *
 * A library of its own, built when Open MPI is found (meson -Dmpi), so that nothing else loads
 * libmpi: the pipesched program loads it with dlopen only when `tune` runs under mpirun.
 * ps_tune_mpi_run is ps_tune_run split over the processes of a communicator: process r of n
 * takes the chunks of 256 candidate numbers r, r + n, r + 2n, ... (a static interleave), runs
 * them on its own threads (job.threads each), and the processes exchange the least K-th best
 * step time any of them has found with a non-blocking all-reduce between chunks, which every
 * process prunes against. Rank 0 then gathers the others' top K, fronts, rejection counts,
 * records (job.record_all) and figures and merges them: its handle holds what ps_tune_run over
 * the whole space holds (the same top K, front, reasons, counts and CSV; the figures that
 * depend on the threads and timing, pruned, reused and seconds, differ). The processes need
 * one build of pipesched (the results travel in its native layout) and MPI initialised with
 * at least MPI_THREAD_FUNNELED for the shared bound (with less, nothing is shared but the
 * answer). job.csv_write is rank 0's (the others' is not called): with MPI_THREAD_MULTIPLE
 * every process formats its own chunks' lines and hands them to rank 0, which writes them in
 * candidate order as the search goes, in memory bounded per process (docs/tune.md, "The CSV
 * as the search goes"); with less, the processes record their share (as job.record_all) and
 * rank 0 writes the file after the gather. Every function is collective over its
 * communicator.
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_TUNE_MPI_H
#define PIPESCHED_TUNE_MPI_H

#include <pipesched/tune.h>

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The search of ps_tune_run split over comm's processes, every one passing the same model,
 * hardware, job and constraints (ps_tune_allow, ps_tune_max). Returns the same code on every
 * process: 0, or the error of the lowest rank that failed; rank 0's handle holds the merged
 * results and, on failure, "process R of N: " and that rank's message. The other ranks'
 * handles hold their own share. MPI errors follow comm's error handler.
 */
PS_EXTERN int ps_tune_mpi_run(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                              const ps_tune_job *job, MPI_Comm comm);

/* For a program that does not link MPI itself (the pipesched program, which reaches this
 * library and MPI through dlopen): MPI_Init_thread with MPI_THREAD_MULTIPLE unless MPI is
 * initialised already, then MPI_COMM_WORLD's rank and size. 0, or -1 when MPI fails. */
PS_EXTERN int ps_tune_mpi_init(int *rank, int *size);
PS_EXTERN MPI_Comm ps_tune_mpi_world(void);
/* Every process's status (0 ok, or a failure) and message: returns on every process the status
 * of the lowest rank whose status is not 0 (0 when none), and copies that rank's message into
 * out (cap bytes, NUL-terminated) on rank 0. */
PS_EXTERN int ps_tune_mpi_agree(MPI_Comm comm, int status, const char *msg, char *out, size_t cap);
/* MPI_Finalize, unless MPI was finalised already. */
PS_EXTERN void ps_tune_mpi_finalize(void);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_TUNE_MPI_H */
