/*
 * The PyTorch CSV loader (ps_schedule_load_csv). The input is the table's text. Checks: a
 * refused table leaves a message; a loaded one either validates or is refused with a message;
 * a valid one simulates, exports in every format, lowers and validates again (pipeline.c);
 * its compute-only CSV export loads back as the same table; every free names its size, nothing
 * leaks, and a second load that fails one of its allocations (chosen from the input) cleans up.
 *
 * Bounds: inputs up to 16 KiB whose numbers are all below 512, so that the loader's tables
 * (stages x micro-batches) stay small and an input runs in milliseconds.
 * SPDX-License-Identifier: MIT
 */
#include "pipeline.h"

#define MAX_INPUT (16 * 1024)
#define MAX_NUMBER 512

static int numbers_small(const uint8_t *data, size_t size)
{
    unsigned long v = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] >= '0' && data[i] <= '9') {
            v = v * 10 + (data[i] - '0');
            if (v >= MAX_NUMBER)
                return 0;
        } else {
            v = 0;
        }
    }
    return 1;
}

typedef struct buf_sink {
    char *p;
    size_t len, cap;
} buf_sink;

static int buf_write(void *ud, const char *data, size_t len)
{
    buf_sink *b = ud;
    if (b->len + len > b->cap) {
        size_t cap = (b->len + len) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    return 0;
}

static int same_action(const ps_action *x, const ps_action *y)
{
    return x->kind == y->kind && x->stage == y->stage && x->mb == y->mb && x->bkind == y->bkind &&
           x->bstage == y->bstage && x->bmb == y->bmb;
}

/* The compute-only CSV of s loads back as the same table (when no rank is idle: a trailing
 * idle rank is issue 13's defect 7, checked by the CSV suite once fixed). */
static void check_round_trip(const ps_schedule *s, fz_alloc *a)
{
    int pp = ps_schedule_pp(s);
    for (int r = 0; r < pp; r++)
        if (ps_schedule_rank_length(s, r) == 0)
            return;
    buf_sink out = {0};
    int rc = ps_export(s, NULL, PS_FORMAT_CSV, buf_write, &out);
    if (rc == PS_ENOMEM && a->failed) {
        free(out.p);
        return;
    }
    FZ_CHECK(rc == 0, "csv export of a loaded table: %s", ps_err_name(rc));
    ps_allocator al = fz_allocator(a);
    ps_schedule *t = NULL;
    rc = ps_schedule_new(&t, &al);
    if (rc == 0)
        rc = ps_schedule_load_csv(t, out.p ? out.p : "", out.len, PS_CSV_COMPUTE_ONLY,
                                  ps_schedule_microbatches(s));
    if (!(rc == PS_ENOMEM && a->failed)) {
        FZ_CHECK(rc == 0, "the CSV export does not load back: %s: %s", ps_err_name(rc),
                 t ? ps_schedule_last_error(t) : "");
        FZ_CHECK(ps_schedule_pp(t) == pp, "round trip: %d ranks became %d", pp, ps_schedule_pp(t));
        for (int r = 0; r < pp; r++) {
            size_t n = ps_schedule_rank_length(s, r);
            FZ_CHECK(ps_schedule_rank_length(t, r) == n, "round trip: rank %d had %zu actions", r,
                     n);
            const ps_action *x = ps_schedule_rank_actions(s, r),
                            *y = ps_schedule_rank_actions(t, r);
            for (size_t i = 0; i < n; i++)
                FZ_CHECK(same_action(&x[i], &y[i]), "round trip: rank %d action %zu differs", r, i);
        }
    }
    ps_schedule_free(t);
    free(out.p);
}

static void load_once(const char *text, size_t len, ps_csv_format fmt, int m, fz_alloc *a, int deep)
{
    ps_allocator al = fz_allocator(a);
    ps_schedule *s = NULL;
    ps_problem *pb = NULL;
    int rc = ps_schedule_new(&s, &al);
    if (rc) {
        FZ_CHECK(rc == PS_ENOMEM && a->failed, "ps_schedule_new: %s", ps_err_name(rc));
        return;
    }
    rc = ps_schedule_load_csv(s, text, len, fmt, m);
    if (rc && a->bad_osize) /* issue 13's defect 3: a failed load frees caps with a wrong size */
        a->bad_osize = 0;
    if (rc) {
        FZ_CHECK(rc < 0 && ps_schedule_last_error(s)[0], "load_csv failed with %d and no message",
                 rc);
        goto done;
    }
    FZ_CHECK(strcmp(ps_schedule_family(s), "custom") == 0, "a loaded table's family is %s",
             ps_schedule_family(s));
    rc = ps_schedule_validate(s);
    if (rc) {
        FZ_CHECK(rc == PS_EINVALID || rc == PS_EDEADLOCK || (rc == PS_ENOMEM && a->failed),
                 "validate returned %s", ps_err_name(rc));
        FZ_CHECK(ps_schedule_last_error(s)[0], "validate failed with no message");
        goto done;
    }
    if (!deep)
        goto done;
    check_round_trip(s, a);
    rc = ps_problem_new(&pb, &al);
    if (rc)
        goto done;
    fz_check_schedule(s, pb, a);
done:
    ps_problem_free(pb);
    ps_schedule_free(s);
}

/* PS_FUZZ_KNOWN_DEFECTS=csv-caps-osize tolerates issue 13's defect 3 (a load that fails after
 * its fill pass frees its caps block with a wrong osize) while its fix is under way, and says
 * when the defect is gone so that the setting can go too. */
static int tolerate_caps;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tolerate_caps = fz_known_defect("csv-caps-osize");
    if (tolerate_caps) {
        static const char repro[] = "0F0,1F0\n1F1\n";
        fz_alloc a = {0};
        a.tolerate_osize = 1;
        ps_allocator al = fz_allocator(&a);
        ps_schedule *s = NULL;
        if (ps_schedule_new(&s, &al) == 0) {
            ps_schedule_load_csv(s, repro, sizeof repro - 1, PS_CSV_AUTO, 0);
            ps_schedule_free(s);
        }
        fprintf(stderr, "fuzz-csv: tolerating issue 13's defect 3 (csv-caps-osize): %s\n",
                a.bad_osize ? "it still reproduces"
                            : "it no longer reproduces: drop it from PS_FUZZ_KNOWN_DEFECTS");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT || !numbers_small(data, size))
        return 0;
    char *text = fz_exact_copy(data, size);
    fz_alloc a = {0};
    a.tolerate_osize = tolerate_caps;
    load_once(text, size, PS_CSV_AUTO, 0, &a, 1);
    FZ_CHECK(a.bad_osize == 0, "a free or realloc with the wrong osize outside a failed load");
    fz_alloc_check_empty(&a, "csv load");

    /* Again with another format, a given micro-batch count, and one allocation failing. */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    fz_alloc b = {0};
    b.tolerate_osize = tolerate_caps;
    b.fail_at = 1 + (long)(h % 64);
    int m = (h >> 8) % 4 ? 0 : (int)((h >> 10) % 64);
    load_once(text, size, (ps_csv_format)((h >> 16) % 3), m, &b, 0);
    FZ_CHECK(b.bad_osize == 0, "a free or realloc with the wrong osize outside a failed load");
    fz_alloc_check_empty(&b, "csv load with a failed allocation");
    free(text);
    return 0;
}
