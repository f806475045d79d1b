/*
 * Megatron pipeline layout strings (ps_layout_split, ps_layout_format). The first six bytes
 * choose pp (1..8), vpp (1..4), the decoder layers (0..63), the MTP layers (0..3) and the
 * first / last rank's layers (mostly 0); the rest is the layout string (byte 0 of the rest
 * 0xff: no layout, the even split). Checks: a refused split leaves a message and a zeroed
 * output; an accepted one holds every layer once, in order, the embedding and the loss once;
 * when ps_layout_format can write it, the string reads back as the same split.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz.h"

#include <pipesched/model.h>

#define MAX_STAGES 32

static int same_split(const ps_stage_layers *x, const ps_stage_layers *y, int n)
{
    for (int i = 0; i < n; i++)
        if (x[i].first_layer != y[i].first_layer || x[i].layers != y[i].layers ||
            x[i].embedding != y[i].embedding || x[i].mtp != y[i].mtp || x[i].loss != y[i].loss)
            return 0;
    return 1;
}

static void check_split(const ps_stage_layers *out, int n, int32_t layers, int32_t mtp)
{
    int32_t next = 0, m = 0, emb = 0, loss = 0;
    for (int i = 0; i < n; i++) {
        FZ_CHECK(out[i].layers >= 0 && out[i].mtp >= 0, "stage %d: %d layers, %d mtp", i,
                 out[i].layers, out[i].mtp);
        FZ_CHECK(out[i].first_layer == next, "stage %d starts at layer %d, expected %d", i,
                 out[i].first_layer, next);
        next += out[i].layers;
        m += out[i].mtp;
        emb += out[i].embedding;
        loss += out[i].loss;
    }
    FZ_CHECK(next == layers, "the split holds %d of %d layers", next, layers);
    FZ_CHECK(m == mtp, "the split holds %d of %d MTP layers", m, mtp);
    FZ_CHECK(emb == 1 && loss == 1, "the split has %d embeddings and %d losses", emb, loss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    fz_reader r = {data, size};
    int32_t pp = (int32_t)fz_range(&r, 1, 8), vpp = (int32_t)fz_range(&r, 1, 4);
    int32_t layers = (int32_t)fz_range(&r, 0, 63), mtp = (int32_t)fz_range(&r, 0, 3);
    unsigned fl = fz_u8(&r), ll = fz_u8(&r);
    int32_t first = fl < 192 ? 0 : (int32_t)(fl % 24) - 2;
    int32_t last = ll < 192 ? 0 : (int32_t)(ll % 24) - 2;
    int no_layout = r.n > 0 && r.p[0] == 0xff;
    char *layout = no_layout ? NULL : fz_strndup(r.p, r.n);
    int n = pp * vpp;

    ps_stage_layers out[MAX_STAGES], back[MAX_STAGES];
    memset(out, 0x5a, sizeof out); /* the caller's old contents: a refusal must zero them */
    char err[256];
    err[0] = 0;
    int rc = ps_layout_split(layout, pp, vpp, layers, mtp, first, last, out, err, sizeof err);
    if (rc) {
        FZ_CHECK(rc == PS_ECONFIG || rc == PS_ERANGE, "ps_layout_split returned %s",
                 ps_err_name(rc));
        FZ_CHECK(err[0] != 0, "ps_layout_split failed with %s and no message", ps_err_name(rc));
        FZ_CHECK(memchr(err, 0, sizeof err) != NULL, "the message is not terminated");
        ps_stage_layers zero[MAX_STAGES];
        memset(zero, 0, sizeof zero);
        FZ_CHECK(same_split(out, zero, n), "a refused split left a non-zero output");
        free(layout);
        return 0;
    }
    check_split(out, n, layers, mtp);

    char buf[1024];
    int len = ps_layout_format(out, n, buf, sizeof buf);
    if (len >= 0) {
        FZ_CHECK((size_t)len == strlen(buf), "format returned %d for a string of %zu", len,
                 strlen(buf));
        rc = ps_layout_split(buf, pp, vpp, layers, mtp, 0, 0, back, err, sizeof err);
        FZ_CHECK(rc == 0, "the formatted layout \"%s\" of \"%s\" does not split back: %s", buf,
                 layout ? layout : "(even)", err);
        FZ_CHECK(same_split(out, back, n), "\"%s\" splits back differently", buf);
    } else {
        FZ_CHECK(len == PS_ECONFIG || len == PS_ERANGE, "ps_layout_format returned %s",
                 ps_err_name(len));
    }
    free(layout);
    return 0;
}
