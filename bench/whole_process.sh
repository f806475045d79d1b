#!/bin/sh
# Whole-process wall time of `pipesched simulate --json` (generate + validate + simulate +
# print), median of 5 runs, next to the fastest peer's whole-process time for the same
# schedule from shared/reference/peer-figures.md (measured on this kind of machine, Python
# generators with f=b=w=1). Usage: bench/whole_process.sh [build-dir]
set -eu
build=${1:-build}
bin=$build/pipesched

# Milliseconds per run of "$@": three timings of 10 runs each, the median, divided by 10
# (one date call per 10 runs keeps the timer's own cost out).
median_ms() {
    : >/tmp/ps-bench-times.$$
    for rep in 1 2 3; do
        t0=$(date +%s%N)
        for i in 1 2 3 4 5 6 7 8 9 10; do
            "$@" >/dev/null
        done
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 10000)) >>/tmp/ps-bench-times.$$
    done
    sort -n /tmp/ps-bench-times.$$ | sed -n 2p | awk '{printf "%.2f", $1 / 1000}'
    rm -f /tmp/ps-bench-times.$$
}

echo "process spawn alone (/bin/true): $(median_ms /bin/true) ms"
# family vpp peer-name peer seconds at 4x8 8x32 16x64 32x256 64x1024 (fastest whole process)
cat <<'PEERS' >/tmp/ps-peers.$$
1f1b 1 torch_pp:1F1B 0.08 0.09 0.10 0.23 1.64
gpipe 1 ppviz/torch:GPipe 0.09 0.09 0.11 0.37 3.08
interleaved 2 torch_pp:Interleaved1F1B(--no-lowering)/zeropipe 0.09 0.13 0.16 0.32 1.54
looped-bfs 2 torch_pp:LoopedBFS(--no-lowering) 0.11 0.11 0.22 1.84 27.75
PEERS

printf '%-12s %-9s %10s %12s %8s\n' family "pp x m" "ours ms" "peer ms" "ratio"
while read -r fam vpp peer a b c d e; do
    set -- "$a" "$b" "$c" "$d" "$e"
    for size in 4x8 8x32 16x64 32x256 64x1024; do
        p=${size%x*}
        m=${size#*x}
        ours=$(median_ms "$bin" simulate -s "$fam" -p "$p" -v "$vpp" -m "$m" --json)
        peer_s=$1
        shift
        ratio=$(awk -v o="$ours" -v s="$peer_s" 'BEGIN { printf "%.0fx", s * 1000 / o }')
        printf '%-12s %-9s %10s %12s %8s\n' "$fam" "$size" "$ours" \
            "$(awk -v s="$peer_s" 'BEGIN { printf "%.0f", s * 1000 }')" "$ratio"
    done
done </tmp/ps-peers.$$
rm -f /tmp/ps-peers.$$
