#!/bin/sh
# The installed tree: `meson install` staged with --destdir gives a pipesched that runs without
# LD_LIBRARY_PATH (its run path is relative to the program, $ORIGIN), the headers and the
# pkg-config files the README's "Install" section names.
# Usage: install.sh MESON BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR
set -u
meson=$1 build=$2 prefix=$3 bindir=$4 libdir=$5 includedir=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { # check DESCRIPTION COMMAND...
    what=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what"
        sed 's/^/    /' "$tmp/out" | head -10
    fi
}
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
root=$tmp/root
check "meson install --destdir" "$meson" install -C "$build" --no-rebuild --quiet --destdir "$root"
bin=$root$(abs "$bindir")/pipesched
check "installed program runs without LD_LIBRARY_PATH" env -u LD_LIBRARY_PATH "$bin" simulate --json
cp "$tmp/out" "$tmp/sim.json"
check "it simulates" grep -q '"makespan":33,' "$tmp/sim.json"
check "installed program lists the families" env -u LD_LIBRARY_PATH "$bin" list
inc=$root$(abs "$includedir")/pipesched
check "header pipesched.h installed" test -f "$inc/pipesched.h"
check "header model.h installed" test -f "$inc/model.h"
check "pkg-config file pipesched.pc installed" test -f "$root$(abs "$libdir")/pkgconfig/pipesched.pc"
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
