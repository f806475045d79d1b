#!/usr/bin/env bash
# Runs one libFuzzer target of a -Dfuzz=true build for a fixed time on top of its seed corpus
# (fuzz/corpus/<target>, read only: what the run finds goes to a scratch corpus) and prints
# one line: "fuzz <target>: pass|FAIL, <runs> runs in <s> s (<n>/s)". Exit 0 when the run
# found nothing, 1 when it crashed, leaked, timed out or ran out of memory (the input is then
# in <work>/crash-*, and the log in <work>/log).
#
#   fuzz/run.sh BUILD-DIR TARGET SECONDS [WORK-DIR] [-- LIBFUZZER-FLAGS...]
#
# The work directory (default /tmp/pipesched-fuzz/<target>) keeps the scratch corpus between
# runs, so a second run goes on from what the first found.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: fuzz/run.sh BUILD-DIR TARGET SECONDS [WORK-DIR] [-- FLAGS]" >&2; exit 2; }
build=$1 target=$2 secs=$3
shift 3
work=/tmp/pipesched-fuzz/$target
if [ $# -gt 0 ] && [ "$1" != "--" ]; then work=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
exe=$build/fuzz/fuzz-$target
[ -x "$exe" ] || { echo "fuzz $target: FAIL, no $exe (meson setup with -Dfuzz=true)"; exit 1; }
mkdir -p "$work/corpus"
# -timeout: one input taking seconds is a finding; -rss_limit_mb: well under the machine's.
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/" "$@" "$work/corpus" "fuzz/corpus/$target" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
took=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
if [ $rc -eq 0 ]; then
    echo "fuzz $target: pass, ${runs:-0} runs in $secs s (${took:-0}/s)"
    exit 0
fi
echo "fuzz $target: FAIL (exit $rc), ${runs:-?} runs; log $work/log"
grep -E -m 6 'invariant broken|ERROR: |runtime error|SUMMARY|Test unit written' "$work/log"
# The stack frames in pipesched's own code (not the sanitizer's or libFuzzer's).
grep -E '^ +#[0-9]+ .*/(src|schedules|fuzz)/[^ ]+\.[ch]:[0-9]' "$work/log" | head -10
exit 1
