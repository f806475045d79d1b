#!/bin/sh
# Per-GPU memory of `pipesched estimate` next to published figures (bench/README.md, "Memory
# against published figures", gives the sources and discusses the differences).
# Usage: bench/memory.sh [build-dir]        needs jq
#
# Each case is an estimate configuration (docs/config.md, "Estimate configuration"), the
# pipeline rank the source measured, the quantity compared and the published figure:
#   total   weights + grads + optimizer + activations of the rank, without overhead_gib:
#           the source is torch.cuda.max_memory_allocated(), which leaves out the CUDA
#           context, NCCL buffers and the allocator's cache (what overhead_gib stands for);
#   static  weights + grads + optimizer: the allocator's figure between two steps;
#   act     activations: the peak minus the figure between two steps;
#   states  weights + grads + optimizer of an analytic (not measured) figure.
# Published figures are given in bytes (B) or in decimal GB (GB); all output is in GiB.
set -eu
build=${1:-build}
bin=$build/pipesched
command -v jq >/dev/null || { echo "bench/memory.sh: needs jq" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench/memory.sh: no $bin (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The models. Megatron's defaults where the test's arguments say nothing: ffn 4h, GeLU-type
# (not gated) MLP, LayerNorm; vocabularies padded to a multiple of 128 * tp as Megatron pads.
# Megatron-LM CI "7b": 32 x 4096, 32 heads / 8 query groups, untied, vocabulary 131072.
m7b='{"base": "gpt3-175b", "name": "mcore-ci-7b", "layers": 32, "hidden": 4096, "ffn": 16384,
      "heads": 32, "kv_heads": 8, "vocab": 131072, "tied_embeddings": 0}'
# Megatron-LM CI "gpt3_15b_8t": 32 x 6144, 48 heads / 8 groups, squared ReLU (not gated),
# untied, the 256,000-token nemotron_2_256k vocabulary.
m15b='{"base": "gpt3-175b", "name": "mcore-ci-15b", "layers": 32, "hidden": 6144, "ffn": 24576,
       "heads": 48, "kv_heads": 8, "vocab": 256000, "tied_embeddings": 0}'
# ZeRO's Figure 1 counts Psi = 7.5B parameters and nothing else of the model: a GPT-style
# 36 x 4096 with the vocabulary chosen to make exactly 7.50B (the shape changes nothing here).
mzero='{"base": "gpt3-175b", "name": "zero-psi-7.5b", "layers": 36, "hidden": 4096,
        "ffn": 16384, "heads": 32, "kv_heads": 32, "vocab": 61437}'

printf '%-4s %-6s %9s %9s %7s %7s  %s\n' case what published predicted diff "diff %" \
    "configuration (pipeline rank compared)"

# row ID WHAT PUBLISHED UNIT RANK CONFIG: RANK "last" or a number.
row() {
    id=$1 what=$2 pub=$3 unit=$4 rank=$5 cfg=$6
    printf '%s\n' "$cfg" >"$tmp/$id.json"
    "$bin" estimate --config "$tmp/$id.json" --json >"$tmp/$id.out"
    desc=$(jq -r '.model as $m | .train as $t |
        "L\($m.layers) h\($m.hidden) f\($m.ffn) a\($m.heads)/g\($m.kv_heads) V\($m.vocab) " +
        "tp\($t.tp) pp\($t.pp) vpp\($t.vpp // 1) " +
        (if $t.tp > 1 then (if $t.sequence_parallel == false then "nosp " else "sp " end)
         else "" end) +
        "mbs\($t.mbs) s\($t.seq) rc:\($t.recompute // "none")" +
        (if $t.distributed_optimizer then " distopt" else "" end)' "$tmp/$id.json")
    dp=$(jq -r '.dp' "$tmp/$id.out")
    jq -r --arg rank "$rank" --arg what "$what" '
        .memory.ranks as $r |
        (if $rank == "last" then ($r | length) - 1 else ($rank | tonumber) end) as $i |
        $r[$i] as $m |
        ($m.weights_gib + $m.grads_gib + $m.optimizer_gib) as $states |
        (if $what == "total" then $states + $m.activations_gib
         elif $what == "act" then $m.activations_gib
         else $states end) as $v |
        "\($i) \($v)"' "$tmp/$id.out" >"$tmp/$id.val"
    read -r r pred <"$tmp/$id.val"
    awk -v id="$id" -v d="$desc dp$dp (rank $r)" -v w="$what" -v p="$pub" -v u="$unit" \
        -v x="$pred" 'BEGIN {
        g = (u == "GB") ? p * 1e9 / 1073741824 : p / 1073741824
        printf "%-4s %-6s %9.2f %9.2f %+7.2f %+6.1f%%  %s\n", id, w, g, x, x - g,
               100 * (x - g) / g, d }'
}

m7b_pp4=$(printf '{"model": %s, "hardware": "h100-sxm", "train": {"gpus": 8, "tp": 1,
    "pp": 4, "vpp": 8, "gbs": 8, "mbs": 1, "seq": 8192, "recompute": "none",
    "distributed_optimizer": true}}' "$m7b")
m7b_tp4=$(printf '{"model": %s, "hardware": "h100-sxm", "train": {"gpus": 8, "tp": 4,
    "pp": 1, "sequence_parallel": false, "gbs": 8, "mbs": 2, "seq": 8192, "recompute": "none",
    "distributed_optimizer": true}}' "$m7b")
# 15B: the test does not state its GPU count; dp = 8 here (activations do not depend on it).
m15b_tp8=$(printf '{"model": %s, "hardware": "h100-sxm", "train": {"gpus": 64, "tp": 8,
    "pp": 1, "sequence_parallel": true, "gbs": 1152, "mbs": 4, "seq": 4096,
    "recompute": "none", "distributed_optimizer": true}}' "$m15b")
zero=$(printf '{"model": %s, "hardware": "a100-80g", "train": {"gpus": 64, "tp": 1, "pp": 1,
    "gbs": 64, "mbs": 1, "seq": 1024, "distributed_optimizer": %%s}}' "$mzero")

# Megatron-LM functional tests, golden values of dgx_h100 (torch allocator, last rank).
row M1 total 60518293504 B last "$m7b_pp4"
row M1 static 24540168192 B last "$m7b_pp4"
row M1 act $((60518293504 - 24540168192)) B last "$m7b_pp4"
row M2 total 57143791616 B last "$m7b_tp4"
row M2 static 20663519232 B last "$m7b_tp4"
row M2 act $((57143791616 - 20663519232)) B last "$m7b_tp4"
row M3 act $((28156907520 - 13268436992)) B last "$m15b_tp8"
# ZeRO (Rajbhandari et al. 2020), Figure 1: model states of Psi = 7.5B on N_d = 64, K = 12.
# shellcheck disable=SC2059
row Z1 states 120 GB 0 "$(printf "$zero" false)"
# shellcheck disable=SC2059
row Z2 states 31.4 GB 0 "$(printf "$zero" true)"

# pipesched's own per-rank total adds the preset's overhead_gib (CUDA context, NCCL, the
# allocator's cache), which the allocator figures above leave out.
for id in M1 M2; do
    jq -r --arg id "$id" '.memory.ranks[-1] |
        "\($id): pipesched total of the rank with overhead_gib \(.overhead_gib): " +
        "\(.total_gib * 100 | round / 100) GiB (peak in-flight chunks \(.peak_inflight))"' \
        "$tmp/$id.out"
done
