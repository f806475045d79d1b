/*
 * Shared by the estimate and partition suites: every allocation of a first run and of a
 * repeated run of ps_estimate_run can fail; the run returns PS_ENOMEM and leaks nothing.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_TESTS_ESTIMATE_ALLOC_H
#define PS_TESTS_ESTIMATE_ALLOC_H

#include "common.h"

#include <pipesched/model.h>

static void check_estimate_alloc_failure(const ps_transformer *const *models, int nmodels,
                                         const ps_hardware *h, const ps_train *t)
{
    for (int k = 0; k < nmodels; k++) {
        for (long n = 1;; n++) {
            counting_alloc ca = {0};
            ca.fail_at = n;
            ps_allocator al = counting_allocator(&ca);
            ps_estimate *e = NULL;
            int rc = ps_estimate_new(&e, &al);
            if (!rc)
                rc = ps_estimate_run(e, models[k], h, t);
            if (!rc)
                rc = ps_estimate_run(e, models[k], h, t);
            ps_estimate_free(e);
            ck_assert_int_eq(ca.live, 0);
            if (rc == 0) {
                ck_assert_int_lt(ca.calls, n);
                break;
            }
            ck_assert_msg(rc == PS_ENOMEM, "model %d, call %ld: %d", k, n, rc);
        }
    }
}

#endif
