#!/bin/sh
# CLI tests: exit codes (0 ok, 1 invalid schedule, 2 usage/input) and the headline figures.
# Usage: cli.sh PATH/TO/pipesched   (run from the tests/ folder)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect CODE DESCRIPTION -- COMMAND...
expect() {
    want=$1
    what=$2
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what: exit $got, expected $want"
        sed 's/^/    /' "$tmp/err" | head -5
    fi
}

# contains FILE TEXT DESCRIPTION
contains() {
    if grep -qF -- "$2" "$1"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $3: \"$2\" not found in:"
        head -5 "$1" | sed 's/^/    /'
    fi
}

for c in list generate simulate check demo; do
    expect 0 "$c --help" -- "$bin" "$c" --help
    contains "$tmp/out" "usage: pipesched $c" "$c --help text"
done
expect 0 "--help" -- "$bin" --help
expect 2 "no command" -- "$bin"
expect 2 "unknown command" -- "$bin" frobnicate
expect 0 "list" -- "$bin" list
contains "$tmp/out" "Interleaved1F1B" "list shows PyTorch aliases"
expect 0 "demo" -- "$bin" demo

expect 0 "interleaved 4x2x8" -- "$bin" simulate -s interleaved -p 4 -v 2 -m 8 --json
contains "$tmp/out" '"makespan":57,' "interleaved p4 v2 m8 makespan 57"
expect 0 "1f1b 16x64" -- "$bin" simulate -s 1f1b -p 16 -m 64 --json
contains "$tmp/out" '"makespan":237,' "1f1b p16 m64 makespan 237"
expect 0 "generate json" -- "$bin" generate -s Interleaved1F1B -p 4 -v 2 -m 8 --format json
contains "$tmp/out" '"placement":[0,1,2,3,0,1,2,3]' "json placement"

expect 2 "interleaved m < pp" -- "$bin" generate -s interleaved -p 4 -v 2 -m 3
contains "$tmp/err" "interleaved needs m >= pp when vpp > 1; got m=3, pp=4" "rejection reason"
expect 2 "bad integer" -- "$bin" generate -p four
contains "$tmp/err" '--pp needs an integer; got "four"' "bad integer message"
expect 2 "pp out of range" -- "$bin" generate -p 0
expect 2 "unknown option" -- "$bin" generate --bogus
expect 2 "missing value" -- "$bin" generate -p
expect 2 "unknown schedule" -- "$bin" generate -s zigzag
expect 2 "bad costs" -- "$bin" simulate --costs f=1,q=2
contains "$tmp/err" 'unknown key "q"' "costs key named"
expect 2 "bad format" -- "$bin" generate --format xml
expect 2 "missing config" -- "$bin" generate --config "$tmp/none.json"

expect 2 "option of another command" -- "$bin" generate --json
contains "$tmp/err" "generate does not take --json" "foreign option named"
expect 2 "list takes no pp" -- "$bin" list -p 4
expect 2 "check takes no schedule" -- "$bin" check x.csv -s 1f1b
expect 2 "timed csv" -- "$bin" generate --timed --format csv
expect 2 "group size on gpipe" -- "$bin" generate -s gpipe --group-size 4
contains "$tmp/err" "group_size applies to the interleaved family only" "group size refused"

# CSV out and back in.
expect 0 "csv out" -- "$bin" generate -s interleaved -p 4 -v 2 -m 8 --format csv -o "$tmp/s.csv"
expect 0 "check csv" -- "$bin" check "$tmp/s.csv" --json
contains "$tmp/out" '"makespan":57,' "check of exported CSV gives makespan 57"
expect 0 "csv-comms out" -- "$bin" generate -s 1f1b -p 4 -m 8 --format csv-comms -o "$tmp/c.csv"
expect 0 "check csv-comms" -- "$bin" check "$tmp/c.csv" --json
contains "$tmp/out" '"makespan":33,' "check of compute_comms CSV"
expect 0 "check pytorch artifact" -- "$bin" check data/zb1p_2rank_2stagep_compute.csv
expect 0 "check dualpipev artifact" -- "$bin" check data/dualpipev_4rank_10mb.csv --json
contains "$tmp/out" '"bubble":6,' "DualPipeV artifact bubble (p-1)(F&B+b+w-3w) = 6"

# Bad tables.
printf '0F0,0B0\n1B0,1F0\n' >"$tmp/dead.csv"
expect 1 "deadlock" -- "$bin" check "$tmp/dead.csv"
contains "$tmp/err" "rank 1: blocked at step 0 on 1B0" "deadlock names the blocked action"
printf '0F0,0B0\n1F0,1X0\n' >"$tmp/bad.csv"
expect 2 "malformed cell" -- "$bin" check "$tmp/bad.csv"
contains "$tmp/err" "line 2, column" "malformed cell position"
expect 2 "check without file" -- "$bin" check
expect 2 "check with -p" -- "$bin" check "$tmp/s.csv" -p 4

# Config files.
cat >"$tmp/cfg.json" <<'JSON'
{"schedule": "interleaved", "pp": 4, "vpp": 2, "microbatches": 8,
 "costs": {"f": 1, "b": 1, "w": 1, "c": 0}}
JSON
expect 0 "config" -- "$bin" simulate --config "$tmp/cfg.json" --json
contains "$tmp/out" '"makespan":57,' "config gives makespan 57"
expect 0 "flags override config" -- "$bin" simulate --config "$tmp/cfg.json" -m 16 --json
contains "$tmp/out" '"microbatches":16' "flag overrides config"
printf '{"schedule": "1f1b", "micro_batches": 8, "tensor_model_parallel_size": 2}' >"$tmp/unk.json"
expect 2 "unknown keys" -- "$bin" simulate --config "$tmp/unk.json"
contains "$tmp/err" "micro_batches" "unknown key named"
contains "$tmp/err" "microbatches" "did you mean"
printf '{"pp": 4,\n "vpp": }' >"$tmp/broken.json"
expect 2 "broken json" -- "$bin" simulate --config "$tmp/broken.json"
contains "$tmp/err" "line 2" "json error line"

# Traces and timed tables.
expect 0 "trace" -- "$bin" simulate -s 1f1b -p 2 -m 2 --trace "$tmp/t.json"
contains "$tmp/t.json" '"traceEvents"' "trace written"
expect 0 "timed" -- "$bin" generate -s 1f1b -p 2 -m 2 --timed
contains "$tmp/out" "rank 1 | .   1F0 1B0 +   1F1 1B1 +" "timed table"

# Emulated execution (only when the executor was built: `help run` succeeds).
if "$bin" help run >/dev/null 2>&1; then
    expect 0 "run" -- "$bin" run -s 1f1b -p 2 -m 4 --time-scale 0.002
    contains "$tmp/out" "makespan error" "run prints the makespan error"
    contains "$tmp/out" "simulated" "run prints the simulated metrics"
    expect 0 "run json" -- "$bin" run -s 1f1b -p 2 -m 4 --time-scale 0.002 --json --trace "$tmp/r.json"
    contains "$tmp/out" '"simulated": {"schedule":"1f1b","pp":2' "run json simulated"
    contains "$tmp/out" '"measured": {"schedule":"1f1b","pp":2' "run json measured"
    contains "$tmp/out" '"makespan_error":' "run json error"
    contains "$tmp/r.json" '"traceEvents"' "run trace written"
    expect 0 "run -o" -- "$bin" run -s 1f1b -p 2 -m 2 --time-scale 0.001 -o "$tmp/run.txt"
    contains "$tmp/run.txt" "makespan error" "run -o writes the comparison to the file"
    expect 2 "run bad time scale" -- "$bin" run --time-scale 0
    expect 2 "run with --timed" -- "$bin" run --timed
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
