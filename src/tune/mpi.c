/*
 * libpipesched-tune-mpi: ps_tune_run across MPI processes (include/pipesched/tune_mpi.h).
 *
 * Each process runs its share with ps__tune_run_part (search.c, exported by libpipesched for
 * this library). The shared bound is a chain of rounds of MPI_Iallreduce(MIN) over two
 * doubles, {the K-th best step this process knows, whether it has finished}: between chunks
 * the calling thread tests the round in flight and, once it completed, takes its minimum and
 * starts the next. Every process takes part in every round until a round in which all of them
 * had finished, so the rounds match one for one and nobody waits on a process that left.
 * Then every share is packed (ps__tune_pack) and sent to rank 0, which merges them
 * (ps__tune_merge) or reports the first failure, and broadcasts the outcome. The rounds and
 * the gather use a duplicate of the caller's communicator, so that they meet none of its
 * messages.
 * SPDX-License-Identifier: MIT
 */
#include "tune/tune_int.h"

#include <pipesched/tune_mpi.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE (1 << 30) /* bytes per message of a pack: counts are ints */
#define TAG_PACK 1
#define TAG_MSG 2

/* The rounds of the shared K-th best step. */
typedef struct rounds {
    MPI_Comm comm;
    MPI_Request req;
    double out[2], in[2];
    int active;
    double known; /* the least K-th best any process reported (0: none) */
} rounds;

static void round_start(rounds *r, double kth, int finished)
{
    r->out[0] = kth > 0 ? kth : INFINITY;
    r->out[1] = finished;
    MPI_Iallreduce(r->out, r->in, 2, MPI_DOUBLE, MPI_MIN, r->comm, &r->req);
    r->active = 1;
}

static void round_end(rounds *r)
{
    r->active = 0;
    if (isfinite(r->in[0]) && (r->known == 0 || r->in[0] < r->known))
        r->known = r->in[0];
}

/* part.share: the round in flight tested, the next started once it completed. */
static double share(void *ud, double kth)
{
    rounds *r = ud;
    if (r->active) {
        int done = 0;
        MPI_Test(&r->req, &done, MPI_STATUS_IGNORE);
        if (!done)
            return r->known;
        round_end(r);
    }
    round_start(r, kth, 0);
    return r->known;
}

/* After this process's share: rounds until one in which every process had finished. */
static void rounds_finish(rounds *r)
{
    for (;;) {
        if (!r->active)
            round_start(r, 0, 1);
        int was_final = r->out[1] == 1, done = 0;
        /* MPI_Wait would poll at full speed, taking a core from the processes still
         * searching when there are more processes than cores: test every millisecond. */
        const struct timespec ms = {0, 1000000};
        while (MPI_Test(&r->req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
            nanosleep(&ms, NULL);
        round_end(r);
        if (was_final && r->in[1] == 1)
            return;
    }
}

/* Sends or receives len bytes in pieces of at most PIECE. */
static void send_bytes(const char *buf, uint64_t len, int to, MPI_Comm comm)
{
    for (uint64_t at = 0; at < len; at += PIECE) {
        uint64_t n = len - at < PIECE ? len - at : PIECE;
        MPI_Send(buf + at, (int)n, MPI_BYTE, to, TAG_PACK, comm);
    }
}

static void recv_bytes(char *buf, uint64_t len, int from, MPI_Comm comm)
{
    for (uint64_t at = 0; at < len; at += PIECE) {
        uint64_t n = len - at < PIECE ? len - at : PIECE;
        MPI_Recv(buf + at, (int)n, MPI_BYTE, from, TAG_PACK, comm, MPI_STATUS_IGNORE);
    }
}

/* Rank 0: every other rank's pack received, then merged, or the first failure reported (the
 * failure of rank 0 itself is rc, with its message already on the handle). Memory for what a
 * sender already sent cannot be refused without losing the job: it ends with MPI_Abort. */
static int gather_root(ps_tune *t, int rc, int size, MPI_Comm comm, const uint64_t *lens, double t0)
{
    void **packs = calloc((size_t)size, sizeof *packs);
    size_t *sizes = calloc((size_t)size, sizeof *sizes);
    if (!packs || !sizes)
        MPI_Abort(comm, 3);
    for (int r = 1; r < size; r++) {
        packs[r] = lens[r] && lens[r] <= SIZE_MAX ? malloc((size_t)lens[r]) : NULL;
        if (lens[r] && !packs[r]) {
            fprintf(stderr, "pipesched: tune: out of memory for the results of process %d\n", r);
            MPI_Abort(comm, 3);
        }
        recv_bytes(packs[r], lens[r], r, comm);
        sizes[r] = (size_t)lens[r];
    }
    for (int r = 1; r < size && !rc && t; r++) {
        const char *msg = "no results (out of memory packing them, or no handle)";
        int prc = packs[r] ? ps__tune_pack_rc(packs[r], sizes[r], &msg) : PS_ENOMEM;
        if (prc == PS_EINVAL)
            msg = "its results arrived damaged", prc = PS_EINTERNAL;
        if (prc)
            rc = ps__tune_fail(t, prc, "process %d of %d: %s", r, size, msg);
    }
    if (!rc && t)
        rc = ps__tune_merge(t, (const void *const *)(packs + 1), sizes + 1, (size_t)size - 1,
                            MPI_Wtime() - t0);
    for (int r = 1; r < size; r++)
        free(packs[r]);
    free(packs);
    free(sizes);
    return rc;
}

int ps_tune_mpi_run(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                    const ps_tune_job *job, MPI_Comm comm)
{
    double t0 = MPI_Wtime();
    int rank, size, level = MPI_THREAD_SINGLE;
    rounds r;
    memset(&r, 0, sizeof r);
    MPI_Comm_dup(comm, &r.comm);
    MPI_Comm_rank(r.comm, &rank);
    MPI_Comm_size(r.comm, &size);
    MPI_Query_thread(&level);
    /* The share hook runs on this thread while the search's other threads run. */
    ps__tune_part part = {(uint32_t)rank, (uint32_t)size,
                          level >= MPI_THREAD_FUNNELED ? share : NULL, &r};
    int rc = t ? ps__tune_run_part(t, model, hw, job, &part) : PS_EINVAL;
    rounds_finish(&r);
    void *pack = NULL;
    size_t len = 0;
    if (t && rank > 0 && ps__tune_pack(t, rc, &pack, &len))
        len = 0; /* rank 0 reads an empty pack as out of memory */
    uint64_t mine = len, *lens = rank == 0 ? calloc((size_t)size, sizeof *lens) : NULL;
    uint64_t dummy[1];
    MPI_Gather(&mine, 1, MPI_UINT64_T, lens ? lens : dummy, 1, MPI_UINT64_T, 0, r.comm);
    if (rank > 0) {
        send_bytes(pack, len, 0, r.comm);
        free(pack);
    } else if (!lens) {
        /* Without the lengths rank 0 cannot receive: the job cannot finish cleanly. */
        fprintf(stderr, "pipesched: tune: out of memory gathering the results\n");
        MPI_Abort(r.comm, 3);
    } else {
        rc = gather_root(t, rc, size, r.comm, lens, t0); /* t NULL: received, then PS_EINVAL */
    }
    free(lens);
    MPI_Bcast(&rc, 1, MPI_INT, 0, r.comm);
    MPI_Comm_free(&r.comm);
    return rc;
}

int ps_tune_mpi_init(int *rank, int *size)
{
    int inited = 0, provided;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS)
        return -1;
    return 0;
}

MPI_Comm ps_tune_mpi_world(void)
{
    return MPI_COMM_WORLD;
}

int ps_tune_mpi_agree(MPI_Comm comm, int status, const char *msg, char *out, size_t cap)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *all = malloc((size_t)size * sizeof *all);
    if (!all) /* the collective cannot run: end the job rather than hang it */
        MPI_Abort(comm, 3);
    MPI_Allgather(&status, 1, MPI_INT, all, 1, MPI_INT, comm);
    int first = 0;
    while (first < size && all[first] == 0)
        first++;
    int agreed = first < size ? all[first] : 0;
    free(all);
    if (out && cap && rank == 0)
        snprintf(out, cap, "%s", first == 0 && msg ? msg : "");
    if (first > 0 && first < size) {
        if (rank == first) {
            const char *m = msg ? msg : "";
            size_t n = strlen(m);
            int count = n < INT_MAX ? (int)n : INT_MAX - 1;
            MPI_Send(m, count, MPI_CHAR, 0, TAG_MSG, comm);
        } else if (rank == 0) {
            MPI_Status st;
            int count = 0;
            MPI_Probe(first, TAG_MSG, comm, &st);
            MPI_Get_count(&st, MPI_CHAR, &count);
            char *m = malloc((size_t)count + 1);
            MPI_Recv(m ? m : out, m ? count : 0, MPI_CHAR, first, TAG_MSG, comm, MPI_STATUS_IGNORE);
            if (m && out && cap) {
                m[count] = 0;
                snprintf(out, cap, "%s", m);
            }
            free(m);
        }
    }
    return agreed;
}

void ps_tune_mpi_finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}
