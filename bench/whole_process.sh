#!/bin/sh
# Whole-process wall time of `pipesched simulate --json` (generate + validate + simulate +
# print), median of 3 x 10 runs, against /bin/true measured in the same run and against the
# fastest Python peer's whole-process time for the same schedule at f=b=w=1.
#
# The peers' times are STORED figures, not measured by this script: they were measured on
# 2026-11-30 on the project's shared 2-core VM (Debian 12) and are copied from
# shared/reference/peer-figures.md ("whole-process wall time"). The script says so in its
# output, checks whether the peers are installed here and prints the load average before and
# after, since the machine's load moves every absolute figure (compare the ratios).
# Usage: bench/whole_process.sh [build-dir]
set -eu
build=${1:-build}
bin=$build/pipesched
stored_date=2026-11-30
stored_machine="the project's shared 2-core VM (Debian 12), shared/reference/peer-figures.md"

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }

# Milliseconds per run of "$@": three timings of 10 runs each, the median, divided by 10
# (one date call per 10 runs keeps the timer's own cost out).
median_ms() {
    : >/tmp/ps-bench-times.$$
    for _ in 1 2 3; do
        t0=$(date +%s%N)
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            "$@" >/dev/null
        done
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 10000)) >>/tmp/ps-bench-times.$$
    done
    sort -n /tmp/ps-bench-times.$$ | sed -n 2p | awk '{printf "%.2f", $1 / 1000}'
    rm -f /tmp/ps-bench-times.$$
}

# Is a peer installed here? torch_pp needs PyTorch's pipelining module; ppviz and zeropipe are
# source checkouts, found only through PS_PEER_PPVIZ / PS_PEER_ZEROPIPE (their directories).
have_torch=no
if command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import torch.distributed.pipelining' >/dev/null 2>&1; then
    have_torch=yes
fi
have_ppviz=no
[ -n "${PS_PEER_PPVIZ:-}" ] && [ -d "${PS_PEER_PPVIZ}" ] && have_ppviz=yes
have_zeropipe=no
[ -n "${PS_PEER_ZEROPIPE:-}" ] && [ -d "${PS_PEER_ZEROPIPE}" ] && have_zeropipe=yes

echo "whole process, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc 2>/dev/null || echo '?') cores"
echo "load average before: $(loadavg)"
echo "peers installed here: torch_pp (PyTorch pipelining) $have_torch," \
    "ppviz $have_ppviz, zeropipe $have_zeropipe"
echo "peer ms: STORED, not measured in this run: whole-process times measured on" \
    "$stored_date on $stored_machine"
if [ "$have_torch$have_ppviz$have_zeropipe" != nonono ]; then
    echo "  (a peer is installed, but this script has no harness to run it: the column stays stored)"
fi
true_ms=$(median_ms /bin/true)
echo "process spawn alone (/bin/true), this run: $true_ms ms"
# family vpp peer-name peer seconds at 4x8 8x32 16x64 32x256 64x1024 (fastest whole process)
cat <<'PEERS' >/tmp/ps-peers.$$
1f1b 1 torch_pp:1F1B 0.08 0.09 0.10 0.23 1.64
gpipe 1 ppviz/torch:GPipe 0.09 0.09 0.11 0.37 3.08
interleaved 2 torch_pp:Interleaved1F1B(--no-lowering)/zeropipe 0.09 0.13 0.16 0.32 1.54
looped-bfs 2 torch_pp:LoopedBFS(--no-lowering) 0.11 0.11 0.22 1.84 27.75
PEERS

printf '%-12s %-9s %9s %9s %16s %16s\n' family "pp x m" "ours ms" "ours/true" \
    "stored peer ms" "stored/ours"
# shellcheck disable=SC2034 # peer: the name, kept for the reader of the table above
while read -r fam vpp peer a b c d e; do
    set -- "$a" "$b" "$c" "$d" "$e"
    for size in 4x8 8x32 16x64 32x256 64x1024; do
        p=${size%x*}
        m=${size#*x}
        ours=$(median_ms "$bin" simulate -s "$fam" -p "$p" -v "$vpp" -m "$m" --json)
        peer_s=$1
        shift
        ratio=$(awk -v o="$ours" -v s="$peer_s" 'BEGIN { printf "%.0fx", s * 1000 / o }')
        vs_true=$(awk -v o="$ours" -v t="$true_ms" 'BEGIN { printf "%.2f", o / t }')
        printf '%-12s %-9s %9s %9s %16s %16s\n' "$fam" "$size" "$ours" "$vs_true" \
            "$(awk -v s="$peer_s" 'BEGIN { printf "%.0f", s * 1000 }')" "$ratio"
    done
done </tmp/ps-peers.$$
rm -f /tmp/ps-peers.$$
echo "load average after: $(loadavg)"
echo "stored/ours divides a figure stored on $stored_date by one measured now: it is not a" \
    "same-run ratio; ours/true is."
