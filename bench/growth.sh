#!/bin/sh
# How the cost per action grows with the size (issue 13): pp16/vpp2/m64 -> pp32/vpp4/m256 ->
# pp128/vpp8/m4096 interleaved, 16x64 -> 128x4096 1F1B.
#
# 1. In process (pipesched-bench --growth): generate + validate + simulate into reused
#    handles, wall and CPU nanoseconds per action and their growth from the smallest size.
# 2. Instructions per action under callgrind (with --callgrind, or when CALLGRIND=1): the
#    load-independent figure. One scenario into reused handles is the difference between
#    `pipesched-bench --one ... 2` and `... 1` (the start-up and the first scenario's
#    allocations cancel out). About two minutes of valgrind on the largest size.
# 3. The whole process, `pipesched simulate ... --json` at the two largest sizes, three runs
#    each under /usr/bin/time: wall, user and system time, peak RSS and minor page faults
#    (the first touch of fresh memory). A second pipesched (another build's, e.g. of the
#    commit before a change) given as the third argument runs alternately in the same loop.
# The machine's load average is printed before and after: compare ratios within one run.
# Usage: bench/growth.sh [build-dir] [--callgrind] [other-pipesched]
set -eu
build=${1:-build}
cg=${CALLGRIND:-0}
[ "${2:-}" = --callgrind ] && cg=1
other=${3:-}
bin=$build/pipesched
bench=$build/bench/pipesched-bench

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }
# Instructions callgrind counts for pipesched-bench --one ARGS.
ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --one "$@" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}

echo "growth, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc 2>/dev/null || echo '?') cores"
echo "load average before: $(loadavg)"
"$bench" --growth | grep -v '^load average'

if [ "$cg" = 1 ] && command -v valgrind >/dev/null 2>&1; then
    echo "instructions per action (callgrind, one scenario into reused handles):"
    printf '  %-12s %-12s %10s %14s %10s\n' family pp/vpp/m actions "instr/action" growth
    base=
    prev=
    for size in "interleaved 16 2 64" "interleaved 32 4 256" "interleaved 128 8 4096" \
        "1f1b 16 1 64" "1f1b 128 1 4096"; do
        # shellcheck disable=SC2086 # size is four words on purpose
        set -- $size
        one=$(ir "$1" "$2" "$3" "$4" 1)
        two=$(ir "$1" "$2" "$3" "$4" 2)
        n=$("$bench" --one "$1" "$2" "$3" "$4" 1)
        per=$(awk -v a="$one" -v b="$two" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
        [ "$1" = "$prev" ] || base=$per
        prev=$1
        printf '  %-12s %-12s %10s %14s %9sx\n' "$1" "$2/$3/$4" "$n" "$per" \
            "$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%.2f", p / b }')"
    done
fi

echo "whole process, pipesched simulate ... --json (three runs each, /usr/bin/time):"
printf '  %-42s %8s %8s %8s %9s %9s\n' command "wall s" "user s" "sys s" "RSS MiB" "minflt"
run() { # run LABEL PIPESCHED ARGS...
    label=$1
    shift
    /usr/bin/time -f '%e %U %S %M %R' -o /tmp/ps-growth.$$ "$@" >/dev/null
    read -r w u s m f </tmp/ps-growth.$$
    printf '  %-42s %8s %8s %8s %9.0f %9s\n' "$label" "$w" "$u" "$s" "$((m / 1024))" "$f"
}
for args in "-s interleaved -p 128 -v 8 -m 4096" "-s 1f1b -p 128 -m 4096"; do
    for _ in 1 2 3; do
        # shellcheck disable=SC2086 # args are several words on purpose
        run "$args" "$bin" simulate $args --json
        if [ -n "$other" ]; then
            # shellcheck disable=SC2086
            run "(other) $args" "$other" simulate $args --json
        fi
    done
done
rm -f /tmp/ps-growth.$$
echo "load average after: $(loadavg)"
