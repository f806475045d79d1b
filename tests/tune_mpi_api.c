/*
 * The library API of the search across MPI processes (include/pipesched/tune_mpi.h), run by the
 * mpi suite under mpirun -np 4: the world split into two communicators of 2 (even and odd
 * ranks), each searching with ps_tune_mpi_run on its own (one without pruning and with every
 * candidate recorded, one with pruning and 1 or 2 threads per process), and rank 0 of each
 * comparing with ps_tune_run in one process: the same top K, front, reasons and counts, the
 * same CSV without pruning. Then the failures: every process with a bad job (the same code
 * everywhere, the message on rank 0), and one process alone with a bad job (its code
 * everywhere, rank 0 naming it).
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/tune_mpi.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failed = 1;                                                                            \
            fprintf(stderr, "FAIL (line %d): ", __LINE__);                                         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

static int to_memory(void *ud, const char *data, size_t len)
{
    return fwrite(data, 1, len, ud) == len ? 0 : -1;
}

static char *csv(const ps_tune *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || ps_tune_write_csv(t, to_memory, f))
        CHECK(0, "ps_tune_write_csv failed");
    if (f)
        fclose(f);
    return buf;
}

static ps_tune *new_tune(void)
{
    ps_tune *t = NULL;
    CHECK(ps_tune_new(&t, NULL) == 0, "ps_tune_new");
    ps_tune_max(t, PS_KNOB_PP, 4);
    ps_tune_max(t, PS_KNOB_VPP, 4);
    return t;
}

/* Rank 0 of comm: the merged handle a against one process's b. */
static void same(const ps_tune *a, const ps_tune *b, int csv_too, int procs)
{
    CHECK(ps_tune_top_count(a) == ps_tune_top_count(b), "top count");
    CHECK(ps_tune_front_count(a) == ps_tune_front_count(b), "front count");
    for (size_t i = 0; i < ps_tune_top_count(a) && i < ps_tune_top_count(b); i++) {
        ps_tune_row x, y;
        ps_tune_top(a, i, &x);
        ps_tune_top(b, i, &y);
        CHECK(x.index == y.index && x.result.step_time_s == y.result.step_time_s, "top row %zu", i);
    }
    for (size_t i = 0; i < ps_tune_front_count(a) && i < ps_tune_front_count(b); i++) {
        ps_tune_row x, y;
        ps_tune_front(a, i, &x);
        ps_tune_front(b, i, &y);
        CHECK(x.index == y.index, "front row %zu", i);
    }
    CHECK(ps_tune_reason_count(a) == ps_tune_reason_count(b), "reason count");
    for (size_t i = 0; i < ps_tune_reason_count(a) && i < ps_tune_reason_count(b); i++) {
        const char *ta, *tb, *ea, *eb;
        uint64_t ca, cb;
        ps_tune_reason(a, i, &ta, &ea, &ca);
        ps_tune_reason(b, i, &tb, &eb, &cb);
        CHECK(!strcmp(ta, tb) && !strcmp(ea, eb) && ca == cb, "reason %zu: %s", i, ta);
    }
    ps_tune_stats x, y;
    ps_tune_stats_get(a, &x);
    ps_tune_stats_get(b, &y);
    CHECK(x.candidates == y.candidates && x.rejected == y.rejected &&
              x.over_memory == y.over_memory && x.failed == y.failed,
          "counts");
    CHECK(x.processes == procs && y.processes == 1, "processes %d", x.processes);
    if (csv_too) {
        char *ca = csv(a), *cb = csv(b);
        CHECK(ca && cb && !strcmp(ca, cb), "the CSV differs");
        CHECK(x.simulated == y.simulated && x.fitting == y.fitting, "simulated");
        free(ca);
        free(cb);
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);

    ps_transformer m;
    ps_hardware hw;
    CHECK(ps_transformer_builtin("llama3-8b", &m) == 0 && ps_hardware_builtin("h100-sxm", &hw) == 0,
          "built-ins");
    ps_tune_job j;
    ps_tune_job_init(&j);
    j.gpus = 8, j.gbs = 16, j.seq = 4096, j.top_k = 5, j.threads = 1;
    if (rank % 2 == 0)
        j.no_prune = 1, j.record_all = 1;
    else
        j.threads = 1 + hrank % 2;

    ps_tune *t = new_tune();
    int rc = ps_tune_mpi_run(t, &m, &hw, &j, half);
    CHECK(rc == 0, "ps_tune_mpi_run: %d %s", rc, ps_tune_last_error(t));
    if (hrank == 0 && rc == 0) {
        ps_tune *one = new_tune();
        j.threads = 1;
        CHECK(ps_tune_run(one, &m, &hw, &j) == 0, "ps_tune_run");
        same(t, one, rank % 2 == 0, hsize);
        ps_tune_free(one);
    }

    /* Every process with a bad job: the same code everywhere, the message on rank 0. */
    ps_tune_job bad = j;
    bad.gpus = 0;
    rc = ps_tune_mpi_run(t, &m, &hw, &bad, half);
    CHECK(rc == PS_ECONFIG, "a bad job everywhere: %d", rc);
    if (hrank == 0)
        CHECK(*ps_tune_last_error(t), "no message on rank 0");

    /* Only the last process of each half with a bad job: its code everywhere, rank 0 names it. */
    rc = ps_tune_mpi_run(t, &m, &hw, hrank == hsize - 1 ? &bad : &j, half);
    CHECK(rc == PS_ECONFIG, "a bad job on one process: %d", rc);
    if (hrank == 0) {
        char want[64];
        snprintf(want, sizeof want, "process %d of %d: ", hsize - 1, hsize);
        CHECK(!strncmp(ps_tune_last_error(t), want, strlen(want)), "rank 0 says \"%s\"",
              ps_tune_last_error(t));
    }
    ps_tune_free(t);

    int all = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: ps_tune_mpi_run on %d processes in two communicators\n", all ? "FAIL" : "PASS",
               size);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return all ? 1 : 0;
}
