/*
 * The estimate configuration loader (ps_estimate_config_load_keys). The input is the file's
 * text. Checks: a refused file leaves a message, no named keys, and its outputs untouched; an
 * accepted one gives a model and hardware that pass their checks, and a layout that lives in
 * the caller's buffer (of a size chosen from the input, or none) and, when its sizes are
 * small, goes through ps_layout_split without harm.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz.h"

#include <pipesched/model.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fz_exact_copy(data, size);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    static const size_t caps[] = {256, 256, 256, 0, 1, 8, 4096};
    size_t cap = caps[h % (sizeof caps / sizeof caps[0])];
    char *layout_buf = cap ? malloc(cap) : NULL;
    char err[1024];
    err[0] = 0;

    ps_transformer model;
    ps_hardware hw;
    ps_train train;
    memset(&model, 0xa5, sizeof model);
    memset(&hw, 0xa5, sizeof hw);
    memset(&train, 0xa5, sizeof train);
    unsigned char before[sizeof model];
    memcpy(before, &model, sizeof model);
    uint64_t keys = ~0ULL;
    int rc = ps_estimate_config_load_keys(text, size, &model, &hw, &train, &keys, layout_buf, cap,
                                          err, sizeof err);
    if (rc) {
        FZ_CHECK(rc == PS_EPARSE || rc == PS_ECONFIG || rc == PS_ENOMEM || rc == PS_ERANGE,
                 "ps_estimate_config_load_keys returned %s", ps_err_name(rc));
        FZ_CHECK(err[0] != 0, "failed with %s and no message", ps_err_name(rc));
        FZ_CHECK(keys == 0, "failed, yet named keys %#llx", (unsigned long long)keys);
        FZ_CHECK(memcmp(before, &model, sizeof model) == 0, "a refused file wrote the model");
    } else {
        char msg[256];
        FZ_CHECK(ps_transformer_check(&model, msg, sizeof msg) == 0,
                 "an accepted file's model fails its check: %s", msg);
        FZ_CHECK(ps_hardware_check(&hw, msg, sizeof msg) == 0,
                 "an accepted file's hardware fails its check: %s", msg);
        if (train.layout) {
            FZ_CHECK(train.layout == layout_buf, "the layout is not in the caller's buffer");
            FZ_CHECK(memchr(layout_buf, 0, cap) != NULL, "the layout is not terminated");
            long long stages = (long long)train.pp * train.vpp;
            if (train.pp >= 1 && train.vpp >= 1 && stages <= 256 &&
                strcmp(train.layout, "auto") != 0) {
                ps_stage_layers *out = malloc((size_t)stages * sizeof *out);
                ps_layout_split(train.layout, train.pp, train.vpp, model.layers, model.mtp_layers,
                                train.first_stage_layers, train.last_stage_layers, out, msg,
                                sizeof msg);
                free(out);
            }
        }
    }
    free(layout_buf);
    free(text);
    return 0;
}
