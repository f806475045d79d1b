#!/bin/sh
# The installed tree: `meson install` staged with --destdir gives a pipesched that runs without
# LD_LIBRARY_PATH (its run path is relative to the program, $ORIGIN), the headers and the
# pkg-config files the README's "Install" section names.
# With the Python package, also the package in site-packages with a _build_info.py naming the
# installed libraries.
# Usage: install.sh MESON BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR [PYTHON PY_INSTALL_DIR [sanitized]]
set -u
meson=$1 build=$2 prefix=$3 bindir=$4 libdir=$5 includedir=$6
python=${7:-} pydir=${8:-} sanitized=${9:-}
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
# draw loads libpipesched-viz with dlopen on first use, found through the same run path; the
# other commands do not load it (nor Graphviz).
if "$bin" --help 2>/dev/null | grep -q '^ *draw '; then
    check "installed program draws (dlopen of libpipesched-viz)" \
        env -u LD_LIBRARY_PATH "$bin" draw -o "$tmp/t.svg"
    check "the drawing is an SVG" grep -q '<svg' "$tmp/t.svg"
    check "simulate loads no Graphviz" sh -c "! env -u LD_LIBRARY_PATH LD_DEBUG=libs '$bin' simulate 2>&1 >/dev/null | grep -q 'libgvc\|libpipesched-viz'"
fi
# run loads libpipesched-exec (and libuv) the same way; no other command loads libuv.
if "$bin" --help 2>/dev/null | grep -q '^ *run '; then
    check "installed program runs a schedule (dlopen of libpipesched-exec)" \
        env -u LD_LIBRARY_PATH "$bin" run -s 1f1b -p 2 -m 2 --time-scale 0.0005
    cp "$tmp/out" "$tmp/run.txt"
    check "it measures" grep -q 'makespan error' "$tmp/run.txt"
    check "simulate loads no libuv" sh -c "! env -u LD_LIBRARY_PATH LD_DEBUG=libs '$bin' simulate 2>&1 >/dev/null | grep -q 'libuv\|libpipesched-exec'"
    check "header exec.h installed" test -f "$root$(abs "$includedir")/pipesched/exec.h"
    check "pkg-config file pipesched-exec.pc installed" \
        test -f "$root$(abs "$libdir")/pkgconfig/pipesched-exec.pc"
fi
# tune under mpirun loads libpipesched-tune-mpi (and libmpi) the same way, in a build with Open
# MPI; tune without mpirun loads neither.
if [ -e "$root$(abs "$libdir")/libpipesched-tune-mpi.so" ]; then
    check "header tune_mpi.h installed" test -f "$root$(abs "$includedir")/pipesched/tune_mpi.h"
    tune="--model llama3-8b --hardware h100-sxm --gpus 8 --gbs 16 --seq 4096 --max pp=2,vpp=2"
    check "tune loads no libmpi" sh -c "! env -u LD_LIBRARY_PATH LD_DEBUG=libs '$bin' tune $tune --threads 1 2>&1 >/dev/null | grep -q 'libmpi\|libpipesched-tune-mpi'"
    if command -v mpirun >/dev/null; then
        # Open MPI's own allocations at exit are leaks to LeakSanitizer (a sanitizer build):
        # the mpi suite's suppressions, as tests/meson.build gives them to that suite.
        lsan_mpi="fast_unwind_on_malloc=0:print_suppressions=0:suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-mpi.supp"
        check "installed program runs tune under mpirun (dlopen of libpipesched-tune-mpi)" \
            env -u LD_LIBRARY_PATH LSAN_OPTIONS="$lsan_mpi" \
            mpirun --allow-run-as-root --oversubscribe --mca btl self,vader \
            --mca pml ob1 -np 2 "$bin" tune $tune --threads 1
        cp "$tmp/out" "$tmp/tune.txt"
        check "it searches in 2 processes" grep -q 'in 2 processes' "$tmp/tune.txt"
    fi
fi
inc=$root$(abs "$includedir")/pipesched
check "header pipesched.h installed" test -f "$inc/pipesched.h"
check "header model.h installed" test -f "$inc/model.h"
check "pkg-config file pipesched.pc installed" test -f "$root$(abs "$libdir")/pkgconfig/pipesched.pc"
if [ -n "$python" ]; then
    pkg=$root$pydir/pipesched
    check "python package installed" test -f "$pkg/__init__.py" -a -f "$pkg/executor.py"
    check "its _build_info.py names the installed library" \
        grep -q "^CORE_LIBRARY = \"$(abs "$libdir")/libpipesched\.so" "$pkg/_build_info.py"
    # Staged, the recorded paths do not exist yet: the package asks the loader for the soname,
    # which LD_LIBRARY_PATH points at the staged libraries.
    if [ "$sanitized" = sanitized ]; then
        echo "note: a sanitizer build: the installed package is not imported (an instrumented" \
            "library cannot load into python3)"
    else
        check "the installed package imports and simulates" env PYTHONPATH="$root$pydir" \
            LD_LIBRARY_PATH="$root$(abs "$libdir")" "$python" -c 'import pipesched
assert pipesched.generate("1f1b").simulate().makespan == 33.0'
    fi
fi
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
