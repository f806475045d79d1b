#!/bin/sh
# The executor across MPI processes against the simulation (bench/README.md, "Executor over
# MPI"): docs/examples/mpi_host.c with emulated compute (each compute action sleeps its cost
# under f=b=w=1, c=0, times SCALE seconds) and every transfer between ranks an MPI message of
# the real 512-byte buffer, one process per pipeline rank. Prints each run's line (makespan
# error, mean start-time deviation, start skew) and the median and best error per case, next
# to the in-process executor's (`pipesched run`, all ranks threads of one process) on the
# same schedule, run alternately with the MPI runs so that both see the same load.
#
# usage: bench/mpi_bench.sh [BUILDDIR [REPS [SCALE]]]   (defaults: build 3 0.01)
set -eu
build=${1:-build}
reps=${2:-3}
scale=${3:-0.01}
host=$build/docs/examples/mpi-host
cli=$build/pipesched
if ! command -v mpirun >/dev/null || [ ! -x "$host" ] || [ ! -x "$cli" ]; then
    echo "mpi_bench: needs mpirun (openmpi-bin) and $host (a build with Open MPI and libuv)" >&2
    exit 2
fi
mpirun="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca pml ob1"
echo "executor over MPI vs simulation, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $scale s per unit"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in "4 1f1b 4 1 8" "4 interleaved 4 2 8" "4 zb-h1 4 1 8" "4 zb-v 4 2 8" \
    "4 dualpipev 4 2 8" "4 adaptive 4 2 8" "4 dualpipe 4 1 8" "2 zb-v 4 2 8"; do
    set -- $c
    np=$1
    shift
    errs=""
    local_errs=""
    i=0
    while [ $i -lt "$reps" ]; do
        line=$($mpirun -np "$np" "$host" "$@" --emulate "$scale")
        echo "  $line"
        errs="$errs $(echo "$line" | sed 's/.*error \([0-9.]*\)%.*/\1/')"
        local_errs="$local_errs $("$cli" run -s "$1" -p "$2" -v "$3" -m "$4" --time-scale "$scale" \
            --json | grep -o '"makespan_error": *[0-9.eE+-]*' | sed 's/.*: *//' |
            awk '{ printf "%.4f", 100 * $1 }')"
        i=$((i + 1))
    done
    for what in mpi local; do
        if [ $what = mpi ]; then list=$errs; label="over MPI, $np processes"; else
            list=$local_errs; label="in-process (pipesched run)"; fi
        echo "$list" | tr ' ' '\n' | grep . | sort -g | awk -v c="$*" -v l="$label" '
            { e[NR] = $1 }
            END { printf "%-18s %-27s makespan error median %6.2f%%, best %6.2f%% (%d runs)\n",
                         c, l, (NR % 2) ? e[(NR + 1) / 2] : (e[NR / 2] + e[NR / 2 + 1]) / 2, e[1], NR }'
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
