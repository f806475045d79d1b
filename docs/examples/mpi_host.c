/*
 * Example MPI host of the pipesched executor: one iteration of a small MLP trained with any
 * schedule family, one MPI process per pipeline rank (or several ranks per process), the
 * activations and gradients moved with MPI_Isend/MPI_Irecv, and the result checked bit for bit
 * against a sequential run of the same model in the same program.
 *
 *   mpirun -np P mpi-host FAMILY PP VPP M [options]
 *     --group-size G          interleaved / adaptive micro-batch group size
 *     --stall S               stall timeout in seconds (default 10): a lost message or a dead
 *                             peer ends the run with a message instead of a hang
 *     --fail-rank R --fail-action A
 *                             rank R reports action A (PyTorch notation: 2F3, 1I0, 0W5)
 *                             failed: every process stops and names the rank and the action
 *     --die-rank R --die-action A
 *                             the process of rank R exits at action A without a word (a
 *                             crashed peer); run under mpirun --enable-recovery so that the
 *                             others live on and their stall timeout names what they wait for
 *     --corrupt-stage S       after the run, add one ulp to stage S's weight gradient on its
 *                             process: the check must report a mismatch (exit status 1)
 *     --emulate SCALE         no arithmetic: each compute action sleeps its cost-model duration
 *                             (f=b=w=1) times SCALE seconds, transfers still go through MPI;
 *                             process 0 prints the measured makespan against the simulation
 *     --trace FILE            with --emulate: process 0 writes both timelines as a Chrome trace
 *                             (pid = rank; tid 0 measured, tid 1 simulated; microseconds)
 *
 * Rank r runs in MPI process r mod P (P <= PP). Every process runs ps_exec with its own ranks
 * as the local ranks; a transfer between two ranks of one process stays inside the executor,
 * one between processes is the host's send and recv callbacks.
 *
 * The model. Virtual stage s is layer l(s) = its position on its path (for DualPipe, whose two
 * paths are two copies of the model, stage s of copy 0 and stage p+s of copy 1 are both layer
 * s and start from the same weights). Layer l holds an 8x8 weight W_l; micro-batch j is an 8x8
 * input X_j (8 features by 8 samples) with a target T_j. For stage s and micro-batch j:
 *   F  y = tanh(W x)                        x: the previous stage's y on j's path, or X_j
 *      on the last stage also loss_j = 1/2 |y - T_j|^2
 *   I  gz = gy * (1 - y*y), gx = W^T gz     gy: the next stage's gx, or y - T_j on the last
 *   W  dW_s += gz x^T
 *   B  = I then W; OVERLAP_F_B = its forward part, then its backward part (B or I).
 * The gradient of layer l is the sum of dW_s over the stages of layer l, in stage order (for
 * DualPipe the all-reduce of the two copies).
 *
 * Bit equality. Every value is a pure function of its inputs computed by the same functions
 * in the run and in the reference, so y, gz and gx match exactly; the one place where order
 * matters is the sum dW_s, whose terms the reference adds in the order in which the stage's
 * rank lists its W (or B, or fused B) actions: the order the executor must follow. The loss is
 * summed in micro-batch order. After the run the owner of each stage broadcasts dW_s and the
 * owner of each path's last stage its losses, so every process checks every stage, layer and
 * loss against its own sequential reference, and its own stages' y, gx for each (stage, mb).
 *
 * Threads. MPI_Init_thread asks for MPI_THREAD_SERIALIZED: one thread at a time makes MPI
 * calls. During the run that is the progress thread, which owns every MPI call: the send and
 * recv callbacks (on the loop thread) only queue a request for it; it posts MPI_Isend and
 * MPI_Irecv, polls them with MPI_Testsome (Open MPI 4.1 has no asynchronous progress of its
 * own: "OMPI progress: no" in ompi_info, messages move only inside MPI calls) and reports each
 * completion with ps_exec_complete(), which may be called from any thread. Before and after
 * the run the main thread makes the MPI calls. One compute thread per local rank does the
 * arithmetic and calls ps_exec_complete() too.
 *
 * Results and failures. After its run every process prints its failure, if any, and sends its
 * result to every other one on a control communicator; during the run the others' progress
 * threads receive it there, and a failure cancels their runs at once. Once every result is in
 * (or after a stall timeout), either all succeeded and the checks run, or every process prints
 * its line, they wait (bounded) for each other's "printed" message and end the job with
 * MPI_Abort (a run that stopped leaves transfers posted, which MPI_Finalize must not meet). A
 * peer that died sends nothing: the others' stall timeout ends their runs, and every wait
 * after it is bounded by the same timeout.
 *
 * Public API only (pipesched.h and exec.h). SPDX-License-Identifier: MIT
 */
#include <pipesched/exec.h>
#include <pipesched/pipesched.h>

#include <mpi.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 8
typedef struct mat {
    double v[N * N];
} mat;

/* ---- arithmetic (shared by the compute threads and the reference) ---------------------------- */

/* out = a . b */
static void mul(mat *out, const mat *a, const mat *b)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++)
                acc += a->v[i * N + k] * b->v[k * N + j];
            out->v[i * N + j] = acc;
        }
}

/* out = a^T . b */
static void mul_tn(mat *out, const mat *a, const mat *b)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++)
                acc += a->v[k * N + i] * b->v[k * N + j];
            out->v[i * N + j] = acc;
        }
}

/* A deterministic matrix with entries in [-0.6, 0.6) (a 64-bit LCG seeded by seed). */
static void fill(mat *a, uint64_t seed)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15u + 1;
    for (int i = 0; i < N * N; i++) {
        z = z * 6364136223846793005u + 1442695040888963407u;
        a->v[i] = ((double)(z >> 11) / 9007199254740992.0 - 0.5) * 1.2;
    }
}

/* F: y = tanh(w . x) */
static void layer_forward(mat *y, const mat *w, const mat *x)
{
    mul(y, w, x);
    for (int i = 0; i < N * N; i++)
        y->v[i] = tanh(y->v[i]);
}

/* The loss of a last stage's output, 1/2 |y - t|^2, summed in element order; gy = y - t. */
static double loss_of(mat *gy, const mat *y, const mat *t)
{
    double l = 0.0;
    for (int i = 0; i < N * N; i++) {
        gy->v[i] = y->v[i] - t->v[i];
        l += 0.5 * gy->v[i] * gy->v[i];
    }
    return l;
}

/* I: gz = gy * (1 - y*y), gx = w^T . gz */
static void layer_input_grad(mat *gz, mat *gx, const mat *w, const mat *y, const mat *gy)
{
    for (int i = 0; i < N * N; i++)
        gz->v[i] = gy->v[i] * (1.0 - y->v[i] * y->v[i]);
    mul_tn(gx, w, gz);
}

/* W: dw += gz . x^T, one term computed whole, then added element by element. */
static void layer_weight_grad(mat *dw, const mat *gz, const mat *x)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++)
                acc += gz->v[i * N + k] * x->v[j * N + k];
            dw->v[i * N + j] += acc;
        }
}

/* ---- the model: per-stage weights and per-(stage, mb) buffers -------------------------------- */

typedef struct model {
    const ps_schedule *s;
    int pp, ns, m;
    int *prev, *next;  /* [stage * m + mb]: neighbour stage on mb's path, -1 at the ends */
    int *on_path;      /* [stage * m + mb]: stage is on mb's path */
    int *layer, *last; /* [stage]: layer index; [mb]: the last stage of mb's path */
    int nlayers;
    mat *w, *dw;                  /* [stage] */
    mat *x, *t;                   /* [mb]: inputs and targets */
    mat *y, *gz, *gx;             /* [stage * m + mb] */
    double *loss;                 /* [mb] */
    unsigned char *nf, *ni, *nw;  /* [stage * m + mb]: how many times F, I and W ran here */
    unsigned char *got_y, *got_g; /* [stage * m + mb]: y / gx received from another process */
} model;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "mpi-host: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void model_init(model *md, const ps_schedule *s)
{
    memset(md, 0, sizeof *md);
    md->s = s;
    md->pp = ps_schedule_pp(s);
    md->ns = ps_schedule_num_stages(s);
    md->m = ps_schedule_microbatches(s);
    size_t sm = (size_t)md->ns * (size_t)md->m;
    md->prev = xcalloc(sm, sizeof *md->prev);
    md->next = xcalloc(sm, sizeof *md->next);
    md->on_path = xcalloc(sm, sizeof *md->on_path);
    md->layer = xcalloc((size_t)md->ns, sizeof *md->layer);
    md->last = xcalloc((size_t)md->m, sizeof *md->last);
    for (int p = 0; p < ps_schedule_num_paths(s); p++) {
        const int32_t *st;
        int n, first, count;
        ps_schedule_path(s, p, &st, &n, &first, &count);
        for (int i = 0; i < n; i++) {
            md->layer[st[i]] = i;
            if (i + 1 > md->nlayers)
                md->nlayers = i + 1;
        }
        for (int j = first; j < first + count; j++) {
            md->last[j] = st[n - 1];
            for (int i = 0; i < n; i++) {
                md->prev[st[i] * md->m + j] = i ? st[i - 1] : -1;
                md->next[st[i] * md->m + j] = i + 1 < n ? st[i + 1] : -1;
                md->on_path[st[i] * md->m + j] = 1;
            }
        }
    }
    md->w = xcalloc((size_t)md->ns, sizeof *md->w);
    md->dw = xcalloc((size_t)md->ns, sizeof *md->dw);
    md->x = xcalloc((size_t)md->m, sizeof *md->x);
    md->t = xcalloc((size_t)md->m, sizeof *md->t);
    md->y = xcalloc(sm, sizeof *md->y);
    md->gz = xcalloc(sm, sizeof *md->gz);
    md->gx = xcalloc(sm, sizeof *md->gx);
    md->loss = xcalloc((size_t)md->m, sizeof *md->loss);
    md->nf = xcalloc(sm, 1);
    md->ni = xcalloc(sm, 1);
    md->nw = xcalloc(sm, 1);
    md->got_y = xcalloc(sm, 1);
    md->got_g = xcalloc(sm, 1);
    for (int st = 0; st < md->ns; st++)
        fill(&md->w[st], 1000 + (uint64_t)md->layer[st]); /* DualPipe: copies start equal */
    for (int j = 0; j < md->m; j++) {
        fill(&md->x[j], 2000000 + (uint64_t)j);
        fill(&md->t[j], 3000000 + (uint64_t)j);
    }
}

static void model_free(model *md)
{
    free(md->prev), free(md->next), free(md->on_path), free(md->layer), free(md->last);
    free(md->w), free(md->dw), free(md->x), free(md->t), free(md->y), free(md->gz);
    free(md->gx), free(md->loss), free(md->nf), free(md->ni), free(md->nw);
    free(md->got_y), free(md->got_g);
}

static const mat *input_of(const model *md, int st, int j)
{
    int pv = md->prev[st * md->m + j];
    return pv >= 0 ? &md->y[pv * md->m + j] : &md->x[j];
}

/* The work of one compute action. Non-zero when an input is missing or the action already ran
 * (a dependency or order violation): the run then stops with PS_EHOST. */
static int host_forward(model *md, int st, int j)
{
    int k = st * md->m + j, pv = md->prev[k];
    if (!md->on_path[k] || md->nf[k]++)
        return 1;
    if (pv >= 0 && md->nf[pv * md->m + j] != 1 && !md->got_y[pv * md->m + j])
        return 1;
    layer_forward(&md->y[k], &md->w[st], input_of(md, st, j));
    if (md->next[k] < 0) {
        mat gy;
        md->loss[j] = loss_of(&gy, &md->y[k], &md->t[j]);
    }
    return 0;
}

static int host_input_grad(model *md, int st, int j)
{
    int k = st * md->m + j, nx = md->next[k];
    if (md->ni[k]++ || md->nf[k] != 1)
        return 1;
    mat gy;
    if (nx >= 0) {
        if (md->ni[nx * md->m + j] != 1 && !md->got_g[nx * md->m + j])
            return 1;
        gy = md->gx[nx * md->m + j];
    } else {
        (void)loss_of(&gy, &md->y[k], &md->t[j]);
    }
    layer_input_grad(&md->gz[k], &md->gx[k], &md->w[st], &md->y[k], &gy);
    return 0;
}

static int host_weight_grad(model *md, int st, int j)
{
    int k = st * md->m + j;
    if (md->nw[k]++ || md->ni[k] != 1)
        return 1;
    layer_weight_grad(&md->dw[st], &md->gz[k], input_of(md, st, j));
    return 0;
}

static int host_backward(model *md, int kind, int st, int j)
{
    if (kind == PS_W)
        return host_weight_grad(md, st, j);
    int rc = host_input_grad(md, st, j);
    if (!rc && kind == PS_B)
        rc = host_weight_grad(md, st, j);
    return rc;
}

static int host_action(model *md, const ps_action *a)
{
    switch (a->kind) {
    case PS_F:
        return host_forward(md, a->stage, a->mb);
    case PS_I:
    case PS_W:
    case PS_B:
        return host_backward(md, a->kind, a->stage, a->mb);
    case PS_FB:
        return host_forward(md, a->stage, a->mb) || host_backward(md, a->bkind, a->bstage, a->bmb);
    default:
        return 1;
    }
}

/* ---- the sequential reference ---------------------------------------------------------------- */

typedef struct reference {
    mat *y, *gx, *dw, *lw; /* lw: [layer] */
    double *loss, total;
} reference;

/* The sum of each layer's stage gradients, in stage order (both sides use this function). */
static void layer_grads(const model *md, const mat *dw, mat *lw)
{
    memset(lw, 0, (size_t)md->nlayers * sizeof *lw);
    for (int st = 0; st < md->ns; st++)
        for (int e = 0; e < N * N; e++)
            lw[md->layer[st]].v[e] += dw[st].v[e];
}

static double total_loss(const model *md, const double *loss)
{
    double l = 0.0;
    for (int j = 0; j < md->m; j++)
        l += loss[j];
    return l;
}

static void reference_run(const model *md, reference *ref)
{
    size_t sm = (size_t)md->ns * (size_t)md->m;
    ref->y = xcalloc(sm, sizeof *ref->y);
    ref->gx = xcalloc(sm, sizeof *ref->gx);
    ref->dw = xcalloc((size_t)md->ns, sizeof *ref->dw);
    ref->lw = xcalloc((size_t)md->nlayers, sizeof *ref->lw);
    ref->loss = xcalloc((size_t)md->m, sizeof *ref->loss);
    mat *gz = xcalloc(sm, sizeof *gz);
    const ps_schedule *s = md->s;
    for (int p = 0; p < ps_schedule_num_paths(s); p++) {
        const int32_t *st;
        int n, first, count;
        ps_schedule_path(s, p, &st, &n, &first, &count);
        for (int j = first; j < first + count; j++) {
            const mat *x = &md->x[j];
            for (int i = 0; i < n; i++) {
                layer_forward(&ref->y[st[i] * md->m + j], &md->w[st[i]], x);
                x = &ref->y[st[i] * md->m + j];
            }
            mat gy;
            ref->loss[j] = loss_of(&gy, x, &md->t[j]);
            for (int i = n - 1; i >= 0; i--) {
                int k = st[i] * md->m + j;
                layer_input_grad(&gz[k], &ref->gx[k], &md->w[st[i]], &ref->y[k], &gy);
                gy = ref->gx[k];
            }
        }
    }
    /* Each stage's terms, added in its rank's order of W (B, or fused B) actions. */
    for (int r = 0; r < md->pp; r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
            int st = -1, j = 0;
            if (a[i].kind == PS_W || a[i].kind == PS_B)
                st = a[i].stage, j = a[i].mb;
            else if (a[i].kind == PS_FB && a[i].bkind == PS_B)
                st = a[i].bstage, j = a[i].bmb;
            if (st < 0)
                continue;
            int pv = md->prev[st * md->m + j];
            layer_weight_grad(&ref->dw[st], &gz[st * md->m + j],
                              pv >= 0 ? &ref->y[pv * md->m + j] : &md->x[j]);
        }
    }
    layer_grads(md, ref->dw, ref->lw);
    ref->total = total_loss(md, ref->loss);
    free(gz);
}

static void reference_free(reference *ref)
{
    free(ref->y), free(ref->gx), free(ref->dw), free(ref->lw), free(ref->loss);
}

/* ---- the host -------------------------------------------------------------------------------- */

/* A control message: a process's run result (status 0: every local action ran). origin: the
 * failure happened here (not a cancel because another process failed). */
#define TEXT_LEN 2040
typedef struct result {
    int32_t status, origin;
    char text[TEXT_LEN];
} result;

enum { TAG_RESULT = 1, TAG_PRINTED = 2 };

/* One MPI transfer: queued by a send/recv callback, posted by the progress thread. */
typedef struct xfer {
    uint64_t token;
    void *buf;
    unsigned char *got; /* receive: set once the data is here */
    int peer, tag, send;
    int stage, mb, dir, rank; /* for messages */
} xfer;

typedef struct rank_thread {
    struct host *h;
    int rank;
    uv_thread_t tid;
    uv_mutex_t mu;
    uv_cond_t cv;
    ps_action a; /* the action to run (the executor runs at most one per rank at a time) */
    uint64_t token;
    int busy, quit, started;
} rank_thread;

typedef struct host {
    model md;
    uv_loop_t loop;
    ps_exec *x;
    int in_run; /* the progress thread runs and the notice handle is open */
    int nproc, proc;
    int *local, n_local;
    MPI_Comm data, ctl;
    rank_thread *threads; /* [rank], local ranks only */
    /* options */
    int fail_rank, die_rank;
    ps_action fail_action, die_action;
    double stall_s, emulate;
    const char *trace; /* --trace: the measured and simulated timelines, Chrome trace */
    int corrupt_stage; /* --corrupt-stage: one ulp off this stage's gradient (the check fails) */
    /* the progress thread; mu guards sub, quit */
    uv_thread_t ptid;
    uv_mutex_t mu;
    uv_cond_t cv;
    xfer *sub, *act;
    MPI_Request *req;
    size_t nsub, capsub, nact, capact;
    int quit;
    /* control: results of the other processes (ctl_req is posted while waiting for them) */
    MPI_Request ctl_req;
    result ctl_buf, mine, *res; /* mine: the one this process sends (alive until the end) */
    unsigned char *have;
    int got_results;
    /* a failure reported by another process during the run; nmu guards it */
    uv_async_t notice;
    uv_mutex_t nmu;
    int notice_from;
    char notice_text[TEXT_LEN];
    /* the outcome here */
    int status;
    double t0; /* uv_hrtime() just before ps_exec_start, seconds */
    char msg[TEXT_LEN];
} host;

static int matches(const ps_action *a, const ps_action *want)
{
    if (a->kind == want->kind && a->stage == want->stage && a->mb == want->mb)
        return 1;
    if (a->kind != PS_FB)
        return 0;
    if (want->kind == PS_F)
        return a->stage == want->stage && a->mb == want->mb;
    return a->bkind == want->kind && a->bstage == want->stage && a->bmb == want->mb;
}

static void rank_main(void *arg)
{
    rank_thread *t = arg;
    host *h = t->h;
    uv_mutex_lock(&t->mu);
    for (;;) {
        while (!t->busy && !t->quit)
            uv_cond_wait(&t->cv, &t->mu);
        if (!t->busy)
            break;
        ps_action a = t->a;
        uint64_t token = t->token;
        uv_mutex_unlock(&t->mu);
        if (t->rank == h->die_rank && matches(&a, &h->die_action)) {
            fprintf(stderr, "mpi-host: process %d exits at rank %d's action (--die-rank)\n",
                    h->proc, t->rank);
            _exit(3); /* a crash: no MPI_Finalize, no message to the others */
        }
        int status =
            t->rank == h->fail_rank && matches(&a, &h->fail_action) ? 1 : host_action(&h->md, &a);
        uv_mutex_lock(&t->mu);
        t->busy = 0;
        uv_mutex_unlock(&t->mu);
        /* After the stop of a failed run this answers PS_ESTATE: nothing to do. */
        (void)ps_exec_complete(h->x, token, status);
        uv_mutex_lock(&t->mu);
    }
    uv_mutex_unlock(&t->mu);
}

/* Compute callback, on the loop thread: hand the action to its rank's thread. */
static int on_compute(ps_exec *x, const ps_action *a, int rank, uint64_t token, void *ud)
{
    host *h = ud;
    (void)x;
    rank_thread *t = &h->threads[rank];
    uv_mutex_lock(&t->mu);
    int busy = t->busy;
    if (!busy) {
        t->a = *a; /* a is borrowed for the call only */
        t->token = token;
        t->busy = 1;
        uv_cond_signal(&t->cv);
    }
    uv_mutex_unlock(&t->mu);
    return busy; /* two actions at once on one rank: refuse (the run stops, PS_EHOST) */
}

/* The tag of the transfer of (producing stage, mb, dir): unique per pair of processes. */
static int tag_of(const model *md, int stage, int mb, int dir)
{
    return ((stage * md->m + mb) << 1 | dir) + 16;
}

static int owner(const host *h, int stage)
{
    return ps_schedule_stage_rank(h->md.s, stage) % h->nproc;
}

static int queue(host *h, const xfer *t)
{
    uv_mutex_lock(&h->mu);
    if (h->nsub == h->capsub) {
        size_t cap = h->capsub ? 2 * h->capsub : 64;
        xfer *p = realloc(h->sub, cap * sizeof *p);
        if (!p) {
            uv_mutex_unlock(&h->mu);
            return 1;
        }
        h->sub = p, h->capsub = cap;
    }
    h->sub[h->nsub++] = *t;
    uv_cond_signal(&h->cv);
    uv_mutex_unlock(&h->mu);
    return 0;
}

/* Send callback: a->stage produced the data, a->bstage (on another process) consumes it. */
static int on_send(ps_exec *x, const ps_action *a, int rank, uint64_t token, void *ud)
{
    host *h = ud;
    model *md = &h->md;
    (void)x;
    xfer t = {0};
    t.dir = a->kind == PS_SEND_B;
    t.stage = a->stage, t.mb = a->mb, t.rank = rank;
    int k = a->stage * md->m + a->mb;
    t.token = token;
    t.buf = t.dir ? &md->gx[k] : &md->y[k];
    t.peer = owner(h, a->bstage);
    t.tag = tag_of(md, a->stage, a->mb, t.dir);
    t.send = 1;
    return queue(h, &t);
}

/* Recv callback: a->stage (here) consumes what a->bstage (on another process) produced. */
static int on_recv(ps_exec *x, const ps_action *a, int rank, uint64_t token, void *ud)
{
    host *h = ud;
    model *md = &h->md;
    (void)x;
    xfer t = {0};
    t.dir = a->kind == PS_RECV_B;
    t.stage = a->bstage, t.mb = a->mb, t.rank = ps_schedule_stage_rank(md->s, a->bstage);
    int k = a->bstage * md->m + a->mb;
    t.token = token;
    t.buf = t.dir ? &md->gx[k] : &md->y[k];
    t.got = t.dir ? &md->got_g[k] : &md->got_y[k];
    t.peer = owner(h, a->bstage);
    t.tag = tag_of(md, a->bstage, a->mb, t.dir);
    return queue(h, &t);
}

static void on_done(ps_exec *x, int status, void *ud)
{
    host *h = ud;
    h->status = status;
    if (!status)
        return;
    uv_mutex_lock(&h->nmu);
    int from = h->notice_from;
    if (status == PS_ECANCELED && from >= 0)
        snprintf(h->msg, sizeof h->msg, "stopped because process %d failed: %.1900s", from,
                 h->notice_text);
    uv_mutex_unlock(&h->nmu);
    if (!(status == PS_ECANCELED && from >= 0))
        snprintf(h->msg, sizeof h->msg, "%s: %.1990s", ps_err_name(status), ps_exec_last_error(x));
}

/* Loop thread: another process reported a failure. */
static void on_notice(uv_async_t *a)
{
    host *h = a->data;
    if (ps_exec_status(h->x) == 2)
        (void)ps_exec_cancel(h->x);
}

/* ---- the progress thread: every MPI call during the run -------------------------------------- */

static void post(host *h, const xfer *t)
{
    if (h->nact == h->capact) {
        size_t cap = h->capact ? 2 * h->capact : 64;
        xfer *a = realloc(h->act, cap * sizeof *a);
        MPI_Request *r = a ? realloc(h->req, cap * sizeof *r) : NULL;
        if (a)
            h->act = a;
        if (!r) {
            (void)ps_exec_complete(h->x, t->token, 12); /* ENOMEM */
            return;
        }
        h->req = r, h->capact = cap;
    }
    int rc = t->send ? MPI_Isend(t->buf, (int)sizeof(mat), MPI_BYTE, t->peer, t->tag, h->data,
                                 &h->req[h->nact])
                     : MPI_Irecv(t->buf, (int)sizeof(mat), MPI_BYTE, t->peer, t->tag, h->data,
                                 &h->req[h->nact]);
    if (rc != MPI_SUCCESS) {
        (void)ps_exec_complete(h->x, t->token, rc);
        return;
    }
    h->act[h->nact++] = *t;
}

/* A result from another process: kept for the exchange after the run; a failure also stops
 * the run here (through the loop thread). */
static void take_result(host *h, int from)
{
    h->res[from] = h->ctl_buf;
    h->have[from] = 1;
    h->got_results++;
    if (h->ctl_buf.status) {
        uv_mutex_lock(&h->nmu);
        if (h->notice_from < 0 || (h->ctl_buf.origin && !h->res[h->notice_from].origin)) {
            h->notice_from = from;
            snprintf(h->notice_text, sizeof h->notice_text, "%s", h->ctl_buf.text);
        }
        uv_mutex_unlock(&h->nmu);
        if (h->in_run)
            uv_async_send(&h->notice);
    }
}

/* Tests the posted control receive; reposts it after a message. Returns 1 if one came. */
static int poll_ctl(host *h)
{
    int flag = 0;
    MPI_Status st;
    if (h->ctl_req == MPI_REQUEST_NULL)
        return 0;
    if (MPI_Test(&h->ctl_req, &flag, &st) != MPI_SUCCESS || !flag)
        return 0;
    take_result(h, st.MPI_SOURCE);
    if (h->got_results < h->nproc - 1)
        MPI_Irecv(&h->ctl_buf, (int)sizeof h->ctl_buf, MPI_BYTE, MPI_ANY_SOURCE, TAG_RESULT, h->ctl,
                  &h->ctl_req);
    return 1;
}

static int poll_transfers(host *h)
{
    if (!h->nact)
        return 0;
    int n = 0, idx[256];
    MPI_Status st[256];
    int count = h->nact < 256 ? (int)h->nact : 256;
    int rc = MPI_Testsome(count, h->req, &n, idx, st);
    if (n == MPI_UNDEFINED || n == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        xfer *t = &h->act[idx[i]];
        int status = rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc;
        if (!status && t->got)
            *t->got = 1;
        (void)ps_exec_complete(h->x, t->token, status);
    }
    size_t k = 0;
    for (size_t i = 0; i < h->nact; i++)
        if (h->req[i] != MPI_REQUEST_NULL)
            h->req[k] = h->req[i], h->act[k++] = h->act[i];
    h->nact = k;
    return 1;
}

/* Polls while there is work and sleeps when there is none (10 us doubling up to 50 us while a
 * transfer is in flight, up to 2 ms otherwise; a new request wakes it at once): a busy loop
 * would take a core from the compute threads of an oversubscribed machine. */
static void progress_main(void *arg)
{
    host *h = arg;
    xfer *batch = NULL;
    size_t cap = 0;
    uint64_t idle_ns = 20000;
    uv_mutex_lock(&h->mu);
    while (!h->quit) {
        size_t n = h->nsub;
        if (n > cap) {
            xfer *p = realloc(batch, n * sizeof *p);
            if (!p)
                n = cap;
            else
                batch = p, cap = n;
        }
        if (n) {
            memcpy(batch, h->sub, n * sizeof *batch);
            memmove(h->sub, h->sub + n, (h->nsub - n) * sizeof *h->sub);
            h->nsub -= n;
        }
        uv_mutex_unlock(&h->mu);
        for (size_t i = 0; i < n; i++)
            post(h, &batch[i]);
        int busy = poll_transfers(h) | poll_ctl(h) | (n > 0);
        /* A transfer in flight (a posted receive is a rank waiting for it): poll often. */
        uint64_t cap_ns = h->nact ? 50000 : 2000000;
        uv_mutex_lock(&h->mu);
        if (busy) {
            idle_ns = 10000;
        } else if (!h->nsub && !h->quit) {
            (void)uv_cond_timedwait(&h->cv, &h->mu, idle_ns < cap_ns ? idle_ns : cap_ns);
            idle_ns = idle_ns < cap_ns ? 2 * idle_ns : cap_ns;
        }
    }
    uv_mutex_unlock(&h->mu);
    free(batch);
}

/* ---- one run --------------------------------------------------------------------------------- */

static void stop_threads(host *h)
{
    for (int i = 0; i < h->n_local; i++) {
        rank_thread *t = &h->threads[h->local[i]];
        if (!t->started)
            continue;
        uv_mutex_lock(&t->mu);
        t->quit = 1;
        uv_cond_signal(&t->cv);
        uv_mutex_unlock(&t->mu);
        uv_thread_join(&t->tid);
        uv_cond_destroy(&t->cv);
        uv_mutex_destroy(&t->mu);
    }
    uv_mutex_lock(&h->mu);
    h->quit = 1;
    uv_cond_signal(&h->cv);
    uv_mutex_unlock(&h->mu);
    uv_thread_join(&h->ptid);
}

/* Names the receives posted and not completed (a dead or stuck peer). */
static void describe_pending(host *h)
{
    int shown = 0;
    for (size_t i = 0; i < h->nact && shown < 6; i++) {
        const xfer *t = &h->act[i];
        if (t->send)
            continue;
        size_t n = strlen(h->msg);
        snprintf(h->msg + n, sizeof h->msg - n,
                 "\n  MPI receive not completed: the %s of stage %d, micro-batch %d, from rank %d "
                 "(process %d)",
                 t->dir ? "input gradient" : "activation", t->stage, t->mb, t->rank, t->peer);
        shown++;
    }
}

/* Runs the local ranks under the executor. Returns 0 when they all finished. */
static int execute(host *h, const ps_problem *pb)
{
    uv_loop_t *loop = &h->loop;
    h->status = 1;
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.compute = on_compute;
    cfg.send = on_send;
    cfg.recv = on_recv;
    cfg.on_done = on_done;
    cfg.user_data = h;
    cfg.local_ranks = h->local;
    cfg.n_local = h->n_local;
    cfg.stall_timeout_s = h->stall_s;
    if (h->emulate > 0) {
        cfg.emulate = 1;
        cfg.problem = pb;
        cfg.time_scale = h->emulate;
    }
    int rc = ps_exec_new(&h->x, loop, h->md.s, &cfg, NULL);
    if (rc) {
        snprintf(h->msg, sizeof h->msg, "ps_exec_new: %s", ps_strerror(rc));
        return 1;
    }
    if (uv_async_init(loop, &h->notice, on_notice)) {
        fprintf(stderr, "mpi-host: uv_async_init failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    h->notice.data = h;
    uv_unref((uv_handle_t *)&h->notice);
    h->in_run = 1;
    int ok = !uv_mutex_init(&h->mu) && !uv_cond_init(&h->cv) &&
             !uv_thread_create(&h->ptid, progress_main, h);
    for (int i = 0; ok && i < h->n_local; i++) {
        rank_thread *t = &h->threads[h->local[i]];
        t->h = h;
        t->rank = h->local[i];
        ok = !uv_mutex_init(&t->mu) && !uv_cond_init(&t->cv) &&
             !uv_thread_create(&t->tid, rank_main, t);
        t->started = ok;
    }
    if (!ok) {
        fprintf(stderr, "mpi-host: cannot start the threads\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rc = ps_exec_start(h->x);
    /* The executor's clock starts inside ps_exec_start, after its emulation threads started
     * and before it issues the first actions: read ours right after, microseconds later. */
    h->t0 = (double)uv_hrtime() * 1e-9;
    if (rc == 0)
        uv_run(loop, UV_RUN_DEFAULT); /* returns once the run stopped (on_done was called) */
    else
        snprintf(h->msg, sizeof h->msg, "ps_exec_start: %s", ps_strerror(rc));
    /* The threads first (ps_exec_complete must not follow ps_exec_close), then the executor. */
    stop_threads(h);
    h->in_run = 0;
    if (h->status == PS_ESTALL)
        describe_pending(h);
    uv_close((uv_handle_t *)&h->notice, NULL);
    uv_cond_destroy(&h->cv);
    uv_mutex_destroy(&h->mu);
    return rc ? 1 : h->status != 0;
}

/* Closes the executor (after its results were read) and the loop. */
static void finish(host *h)
{
    ps_exec_close(h->x, NULL);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&h->loop))
        fprintf(stderr, "mpi-host: process %d: handles left on the loop\n", h->proc);
}

/* ---- after the run: results, failure path, checks -------------------------------------------- */

static double now_s(void)
{
    return (double)uv_hrtime() * 1e-9;
}

static void nap(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

static const char *ranks_of(const host *h, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < h->n_local && at + 12 < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", i ? "," : "", h->local[i]);
    return buf;
}

/* Sends this process's result to every other one and waits (at most wait_s) for theirs. */
static void exchange_results(host *h, int failed, int origin, double wait_s)
{
    result *mine = &h->mine;
    memset(mine, 0, sizeof *mine);
    mine->status = failed;
    mine->origin = origin;
    snprintf(mine->text, sizeof mine->text, "%s", h->msg);
    MPI_Request *rq = xcalloc((size_t)h->nproc, sizeof *rq);
    for (int p = 0; p < h->nproc; p++)
        rq[p] = MPI_REQUEST_NULL;
    for (int p = 0; p < h->nproc; p++)
        if (p != h->proc)
            MPI_Isend(mine, (int)sizeof *mine, MPI_BYTE, p, TAG_RESULT, h->ctl, &rq[p]);
    double end = now_s() + wait_s;
    while (h->got_results < h->nproc - 1 && now_s() < end)
        if (!poll_ctl(h))
            nap();
    /* The sends: eager messages are done at once; to a dead peer they may never be. */
    int done = 0;
    while (!done && now_s() < end + 1.0) {
        MPI_Testall(h->nproc, rq, &done, MPI_STATUSES_IGNORE);
        if (!done)
            nap();
    }
    free(rq);
}

/* The end of a failed job: every process has printed its message, then tells the others so,
 * and waits for them (bounded): the first MPI_Abort ends every process of the job. */
static void abort_job(host *h, double wait_s)
{
    fflush(stdout);
    fflush(stderr);
    int32_t dummy = 0, *in = xcalloc((size_t)h->nproc, sizeof *in);
    MPI_Request *rq = xcalloc(2 * (size_t)h->nproc, sizeof *rq);
    int n = 0;
    for (int p = 0; p < h->nproc; p++)
        if (p != h->proc) {
            MPI_Isend(&dummy, 1, MPI_INT32_T, p, TAG_PRINTED, h->ctl, &rq[n++]);
            MPI_Irecv(&in[p], 1, MPI_INT32_T, p, TAG_PRINTED, h->ctl, &rq[n++]);
        }
    double end = now_s() + wait_s;
    int done = 0;
    while (!done && now_s() < end) {
        MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
        if (!done)
            nap();
    }
    /* One MPI_Abort is enough (several at once garble mpirun's report): the lowest process
     * calls it; the others do only if they are still alive after another wait. */
    if (h->proc != 0)
        for (end = now_s() + wait_s; now_s() < end;)
            nap();
    MPI_Abort(MPI_COMM_WORLD, 1);
    free(rq), free(in);
}

static int same(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

/* Every stage's dW and every loss to every process (each from its owner), then the checks. */
static int check(host *h, const char *name)
{
    model *md = &h->md;
    if (h->corrupt_stage >= 0 && owner(h, h->corrupt_stage) == h->proc)
        md->dw[h->corrupt_stage].v[0] = nextafter(md->dw[h->corrupt_stage].v[0], INFINITY);
    for (int st = 0; st < md->ns; st++)
        MPI_Bcast(&md->dw[st], (int)sizeof(mat), MPI_BYTE, owner(h, st), h->data);
    for (int j = 0; j < md->m; j++)
        MPI_Bcast(&md->loss[j], 1, MPI_DOUBLE, owner(h, md->last[j]), h->data);
    reference ref;
    reference_run(md, &ref);
    mat *lw = xcalloc((size_t)md->nlayers, sizeof *lw);
    layer_grads(md, md->dw, lw);
    double total = total_loss(md, md->loss);
    int ok_acts = 1, ok_y = 1, ok_g = 1;
    for (int st = 0; st < md->ns; st++) {
        int r = ps_schedule_stage_rank(md->s, st);
        if (r % h->nproc != h->proc)
            continue;
        for (int j = 0; j < md->m; j++) {
            int k = st * md->m + j;
            if (!md->on_path[k])
                continue;
            ok_acts &= md->nf[k] == 1 && md->ni[k] == 1 && md->nw[k] == 1;
            ok_y &= same(&md->y[k], &ref.y[k], sizeof(mat));
            ok_g &= same(&md->gx[k], &ref.gx[k], sizeof(mat));
        }
    }
    int ok_w = same(md->dw, ref.dw, (size_t)md->ns * sizeof(mat));
    int ok_l = same(lw, ref.lw, (size_t)md->nlayers * sizeof(mat)) &&
               same(md->loss, ref.loss, (size_t)md->m * sizeof(double)) &&
               same(&total, &ref.total, sizeof total);
    int ok = ok_acts && ok_y && ok_g && ok_w && ok_l, all = 0;
    if (!ok)
        fprintf(stderr,
                "mpi-host: process %d: %s: actions %s, outputs %s, input gradients %s, stage "
                "weight gradients %s, layer gradients and loss %s\n",
                h->proc, name, ok_acts ? "ok" : "WRONG", ok_y ? "match" : "DIFFER",
                ok_g ? "match" : "DIFFER", ok_w ? "match" : "DIFFER", ok_l ? "match" : "DIFFER");
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, h->data);
    if (h->proc == 0) {
        double gnorm = 0.0;
        for (int l = 0; l < md->nlayers; l++)
            for (int e = 0; e < N * N; e++)
                gnorm += lw[l].v[e] * lw[l].v[e];
        printf("%-12s pp=%d v=%d m=%d on %d processes: loss %.17g, |grad| %.17g: %s\n", name,
               md->pp, md->ns / md->pp, md->m, h->nproc, total, sqrt(gnorm),
               all ? "every gradient matches the sequential reference bit for bit" : "MISMATCH");
    }
    free(lw);
    reference_free(&ref);
    return all;
}

/* --emulate: every rank's measured start/end to process 0, against the simulation. Clocks:
 * uv_hrtime() is CLOCK_MONOTONIC, one clock for every process of one machine. */
static void report_timeline(host *h, const ps_problem *pb, const char *name)
{
    model *md = &h->md;
    double *t0 = xcalloc((size_t)h->nproc, sizeof *t0);
    MPI_Gather(&h->t0, 1, MPI_DOUBLE, t0, 1, MPI_DOUBLE, 0, h->data);
    int rc;
    if (h->proc != 0) {
        for (int i = 0; i < h->n_local; i++) {
            int r = h->local[i];
            int n = (int)ps_schedule_rank_length(md->s, r);
            MPI_Send(ps_exec_starts(h->x, r), n, MPI_DOUBLE, 0, 2 * r, h->data);
            MPI_Send(ps_exec_ends(h->x, r), n, MPI_DOUBLE, 0, 2 * r + 1, h->data);
        }
        free(t0);
        return;
    }
    double base = t0[0];
    for (int p = 1; p < h->nproc; p++)
        base = t0[p] < base ? t0[p] : base;
    ps_sim *sim = NULL;
    ps_metrics ms;
    if ((rc = ps_sim_new(&sim, NULL)) || (rc = ps_sim_run(sim, md->s, pb)) ||
        (rc = ps_sim_metrics(sim, &ms))) {
        fprintf(stderr, "mpi-host: simulation: %s\n", ps_strerror(rc));
        ps_sim_free(sim);
        free(t0);
        return;
    }
    double makespan = 0.0, dev = 0.0;
    long nacts = 0;
    FILE *trace = h->trace ? fopen(h->trace, "w") : NULL;
    if (h->trace && !trace)
        fprintf(stderr, "mpi-host: cannot write %s\n", h->trace);
    if (trace)
        fprintf(trace, "{\"traceEvents\":[");
    for (int r = 0; r < md->pp; r++) {
        int n = (int)ps_schedule_rank_length(md->s, r), p = r % h->nproc;
        double *st = xcalloc((size_t)n, sizeof *st), *en = xcalloc((size_t)n, sizeof *en);
        if (p == 0) {
            memcpy(st, ps_exec_starts(h->x, r), (size_t)n * sizeof *st);
            memcpy(en, ps_exec_ends(h->x, r), (size_t)n * sizeof *en);
        } else {
            MPI_Recv(st, n, MPI_DOUBLE, p, 2 * r, h->data, MPI_STATUS_IGNORE);
            MPI_Recv(en, n, MPI_DOUBLE, p, 2 * r + 1, h->data, MPI_STATUS_IGNORE);
        }
        const double *ss = ps_sim_starts(sim, r), *se = ps_sim_ends(sim, r);
        const ps_action *acts = ps_schedule_rank_actions(md->s, r);
        for (int i = 0; i < n; i++) {
            double s_u = (st[i] + t0[p] - base) / h->emulate;
            double e_u = (en[i] + t0[p] - base) / h->emulate;
            makespan = e_u > makespan ? e_u : makespan;
            dev += fabs(s_u - ss[i]);
            if (trace) {
                char an[64];
                ps_action_format(&acts[i], an, sizeof an);
                /* Microseconds of the run; the simulation drawn on the same scale. */
                fprintf(trace,
                        "%s\n{\"name\":\"%s\",\"cat\":\"measured\",\"ph\":\"X\",\"pid\":%d,"
                        "\"tid\":0,\"ts\":%.1f,\"dur\":%.1f},\n{\"name\":\"%s\",\"cat\":"
                        "\"simulated\",\"ph\":\"X\",\"pid\":%d,\"tid\":1,\"ts\":%.1f,\"dur\":%.1f}",
                        nacts ? "," : "", an, r, s_u * h->emulate * 1e6,
                        (e_u - s_u) * h->emulate * 1e6, an, r, ss[i] * h->emulate * 1e6,
                        (se[i] - ss[i]) * h->emulate * 1e6);
            }
            nacts++;
        }
        free(st), free(en);
    }
    if (trace) {
        fprintf(trace, "\n]}\n");
        if (fclose(trace))
            fprintf(stderr, "mpi-host: cannot write %s\n", h->trace);
    }
    double skew = 0.0;
    for (int p = 0; p < h->nproc; p++)
        skew = t0[p] - base > skew ? t0[p] - base : skew;
    printf("%-12s pp=%d v=%d m=%d on %d processes, %g s per unit: makespan simulated %g, "
           "measured %.3f, error %.2f%%; mean |start - simulated start| %.3f units over %ld "
           "actions; start skew %.3f units\n",
           name, md->pp, md->ns / md->pp, md->m, h->nproc, h->emulate, ms.makespan, makespan,
           100.0 * fabs(makespan - ms.makespan) / ms.makespan, dev / (double)nacts, nacts,
           skew / h->emulate);
    ps_sim_free(sim);
    free(t0);
}

/* --emulate: every process starts its run at one instant of CLOCK_MONOTONIC (the clock of
 * uv_hrtime), 100 ms after process 0 read it: the barrier alone releases the processes of a
 * loaded machine up to tens of milliseconds apart. One clock for all: one machine only. */
static void start_together(host *h)
{
    uint64_t at = uv_hrtime() + 100000000u;
    MPI_Bcast(&at, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
        ;
}

/* ---- main ------------------------------------------------------------------------------------ */

static int usage(int proc, const char *why)
{
    if (proc == 0)
        fprintf(stderr,
                "mpi-host: %s\n"
                "usage: mpirun -np P mpi-host FAMILY PP VPP M [--group-size G] [--stall S]\n"
                "       [--fail-rank R --fail-action A] [--die-rank R --die-action A]\n"
                "       [--emulate SCALE [--trace FILE]] [--corrupt-stage S]\n"
                "       (P <= PP; A an action like 2F3, 1I0, 0W5)\n",
                why);
    return 2;
}

/* Parses a positive number; 0 when s is not one. */
static int parse_num(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

static int parse_action(const char *s, ps_action *a)
{
    size_t col;
    return ps_action_parse(s, strlen(s), a, &col) == 0 &&
           (a->kind == PS_F || a->kind == PS_I || a->kind == PS_W || a->kind == PS_B);
}

typedef struct options {
    const char *family;
    double pp, vpp, m, group, fail_rank, die_rank;
    int has_fail_action, has_die_action;
} options;

static int parse_args(host *h, options *o, int argc, char **argv, char *why, size_t n)
{
    if (argc < 5) {
        snprintf(why, n, "expected FAMILY PP VPP M");
        return 1;
    }
    o->family = argv[1];
    if (!parse_num(argv[2], &o->pp) || !parse_num(argv[3], &o->vpp) || !parse_num(argv[4], &o->m)) {
        snprintf(why, n, "PP, VPP and M must be numbers, got %s %s %s", argv[2], argv[3], argv[4]);
        return 1;
    }
    for (int i = 5; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double num = 0;
        if (!v) {
            snprintf(why, n, "%s needs a value", k);
            return 1;
        }
        i++;
        if (!strcmp(k, "--trace")) {
            h->trace = v;
            continue;
        }
        if (!strcmp(k, "--fail-action") || !strcmp(k, "--die-action")) {
            int fail = k[2] == 'f';
            if (!parse_action(v, fail ? &h->fail_action : &h->die_action)) {
                snprintf(why, n, "%s: '%s' is not a compute action (F, I, W or B: 2F3, 1I0)", k, v);
                return 1;
            }
            *(fail ? &o->has_fail_action : &o->has_die_action) = 1;
            continue;
        }
        if (!parse_num(v, &num)) {
            snprintf(why, n, "%s: '%s' is not a number >= 0", k, v);
            return 1;
        }
        if (!strcmp(k, "--group-size"))
            o->group = num;
        else if (!strcmp(k, "--stall"))
            h->stall_s = num;
        else if (!strcmp(k, "--fail-rank"))
            o->fail_rank = num;
        else if (!strcmp(k, "--die-rank"))
            o->die_rank = num;
        else if (!strcmp(k, "--emulate"))
            h->emulate = num;
        else if (!strcmp(k, "--corrupt-stage"))
            h->corrupt_stage = (int)num;
        else {
            snprintf(
                why, n,
                "unknown option %s (valid: --group-size, --stall, --fail-rank, "
                "--fail-action, --die-rank, --die-action, --emulate, --trace, --corrupt-stage)",
                k);
            return 1;
        }
    }
    if ((o->fail_rank >= 0) != o->has_fail_action || (o->die_rank >= 0) != o->has_die_action) {
        snprintf(why, n, "--fail-rank goes with --fail-action, --die-rank with --die-action");
        return 1;
    }
    h->fail_rank = (int)o->fail_rank;
    h->die_rank = (int)o->die_rank;
    return 0;
}

static int build(ps_problem *pb, ps_schedule *s, const options *o, char *why, size_t n)
{
    int rc;
    if ((rc = ps_problem_set_schedule(pb, o->family)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_PP, (long long)o->pp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_VPP, (long long)o->vpp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, (long long)o->m)) ||
        (o->group > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, (long long)o->group)))) {
        snprintf(why, n, "%s", ps_problem_last_error(pb));
        return 1;
    }
    if ((rc = ps_schedule_generate(s, pb)) || (rc = ps_schedule_validate(s))) {
        snprintf(why, n, "%s", ps_schedule_last_error(s));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int provided, ret = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    host h;
    memset(&h, 0, sizeof h);
    MPI_Comm_size(MPI_COMM_WORLD, &h.nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, &h.proc);
    h.stall_s = 10;
    h.notice_from = -1;
    h.corrupt_stage = -1;
    h.ctl_req = MPI_REQUEST_NULL;
    options o = {NULL, 0, 0, 0, 0, -1, -1, 0, 0};
    char why[1024];
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    if (provided < MPI_THREAD_SERIALIZED) {
        ret = usage(h.proc, "the MPI library does not provide MPI_THREAD_SERIALIZED");
        goto out;
    }
    if (parse_args(&h, &o, argc, argv, why, sizeof why)) {
        ret = usage(h.proc, why);
        goto out;
    }
    if (ps_problem_new(&pb, NULL) || ps_schedule_new(&s, NULL)) {
        ret = usage(h.proc, "out of memory");
        goto out;
    }
    if (build(pb, s, &o, why, sizeof why)) {
        ret = usage(h.proc, why);
        goto out;
    }
    int pp = ps_schedule_pp(s), *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (h.nproc > pp) {
        snprintf(why, sizeof why, "%d processes for %d pipeline ranks: run at most PP", h.nproc,
                 pp);
        ret = usage(h.proc, why);
        goto out;
    }
    if (h.fail_rank >= pp || h.die_rank >= pp) {
        snprintf(why, sizeof why, "--fail-rank/--die-rank: the ranks are 0..%d", pp - 1);
        ret = usage(h.proc, why);
        goto out;
    }
    if (h.corrupt_stage >= ps_schedule_num_stages(s)) {
        snprintf(why, sizeof why, "--corrupt-stage: the stages are 0..%d",
                 ps_schedule_num_stages(s) - 1);
        ret = usage(h.proc, why);
        goto out;
    }
    model_init(&h.md, s);
    if (flag && tag_ub &&
        (2LL * h.md.ns * h.md.m + 16 > *tag_ub || 2LL * h.md.ns * h.md.m > INT_MAX)) {
        ret = usage(h.proc, "stages x micro-batches exceed the MPI tag range");
        goto out_model;
    }
    h.local = xcalloc((size_t)pp, sizeof *h.local);
    for (int r = h.proc; r < pp; r += h.nproc)
        h.local[h.n_local++] = r;
    h.threads = xcalloc((size_t)pp, sizeof *h.threads);
    h.res = xcalloc((size_t)h.nproc, sizeof *h.res);
    h.have = xcalloc((size_t)h.nproc, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &h.data);
    MPI_Comm_dup(MPI_COMM_WORLD, &h.ctl);
    MPI_Comm_set_errhandler(h.data, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(h.ctl, MPI_ERRORS_RETURN);
    uv_mutex_init(&h.nmu);
    if (h.nproc > 1)
        MPI_Irecv(&h.ctl_buf, (int)sizeof h.ctl_buf, MPI_BYTE, MPI_ANY_SOURCE, TAG_RESULT, h.ctl,
                  &h.ctl_req);
    MPI_Barrier(MPI_COMM_WORLD);
    if (h.emulate > 0)
        start_together(&h);

    const char *name = ps_schedule_family(s);
    if (uv_loop_init(&h.loop)) {
        fprintf(stderr, "mpi-host: uv_loop_init failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int failed = execute(&h, pb);
    char rk[256];
    ranks_of(&h, rk, sizeof rk);
    if (failed)
        fprintf(stderr, "mpi-host: process %d (rank %s): run failed: %s\n", h.proc, rk, h.msg);
    uv_mutex_lock(&h.nmu);
    int origin = failed && !(h.status == PS_ECANCELED && h.notice_from >= 0);
    uv_mutex_unlock(&h.nmu);
    /* A finished process waits for the others as long as a run may go without progress. */
    exchange_results(&h, failed, origin, h.stall_s > 0 ? h.stall_s : 60);
    int all_ok = !failed && h.got_results == h.nproc - 1;
    for (int p = 0; p < h.nproc; p++)
        all_ok &= p == h.proc || (h.have[p] && !h.res[p].status);
    if (!all_ok) {
        if (!failed) {
            int from = -1;
            for (int p = 0; p < h.nproc; p++)
                if (p != h.proc && h.have[p] && h.res[p].status &&
                    (from < 0 || (h.res[p].origin && !h.res[from].origin)))
                    from = p;
            if (from >= 0)
                fprintf(stderr,
                        "mpi-host: process %d (rank %s): finished, but process %d "
                        "failed: %s\n",
                        h.proc, rk, from, h.res[from].text);
        }
        for (int p = 0; p < h.nproc; p++)
            if (p != h.proc && !h.have[p])
                fprintf(stderr,
                        "mpi-host: process %d (rank %s): no result from process %d "
                        "within %g s: it died or hangs\n",
                        h.proc, rk, p, h.stall_s);
        abort_job(&h, h.stall_s > 0 ? h.stall_s : 60); /* does not return */
    }
    if (h.emulate > 0)
        report_timeline(&h, pb, name);
    else
        ret = check(&h, name) ? 0 : 1;
    finish(&h);
    MPI_Comm_free(&h.data);
    MPI_Comm_free(&h.ctl);
    uv_mutex_destroy(&h.nmu);
    free(h.local), free(h.threads), free(h.res), free(h.have), free(h.sub), free(h.act);
    free(h.req);
out_model:
    model_free(&h.md);
out:
    ps_schedule_free(s);
    ps_problem_free(pb);
    MPI_Finalize();
    return ret;
}
