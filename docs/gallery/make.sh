#!/bin/sh
# Regenerates the SVG gallery in this folder with `pipesched draw`.
# Usage: docs/gallery/make.sh [PATH/TO/pipesched]    (default: build/pipesched)
# The SVGs are committed; rerun this after a change to the drawings or the schedules. The
# bytes depend on the fonts installed (text is measured with the "sans-serif" family).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/pipesched}
if ! "$bin" help draw >/dev/null 2>&1; then
    echo "make.sh: $bin has no draw command (build with Graphviz: libgraphviz-dev)" >&2
    exit 2
fi

# draw NAME ARGS...: writes NAME.svg.
draw() {
    name=$1
    shift
    "$bin" draw -o "$here/$name.svg" "$@"
    echo "docs/gallery/$name.svg"
}

# has FAMILY: the family is in this build's registry.
has() {
    "$bin" list | grep -q "^$1 "
}

# Bubble timelines, 4 ranks, unit costs f = b = w = 1 per chunk.
draw 1f1b -s 1f1b -p 4 -m 8
draw interleaved -s interleaved -p 4 -v 2 -m 8
draw zb-h1 -s zb-h1 -p 4 -m 8
if has dualpipev; then
    draw dualpipev -s dualpipev -p 4 -m 10
fi
if has adaptive; then
    draw adaptive -s adaptive -p 4 -v 2 -m 8
fi

# Dependency graph with the critical path.
draw 1f1b-dag --kind dag -s 1f1b -p 4 -m 8

# Overlap of one fused pair of Pangu Ultra MoE: the adaptive planner, then serial execution.
moe=$root/docs/examples/pangu-ultra-moe-718b.json
if [ -f "$moe" ]; then
    draw overlap-adaptive --kind overlap --config "$moe"
    draw overlap-serial --kind overlap --config "$moe" --method serial
fi
