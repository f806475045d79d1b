#!/bin/sh
# pipesched tune --csv before and after the stream (bench/README.md, "tune --csv as the
# search goes"): peak RSS, wall and CPU seconds (user + sys, /usr/bin/time) and the file's
# size for the llama3-70b job on 1024 h100-sxm and deepseek-v3 on 1024 h100-sxm, each run by
# the BEFORE program and the AFTER program taking turns, and the llama job under
# mpirun -np 3 (each rank's peak RSS). The CSV goes to a temporary directory (TMPDIR; the
# deepseek file is about 15 GB) and is removed after each run.
#
# usage: bench/tune_csv.sh BEFORE-BUILDDIR AFTER-BUILDDIR [THREADS]
# shellcheck disable=SC2086 # the jobs are words
set -eu
before=$1
after=$2
threads=${3:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "tune --csv, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, --threads $threads"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # NAME BUILD JOB...
    name=$1
    cli=$2/pipesched
    shift 2
    /usr/bin/time -v -o "$tmp/time" "$cli" tune "$@" --top 5 --threads "$threads" \
        --csv "$tmp/all.csv" >"$tmp/out" || echo "$name: exit status $?"
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
    user=$(sed -n 's/.*User time (seconds): //p' "$tmp/time")
    sys=$(sed -n 's/.*System time (seconds): //p' "$tmp/time")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time")
    size=$(stat -c %s "$tmp/all.csv" 2>/dev/null || echo 0)
    lines=$(wc -l <"$tmp/all.csv" 2>/dev/null || echo 0)
    echo "$name: peak RSS $rss kB, wall $wall, cpu $(echo "$user + $sys" | bc) s, csv $size bytes, $lines lines"
    rm -f "$tmp/all.csv"
}
llama="--model llama3-70b --hardware h100-sxm --gpus 1024 --gbs 1024 --seq 8192"
deepseek="--model deepseek-v3 --hardware h100-sxm --gpus 1024 --gbs 1024 --seq 4096"
run "llama3-70b before" "$before" $llama
run "llama3-70b after" "$after" $llama
run "deepseek-v3 before" "$before" $deepseek
run "deepseek-v3 after" "$after" $deepseek
if command -v mpirun >/dev/null; then
    for b in before after; do
        dir=$before
        [ $b = after ] && dir=$after
        # shellcheck disable=SC2016
        mpirun --allow-run-as-root --oversubscribe -np 3 sh -c \
            '/usr/bin/time -v -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$tmp/rank" "$dir/pipesched" \
            tune $llama --top 5 --threads 1 --csv "$tmp/all.csv" >/dev/null
        rss=$(for r in 0 1 2; do sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/rank.$r"; done | tr '\n' ' ')
        echo "llama3-70b mpirun -np 3 x 1 $b: peak RSS per rank (kB): $rss"
        rm -f "$tmp/all.csv"
    done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
