/*
 * The hardware: the built-in presets, the hardware file and the range checks (docs/hardware.md).
 *
 * Two tables hold everything. The key table declares every field of ps_hardware once (name,
 * offset, type, range, published or efficiency, documentation); the loader, ps_hardware_check(),
 * the suggestions for a mistyped key and the tables of docs/hardware.md all read it. The preset
 * table has one row per device, its published figures with their sources in docs/hardware.md,
 * and the generic efficiency figures, the uncalibrated starting point that calibration replaces.
 * SPDX-License-Identifier: MIT
 */
#include "model/hardware.h"
#include "model/keys.h"

#include "internal.h"
#include "io/json_diag.h"

#include <cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The largest value of any figure: no device comes within orders of magnitude of it, so a
 * value beyond it is a typo or a unit mistake (TFLOP/s written as FLOP/s). */
#define HW_MAX 1e6

/* ---- the generic efficiency figures ------------------------------------------------------------
 *
 * Uncalibrated starting points, the same for every preset and for a file without "base":
 * calibration against measured step times (docs/model.md) replaces them per device. The
 * sources of the orders of magnitude: NCCL tests reach about 75-90% of the nominal link
 * bandwidth on large messages; framework overhead (CUDA context, allocator) is 1-5 GiB per
 * device (the reference notes of docs/model.md). The GEMM, attention and memory figures are
 * assumptions to be fitted.
 */
#define GENERIC_EFFICIENCY                                                                         \
    .gemm_eff = 0.75, .gemm_half_dim = 128, .attn_eff = 0.5, .mem_eff = 0.8, .bus_eff_intra = 0.8, \
    .bus_eff_inter = 0.8, .overhead_gib = 3, .moe_layer_us = 0, .grouped_gemm_eff = 1

static const ps_hardware generic = {.name = "custom", GENERIC_EFFICIENCY};

/* Calibrated figures: fitted by bench/calibrate.c on the published step times of
 * shared/reference/steptimes (bench/README.md, "Calibration of the performance model";
 * minimum mean absolute percentage error). A100 is fitted on its own rows (2026-12-01). H100,
 * B200 and GB200 are one pool (fit of 2026-12-02): every row of the three ran Megatron with
 * Transformer Engine's kernels, so they share the software's figures (gemm_eff as a fraction
 * of each chip's own peak, attn_eff, gemm_half_dim, grouped_gemm_eff), and each keeps its
 * system's (bus_eff_intra, bus_eff_inter, moe_layer_us). They are effective figures: where
 * the model lacks a term (vTrain's unfused attention, all-to-all efficiency apart from ring
 * collectives', software releases) the fit absorbs it, so attn_eff and the bus efficiencies
 * are far from what a kernel or NCCL benchmark would show. mem_eff and overhead_gib stay
 * generic (not fitted). */
#define CALIBRATED(gemm, attn, half, intra, inter, moe, grouped)                                   \
    .gemm_eff = gemm, .gemm_half_dim = half, .attn_eff = attn, .mem_eff = 0.8,                     \
    .bus_eff_intra = intra, .bus_eff_inter = inter, .overhead_gib = 3, .moe_layer_us = moe,        \
    .grouped_gemm_eff = grouped

/* The software figures of the H100/B200/GB200 pool, then each device's own. h800 and h200 (no
 * published rows) take h100-sxm's: the same Hopper die and software; not validated. */
#define TE_POOL(intra, inter, moe) CALIBRATED(0.815, 0.3, 856, intra, inter, moe, 0.5)
#define HOPPER TE_POOL(0.99375, 1, 4000)

/* ---- the presets ------------------------------------------------------------------------------
 *
 * Published figures per device; docs/hardware.md names the source of each. Peaks are dense
 * (datasheets print the 2:4-sparse figure, twice as large). Bandwidths are one way: NVIDIA
 * quotes NVLink as the sum of both directions (A100 600 GB/s, H100 900 GB/s, B200 1.8 TB/s).
 * Inter-node: one NIC per device (DGX/HGX: 200 Gb/s HDR on A100, 400 Gb/s NDR from H100 on).
 * Latencies are assumed, a few microseconds per collective step, for calibration to set.
 */
static const ps_hardware presets[] = {
    {.name = "a100-80g",
     .peak_tflops_bf16 = 312,
     .peak_tflops_fp8 = 0,
     .hbm_gib = 80,
     .hbm_gbps = 2039,
     .devices_per_node = 8,
     .intra_gbps = 300,
     .inter_gbps = 25,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     CALIBRATED(0.8775, 0.065, 536, 1, 0.5938, 0, 1)},
    {.name = "h100-sxm",
     .peak_tflops_bf16 = 989,
     .peak_tflops_fp8 = 1979,
     .hbm_gib = 80,
     .hbm_gbps = 3350,
     .devices_per_node = 8,
     .intra_gbps = 450,
     .inter_gbps = 50,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     HOPPER},
    /* H100 with NVLink cut to 400 GB/s both ways (export version). */
    {.name = "h800",
     .peak_tflops_bf16 = 989,
     .peak_tflops_fp8 = 1979,
     .hbm_gib = 80,
     .hbm_gbps = 3350,
     .devices_per_node = 8,
     .intra_gbps = 200,
     .inter_gbps = 50,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     HOPPER},
    {.name = "h200",
     .peak_tflops_bf16 = 989,
     .peak_tflops_fp8 = 1979,
     .hbm_gib = 141,
     .hbm_gbps = 4800,
     .devices_per_node = 8,
     .intra_gbps = 450,
     .inter_gbps = 50,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     HOPPER},
    /* HGX/DGX B200 at 1000 W: the system figures divided by its 8 GPUs. */
    {.name = "b200",
     .peak_tflops_bf16 = 2250,
     .peak_tflops_fp8 = 4500,
     .hbm_gib = 180,
     .hbm_gbps = 8000,
     .devices_per_node = 8,
     .intra_gbps = 900,
     .inter_gbps = 50,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     TE_POOL(0.225, 0.65625, 3187.5)},
    /* GB200 NVL72: the rack figures divided by its 72 GPUs; the "node" is the NVLink domain. */
    {.name = "gb200",
     .peak_tflops_bf16 = 2500,
     .peak_tflops_fp8 = 5000,
     .hbm_gib = 186,
     .hbm_gbps = 8000,
     .devices_per_node = 72,
     .intra_gbps = 900,
     .inter_gbps = 50,
     .lat_intra_us = 3,
     .lat_inter_us = 8,
     TE_POOL(0.3125, 0.8, 1000)},
    /* Atlas 800T A2: 8 NPUs joined by HCCS, one 200 Gb/s RoCE port each. FP16 peak, no FP8. */
    {.name = "ascend-910b",
     .peak_tflops_bf16 = 320,
     .peak_tflops_fp8 = 0,
     .hbm_gib = 64,
     .hbm_gbps = 1600,
     .devices_per_node = 8,
     .intra_gbps = 196,
     .inter_gbps = 25,
     .lat_intra_us = 5,
     .lat_inter_us = 10,
     GENERIC_EFFICIENCY},
};

#define N_PRESETS (sizeof presets / sizeof presets[0])

/* ---- the keys ----------------------------------------------------------------------------------
 */

typedef enum key_type { KEY_F64, KEY_I32 } key_type;
/* Published: required in a file without "base". Efficiency: what calibration sets; a file
 * without "base" gets the generic value. */
typedef enum key_kind { KEY_PUBLISHED, KEY_EFFICIENCY } key_kind;

typedef struct hw_key {
    const char *name; /* the field's name and the JSON key */
    size_t offset;    /* in ps_hardware */
    key_type type;
    key_kind kind;
    double lo, hi; /* the range: (lo, hi] when lo_open, else [lo, hi] */
    bool lo_open;
    const char *doc; /* the meaning column of docs/hardware.md */
} hw_key;

#define F64(field) .name = #field, .offset = offsetof(ps_hardware, field), .type = KEY_F64
#define I32(field) .name = #field, .offset = offsetof(ps_hardware, field), .type = KEY_I32
#define POSITIVE .lo = 0, .lo_open = true, .hi = HW_MAX
#define FRACTION .lo = 0, .lo_open = true, .hi = 1

static const hw_key keys[] = {
    {F64(peak_tflops_bf16), .kind = KEY_PUBLISHED, POSITIVE,
     .doc = "dense BF16 tensor peak per device, TFLOP/s (FP16 where the vendor gives no BF16)"},
    {F64(peak_tflops_fp8), .kind = KEY_PUBLISHED, .lo = 0, .hi = HW_MAX,
     .doc = "dense FP8 tensor peak per device, TFLOP/s; 0 = no FP8, else at least the BF16 peak"},
    {F64(hbm_gib), .kind = KEY_PUBLISHED, POSITIVE,
     .doc = "memory capacity per device, GiB (the datasheet's GB)"},
    {F64(hbm_gbps), .kind = KEY_PUBLISHED, POSITIVE, .doc = "memory bandwidth per device, GB/s"},
    {I32(devices_per_node), .kind = KEY_PUBLISHED, .lo = 1, .hi = HW_MAX,
     .doc = "devices sharing the intra-node link (the NVLink or HCCS domain)"},
    {F64(intra_gbps), .kind = KEY_PUBLISHED, POSITIVE,
     .doc = "intra-node bandwidth per device, one way, GB/s (half the bidirectional figure)"},
    {F64(inter_gbps), .kind = KEY_PUBLISHED, POSITIVE,
     .doc = "inter-node bandwidth per device, one way, GB/s (400 Gb/s NIC = 50)"},
    {F64(lat_intra_us), .kind = KEY_PUBLISHED, .lo = 0, .hi = HW_MAX,
     .doc = "latency of one collective step within a node, µs"},
    {F64(lat_inter_us), .kind = KEY_PUBLISHED, .lo = 0, .hi = HW_MAX,
     .doc = "latency of one collective step across nodes, µs"},
    {F64(gemm_eff), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "achieved fraction of peak of a large GEMM"},
    {F64(gemm_half_dim), .kind = KEY_EFFICIENCY, .lo = 0, .hi = HW_MAX,
     .doc = "smallest GEMM dimension at which the GEMM efficiency halves; 0 = flat"},
    {F64(attn_eff), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "achieved fraction of peak of the attention kernel"},
    {F64(mem_eff), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "achieved fraction of HBM bandwidth of memory-bound kernels"},
    {F64(bus_eff_intra), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "achieved fraction of `intra_gbps` of a large collective"},
    {F64(bus_eff_inter), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "achieved fraction of `inter_gbps` of a large collective"},
    {F64(overhead_gib), .kind = KEY_EFFICIENCY, .lo = 0, .hi = HW_MAX,
     .doc = "framework memory per device (context, allocator), GiB; below `hbm_gib`"},
    {F64(moe_layer_us), .kind = KEY_EFFICIENCY, .lo = 0, .hi = 1e6,
     .doc = "the host's floor of a MoE layer's forward and of its backward, µs (routing's host "
            "synchronisation, dispatch launches)"},
    {F64(grouped_gemm_eff), .kind = KEY_EFFICIENCY, FRACTION,
     .doc = "the MoE experts' grouped GEMM's efficiency as a fraction of a dense GEMM's"},
};

#define N_KEYS (sizeof keys / sizeof keys[0])

/* Every figure of ps_hardware has its row: the struct is the name, 15 doubles and one int32_t
 * padded to 8 bytes, so a field added without a row (or a row without a field) fails the build. */
_Static_assert(sizeof(ps_hardware) == sizeof(((ps_hardware *)0)->name) + (N_KEYS - 1) * 8 + 8,
               "every figure of ps_hardware has a row in keys[]");

static double get(const ps_hardware *hw, const hw_key *k)
{
    const char *p = (const char *)hw + k->offset;
    if (k->type == KEY_I32) {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* v was checked against k's range (and is whole for an integer). */
static void set(ps_hardware *hw, const hw_key *k, double v)
{
    char *p = (char *)hw + k->offset;
    if (k->type == KEY_I32) {
        int32_t i = (int32_t)v;
        memcpy(p, &i, sizeof i);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

static const hw_key *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* Every key of a hardware file, for the suggestions: the figures, then "name" and "base". */
static const char *file_key_name(const void *ud, size_t i)
{
    (void)ud;
    if (i < N_KEYS)
        return keys[i].name;
    if (i == N_KEYS)
        return "name";
    return i == N_KEYS + 1 ? "base" : NULL;
}

static const char *preset_name(const void *ud, size_t i)
{
    (void)ud;
    return i < N_PRESETS ? presets[i].name : NULL;
}

/*
 * Reports to d (under path) what is wrong with v as a value of k: not finite, not whole for an
 * integer, below or beyond the range. Returns whether v is acceptable.
 */
static bool check_value(ps__json_diag *d, const char *path, const hw_key *k, double v)
{
    return ps__key_check_number(d, path, k->type == KEY_I32, k->lo, k->lo_open, k->hi, v);
}

bool ps__key_check_number(ps__json_diag *d, const char *path, bool integer, double lo, bool lo_open,
                          double hi, double v)
{
    if (!isfinite(v)) {
        ps__json_error(d, path, "must be a finite number, got %g", v);
        return false;
    }
    if (integer && v != floor(v)) {
        ps__json_error(d, path, "expected an integer, got %.15g", v);
        return false;
    }
    if (lo_open ? v <= lo : v < lo) {
        ps__json_error(d, path, "must be %s %g, got %.15g", lo_open ? ">" : ">=", lo, v);
        return false;
    }
    if (v > hi) {
        ps__json_error(d, path, "%.15g is beyond the limit %g", v, hi);
        return false;
    }
    return true;
}

/* The rules between fields, on values that passed their ranges; prefix is "" (the struct's
 * fields) or a JSON path and "." ("$.", "$.hardware."). */
static void check_rules(ps__json_diag *d, const ps_hardware *hw, const char *prefix)
{
    char path[PS__JSON_PATH_LEN];
    if (hw->peak_tflops_fp8 != 0 && hw->peak_tflops_fp8 < hw->peak_tflops_bf16) {
        snprintf(path, sizeof path, "%speak_tflops_fp8", prefix);
        ps__json_error(d, path, "must be 0 (no FP8) or >= peak_tflops_bf16 (%.15g), got %.15g",
                       hw->peak_tflops_bf16, hw->peak_tflops_fp8);
    }
    if (hw->overhead_gib >= hw->hbm_gib) {
        snprintf(path, sizeof path, "%soverhead_gib", prefix);
        ps__json_error(d, path, "must be < hbm_gib (%.15g), got %.15g", hw->hbm_gib,
                       hw->overhead_gib);
    }
}

/* Appends s to buf (cap bytes, NUL-terminated), keeping what fits. */
static void append(char *buf, size_t cap, const char *s)
{
    size_t used = strlen(buf), n = strlen(s);
    if (n > cap - 1 - used)
        n = cap - 1 - used;
    memcpy(buf + used, s, n);
    buf[used + n] = '\0';
}

/* Copies msg into err (errlen bytes; either may be NULL/0). Returns code. */
/* ---- presets and the check ----------------------------------------------------------------------
 */

/* ASCII case-insensitive equality. */
static bool same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = (unsigned char)*a, cb = (unsigned char)*b;
        if (ca >= 'A' && ca <= 'Z')
            ca += 'a' - 'A';
        if (cb >= 'A' && cb <= 'Z')
            cb += 'a' - 'A';
        if (ca != cb)
            return false;
    }
    return *a == *b;
}

static const ps_hardware *find_preset(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (same_name(presets[i].name, name))
            return &presets[i];
    return NULL;
}

int ps_hardware_builtin(const char *name, ps_hardware *out)
{
    if (!name || !out)
        return PS_EINVAL;
    const ps_hardware *p = find_preset(name);
    if (!p)
        return PS_ENOTFOUND;
    *out = *p;
    return 0;
}

const char *ps_hardware_builtin_name(size_t i)
{
    return preset_name(NULL, i);
}

int ps_hardware_check(const ps_hardware *hw, char *err, size_t errlen)
{
    if (!hw)
        return ps__seterr_n(err, errlen, PS_EINVAL, "%s", "hardware: NULL");
    ps__json_diag d;
    ps__json_diag_init(&d);
    if (!memchr(hw->name, '\0', sizeof hw->name))
        ps__json_error(&d, "name", "not NUL-terminated within %zu bytes", sizeof hw->name);
    for (size_t i = 0; i < N_KEYS; i++)
        check_value(&d, keys[i].name, &keys[i], get(hw, &keys[i]));
    if (d.errors == 0)
        check_rules(&d, hw, "");
    if (d.errors == 0)
        return 0;
    char msg[PS__ERRLEN];
    ps__json_diag_render(&d, msg);
    return ps__seterr_n(err, errlen, PS_ECONFIG, "%s", msg);
}

/* ---- the hardware file ---------------------------------------------------------------------- */

bool ps__json_repeated(const cJSON *root, const cJSON *it)
{
    for (const cJSON *p = root->child; p != it; p = p->next)
        if (strcmp(p->string, it->string) == 0)
            return true;
    return false;
}

/* Starts *hw from "base" (a preset) or from the generic figures; reports a bad base to d. */
static void load_base(ps__json_diag *d, const cJSON *root, const char *parent, ps_hardware *hw,
                      bool *has_base)
{
    char path[PS__JSON_PATH_LEN];
    ps__json_key_path(path, parent, "base");
    *hw = generic;
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
    *has_base = base != NULL;
    if (!base)
        return;
    if (!cJSON_IsString(base)) {
        ps__json_type_error(d, path, "a string (a preset name)", base);
        return;
    }
    const ps_hardware *p = find_preset(base->valuestring);
    if (p) {
        *hw = *p;
        return;
    }
    char quoted[PS__JSON_SHOW_MAX + 8] = "", list[256] = "";
    ps__json_quote(quoted, sizeof quoted, base->valuestring);
    for (size_t i = 0; i < N_PRESETS; i++) {
        append(list, sizeof list, i ? ", " : "");
        append(list, sizeof list, presets[i].name);
    }
    const char *hint = ps__json_suggest(base->valuestring, preset_name, NULL);
    if (hint)
        ps__json_error(d, path, "unknown preset %s (did you mean \"%s\"?); presets: %s", quoted,
                       hint, list);
    else
        ps__json_error(d, path, "unknown preset %s; presets: %s", quoted, list);
}

static void load_name(ps__json_diag *d, const char *path, const cJSON *it, ps_hardware *hw)
{
    if (!cJSON_IsString(it)) {
        ps__json_type_error(d, path, "a string", it);
        return;
    }
    size_t n = strlen(it->valuestring);
    if (n == 0 || n >= sizeof hw->name) {
        ps__json_error(d, path, "must have 1 to %zu bytes, got %zu", sizeof hw->name - 1, n);
        return;
    }
    memcpy(hw->name, it->valuestring, n + 1);
}

/* Checks and sets every member of root; marks the figures set in given[]. */
static void load_members(ps__json_diag *d, const cJSON *root, const char *parent, ps_hardware *hw,
                         bool *given)
{
    for (const cJSON *it = root->child; it; it = it->next) {
        char path[PS__JSON_PATH_LEN];
        ps__json_key_path(path, parent, it->string);
        if (ps__json_repeated(root, it)) {
            ps__json_error(d, path, "duplicate key");
            continue;
        }
        if (strcmp(it->string, "base") == 0)
            continue; /* read first, by load_base */
        if (strcmp(it->string, "name") == 0) {
            load_name(d, path, it, hw);
            continue;
        }
        const hw_key *k = find_key(it->string);
        if (!k) {
            ps__json_unknown_key(d, parent, it->string,
                                 ps__json_suggest(it->string, file_key_name, NULL));
            continue;
        }
        given[k - keys] = true;
        if (!cJSON_IsNumber(it)) {
            ps__json_type_error(d, path, k->type == KEY_I32 ? "an integer" : "a number", it);
            continue;
        }
        if (check_value(d, path, k, it->valuedouble))
            set(hw, k, it->valuedouble);
    }
}

/* Without "base": every published figure the file lacks, in one item. */
static void report_missing(ps__json_diag *d, const char *parent, const bool *given)
{
    char list[PS__JSON_ITEM_LEN] = "";
    size_t missing = 0;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].kind != KEY_PUBLISHED || given[i])
            continue;
        append(list, sizeof list, missing ? ", " : "");
        append(list, sizeof list, keys[i].name);
        missing++;
    }
    if (missing)
        ps__json_error(d, parent,
                       "without \"base\", every published figure is required; missing %s", list);
}

void ps__hardware_load(ps__json_diag *d, const cJSON *obj, const char *parent, ps_hardware *out)
{
    ps_hardware hw;
    bool has_base = false, given[N_KEYS] = {false};
    size_t before = d->errors;
    load_base(d, obj, parent, &hw, &has_base);
    load_members(d, obj, parent, &hw, given);
    if (!has_base)
        report_missing(d, parent, given);
    if (d->errors == before) {
        char prefix[PS__JSON_PATH_LEN];
        snprintf(prefix, sizeof prefix, "%s.", parent);
        check_rules(d, &hw, prefix);
    }
    if (d->errors == before)
        *out = hw;
}

int ps_hardware_from_json(const char *json, size_t len, ps_hardware *out, char *err, size_t errlen)
{
    if (!json || !out)
        return ps__seterr_n(err, errlen, PS_EINVAL, "%s", "hardware file: NULL text or output");
    char msg[PS__ERRLEN];
    cJSON *root = NULL;
    int rc = ps__json_parse(json, len, &root, msg);
    if (rc)
        return ps__seterr_n(err, errlen, rc, "%s", msg);
    ps__json_diag d;
    ps__json_diag_init(&d);
    ps_hardware hw;
    if (!cJSON_IsObject(root))
        ps__json_type_error(&d, "$", "an object", root);
    else
        ps__hardware_load(&d, root, "$", &hw);
    cJSON_Delete(root);
    if (d.errors) {
        ps__json_diag_render(&d, msg);
        return ps__seterr_n(err, errlen, PS_ECONFIG, "%s", msg);
    }
    *out = hw;
    return 0;
}

/* ---- docs/hardware.md -------------------------------------------------------------------------
 */

void ps__doc_emit(void (*write)(void *, const char *), void *ud, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    write(ud, line);
}

/* A bound as the docs write it: 10⁶ for HW_MAX, else the number. */
static void bound(char *buf, size_t n, double v)
{
    if (v == 1e6)
        snprintf(buf, n, "10⁶");
    else
        snprintf(buf, n, "%g", v);
}

static void doc_keys(void (*write)(void *, const char *), void *ud)
{
    ps__doc_emit(write, ud, "| key | kind | type | range | without `base` | meaning |\n");
    ps__doc_emit(write, ud, "|---|---|---|---|---|---|\n");
    ps__doc_emit(write, ud,
                 "| `base` | | string | a preset | | the preset the file starts from |\n");
    ps__doc_emit(write, ud,
                 "| `name` | | string | 1 to %zu bytes | `\"%s\"` | the name in reports; "
                 "default: the base's |\n",
                 sizeof generic.name - 1, generic.name);
    for (size_t i = 0; i < N_KEYS; i++) {
        const hw_key *k = &keys[i];
        char lo[32], hi[32], dflt[32] = "required";
        bound(lo, sizeof lo, k->lo);
        bound(hi, sizeof hi, k->hi);
        if (k->kind == KEY_EFFICIENCY)
            snprintf(dflt, sizeof dflt, "%g", get(&generic, k));
        ps__doc_emit(write, ud, "| `%s` | %s | %s | %s%s%s%s | %s | %s |\n", k->name,
                     k->kind == KEY_PUBLISHED ? "published" : "efficiency",
                     k->type == KEY_I32 ? "integer" : "number", k->lo_open ? "> " : "", lo,
                     k->lo_open ? ", ≤ " : " … ", hi, dflt, k->doc);
    }
}

static void doc_presets(void (*write)(void *, const char *), void *ud)
{
    ps__doc_emit(write, ud, "| preset |");
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].kind == KEY_PUBLISHED)
            ps__doc_emit(write, ud, " `%s` |", keys[i].name);
    ps__doc_emit(write, ud, "\n|---|");
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].kind == KEY_PUBLISHED)
            ps__doc_emit(write, ud, "---|");
    ps__doc_emit(write, ud, "\n");
    for (size_t p = 0; p < N_PRESETS; p++) {
        ps__doc_emit(write, ud, "| `%s` |", presets[p].name);
        for (size_t i = 0; i < N_KEYS; i++)
            if (keys[i].kind == KEY_PUBLISHED)
                ps__doc_emit(write, ud, " %g |", get(&presets[p], &keys[i]));
        ps__doc_emit(write, ud, "\n");
    }
}

static const struct {
    const char *name;
    void (*write)(void (*)(void *, const char *), void *);
} doc_tables[] = {{"keys", doc_keys}, {"presets", doc_presets}};

const char *ps__hardware_doc_table(size_t i)
{
    return i < sizeof doc_tables / sizeof doc_tables[0] ? doc_tables[i].name : NULL;
}

int ps__hardware_doc_markdown(const char *name, void (*write)(void *ud, const char *text), void *ud)
{
    for (size_t i = 0; i < sizeof doc_tables / sizeof doc_tables[0]; i++) {
        if (strcmp(doc_tables[i].name, name) == 0) {
            doc_tables[i].write(write, ud);
            return 0;
        }
    }
    return PS_ENOTFOUND;
}
