/*
 * Check suite "hardware": the presets, ps_hardware_check(), the hardware file
 * (ps_hardware_from_json), ps_train_init() and the tables of docs/hardware.md. The preset figures
 * below are written from the vendors' published figures (sources in the comments and in
 * docs/hardware.md), the messages from the documented format, not copied from output.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"
#include "model/hardware.h"

#include <pipesched/model.h>

#include <check.h>

#include "common.h"

#include "docblock.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */

/* Reads a whole file (the tests run in tests/). Caller frees. */
static int load_file(const char *path, ps_hardware *hw, char *err, size_t errlen)
{
    size_t len;
    char *text = test_read_file(path, &len);
    int rc = ps_hardware_from_json(text, len, hw, err, errlen);
    free(text);
    return rc;
}

static int load(const char *text, ps_hardware *hw, char *err, size_t errlen)
{
    return ps_hardware_from_json(text, strlen(text), hw, err, errlen);
}

/* Loads text, expecting rc and exactly the message msg; the output stays untouched. */
#define ck_assert_load_fails(text, rc, msg)                                                        \
    do {                                                                                           \
        ps_hardware hw_;                                                                           \
        memset(&hw_, 0x5a, sizeof hw_);                                                            \
        char err_[PS__ERRLEN] = "";                                                                \
        ck_assert_int_eq(load((text), &hw_, err_, sizeof err_), (rc));                             \
        ck_assert_str_eq(err_, (msg));                                                             \
        unsigned char *b_ = (unsigned char *)&hw_;                                                 \
        for (size_t i_ = 0; i_ < sizeof hw_; i_++)                                                 \
            ck_assert_uint_eq(b_[i_], 0x5a);                                                       \
    } while (0)

static ps_hardware preset(const char *name)
{
    ps_hardware hw;
    ck_assert_int_eq(ps_hardware_builtin(name, &hw), 0);
    return hw;
}

/* ---- presets -------------------------------------------------------------------------------- */

START_TEST(hardware_presets_pass_check)
{
    const char *name;
    size_t n = 0;
    for (size_t i = 0; (name = ps_hardware_builtin_name(i)) != NULL; i++, n++) {
        ps_hardware hw = preset(name);
        char err[PS__ERRLEN] = "";
        ck_assert_msg(ps_hardware_check(&hw, err, sizeof err) == 0, "%s: %s", name, err);
        ck_assert_str_eq(hw.name, name);
    }
    ck_assert_uint_eq(n, 7);
}
END_TEST

/* The published figures, from the datasheets (dense peaks: half the 2:4-sparse figures printed
 * there; one-way bandwidths: half the bidirectional NVLink figures). */
START_TEST(hardware_presets_published)
{
    /* NVIDIA A100 datasheet: BF16 312 TFLOPS (624 sparse), no FP8, 80 GB HBM2e at 2,039 GB/s,
     * NVLink 600 GB/s; DGX A100: 8 GPUs, 200 Gb/s HDR InfiniBand per GPU. */
    ps_hardware hw = preset("a100-80g");
    ck_assert_double_eq(hw.peak_tflops_bf16, 312);
    ck_assert_double_eq(hw.peak_tflops_fp8, 0);
    ck_assert_double_eq(hw.hbm_gib, 80);
    ck_assert_double_eq(hw.hbm_gbps, 2039);
    ck_assert_int_eq(hw.devices_per_node, 8);
    ck_assert_double_eq(hw.intra_gbps, 600 / 2);
    ck_assert_double_eq(hw.inter_gbps, 200 / 8);

    /* NVIDIA H100 SXM datasheet: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 80 GB at
     * 3.35 TB/s, NVLink 900 GB/s; DGX H100: 400 Gb/s ConnectX-7 per GPU. */
    hw = preset("h100-sxm");
    ck_assert_double_eq(hw.peak_tflops_bf16, 989);
    ck_assert_double_eq(hw.peak_tflops_fp8, 1979);
    ck_assert_double_eq(hw.hbm_gib, 80);
    ck_assert_double_eq(hw.hbm_gbps, 3350);
    ck_assert_double_eq(hw.intra_gbps, 900 / 2);
    ck_assert_double_eq(hw.inter_gbps, 400 / 8);

    /* H800: H100 compute and memory, NVLink 400 GB/s bidirectional; DeepSeek-V3's H800
     * cluster: 400 Gb/s InfiniBand (50 GB/s) per GPU. */
    hw = preset("h800");
    ck_assert_double_eq(hw.peak_tflops_bf16, 989);
    ck_assert_double_eq(hw.peak_tflops_fp8, 1979);
    ck_assert_double_eq(hw.intra_gbps, 400 / 2);
    ck_assert_double_eq(hw.inter_gbps, 50);

    /* NVIDIA H200: 141 GB HBM3e at 4.8 TB/s, H100's compute and NVLink. */
    hw = preset("h200");
    ck_assert_double_eq(hw.peak_tflops_bf16, 989);
    ck_assert_double_eq(hw.peak_tflops_fp8, 1979);
    ck_assert_double_eq(hw.hbm_gib, 141);
    ck_assert_double_eq(hw.hbm_gbps, 4800);
    ck_assert_double_eq(hw.intra_gbps, 900 / 2);

    /* DGX B200: 8 GPUs, 1,440 GB HBM3e at 64 TB/s, FP8 72 PFLOPS sparse; NVLink 5 1.8 TB/s
     * per GPU; HGX B200 BF16 4.5 PFLOPS sparse per GPU. */
    hw = preset("b200");
    ck_assert_double_eq(hw.peak_tflops_bf16, 4500 / 2);
    ck_assert_double_eq(hw.peak_tflops_fp8, 72000 / 8 / 2);
    ck_assert_double_eq(hw.hbm_gib, 1440 / 8);
    ck_assert_double_eq(hw.hbm_gbps, 64000 / 8);
    ck_assert_double_eq(hw.intra_gbps, 1800 / 2);
    ck_assert_int_eq(hw.devices_per_node, 8);

    /* GB200 NVL72: 72 GPUs in one NVLink domain, FP8 720 PFLOPS and BF16 360 PFLOPS sparse per
     * rack, 576 TB/s HBM3e, 1.8 TB/s NVLink per GPU. */
    hw = preset("gb200");
    ck_assert_double_eq(hw.peak_tflops_bf16, 360000 / 72 / 2);
    ck_assert_double_eq(hw.peak_tflops_fp8, 720000 / 72 / 2);
    ck_assert_double_eq(hw.hbm_gbps, 576000 / 72);
    ck_assert_int_eq(hw.devices_per_node, 72);
    ck_assert_double_eq(hw.intra_gbps, 1800 / 2);

    /* Ascend 910B: FP16 ~320 TFLOPS, 64 GB HBM2e, no FP8; Atlas 800T A2: 8 NPUs, 200 Gb/s RoCE
     * each. */
    hw = preset("ascend-910b");
    ck_assert_double_eq(hw.peak_tflops_bf16, 320);
    ck_assert_double_eq(hw.peak_tflops_fp8, 0);
    ck_assert_double_eq(hw.hbm_gib, 64);
    ck_assert_int_eq(hw.devices_per_node, 8);
    ck_assert_double_eq(hw.inter_gbps, 200 / 8);
}
END_TEST

/* The presets without calibration data keep the generic efficiency figures docs/hardware.md
 * states; the calibrated ones hold the fit of bench/README.md: H100, B200 and GB200 one pool
 * that shares the software's figures (gemm_eff, gemm_half_dim, attn_eff, grouped_gemm_eff),
 * h800 and h200 with h100-sxm's. */
START_TEST(hardware_presets_generic_efficiency)
{
    static const struct {
        const char *name;
        double gemm, half, attn, intra, inter, moe, grouped;
    } want[] = {{"a100-80g", 0.8775, 536, 0.065, 1, 0.5938, 0, 1},
                {"h100-sxm", 0.815, 856, 0.3, 0.99375, 1, 4000, 0.5},
                {"h800", 0.815, 856, 0.3, 0.99375, 1, 4000, 0.5},
                {"h200", 0.815, 856, 0.3, 0.99375, 1, 4000, 0.5},
                {"b200", 0.815, 856, 0.3, 0.225, 0.65625, 3187.5, 0.5},
                {"gb200", 0.815, 856, 0.3, 0.3125, 0.8, 1000, 0.5},
                {"ascend-910b", 0.75, 128, 0.5, 0.8, 0.8, 0, 1}};
    ck_assert_ptr_null(ps_hardware_builtin_name(sizeof want / sizeof want[0]));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ps_hardware hw = preset(want[i].name);
        ck_assert_double_eq(hw.gemm_eff, want[i].gemm);
        ck_assert_double_eq(hw.gemm_half_dim, want[i].half);
        ck_assert_double_eq(hw.attn_eff, want[i].attn);
        ck_assert_double_eq(hw.mem_eff, 0.8);
        ck_assert_double_eq(hw.bus_eff_intra, want[i].intra);
        ck_assert_double_eq(hw.bus_eff_inter, want[i].inter);
        ck_assert_double_eq(hw.overhead_gib, 3);
        ck_assert_double_eq(hw.moe_layer_us, want[i].moe);
        ck_assert_double_eq(hw.grouped_gemm_eff, want[i].grouped);
    }
}
END_TEST

START_TEST(hardware_builtin_names)
{
    ps_hardware hw;
    ck_assert_int_eq(ps_hardware_builtin("H100-SXM", &hw), 0);
    ck_assert_str_eq(hw.name, "h100-sxm");
    ck_assert_int_eq(ps_hardware_builtin("Ascend-910B", &hw), 0);
    ck_assert_str_eq(hw.name, "ascend-910b");
    /* Exact names only: no prefixes, no aliases. */
    ck_assert_int_eq(ps_hardware_builtin("h100", &hw), PS_ENOTFOUND);
    ck_assert_int_eq(ps_hardware_builtin("h100-sxm ", &hw), PS_ENOTFOUND);
    ck_assert_int_eq(ps_hardware_builtin("", &hw), PS_ENOTFOUND);
    ck_assert_int_eq(ps_hardware_builtin(NULL, &hw), PS_EINVAL);
    ck_assert_int_eq(ps_hardware_builtin("h200", NULL), PS_EINVAL);
    const char *want[] = {"a100-80g", "h100-sxm", "h800", "h200", "b200", "gb200", "ascend-910b"};
    for (size_t i = 0; i < 7; i++)
        ck_assert_str_eq(ps_hardware_builtin_name(i), want[i]);
    ck_assert_ptr_null(ps_hardware_builtin_name(7));
    ck_assert_ptr_null(ps_hardware_builtin_name((size_t)-1));
}
END_TEST

/* ---- ps_hardware_check ---------------------------------------------------------------------- */

static void check_fails(const ps_hardware *hw, const char *msg)
{
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(ps_hardware_check(hw, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, msg);
}

START_TEST(hardware_check_ranges)
{
    ps_hardware hw = preset("h100-sxm");
    hw.peak_tflops_bf16 = 0;
    check_fails(&hw, "peak_tflops_bf16: must be > 0, got 0");
    hw = preset("h100-sxm");
    hw.peak_tflops_bf16 = 2e6;
    check_fails(&hw, "peak_tflops_bf16: 2000000 is beyond the limit 1e+06");
    hw = preset("h100-sxm");
    hw.gemm_eff = 1.5;
    check_fails(&hw, "gemm_eff: 1.5 is beyond the limit 1");
    hw = preset("h100-sxm");
    hw.bus_eff_inter = 0;
    check_fails(&hw, "bus_eff_inter: must be > 0, got 0");
    hw = preset("h100-sxm");
    hw.devices_per_node = 0;
    check_fails(&hw, "devices_per_node: must be >= 1, got 0");
    hw = preset("h100-sxm");
    hw.lat_inter_us = -1;
    check_fails(&hw, "lat_inter_us: must be >= 0, got -1");
    hw = preset("h100-sxm");
    hw.mem_eff = NAN;
    check_fails(&hw, "mem_eff: must be a finite number, got nan");
    /* Every problem is reported, each naming its field. */
    hw = preset("h100-sxm");
    hw.hbm_gib = -80;
    hw.attn_eff = 2;
    check_fails(&hw, "2 errors: hbm_gib: must be > 0, got -80; attn_eff: 2 is beyond the limit 1");
    /* Zero is allowed where the range starts at 0. */
    hw = preset("h100-sxm");
    hw.lat_intra_us = hw.lat_inter_us = hw.gemm_half_dim = hw.overhead_gib = 0;
    ck_assert_int_eq(ps_hardware_check(&hw, NULL, 0), 0);
    hw.gemm_eff = hw.attn_eff = hw.mem_eff = hw.bus_eff_intra = hw.bus_eff_inter = 1;
    ck_assert_int_eq(ps_hardware_check(&hw, NULL, 0), 0);
}
END_TEST

START_TEST(hardware_check_rules)
{
    ps_hardware hw = preset("h100-sxm");
    hw.peak_tflops_fp8 = 500;
    check_fails(&hw, "peak_tflops_fp8: must be 0 (no FP8) or >= peak_tflops_bf16 (989), got 500");
    hw.peak_tflops_fp8 = 989; /* equal is allowed */
    ck_assert_int_eq(ps_hardware_check(&hw, NULL, 0), 0);
    hw = preset("a100-80g");
    hw.overhead_gib = 80;
    check_fails(&hw, "overhead_gib: must be < hbm_gib (80), got 80");
    hw = preset("a100-80g");
    memset(hw.name, 'x', sizeof hw.name);
    check_fails(&hw, "name: not NUL-terminated within 32 bytes");
}
END_TEST

START_TEST(hardware_check_arguments)
{
    char err[64] = "";
    ck_assert_int_eq(ps_hardware_check(NULL, err, sizeof err), PS_EINVAL);
    ck_assert_str_eq(err, "hardware: NULL");
    /* A short buffer gets the start of the message, NUL-terminated. */
    ps_hardware hw = preset("h200");
    hw.gemm_eff = 0;
    char small[9];
    ck_assert_int_eq(ps_hardware_check(&hw, small, sizeof small), PS_ECONFIG);
    ck_assert_str_eq(small, "gemm_eff");
}
END_TEST

/* ---- the hardware file ---------------------------------------------------------------------- */

START_TEST(hardware_file_base_overrides)
{
    ps_hardware hw;
    char err[PS__ERRLEN] = "";
    ck_assert_msg(load_file("data/hw/h100-94g.json", &hw, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(hw.name, "h100-94g-roce");
    ck_assert_double_eq(hw.hbm_gib, 94);
    ck_assert_double_eq(hw.inter_gbps, 25);
    ck_assert_double_eq(hw.gemm_eff, 0.6);
    /* The rest is the base's. */
    ck_assert_double_eq(hw.peak_tflops_bf16, 989);
    ck_assert_double_eq(hw.peak_tflops_fp8, 1979);
    ck_assert_double_eq(hw.hbm_gbps, 3350);
    ck_assert_double_eq(hw.intra_gbps, 450);
    ck_assert_int_eq(hw.devices_per_node, 8);
    ck_assert_double_eq(hw.attn_eff, 0.3); /* h100-sxm's calibrated figure */
    /* Without "name", the base's name; the base is found case-insensitively. */
    ck_assert_int_eq(load("{\"base\": \"B200\", \"devices_per_node\": 4}", &hw, NULL, 0), 0);
    ck_assert_str_eq(hw.name, "b200");
    ck_assert_int_eq(hw.devices_per_node, 4);
    ck_assert_double_eq(hw.peak_tflops_bf16, 2250);
    /* The base alone is the preset. */
    ps_hardware want = preset("gb200");
    ck_assert_int_eq(load(" {\"base\":\"gb200\"}\n", &hw, NULL, 0), 0);
    ck_assert_mem_eq(&hw, &want, sizeof hw);
}
END_TEST

START_TEST(hardware_file_without_base)
{
    ps_hardware hw;
    char err[PS__ERRLEN] = "";
    ck_assert_msg(load_file("data/hw/custom.json", &hw, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(hw.name, "lab-box");
    ck_assert_double_eq(hw.peak_tflops_bf16, 400);
    ck_assert_double_eq(hw.peak_tflops_fp8, 800);
    ck_assert_double_eq(hw.hbm_gib, 48);
    ck_assert_double_eq(hw.hbm_gbps, 1000);
    ck_assert_int_eq(hw.devices_per_node, 4);
    ck_assert_double_eq(hw.intra_gbps, 100);
    ck_assert_double_eq(hw.inter_gbps, 12.5);
    ck_assert_double_eq(hw.lat_intra_us, 4);
    ck_assert_double_eq(hw.lat_inter_us, 12);
    /* The generic efficiency figures (docs/hardware.md). */
    ck_assert_double_eq(hw.gemm_eff, 0.75);
    ck_assert_double_eq(hw.gemm_half_dim, 128);
    ck_assert_double_eq(hw.attn_eff, 0.5);
    ck_assert_double_eq(hw.mem_eff, 0.8);
    ck_assert_double_eq(hw.bus_eff_intra, 0.8);
    ck_assert_double_eq(hw.bus_eff_inter, 0.8);
    ck_assert_double_eq(hw.overhead_gib, 3);
}
END_TEST

START_TEST(hardware_file_missing_published)
{
    ps_hardware hw;
    memset(&hw, 0x5a, sizeof hw);
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(load_file("data/hw/missing.json", &hw, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "$: without \"base\", every published figure is required; missing "
                          "peak_tflops_fp8, hbm_gbps, devices_per_node, inter_gbps, "
                          "lat_intra_us, lat_inter_us");
    ck_assert_load_fails("{}", PS_ECONFIG,
                         "$: without \"base\", every published figure is required; missing "
                         "peak_tflops_bf16, peak_tflops_fp8, hbm_gib, hbm_gbps, devices_per_node, "
                         "intra_gbps, inter_gbps, lat_intra_us, lat_inter_us");
}
END_TEST

START_TEST(hardware_file_unknown_key)
{
    ck_assert_load_fails("{\"base\": \"h100-sxm\", \"hbm_gbs\": 3000}", PS_ECONFIG,
                         "$.hbm_gbs: unknown key (did you mean \"hbm_gbps\"?)");
    ck_assert_load_fails("{\"bsae\": \"h100-sxm\"}", PS_ECONFIG,
                         "2 errors: $.bsae: unknown key (did you mean \"base\"?); $: without "
                         "\"base\", every published figure is required; missing "
                         "peak_tflops_bf16, peak_tflops_fp8, hbm_gib, hbm_gbps, devices_per_node, "
                         "intra_gbps, inter_gbps, lat_intra_us, lat_inter_us");
    ck_assert_load_fails("{\"base\": \"h200\", \"tflops\": 1, \"Gemm-Eff\": 0.5}", PS_ECONFIG,
                         "2 unknown keys: $.tflops, $.Gemm-Eff (did you mean \"gemm_eff\"?)");
}
END_TEST

START_TEST(hardware_file_unknown_base)
{
    ck_assert_load_fails("{\"base\": \"h100\"}", PS_ECONFIG,
                         "$.base: unknown preset \"h100\" (did you mean \"h800\"?); presets: "
                         "a100-80g, h100-sxm, h800, h200, b200, gb200, ascend-910b");
    ck_assert_load_fails("{\"base\": \"tpu-v5p\"}", PS_ECONFIG,
                         "$.base: unknown preset \"tpu-v5p\"; presets: a100-80g, h100-sxm, h800, "
                         "h200, b200, gb200, ascend-910b");
    ck_assert_load_fails("{\"base\": 100}", PS_ECONFIG,
                         "$.base: expected a string (a preset name), got number 100");
}
END_TEST

START_TEST(hardware_file_wrong_type)
{
    ck_assert_load_fails("{\"base\": \"h200\", \"hbm_gib\": \"141\"}", PS_ECONFIG,
                         "$.hbm_gib: expected a number, got string \"141\"");
    ck_assert_load_fails("{\"base\": \"h200\", \"devices_per_node\": 7.5}", PS_ECONFIG,
                         "$.devices_per_node: expected an integer, got 7.5");
    ck_assert_load_fails("{\"base\": \"h200\", \"devices_per_node\": true}", PS_ECONFIG,
                         "$.devices_per_node: expected an integer, got boolean true");
    ck_assert_load_fails("{\"base\": \"h200\", \"name\": 5}", PS_ECONFIG,
                         "$.name: expected a string, got number 5");
    ck_assert_load_fails("{\"base\": \"h200\", \"name\": \"0123456789012345678901234567890x\"}",
                         PS_ECONFIG, "$.name: must have 1 to 31 bytes, got 32");
    ck_assert_load_fails("[1, 2]", PS_ECONFIG, "$: expected an object, got an array");
}
END_TEST

START_TEST(hardware_file_out_of_range)
{
    ck_assert_load_fails("{\"base\": \"h200\", \"gemm_eff\": 1.2}", PS_ECONFIG,
                         "$.gemm_eff: 1.2 is beyond the limit 1");
    ck_assert_load_fails("{\"base\": \"h200\", \"hbm_gib\": 0, \"inter_gbps\": -25}", PS_ECONFIG,
                         "2 errors: $.hbm_gib: must be > 0, got 0; $.inter_gbps: must be > 0, got "
                         "-25");
    ck_assert_load_fails("{\"base\": \"h200\", \"peak_tflops_bf16\": 989e12}", PS_ECONFIG,
                         "$.peak_tflops_bf16: 989000000000000 is beyond the limit 1e+06");
    /* The rules between keys, with the file's values. */
    ck_assert_load_fails("{\"base\": \"a100-80g\", \"peak_tflops_fp8\": 100}", PS_ECONFIG,
                         "$.peak_tflops_fp8: must be 0 (no FP8) or >= peak_tflops_bf16 (312), got "
                         "100");
    ck_assert_load_fails("{\"base\": \"h100-sxm\", \"hbm_gib\": 2}", PS_ECONFIG,
                         "$.overhead_gib: must be < hbm_gib (2), got 3");
    ck_assert_load_fails("{\"base\": \"h200\", \"hbm_gib\": 90, \"hbm_gib\": 91}", PS_ECONFIG,
                         "$.hbm_gib: duplicate key");
}
END_TEST

START_TEST(hardware_file_malformed)
{
    ps_hardware hw;
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(load_file("data/hw/malformed.json", &hw, err, sizeof err), PS_EPARSE);
    /* Line 4 is `  "inter_gbps" 50`: the ':' is missing where the 5 stands, column 16. */
    ck_assert_str_eq(err, "line 4, column 16: malformed JSON near \"50\"");
    ck_assert_load_fails("", PS_EPARSE, "line 1, column 1: empty input (expected a JSON object)");
    ck_assert_load_fails("{\"base\": \"h200\"} x", PS_EPARSE,
                         "line 1, column 18: unexpected data after the JSON value near \"x\"");
    ck_assert_int_eq(ps_hardware_from_json("{\"base\":\0}", 10, &hw, err, sizeof err), PS_EPARSE);
    ck_assert_str_eq(err, "line 1, column 9: NUL byte in the input near \"\\u0000}\"");
    ck_assert_int_eq(ps_hardware_from_json(NULL, 0, &hw, err, sizeof err), PS_EINVAL);
    ck_assert_int_eq(ps_hardware_from_json("{}", 2, NULL, NULL, 0), PS_EINVAL);
}
END_TEST

/* ---- ps_train_init -------------------------------------------------------------------------- */

START_TEST(hardware_train_init_defaults)
{
    ps_train t;
    memset(&t, 0x5a, sizeof t);
    ps_train_init(&t);
    /* model.h: 8 GPUs, tp = pp = vpp = cp = ep = 1, gbs 8, mbs 1, seq 4096, bf16, no
     * recompute, distributed optimizer and both overlaps on, schedule "", a2a auto. */
    ck_assert_int_eq(t.gpus, 8);
    ck_assert_int_eq(t.gpus_per_node, 0);
    ck_assert_int_eq(t.tp, 1);
    ck_assert_int_eq(t.pp, 1);
    ck_assert_int_eq(t.vpp, 1);
    ck_assert_int_eq(t.cp, 1);
    ck_assert_int_eq(t.ep, 1);
    ck_assert_int_eq(t.etp, 0);
    ck_assert_int_eq(t.sequence_parallel, 1);
    ck_assert_int_eq(t.gbs, 8);
    ck_assert_int_eq(t.mbs, 1);
    ck_assert_int_eq(t.seq, 4096);
    ck_assert_int_eq(t.precision, PS_PREC_BF16);
    ck_assert_int_eq(t.recompute, PS_RECOMPUTE_NONE);
    ck_assert_int_eq(t.recompute_layers, 0);
    ck_assert_int_eq(t.distributed_optimizer, 0);
    ck_assert_int_eq(t.overlap_grad_reduce, 1);
    ck_assert_int_eq(t.overlap_param_gather, 1);
    ck_assert_str_eq(t.schedule, "");
    ck_assert_int_eq(t.a2a, PS_A2A_AUTO);
    ck_assert_ptr_null(t.layout);
    ck_assert_int_eq(t.first_stage_layers, 0);
    ck_assert_int_eq(t.last_stage_layers, 0);
    ps_train_init(NULL); /* does nothing */
}
END_TEST

/* ---- docs/hardware.md ----------------------------------------------------------------------
 *
 * The tables of docs/hardware.md are written from the declarations (ps__hardware_doc_markdown)
 * and must stand verbatim between "<!-- hw:NAME:begin -->" and "<!-- hw:NAME:end -->". After a
 * change of a key or a preset, rewrite them from tests/ with:
 *
 *     PS_HARDWARE_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-hardware
 */

static const char hardware_md[] = "../docs/hardware.md";

START_TEST(hardware_doc_tables)
{
    docblock_check(hardware_md, "hw", ps__hardware_doc_table, ps__hardware_doc_markdown,
                   "PS_HARDWARE_DOC_UPDATE",
                   "PS_HARDWARE_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-hardware");
}
END_TEST

/* The keys table names every field a file accepts: each row's key loads (with base). */
START_TEST(hardware_doc_keys_load)
{
    docblock_text t = {NULL, 0, 0};
    ck_assert_int_eq(ps__hardware_doc_markdown("keys", docblock_add, &t), 0);
    size_t rows = 0;
    for (const char *p = t.s; (p = strstr(p, "\n| `")) != NULL; p++) {
        const char *k0 = p + 4, *k1 = strchr(k0, '`');
        ck_assert_ptr_nonnull(k1);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(k1 - k0), k0);
        rows++;
        if (strcmp(key, "base") == 0)
            continue;
        char json[160];
        /* A value inside every range that also keeps the rules between keys. */
        const char *value = strcmp(key, "name") == 0              ? "\"x\""
                            : strcmp(key, "peak_tflops_fp8") == 0 ? "0"
                            : strcmp(key, "hbm_gib") == 0         ? "80"
                                                                  : "1";
        snprintf(json, sizeof json, "{\"base\": \"h200\", \"%s\": %s}", key, value);
        ps_hardware hw;
        char err[PS__ERRLEN] = "";
        ck_assert_msg(load(json, &hw, err, sizeof err) == 0, "%s: %s", key, err);
    }
    ck_assert_uint_eq(rows, 2 + 18); /* base, name and the struct's 18 figures */
    free(t.s);
}
END_TEST

static Suite *hardware_suite(void)
{
    Suite *s = suite_create("hardware");
    TCase *tc = tcase_create("presets");
    tcase_add_test(tc, hardware_presets_pass_check);
    tcase_add_test(tc, hardware_presets_published);
    tcase_add_test(tc, hardware_presets_generic_efficiency);
    tcase_add_test(tc, hardware_builtin_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_add_test(tc, hardware_check_ranges);
    tcase_add_test(tc, hardware_check_rules);
    tcase_add_test(tc, hardware_check_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("file");
    tcase_add_test(tc, hardware_file_base_overrides);
    tcase_add_test(tc, hardware_file_without_base);
    tcase_add_test(tc, hardware_file_missing_published);
    tcase_add_test(tc, hardware_file_unknown_key);
    tcase_add_test(tc, hardware_file_unknown_base);
    tcase_add_test(tc, hardware_file_wrong_type);
    tcase_add_test(tc, hardware_file_out_of_range);
    tcase_add_test(tc, hardware_file_malformed);
    suite_add_tcase(s, tc);

    tc = tcase_create("train");
    tcase_add_test(tc, hardware_train_init_defaults);
    suite_add_tcase(s, tc);

    tc = tcase_create("docs");
    tcase_add_test(tc, hardware_doc_tables);
    tcase_add_test(tc, hardware_doc_keys_load);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hardware_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
