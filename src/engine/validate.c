/*
 * The validator. Static checks first (every reference in range, every stage on its rank,
 * every micro-batch through every stage of its path exactly once forward and once backward),
 * then the engine with a clock that completes everything at once: if it cannot finish, the
 * schedule deadlocks and the engine names each rank's blocked head action. Lowered schedules
 * also get their SEND/RECV pairs checked: one per cross-rank edge, the send after its producer,
 * the receive before its consumer, and the same order on both ends of every rank pair.
 * SPDX-License-Identifier: MIT
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>

#define MAX_LISTED 8

/*
 * Per (stage, mb) one byte of four saturating 2-bit counters (3 = "three or more"): F in bits
 * 0-1, I in 2-3, W in 4-5, B in 6-7. A correct pair is F+B (0x41) or F+I+W (0x15).
 */
enum { SH_F = 0, SH_I = 2, SH_W = 4, SH_B = 6, OK_B = 0x41, OK_IW = 0x15 };

static inline void count(uint8_t *c, int shift)
{
    unsigned v = ((unsigned)*c >> shift) & 3u;
    *c = (uint8_t)(*c + ((v < 3u) << shift));
}

static inline int shift_of(int kind)
{
    return kind == PS_F ? SH_F : kind == PS_I ? SH_I : kind == PS_W ? SH_W : SH_B;
}

/* Reports why the reference (stage, mb) of action a on rank r is bad. */
static void bad_ref(ps_schedule *s, int32_t r, int64_t i, const ps_action *a, int32_t stage,
                    int32_t mb, int *nerr)
{
    char name[96], tmp[160];
    const char *why = tmp;
    if (stage < 0 || stage >= s->nstages)
        why = "stage out of range";
    else if (mb < 0 || mb >= s->m)
        why = "micro-batch out of range";
    else if (s->stage_rank[stage] != r)
        snprintf(tmp, sizeof tmp, "stage %d is placed on rank %d", stage, s->stage_rank[stage]);
    else
        snprintf(tmp, sizeof tmp, "micro-batch %d does not pass through stage %d", mb, stage);
    if (++*nerr <= MAX_LISTED) {
        ps__action_str(a, name, sizeof name);
        ps__adderr(s->err, "\n  rank %d, step %lld: %s: %s", r, (long long)i, name, why);
    }
}

/* The tables check_static reads, as locals: its stores go to a byte array, which may alias
 * anything, so fields read through the schedule would be reloaded after every store. */
typedef struct refs {
    const int32_t *stage_rank, *path_pos;
    const uint8_t *mb_path;
    uint32_t ns, m;
} refs;

/* 1 when (stage, mb) is a valid reference from rank r: in range, placed on r, on mb's path. */
static inline int ref_ok(const refs *f, int32_t r, int32_t stage, int32_t mb)
{
    if ((uint32_t)stage >= f->ns || (uint32_t)mb >= f->m || f->stage_rank[stage] != r)
        return 0;
    return !f->mb_path || f->path_pos[(size_t)f->mb_path[mb] * f->ns + (size_t)stage] >= 0;
}

static void bad_count(ps_schedule *s, int32_t j, int32_t stage, uint8_t c, int *nerr)
{
    unsigned f = c & 3u, i = (c >> SH_I) & 3u, w = (c >> SH_W) & 3u, b = (c >> SH_B) & 3u;
    char tmp[128];
    const char *why = tmp;
    if (c == 0)
        why = "never runs (no forward, no backward)";
    else if (f != 1)
        snprintf(tmp, sizeof tmp, "%s%u forwards (expected 1)", f == 3 ? "at least " : "", f);
    else if (b + i == 0)
        why = "no backward (expected one B, or one I and one W)";
    else if (b > 1 || i > 1 || (b && i))
        snprintf(tmp, sizeof tmp, "%u B and %u I (expected one B, or one I and one W)", b, i);
    else if (b && w)
        snprintf(tmp, sizeof tmp, "a full backward B and %u W", w);
    else
        snprintf(tmp, sizeof tmp, "an I with %u W (expected 1)", w);
    if (++*nerr <= MAX_LISTED)
        ps__adderr(s->err, "\n  micro-batch %d, stage %d (rank %d): %s", j, stage,
                   s->stage_rank[stage], why);
}

/* Every reference in range, on its rank and on its micro-batch's path; every action a
 * compute action. Returns the number of problems (appended to s->err). */
static int check_refs(ps_schedule *s)
{
    int nerr = 0;
    const refs f = {s->stage_rank, s->path_pos, s->mb_path, (uint32_t)s->nstages, (uint32_t)s->m};
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *a = s->acts + s->off[r];
        const int64_t n = s->len[r];
        for (int64_t i = 0; i < n; i++) {
            const ps_action *x = &a[i];
            if (x->kind > PS_FB) {
                char name[96];
                ps__action_str(x, name, sizeof name);
                if (++nerr <= MAX_LISTED)
                    ps__adderr(s->err, "\n  rank %d, step %lld: %s is not a compute action", r,
                               (long long)i, name);
                continue;
            }
            if (!ref_ok(&f, r, x->stage, x->mb))
                bad_ref(s, r, i, x, x->stage, x->mb, &nerr);
            if (x->kind == PS_FB && !ref_ok(&f, r, x->bstage, x->bmb))
                bad_ref(s, r, i, x, x->bstage, x->bmb, &nerr);
        }
    }
    if (nerr > MAX_LISTED)
        ps__adderr(s->err, "\n  ... and %d more problems", nerr - MAX_LISTED);
    return nerr;
}

/* Counts every (stage, mb) and explains what is missing or repeated. Runs only after a
 * failed sweep, on references check_refs accepted. */
static int check_static(ps_schedule *s, uint8_t *cnt)
{
    int nerr = 0;
    size_t m = (size_t)s->m;
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *a = s->acts + s->off[r];
        for (int64_t i = 0; i < s->len[r]; i++) {
            const ps_action *x = &a[i];
            if (x->kind == PS_FB) {
                count(&cnt[ps__sm(m, x->stage, x->mb)], SH_F);
                count(&cnt[ps__sm(m, x->bstage, x->bmb)], shift_of(x->bkind));
            } else {
                count(&cnt[ps__sm(m, x->stage, x->mb)], shift_of(x->kind));
            }
        }
    }
    /* Every micro-batch through every stage of its path exactly once each way; off-path
     * references were refused by check_refs, so their bytes stay 0. */
    for (int32_t j = 0; j < s->m; j++) {
        for (int32_t stage = 0; stage < s->nstages; stage++) {
            uint8_t c = cnt[ps__sm(m, stage, j)];
            if (c == OK_B || c == OK_IW)
                continue;
            if (!ps__on_path(s, stage, j))
                continue;
            bad_count(s, j, stage, c, &nerr);
        }
    }
    if (nerr > MAX_LISTED)
        ps__adderr(s->err, "\n  ... and %d more problems", nerr - MAX_LISTED);
    return nerr;
}

/*
 * The validator's clock completes everything at once and watches for repeats: an F, a
 * backward or a W that runs a second time for the same (stage, micro-batch). Together with
 * the completeness check after the sweep this proves the counts without a counting pass;
 * the counting pass (check_static) only runs to explain a failure.
 */
typedef struct vclock {
    const ps__engine *e;
    int repeat;
} vclock;

PS__HOT int check_issue(void *ud, int32_t rank, int64_t idx, const ps_action *a,
                        const int32_t dep[2])
{
    vclock *c = ud;
    const ps__flag *st = c->e->st;
    size_t m = c->e->m;
    ps__flag f = st[ps__sm(m, a->stage, a->mb)];
    (void)rank, (void)idx, (void)dep;
    if (a->kind == PS_F)
        c->repeat |= (f & PS__ST_F_DONE) != 0;
    else if (a->kind == PS_B || a->kind == PS_I)
        c->repeat |= (f & PS__ST_G_DONE) != 0;
    else if (a->kind == PS_W)
        c->repeat |= (f & PS__ST_W_DONE) != 0;
    else if (a->kind == PS_FB)
        c->repeat |= (f & PS__ST_F_DONE) || (st[ps__sm(m, a->bstage, a->bmb)] & PS__ST_G_DONE);
    return 1;
}

PS__HOT int null_transfer(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to)
{
    (void)ud, (void)dir, (void)stage, (void)mb, (void)from, (void)to;
    return 1;
}

static const ps__engine_ops check_ops = {check_issue, null_transfer, NULL};

/* After a complete sweep without repeats: every (stage, mb) on its path ran F, a backward
 * and its weight gradient (B sets W_DONE itself). */
static int complete(const ps_schedule *s, const ps__flag *st)
{
    const ps__flag all = PS__ST_F_DONE | PS__ST_G_DONE | PS__ST_W_DONE;
    for (int32_t stage = 0; stage < s->nstages; stage++) {
        const ps__flag *f = &st[ps__sm((size_t)s->m, stage, 0)];
        for (int32_t j = 0; j < s->m; j++) {
            if ((f[j] & all) == all)
                continue;
            if (!ps__on_path(s, stage, j))
                continue;
            return 0;
        }
    }
    return 1;
}

/* ---- lowered lists ------------------------------------------------------------------------ */

enum { P_F, P_G, P_SF, P_RF, P_SB, P_RB, P_N };

static int check_lowered(ps_schedule *s)
{
    size_t sm = (size_t)s->nstages * (size_t)s->m;
    int32_t *pos = ps__alloc(&s->al, sm * P_N, sizeof *pos);
    int nerr = 0;
    if (!pos)
        return ps__seterr(s->err, PS_ENOMEM, "out of memory validating communication");
    for (size_t i = 0; i < sm * P_N; i++)
        pos[i] = -1;
#define POS(kind, st, mb) pos[((size_t)(st) * (size_t)s->m + (size_t)(mb)) * P_N + (kind)]
#define LERR(...)                                                                                  \
    do {                                                                                           \
        if (++nerr <= MAX_LISTED)                                                                  \
            ps__adderr(s->err, __VA_ARGS__);                                                       \
    } while (0)
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *a = s->lacts + s->loff[r];
        int64_t ci = 0;
        for (int64_t i = 0; i < s->llen[r]; i++) {
            const ps_action *x = &a[i];
            char name[96];
            int slot = -1;
            switch (x->kind) {
            case PS_SEND_F:
                slot = P_SF;
                break;
            case PS_RECV_F:
                slot = P_RF;
                break;
            case PS_SEND_B:
                slot = P_SB;
                break;
            case PS_RECV_B:
                slot = P_RB;
                break;
            default:
                /* Compute actions must be the compute list, in order. */
                if (ci >= s->len[r] || memcmp(x, &s->acts[s->off[r] + ci], sizeof *x)) {
                    ps__action_str(x, name, sizeof name);
                    LERR("\n  rank %d, step %lld: %s differs from the compute list", r,
                         (long long)i, name);
                } else if (x->kind == PS_F || x->kind == PS_FB) {
                    POS(P_F, x->stage, x->mb) = (int32_t)i;
                }
                if (x->kind == PS_I || x->kind == PS_B)
                    POS(P_G, x->stage, x->mb) = (int32_t)i;
                if (x->kind == PS_FB)
                    POS(P_G, x->bstage, x->bmb) = (int32_t)i;
                ci++;
                continue;
            }
            ps__action_str(x, name, sizeof name);
            if (x->stage < 0 || x->stage >= s->nstages || x->mb < 0 || x->mb >= s->m ||
                s->stage_rank[x->stage] != r) {
                LERR("\n  rank %d, step %lld: %s names a stage or micro-batch not on this rank", r,
                     (long long)i, name);
                continue;
            }
            if (POS(slot, x->stage, x->mb) >= 0)
                LERR("\n  rank %d, step %lld: %s appears twice", r, (long long)i, name);
            POS(slot, x->stage, x->mb) = (int32_t)i;
        }
        if (ci != s->len[r])
            LERR("\n  rank %d: the lowered list holds %lld compute actions, the schedule %lld", r,
                 (long long)ci, (long long)s->len[r]);
    }
    /* Each edge: present iff cross-rank, send after producer, receive before consumer. */
    for (int32_t k = 0; k < s->npaths && nerr <= MAX_LISTED; k++) {
        const int32_t *st = s->path_stages + s->path_off[k];
        for (int32_t jj = 0; jj < s->path_mbn[k]; jj++) {
            int32_t j = s->path_mb0[k] + jj;
            for (int32_t q = 0; q + 1 < s->path_len[k]; q++) {
                int32_t a = st[q], b = st[q + 1];
                int cross = s->stage_rank[a] != s->stage_rank[b];
                /* forward a -> b, gradient b -> a */
                int32_t sf = POS(P_SF, a, j), rf = POS(P_RF, b, j);
                int32_t sb = POS(P_SB, b, j), rb = POS(P_RB, a, j);
                if (!cross) {
                    if (sf >= 0 || rf >= 0 || sb >= 0 || rb >= 0)
                        LERR("\n  micro-batch %d: stages %d and %d share rank %d but exchange "
                             "SEND/RECV",
                             j, a, b, s->stage_rank[a]);
                    continue;
                }
                if (sf < 0 || rf < 0)
                    LERR("\n  micro-batch %d: missing %s of the activation from stage %d to %d", j,
                         sf < 0 ? "SEND_F" : "RECV_F", a, b);
                else if (sf < POS(P_F, a, j) || (POS(P_F, b, j) >= 0 && rf > POS(P_F, b, j)))
                    LERR("\n  micro-batch %d: %s", j,
                         sf < POS(P_F, a, j) ? "SEND_F placed before its forward"
                                             : "RECV_F placed after the forward that needs it");
                if (sb < 0 || rb < 0)
                    LERR("\n  micro-batch %d: missing %s of the gradient from stage %d to %d", j,
                         sb < 0 ? "SEND_B" : "RECV_B", b, a);
                else if (sb < POS(P_G, b, j) || (POS(P_G, a, j) >= 0 && rb > POS(P_G, a, j)))
                    LERR("\n  micro-batch %d: %s", j,
                         sb < POS(P_G, b, j) ? "SEND_B placed before its backward"
                                             : "RECV_B placed after the backward that needs it");
            }
        }
    }
    /* Matching order on every rank pair: walking a rank's receives from one peer, the
     * matching sends must appear in the same order on the peer. Ranks talk to few peers, so a
     * short per-rank table of (peer, last send position) is enough. */
    for (int32_t r = 0; r < s->pp && nerr <= MAX_LISTED; r++) {
        int32_t peer[16];
        int32_t last[16];
        int npeer = 0;
        const ps_action *a = s->lacts + s->loff[r];
        for (int64_t i = 0; i < s->llen[r]; i++) {
            const ps_action *x = &a[i];
            if (x->kind != PS_RECV_F && x->kind != PS_RECV_B)
                continue;
            if (x->bstage < 0 || x->bstage >= s->nstages)
                continue;
            int32_t from = s->stage_rank[x->bstage];
            int32_t sp =
                x->kind == PS_RECV_F ? POS(P_SF, x->bstage, x->mb) : POS(P_SB, x->bstage, x->mb);
            if (sp < 0)
                continue; /* reported above */
            int q;
            for (q = 0; q < npeer && peer[q] != from; q++)
                ;
            if (q == npeer) {
                if (npeer == 16)
                    continue; /* order with more than 16 peers is not tracked */
                peer[npeer] = from;
                last[npeer++] = -1;
            }
            if (sp < last[q]) {
                char name[96];
                ps__action_str(x, name, sizeof name);
                LERR("\n  rank %d, step %lld: %s is received out of the order rank %d sends in", r,
                     (long long)i, name, from);
            }
            last[q] = sp;
        }
    }
#undef POS
#undef LERR
    ps__free(&s->al, pos, sm * P_N, sizeof *pos);
    if (nerr > MAX_LISTED)
        ps__adderr(s->err, "\n  ... and %d more problems", nerr - MAX_LISTED);
    return nerr ? PS_EINVALID : 0;
}

/* Explains a failed sweep: count problems first (they are the cause more often than not),
 * else the deadlock. */
static int explain(ps_schedule *s, const ps__engine *e, int finished)
{
    size_t sm = (size_t)s->nstages * (size_t)s->m;
    uint8_t *cnt = ps__calloc(&s->al, sm, 1);
    if (!cnt)
        return ps__seterr(s->err, PS_ENOMEM, "out of memory validating %zu actions",
                          ps_schedule_total_actions(s));
    ps__seterr(s->err, 0, "invalid schedule:");
    int nerr = check_static(s, cnt);
    ps__free(&s->al, cnt, sm, 1);
    if (nerr)
        return PS_EINVALID;
    if (!finished) {
        ps__seterr(s->err, PS_EDEADLOCK,
                   "deadlock after %lld of %lld actions:", (long long)ps__engine_done(e),
                   (long long)e->total);
        ps__engine_describe(e, s->err);
        return PS_EDEADLOCK;
    }
    return ps__seterr(s->err, PS_EINVALID, "invalid schedule: an action runs twice");
}

int ps_schedule_validate(ps_schedule *s)
{
    if (!s)
        return PS_EINVAL;
    if (s->pp <= 0 || !s->acts)
        return ps__seterr(s->err, PS_EINVAL, "the schedule is empty");
    ps__seterr(s->err, 0, "invalid schedule:");
    if (check_refs(s))
        return PS_EINVALID;

    ps__engine e;
    vclock clk = {&e, 0};
    int rc = ps__engine_init(&e, s, &check_ops, &clk, &s->al);
    if (rc)
        return ps__seterr(s->err, rc, "out of memory");
    /* Record the issue order for the simulator, reusing the schedule's buffer. */
    s->order_ok = 0;
    e.rec_on = 1;
    e.rec = s->order;
    e.rec_cap = s->order_cap;
    s->order = NULL;
    s->order_cap = 0;
    ps__engine_run_sync(&e, &check_ops);
    int finished = ps__engine_finished(&e);
    int ok = finished && !clk.repeat && complete(s, e.st);
    s->order = e.rec;
    s->order_cap = e.rec_cap;
    s->order_len = e.rec_len;
    s->order_ok = ok && !e.rec_failed;
    int rec_failed = e.rec_failed;
    e.rec = NULL;
    e.rec_cap = 0;
    if (!ok) {
        rc = explain(s, &e, finished);
        ps__engine_destroy(&e);
        return rc;
    }
    ps__engine_destroy(&e);
    if (rec_failed)
        return ps__seterr(s->err, PS_ENOMEM, "out of memory recording the issue order");
    if (s->lowered) {
        s->err[0] = 0;
        ps__seterr(s->err, 0, "invalid communication:");
        rc = check_lowered(s);
        if (rc)
            return rc;
    }
    s->err[0] = 0;
    return 0;
}
