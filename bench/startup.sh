#!/bin/sh
# Start-up cost of the command-line tool: `pipesched simulate -s 1f1b -p 4 -m 8` start to
# exit against /bin/true, measured in the same run, alternating the two so that the machine's
# load weighs on both alike; median of ROUNDS timings of 20 runs each (one date call per 20
# runs keeps the timer's own cost out). Then the shared libraries the binary loads and, when
# the C library supports it, the dynamic loader's own statistics (LD_DEBUG=statistics).
# A third argument names another pipesched (another build's, e.g. of the commit before a
# change), timed in the same loop: the before/after ratio then comes from one run. With
# valgrind installed, the instructions of one run of each (callgrind, the dynamic loader
# included) end the report: the figure that the machine's load does not move.
# Usage: bench/startup.sh [build-dir] [rounds] [other-pipesched]
set -eu
build=${1:-build}
rounds=${2:-15}
other=${3:-}
bin=$build/pipesched
tmp=${TMPDIR:-/tmp}/ps-startup.$$
trap 'rm -f "$tmp".*' EXIT

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }

# Microseconds per run of "$@" over 20 runs, appended to file $1.
time20() {
    out=$1
    shift
    t0=$(date +%s%N)
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        "$@" >/dev/null
    done
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 20000)) >>"$out"
}

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >"$tmp.true"
: >"$tmp.sim"
: >"$tmp.other"
echo "start-up, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc 2>/dev/null || echo '?') cores"
echo "load average before: $(loadavg)"
r=0
while [ "$r" -lt "$rounds" ]; do
    time20 "$tmp.true" /bin/true
    time20 "$tmp.sim" "$bin" simulate -s 1f1b -p 4 -m 8
    if [ -n "$other" ]; then
        time20 "$tmp.other" "$other" simulate -s 1f1b -p 4 -m 8
    fi
    r=$((r + 1))
done
t=$(median "$tmp.true")
s=$(median "$tmp.sim")
echo "load average after: $(loadavg)"
printf '%-44s %10s\n' "command (median of $rounds x 20 runs)" "us per run"
printf '%-44s %10s\n' "/bin/true" "$t"
printf '%-44s %10s\n' "pipesched simulate -s 1f1b -p 4 -m 8" "$s"
awk -v s="$s" -v t="$t" 'BEGIN { printf "ratio pipesched / true (same run): %.2f; difference %d us\n", s / t, s - t }'
if [ -n "$other" ]; then
    o=$(median "$tmp.other")
    printf '%-44s %10s\n' "$other (same command)" "$o"
    awk -v s="$s" -v o="$o" -v t="$t" 'BEGIN { printf "ratio other / true: %.2f; ratio pipesched / other: %.2f (same run)\n", o / t, s / o }'
    echo "shared libraries of the other (ldd | wc -l): $(ldd "$other" | wc -l)"
fi
echo "shared libraries (ldd $bin | wc -l): $(ldd "$bin" | wc -l)"
ldd "$bin" | awk '{ print "  " $1 }'
stats=$(LD_DEBUG=statistics "$bin" simulate -s 1f1b -p 4 -m 8 2>&1 >/dev/null |
    grep -E 'total startup time|time needed for relocation|number of relocations:|objects loaded' || true)
if [ -n "$stats" ]; then
    echo "dynamic loader (LD_DEBUG=statistics, one run):"
    echo "$stats" | sed 's/^[[:space:]]*[0-9]*:[[:space:]]*//; s/^/  /'
fi
stats=$(LD_DEBUG=statistics /bin/true 2>&1 >/dev/null |
    grep -E 'total startup time|objects loaded' || true)
if [ -n "$stats" ]; then
    echo "the same for /bin/true:"
    echo "$stats" | sed 's/^[[:space:]]*[0-9]*:[[:space:]]*//; s/^/  /'
fi
if command -v valgrind >/dev/null 2>&1; then
    ir() {
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
            sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
    }
    echo "instructions of one run (callgrind, dynamic loader included):"
    printf '  %-44s %12s\n' "/bin/true" "$(ir /bin/true)"
    printf '  %-44s %12s\n' "pipesched simulate -s 1f1b -p 4 -m 8" \
        "$(ir "$bin" simulate -s 1f1b -p 4 -m 8)"
    if [ -n "$other" ]; then
        printf '  %-44s %12s\n' "$other (same command)" "$(ir "$other" simulate -s 1f1b -p 4 -m 8)"
    fi
fi
