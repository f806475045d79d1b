#!/bin/sh
# The test setups do what tests/meson.build's comments say. A test's own environment wins
# over its setup's (meson merges the setup's first), so the valgrind setup's CK_FORK=no
# reaches a test only when the test sets no CK_FORK itself: no test the setup runs may set
# one, and the setup leaves out the suites its comment leaves out (timing, slow, cli, mpi,
# python).
# usage: setups.sh MESON BUILDDIR
set -eu
meson=$1 build=$2
fail=0
names=$("$meson" test -C "$build" --no-rebuild --setup=valgrind --list 2>/dev/null |
    sed 's|.* / ||')
for t in $names; do
    case $t in
    exec-fidelity | cli | sweep | zbauto | mpi | mpi-* | python)
        echo "FAIL: the valgrind setup runs $t"
        fail=1
        ;;
    esac
done
"$meson" introspect --tests "$build" | python3 -c '
import json, sys
valgrind = set(sys.argv[1:])
bad = 0
for t in json.load(sys.stdin):
    if "CK_FORK" in t["env"] and t["name"] in valgrind:
        print("FAIL: %s sets CK_FORK=%s, which wins over the valgrind setup" % (t["name"], t["env"]["CK_FORK"]))
        bad = 1
sys.exit(bad)
' $names || fail=1
[ $fail = 0 ] && echo "ok: the valgrind setup runs $(echo "$names" | wc -l) tests, none sets CK_FORK"
exit $fail
