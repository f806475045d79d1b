/*
 * The HuggingFace config.json loader (ps_transformer_from_hf). The input is the file's text.
 * Checks: a refused file leaves a message that fits the buffer (of a size chosen from the
 * input, down to 0 bytes); an accepted one passes ps_transformer_check and has finite
 * parameter counts.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz.h"

#include <pipesched/model.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fz_exact_copy(data, size);
    static const size_t caps[] = {512, 512, 512, 0, 1, 7, 64};
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    size_t cap = caps[h % (sizeof caps / sizeof caps[0])];
    char *err = cap ? malloc(cap) : NULL;
    if (cap)
        memset(err, 'x', cap);

    ps_transformer t;
    int rc = ps_transformer_from_hf(text, size, &t, err, cap);
    if (rc) {
        FZ_CHECK(rc == PS_EPARSE || rc == PS_ECONFIG || rc == PS_ENOMEM || rc == PS_ERANGE,
                 "ps_transformer_from_hf returned %s", ps_err_name(rc));
        if (cap) {
            FZ_CHECK(memchr(err, 0, cap) != NULL, "the message is not terminated in %zu bytes",
                     cap);
            FZ_CHECK(cap == 1 || err[0] != 0, "failed with %s and no message", ps_err_name(rc));
        }
    } else {
        FZ_CHECK(memchr(t.name, 0, sizeof t.name) != NULL, "the name is not terminated");
        char msg[256];
        FZ_CHECK(ps_transformer_check(&t, msg, sizeof msg) == 0,
                 "an accepted config fails ps_transformer_check: %s", msg);
        ps_param_count pc;
        FZ_CHECK(ps_transformer_params(&t, &pc) == 0, "ps_transformer_params failed");
        FZ_CHECK(isfinite(pc.total) && pc.total > 0 && isfinite(pc.active) && pc.active > 0 &&
                     pc.active <= pc.total,
                 "parameter counts total %g active %g", pc.total, pc.active);
    }
    free(err);
    free(text);
    return 0;
}
