/*
 * What a placement costs and what moving to it costs (include/pipesched/balance.h,
 * docs/balance.md): one MoE layer's time on its slowest device with src/model's GEMM and
 * transfer formulas, the bytes and seconds of a migration, the relabelling that keeps as many
 * experts in place as it can, and the rule that decides whether a layer moves.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"
#include "model/cost.h"

#include <string.h>

/* bf16 weights (2 bytes), fp32 master weights (4) and Adam's two fp32 moments (4 + 4): what
 * src/model counts per parameter, less the gradients, which every step recomputes. */
#define MIGRATED_BYTES_PER_PARAM 14.0

double ps_expert_migration_bytes(const ps_transformer *model)
{
    if (!model || model->experts < 1)
        return 0;
    double dense, expert;
    ps__layer_params(model, 1, &dense, &expert);
    return MIGRATED_BYTES_PER_PARAM * expert / model->experts;
}

/* Seconds of one transfer of `bytes` within a node (inter 0) or across nodes, by cost.c's
 * point-to-point formula (bytes over the link's achieved bandwidth, plus its latency); 0 for
 * nothing. */
static double transfer_s(const ps__setup *u, double bytes, int inter)
{
    return bytes > 0 ? ps__coll_s(u, PS__P2P, 2, bytes, inter ? 1 : 2) : 0.0;
}

int ps_expert_layer_time_get(const ps_transformer *model, const ps_hardware *hw, int32_t precision,
                             const double *load, int32_t experts, const int32_t *device_of,
                             const ps_expert_group *g, ps_expert_layer_time *out, char *err,
                             size_t errlen)
{
    if (!model || !hw || !load || !device_of || !g || !out)
        return PS_EINVAL;
    memset(out, 0, sizeof *out);
    if (model->experts < 1)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "model %s has no experts", model->name);
    if (model->experts != experts)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "the loads name %d experts, model %s has %d",
                            experts, model->name, model->experts);
    int rc = ps_expert_group_check(g, experts, NULL, err, errlen);
    if (rc)
        return rc;
    double peak = precision == PS_PREC_FP8 ? hw->peak_tflops_fp8 : hw->peak_tflops_bf16;
    if (!(peak > 0))
        return ps__seterr_n(err, errlen, PS_ECONFIG, "hardware %s has no %s peak", hw->name,
                            precision == PS_PREC_FP8 ? "FP8" : "BF16");
    ps__setup u = {.m = model, .hw = hw, .peak_gemm = peak * 1e12, .peak_bf16 = peak * 1e12};
    double h = model->hidden, f = model->moe_ffn > 0 ? model->moe_ffn : model->ffn;
    double up = model->gated_mlp ? 2.0 * f : f;
    int32_t D = g->devices, N = g->nodes, G = D / N;
    /* Per device: the GEMMs of its experts, then its tokens. Small arrays would do, but the
     * group can hold thousands of devices: walk the experts once per device instead. */
    out->device = -1;
    for (int32_t d = 0; d < D; d++) {
        double gemm = 0, tokens = 0;
        for (int32_t e = 0; e < experts; e++) {
            if (device_of[e] < 0 || device_of[e] >= D)
                return ps__seterr_n(err, errlen, PS_ECONFIG,
                                    "expert %d is on device %d: expected 0 to %d", e, device_of[e],
                                    D - 1);
            if (device_of[e] != d)
                continue;
            /* Forward, input gradient and weight gradient: three times the forward GEMMs, at
             * the grouped GEMM's efficiency (docs/model.md). */
            gemm += 3.0 * (ps__gemm_s(&u, load[e], h, up) + ps__gemm_s(&u, load[e], f, h)) /
                    hw->grouped_gemm_eff;
            tokens += load[e];
        }
        /* Dispatch and combine, in the forward and the backward: four transfers of the
         * device's tokens (bf16 hidden states). The tokens come from every device alike, so
         * (N-1)/N of them from other nodes and (G-1)/D from the node's other devices. */
        double bytes = 4.0 * tokens * h * 2.0;
        double inter = bytes * (N - 1) / N, intra = bytes * (G - 1) / D;
        double a2a = 4.0 * (transfer_s(&u, inter / 4.0, 1) + transfer_s(&u, intra / 4.0, 0));
        if (out->device < 0 || gemm + a2a > out->layer_s) {
            out->device = d;
            out->gemm_s = gemm;
            out->a2a_s = a2a;
            out->layer_s = gemm + a2a;
            out->a2a_bytes = inter + intra;
            out->a2a_inter_bytes = inter;
        }
    }
    return 0;
}

int ps_expert_migration_s(const int32_t *from, const int32_t *to, int32_t experts,
                          const ps_expert_group *g, double bytes_per_expert, const ps_hardware *hw,
                          int32_t *moved, double *seconds)
{
    if (!from || !to || !g || !hw || !seconds || g->devices < 1 || g->nodes < 1 ||
        g->devices % g->nodes)
        return PS_EINVAL;
    int32_t D = g->devices, G = D / g->nodes, count = 0;
    int any_intra = 0, any_inter = 0;
    double slowest = 0;
    /* Per device: the bytes it sends and receives within its node and across nodes. One pass
     * over the experts per device keeps the function free of allocation. */
    for (int32_t d = 0; d < D; d++) {
        double send[2] = {0, 0}, recv[2] = {0, 0};
        for (int32_t e = 0; e < experts; e++) {
            int32_t a = from[e], b = to[e];
            if (a < 0 || a >= D || b < 0 || b >= D)
                return PS_ECONFIG;
            if (a == b || (a != d && b != d))
                continue;
            int inter = a / G != b / G;
            if (a == d)
                send[inter] += bytes_per_expert;
            else
                recv[inter] += bytes_per_expert;
            count += a == d; /* counted once, by its sender */
            any_inter |= inter;
            any_intra |= !inter;
        }
        double intra_bw = hw->intra_gbps * hw->bus_eff_intra * 1e9;
        double inter_bw = hw->inter_gbps * hw->bus_eff_inter * 1e9;
        double t = (send[0] > recv[0] ? send[0] : recv[0]) / intra_bw +
                   (send[1] > recv[1] ? send[1] : recv[1]) / inter_bw;
        slowest = t > slowest ? t : slowest;
    }
    *seconds = slowest + (any_intra ? hw->lat_intra_us * 1e-6 : 0) +
               (any_inter ? hw->lat_inter_us * 1e-6 : 0);
    if (moved)
        *moved = count;
    return 0;
}

int ps_expert_should_migrate(double before_s, double after_s, double migration_s, int32_t horizon)
{
    return horizon > 0 && (double)horizon * (before_s - after_s) > migration_s;
}

/* ---- keeping experts in place --------------------------------------------------------------- */

/* Greedy matching on an n x n overlap table (ov[row * n + col]): repeatedly the largest entry
 * whose row and column are both free (ties: the lowest row, then column). col_to_row[col]
 * receives the row matched to each column. used[] is 2n scratch. */
static void greedy_match(const int32_t *ov, int32_t n, int32_t *col_to_row, int32_t *used)
{
    memset(used, 0, 2 * (size_t)n * sizeof *used);
    for (int32_t k = 0; k < n; k++) {
        int32_t br = -1, bc = -1;
        for (int32_t r = 0; r < n; r++)
            for (int32_t c = 0; c < n && !used[r]; c++)
                if (!used[n + c] && (br < 0 || ov[r * n + c] > ov[br * n + bc]))
                    br = r, bc = c;
        used[br] = used[n + bc] = 1;
        col_to_row[bc] = br;
    }
}

int ps_expert_align(const int32_t *current, int32_t *placement, int32_t experts,
                    const ps_expert_group *g, const ps_allocator *alloc)
{
    if (!current || !placement || !g || g->devices < 1 || g->nodes < 1 || g->devices % g->nodes)
        return PS_EINVAL;
    int32_t D = g->devices, N = g->nodes, G = D / N, M = N > G ? N : G;
    for (int32_t e = 0; e < experts; e++)
        if (current[e] < 0 || current[e] >= D || placement[e] < 0 || placement[e] >= D)
            return PS_ECONFIG;
    ps_allocator al;
    ps__alloc_init(&al, alloc);
    size_t ov_n = (size_t)M * (size_t)M, scratch_n = 3 * (size_t)M;
    int32_t *ov = ps__alloc(&al, ov_n, sizeof *ov);
    int32_t *scratch = ps__alloc(&al, scratch_n, sizeof *scratch);
    if (!ov || !scratch) {
        ps__free(&al, ov, ov_n, sizeof *ov);
        ps__free(&al, scratch, scratch_n, sizeof *scratch);
        return PS_ENOMEM;
    }
    int32_t *map = scratch, *used = scratch + M;
    /* Nodes: the placement's node c becomes the current node map[c]. */
    memset(ov, 0, (size_t)N * (size_t)N * sizeof *ov);
    for (int32_t e = 0; e < experts; e++)
        ov[(current[e] / G) * N + placement[e] / G]++;
    greedy_match(ov, N, map, used);
    for (int32_t e = 0; e < experts; e++)
        placement[e] = map[placement[e] / G] * G + placement[e] % G;
    /* Devices inside each node, likewise. */
    for (int32_t n = 0; n < N; n++) {
        memset(ov, 0, (size_t)G * (size_t)G * sizeof *ov);
        for (int32_t e = 0; e < experts; e++)
            if (placement[e] / G == n && current[e] / G == n)
                ov[(current[e] % G) * G + placement[e] % G]++;
        greedy_match(ov, G, map, used);
        for (int32_t e = 0; e < experts; e++)
            if (placement[e] / G == n)
                placement[e] = n * G + map[placement[e] % G];
    }
    ps__free(&al, ov, ov_n, sizeof *ov);
    ps__free(&al, scratch, scratch_n, sizeof *scratch);
    return 0;
}
