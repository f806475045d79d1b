/*
 * Example host of the pipesched executor: a tiny linear model trained for one iteration, for
 * real, on host threads driven by the executor.
 *
 *   host [FAMILY PP VPP M]     (no arguments: a built-in list of families and sizes)
 *   host --stall               a host that loses a completion: the stall timeout stops it
 *
 * Every virtual stage s holds an 8x8 weight matrix W_s; micro-batch j enters its path with
 * an 8x8 input X_j. For stage s and micro-batch j:
 *   F  y[s][j]  = W_s . x                  (x: the previous stage's y, or X_j)
 *   I  gx[s][j] = W_s^T . g                (g: the next stage's gx, or y[s][j] on the last
 *                                           stage: the gradient of the loss |y|^2 / 2)
 *   W  dW_s    += g . x^T
 *   B  = I then W; OVERLAP_F_B = its forward part, then its backward part (B or I).
 * Each pipeline rank is a host thread: the executor's compute callback (on the loop thread)
 * hands the action to the rank's thread, which does the arithmetic on per-(stage, mb)
 * buffers and reports the end with ps_exec_complete(). All ranks are local, so activations
 * and gradients move between ranks through the executor's in-process transport: the
 * executor starts an action only once the actions whose results it reads have completed.
 *
 * A sequential reference in the same program computes the same values, micro-batch by
 * micro-batch along each path, with the same functions (so the doubles match bit for bit);
 * floating-point addition is not associative, so it adds each stage's weight-gradient terms
 * in the order in which the stage's rank lists its W (or B) actions, the one order the
 * executor must follow. Every stage output, every input gradient and every weight gradient
 * must match exactly; each rank's thread also checks, before each action, that its inputs
 * were produced and that it does not repeat an action, and the event callback checks that
 * each rank completes its actions in its list's order. Exit status 0 only if every run
 * matches.
 *
 * Public API only (pipesched.h and exec.h), on a private uv loop that is closed at the end.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/exec.h>
#include <pipesched/pipesched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 8
typedef struct mat {
    double v[N * N];
} mat;

/* ---- arithmetic (shared by the host threads and the reference) --------------------------- */

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

/* out = a . b^T */
static void mul_nt(mat *out, const mat *a, const mat *b)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++)
                acc += a->v[i * N + k] * b->v[j * N + k];
            out->v[i * N + j] = acc;
        }
}

/* acc += g . x^T */
static void accumulate(mat *acc, const mat *g, const mat *x)
{
    mat t;
    mul_nt(&t, g, x);
    for (int i = 0; i < N * N; i++)
        acc->v[i] += t.v[i];
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

/* ---- the model: per-stage weights and per-(stage, mb) buffers ----------------------------- */

typedef struct model {
    const ps_schedule *s;
    int pp, ns, m;
    int *prev, *next;  /* [stage * m + mb]: neighbour stage on mb's path, -1 at the ends */
    mat *w, *dw;       /* [stage] */
    mat *x;            /* [mb]: inputs */
    mat *y, *gx;       /* [stage * m + mb]: stage outputs, input gradients */
    int *nf, *ni, *nw; /* [stage * m + mb]: how many times F, I and W ran */
} model;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "host: out of memory\n");
        exit(2);
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
    for (size_t k = 0; k < sm; k++)
        md->prev[k] = md->next[k] = -1;
    for (int p = 0; p < ps_schedule_num_paths(s); p++) {
        const int32_t *st;
        int n, first, count;
        ps_schedule_path(s, p, &st, &n, &first, &count);
        for (int j = first; j < first + count; j++)
            for (int i = 0; i < n; i++) {
                md->prev[st[i] * md->m + j] = i ? st[i - 1] : -1;
                md->next[st[i] * md->m + j] = i + 1 < n ? st[i + 1] : -1;
            }
    }
    md->w = xcalloc((size_t)md->ns, sizeof *md->w);
    md->dw = xcalloc((size_t)md->ns, sizeof *md->dw);
    md->x = xcalloc((size_t)md->m, sizeof *md->x);
    md->y = xcalloc(sm, sizeof *md->y);
    md->gx = xcalloc(sm, sizeof *md->gx);
    md->nf = xcalloc(sm, sizeof *md->nf);
    md->ni = xcalloc(sm, sizeof *md->ni);
    md->nw = xcalloc(sm, sizeof *md->nw);
    for (int st = 0; st < md->ns; st++)
        fill(&md->w[st], 1000 + (uint64_t)st);
    for (int j = 0; j < md->m; j++)
        fill(&md->x[j], 2000000 + (uint64_t)j);
}

static void model_free(model *md)
{
    free(md->prev), free(md->next), free(md->w), free(md->dw), free(md->x);
    free(md->y), free(md->gx), free(md->nf), free(md->ni), free(md->nw);
}

static const mat *input_of(const model *md, int st, int j)
{
    int pv = md->prev[st * md->m + j];
    return pv >= 0 ? &md->y[pv * md->m + j] : &md->x[j];
}

static const mat *grad_of(const model *md, int st, int j)
{
    int nx = md->next[st * md->m + j];
    return nx >= 0 ? &md->gx[nx * md->m + j] : &md->y[st * md->m + j];
}

/* The work of one compute action on the host. Non-zero when an input is missing or the
 * action already ran (a dependency or order violation): the run then stops with PS_EHOST. */
static int host_forward(model *md, int st, int j)
{
    int k = st * md->m + j, pv = md->prev[k];
    if (md->nf[k]++ || (pv >= 0 && md->nf[pv * md->m + j] != 1))
        return 1;
    mul(&md->y[k], &md->w[st], input_of(md, st, j));
    return 0;
}

static int host_input_grad(model *md, int st, int j)
{
    int k = st * md->m + j, nx = md->next[k];
    if (md->ni[k]++ || md->nf[k] != 1 || (nx >= 0 && md->ni[nx * md->m + j] != 1))
        return 1;
    mul_tn(&md->gx[k], &md->w[st], grad_of(md, st, j));
    return 0;
}

static int host_weight_grad(model *md, int st, int j)
{
    int k = st * md->m + j;
    if (md->nw[k]++ || md->ni[k] != 1)
        return 1;
    accumulate(&md->dw[st], grad_of(md, st, j), input_of(md, st, j));
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

/* ---- the sequential reference -------------------------------------------------------------- */

typedef struct reference {
    mat *y, *gx, *dw;
} reference;

static void reference_run(const model *md, reference *ref)
{
    size_t sm = (size_t)md->ns * (size_t)md->m;
    ref->y = xcalloc(sm, sizeof *ref->y);
    ref->gx = xcalloc(sm, sizeof *ref->gx);
    ref->dw = xcalloc((size_t)md->ns, sizeof *ref->dw);
    mat *term = xcalloc(sm, sizeof *term); /* g . x^T of (stage, mb) */
    const ps_schedule *s = md->s;
    for (int p = 0; p < ps_schedule_num_paths(s); p++) {
        const int32_t *st;
        int n, first, count;
        ps_schedule_path(s, p, &st, &n, &first, &count);
        for (int j = first; j < first + count; j++) {
            const mat *x = &md->x[j];
            for (int i = 0; i < n; i++) {
                mul(&ref->y[st[i] * md->m + j], &md->w[st[i]], x);
                x = &ref->y[st[i] * md->m + j];
            }
            const mat *g = &ref->y[st[n - 1] * md->m + j];
            for (int i = n - 1; i >= 0; i--) {
                int k = st[i] * md->m + j;
                x = i ? &ref->y[st[i - 1] * md->m + j] : &md->x[j];
                accumulate(&term[k], g, x); /* term starts at 0: 0 + t == t exactly */
                mul_tn(&ref->gx[k], &md->w[st[i]], g);
                g = &ref->gx[k];
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
            for (int e = 0; e < N * N; e++)
                ref->dw[st].v[e] += term[st * md->m + j].v[e];
        }
    }
    free(term);
}

static void reference_free(reference *ref)
{
    free(ref->y), free(ref->gx), free(ref->dw);
}

/* FNV-1a over the bytes of n matrices. */
static uint64_t checksum(uint64_t h, const mat *a, size_t n)
{
    const unsigned char *p = (const unsigned char *)a;
    for (size_t i = 0; i < n * sizeof *a; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

/* ---- the host: one thread per rank ----------------------------------------------------------- */

typedef struct rank_thread {
    struct host *h;
    int rank;
    uv_thread_t tid;
    uv_mutex_t mu;
    uv_cond_t cv;
    ps_action a; /* the action to run (the executor runs at most one per rank at a time) */
    uint64_t token;
    int busy, quit;
} rank_thread;

typedef struct host {
    model md;
    ps_exec *x;
    rank_thread *ranks;
    long *events;    /* [rank]: compute actions completed, in order */
    int order_error; /* an event out of its rank's order */
    int status;      /* on_done */
    int closed;      /* close_cb ran */
    int hold_rank;   /* --stall: never run this rank's first forward (-1: none) */
    double stall_s;  /* stall timeout */
    char msg[4096];  /* the message of a failed run */
} host;

static void rank_main(void *arg)
{
    rank_thread *t = arg;
    uv_mutex_lock(&t->mu);
    for (;;) {
        while (!t->busy && !t->quit)
            uv_cond_wait(&t->cv, &t->mu);
        if (!t->busy)
            break;
        ps_action a = t->a;
        uint64_t token = t->token;
        uv_mutex_unlock(&t->mu);
        int status = host_action(&t->h->md, &a);
        uv_mutex_lock(&t->mu);
        t->busy = 0;
        uv_mutex_unlock(&t->mu);
        /* After the stop of a failed run this answers PS_ESTATE: nothing to do. */
        (void)ps_exec_complete(t->h->x, token, status);
        uv_mutex_lock(&t->mu);
    }
    uv_mutex_unlock(&t->mu);
}

/* Compute callback, on the loop thread: hand the action to its rank's thread. */
static int on_compute(ps_exec *x, const ps_action *a, int rank, uint64_t token, void *ud)
{
    host *h = ud;
    (void)x;
    if (rank == h->hold_rank && a->kind == PS_F && a->mb == 0)
        return 0; /* accepted, never completed: the stall timeout ends the run */
    rank_thread *t = &h->ranks[rank];
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

static void on_event(ps_exec *x, int rank, int64_t index, const ps_action *a, double start,
                     double end, void *ud)
{
    host *h = ud;
    (void)x, (void)a, (void)start, (void)end;
    if (index != h->events[rank]++)
        h->order_error = 1;
}

static void on_done(ps_exec *x, int status, void *ud)
{
    host *h = ud;
    h->status = status;
    if (status)
        snprintf(h->msg, sizeof h->msg, "%s: %s", ps_err_name(status), ps_exec_last_error(x));
}

static void on_closed(ps_exec *x, void *ud)
{
    host *h = ud;
    (void)x;
    h->closed = 1;
}

static void stop_ranks(host *h, int n)
{
    for (int r = 0; r < n; r++) {
        rank_thread *t = &h->ranks[r];
        uv_mutex_lock(&t->mu);
        t->quit = 1;
        uv_cond_signal(&t->cv);
        uv_mutex_unlock(&t->mu);
        uv_thread_join(&t->tid);
        uv_cond_destroy(&t->cv);
        uv_mutex_destroy(&t->mu);
    }
}

/* Runs s on a private loop with one host thread per rank. Returns 0 when the run finished,
 * 1 when it stopped early (h->status, h->msg), 2 when something was left on the loop. */
static int execute(host *h, const ps_schedule *s)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) {
        fprintf(stderr, "host: uv_loop_init failed\n");
        return 1;
    }
    int pp = h->md.pp, started = 0, ret = 1;
    h->ranks = xcalloc((size_t)pp, sizeof *h->ranks);
    h->events = xcalloc((size_t)pp, sizeof *h->events);
    h->status = 1;
    h->closed = 0;
    h->x = NULL;
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.compute = on_compute; /* all ranks local: no send/recv callbacks needed */
    cfg.on_event = on_event;
    cfg.on_done = on_done;
    cfg.user_data = h;
    cfg.stall_timeout_s = h->stall_s; /* a lost completion ends the run instead of hanging */
    int rc = ps_exec_new(&h->x, &loop, s, &cfg, NULL);
    if (rc) {
        fprintf(stderr, "host: ps_exec_new: %s\n", ps_strerror(rc));
        goto out;
    }
    for (; started < pp; started++) {
        rank_thread *t = &h->ranks[started];
        t->h = h;
        t->rank = started;
        if (uv_mutex_init(&t->mu))
            break;
        if (uv_cond_init(&t->cv)) {
            uv_mutex_destroy(&t->mu);
            break;
        }
        if (uv_thread_create(&t->tid, rank_main, t)) {
            uv_cond_destroy(&t->cv);
            uv_mutex_destroy(&t->mu);
            break;
        }
    }
    if (started == pp && (rc = ps_exec_start(h->x)) == 0) {
        uv_run(&loop, UV_RUN_DEFAULT); /* returns once the run stopped (on_done was called) */
        ret = h->status != 0;
    } else if (started == pp) {
        fprintf(stderr, "host: ps_exec_start: %s\n", ps_strerror(rc));
    }
    /* The threads first (ps_exec_complete must not follow ps_exec_close), then the executor. */
    stop_ranks(h, started);
    ps_exec_close(h->x, on_closed);
out:
    uv_run(&loop, UV_RUN_DEFAULT);
    if (h->x && !h->closed)
        ret = 2;
    if (uv_loop_close(&loop)) {
        fprintf(stderr, "host: the loop still has handles\n");
        ret = 2;
    }
    free(h->ranks);
    free(h->events);
    return ret;
}

/* ---- one case ---------------------------------------------------------------------------- */

static int same(const mat *a, const mat *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* Runs validated schedule s under the executor and compares with the reference. */
static int check_schedule(const char *name, const ps_schedule *s)
{
    host h;
    memset(&h, 0, sizeof h);
    h.hold_rank = -1;
    h.stall_s = 10;
    model_init(&h.md, s);
    model *md = &h.md;
    int fail = execute(&h, s);
    if (fail)
        fprintf(stderr, "host: %s: the run %s\n  %s\n", name,
                fail == 1 ? "stopped early" : "left handles on the loop", h.msg);
    reference ref;
    reference_run(md, &ref);
    size_t sm = (size_t)md->ns * (size_t)md->m;
    int counts = 1;
    for (size_t k = 0; k < sm; k++)
        counts &= md->nf[k] == 1 && md->ni[k] == 1 && md->nw[k] == 1;
    int ok_y = same(md->y, ref.y, sm), ok_g = same(md->gx, ref.gx, sm);
    int ok_w = same(md->dw, ref.dw, (size_t)md->ns);
    int ok = !fail && !h.order_error && counts && ok_y && ok_g && ok_w;
    uint64_t sum = checksum(0xcbf29ce484222325u, md->y, sm);
    sum = checksum(sum, md->gx, sm);
    sum = checksum(sum, md->dw, (size_t)md->ns);
    char size[48];
    snprintf(size, sizeof size, "pp=%d v=%d m=%d", md->pp, md->ns / md->pp, md->m);
    printf("%-22s %-16s %5zu actions  %s  checksum %016llx\n", name, size,
           ps_schedule_total_actions(s), ok ? "ok      " : "MISMATCH", (unsigned long long)sum);
    if (!ok)
        fprintf(stderr,
                "  run %s, order %s, counts %s, outputs %s, input gradients %s, "
                "weight gradients %s\n",
                fail ? "failed" : "ok", h.order_error ? "wrong" : "ok", counts ? "ok" : "wrong",
                ok_y ? "match" : "differ", ok_g ? "match" : "differ", ok_w ? "match" : "differ");
    reference_free(&ref);
    model_free(md);
    return ok;
}

static int run_family(const char *family, int pp, int vpp, int m)
{
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    int ok = 0, rc;
    if ((rc = ps_problem_new(&pb, NULL)) || (rc = ps_schedule_new(&s, NULL)))
        goto out;
    if ((rc = ps_problem_set_schedule(pb, family)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_PP, pp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_VPP, vpp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, m))) {
        fprintf(stderr, "host: %s\n", ps_problem_last_error(pb));
        goto out;
    }
    if ((rc = ps_schedule_generate(s, pb)) || (rc = ps_schedule_validate(s))) {
        fprintf(stderr, "host: %s: %s\n", family, ps_schedule_last_error(s));
        goto out;
    }
    ok = check_schedule(ps_schedule_family(s), s);
out:
    if (rc && !ok)
        fprintf(stderr, "host: %s pp=%d vpp=%d m=%d: %s\n", family, pp, vpp, m, ps_strerror(rc));
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ok;
}

/* A PyTorch-style CSV table with fused OVERLAP_F_B actions (no built-in family emits them). */
static int run_csv(const char *name, const char *csv)
{
    ps_schedule *s = NULL;
    int ok = 0, rc;
    if ((rc = ps_schedule_new(&s, NULL)) ||
        (rc = ps_schedule_load_csv(s, csv, strlen(csv), PS_CSV_COMPUTE_ONLY, 0)) ||
        (rc = ps_schedule_validate(s)))
        fprintf(stderr, "host: %s: %s\n", name, s ? ps_schedule_last_error(s) : ps_strerror(rc));
    else
        ok = check_schedule(name, s);
    ps_schedule_free(s);
    return ok;
}

/* --stall: rank 1 never completes 1F0 of 1F1B on 4 ranks; the stall timeout (0.5 s) stops
 * the run with PS_ESTALL and a message naming what each rank waits for, and everything is
 * still closed cleanly. */
static int stall_demo(void)
{
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    int ok = 0;
    if (ps_problem_new(&pb, NULL) || ps_problem_set_int(pb, PS_PARAM_PP, 4) ||
        ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 8) || ps_schedule_new(&s, NULL) ||
        ps_schedule_generate(s, pb) || ps_schedule_validate(s)) {
        fprintf(stderr, "host: cannot build 1f1b pp=4 m=8\n");
        goto out;
    }
    host h;
    memset(&h, 0, sizeof h);
    h.hold_rank = 1;
    h.stall_s = 0.5;
    model_init(&h.md, s);
    int ret = execute(&h, s);
    printf("%s\n", h.msg);
    ok = ret == 1 && h.status == PS_ESTALL;
    printf("stall %s, every handle closed: %s\n", ok ? "detected" : "NOT detected",
           ret == 2 ? "no" : "yes");
    model_free(&h.md);
out:
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ok ? 0 : 1;
}

static const char fused_csv[] =
    "0F0,0F1,(0F2;0I0)OVERLAP_F_B,0W0,(0F3;0I1)OVERLAP_F_B,0W1,0I2,0W2,0I3,0W3\n"
    "1F0,(1F1;1B0)OVERLAP_F_B,(1F2;1B1)OVERLAP_F_B,(1F3;1B2)OVERLAP_F_B,1B3\n";

int main(int argc, char **argv)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } cases[] = {
        {"1f1b", 1, 1, 3},           {"1f1b", 4, 1, 8},        {"1f1b", 3, 1, 2},
        {"gpipe", 4, 1, 6},          {"interleaved", 4, 2, 8}, {"interleaved", 2, 3, 4},
        {"zb-h1", 4, 1, 8},          {"zb-h1", 3, 1, 5},       {"zb-h2", 4, 1, 8},
        {"interleaved-zb", 4, 2, 8}, {"zb-v", 4, 2, 8},        {"zb-v", 2, 2, 3},
        {"v-half", 4, 2, 8},         {"zb-auto", 4, 2, 6},
    };
    int n = 0, passed = 0;
    if (argc == 2 && !strcmp(argv[1], "--stall"))
        return stall_demo();
    if (argc == 5) {
        n = 1;
        passed = run_family(argv[1], atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    } else if (argc == 1) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, n++)
            passed += run_family(cases[i].family, cases[i].pp, cases[i].vpp, cases[i].m);
        passed += run_csv("custom (OVERLAP_F_B)", fused_csv);
        n++;
    } else {
        fprintf(stderr, "usage: host [FAMILY PP VPP M | --stall]\n");
        return 2;
    }
    printf("%d of %d runs match the sequential reference bit for bit\n", passed, n);
    return passed == n ? 0 : 1;
}
