#!/usr/bin/env python3
"""The mpi suite's tune cases: `mpirun -np N pipesched tune` against the single process
(docs/tune.md, "Across processes").

    tune_mpi_test.py MPIRUN PIPESCHED CASE [ARGS...]

CASE:
  same NP THREADS TUNE-ARGS...  under mpirun with NP processes of THREADS threads each, rank 0
                                prints what one process prints but the search line (text);
                                --json --no-prune: the same top K, front and rejections, the
                                same counts in the search figures, processes = NP, threads =
                                NP x THREADS; --csv: the same file, byte for byte; with pruning on,
                                the same answer again. Every rank exits 0; the other ranks print
                                nothing.
  nofit NP TUNE-ARGS...         nothing fits: every rank exits 2, rank 0 says what one process
                                says, once.
  bad NP                        bad input under mpirun (an unknown option, a constraint no
                                candidate meets, an unknown model, --gpus 0, an unwritable
                                --csv): every rank exits 2, no hang, the message once; --csv
                                /dev/full (a write that fails): every rank exits 3.
  nolibmpi TUNE-ARGS...         without mpirun, pipesched tune loads no libmpi (LD_DEBUG).

Exit status 77 (skipped) when MPIRUN is "-" (mpirun not found at configure time).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MPIRUN_ARGS = ["--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
               "--mca", "pml", "ob1"]
LIMIT = 120


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, env=None):
    print("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env)
    except subprocess.TimeoutExpired as e:
        fail("no end within %d s (a hang):\n%s%s" % (LIMIT, e.stdout or "", e.stderr or ""))
    return p.returncode, p.stdout, p.stderr


def single(pipesched, args):
    return run([pipesched, "tune"] + args)


def under_mpirun(mpirun, pipesched, np, args):
    """Runs pipesched tune on np processes; every rank's exit status comes back on a line of
    its own ("rank-exit R S"), which this strips from the output."""
    wrap = '"$@"; s=$?; echo "rank-exit ${OMPI_COMM_WORLD_RANK:-?} $s"; exit $s'
    # mpirun ends the others when one process exits non-zero (a usage error found before MPI
    # starts, where every process exits 2 on its own): here each one's own status is wanted.
    keep = ["--mca", "orte_abort_on_non_zero_status", "0"]
    rc, out, err = run([mpirun] + MPIRUN_ARGS + keep + ["-np", str(np), "sh", "-c", wrap, "sh",
                                                         pipesched, "tune"] + args)
    exits = [int(m.group(2)) for m in re.finditer(r"^rank-exit (\S+) (\d+)$", out, re.M)]
    out = re.sub(r"^rank-exit .*\n", "", out, flags=re.M)
    if len(exits) != np:
        fail("%d of %d ranks reported their exit status:\n%s%s" % (len(exits), np, out, err))
    return exits, out, err


def drop_search(text):
    return "\n".join(l for l in text.split("\n") if not l.startswith("search:") and
                     not re.match(r"\d+ GPUs, search:", l))


def answer(doc):
    return {k: v for k, v in doc.items() if k not in ("search", "searches")}


def searches(doc):
    return doc["searches"] if "searches" in doc else [doc["search"]]


def case_same(mpirun, pipesched, np, threads, args):
    np, threads = int(np), int(threads)
    with tempfile.TemporaryDirectory(prefix="pipesched-tune-mpi-") as tmp:
        # The text, pruning on.
        rc, one, err = single(pipesched, args + ["--threads", "1"])
        if rc != 0:
            fail("one process: exit status %d: %s" % (rc, err))
        exits, many, err = under_mpirun(mpirun, pipesched, np, args + ["--threads", str(threads)])
        if exits != [0] * np:
            fail("exit statuses %s: %s" % (exits, err))
        if err.strip():
            fail("something on standard error: " + err)
        if drop_search(one) != drop_search(many):
            fail("rank 0 prints another answer than one process:\n--- one\n%s\n--- %d\n%s" %
                 (one, np, many))
        if "in %d processes" % np not in many:
            fail("the search line does not say %d processes" % np)
        # JSON and CSV without pruning: every count, every line.
        csv1, csvn = os.path.join(tmp, "one.csv"), os.path.join(tmp, "many.csv")
        rc, one, err = single(pipesched, args + ["--threads", "1", "--no-prune", "--json",
                                                 "--csv", csv1])
        if rc != 0:
            fail("one process --json: exit status %d: %s" % (rc, err))
        exits, many, err = under_mpirun(mpirun, pipesched, np, args + [
            "--threads", str(threads), "--no-prune", "--json", "--csv", csvn])
        if exits != [0] * np:
            fail("--json: exit statuses %s: %s" % (exits, err))
        a, b = json.loads(one), json.loads(many)
        if answer(a) != answer(b):
            fail("--json: another top K, front or rejections")
        for x, y in zip(searches(a), searches(b)):
            for key in ("candidates", "rejected", "simulated", "failed", "over_memory",
                        "fitting", "over_memory_unsimulated", "pruned"):
                if x[key] != y[key]:
                    fail("--json: %s %s, one process %s" % (key, y[key], x[key]))
            if y["processes"] != np or y["threads"] != np * threads or x["processes"] != 1:
                fail("--json: processes %s, threads %s" % (y["processes"], y["threads"]))
        # Rank 0 writes the processes' lines as the search goes, in candidate order: the file
        # of one process, byte for byte.
        with open(csv1, "rb") as f:
            text1 = f.read()
        with open(csvn, "rb") as f:
            textn = f.read()
        if text1.count(b"\n") < 1000 or text1 != textn:
            fail("--csv: %d lines against %d, or they differ" % (textn.count(b"\n"),
                                                                 text1.count(b"\n")))
        print("csv: %d lines alike, byte for byte" % text1.count(b"\n"))
        # Pruning on across the processes (the shared bound): the same answer.
        exits, pruned, err = under_mpirun(mpirun, pipesched, np, args + [
            "--threads", str(threads), "--json"])
        if exits != [0] * np or answer(json.loads(pruned)) != answer(a):
            fail("pruning on: another answer, or exit statuses %s" % exits)
    print("PASS")


def case_nofit(mpirun, pipesched, np, args):
    np = int(np)
    rc, _, want = single(pipesched, args + ["--threads", "1"])
    if rc != 2 or "no configuration fits" not in want:
        fail("one process: exit status %d, %s" % (rc, want))
    exits, out, err = under_mpirun(mpirun, pipesched, np, args + ["--threads", "1"])
    if exits != [2] * np:
        fail("exit statuses %s" % exits)
    if want.strip() not in err or err.count("no configuration fits") != 1:
        fail("rank 0 does not say what one process says, once:\n%s" % err)
    print("PASS")


def case_bad(mpirun, pipesched, np):
    np = int(np)
    job = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "16",
           "--seq", "4096", "--max", "pp=2,vpp=2", "--threads", "1"]
    cases = [
        (job + ["--bogus"], "unknown option --bogus"),
        (job + ["--fix", "tp=3"], "no value of tp is left"),
        (["--model", "nosuch"] + job[2:], "is neither a built-in"),
        (job[:5] + ["0"] + job[6:], "--gpus \"0\""),
        (job + ["--csv", "/nonexistent-pipesched-dir/all.csv"], "/nonexistent-pipesched-dir"),
    ]
    for args, message in cases:
        exits, out, err = under_mpirun(mpirun, pipesched, np, args)
        if exits != [2] * np:
            fail("%s: exit statuses %s" % (message, exits))
        if err.count(message) != 1:
            fail("%s: said %d times:\n%s" % (message, err.count(message), err))
        if out.strip():
            fail("%s: something on standard output: %s" % (message, out))
    # A write of the CSV that fails while the processes send their lines: every process
    # exits 3 (none waits on rank 0), the failure said once.
    if os.access("/dev/full", os.W_OK):
        message = "writing /dev/full failed: No space left on device"
        exits, out, err = under_mpirun(mpirun, pipesched, np, job + ["--csv", "/dev/full"])
        if exits != [3] * np:
            fail("--csv /dev/full: exit statuses %s:\n%s" % (exits, err))
        if err.count(message) != 1:
            fail("--csv /dev/full: said %d times:\n%s" % (err.count(message), err))
    print("PASS")


def case_nolibmpi(pipesched, args):
    env = dict(os.environ, LD_DEBUG="files")
    rc, out, err = run([pipesched, "tune"] + args + ["--threads", "1"], env=env)
    if rc != 0:
        fail("exit status %d" % rc)
    loaded = [l for l in err.split("\n") if "file=libmpi" in l or "libpipesched-tune-mpi" in l]
    if loaded:
        fail("tune without mpirun loads MPI:\n" + "\n".join(loaded))
    if "file=libpipesched.so" not in err:
        fail("LD_DEBUG=files printed no libraries: the test proves nothing")
    print("PASS")


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    mpirun, pipesched, case, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if mpirun == "-":
        print("SKIP: mpirun (openmpi-bin) was not found when the build was configured")
        return 77
    if case == "same":
        case_same(mpirun, pipesched, args[0], args[1], args[2:])
    elif case == "nofit":
        case_nofit(mpirun, pipesched, args[0], args[1:])
    elif case == "bad":
        case_bad(mpirun, pipesched, args[0])
    elif case == "nolibmpi":
        case_nolibmpi(pipesched, args)
    else:
        fail("unknown case " + case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
