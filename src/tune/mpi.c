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
#define TAG_CSV 3

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

/*
 * The CSV as the search goes (job.csv_write, with MPI_THREAD_MULTIPLE): every process formats
 * the lines of its own chunks (search.c), and hands them over in its chunk order from
 * whichever of its threads writes: rank 0 writes chunk c after receiving and writing every
 * other process's chunk before c (chunk g from rank g mod N); the others send theirs with
 * MPI_Ssend, which completes only when rank 0 receives it, in chunk order. So no process
 * gets ahead of the file by more than its own window of chunks (search.c), and rank 0 holds
 * one received chunk at a time. A process whose search stopped (a failure) sends its
 * remaining chunks empty, and rank 0, once its write failed, receives the rest and drops it,
 * so that nobody waits on a chunk that never comes.
 */
typedef struct csv_net {
    MPI_Comm comm;
    int rank, size;
    ps_write_fn write; /* rank 0: the file */
    void *ud;
    uint64_t chunks; /* of the whole space */
    uint64_t next;   /* rank 0: the next chunk to write; the others: their next to send */
    int failed;      /* rank 0: a write failed; the rest is received and dropped */
    char *buf;       /* rank 0: a received chunk */
    size_t cap;
} csv_net;

/* Rank 0: chunk g (another process's) received, and written unless a write failed. */
static void csv_receive(csv_net *c, uint64_t g)
{
    MPI_Status st;
    int count = 0;
    int from = (int)(g % (uint64_t)c->size);
    MPI_Probe(from, TAG_CSV, c->comm, &st);
    MPI_Get_count(&st, MPI_CHAR, &count);
    if ((size_t)count > c->cap) {
        char *b = realloc(c->buf, (size_t)count);
        if (!b) {
            fprintf(stderr, "pipesched: tune: out of memory for the CSV lines of process %d\n",
                    from);
            MPI_Abort(c->comm, 3);
        }
        c->buf = b, c->cap = (size_t)count;
    }
    MPI_Recv(c->buf, count, MPI_CHAR, from, TAG_CSV, c->comm, MPI_STATUS_IGNORE);
    if (!c->failed && count && c->write(c->ud, c->buf, (size_t)count))
        c->failed = 1;
}

/* part.csv_chunk. */
static int csv_chunk(void *ud, uint64_t chunk, const char *text, size_t len)
{
    csv_net *c = ud;
    if (c->rank > 0) {
        MPI_Ssend(text, (int)len, MPI_CHAR, 0, TAG_CSV, c->comm); /* < 2 GiB: one chunk */
        c->next = chunk + (uint64_t)c->size;
        return 0;
    }
    for (; c->next < chunk; c->next++)
        csv_receive(c, c->next);
    c->next = chunk + 1;
    if (!c->failed && len && c->write(c->ud, text, len))
        c->failed = 1;
    return c->failed;
}

/* After the search: rank 0 takes every chunk still to come, the others send the ones their
 * search did not reach (empty). */
static void csv_finish(csv_net *c)
{
    for (; c->next < c->chunks; c->next++)
        if (c->rank == 0 && c->next % (uint64_t)c->size != 0)
            csv_receive(c, c->next);
        else if (c->rank > 0 && c->next % (uint64_t)c->size == (uint64_t)c->rank)
            MPI_Ssend(NULL, 0, MPI_CHAR, 0, TAG_CSV, c->comm);
    free(c->buf);
    c->buf = NULL;
}

/* The other ranks' job.csv_write: never called (their lines go to rank 0). */
static int csv_none(void *ud, const char *data, size_t len)
{
    (void)ud, (void)data, (void)len;
    return PS_EIO;
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
    ps__tune_part part = {(uint32_t)rank,
                          (uint32_t)size,
                          level >= MPI_THREAD_FUNNELED ? share : NULL,
                          &r,
                          NULL,
                          NULL};
    /* The CSV: rank 0's job.csv_write decides. Streamed with MPI_THREAD_MULTIPLE (any thread
     * of the search sends or receives); else recorded, gathered and written by rank 0. */
    int stream = job && job->csv_write;
    MPI_Bcast(&stream, 1, MPI_INT, 0, r.comm);
    ps_tune_job own;
    csv_net net;
    memset(&net, 0, sizeof net);
    if (job) {
        own = *job;
        own.csv_write = NULL;
        net.write = job->csv_write, net.ud = job->csv_ud;
        if (stream && level >= MPI_THREAD_MULTIPLE) {
            own.csv_write = rank == 0 ? job->csv_write : csv_none;
            net.comm = r.comm, net.rank = rank, net.size = size;
            net.next = (uint64_t)rank;
            part.csv_chunk = csv_chunk;
            part.csv_ud = &net;
            if (rank == 0 && ps__tune_csv_header(job->csv_write, job->csv_ud))
                net.failed = 1;
        } else if (stream) {
            own.record_all = 1;
        }
        job = &own;
    }
    int rc = t ? ps__tune_run_part(t, model, hw, job, &part) : PS_EINVAL;
    if (part.csv_chunk) {
        net.chunks = t ? ps__tune_chunks(t) : 0;
        csv_finish(&net);
        if (rank == 0 && net.failed && !rc)
            rc = ps__tune_fail(t, PS_EIO, "tune: writing the CSV failed");
    }
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
        if (!rc && stream && !part.csv_chunk && net.write &&
            ps_tune_write_csv(t, net.write, net.ud))
            rc = ps__tune_fail(t, PS_EIO, "tune: writing the CSV failed");
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
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
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
