#!/bin/sh
# CLI tests: exit codes (0 ok, 1 invalid schedule, 2 usage/input) and the headline figures.
# Usage: cli.sh PATH/TO/pipesched   (run from the tests/ folder)
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
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

for c in list generate simulate check plan demo; do
    expect 0 "$c --help" -- "$bin" "$c" --help
    contains "$tmp/out" "usage: pipesched $c" "$c --help text"
done
expect 0 "--help" -- "$bin" --help
expect 2 "no command" -- "$bin"
# A command of subcommands: the next word picks one, which parses the rest.
expect 0 "balance --help" -- "$bin" balance --help
contains "$tmp/out" "usage: pipesched balance data|experts" "balance --help text"
contains "$tmp/out" "experts " "balance --help lists its subcommands"
expect 2 "balance without a subcommand" -- "$bin" balance
contains "$tmp/err" "balance needs a subcommand: data, experts" "balance names its subcommands"
expect 2 "balance unknown subcommand" -- "$bin" balance frob
contains "$tmp/err" 'unknown balance subcommand "frob" (data, experts)' "unknown subcommand named"
expect 2 "balance takes no options itself" -- "$bin" balance --json
contains "$tmp/err" "balance does not take --json" "the parent takes only --help"
for c in data experts; do
    expect 0 "balance $c --help" -- "$bin" balance "$c" --help
    contains "$tmp/out" "usage: pipesched balance $c" "balance $c --help text"
    expect 0 "help balance $c" -- "$bin" help balance "$c"
    contains "$tmp/out" "usage: pipesched balance $c" "help balance $c text"
done
expect 2 "help balance unknown" -- "$bin" help balance frob
expect 2 "balance data option of another command" -- "$bin" balance data --trace t.json
contains "$tmp/err" "balance data does not take --trace" "a subcommand's options are its own"
# balance experts (docs/balance.md): two hot experts on device 0 of the identity placement.
# 206 tokens over 4 devices: mean 51.5; the identity's device 0 carries 200 (3.883), the best
# placement 100 + 1 (1.961).
printf '100 100 1 1 1 1 1 1\n' >"$tmp/load.txt"
printf '# the identity\n0 0 1 1 2 2 3 3\n' >"$tmp/cur.txt"
expect 0 "balance experts" -- "$bin" balance experts --load "$tmp/load.txt" --devices 4 --nodes 2
contains "$tmp/out" "before 3.883, after 1.961" "balance experts: imbalance before and after"
cp "$tmp/out" "$tmp/placed.txt"
expect 0 "balance experts --json" -- "$bin" balance experts --load "$tmp/load.txt" --devices 4 \
    --nodes 2 --json
contains "$tmp/out" '"max_load": 101, "mean_load": 51.5, "before_max_load": 200' \
    "balance experts --json: the layer's loads"
contains "$tmp/out" '"layers": [' "balance experts --json: the layers"
# The migration: about 0.15 ms of expert GEMMs gained per step against some 10 ms of moving
# Mixtral experts over NVLink: one step does not pay, 100000 steps do.
mig="--model mixtral-8x7b --hardware h100-sxm --from $tmp/cur.txt"
expect 0 "balance experts --from, short horizon" -- "$bin" balance experts \
    --load "$tmp/load.txt" --devices 4 --nodes 2 $mig --horizon 1
contains "$tmp/out" ": keep" "a migration that does not pay is not made"
contains "$tmp/out" "migrated: 0 of 1 layers" "no layer migrated"
expect 0 "balance experts --from, long horizon" -- "$bin" balance experts \
    --load "$tmp/load.txt" --devices 4 --nodes 2 $mig --horizon 100000
contains "$tmp/out" ": migrate" "a migration that pays is made"
# The text output reads back as --from: the same loads move nothing.
expect 0 "balance experts --from its own output" -- "$bin" balance experts \
    --load "$tmp/load.txt" --devices 4 --nodes 2 --model mixtral-8x7b --hardware h100-sxm \
    --from "$tmp/placed.txt"
contains "$tmp/out" "0 experts to move" "the output reads back as the current placement"
# Bad input names the line.
printf '1 2 3 4\n5 6 -7 8\n' >"$tmp/neg.txt"
expect 2 "balance experts negative tokens" -- "$bin" balance experts --load "$tmp/neg.txt" --devices 2
contains "$tmp/err" "neg.txt: line 2, column 5: negative tokens \"-7\"" "negative tokens named"
printf '1 2 3 4\n5 6 7\n' >"$tmp/ragged.txt"
expect 2 "balance experts ragged trace" -- "$bin" balance experts --load "$tmp/ragged.txt" --devices 2
contains "$tmp/err" "line 2: a ragged trace: 3 experts, but line 1 has 4" "ragged trace named"
: >"$tmp/empty.txt"
expect 2 "balance experts empty trace" -- "$bin" balance experts --load "$tmp/empty.txt" --devices 2
contains "$tmp/err" "empty.txt: line 1: no data" "empty trace named"
expect 2 "balance experts more experts than slots" -- "$bin" balance experts \
    --load "$tmp/load.txt" --devices 4 --capacity 1
contains "$tmp/err" "more experts (8) than slots: 4 devices x capacity 1 = 4" "slots named"
expect 2 "balance experts --from without hardware" -- "$bin" balance experts \
    --load "$tmp/load.txt" --devices 4 --from "$tmp/cur.txt"
contains "$tmp/err" "--from needs --model and --hardware" "--from needs a model and hardware"
printf '0 0 1 1 2 2 3 9\n' >"$tmp/badcur.txt"
expect 2 "balance experts --from bad device" -- "$bin" balance experts --load "$tmp/load.txt" \
    --devices 4 $mig --from "$tmp/badcur.txt"
contains "$tmp/err" "layer 0 (its line), expert 7: device 9 is not an integer in [0, 3]" \
    "a bad current device named"
printf '0 0 1 1 2 2 3 1e30\n' >"$tmp/hugecur.txt"
expect 2 "balance experts --from huge device" -- "$bin" balance experts --load "$tmp/load.txt" \
    --devices 4 $mig --from "$tmp/hugecur.txt"
contains "$tmp/err" "expert 7: device 1e+30 is not an integer in [0, 3]" "a huge device named"
expect 2 "balance experts without a trace" -- "$bin" balance experts --devices 4
contains "$tmp/err" "needs --load FILE or --synthetic-experts SPEC" "the trace is required"
# Synthetic traces are reproducible.
syn="--synthetic-experts zipf:1.1,drift:0.05,seed:5,steps:10 --model mixtral-8x7b --devices 4 --json"
expect 0 "balance experts synthetic" -- "$bin" balance experts $syn
cp "$tmp/out" "$tmp/syn1.json"
expect 0 "balance experts synthetic again" -- "$bin" balance experts $syn
if cmp -s "$tmp/out" "$tmp/syn1.json"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    echo "FAIL: balance experts --synthetic-experts is not reproducible"
fi
expect 2 "balance experts synthetic bad spec" -- "$bin" balance experts \
    --synthetic-experts zipf:1,skew:2 --model mixtral-8x7b --devices 4
contains "$tmp/err" 'unknown key "skew"' "a bad synthetic spec named"
# balance data: four samples of one document each on 2 ranks x 2 micro-batches of 1f1b p=2.
printf '100\n400\n200\n300\n' >"$tmp/samples.txt"
expect 0 "balance data --json" -- "$bin" balance data --samples "$tmp/samples.txt" --dp 2 -m 2 \
    --cost a=0,c=1,d=0 -p 2 --json
contains "$tmp/out" '{"assignment":[[' "balance data: the assignment"
contains "$tmp/out" '"baseline_step_time":' "balance data: the baseline"
expect 0 "balance data text" -- "$bin" balance data --samples "$tmp/samples.txt" --dp 2 -m 2 \
    --cost a=0,c=1,d=0 -p 2
contains "$tmp/out" "gain +" "balance data: the gain"
printf '100\n4,-1\n' >"$tmp/bad-samples.txt"
expect 2 "balance data negative length" -- "$bin" balance data --samples "$tmp/bad-samples.txt" \
    --dp 1 -m 2 --cost a=0,c=1,d=0
contains "$tmp/err" "line 2, column 3: document length -1 is out of range" "negative length named"
printf '100\n4;5\n' >"$tmp/bad-samples.txt"
expect 2 "balance data malformed line" -- "$bin" balance data --samples "$tmp/bad-samples.txt" \
    --dp 1 -m 2 --cost a=0,c=1,d=0
contains "$tmp/err" 'line 2, column 1: "4;5" is not a document length' "malformed line named"
: >"$tmp/empty.txt"
expect 2 "balance data empty file" -- "$bin" balance data --samples "$tmp/empty.txt" --dp 1 -m 1 \
    --cost a=0,c=1,d=0
contains "$tmp/err" "no samples: the file is empty" "empty samples file named"
expect 2 "balance data without a cost" -- "$bin" balance data --samples "$tmp/samples.txt" \
    --dp 2 -m 2
contains "$tmp/err" "needs the sample model" "missing cost named"
expect 2 "balance data bad cost" -- "$bin" balance data --samples "$tmp/samples.txt" --dp 2 \
    -m 2 --cost a=0,c=-1,d=0
contains "$tmp/err" 'c must be a finite number >= 0; got "-1"' "bad cost named"
expect 2 "balance data uneven batch" -- "$bin" balance data --samples "$tmp/samples.txt" --dp 3 \
    -m 1 --cost a=0,c=1,d=0
contains "$tmp/err" "4 samples do not fill dp 3 x 1 micro-batches" "uneven batch named"
expect 0 "balance data with a model" -- "$bin" balance data --samples "$tmp/samples.txt" --dp 2 \
    -m 2 --model llama3-8b --hardware h100-sxm --json
contains "$tmp/out" '"step_time":' "balance data with a model: the step time"
expect 2 "unknown command" -- "$bin" frobnicate
expect 0 "list" -- "$bin" list
contains "$tmp/out" "Interleaved1F1B" "list shows PyTorch aliases"
expect 0 "demo" -- env -C "$tmp" "$bin" demo
contains "$tmp/out" "Adaptive Pipe on Pangu Ultra MoE 718B" "demo shows Adaptive Pipe on Pangu"
contains "$tmp/out" "hierarchical" "demo names the all-to-all choice"
contains "$tmp/out" "== EDPB on Pangu Ultra MoE 718B in seconds" "demo shows EDPB on Pangu"
contains "$tmp/out" "  Adaptive Pipe alone, imbalanced" "demo: the imbalanced step"
contains "$tmp/out" "  + expert placement" "demo: the step with the expert placement"
contains "$tmp/out" "  + data reordering" "demo: the step with the data reordering"
contains "$tmp/out" "reports +25.5% of its +72.6%" "demo compares with the published gain"
if "$bin" help draw >/dev/null 2>&1; then
    contains "$tmp/pipesched-demo-edpb-before.svg" "<svg" "demo: the timeline before the reordering"
    contains "$tmp/pipesched-demo-edpb-after.svg" "<svg" "demo: the timeline after the reordering"
fi

# plan: the overlap planner on a fused pair
cat >"$tmp/plan.json" <<'JSON'
{"schedule": "adaptive", "pp": 2, "vpp": 1, "microbatches": 4,
 "moe": {"layers": 2,
  "layer": {"attn": 2, "dispatch": 1, "mlp": 2, "combine": 1, "combine_b": 1, "mlp_dx": 2,
            "dispatch_b": 1, "attn_dx": 2, "mlp_dw": 2, "attn_dw": 1}}}
JSON
expect 0 "plan" -- "$bin" plan --config "$tmp/plan.json"
contains "$tmp/out" "duration 11.000  compute 11.000  all-to-all 4.000  exposed 0.000  overlap 100.0%" \
    "plan: hand-worked fused pair (tests/test-plan.c sim_moe_adaptive)"
contains "$tmp/out" "serial           15.000" "plan: serial comparison"
expect 0 "plan --json" -- "$bin" plan --config "$tmp/plan.json" --json --method megatron
contains "$tmp/out" '"pair":{"method":"megatron","forward_stage":0,"backward_stage":0,"duration":11,' \
    "plan json"
# JSON numbers: the shortest form that reads back exactly (it was %.9g: 2.0000000001 became 2).
sed 's/"attn": 2,/"attn": 2.0000000001,/' "$tmp/plan.json" >"$tmp/plan2.json"
expect 0 "plan --json, a duration of 11 digits" -- "$bin" plan --config "$tmp/plan2.json" --json
contains "$tmp/out" '"duration":11.0000000001,' "plan json keeps every digit of the duration"
contains "$tmp/out" '"start":0,"end":2.0000000001}' "plan json keeps every digit of a time"
contains "$tmp/out" '"comm":4,' "plan json: no float noise on a whole number"
expect 2 "plan without a MoE model" -- "$bin" plan -s 1f1b
contains "$tmp/err" "plan needs a MoE model" "plan without a model explained"
expect 2 "plan bad method" -- "$bin" plan --config "$tmp/plan.json" --method fastest
contains "$tmp/err" 'unknown planner method "fastest"' "bad method named"
expect 2 "plan stage out of range" -- "$bin" plan --config "$tmp/plan.json" --bstage 2
contains "$tmp/err" "--bstage 2 is out of range: the schedule has 2 model stages" "bad stage named"
expect 2 "plan takes no --timed" -- "$bin" plan --config "$tmp/plan.json" --timed
expect 0 "simulate with a MoE model" -- "$bin" simulate --config "$tmp/plan.json" --json
contains "$tmp/out" '"makespan":61,' "adaptive MoE makespan 61 (worked by hand in test-plan)"
contains "$tmp/out" '"steady":{"total":16,"exposed":0,"overlap":1}' "steady phase fully hidden"
# --costs with a MoE model: the planner gives the durations, so f, b, w and fb are ignored,
# and said so; c still applies and is not warned about.
expect 0 "simulate a MoE model with --costs" -- "$bin" simulate --config "$tmp/plan.json" \
    --costs f=2,b=3,c=0 --json
contains "$tmp/err" "warning: --costs f, b ignored: the config's MoE model gives the durations" \
    "--costs with a MoE model warned about"
contains "$tmp/out" '"makespan":61,' "--costs f, b do not change the MoE makespan"
expect 0 "simulate a MoE model with --costs c" -- "$bin" simulate --config "$tmp/plan.json" --costs c=1
if [ -s "$tmp/err" ]; then
    fail=$((fail + 1))
    echo "FAIL: --costs c=1 with a MoE model warned:"
    sed 's/^/    /' "$tmp/err"
else
    pass=$((pass + 1))
fi
expect 0 "simulate adaptive --split-backward" -- "$bin" simulate -s adaptive -p 4 -v 2 -m 8 \
    --split-backward --json
contains "$tmp/out" '"makespan":55,' "split backward saves (p-2)w = 2 of 57"
expect 2 "extra warm-up on 1f1b" -- "$bin" simulate -s 1f1b --extra-warmup 2
contains "$tmp/err" "extra_warmup applies to the adaptive family only" "extra warm-up refused"
# -s switches a config's family: its extra_warmup holding the default (1) does not block.
expect 0 "config family switched by -s" -- "$bin" simulate \
    --config ../docs/examples/pangu-ultra-moe-718b.json -s interleaved --json
contains "$tmp/out" '"schedule":"interleaved"' "the flag's family is simulated"
printf '{"schedule": "adaptive", "extra_warmup": 2}' >"$tmp/ew2.json"
expect 2 "a non-default extra_warmup still blocks" -- "$bin" simulate --config "$tmp/ew2.json" -s 1f1b
contains "$tmp/err" "extra_warmup applies to the adaptive family only" "extra_warmup 2 refused on 1f1b"
expect 2 "the flag still blocks" -- "$bin" simulate -s 1f1b --extra-warmup 1

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
expect 2 "duplicate costs key" -- "$bin" simulate --costs f=1,b=2,f=3
contains "$tmp/err" 'costs: duplicate key "f" at column 9' "duplicate costs key named"
expect 2 "duplicate memory key" -- "$bin" simulate --memory f=2,b=-1,w=-1,w=-1
contains "$tmp/err" 'memory: duplicate key "w"' "duplicate memory key named"
# Uneven micro-batches: 1f1b p=2 m=3, f=b=w=1, weights 1 2 0.5 (worked in test-sim.c): 15.
expect 0 "--mb-weights" -- "$bin" simulate -s 1f1b -p 2 -m 3 --mb-weights 1,2,0.5 --json
contains "$tmp/out" '"makespan":15,' "--mb-weights: the weighted makespan"
printf '0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n' >"$tmp/mbw.csv"
expect 0 "check --mb-weights" -- "$bin" check "$tmp/mbw.csv" --mb-weights 1,2,0.5 --json
contains "$tmp/out" '"makespan":15,' "check --mb-weights: the weighted makespan"
printf '{"microbatches": 3, "microbatch_weights": [1, 2, 0.5]}' >"$tmp/mbw.json"
expect 0 "config microbatch_weights" -- "$bin" simulate -p 2 --config "$tmp/mbw.json" --json
contains "$tmp/out" '"makespan":15,' "microbatch_weights: the weighted makespan"
expect 2 "--mb-weights count" -- "$bin" simulate -s 1f1b -p 2 -m 3 --mb-weights 1,2
contains "$tmp/err" "microbatch_weights has 2 entries but there are 3 micro-batches" "weight count named"
expect 2 "--mb-weights bad entry" -- "$bin" simulate -m 3 --mb-weights 1,-2,1
contains "$tmp/err" 'weight 1 (column 3) must be a finite number > 0' "bad weight named"
expect 2 "--json with --format table" -- "$bin" simulate --json -f table
contains "$tmp/err" "--json and --format table contradict each other" "json/table contradiction named"
expect 2 "check --json with --format csv" -- "$bin" check data/dualpipev_4rank_10mb.csv --json -f csv
contains "$tmp/err" "--json and --format csv contradict each other" "check: json/csv contradiction named"
expect 0 "--json with --format json" -- "$bin" simulate --json -f json -p 2 -m 2
contains "$tmp/out" '"metrics":{"makespan":' "--json -f json: the timed schedule with the metrics"
expect 0 "help --help" -- "$bin" help --help
contains "$tmp/out" "usage: pipesched help [COMMAND [SUBCOMMAND]]" "help --help prints help's usage"
expect 2 "simulate -o to a missing folder" -- "$bin" simulate -o "$tmp/none/m.txt"
contains "$tmp/err" "cannot write $tmp/none/m.txt: No such file or directory" "simulate -o says why"
expect 2 "plan -o to a missing folder" -- "$bin" plan --config "$tmp/plan.json" -o "$tmp/none/p.txt"
contains "$tmp/err" "cannot write $tmp/none/p.txt: No such file or directory" "plan -o says why"
if [ -w /dev/full ]; then
    expect 3 "simulate -o a full device" -- "$bin" simulate -o /dev/full
    contains "$tmp/err" "writing /dev/full failed: No space left on device" "full device named"
    expect 3 "simulate -f json -o a full device" -- "$bin" simulate -f json -o /dev/full
    contains "$tmp/err" "writing /dev/full failed: No space left on device" "full device named (export)"
fi
expect 2 "bad format" -- "$bin" generate --format xml
expect 2 "missing config" -- "$bin" generate --config "$tmp/none.json"

expect 2 "option of another command" -- "$bin" generate --json
contains "$tmp/err" "generate does not take --json" "foreign option named"
expect 2 "list takes no pp" -- "$bin" list -p 4
expect 2 "check takes no schedule" -- "$bin" check x.csv -s 1f1b
expect 2 "timed csv" -- "$bin" generate --timed --format csv
expect 2 "group size on gpipe" -- "$bin" generate -s gpipe --group-size 4
contains "$tmp/err" "group_size applies to the interleaved and adaptive families only" "group size refused"

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

# --width: timed tables with fractional costs are ~1500 characters a row without it.
frac="-s zb-h1 -p 4 -m 8 --costs f=1.3,b=1.7,w=0.9"
# shellcheck disable=SC2086
expect 0 "simulate -f table, fractional costs" -- "$bin" simulate $frac -f table
longest=$(awk 'NR > 1 && length($0) > n { n = length($0) } END { print n + 0 }' "$tmp/out")
# shellcheck disable=SC2086
expect 0 "simulate -f table --width 100" -- "$bin" simulate $frac -f table --width 100
narrow=$(awk 'NR > 1 && length($0) > n { n = length($0) } END { print n + 0 }' "$tmp/out")
if [ "$longest" -gt 1000 ] && [ "$narrow" -le 100 ] && [ "$narrow" -gt 50 ]; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    echo "FAIL: --width 100: rows of $narrow characters (without: $longest)"
fi
contains "$tmp/out" "(times rounded to the nearest column)" "--width says the times were rounded"
contains "$tmp/out" "rank 3 | .   .   3F0" "--width keeps the rows readable"
expect 0 "generate --timed --width 60" -- "$bin" generate -s 1f1b -p 2 -m 4 --timed --width 60
narrow=$(awk 'NR > 1 && length($0) > n { n = length($0) } END { print n + 0 }' "$tmp/out")
if [ "$narrow" -le 60 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL: generate --timed --width 60: rows of $narrow characters"
fi
expect 2 "--width without a timed table" -- "$bin" simulate --width 80
contains "$tmp/err" "--width 80 applies to the timed table only" "--width elsewhere refused"
expect 2 "--width too small" -- "$bin" simulate -f table --width 5
contains "$tmp/err" "--width must be in [20, 1000000]; got 5" "--width range named"

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

# SVG drawings (only when built with Graphviz: `help draw` succeeds).
# is_svg FILE DESCRIPTION: FILE exists and starts with <?xml or <svg.
is_svg() {
    if [ -f "$1" ] && head -c 5 "$1" | grep -q '^<?xml\|^<svg'; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $2: $1 is not an SVG file"
    fi
}
# absent FILE DESCRIPTION: a failed drawing leaves no file behind.
absent() {
    if [ -e "$1" ]; then
        fail=$((fail + 1))
        echo "FAIL: $2: $1 was written"
    else
        pass=$((pass + 1))
    fi
}
if "$bin" help draw >/dev/null 2>&1; then
    expect 0 "draw --help" -- "$bin" draw --help
    contains "$tmp/out" "usage: pipesched draw" "draw --help text"
    expect 0 "draw timeline" -- "$bin" draw --kind timeline -s 1f1b -p 4 -m 8 -o "$tmp/t.svg"
    is_svg "$tmp/t.svg" "draw timeline"
    contains "$tmp/t.svg" "makespan 33" "timeline title carries the makespan"
    expect 0 "draw default kind" -- "$bin" draw -s zb-h1 -p 4 -m 8 -o "$tmp/z.svg"
    is_svg "$tmp/z.svg" "draw without --kind draws a timeline"
    expect 0 "draw dag" -- "$bin" draw --kind dag -s interleaved -p 2 -v 2 -m 4 -o "$tmp/d.svg"
    is_svg "$tmp/d.svg" "draw dag"
    contains "$tmp/d.svg" "critical path" "dag title"
    expect 0 "draw to stdout" -- "$bin" draw -s 1f1b -p 2 -m 2 -o -
    is_svg "$tmp/out" "draw -o - writes the SVG to stdout"
    expect 2 "draw bad kind" -- "$bin" draw --kind pie -o "$tmp/pie.svg"
    contains "$tmp/err" 'unknown kind "pie"' "bad kind named"
    absent "$tmp/pie.svg" "draw bad kind"
    expect 2 "draw to a missing folder" -- "$bin" draw -o "$tmp/none/t.svg"
    contains "$tmp/err" "cannot write" "unwritable output named"
    expect 2 "draw without -o" -- "$bin" draw --kind timeline
    contains "$tmp/err" "draw needs -o FILE.svg" "missing -o"
    expect 2 "draw dag too large" -- "$bin" draw --kind dag -s 1f1b -p 16 -m 64 -o "$tmp/big.svg"
    contains "$tmp/err" "2048 actions" "too large dag refused"
    absent "$tmp/big.svg" "draw dag too large"
    expect 2 "draw bad schedule" -- "$bin" draw -s interleaved -p 4 -v 2 -m 3 -o "$tmp/bad.svg"
    expect 2 "draw takes no --json" -- "$bin" draw --json -o "$tmp/j.svg"
    expect 2 "draw overlap without a MoE model" -- "$bin" draw --kind overlap -o "$tmp/o.svg"
    contains "$tmp/err" "needs a MoE model" "overlap needs a MoE model"
    absent "$tmp/o.svg" "draw overlap without a MoE model"
    cat >"$tmp/moe.json" <<'JSON'
{"schedule": "1f1b", "pp": 4, "microbatches": 8,
 "moe": {"layers": 8, "dense_layers": 0,
  "layer": {"attn": 1, "dispatch": 0.8, "mlp": 1.5, "combine": 0.8, "combine_b": 0.8,
            "mlp_dx": 1.5, "dispatch_b": 0.8, "attn_dx": 1, "mlp_dw": 1.5, "attn_dw": 0.8}}}
JSON
    expect 0 "draw overlap" -- "$bin" draw --kind overlap --config "$tmp/moe.json" -o "$tmp/o.svg"
    is_svg "$tmp/o.svg" "draw overlap"
    contains "$tmp/o.svg" "overlap " "overlap title"
    # Large timelines: a window, and the whole run as busy/idle bands.
    big="-s interleaved -p 64 -v 2 -m 1024"
    # shellcheck disable=SC2086
    expect 0 "draw --overview, 64 ranks" -- "$bin" draw $big --overview -o "$tmp/ov.svg"
    is_svg "$tmp/ov.svg" "draw --overview"
    contains "$tmp/ov.svg" "overview: busy and idle bands per rank" "overview named in the title"
    contains "$tmp/ov.svg" "rank 63 &#160;idle " "overview: every rank, with its idle fraction"
    if grep -q "cut to stay small" "$tmp/ov.svg"; then
        fail=$((fail + 1))
        echo "FAIL: draw --overview was cut"
    else
        pass=$((pass + 1))
    fi
    # shellcheck disable=SC2086
    expect 0 "draw --from --to" -- "$bin" draw $big --from 3000 --to 3100 -o "$tmp/win.svg"
    contains "$tmp/win.svg" "window: time 3000&#45;3100 of 6333" "the window in the title"
    expect 2 "draw --to below --from" -- "$bin" draw --from 5 --to 4 -o "$tmp/w2.svg"
    contains "$tmp/err" "--to 4 must be above --from 5" "a reversed window named"
    expect 2 "draw --overview of a dag" -- "$bin" draw --kind dag --overview -o "$tmp/w3.svg"
    contains "$tmp/err" "apply to --kind timeline" "--overview on another kind refused"
    expect 2 "draw --from past the end" -- "$bin" draw -s 1f1b -p 2 -m 2 --from 100 -o "$tmp/w4.svg"
    contains "$tmp/err" "the window starts at 100, at or after the end of the run (9)" \
        "a window after the run named"
    absent "$tmp/w4.svg" "draw --from past the end"
    expect 2 "draw overlap bad stage" -- "$bin" draw --kind overlap --config "$tmp/moe.json" \
        --fstage 9 -o "$tmp/o2.svg"
fi

# One option table drives the parser, the help and the guide.
# same FILE1 FILE2 DESCRIPTION: the two files are equal.
same() {
    if cmp -s "$1" "$2"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $3: the outputs differ:"
        diff "$1" "$2" | head -5 | sed 's/^/    /'
    fi
}
# Megatron-LM's names are aliases of --pp, --vpp and --group-size.
expect 0 "short names" -- "$bin" generate -s interleaved -p 4 -v 2 -m 8 --group-size 4 --format json
cp "$tmp/out" "$tmp/short.json"
expect 0 "Megatron-LM names" -- "$bin" generate -s interleaved --pipeline-model-parallel-size 4 \
    --virtual-pipeline-model-parallel-size 2 -m 8 \
    --microbatch-group-size-per-virtual-pipeline-stage 4 --format json
same "$tmp/short.json" "$tmp/out" "the aliases give the output of the short names"
expect 0 "simulate with aliases" -- "$bin" simulate -s interleaved --pipeline-model-parallel-size=4 \
    --virtual-pipeline-model-parallel-size=2 -m 8 --json
contains "$tmp/out" '"makespan":57,' "aliases: interleaved p4 v2 m8 makespan 57"
expect 0 "help shows aliases" -- "$bin" help simulate
contains "$tmp/out" "also: --pipeline-model-parallel-size" "help names the pp alias"
contains "$tmp/out" "also: --virtual-pipeline-model-parallel-size" "help names the vpp alias"
contains "$tmp/out" "also: --microbatch-group-size-per-virtual-pipeline-stage" "help names the group alias"
# The silent defaults are in the help and in the output's header.
awk '/--schedule/ { getline; print; exit }' "$tmp/out" >"$tmp/def"
contains "$tmp/def" "default: 1f1b" "help simulate gives -s's default"
awk '/--pp N/ { getline; print; exit }' "$tmp/out" >"$tmp/def"
contains "$tmp/def" "default: 4" "help simulate gives -p's default"
contains "$tmp/out" "default: 8" "help simulate gives -m's default"
expect 0 "help estimate" -- "$bin" help estimate
awk '/--pp N/ { getline; print; exit }' "$tmp/out" >"$tmp/def"
contains "$tmp/def" "required" "help estimate: -p is required there"
expect 0 "simulate with the defaults" -- "$bin" simulate
contains "$tmp/out" "defaults (not given): -s 1f1b, -p 4, -m 8" "the header names the defaults"
# The two idle measures are labelled: zb-h2 has no idle inside a rank's span and 11% idle overall.
expect 0 "simulate zb-h2" -- "$bin" simulate -s zb-h2 -p 4 -m 8
contains "$tmp/out" "makespan 27  bubble 0 (largest idle of a rank)  bubble_ratio 0.1111 (idle fraction)" \
    "bubble and bubble_ratio say what they measure"
expect 0 "simulate with -p" -- "$bin" simulate -p 2
contains "$tmp/out" "defaults (not given): -s 1f1b, -m 8" "the header names the defaults left"
expect 0 "simulate with a config" -- "$bin" simulate --config "$tmp/cfg.json"
if grep -q "defaults" "$tmp/out"; then
    fail=$((fail + 1))
    echo "FAIL: a config giving -s, -p and -m still lists defaults"
else
    pass=$((pass + 1))
fi
expect 2 "alias out of range" -- "$bin" generate --pipeline-model-parallel-size 0
contains "$tmp/err" "--pipeline-model-parallel-size must be in [1, 4096]; got 0" "alias range message"
expect 2 "alias of a foreign option" -- "$bin" list --pipeline-model-parallel-size 4
contains "$tmp/err" "list does not take --pipeline-model-parallel-size (see pipesched list --help)" \
    "foreign alias named"
# The messages come from the table's ranges and types.
expect 2 "pp 0" -- "$bin" generate -p 0
contains "$tmp/err" "--pp must be in [1, 4096]; got 0" "int range message"
expect 2 "missing value named" -- "$bin" simulate --pp
contains "$tmp/err" "--pp needs a value" "missing value message"
expect 2 "unknown option named" -- "$bin" simulate --bogus
contains "$tmp/err" "unknown option --bogus" "unknown option message"
expect 2 "flag with a value" -- "$bin" simulate --json=1
contains "$tmp/err" "--json takes no value" "flag value refused (it used to say: unknown option -j)"
expect 2 "ambiguous prefix" -- "$bin" generate --micro 8
contains "$tmp/err" "--micro is ambiguous: --microbatches --microbatch-group-size" "ambiguous prefix named"
expect 2 "mem-limit not a number" -- "$bin" simulate --mem-limit 1x
contains "$tmp/err" '--mem-limit needs a decimal number; got "1x"' "decimal message"
expect 2 "mem-limit out of range" -- "$bin" simulate --mem-limit 2e12
contains "$tmp/err" "--mem-limit must be in [0, 1e+12] (0 = none); got 2e12" "decimal range message"
expect 2 "unknown format named" -- "$bin" simulate --format xml
contains "$tmp/err" 'unknown format "xml" (table, json, csv, csv-comms)' "choice message"
# `pipesched --help` lists the built commands in a stable order.
order="list generate simulate check"
"$bin" help run >/dev/null 2>&1 && order="$order run"
order="$order plan estimate tune balance"
"$bin" help draw >/dev/null 2>&1 && order="$order draw"
order="$order demo help"
expect 0 "--help lists the commands" -- "$bin" --help
got=$(awk '/^commands:/ { on = 1; next } !NF { on = 0 } on { printf "%s%s", sep, $1; sep = " " }' \
    "$tmp/out")
if [ "$got" = "$order" ]; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    echo "FAIL: pipesched --help lists \"$got\", expected \"$order\""
fi

# estimate: a real model on real hardware (the figures are the suites' business; here the
# command line: required options, names, files, errors, JSON keys, Megatron-LM's names).
est="--model llama3-8b --hardware h100-sxm --gpus 16 --tp 2 --pp 2 --gbs 32 --mbs 1 --seq 4096"
# shellcheck disable=SC2086
expect 0 "estimate" -- "$bin" estimate $est
contains "$tmp/out" "step time" "estimate prints the step time"
contains "$tmp/out" "memory per pipeline rank, GiB:" "estimate prints the memory by rank"
# shellcheck disable=SC2086
expect 0 "estimate --json" -- "$bin" estimate $est --json
for key in step_time_s tokens_per_s_per_gpu mfu model_tflops_per_gpu bubble_s peak_gib \
    weights_gib grads_gib optimizer_gib activations_gib total_gib fits; do
    contains "$tmp/out" "\"$key\":" "estimate --json has $key"
done
cp "$tmp/out" "$tmp/est-short.json"
expect 0 "estimate, Megatron-LM names" -- "$bin" estimate --model llama3-8b --hardware h100-sxm \
    --gpus 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --global-batch-size 32 --micro-batch-size 1 --seq-length 4096 --json
same "$tmp/est-short.json" "$tmp/out" "estimate: Megatron-LM's names give the same estimate"
expect 0 "estimate from a HuggingFace config and a hardware file" -- "$bin" estimate \
    --model data/hf/tinyllama-1.1b.json --hardware data/hw/h100-94g.json --gpus 8 --tp 1 \
    --pp 2 --gbs 16 --mbs 1 --seq 2048
# An HF config's problem names its key, in the file's own terms: a JSON path for a bad value,
# the file's line and column for bad JSON (line 2: "  \"num_attention_heads\" 8" stops at the
# 8, column 25).
printf '{"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128,\n  "num_attention_heads": "8", "vocab_size": 100, "hidden_act": "silu"}' >"$tmp/hf-bad.json"
expect 2 "estimate, a bad value in an HF config file" -- "$bin" estimate \
    --model "$tmp/hf-bad.json" --hardware h100-sxm --gpus 1 --tp 1 --pp 1 --gbs 1 --mbs 1 --seq 64
contains "$tmp/err" "hf-bad.json: \$.num_attention_heads: expected a positive integer, got string \"8\"" \
    "estimate names the HF file's key by its path"
printf '{"num_hidden_layers": 2,\n  "num_attention_heads" 8}' >"$tmp/hf-bad.json"
expect 2 "estimate, malformed HF config file" -- "$bin" estimate \
    --model "$tmp/hf-bad.json" --hardware h100-sxm --gpus 1 --tp 1 --pp 1 --gbs 1 --mbs 1 --seq 64
contains "$tmp/err" "hf-bad.json: line 2, column 25: malformed JSON" \
    "estimate gives the HF file's own line and column"
printf '{"model": {"hf": {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": "8", "vocab_size": 100, "hidden_act": "silu"}}, "hardware": "h100-sxm"}' >"$tmp/estcfg-hf.json"
expect 2 "estimate --config, a bad value in the inline HF config" -- "$bin" estimate \
    --config "$tmp/estcfg-hf.json" --gpus 1 --tp 1 --pp 1 --gbs 1 --mbs 1 --seq 64
contains "$tmp/err" "estcfg-hf.json: \$.model.hf.num_attention_heads: expected a positive integer, got string \"8\"" \
    "estimate --config names the inline HF config's key by its path"
expect 2 "estimate without its required options" -- "$bin" estimate --model llama3-8b
contains "$tmp/err" "estimate needs --hardware, --gpus, --tp, --pp, --gbs, --mbs, --seq" \
    "estimate names every missing option"
# shellcheck disable=SC2086
expect 2 "estimate, unknown model" -- "$bin" estimate $est --model llama-9000
contains "$tmp/err" 'is neither a built-in (' "estimate lists the built-in models"
# shellcheck disable=SC2086
expect 2 "estimate, gpus not divisible" -- "$bin" estimate $est --gpus 10
# shellcheck disable=SC2086
expect 2 "estimate, bad precision" -- "$bin" estimate $est --precision fp4
expect 2 "estimate option elsewhere" -- "$bin" simulate --gbs 8
# estimate --config: the file, then the flags; the required settings from either.
estcfg=../docs/examples/estimate-llama3-70b.json
expect 0 "estimate --config" -- "$bin" estimate --config "$estcfg" --json
contains "$tmp/out" '"microbatches":64,' "estimate --config: gbs 128 / (dp 2 x mbs 1) micro-batches"
expect 0 "estimate --config, a flag overrides the file" -- "$bin" estimate --config "$estcfg" \
    --gbs 256 --json
contains "$tmp/out" '"microbatches":128,' "estimate --config --gbs 256 doubles the micro-batches"
printf '{"model": "llama3-8b", "hardware": "h100-sxm", "train": {"tpp": 2}}' >"$tmp/estcfg.json"
expect 2 "estimate --config, unknown key" -- "$bin" estimate --config "$tmp/estcfg.json"
contains "$tmp/err" '$.train.tpp: unknown key (did you mean "tp"?)' \
    "estimate --config names the unknown key"
printf '{"model": "llama3-8b", "hardware": "h100-sxm", "train": {"tp": 2}}' >"$tmp/estcfg.json"
expect 2 "estimate --config without the job's shape" -- "$bin" estimate --config "$tmp/estcfg.json"
contains "$tmp/err" "estimate needs --gpus, --pp, --gbs, --mbs, --seq" \
    "estimate --config: the required settings from the file and the flags together"
expect 0 "estimate --config, the rest from flags" -- "$bin" estimate --config "$tmp/estcfg.json" \
    --gpus 8 --pp 2 --gbs 8 --mbs 1 --seq 2048
# estimate with the imbalance (docs/balance.md, "In the estimate"): $est is dp 4 x 8
# micro-batches x mbs 1 = 32 samples. Figures are the edpb suite's business.
i=0
: >"$tmp/est-samples.txt"
while [ $i -lt 32 ]; do
    if [ $((i % 4)) -eq 0 ]; then echo 4096 >>"$tmp/est-samples.txt"
    else echo 512,512,512,512,512,512,512,512 >>"$tmp/est-samples.txt"; fi
    i=$((i + 1))
done
# shellcheck disable=SC2086
expect 0 "estimate --samples" -- "$bin" estimate $est --samples "$tmp/est-samples.txt"
contains "$tmp/out" "  samples          32, the heaviest replica" "estimate --samples: the inputs"
contains "$tmp/out" "  no balancing" "estimate --samples: the step without balancing"
contains "$tmp/out" "  data reordered" "estimate --samples: the step reordered"
contains "$tmp/out" "balancing gains" "estimate --samples: the gain"
# shellcheck disable=SC2086
expect 0 "estimate --samples --json" -- "$bin" estimate $est --samples "$tmp/est-samples.txt" --json
for key in step_time_s even_step_time_s unbalanced_step_time_s experts_placed_step_time_s \
    balanced_step_time_s replica_weight_max replica_weight_max_reordered; do
    contains "$tmp/out" "\"$key\":" "estimate --samples --json has $key"
done
# Every existing field is the even estimate's, unchanged.
sed 's/,"imbalance":{.*}}$/}/' "$tmp/out" >"$tmp/est-imb.json"
same "$tmp/est-short.json" "$tmp/est-imb.json" "estimate --samples keeps the even estimate's fields"
# Uniform samples: exactly the even step time, balanced or not.
yes 4096 | head -32 >"$tmp/est-uniform.txt"
# shellcheck disable=SC2086
expect 0 "estimate uniform samples" -- "$bin" estimate $est --samples "$tmp/est-uniform.txt" --json
even=$(sed 's/.*"even_step_time_s":\([^,]*\),.*/\1/' "$tmp/out")
contains "$tmp/out" "\"unbalanced_step_time_s\":$even," "uniform samples: unbalanced = even"
contains "$tmp/out" "\"balanced_step_time_s\":$even," "uniform samples: balanced = even"
# shellcheck disable=SC2086
expect 0 "estimate --synthetic-samples" -- "$bin" estimate $est --synthetic-samples \
    lognormal:7,1.5,seed:4 --json
cp "$tmp/out" "$tmp/est-syn.json"
# shellcheck disable=SC2086
expect 0 "estimate --synthetic-samples again" -- "$bin" estimate $est --synthetic-samples \
    lognormal:7,1.5,seed:4 --json
same "$tmp/est-syn.json" "$tmp/out" "estimate --synthetic-samples is reproducible"
# shellcheck disable=SC2086
expect 2 "estimate --samples, too few" -- "$bin" estimate $est --samples "$tmp/est-uniform.txt" \
    --gbs 64
contains "$tmp/err" "samples: 32 given; the global batch is dp 4 x 16 micro-batches x mbs 1 = 64" \
    "estimate names the sample count"
: >"$tmp/est-empty.txt"
# shellcheck disable=SC2086
expect 2 "estimate --samples, empty file" -- "$bin" estimate $est --samples "$tmp/est-empty.txt"
contains "$tmp/err" "no samples: the file is empty" "estimate: empty samples file named"
printf '4096\n12,-3\n' >"$tmp/est-neg.txt"
# shellcheck disable=SC2086
expect 2 "estimate --samples, negative length" -- "$bin" estimate $est --samples "$tmp/est-neg.txt"
contains "$tmp/err" "line 2, column 4: document length -3 is out of range" \
    "estimate: negative length named by line and column"
# shellcheck disable=SC2086
expect 2 "estimate --synthetic-samples, bad spec" -- "$bin" estimate $est --synthetic-samples \
    lognormal:7,1,spread:2
contains "$tmp/err" 'unknown word "spread:2"' "estimate: bad synthetic spec names the word"
# shellcheck disable=SC2086
expect 2 "estimate --samples and --synthetic-samples" -- "$bin" estimate $est --samples \
    "$tmp/est-uniform.txt" --synthetic-samples lognormal:7,1
# shellcheck disable=SC2086
expect 2 "estimate --theta without a trace" -- "$bin" estimate $est --theta 0.5
contains "$tmp/err" "--theta is the EMA of an expert load" "estimate: --theta alone refused"
# The experts: mixtral-8x7b at ep 2.
moe="--model mixtral-8x7b --hardware h100-sxm --gpus 16 --tp 1 --pp 2 --ep 2 --gbs 16 --mbs 1"
moe="$moe --seq 4096"
# shellcheck disable=SC2086
expect 0 "estimate --synthetic-experts" -- "$bin" estimate $moe --synthetic-experts zipf:1.2 \
    --synthetic-samples lognormal:7,1.5
contains "$tmp/out" "max/mean device load" "estimate --synthetic-experts: the imbalance"
contains "$tmp/out" "  experts placed" "estimate --synthetic-experts: the placed step"
contains "$tmp/out" "  and data reordered" "estimate: both balancings"
printf '1,2,3,4,5,6,7,8\n1,2,3\n' >"$tmp/est-ragged.txt"
# shellcheck disable=SC2086
expect 2 "estimate --expert-load, ragged trace" -- "$bin" estimate $moe --expert-load \
    "$tmp/est-ragged.txt"
contains "$tmp/err" "line 2" "estimate: ragged trace named by its line"
printf '1,2,3,4\n' >"$tmp/est-4.txt"
# shellcheck disable=SC2086
expect 2 "estimate --expert-load, other experts" -- "$bin" estimate $moe --expert-load \
    "$tmp/est-4.txt"
contains "$tmp/err" "the trace has 1 layers of 4 experts; model mixtral-8x7b has 32 MoE layers" \
    "estimate: a trace of other experts named"
# estimate --trace and --svg: the simulated step on a time axis in seconds (the times
# themselves are the estimate suite's business).
# shellcheck disable=SC2086
expect 0 "estimate --trace" -- "$bin" estimate $est --trace "$tmp/est-trace.json"
contains "$tmp/out" "step time" "estimate --trace still prints the estimate"
contains "$tmp/est-trace.json" '"traceEvents"' "estimate --trace written"
contains "$tmp/est-trace.json" '"args":{"name":"rank 1"}' "estimate trace names the ranks"
contains "$tmp/est-trace.json" '"name":"1F0","cat":"forward"' \
    "estimate trace names stage, kind and micro-batch"
contains "$tmp/est-trace.json" '"name":"optimizer step","cat":"optimizer"' \
    "estimate trace ends with the optimizer step"
contains "$tmp/est-trace.json" '"name":"DP communication (exposed)","cat":"data_parallel"' \
    "estimate trace has the exposed DP communication (dp 4)"
# shellcheck disable=SC2086
expect 2 "estimate --trace to a missing folder" -- "$bin" estimate $est --trace "$tmp/none/t.json"
contains "$tmp/err" "cannot write $tmp/none/t.json: No such file or directory" \
    "estimate --trace names the unwritable file"
if "$bin" help draw >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    expect 0 "estimate --svg" -- "$bin" estimate $est --svg "$tmp/est.svg" --trace "$tmp/e2.json"
    is_svg "$tmp/est.svg" "estimate --svg"
    contains "$tmp/est.svg" "time (s)" "estimate --svg: the axis in seconds"
    contains "$tmp/est.svg" " s &#160;&#160;bubble " "estimate --svg: the makespan in seconds"
    same "$tmp/est-trace.json" "$tmp/e2.json" "estimate --trace with --svg: the same trace"
    # shellcheck disable=SC2086
    expect 2 "estimate --svg to a missing folder" -- "$bin" estimate $est --svg "$tmp/none/e.svg"
    contains "$tmp/err" "cannot write $tmp/none/e.svg: No such file or directory" \
        "estimate --svg names the unwritable file"
else
    # shellcheck disable=SC2086
    expect 2 "estimate --svg without Graphviz" -- "$bin" estimate $est --svg "$tmp/est.svg"
    contains "$tmp/err" "built without Graphviz" "estimate --svg says what the build lacks"
    absent "$tmp/est.svg" "estimate --svg without Graphviz"
fi
# Flag over file, key by key, after one load of the file: the example's gpus 64 / (tp 4 x pp 4
# x cp 2) = dp 2; --gpus 128 makes dp 4, and the file's gbs 128 and mbs 1 stay: 128 / (4 x 1)
# = 32 micro-batches. A required key the file names is given, flag or no flag.
expect 0 "estimate --config, a flag overrides a required key of the file" -- "$bin" estimate \
    --config "$estcfg" --gpus 128 --json
contains "$tmp/out" '"dp":4,"microbatches":32,' \
    "estimate --config --gpus 128: dp 4, the file's gbs 128 and mbs 1 kept"
expect 0 "estimate --config, another flag leaves the file's keys" -- "$bin" estimate \
    --config "$estcfg" --mbs 2 --json
contains "$tmp/out" '"dp":2,"microbatches":32,' \
    "estimate --config --mbs 2: the file's gpus 64 and gbs 128 kept, 128 / (2 x 2)"

# tune: the search (the answers are test-tune's business; here the command line: output,
# determinism across threads, the reproduction command, CSV, JSON, errors).
tune="--model llama3-8b --hardware h100-sxm --gpus 8 --gbs 16 --seq 4096 --max pp=4"
expect 0 "tune --help" -- "$bin" tune --help
contains "$tmp/out" "usage: pipesched tune" "tune --help text"
# shellcheck disable=SC2086
expect 0 "tune" -- "$bin" tune $tune --top 3 --threads 1
contains "$tmp/out" "top 3 by step time:" "tune prints the ranking"
contains "$tmp/out" "Pareto front, step time against peak memory:" "tune prints the front"
contains "$tmp/out" "gbs not divisible by dp*mbs" "tune counts the rejections by reason"
contains "$tmp/out" "pipesched estimate --model llama3-8b --hardware h100-sxm --gpus 8" \
    "tune names the estimate command of each row"
grep -v '^search:' "$tmp/out" >"$tmp/tune-1"
for th in 2 4; do
    # shellcheck disable=SC2086
    expect 0 "tune --threads $th" -- "$bin" tune $tune --top 3 --threads $th
    grep -v '^search:' "$tmp/out" >"$tmp/tune-$th"
    same "$tmp/tune-1" "$tmp/tune-$th" "tune: $th threads print what 1 thread prints"
done
# shellcheck disable=SC2086
expect 0 "tune --no-prune" -- "$bin" tune $tune --top 3 --no-prune
grep -v '^search:' "$tmp/out" >"$tmp/tune-np"
same "$tmp/tune-1" "$tmp/tune-np" "tune: pruning off prints the same answer"
# shellcheck disable=SC2086
expect 0 "tune --json --csv" -- "$bin" tune $tune --top 2 --json --csv "$tmp/all.csv"
for key in search top front rejected candidates simulated pruned seconds candidates_per_s \
    simulated_per_s step_time_s peak_gib headroom_gib gap command; do
    contains "$tmp/out" "\"$key\":" "tune --json has $key"
done
cands=$(sed -n 's/.*"candidates":\([0-9]*\).*/\1/p' "$tmp/out")
if [ "$(wc -l <"$tmp/all.csv")" -eq $((cands + 1)) ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: tune --csv has not one line per candidate ($cands)"; fi
# The first row's command reproduces its step time.
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's first command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's command reproduces the step time $step"
# --csv is written as the search goes (docs/tune.md): without pruning the same file on 1, 2
# and 4 threads; a path that cannot be opened fails before the search (exit 2); a write that
# fails (a full device; a file over the size limit, removed) exits 3 naming the file.
for th in 1 2 4; do
    # shellcheck disable=SC2086
    expect 0 "tune --csv --threads $th" -- "$bin" tune $tune --top 2 --no-prune --threads $th \
        --csv "$tmp/np-$th.csv"
done
same "$tmp/np-1.csv" "$tmp/np-2.csv" "tune --csv: 2 threads write what 1 thread writes"
same "$tmp/np-1.csv" "$tmp/np-4.csv" "tune --csv: 4 threads write what 1 thread writes"
# shellcheck disable=SC2086
expect 2 "tune --csv in no directory" -- "$bin" tune $tune --csv "$tmp/nodir/all.csv"
contains "$tmp/err" "cannot write $tmp/nodir/all.csv" "tune --csv: the path that cannot be written"
if [ -w /dev/full ]; then
    # shellcheck disable=SC2086
    expect 3 "tune --csv /dev/full" -- "$bin" tune $tune --threads 2 --csv /dev/full
    contains "$tmp/err" "writing /dev/full failed: No space left on device" \
        "tune --csv: a full device named"
fi
# shellcheck disable=SC2086
expect 3 "tune --csv over the file size limit" -- sh -c 'trap "" XFSZ; ulimit -f 64; exec "$@"' \
    sh "$bin" tune $tune --threads 2 --csv "$tmp/big.csv"
contains "$tmp/err" "writing $tmp/big.csv failed: File too large (the file is removed)" \
    "tune --csv: a failed write named, the partial file removed"
if [ -e "$tmp/big.csv" ]; then fail=$((fail + 1)); echo "FAIL: tune --csv left a partial file"; else
    pass=$((pass + 1)); fi
# Recompute fit: the row names its layer count and its command (--recompute-layers) reproduces it.
expect 0 "tune recompute=fit" -- "$bin" tune --model llama3-70b --hardware h100-sxm --gpus 64 \
    --gbs 128 --seq 8192 --top 1 --json --allow precision=fp8 \
    --fix tp=4,pp=8,vpp=5,cp=1,mbs=1,schedule=interleaved,recompute=fit
contains "$tmp/out" '"recompute":"fit"' "tune ranks a recompute fit row"
contains "$tmp/out" "--recompute full --recompute-layers " "tune's fit command sets the layers"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's fit command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's fit command reproduces the step time $step"
# Layout auto (--allow): the automatic partition ranks first here and its command reproduces it.
expect 0 "tune --allow layout=balanced,auto" -- "$bin" tune --model pangu-ultra-moe-718b \
    --hardware ascend-910b --gpus 6144 --gbs 1536 --seq 8192 --top 1 --json \
    --allow layout=balanced,auto --fix pp=16,tp=8,cp=1,vpp=2,ep=2,etp=8,a2a=hierarchical,\
schedule=zb-v,recompute=none,mbs=1,distributed-optimizer=on
contains "$tmp/out" '"layout":"auto"' "tune ranks layout auto first here"
contains "$tmp/out" "--layout auto" "tune's command sets the layout"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's auto command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's auto command reproduces the step time $step"
# Layout first-last: the row names the end ranks' layers and its command passes Megatron's
# counts (--first-stage-layers, --last-stage-layers), which reproduce its step.
expect 0 "tune layout=first-last" -- "$bin" tune --model llama3-70b --hardware h100-sxm \
    --gpus 64 --gbs 128 --seq 8192 --top 1 --json --fix tp=4,cp=2,pp=4,vpp=1,mbs=1,\
schedule=zb-h1,recompute=none,distributed-optimizer=on,layout=first-last
contains "$tmp/out" '"layout":"first-last"' "tune ranks layout first-last"
contains "$tmp/out" "--first-stage-layers 19 --last-stage-layers 19" \
    "tune's first-last command sets Megatron's counts"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's first-last command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's first-last command reproduces the step time $step"
# Adaptive's options (--allow): the row's command passes them and reproduces its step.
expect 0 "tune --allow warmup,split-backward" -- "$bin" tune --model llama3-70b \
    --hardware h100-sxm --gpus 64 --gbs 128 --seq 8192 --top 1 --json \
    --allow warmup=1,2,4,split-backward=off,on \
    --fix tp=4,cp=2,pp=4,vpp=5,mbs=1,schedule=adaptive,recompute=none,distributed-optimizer=on
contains "$tmp/out" '"split-backward":true' "tune ranks split backward first here"
contains "$tmp/out" "--split-backward" "tune's command splits the backward"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's adaptive command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's adaptive command reproduces the step time $step"
expect 2 "estimate --extra-warmup 0" -- "$bin" estimate --model llama3-70b --hardware h100-sxm \
    --gpus 64 --gbs 128 --seq 8192 --tp 4 --cp 2 --pp 4 --vpp 5 --schedule adaptive \
    --mbs 1 --extra-warmup 0
contains "$tmp/err" "--extra-warmup must be >= 1" "estimate refuses --extra-warmup 0"
# Group 2 (a group of 2 pp): the row's command passes --group-size and reproduces its step.
expect 0 "tune --allow group=1,2" -- "$bin" tune --model llama3-70b --hardware h100-sxm \
    --gpus 1024 --gbs 1024 --seq 8192 --top 1 --json --allow group=1,2 \
    --fix tp=4,cp=2,pp=16,vpp=5,mbs=1,schedule=interleaved,recompute=full,distributed-optimizer=on
contains "$tmp/out" '"group":2' "tune ranks a group of 2 pp first here"
contains "$tmp/out" "--group-size 32" "tune's command sets the group size"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
# shellcheck disable=SC2086
expect 0 "tune's group command" -- "$bin" $cmd --json
contains "$tmp/out" "\"step_time_s\":$step," "tune's group command reproduces the step time $step"
# tune with the imbalance: rows ranked by the balanced step, which the row's command reproduces.
# shellcheck disable=SC2086
expect 0 "tune --synthetic-samples" -- "$bin" tune $tune --top 2 --threads 1 \
    --synthetic-samples lognormal:7,1.5 --max-evals 20 --json
contains "$tmp/out" '"imbalance":{"samples":true,"expert_trace":false,"step_time":"balanced"}' \
    "tune --json names the imbalance"
cmd=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"command":"pipesched \([^"]*\)".*/\1/p' |
    head -1)
step=$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' | head -1)
grep -v '^{"search":' "$tmp/out" >"$tmp/tune-imb"
# shellcheck disable=SC2086
expect 0 "tune's first command with the imbalance" -- "$bin" $cmd --json
contains "$tmp/out" "\"balanced_step_time_s\":$step," \
    "tune's command reproduces the balanced step $step"
# shellcheck disable=SC2086
expect 0 "tune --synthetic-samples --no-prune" -- "$bin" tune $tune --top 2 --threads 1 \
    --synthetic-samples lognormal:7,1.5 --max-evals 20 --json --no-prune
grep -v '^{"search":' "$tmp/out" >"$tmp/tune-imb-np"
same "$tmp/tune-imb" "$tmp/tune-imb-np" "tune with the imbalance: pruning off, the same answer"
# shellcheck disable=SC2086
expect 2 "tune --samples, not gbs samples" -- "$bin" tune $tune --samples "$tmp/est-uniform.txt"
contains "$tmp/err" "samples: 32 given; the global batch is gbs 16 samples" \
    "tune names the sample count"
# --draw N --svg FILE: the timeline of row N, whose title carries that row's step time.
# shellcheck disable=SC2086
expect 2 "tune --draw without --svg" -- "$bin" tune $tune --draw 1
contains "$tmp/err" "tune --draw N and --svg FILE go together" "tune --draw needs --svg"
if "$bin" help draw >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    expect 0 "tune --draw 1" -- "$bin" tune $tune --top 2 --draw 1 --svg "$tmp/row1.svg"
    is_svg "$tmp/row1.svg" "tune --draw writes the row's timeline"
    # shellcheck disable=SC2086
    expect 2 "tune --draw past the ranking" -- "$bin" tune $tune --top 2 --draw 3 --svg "$tmp/r3.svg"
    contains "$tmp/err" "--draw 3: the ranking has 2 rows" "tune --draw names the rows"
    absent "$tmp/r3.svg" "tune --draw past the ranking"
    # --pareto-svg: one mark (a <g class="node point">) and one label per row of the front that
    # --json prints, the axes labelled with their units; for one count and for several.
    for g in 8 8,16; do
        # shellcheck disable=SC2086
        expect 0 "tune --gpus $g --pareto-svg" -- "$bin" tune --model llama3-8b --hardware h100-sxm \
            --gbs 16 --seq 4096 --max pp=4 --gpus $g --json \
            --pareto-svg "$tmp/front.svg"
        is_svg "$tmp/front.svg" "tune --pareto-svg writes an SVG"
        if command -v xmllint >/dev/null 2>&1; then
            if xmllint --noout "$tmp/front.svg"; then pass=$((pass + 1)); else
                fail=$((fail + 1)); echo "FAIL: tune --pareto-svg: not well-formed XML"; fi
        else
            echo "note: xmllint is absent: the front's SVG is not checked for well-formedness"
        fi
        nf=$(sed -n '/^"front"/,/^"rejected"/p' "$tmp/out" | grep -c '"index":')
        marks=$(grep -c '<g id="[^"]*" class="node point">' "$tmp/front.svg")
        labels=$(grep -c '<title>label[0-9]*</title>' "$tmp/front.svg")
        if [ "$nf" -gt 1 ] && [ "$marks" -eq "$nf" ] && [ "$labels" -eq "$nf" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: tune --gpus $g --pareto-svg: $marks marks, $labels labels, front of $nf"
        fi
        contains "$tmp/front.svg" "peak memory per GPU (GiB)" "tune --pareto-svg: x axis, unit"
        contains "$tmp/front.svg" "step time (s)" "tune --pareto-svg: y axis, unit"
    done
    contains "$tmp/front.svg" " interleaved @16 GPUs</text>" "the front's labels: knobs, count"
fi
# The progress bar is for a terminal only: a pipe gets none.
# shellcheck disable=SC2086
expect 0 "tune, stderr a pipe" -- "$bin" tune $tune --top 1
if [ -s "$tmp/err" ]; then
    fail=$((fail + 1)); echo "FAIL: tune wrote to stderr when it is not a terminal"
else pass=$((pass + 1)); fi
expect 2 "tune without its required options" -- "$bin" tune --model llama3-8b
contains "$tmp/err" "tune needs --hardware, --gpus, --gbs, --seq" "tune names every missing option"
# shellcheck disable=SC2086
expect 2 "tune, a value no candidate has" -- "$bin" tune $tune --fix tp=3
contains "$tmp/err" "no value of tp is left: its candidates are 1, 2, 4, 8" "tune names the knob"
# shellcheck disable=SC2086
expect 2 "tune, contradictory flags" -- "$bin" tune $tune --fix tp=8 --allow tp=4,8
contains "$tmp/err" "tp is in both --fix and --allow" "tune refuses contradictory flags"
# shellcheck disable=SC2086
expect 2 "tune, --fix given twice" -- "$bin" tune $tune --fix tp=4 --fix pp=2
contains "$tmp/err" "--fix is given twice; give all its knobs in one --fix" "tune refuses a second --fix"
# shellcheck disable=SC2086
expect 2 "tune, --max given twice" -- "$bin" tune $tune --max tp=4 --max pp=2
contains "$tmp/err" "--max is given twice" "tune refuses a second --max"
# shellcheck disable=SC2086
expect 2 "tune, unknown knob" -- "$bin" tune $tune --fix tpp=2
contains "$tmp/err" 'unknown knob "tpp"' "tune names the unknown knob"
# shellcheck disable=SC2086
expect 2 "tune, bad schedule" -- "$bin" tune $tune --allow schedule=1f1b,gpipe
contains "$tmp/err" 'bad value "gpipe" of schedule' "tune names the bad value"
expect 2 "tune, fp8 without an FP8 peak" -- "$bin" tune --model llama3-8b --hardware a100-80g \
    --gpus 8 --gbs 16 --seq 4096 --allow precision=bf16,fp8
contains "$tmp/err" "hardware a100-80g has no FP8 peak" "tune refuses fp8 on a100"
expect 2 "tune, gpus 0" -- "$bin" tune --model llama3-8b --hardware h100-sxm --gpus 0 --gbs 8 \
    --seq 4096
expect 2 "tune, a model that fits nowhere" -- "$bin" tune --model llama3-70b --hardware h100-sxm \
    --gpus 8 --gbs 16 --seq 4096
contains "$tmp/err" "no configuration fits in 80.00 GiB per device" "tune: nothing fits"
contains "$tmp/err" "the smallest needs at least 150.84 GiB" "tune says the least memory needed"
# Under a launcher (the environment mpirun gives its processes): -np 1 is the plain search; a
# build without Open MPI refuses more processes, rank 0 saying why and the others nothing (the
# mpi suite runs mpirun itself in a build with Open MPI).
# shellcheck disable=SC2086
expect 0 "tune under mpirun -np 1" -- env OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_RANK=0 \
    "$bin" tune $tune --top 3 --threads 1
grep -v '^search:' "$tmp/out" >"$tmp/tune-np1"
same "$tmp/tune-1" "$tmp/tune-np1" "tune under mpirun -np 1 prints what it prints alone"
if ! ls "$(dirname "$bin")"/libpipesched-tune-mpi.so* >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    expect 2 "tune under mpirun -np 2 without Open MPI" -- env OMPI_COMM_WORLD_SIZE=2 \
        OMPI_COMM_WORLD_RANK=0 "$bin" tune $tune
    contains "$tmp/err" "built without Open MPI" "tune says why it refuses mpirun"
    # shellcheck disable=SC2086
    expect 2 "tune under mpirun -np 2 without Open MPI, rank 1" -- env OMPI_COMM_WORLD_SIZE=2 \
        OMPI_COMM_WORLD_RANK=1 "$bin" tune $tune
    if [ -s "$tmp/err" ] || [ -s "$tmp/out" ]; then
        fail=$((fail + 1)); echo "FAIL: tune under mpirun, rank 1 printed something"
    else pass=$((pass + 1)); fi
fi

# --gpus as a list or a range: every count searched. The list's ranking is the single searches'
# rankings merged by step time (then peak, then GPUs); its front is the points of the single
# fronts that no other is at least as good as in step, peak and GPUs (computed here by awk);
# its CSV is the single CSVs with a gpus column.
tg="--model llama3-8b --hardware h100-sxm --gbs 16 --seq 4096 --max pp=4 --top 4 --threads 1"
# tune_rows SECTION FILE: "step peak gpus command" of each row of the JSON's top or front.
tune_rows() {
    sed -n "/^\"$1\"/,/^\"$2\"/p" "$3" | sed -n \
        's/.*"step_time_s":\([^,]*\),.*"peak_gib":\([^,]*\),.*"command":"\(pipesched estimate[^"]* --gpus \([0-9]*\) [^"]*\)".*/\1 \2 \4 \3/p'
}
: >"$tmp/tg-top" && : >"$tmp/tg-front" && : >"$tmp/tg-csv"
for g in 8 16; do
    # shellcheck disable=SC2086
    expect 0 "tune --gpus $g" -- "$bin" tune $tg --gpus $g --json --no-prune --csv "$tmp/tg-$g.csv"
    tune_rows top front "$tmp/out" >>"$tmp/tg-top"
    tune_rows front rejected "$tmp/out" >>"$tmp/tg-front"
    sed "1d;s/^/$g,/" "$tmp/tg-$g.csv" >>"$tmp/tg-csv"
done
# shellcheck disable=SC2086
expect 0 "tune --gpus 8,16" -- "$bin" tune $tg --gpus 16,8 --json --no-prune --csv "$tmp/tg.csv"
contains "$tmp/out" '"searches":[{"gpus":8,' "tune --gpus list: a search per count, ascending"
contains "$tmp/out" '"gpus":16,"knobs"' "tune --gpus list: the rows name their count"
sort -s -k1,1g -k2,2g -k3,3n "$tmp/tg-top" | head -4 >"$tmp/tg-want"
tune_rows top front "$tmp/out" >"$tmp/tg-got"
same "$tmp/tg-want" "$tmp/tg-got" "tune --gpus 8,16 ranks the single searches' rows together"
if [ "$(wc -l <"$tmp/tg-got")" -eq 4 ] && [ "$(wc -l <"$tmp/tg-top")" -eq 8 ]; then
    pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: tune --gpus 8,16: 4 rows of the 8 the single searches rank"; fi
awk '{ s[NR] = $1; p[NR] = $2; g[NR] = $3; l[NR] = $0 }
    END { for (i = 1; i <= NR; i++) { on = 1
        for (j = 1; j <= NR; j++)
            if (s[j] <= s[i] && p[j] <= p[i] && g[j] <= g[i] &&
                (s[j] < s[i] || p[j] < p[i] || g[j] < g[i])) on = 0
        if (on) print l[i] } }' "$tmp/tg-front" | sort -k1,1g -k2,2g -k3,3n >"$tmp/tg-want"
tune_rows front rejected "$tmp/out" | sort -k1,1g -k2,2g -k3,3n >"$tmp/tg-got"
same "$tmp/tg-want" "$tmp/tg-got" "tune --gpus 8,16: the front against step, peak and GPUs"
if grep -q ' 16 ' "$tmp/tg-got" && grep -q ' 8 ' "$tmp/tg-got"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: tune --gpus 8,16: the front should hold both counts"; fi
head -1 "$tmp/tg.csv" | grep -q '^gpus,tp,' && sed 1d "$tmp/tg.csv" >"$tmp/tg-csv-got" &&
    same "$tmp/tg-csv" "$tmp/tg-csv-got" "tune --gpus 8,16 --csv: the single CSVs with gpus"
# A range is the powers of two in it; the text gets a gpus column.
# shellcheck disable=SC2086
expect 0 "tune --gpus 5-31" -- "$bin" tune $tg --gpus 5-31
grep -v 'GPUs, search:' "$tmp/out" >"$tmp/tg-range"
contains "$tmp/out" "llama3-8b on 8, 16 x h100-sxm" "tune --gpus 5-31 is 8 and 16"
contains "$tmp/out" "Pareto front, step time against peak memory and GPU count:" \
    "tune --gpus range: the front names the GPU count"
# shellcheck disable=SC2086
expect 0 "tune --gpus 8,16 text" -- "$bin" tune $tg --gpus 8,16
grep -v 'GPUs, search:' "$tmp/out" >"$tmp/tg-list"
same "$tmp/tg-list" "$tmp/tg-range" "tune --gpus 5-31 prints what --gpus 8,16 prints"
for bad in 0 8,8 20-5 5-7 8,x 8- 64-; do
    # shellcheck disable=SC2086
    expect 2 "tune --gpus $bad" -- "$bin" tune $tg --gpus "$bad"
    contains "$tmp/err" "--gpus \"$bad\":" "tune names the bad --gpus $bad"
    contains "$tmp/err" "a range A-B of the powers of two from A to B" "tune --gpus $bad: what is valid"
done
contains "$tmp/err" "not a range A-B of two counts" "tune --gpus 64-: says why"

# tune --config FILE: an object whose keys are tune's options; flags override it.
cat >"$tmp/tune-cfg.json" <<'JSON'
{"model": "llama3-8b", "hardware": "h100-sxm", "gpus": [16, 8], "gbs": 16, "seq": 4096,
 "max": "pp=4", "top": 3, "threads": 1, "no-prune": true, "json": true}
JSON
expect 0 "tune --config" -- "$bin" tune --config "$tmp/tune-cfg.json"
grep -v '^{"search' "$tmp/out" >"$tmp/tcfg-file"
# shellcheck disable=SC2086
expect 0 "tune, the config's flags" -- "$bin" tune --model llama3-8b --hardware h100-sxm \
    --gpus 8,16 --gbs 16 --seq 4096 --max pp=4 --top 3 --threads 1 --no-prune --json
grep -v '^{"search' "$tmp/out" >"$tmp/tcfg-flags"
same "$tmp/tcfg-flags" "$tmp/tcfg-file" "tune --config gives what its keys as flags give"
contains "$tmp/tcfg-file" '"gpus":16,"knobs"' "tune --config: the gpus list"
expect 0 "tune --config, flags override" -- "$bin" tune --config "$tmp/tune-cfg.json" --gpus 8 \
    --top 1
contains "$tmp/out" '{"search":{"candidates":' "tune --config --gpus 8: one count, the flag's"
if [ "$(sed -n '/^"top"/,/^"front"/p' "$tmp/out" | grep -c '"index":')" -eq 1 ]; then
    pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: tune --config --top 1: not one row"; fi
echo '{"model": "llama3-8b", "tpp": 2}' >"$tmp/tune-bad.json"
expect 2 "tune --config, unknown key" -- "$bin" tune --config "$tmp/tune-bad.json"
contains "$tmp/err" 'unknown key "tpp" (tune'"'"'s keys: ' "tune --config names the unknown key"
contains "$tmp/err" "gpus-per-node, gbs, seq" "tune --config lists the valid keys"
echo '{"model": "llama3-8b", "gbs": "x"}' >"$tmp/tune-bad.json"
expect 2 "tune --config, bad value" -- "$bin" tune --config "$tmp/tune-bad.json"
contains "$tmp/err" '--gbs needs an integer; got "x"' "tune --config: the bad value"
contains "$tmp/err" '(the value of key "gbs" in' "tune --config: the bad value's key"
echo '{"model": {"base": "llama3-8b"}}' >"$tmp/tune-bad.json"
expect 2 "tune --config, wrong type" -- "$bin" tune --config "$tmp/tune-bad.json"
contains "$tmp/err" 'key "model" takes a string, a number or a list of them' \
    "tune --config: the wrong type"
echo '[1]' >"$tmp/tune-bad.json"
expect 2 "tune --config, not an object" -- "$bin" tune --config "$tmp/tune-bad.json"
contains "$tmp/err" "not a JSON object" "tune --config: not an object"

# The guide's option list and its `help simulate` example, and the key table of tune --config
# in the configuration reference, are the program's own output (checked against a build with
# every command, which the guide documents).
docs=$(cd "$(dirname "$0")/.." && pwd)/docs
guide=$docs/guide.md
# doc_block DOC NAME FILE: DOC's lines between its NAME markers are FILE; with
# PS_UPDATE_GUIDE=1 they are replaced by FILE instead.
doc_block() {
    sed -n "/^<!-- $2:begin -->\$/,/^<!-- $2:end -->\$/p" "$1" | sed '1d;$d' >"$tmp/block"
    if ! grep -qx "<!-- $2:begin -->" "$1"; then
        fail=$((fail + 1))
        echo "FAIL: $1 has no <!-- $2:begin --> marker"
    elif cmp -s "$tmp/block" "$3"; then
        pass=$((pass + 1))
    elif [ "${PS_UPDATE_GUIDE:-0}" = 1 ]; then
        awk -v name="$2" -v file="$3" '
            $0 == "<!-- " name ":end -->" { while ((getline line < file) > 0) print line; skip = 0 }
            !skip { print }
            $0 == "<!-- " name ":begin -->" { skip = 1 }' "$1" >"$tmp/doc" &&
            cat "$tmp/doc" >"$1"
        echo "updated the $2 block of $1"
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $(basename "$1")'s $2 block differs from the program's output:"
        diff -u "$tmp/block" "$3" | head -40 | sed 's/^/    /'
        echo "    regenerate with: cd tests && PS_UPDATE_GUIDE=1 ./cli.sh $bin"
    fi
}
guide_block() {
    doc_block "$guide" "$1" "$2"
}
if [ -f "$guide" ] && "$bin" help run >/dev/null 2>&1 && "$bin" help draw >/dev/null 2>&1; then
    expect 0 "help --markdown" -- "$bin" help --markdown
    guide_block options "$tmp/out"
    # Every row of the options table has the header's cells: a '|' inside a code span
    # (--model NAME|FILE) must be escaped, or GitHub splits the cell.
    bad=$(sed 's/\\|//g' "$tmp/out" | awk -F'|' '!/^\|/ { n = 0 } /^\|/ { if (!n) n = NF; else if (NF != n) print NR ": " $0 }')
    if [ -z "$bad" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: rows of the options table with another count of cells than its header:"
        echo "$bad" | head -5 | sed 's/^/    /'
    fi
    expect 0 "help simulate" -- "$bin" help simulate
    { printf '```console\n$ pipesched help simulate\n'; cat "$tmp/out"; printf '```\n'; } >"$tmp/help"
    guide_block help-simulate "$tmp/help"
    # The estimate session: its figures move with every recalibration of a preset.
    expect 0 "estimate, the guide's example" -- "$bin" estimate --model llama3-70b --hardware \
        h100-sxm --gpus 64 --tp 4 --pp 4 --vpp 5 --cp 2 --gbs 128 --mbs 1 --seq 8192 \
        --distributed-optimizer
    {
        printf '```console\n$ pipesched estimate --model llama3-70b --hardware h100-sxm --gpus 64 --tp 4 --pp 4 --vpp 5 \\\n'
        printf '      --cp 2 --gbs 128 --mbs 1 --seq 8192 --distributed-optimizer\n'
        cat "$tmp/out"
        printf '```\n'
    } >"$tmp/est"
    guide_block estimate-llama3-70b "$tmp/est"
fi
if [ -f "$docs/config.md" ]; then
    expect 0 "help --markdown tune-config" -- "$bin" help --markdown tune-config
    doc_block "$docs/config.md" tune-config "$tmp/out"
    # Every key of the table is one that tune --config takes, and only those: a file with
    # each key (a wrong value for the options that take one) is refused for its value, never
    # as an unknown key.
    keys=$(sed -n 's/^| `\([a-z-]*\)` | `--.*/\1/p' "$tmp/out")
    nkeys=0
    for k in $keys; do
        nkeys=$((nkeys + 1))
        printf '{"%s": {}}\n' "$k" >"$tmp/tune-key.json"
        "$bin" tune --config "$tmp/tune-key.json" >/dev/null 2>"$tmp/err"
        if grep -q "unknown key" "$tmp/err" || ! grep -q "key \"$k\" takes" "$tmp/err"; then
            fail=$((fail + 1))
            echo "FAIL: tune --config does not take the documented key $k: $(cat "$tmp/err")"
        else
            pass=$((pass + 1))
        fi
    done
    echo '{"nope": 1}' >"$tmp/tune-key.json"
    expect 2 "tune --config, unknown key" -- "$bin" tune --config "$tmp/tune-key.json"
    listed=$(sed -n 's/.*tune.s keys: \(.*\))$/\1/p' "$tmp/err" | tr -d ',')
    # shellcheck disable=SC2086
    if [ "$nkeys" -gt 10 ] && [ "$(printf '%s\n' $listed | sort)" = "$(printf '%s\n' $keys | sort)" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: tune --config lists the keys \"$listed\"; the reference: $keys"
    fi
    expect 2 "help --markdown, unknown table" -- "$bin" help --markdown nope
    contains "$tmp/err" "got \"nope\"" "help --markdown names the unknown table"
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
