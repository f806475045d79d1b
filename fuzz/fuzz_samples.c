/*
 * The samples file of `balance data` (ps_samples_parse) and, for small batches, the data
 * reordering on it (ps_balance_data). The input is the file's text. Checks: a refusal is
 * PS_EPARSE with a message that names a line or says the file is empty; an accepted file
 * gives the same count with and without room for the samples, and every sample has tokens >=
 * documents >= 1 and tokens <= sum of squares <= tokens^2; the reordering of up to 64 samples
 * (dp 2 when the count is even) fills every slot once and is never worse than the baseline.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz.h"

#include <pipesched/balance.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fz_exact_copy(data, size);
    char err[512];
    size_t n = 0;
    int rc = ps_samples_parse(text, size, NULL, 0, &n, err, sizeof err);
    if (rc) {
        FZ_CHECK(rc == PS_EPARSE, "ps_samples_parse returned %s", ps_err_name(rc));
        FZ_CHECK(strncmp(err, "line ", 5) == 0 || strncmp(err, "no samples", 10) == 0,
                 "a refusal that names no line: %s", err);
        free(text);
        return 0;
    }
    FZ_CHECK(n >= 1, "accepted with no samples");
    ps_sample *x = malloc(n * sizeof *x);
    size_t m = 0;
    FZ_CHECK(x && ps_samples_parse(text, size, x, n, &m, err, sizeof err) == 0 && m == n,
             "the second pass differs: %zu then %zu samples", n, m);
    double *t = malloc(n * sizeof *t);
    FZ_CHECK(t != NULL, "out of memory");
    ps_sample_model sm = {1e-9, 1e-5, 1e-3};
    for (size_t i = 0; i < n; i++) {
        FZ_CHECK(x[i].docs >= 1 && x[i].tokens >= x[i].docs && x[i].sq >= x[i].tokens &&
                     x[i].sq <= x[i].tokens * x[i].tokens,
                 "sample %zu: %d documents, %g tokens, %g squared", i, (int)x[i].docs, x[i].tokens,
                 x[i].sq);
        t[i] = ps_sample_time(&sm, &x[i]);
    }
    if (n <= 64) {
        ps_problem *pb;
        FZ_CHECK(ps_problem_new(&pb, NULL) == 0 && ps_problem_set_int(pb, PS_PARAM_PP, 2) == 0,
                 "ps_problem_new");
        int32_t dp = n % 2 ? 1 : 2, *rank = malloc(n * sizeof *rank),
                *slot = malloc(n * sizeof *slot);
        ps_data_config cfg = {dp, (int32_t)(n / (size_t)dp), 1, 2000};
        ps_data_result r;
        FZ_CHECK(rank && slot, "out of memory");
        rc = ps_balance_data(pb, t, n, &cfg, rank, slot, &r, err, sizeof err);
        FZ_CHECK(rc == 0, "ps_balance_data: %s", err);
        FZ_CHECK(r.step_time <= r.baseline_step_time, "step %g above the baseline %g", r.step_time,
                 r.baseline_step_time);
        uint8_t *seen = calloc(n, 1);
        FZ_CHECK(seen != NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            FZ_CHECK(rank[i] >= 0 && rank[i] < dp && slot[i] >= 0 && slot[i] < cfg.microbatches,
                     "sample %zu at rank %d slot %d", i, (int)rank[i], (int)slot[i]);
            size_t q = (size_t)rank[i] * (size_t)cfg.microbatches + (size_t)slot[i];
            FZ_CHECK(!seen[q], "slot %zu holds two samples (mbs 1)", q);
            seen[q] = 1;
        }
        free(seen);
        free(rank);
        free(slot);
        ps_problem_free(pb);
    }
    free(t);
    free(x);
    free(text);
    return 0;
}
