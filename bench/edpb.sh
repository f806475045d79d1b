#!/bin/sh
# EDPB in the estimate and the search (issue 15, section 4): the cost of --samples and
# --expert-load (their synthetic forms) in `estimate` per call and in `tune` per search,
# each next to the same command without them, in one sitting. bench/README.md, "EDPB in the
# estimate and the search", has the figures.
#
#   bench/edpb.sh [PATH/TO/pipesched] [RUNS]     (default build/pipesched, 5 runs)
# Prints wall and CPU (user + sys) seconds: per call for estimate (the mean of RUNS calls),
# per search for tune (one run each), and the load average before and after.
set -eu
bin=${1:-build/pipesched}
runs=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# time_of LABEL N COMMAND...: runs COMMAND N times; prints wall and CPU seconds per run.
time_of() {
    label=$1
    n=$2
    shift 2
    # shellcheck disable=SC2016
    /usr/bin/time -f "%e %U %S" -o "$tmp/t" sh -c '
        n=$1; shift; i=0
        while [ $i -lt "$n" ]; do "$@" >/dev/null; i=$((i + 1)); done' sh "$n" "$@"
    read -r wall user sys <"$tmp/t"
    awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v n="$n" \
        'BEGIN { printf "%-46s %9.3f %9.3f\n", l, w / n, (u + s) / n }'
}

llama="--model llama3-70b --hardware h100-sxm --gpus 64 --tp 4 --pp 4 --vpp 5 --cp 2 --gbs 128"
llama="$llama --mbs 1 --seq 8192 --distributed-optimizer"
pangu="--model pangu-ultra-moe-718b --hardware ascend-910b --gpus 6144 --tp 8 --pp 16 --vpp 2"
pangu="$pangu --ep 32 --etp 2 --schedule adaptive --layout balanced --gbs 1536 --mbs 1 --seq 8192"
pangu="$pangu --distributed-optimizer"
samples="--synthetic-samples lognormal:7,1.5"
experts="--synthetic-experts zipf:0.6"
tune_llama="--model llama3-70b --hardware h100-sxm --gpus 64 --gbs 128 --seq 8192 --top 5"
tune_moe="--model mixtral-8x7b --hardware h100-sxm --gpus 32 --gbs 256 --seq 4096 --top 5"
tune_moe="$tune_moe --fix tp=2,cp=1,pp=4"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-46s %9s %9s\n' "command" "wall s" "CPU s"
# shellcheck disable=SC2086
{
    time_of "estimate llama3-70b" "$runs" "$bin" estimate $llama
    time_of "estimate llama3-70b --synthetic-samples" "$runs" "$bin" estimate $llama $samples
    time_of "  the same, --max-evals 200" "$runs" "$bin" estimate $llama $samples --max-evals 200
    time_of "estimate pangu" "$runs" "$bin" estimate $pangu
    time_of "estimate pangu --synthetic-experts" "$runs" "$bin" estimate $pangu $experts
    time_of "estimate pangu, experts and samples" "$runs" "$bin" estimate $pangu $experts $samples
    time_of "tune llama3-70b 64 gpus" 1 "$bin" tune $tune_llama --threads 2
    time_of "tune llama3-70b 64 gpus --synthetic-samples" 1 "$bin" tune $tune_llama --threads 2 \
        $samples
    time_of "tune mixtral-8x7b 32 gpus (tp2 cp1 pp4)" 1 "$bin" tune $tune_moe --threads 2
    time_of "tune mixtral-8x7b, experts and samples" 1 "$bin" tune $tune_moe --threads 2 \
        $experts $samples
}
# The search's own figures of the four tune runs (candidates, simulated, pruned, rates).
for extra in "" "$samples"; do
    # shellcheck disable=SC2086
    "$bin" tune $tune_llama --threads 2 $extra | grep '^search:' | sed "s/^/llama${extra:+ imbalance}: /"
done
for extra in "" "$experts $samples"; do
    # shellcheck disable=SC2086
    "$bin" tune $tune_moe --threads 2 $extra | grep '^search:' | sed "s/^/mixtral${extra:+ imbalance}: /"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
