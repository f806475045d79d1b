#!/bin/sh
# pipesched tune across MPI processes (bench/README.md, "pipesched tune across processes"):
# the llama3-70b job on 1024 h100-sxm run by one process with 1 and 2 threads and under
# mpirun with 1, 2 and 4 processes of 1 thread (and 2 of 2), the configurations taking turns
# so that all see the same load. Per run: wall and CPU seconds (user + sys of the process
# tree, /usr/bin/time), and the search line's figures (simulated, pruned); per configuration
# the median wall and CPU time and candidates/s against the median wall time.
#
# usage: bench/tune_mpi.sh [BUILDDIR [REPS]]   (defaults: build 3)
set -eu
build=${1:-build}
reps=${2:-3}
cli=$build/pipesched
if ! command -v mpirun >/dev/null || [ ! -x "$cli" ] || [ ! -e "$build/libpipesched-tune-mpi.so" ]; then
    echo "tune_mpi: needs mpirun (openmpi-bin) and $cli built with Open MPI" >&2
    exit 2
fi
mpirun="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca pml ob1"
job="--model llama3-70b --hardware h100-sxm --gpus 1024 --gbs 1024 --seq 8192 --top 5"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "tune across processes, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
configs="1x1 1x2 np1x1 np2x1 np4x1 np2x2"
for r in $(seq "$reps"); do
    for c in $configs; do
        case $c in
        np*) np=${c#np}; np=${np%x*}; run="$mpirun -np $np $cli" ;;
        *) run="$cli" ;;
        esac
        th=${c#*x}
        /usr/bin/time -f "%e %U %S" -o "$tmp/time" $run tune $job --threads "$th" >"$tmp/out"
        set -- $(cat "$tmp/time")
        cpu=$(echo "$2 + $3" | bc)
        line=$(grep '^search:' "$tmp/out")
        sim=$(echo "$line" | sed -n 's/.* \([0-9]*\) simulated (.*/\1/p')
        pruned=$(echo "$line" | sed -n 's/.*), \([0-9]*\) pruned;.*/\1/p')
        cands=$(echo "$line" | sed -n 's/^search: \([0-9]*\) candidates.*/\1/p')
        echo "$c run $r: wall $1 s, cpu $cpu s, $sim simulated, $pruned pruned"
        echo "$1 $cpu $cands" >>"$tmp/$c"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "config (processes x threads)  median wall s  median cpu s  candidates/s (median wall)"
for c in $configs; do
    wall=$(cut -d' ' -f1 "$tmp/$c" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    cpu=$(cut -d' ' -f2 "$tmp/$c" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    cands=$(head -1 "$tmp/$c" | cut -d' ' -f3)
    printf "%-28s %14s %13s %13.0f\n" "$c" "$wall" "$cpu" "$(echo "$cands / $wall" | bc -l)"
done
