/*
 * Calibration of the performance model against published step times.
 *
 *   pipesched-calibrate CALIBRATION.csv [--no-fit] [--only GPU] [--pool=none|blackwell|nvidia]
 *                       [--member LIST] [--attn-floor X] [--hold FIGURE=X]
 *   pipesched-calibrate --speed
 *
 * The CSV is shared/reference/steptimes/calibration.csv (not in the repository). Each row is
 * mapped to a model, a hardware preset and a parallel setup, and ps_estimate_run() predicts
 * its step time. The program prints:
 *   1. every row with the generic (uncalibrated) efficiency figures, and the rows it skips
 *      with the reason;
 *   2. the cross-validated accuracy of a fit per pool of hardware (by default A100 alone and
 *      H100, B200 and GB200 together; --pool): for each model of the pool, the efficiency
 *      figures are fitted on the other models' rows and the held-out model's rows, on every
 *      hardware of the pool, are predicted (leave one model out); MAPE, max error, Kendall
 *      tau within models, per hardware;
 *   3. the figures fitted on all the rows of each pool (what src/model/hardware.c holds) and
 *      every row predicted with them.
 * The fit minimises the mean absolute percentage error over the rows of one pool with a grid
 * over (gemm_eff, attn_eff, bus_eff_intra, moe_layer_us), then coordinate descent over the
 * compute figures the pool shares (gemm_eff, attn_eff, gemm_half_dim, grouped_gemm_eff) and
 * each hardware's system figures (bus_eff_intra, bus_eff_inter, moe_layer_us); attn_eff is
 * floored at 0.3 where every row ran a fused attention kernel. Everything is deterministic.
 *
 * --speed times ps_estimate_run() on two reference setups, cold (nothing kept from the run
 * before), warm (the same inputs again) and with two shapes in turn (bench/README.md).
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/model.h>
#include <pipesched/pipesched.h>

#include "bench_util.h"
#include "model/estimate.h" /* ps__estimate_forget: the cold figure */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the CSV -------------------------------------------------------------------------------- */

#define MAX_COLS 64

/* One record of the file: fields point into a private copy of the text. */
typedef struct record {
    int n;
    char *field[MAX_COLS];
} record;

/*
 * Splits the next record of *p (RFC 4180: fields in double quotes may hold commas, newlines
 * and "" for a quote), in place. Returns 0 at the end of the text, else 1.
 */
static int next_record(char **p, record *r)
{
    char *s = *p;
    if (!*s)
        return 0;
    r->n = 0;
    for (;;) {
        char *out = s, *start = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s)
                    break;
                if (*s == '"' && s[1] == '"') {
                    *out++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *out++ = *s++;
                }
            }
            while (*s && *s != ',' && *s != '\n' && *s != '\r')
                s++; /* anything after the closing quote is ignored */
        } else {
            while (*s && *s != ',' && *s != '\n' && *s != '\r')
                out++, s++;
        }
        char sep = *s;
        *out = '\0';
        if (r->n < MAX_COLS)
            r->field[r->n++] = start;
        if (sep == ',') {
            s++;
            continue;
        }
        if (sep == '\r')
            s++;
        if (*s == '\n')
            s++;
        break;
    }
    *p = s;
    return 1;
}

/* ---- the rows ------------------------------------------------------------------------------- */

/* The columns the mapping reads, by their header names. */
enum {
    C_SOURCE,
    C_MODEL,
    C_LAYERS,
    C_HIDDEN,
    C_FFN,
    C_HEADS,
    C_KV,
    C_VOCAB,
    C_SEQ,
    C_EXPERTS,
    C_TOPK,
    C_MOE_FFN,
    C_SHARED,
    C_GPU,
    C_GPUS,
    C_TP,
    C_PP,
    C_VPP,
    C_CP,
    C_EP,
    C_SP,
    C_RECOMPUTE,
    C_GBS,
    C_MBS,
    C_PREC,
    C_DISTOPT,
    C_STEP,
    C_NOTES,
    N_COLS
};

static const char *const col_names[N_COLS] = {"source_id",
                                              "model",
                                              "layers",
                                              "hidden",
                                              "ffn_hidden",
                                              "heads",
                                              "kv_heads",
                                              "vocab",
                                              "seq_len",
                                              "moe_experts",
                                              "moe_topk",
                                              "moe_ffn_hidden",
                                              "shared_experts",
                                              "gpu",
                                              "n_gpus",
                                              "tp",
                                              "pp",
                                              "vpp",
                                              "cp",
                                              "ep",
                                              "sequence_parallel",
                                              "recompute",
                                              "gbs",
                                              "mbs",
                                              "precision",
                                              "distributed_optimizer",
                                              "measured_step_time_s",
                                              "notes"};

/* The hardware with presets; B300 and GB300 have none. */
static const struct {
    const char *gpu, *preset;
} gpu_map[] = {
    {"A100", "a100-80g"}, {"H100-SXM", "h100-sxm"}, {"B200", "b200"}, {"GB200", "gb200"}};

#define N_HW (int)(sizeof gpu_map / sizeof gpu_map[0])

typedef struct row {
    int line; /* in the file, 1 = header */
    char source[32], model[40], gpu[16], prec[16], setup[96];
    ps_transformer m;
    ps_train t;
    int hw;    /* index in gpu_map, -1 = skipped */
    int group; /* the model group (same layer shape): cross-validation folds and tau */
    int same;  /* an earlier row with the same inputs (its prediction is this one's), -1 */
    double measured, pred;
    char skip[200];
    char layout[1024]; /* the uneven split's layout, "" = even */
} row;

/* Head dimensions the CSV does not carry (head_dim != hidden / heads) and no built-in model
 * provides: gpt-oss-120b's config.json (huggingface.co/openai/gpt-oss-120b) has head_dim 64. */
static const struct {
    int hidden, heads, head_dim;
} head_dims[] = {{2880, 64, 64}};

static int num(const char *s)
{
    return *s ? atoi(s) : 0;
}

/* Whether the row's dims are those of a built-in model; copies it into *m if so. */
static int builtin_match(const record *r, const int *col, ps_transformer *m)
{
    const char *name;
    for (size_t i = 0; (name = ps_transformer_builtin_name(i)) != NULL; i++) {
        ps_transformer b;
        ps_transformer_builtin(name, &b);
        const char *kv = r->field[col[C_KV]];
        int mla = b.kv_lora_rank > 0;
        if (b.layers == num(r->field[col[C_LAYERS]]) && b.hidden == num(r->field[col[C_HIDDEN]]) &&
            b.ffn == num(r->field[col[C_FFN]]) && b.heads == num(r->field[col[C_HEADS]]) &&
            b.vocab == num(r->field[col[C_VOCAB]]) && b.experts == num(r->field[col[C_EXPERTS]]) &&
            b.top_k == num(r->field[col[C_TOPK]]) &&
            (b.experts == 0 || (b.moe_ffn ? b.moe_ffn : b.ffn) == num(r->field[col[C_MOE_FFN]])) &&
            b.shared_experts == num(r->field[col[C_SHARED]]) &&
            (mla ? strcmp(kv, "MLA") == 0 : b.kv_heads == num(kv))) {
            *m = b;
            return 1;
        }
    }
    return 0;
}

/* The model of a row: a built-in one when the dims match, else the row's dims. 0 or skip. */
static int map_model(const record *r, const int *col, int vtrain, row *w)
{
    ps_transformer *m = &w->m;
    const char *f_layers = r->field[col[C_LAYERS]], *f_hidden = r->field[col[C_HIDDEN]];
    if (!*f_layers || !*f_hidden || !*r->field[col[C_HEADS]]) {
        snprintf(w->skip, sizeof w->skip, "model dims not given in the row");
        return -1;
    }
    memset(m, 0, sizeof *m);
    if (!vtrain && builtin_match(r, col, m))
        goto named;
    if (strcmp(r->field[col[C_KV]], "MLA") == 0) {
        snprintf(w->skip, sizeof w->skip, "MLA dims not in the row and no built-in model matches");
        return -1;
    }
    m->layers = num(f_layers);
    m->hidden = num(f_hidden);
    m->ffn = num(r->field[col[C_FFN]]);
    m->heads = num(r->field[col[C_HEADS]]);
    m->kv_heads = num(r->field[col[C_KV]]);
    /* vTrain's simulator assumes GPT-2's vocabulary (its README); the rows leave it blank. */
    m->vocab = vtrain ? 50257 : num(r->field[col[C_VOCAB]]);
    /* vTrain's GPT models: GeLU MLP and LayerNorm; the others are Llama-style. */
    m->gated_mlp = !vtrain;
    m->rms_norm = !vtrain;
    m->experts = num(r->field[col[C_EXPERTS]]);
    m->top_k = num(r->field[col[C_TOPK]]);
    m->moe_ffn = num(r->field[col[C_MOE_FFN]]);
    m->shared_experts = num(r->field[col[C_SHARED]]);
    for (size_t i = 0; i < sizeof head_dims / sizeof head_dims[0]; i++)
        if (head_dims[i].hidden == m->hidden && head_dims[i].heads == m->heads)
            m->head_dim = head_dims[i].head_dim;
named:
    snprintf(m->name, sizeof m->name, "%s", r->field[col[C_MODEL]]);
    char err[160];
    if (ps_transformer_check(m, err, sizeof err)) {
        snprintf(w->skip, sizeof w->skip, "model: %s", err);
        return -1;
    }
    return 0;
}

/* FP8 recipes (fp8, fp8-cs, fp8-mx, mxfp8, fp8-blockwise) are PS_PREC_FP8; NVFP4 is skipped. */
static int map_precision(const char *p, row *w)
{
    snprintf(w->prec, sizeof w->prec, "%.*s", (int)strcspn(p, " "), p);
    if (*p == '\0' || strncmp(p, "bf16", 4) == 0) {
        w->t.precision = PS_PREC_BF16; /* vTrain: blank; Megatron-DeepSpeed trains in bf16/fp16 */
        snprintf(w->prec, sizeof w->prec, "bf16");
        return 0;
    }
    if (strncmp(p, "fp8", 3) == 0 || strncmp(p, "mxfp8", 5) == 0) {
        w->t.precision = PS_PREC_FP8;
        return 0;
    }
    snprintf(w->skip, sizeof w->skip, "precision %s not modelled", p);
    return -1;
}

/*
 * Layers that do not divide over the S = p.v model stages (DeepSeek-V3's 61 over 32, Llama
 * 3.1 405B's 126 over 128): a layout that gives the inner stages floor(L/S) + 1 layers from
 * the second stage on, while the first and last stages (the embedding and the loss) keep
 * floor(L/S), taking the extra ones only when the inner stages cannot hold them all. This is
 * Megatron's practice of lighter end stages (--account-for-embedding/loss-in-pipeline-split,
 * the DeepSeek-V3 layouts), and the same rule for every row.
 */
static void uneven_split(row *w)
{
    int stages = w->t.pp * (w->t.vpp > 1 ? w->t.vpp : 1), layers = w->m.layers;
    if (stages < 2 || layers % stages == 0)
        return;
    int base = layers / stages, extra = layers % stages;
    size_t at = 0, cap = sizeof w->layout;
    for (int i = 0; i < stages; i++) {
        int inner = i > 0 && i < stages - 1, n = base;
        if (inner && extra > 0)
            n++, extra--;
        at += (size_t)snprintf(w->layout + at, cap - at, "%s%s", i ? "|" : "", i ? "" : "E");
        for (int k = 0; k < n && at < cap; k++)
            at += (size_t)snprintf(w->layout + at, cap - at, "t");
        if (i == stages - 1) {
            /* at most one layer the inner stages could not take */
            for (int k = 0; k < extra && at < cap; k++)
                at += (size_t)snprintf(w->layout + at, cap - at, "t");
            for (int k = 0; k < w->m.mtp_layers && at < cap; k++)
                at += (size_t)snprintf(w->layout + at, cap - at, "m");
            at += (size_t)snprintf(w->layout + at, cap - at, "L");
        }
        if (at >= cap) {
            w->layout[0] = '\0'; /* too long: the estimate reports the uneven split */
            return;
        }
    }
}

static void map_row(const record *r, const int *col, int line, row *w)
{
    memset(w, 0, sizeof *w);
    w->line = line;
    w->hw = -1;
    snprintf(w->source, sizeof w->source, "%s", r->field[col[C_SOURCE]]);
    snprintf(w->model, sizeof w->model, "%s", r->field[col[C_MODEL]]);
    snprintf(w->gpu, sizeof w->gpu, "%s", r->field[col[C_GPU]]);
    w->measured = atof(r->field[col[C_STEP]]);
    int vtrain = strcmp(w->source, "vtrain_multi") == 0;
    ps_train *t = &w->t;
    ps_train_init(t);
    t->gpus = num(r->field[col[C_GPUS]]);
    t->tp = num(r->field[col[C_TP]]);
    t->pp = num(r->field[col[C_PP]]);
    t->vpp = *r->field[col[C_VPP]] ? num(r->field[col[C_VPP]]) : 1;
    t->cp = *r->field[col[C_CP]] ? num(r->field[col[C_CP]]) : 1;
    t->ep = *r->field[col[C_EP]] ? num(r->field[col[C_EP]]) : 1;
    t->gbs = num(r->field[col[C_GBS]]);
    t->mbs = num(r->field[col[C_MBS]]);
    t->seq = num(r->field[col[C_SEQ]]);
    if (strcmp(r->field[col[C_SP]], "0") == 0)
        t->sequence_parallel = 0; /* blank: the default (on with TP) */
    const char *rc = r->field[col[C_RECOMPUTE]];
    t->recompute = strncmp(rc, "full", 4) == 0        ? PS_RECOMPUTE_FULL
                   : strncmp(rc, "selective", 9) == 0 ? PS_RECOMPUTE_SELECTIVE
                                                      : PS_RECOMPUTE_NONE;
    /* "0 (...)": off; "unknown": on (Megatron-Bridge's recipes). */
    t->distributed_optimizer = r->field[col[C_DISTOPT]][0] != '0';
    int fsdp = strcmp(r->field[col[C_DISTOPT]], "FSDP") == 0;
    snprintf(w->setup, sizeof w->setup, "%dg tp%d pp%d vpp%d cp%d ep%d gbs%lld mbs%d s%d%s",
             t->gpus, t->tp, t->pp, t->vpp, t->cp, t->ep, (long long)t->gbs, t->mbs, t->seq,
             t->recompute == PS_RECOMPUTE_FULL ? " rc" : "");
    if (map_precision(r->field[col[C_PREC]], w))
        return;
    if (fsdp) {
        snprintf(w->skip, sizeof w->skip,
                 "FSDP: sharded weights and per-layer gathers are not modelled");
        return;
    }
    int hw = -1;
    for (int i = 0; i < N_HW; i++)
        if (strcmp(gpu_map[i].gpu, w->gpu) == 0)
            hw = i;
    if (hw < 0) {
        snprintf(w->skip, sizeof w->skip, "no preset for %s", w->gpu);
        return;
    }
    if (!(w->measured > 0)) {
        snprintf(w->skip, sizeof w->skip, "no measured step time");
        return;
    }
    if (map_model(r, col, vtrain, w))
        return;
    /* Megatron-Bridge's MoE recipes set expert tensor parallelism to 1; release 25.09 tags
     * each MoE row "tokendrop" or "dropless" (the later ones are dropless, their footnote). */
    if (w->m.experts > 0) {
        t->etp = 1;
        t->moe_token_drop = strstr(r->field[col[C_NOTES]], "model tag 'tokendrop'") != NULL;
        if (t->moe_token_drop) {
            size_t at = strlen(w->setup);
            snprintf(w->setup + at, sizeof w->setup - at, " drop");
        }
    }
    uneven_split(w);
    w->hw = hw;
}

/* Reads the file into rows; returns the count or -1. */
static int load_rows(const char *path, row **out)
{
    char *text = slurp(path, NULL);
    if (!text) {
        fprintf(stderr, "calibrate: cannot read %s\n", path);
        return -1;
    }
    char *p = text;
    record r;
    int col[N_COLS];
    if (!next_record(&p, &r)) {
        free(text);
        return -1;
    }
    for (int c = 0; c < N_COLS; c++) {
        col[c] = -1;
        for (int i = 0; i < r.n; i++)
            if (strcmp(r.field[i], col_names[c]) == 0)
                col[c] = i;
        if (col[c] < 0) {
            fprintf(stderr, "calibrate: %s: no column %s\n", path, col_names[c]);
            free(text);
            return -1;
        }
    }
    int ncols = r.n, n = 0, cap = 0, line = 1;
    row *rows = NULL;
    while (next_record(&p, &r)) {
        line++;
        if (r.n == 1 && r.field[0][0] == '\0')
            continue; /* blank line */
        if (r.n != ncols) {
            fprintf(stderr, "calibrate: %s:%d: %d fields, the header has %d\n", path, line, r.n,
                    ncols);
            free(text);
            free(rows);
            return -1;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            row *grown = realloc(rows, (size_t)cap * sizeof *rows);
            if (!grown) {
                free(text);
                free(rows);
                return -1;
            }
            rows = grown;
        }
        map_row(&r, col, line, &rows[n++]);
    }
    free(text);
    *out = rows;
    return n;
}

/* Rows with the same layer shape (hidden, ffn, heads, experts) are one model: the Llama 3.1
 * 405B proxies with fewer layers belong to 405B, the two sources' Llama 3 8B rows are one. */
static void assign_groups(row *rows, int n)
{
    int groups = 0;
    for (int i = 0; i < n; i++) {
        rows[i].group = -1;
        for (int j = 0; j < i && rows[i].group < 0; j++)
            if (rows[j].group >= 0 && rows[j].m.hidden == rows[i].m.hidden &&
                rows[j].m.ffn == rows[i].m.ffn && rows[j].m.heads == rows[i].m.heads &&
                rows[j].m.experts == rows[i].m.experts)
                rows[i].group = rows[j].group;
        if (rows[i].group < 0 && rows[i].hw >= 0)
            rows[i].group = groups++;
    }
}

/* Rows whose inputs are identical (the same setup under two FP8 recipe names, or two
 * releases): the estimate runs once for them. */
static void find_same(row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        rows[i].same = -1;
        for (int j = 0; j < i && rows[i].same < 0; j++) {
            ps_transformer a = rows[i].m, b = rows[j].m;
            ps_train x = rows[i].t, y = rows[j].t;
            memset(a.name, 0, sizeof a.name), memset(b.name, 0, sizeof b.name);
            x.layout = y.layout = NULL;
            if (rows[i].hw == rows[j].hw && memcmp(&a, &b, sizeof a) == 0 &&
                memcmp(&x, &y, sizeof x) == 0 && strcmp(rows[i].layout, rows[j].layout) == 0)
                rows[i].same = j;
        }
    }
}

/* ---- prediction and the fit ------------------------------------------------------------------ */

/* The fitted figures. */
enum { P_GEMM, P_ATTN, P_HALF, P_INTRA, P_INTER, P_MOE, P_GROUPED, N_PARAMS };
static const char *const param_names[N_PARAMS] = {
    "gemm_eff",      "attn_eff",     "gemm_half_dim",   "bus_eff_intra",
    "bus_eff_inter", "moe_layer_us", "grouped_gemm_eff"};
static const double param_lo[N_PARAMS] = {0.05, 0.05, 0, 0.05, 0.05, 0, 0.05};
static const double param_hi[N_PARAMS] = {1, 1, 2048, 1, 1, 20000, 1};

/* --hold NAME=X: a figure that no fit moves (NAN: fitted). */
static double held[N_PARAMS] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN};

static void set_params(ps_hardware *hw, const double *p)
{
    hw->gemm_eff = p[P_GEMM];
    hw->attn_eff = p[P_ATTN];
    hw->gemm_half_dim = p[P_HALF];
    hw->bus_eff_intra = p[P_INTRA];
    hw->bus_eff_inter = p[P_INTER];
    hw->moe_layer_us = p[P_MOE];
    hw->grouped_gemm_eff = p[P_GROUPED];
}

/* Every fit starts from the generic (uncalibrated) figures of src/model/hardware.c
 * (GENERIC_EFFICIENCY), never from a preset's: a preset was fitted on every row, so starting a
 * held-out fit there would leak the held-out model into it, and the report would depend on the
 * figures an earlier run committed. */
static const double start[N_PARAMS] = {0.75, 0.5, 128, 0.8, 0.8, 0, 1};

/*
 * Pools: hardware fitted together. A pool shares the figures of the software on the chip
 * (gemm_eff as a fraction of each chip's own peak, attn_eff, gemm_half_dim, grouped_gemm_eff)
 * and keeps per member the figures of the system around it (--member; by default the links,
 * bus_eff_intra and bus_eff_inter: 8-GPU NVLink and a NIC per GPU against the NVL72 domain,
 * and the host's MoE floor, moe_layer_us: x86 hosts against Grace). A pool's figure vector
 * holds the seven figures of its first member, then the --member figures of each further
 * member. A pool without members is skipped.
 *
 * --pool=nvidia (the default, and the presets' fit since 2026-12-02): H100, B200 and GB200 are
 * one pool. Every row of the three ran Megatron with Transformer Engine's kernels (cuBLAS,
 * cuDNN's fused attention), so the software figures are fitted once on 109 rows instead of
 * three times on 24-54 (bench/README.md, sixth stop: the held-out error of the small
 * Blackwell pools came from fitting seven figures on a handful of models). A100 (vTrain's
 * Megatron-DeepSpeed with unfused attention, and the Megatron paper's runs) stays alone.
 * --pool=blackwell: B200 and GB200 together, H100 alone; --pool=none: each hardware alone.
 */
static int pool_of[N_HW] = {0, 1, 1, 1};
#define N_POOLS N_HW
static const char *pool_names[N_POOLS] = {"A100", "H100+B200+GB200", "B200", "GB200"};

/* --pool=none|blackwell|nvidia; 0, or 1 for another word. */
static int set_pools(const char *how)
{
    static const char *const names[N_POOLS] = {"A100", "H100-SXM", "B200", "GB200"};
    for (int h = 0; h < N_HW; h++)
        pool_of[h] = h, pool_names[h] = names[h];
    if (strcmp(how, "blackwell") == 0) {
        pool_of[3] = 2;
        pool_names[2] = "B200+GB200";
    } else if (strcmp(how, "nvidia") == 0) {
        pool_of[2] = pool_of[3] = 1;
        pool_names[1] = "H100+B200+GB200";
    } else if (strcmp(how, "none") != 0) {
        return 1;
    }
    return 0;
}

static int pool_empty(int pool)
{
    for (int h = 0; h < N_HW; h++)
        if (pool_of[h] == pool)
            return 0;
    return 1;
}

/* The figures each member of a pool keeps for itself (--member sets them); the others the
 * pool shares. */
static int sys_params[N_PARAMS] = {P_INTRA, P_INTER, P_MOE};
static int n_sys = 3;
#define MAX_P (N_PARAMS * N_HW)

/* The fitted figure named by the len bytes at name, or N_PARAMS. */
static int figure_index(const char *name, size_t len)
{
    int k = 0;
    while (k < N_PARAMS &&
           (strlen(param_names[k]) != len || strncmp(name, param_names[k], len) != 0))
        k++;
    return k;
}

/* --member LIST: the figures each member of a pool keeps; 0, or 1 with a message. */
static int set_members(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    n_sys = 0;
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int k = figure_index(w, strlen(w));
        if (k == N_PARAMS) {
            fprintf(stderr, "pipesched-calibrate: --member: %s is not a fitted figure\n", w);
            return 1;
        }
        for (int j = 0; j < n_sys; j++)
            if (sys_params[j] == k) {
                fprintf(stderr, "pipesched-calibrate: --member: %s named twice\n", w);
                return 1;
            }
        sys_params[n_sys++] = k;
    }
    return 0;
}

/* --hold NAME=X; 0, or 1 with a message. */
static int set_held(const char *arg)
{
    const char *eq = strchr(arg, '=');
    int k = eq ? figure_index(arg, (size_t)(eq - arg)) : N_PARAMS;
    char *end = NULL;
    double x = k < N_PARAMS ? strtod(eq + 1, &end) : NAN;
    if (k == N_PARAMS || *end || !(x >= param_lo[k] && x <= param_hi[k])) {
        fprintf(stderr,
                "pipesched-calibrate: --hold %s: expected FIGURE=X, X within the "
                "figure's bounds\n",
                arg);
        return 1;
    }
    held[k] = x;
    return 0;
}

/* The member index of hardware h in its pool. */
static int member(int h)
{
    int j = 0;
    for (int i = 0; i < h; i++)
        j += pool_of[i] == pool_of[h];
    return j;
}

/* The figures of a pool: N_PARAMS plus n_sys per member after the first. */
static int pool_params(int pool)
{
    int n = N_PARAMS;
    for (int h = 0, first = 1; h < N_HW; h++)
        if (pool_of[h] == pool)
            n += first ? 0 : n_sys, first = 0;
    return n;
}

/* Which of the seven figures the k-th figure of a pool's vector is. */
static int base_param(int k)
{
    return k < N_PARAMS ? k : sys_params[(k - N_PARAMS) % n_sys];
}

/* The seven figures of hardware h out of its pool's vector pp. */
static void member_params(const double *pp, int h, double *p)
{
    memcpy(p, pp, N_PARAMS * sizeof *p);
    int j = member(h);
    if (j > 0)
        for (int k = 0; k < n_sys; k++)
            p[sys_params[k]] = pp[N_PARAMS + n_sys * (j - 1) + k];
}

/* A pool's vector at the generic start. */
static void pool_start(int pool, double *pp)
{
    int np = pool_params(pool);
    for (int k = 0; k < np; k++) {
        int b = base_param(k);
        pp[k] = isnan(held[b]) ? start[b] : held[b];
    }
}

static void get_params(const ps_hardware *hw, double *p)
{
    p[P_GEMM] = hw->gemm_eff;
    p[P_ATTN] = hw->attn_eff;
    p[P_HALF] = hw->gemm_half_dim;
    p[P_INTRA] = hw->bus_eff_intra;
    p[P_INTER] = hw->bus_eff_inter;
    p[P_MOE] = hw->moe_layer_us;
    p[P_GROUPED] = hw->grouped_gemm_eff;
}

static ps_estimate *est;
static long runs;
static int only = -1; /* --only GPU: the fits of that hardware's pool alone (-1: all) */

/* Predicts w on hw: 0 and w->pred, or the estimate's error (message in w->skip). */
static int predict(row *w, const ps_hardware *hw)
{
    runs++;
    w->t.layout = w->layout[0] ? w->layout : NULL; /* the row may have moved since mapping */
    int rc = ps_estimate_run(est, &w->m, hw, &w->t);
    if (rc) {
        snprintf(w->skip, sizeof w->skip, "estimate: %s", ps_estimate_last_error(est));
        w->pred = 0;
        return rc;
    }
    ps_estimate_result res;
    ps_estimate_result_get(est, &res);
    w->pred = res.step_time_s;
    return 0;
}

static double ape(const row *w)
{
    return fabs(w->pred - w->measured) / w->measured;
}

/* The rows of one pool, all of them (group < 0), one model (group) or all but one. */
typedef struct selection {
    row *rows;
    int n, pool, group, exclude; /* exclude: the group is left out (else only it is taken) */
} selection;

static int selected(const selection *s, const row *w)
{
    if (w->hw < 0 || pool_of[w->hw] != s->pool)
        return 0;
    if (s->group < 0)
        return 1;
    return s->exclude ? w->group != s->group : w->group == s->group;
}

/* The MAPE over the selected rows with the pool's figure vector p. */
static double mape(const selection *s, const double *p)
{
    ps_hardware hw[N_HW];
    for (int h = 0; h < N_HW; h++) {
        double q[N_PARAMS];
        if (pool_of[h] != s->pool)
            continue;
        ps_hardware_builtin(gpu_map[h].preset, &hw[h]);
        member_params(p, h, q);
        set_params(&hw[h], q);
    }
    double sum = 0;
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        row *w = &s->rows[i];
        if (!selected(s, w))
            continue;
        if (w->same >= 0)
            w->pred = s->rows[w->same].pred; /* selected too: same hardware and model */
        else if (predict(w, &hw[w->hw]))
            return INFINITY;
        sum += ape(w);
        k++;
    }
    return k ? sum / k : INFINITY;
}

/* attn_eff's floor in a pool whose rows all ran a fused attention kernel: every source but
 * vTrain (Megatron-Bridge and DGXC run Transformer Engine's flash attention). Published fused
 * kernels reach 50-73% of A100's peak (FlashAttention-2, Dao 2023), about 35% of H100's
 * (FlashAttention-2 there) and up to 75% (FlashAttention-3, Shah et al. 2024); 0.3 is below
 * all of them. Without it the fits find attn_eff where the rows cannot pin it (bench/README.md:
 * attention is small in every model of a device but one, which then pays for it). vTrain's
 * rows (Megatron-DeepSpeed's unfused attention) keep the plain bound. */
static double attn_fused_lo = 0.3; /* --attn-floor */

static double attn_lo(const selection *s)
{
    for (int i = 0; i < s->n; i++) {
        const row *w = &s->rows[i];
        if (w->hw >= 0 && pool_of[w->hw] == s->pool && strcmp(w->source, "vtrain_multi") == 0)
            return param_lo[P_ATTN];
    }
    return attn_fused_lo;
}

/* Coordinate descent from p over every figure, with steps that halve when no move helps:
 * p in the start (whose MAPE is *best), out the fit. */
static void descend(const selection *s, double *p, double *best)
{
    static const double step0[N_PARAMS] = {0.04, 0.08, 128, 0.1, 0.1, 1000, 0.1};
    int np = pool_params(s->pool);
    double q[MAX_P], step[MAX_P], a_lo = attn_lo(s);
    for (int k = 0; k < np; k++)
        step[k] = step0[base_param(k)];
    for (int pass = 0; pass < 16; pass++) {
        int moved = 0;
        for (int k = 0; k < np; k++)
            for (int dir = -1; dir <= 1 && isnan(held[base_param(k)]); dir += 2) {
                int b = base_param(k);
                memcpy(q, p, (size_t)np * sizeof *q);
                double lo = b == P_ATTN ? a_lo : param_lo[b];
                q[k] = fmin(param_hi[b], fmax(lo, p[k] + dir * step[k]));
                if (q[k] == p[k])
                    continue;
                double e = mape(s, q);
                if (e < *best - 1e-9) {
                    *best = e;
                    memcpy(p, q, (size_t)np * sizeof *q);
                    moved = 1;
                }
            }
        if (!moved) {
            int small = 1;
            for (int k = 0; k < np; k++) {
                int b = base_param(k);
                step[k] /= 2;
                small &= step[k] < (b == P_HALF ? 8 : b == P_MOE ? 50 : 0.01);
            }
            if (small)
                break;
        }
    }
}

/* The MAPE surface has several valleys (the GEMM, bus and MoE figures trade against each
 * other), so one descent from the generic start stops in whichever it starts in. A grid over
 * gemm_eff, attn_eff, bus_eff_intra and (when the rows have dropless MoE layers) moe_layer_us,
 * the other figures at their start, then a descent from each of the N_STARTS best grid points;
 * the best end wins (ties: the earlier grid point). p: in the start, out the fit. */
#define N_STARTS 3
static double fit(const selection *s, double *p)
{
    static const double gemm[] = {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}, attn[] = {0.08, 0.15, 0.3, 0.6},
                        intra[] = {0.25, 0.5, 0.8}, moe[] = {0, 2000, 4000};
    int dropless = 0;
    for (int i = 0; i < s->n; i++)
        dropless |=
            selected(s, &s->rows[i]) && s->rows[i].m.experts > 0 && !s->rows[i].t.moe_token_drop;
    int n_moe = dropless ? 3 : 1, np = pool_params(s->pool);
    double a_lo = attn_lo(s);
    double top[N_STARTS][MAX_P], top_e[N_STARTS];
    for (int k = 0; k < N_STARTS; k++)
        top_e[k] = INFINITY;
    double q[MAX_P];
    memcpy(q, p, (size_t)np * sizeof *q);
    for (int ig = 0; ig < 6; ig++)
        for (int ia = 0; ia < 4; ia++)
            for (int ii = 0; ii < 3; ii++)
                for (int im = 0; im < n_moe; im++) {
                    for (int k = 0; k < np; k++) { /* every member alike */
                        int b = base_param(k);
                        q[k] = !isnan(held[b]) ? held[b]
                               : b == P_GEMM   ? gemm[ig]
                               : b == P_ATTN   ? fmax(attn[ia], a_lo)
                               : b == P_INTRA  ? intra[ii]
                               : b == P_MOE    ? moe[im]
                                               : q[k];
                    }
                    double e = mape(s, q);
                    int at = N_STARTS;
                    while (at > 0 && e < top_e[at - 1])
                        at--;
                    if (at == N_STARTS)
                        continue;
                    for (int k = N_STARTS - 1; k > at; k--) {
                        top_e[k] = top_e[k - 1];
                        memcpy(top[k], top[k - 1], sizeof top[k]);
                    }
                    top_e[at] = e;
                    memcpy(top[at], q, (size_t)np * sizeof *q);
                }
    double best = INFINITY;
    for (int k = 0; k < N_STARTS && isfinite(top_e[k]); k++) {
        double e = top_e[k];
        descend(s, top[k], &e);
        if (e < best) {
            best = e;
            memcpy(p, top[k], (size_t)np * sizeof *p);
        }
    }
    return best;
}

/* ---- the report --------------------------------------------------------------------------- */

typedef struct stats {
    int n;
    double sum, max;
    long concordant, discordant;
} stats;

static void add_row(stats *st, const row *w)
{
    st->n++;
    st->sum += ape(w);
    if (ape(w) > st->max)
        st->max = ape(w);
}

/* Kendall's tau over the pairs of rows of one model (group) on one hardware; pairs with the
 * same measured or predicted time are left out. */
static void add_pairs(stats *st, const row *rows, int n, int hw)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const row *a = &rows[i], *b = &rows[j];
            if (a->hw != hw || b->hw != hw || a->group != b->group || a->pred <= 0 || b->pred <= 0)
                continue;
            double dm = a->measured - b->measured, dp = a->pred - b->pred;
            if (dm == 0 || dp == 0)
                continue;
            if ((dm > 0) == (dp > 0))
                st->concordant++;
            else
                st->discordant++;
        }
}

static double tau(const stats *st)
{
    long pairs = st->concordant + st->discordant;
    return pairs ? (double)(st->concordant - st->discordant) / (double)pairs : NAN;
}

static void print_stats(const char *what, const stats *st)
{
    printf("  %-10s rows %3d  MAPE %5.1f%%  max %6.1f%%  tau %5.2f (%ld pairs)\n", what, st->n,
           st->n ? 100 * st->sum / st->n : 0, 100 * st->max, tau(st),
           st->concordant + st->discordant);
}

static void print_rows(const row *rows, int n)
{
    printf("%-4s %-24s %-8s %-5s %-46s %9s %9s %8s\n", "line", "model", "gpu", "prec", "setup",
           "measured", "predicted", "error");
    for (int i = 0; i < n; i++) {
        const row *w = &rows[i];
        if (w->hw < 0)
            continue;
        printf("%-4d %-24.24s %-8s %-5s %-46s %8.2fs %8.2fs %+7.1f%%\n", w->line, w->model, w->gpu,
               w->prec, w->setup, w->measured, w->pred,
               100 * (w->pred - w->measured) / w->measured);
    }
}

/* Every row with the figures of each preset (p[hw] or the preset's own), then stats. */
static void predict_all(row *rows, int n, double (*p)[N_PARAMS])
{
    for (int h = 0; h < N_HW; h++) {
        ps_hardware hw;
        ps_hardware_builtin(gpu_map[h].preset, &hw);
        if (p)
            set_params(&hw, p[h]);
        for (int i = 0; i < n; i++) {
            row *w = &rows[i];
            if (w->hw != h)
                continue;
            if (w->same >= 0) {
                w->pred = rows[w->same].pred;
                if (rows[w->same].hw < 0) {
                    w->hw = -1;
                    memcpy(w->skip, rows[w->same].skip, sizeof w->skip);
                }
            } else if (predict(w, &hw)) {
                w->hw = -1; /* the estimate refuses it: skipped, the message kept */
            }
        }
    }
}

static void summary(const row *rows, int n)
{
    stats all = {0};
    for (int h = 0; h < N_HW; h++) {
        stats st = {0};
        for (int i = 0; i < n; i++)
            if (rows[i].hw == h)
                add_row(&st, &rows[i]), add_row(&all, &rows[i]);
        add_pairs(&st, rows, n, h);
        add_pairs(&all, rows, n, h);
        print_stats(gpu_map[h].gpu, &st);
    }
    print_stats("all", &all);
}

static void print_skipped(const row *rows, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += rows[i].hw < 0;
    printf("\nskipped rows: %d\n", k);
    for (int i = 0; i < n; i++)
        if (rows[i].hw < 0)
            printf("  line %-4d %-24.24s %-8s %-20.20s %s\n", rows[i].line, rows[i].model,
                   rows[i].gpu, rows[i].prec[0] ? rows[i].prec : "", rows[i].skip);
}

/* Rows with identical inputs whose measurements disagree: no model of those inputs can be
 * closer to both than (M - m)/(M + m) (predicting 2mM/(m + M)), nor have a lower mean error
 * over them than at the best of their measured values (a weighted median). The data's own
 * floor under the max and the mean error. */
static void print_floor(const row *rows, int n)
{
    double worst = 0;
    int shown = 0;
    for (int j = 0; j < n; j++) {
        if (rows[j].hw < 0 || rows[j].same >= 0)
            continue;
        double lo = rows[j].measured, hi = lo;
        int k = 1;
        for (int i = j + 1; i < n; i++)
            if (rows[i].same == j && rows[i].hw >= 0) {
                lo = fmin(lo, rows[i].measured), hi = fmax(hi, rows[i].measured);
                k++;
            }
        if (k < 2 || hi < 1.1 * lo)
            continue;
        double mean = INFINITY;
        for (int a = j; a < n; a++) {
            if (a != j && rows[a].same != j)
                continue;
            double x = rows[a].measured, sum = 0;
            for (int i = j; i < n; i++)
                if ((i == j || rows[i].same == j) && rows[i].hw >= 0)
                    sum += fabs(x - rows[i].measured) / rows[i].measured;
            mean = fmin(mean, sum / k);
        }
        if (!shown++)
            printf("\nrows with identical inputs measured more than 10%% apart (the data's "
                   "floor):\n");
        printf("  line %-4d %-20.20s %-8s %-46s %d rows %.2f-%.2f s: max error >= %.1f%%, "
               "mean >= %.1f%%\n",
               rows[j].line, rows[j].model, rows[j].gpu, rows[j].setup, k, lo, hi,
               100 * (hi - lo) / (hi + lo), 100 * mean);
        worst = fmax(worst, (hi - lo) / (hi + lo));
    }
    if (shown)
        printf("  no prediction of these inputs can have a max error below %.1f%%\n", 100 * worst);
}

static int calibrate(const char *path, int do_fit)
{
    row *rows = NULL;
    int n = load_rows(path, &rows);
    if (n < 0)
        return 1;
    if (ps_estimate_new(&est, NULL))
        return 1;
    double t0 = now();

    /* 1. The generic figures. */
    find_same(rows, n);
    predict_all(rows, n, NULL);
    assign_groups(rows, n);
    printf("== 1. the presets' own efficiency figures (as committed) ==\n");
    print_rows(rows, n);
    print_skipped(rows, n);
    print_floor(rows, n);
    printf("\naccuracy, the presets' figures:\n");
    summary(rows, n);
    if (!do_fit) {
        ps_estimate_free(est);
        free(rows);
        return 0;
    }

    /* 2. Leave one model out per pool. */
    printf("\n== 2. cross-validation: leave one model out, per pool ==\n");
    double *cv_pred = calloc((size_t)n, sizeof *cv_pred);
    for (int i = 0; i < n; i++)
        cv_pred[i] = NAN; /* a row no fit predicts (another hardware with --only) */
    for (int pool = 0; pool < N_POOLS; pool++) {
        if ((only >= 0 && pool != pool_of[only]) || pool_empty(pool))
            continue;
        int groups[64], ng = 0;
        for (int i = 0; i < n; i++) {
            if (rows[i].hw < 0 || pool_of[rows[i].hw] != pool)
                continue;
            int seen = 0;
            for (int g = 0; g < ng; g++)
                seen |= groups[g] == rows[i].group;
            if (!seen && ng < 64)
                groups[ng++] = rows[i].group;
        }
        for (int g = 0; g < ng; g++) {
            double p[MAX_P];
            pool_start(pool, p);
            selection train = {rows, n, pool, groups[g], 1}, test = {rows, n, pool, groups[g], 0};
            const char *name = "";
            for (int i = 0; i < n; i++)
                if (selected(&test, &rows[i]))
                    name = rows[i].model;
            if (ng < 2) {
                printf("  %-8s %-24s only model of this hardware: no held-out fit\n",
                       pool_names[pool], name);
                for (int i = 0; i < n; i++)
                    if (selected(&test, &rows[i]))
                        cv_pred[i] = NAN;
                continue;
            }
            double e_train = fit(&train, p);
            double e_test = mape(&test, p);
            printf("  %-8s held out %-24s fit on the rest: %5.1f%%, held out: %5.1f%%\n",
                   pool_names[pool], name, 100 * e_train, 100 * e_test);
            for (int h = 0; h < N_HW; h++) {
                double q[N_PARAMS];
                if (pool_of[h] != pool)
                    continue;
                member_params(p, h, q);
                printf("           %-8s gemm %.3f attn %.3f half %.0f intra %.3f inter %.3f "
                       "moe %.0f us grouped %.3f\n",
                       gpu_map[h].gpu, q[0], q[1], q[2], q[3], q[4], q[5], q[6]);
            }
            for (int i = 0; i < n; i++)
                if (selected(&test, &rows[i]))
                    cv_pred[i] = rows[i].pred;
        }
    }
    for (int i = 0; i < n; i++)
        if (rows[i].hw >= 0)
            rows[i].pred = cv_pred[i];
    printf("\nheld-out rows, each predicted by the fit on the other models of its pool:\n");
    print_rows(rows, n);
    printf("\naccuracy on held-out models (leave one model out):\n");
    {
        row *cv = malloc((size_t)n * sizeof *cv);
        memcpy(cv, rows, (size_t)n * sizeof *cv);
        for (int i = 0; i < n; i++)
            if (cv[i].hw >= 0 && isnan(cv[i].pred))
                cv[i].hw = -1; /* a hardware with one model has no held-out prediction */
        summary(cv, n);
        free(cv);
    }
    free(cv_pred);

    /* 3. The fit on all the rows of each hardware. */
    printf("\n== 3. fitted on all the rows of each pool (the presets' figures) ==\n");
    double p[N_HW][N_PARAMS];
    for (int h = 0; h < N_HW; h++) {
        ps_hardware hw;
        ps_hardware_builtin(gpu_map[h].preset, &hw);
        get_params(&hw, p[h]);
    }
    for (int pool = 0; pool < N_POOLS; pool++) {
        if ((only >= 0 && pool != pool_of[only]) || pool_empty(pool))
            continue;
        double pp[MAX_P];
        pool_start(pool, pp);
        selection all = {rows, n, pool, -1, 0};
        double e = fit(&all, pp);
        printf("  %-10s MAPE %5.1f%%\n", pool_names[pool], 100 * e);
        for (int h = 0; h < N_HW; h++) {
            if (pool_of[h] != pool)
                continue;
            member_params(pp, h, p[h]);
            printf("    %-8s %-9s", gpu_map[h].gpu, gpu_map[h].preset);
            for (int k = 0; k < N_PARAMS; k++)
                printf(" %s %.6g", param_names[k], p[h][k]);
            printf("\n");
        }
    }
    predict_all(rows, n, p);
    print_rows(rows, n);
    printf("\naccuracy, fitted on all rows (in-sample):\n");
    summary(rows, n);
    printf("\n%ld estimates in %.1f s\n", runs, now() - t0);
    ps_estimate_free(est);
    free(rows);
    return 0;
}

/* ---- --speed ----------------------------------------------------------------------------------
 */

/* How a handle is run: its first run on inputs it has seen (warm), a run with nothing kept
 * (cold), or two shapes in turn (shapes: the schedule made every run, MoE plans kept). */
enum { WARM, COLD, SHAPES, N_MODES };
static const char *const mode_names[N_MODES] = {"warm  ", "cold  ", "shapes"};

/* n runs of mode on e; 0 or the first error. */
static int speed_runs(ps_estimate *e, int mode, const ps_transformer *m, const ps_hardware *hw,
                      const ps_train *t, const ps_train *t2, int n)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (mode == COLD)
            ps__estimate_forget(e);
        int r = ps_estimate_run(e, m, hw, mode == SHAPES && (i & 1) ? t2 : t);
        rc = rc ? rc : r;
    }
    return rc;
}

/* Times ps_estimate_run on (model, h100-sxm, t) in each mode, one handle per mode: the
 * batches of the modes take turns (each about 0.05 s of runs), so that all modes see the same
 * load on the machine; the median over batches per mode. t2 differs from t in gbs only. */
static void speed_case(const char *what, const char *model, const ps_train *t, const ps_train *t2)
{
    ps_transformer m;
    ps_hardware hw;
    ps_estimate *e[N_MODES];
    if (ps_transformer_builtin(model, &m) || ps_hardware_builtin("h100-sxm", &hw)) {
        fprintf(stderr, "calibrate: setup failed\n");
        exit(1);
    }
    for (int k = 0; k < N_MODES; k++)
        if (ps_estimate_new(&e[k], NULL)) {
            fprintf(stderr, "calibrate: out of memory\n");
            exit(1);
        }
    int per[N_MODES];
    for (int k = 0; k < N_MODES; k++) {
        double t0 = now();
        int n = 0;
        while (now() - t0 < 0.1) {
            if (speed_runs(e[k], k, &m, &hw, t, t2, 2)) {
                printf("%s: %s\n", what, ps_estimate_last_error(e[k]));
                for (int j = 0; j < N_MODES; j++)
                    ps_estimate_free(e[j]);
                return;
            }
            n += 2;
        }
        per[k] = n / 2 > 2 ? n / 2 / 2 * 2 : 2; /* even: SHAPES runs both shapes alike */
    }
    enum { BATCHES = 15 };
    double us[N_MODES][BATCHES];
    for (int b = 0; b < BATCHES; b++)
        for (int k = 0; k < N_MODES; k++) {
            double t0 = now();
            speed_runs(e[k], k, &m, &hw, t, t2, per[k]);
            us[k][b] = (now() - t0) * 1e6 / per[k];
        }
    ps_estimate_run(e[WARM], &m, &hw, t);
    ps_estimate_result r;
    ps_estimate_result_get(e[WARM], &r);
    printf("%s\n  step %.3f s, %.0f tokens/s/GPU, MFU %.1f%%, %d micro-batches, fits %d, "
           "exposed PP %.4f s\n"
           "  ps_estimate_run, us (median of %d batches of about 0.05 s; the modes take turns):\n",
           what, r.step_time_s, r.tokens_per_s_per_gpu, 100 * r.mfu, r.microbatches, r.fits,
           r.exposed_s[PS_COMM_PP], BATCHES);
    const char *how[N_MODES] = {"the same inputs again: schedule and MoE plans kept",
                                "nothing kept: ps__estimate_forget before each run", NULL};
    char alt[96];
    snprintf(alt, sizeof alt, "gbs %lld and %lld in turn: schedule made every run, MoE plans kept",
             (long long)t->gbs, (long long)t2->gbs);
    how[SHAPES] = alt;
    for (int k = 0; k < N_MODES; k++)
        printf("    %7.1f  %s  %s\n", median(us[k], BATCHES), mode_names[k], how[k]);
    for (int k = 0; k < N_MODES; k++)
        ps_estimate_free(e[k]);
}

static int speed(void)
{
    ps_train t, t2;
    ps_train_init(&t);
    t.gpus = 64, t.tp = 4, t.pp = 8, t.vpp = 5, t.gbs = 128, t.mbs = 1, t.seq = 8192;
    t2 = t, t2.gbs = 112; /* 56 micro-batches */
    speed_case("(a) llama3-70b, 64 h100-sxm, tp4 pp8 vpp5 (interleaved), gbs128 mbs1 seq8192",
               "llama3-70b", &t, &t2);
    ps_train_init(&t);
    /* DualPipeV: two chunks per rank (32 model stages); 61 layers + MTP split as Megatron's
     * DeepSeek-V3 layout does, the embedding and one layer first, MTP and loss last. */
    t.gpus = 1024, t.tp = 1, t.pp = 16, t.vpp = 2, t.ep = 64, t.gbs = 2048, t.mbs = 1, t.seq = 4096;
    snprintf(t.schedule, sizeof t.schedule, "dualpipev");
    t.layout = "Et|(tt|)*30mL";
    t2 = t, t2.gbs = 2176; /* 34 micro-batches */
    speed_case("(b) deepseek-v3, 1024 h100-sxm, tp1 pp16 dualpipev (vpp2) ep64 dp64, gbs2048 "
               "mbs1 seq4096, layout Et|(tt|)*30mL",
               "deepseek-v3", &t, &t2);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--speed") == 0)
        return speed();
    int do_fit = 1, bad = argc < 2 || argv[1][0] == '-';
    for (int i = 2; i < argc && !bad; i++) {
        if (strcmp(argv[i], "--no-fit") == 0) {
            do_fit = 0;
        } else if (strncmp(argv[i], "--pool=", 7) == 0) {
            if (set_pools(argv[i] + 7)) {
                fprintf(stderr,
                        "pipesched-calibrate: %s: expected --pool=none, blackwell or "
                        "nvidia\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--attn-floor") == 0 && i + 1 < argc) {
            char *end;
            attn_fused_lo = strtod(argv[++i], &end);
            if (*end || !(attn_fused_lo >= param_lo[P_ATTN] && attn_fused_lo <= 1)) {
                fprintf(stderr, "pipesched-calibrate: --attn-floor %s: not in [0.05, 1]\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
            if (set_held(argv[++i]))
                return 2;
        } else if (strcmp(argv[i], "--member") == 0 && i + 1 < argc) {
            if (set_members(argv[++i]))
                return 2;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            i++;
            for (int h = 0; h < N_HW; h++)
                if (strcmp(argv[i], gpu_map[h].gpu) == 0)
                    only = h;
            if (only < 0) {
                fprintf(stderr,
                        "pipesched-calibrate: --only %s: not a GPU with a preset "
                        "(A100, H100-SXM, B200, GB200)\n",
                        argv[i]);
                return 2;
            }
        } else {
            bad = 1;
        }
    }
    if (bad) {
        fprintf(
            stderr,
            "usage: pipesched-calibrate CALIBRATION.csv [--no-fit] [--only GPU]\n"
            "           [--pool=none|blackwell|nvidia] [--member LIST] [--attn-floor X]\n"
            "           [--hold FIGURE=X]\n"
            "       pipesched-calibrate --speed\n"
            "--only GPU      fit (and cross-validate) that GPU's pool alone; the others keep\n"
            "                their presets' figures\n"
            "--pool=nvidia   H100, B200 and GB200 as one pool (the default, the presets' fit);\n"
            "                blackwell: B200 and GB200 as one; none: each hardware alone.\n"
            "                A pool shares the software's figures; each member keeps --member's\n"
            "--member LIST   the figures each member keeps (default\n"
            "                bus_eff_intra,bus_eff_inter,moe_layer_us)\n"
            "--attn-floor X  attn_eff's floor where every row ran a fused attention kernel\n"
            "                (default 0.3)\n"
            "--hold FIGURE=X keep a figure at X in every fit\n");
        return 2;
    }
    return calibrate(argv[1], do_fit);
}
