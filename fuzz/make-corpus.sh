#!/usr/bin/env bash
# Regenerates the seed corpora fuzz/corpus/<target>/ from the tree: the configuration examples
# of docs/ and docs/examples, the tables and configs of tests/data, the CSV tables (compute
# only and with communication) that `pipesched generate` writes for every registered family,
# and a few hand-made inputs of the structured targets. The seeds are committed; run this
# after adding a family or an example:
#
#   fuzz/make-corpus.sh build/pipesched
#
# It replaces the seed files it writes (seed-*) and leaves any other file in the corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/pipesched}
[ -x "$bin" ] || { echo "usage: fuzz/make-corpus.sh PATH-TO-pipesched" >&2; exit 2; }
out=fuzz/corpus
for t in config csv schedule layout estcfg hf experts; do
    mkdir -p "$out/$t"
    rm -f "$out/$t"/seed-*
done

# The ```json blocks of a markdown file, one file each.
json_blocks() { # file prefix dir
    awk -v pre="$3/seed-$2-" '/^```json/ {n++; f = pre n ".json"; on = 1; next}
        /^```/ {on = 0; next} on {print > f}' "$1"
}

# config: the examples, the reference's blocks and one small configuration per family.
for f in docs/examples/*.json; do
    case $f in *estimate-*) cp "$f" "$out/estcfg/seed-$(basename "$f")" ;;
    *) cp "$f" "$out/config/seed-$(basename "$f")" ;; esac
done
json_blocks docs/config.md config "$out/config"
json_blocks docs/config.md config "$out/estcfg"
json_blocks docs/hardware.md hardware "$out/estcfg"
families=$("$bin" list | awk '/^[a-z0-9-]+ / {print $1}')
for fam in $families; do
    printf '{"schedule": "%s", "pp": 4, "microbatches": 8}\n' "$fam" \
        >"$out/config/seed-$fam.json"
    printf '{"schedule": "%s", "pp": 2, "vpp": 2, "microbatches": 4, "costs": {"f": 1, "b": 2, "w": 0.5, "c": 0.1}, "memory": {"f": 2, "b": -1, "w": -1, "limit": 6}}\n' \
        "$fam" >"$out/config/seed-$fam-costs.json"
done

# csv: the test tables and every family's tables.
for f in tests/data/*.csv; do cp "$f" "$out/csv/seed-$(basename "$f")"; done
for fam in $families; do
    for size in "-p 4 -m 8" "-p 2 -v 2 -m 4" "-p 3 -m 5"; do
        tag=$(echo "$size" | tr -d ' -')
        # shellcheck disable=SC2086
        "$bin" generate -s "$fam" $size --format csv >"$out/csv/seed-$fam-$tag.csv" 2>/dev/null ||
            rm -f "$out/csv/seed-$fam-$tag.csv"
        # shellcheck disable=SC2086
        "$bin" generate -s "$fam" $size --format csv-comms \
            >"$out/csv/seed-$fam-$tag-comms.csv" 2>/dev/null ||
            rm -f "$out/csv/seed-$fam-$tag-comms.csv"
    done
done

# hf and estcfg: the HuggingFace configs and hardware files of the tests.
for f in tests/data/hf/*.json; do cp "$f" "$out/hf/seed-$(basename "$f")"; done
for f in tests/data/hw/*.json; do cp "$f" "$out/estcfg/seed-hw-$(basename "$f")"; done

# schedule (fuzz_schedule.c's byte layout): no injected failure (1), the family (i), its
# canonical name (0), pp - 1, vpp (0 = the family's), then m: a selector (1: up to 16) and
# m - 1, then the option bits.
nfam=$(echo "$families" | wc -w)
byte() { printf "\\x$(printf %02x "$1")"; }
for i in $(seq 0 $((nfam - 1))); do
    f="$out/schedule/seed-$i"
    # defaults: pp 4, m 8
    { byte 1; byte "$i"; byte 0; byte 3; byte 0; byte 1; byte 7; byte 0; } >"$f-default"
    # an alias, pp 2, vpp 2, m 4, the scalar costs f=1 b=2 w=0.5 c=0 fb=NaN (table indexes)
    { byte 1; byte "$i"; byte 1; byte 1; byte 2; byte 1; byte 3; byte 8
      byte 1; byte 0; byte 1; byte 1; byte 1; byte 2; byte 1; byte 7; byte 1; byte 88; } >"$f-costs"
    # pp 4, m 8, memory f=2 (b = w = -1) with a limit of 3, and subnormal / 1e300 costs
    { byte 1; byte "$i"; byte 0; byte 3; byte 0; byte 1; byte 7; byte 40
      byte 1; byte 16; byte 1; byte 22; byte 1; byte 0; byte 0; byte 0
      byte 1; byte 1; byte 1; byte 0; byte 1; byte 6; } >"$f-memory"
    # pp 2, m 4, a MoE model of 4 layers (1 dense), every duration 1 (table index 0), planner 0
    { byte 1; byte "$i"; byte 0; byte 1; byte 0; byte 1; byte 3; byte 64; byte 3; byte 1
      for op in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do byte 0; byte 0; done
      byte 0; byte 0; byte 1; byte 1; } >"$f-moe"
    # the same pipeline with the 9th allocation failing
    { byte 0; byte 9; byte 0; byte 1; byte "$i"; byte 0; byte 3; byte 0; byte 1; byte 7; byte 0; } \
        >"$f-oom"
done

# layout (fuzz_layout.c's byte layout): pp - 1, vpp - 1, layers, mtp, two bytes below 192 (no
# first / last rank counts), then the string; 0xff instead of a string: the even split.
layout() { # name pp vpp layers mtp string
    { byte $(($2 - 1)); byte $(($3 - 1)); byte "$4"; byte "$5"; byte 0; byte 0; printf '%s' "$6"; } \
        >"$out/layout/seed-$1"
}
layout even4 4 1 8 0 "$(printf '\xff')"
layout plain 4 1 8 0 'Ett|tt|tt|ttL'
layout group 4 1 8 0 'E(tt|)*3ttL'
layout repeat 4 1 8 0 'Et*2|(t*2|)*2t*2L'
layout mtp 4 1 8 1 'Ett|tt|tt|ttmL'
layout vpp 2 2 8 0 'Ett|tt|tt|ttL'
layout empty 4 1 4 0 'E||tt|ttL'
layout nested 2 2 4 0 'E(t(t|)*2)*2L'
layout commas 2 1 4 0 'E,t,t|t,t,L'
layout deep 2 1 0 0 'E((((t)*1000)*1000)*1000)*1000|L'
{ byte 3; byte 0; byte 20; byte 0; byte 200; byte 200; printf '\xff'; } >"$out/layout/seed-firstlast"
# experts: routing traces of both formats, and a refused one.
printf 'step,layer,expert,tokens\n0,0,0,5\n0,0,1,3\n1,0,0,2\n1,1,1,7\n' >"$out/experts/seed-csv.txt"
printf '# two layers\n100 100 1 1 1 1 1 1\n5,6,7,8,9,10,11,12\n' >"$out/experts/seed-lines.txt"
printf '1 2 3 4\n5 6 -7 8\n' >"$out/experts/seed-negative.txt"
echo "seeds: $(find "$out" -name 'seed-*' | wc -l) files in $out"
