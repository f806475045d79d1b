#!/usr/bin/env python3
"""The mpi suite: docs/examples/mpi_host.c under mpirun (docs/mpi.md).

    mpi_test.py MPIRUN HOST CASE [ARGS...]

CASE:
  run NP FAMILY PP VPP M    the run matches its sequential reference bit for bit (the host's
                            own check) and its loss and gradient norm equal an independent
                            pure-Python computation of the same MLP (relative 1e-12)
  fail                      --fail-rank 2 --fail-action 2F3: every process ends, non-zero,
                            long before its stall timeout, each naming rank 2 and 2F3
  fail-fused                the same on the backward part of a fused pair of adaptive
  fail-last                 the last action fails, after the other processes finished
  die                       a process exits mid-run: mpirun ends the job, non-zero, long
                            before the others' stall timeout
  die-recovery              the same under mpirun --enable-recovery (the others live on): each
                            survivor's stall timeout (2 s) ends it, naming the rank it waits
                            for, and the job ends (about four stall timeouts after the death)
  corrupt                   one ulp off one weight gradient: the check reports a mismatch
  usage                     bad input: exit status 2 and a message naming the option

Exit status 77 (skipped) when MPIRUN is "-" (mpirun not found at configure time).
"""
import math
import re
import subprocess
import sys
import time

MPIRUN_ARGS = ["--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
               "--mca", "pml", "ob1"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(mpirun, host, np, args, extra=(), limit=60):
    cmd = [mpirun] + MPIRUN_ARGS + list(extra) + ["-np", str(np), host] + [str(a) for a in args]
    print("$ " + " ".join(cmd))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        fail("no end within %d s (a hang):\n%s%s" % (limit, e.stdout or "", e.stderr or ""))
    took = time.monotonic() - t0
    print(p.stdout + p.stderr)
    print("exit status %d after %.1f s" % (p.returncode, took))
    return p.returncode, p.stdout, p.stderr, took


# ---- an independent reference: the MLP of mpi_host.c in pure Python ------------------------

MASK = (1 << 64) - 1


def fill(seed):
    z = (seed * 0x9E3779B97F4A7C15 + 1) & MASK
    out = []
    for _ in range(64):
        z = (z * 6364136223846793005 + 1442695040888963407) & MASK
        out.append(((z >> 11) / 9007199254740992.0 - 0.5) * 1.2)
    return [out[i * 8:(i + 1) * 8] for i in range(8)]


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(8)) for j in range(8)] for i in range(8)]


def transpose(a):
    return [[a[j][i] for j in range(8)] for i in range(8)]


def mlp(layers, m):
    """Loss and gradient norm of one iteration: layer l holds W_l = fill(1000 + l), micro-batch
    j is X_j = fill(2000000 + j) with target T_j = fill(3000000 + j); y = tanh(W x) per
    layer, loss 1/2 |y - T|^2 summed over micro-batches, gradients summed too."""
    w = [fill(1000 + l) for l in range(layers)]
    grads = [[[0.0] * 8 for _ in range(8)] for _ in range(layers)]
    loss = 0.0
    for j in range(m):
        xs = [fill(2000000 + j)]
        for l in range(layers):
            xs.append([[math.tanh(v) for v in row] for row in matmul(w[l], xs[-1])])
        t = fill(3000000 + j)
        g = [[xs[-1][i][k] - t[i][k] for k in range(8)] for i in range(8)]
        loss += sum(0.5 * v * v for row in g for v in row)
        for l in reversed(range(layers)):
            y = xs[l + 1]
            gz = [[g[i][k] * (1.0 - y[i][k] * y[i][k]) for k in range(8)] for i in range(8)]
            d = matmul(gz, transpose(xs[l]))
            grads[l] = [[grads[l][i][k] + d[i][k] for k in range(8)] for i in range(8)]
            g = matmul(transpose(w[l]), gz)
    norm = math.sqrt(sum(v * v for gl in grads for row in gl for v in row))
    return loss, norm


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


# ---- the cases ------------------------------------------------------------------------------

def case_run(mpirun, host, np, family, pp, vpp, m):
    rc, out, err, _ = run(mpirun, host, np, [family, pp, vpp, m])
    if rc != 0:
        fail("exit status %d" % rc)
    line = re.search(r"loss (\S+), \|grad\| (\S+): every gradient matches the sequential "
                     r"reference bit for bit", out)
    if not line:
        fail("no 'bit for bit' line")
    loss, norm = float(line.group(1)), float(line.group(2).rstrip(":"))
    # Layers on a micro-batch's path: pp * vpp, but pp for DualPipe (two copies of pp layers).
    layers = int(pp) if family == "dualpipe" else int(pp) * int(vpp)
    want_loss, want_norm = mlp(layers, int(m))
    print("independent reference: loss %.17g, |grad| %.17g" % (want_loss, want_norm))
    if not close(loss, want_loss) or not close(norm, want_norm):
        fail("loss or gradient norm differs from the independent reference")


def expect_every_process(err, nproc, pattern, who=None):
    for p in range(nproc) if who is None else who:
        if not re.search(r"process %d \(rank [0-9,]+\): [^\n]*%s" % (p, pattern), err):
            fail("process %d printed no line matching %r" % (p, pattern))


# The bound of the failure cases: a stall timeout far beyond it (a process that waited for
# its stall timeout fails the case) and far beyond mpirun's start-up (1-3 s here, 30 s under
# ASan on a loaded machine).
STALL_FAR = 300
LIMIT = 150


def case_fail(mpirun, host):
    rc, _, err, _ = run(mpirun, host, 4,
                        ["1f1b", 4, 1, 8, "--fail-rank", 2, "--fail-action", "2F3",
                         "--stall", STALL_FAR], limit=LIMIT)
    if rc == 0:
        fail("exit status 0 after a failed action")
    # The failing process names its action; the others name the process, rank and action.
    expect_every_process(err, 4, r"rank 2: 2F3 failed with status 1")
    expect_every_process(err, 4, r"stopped because process 2 failed", who=[0, 1, 3])


def case_fail_fused(mpirun, host):
    # adaptive pp=4 vpp=2 m=8: rank 1 runs (1F5;5B0)OVERLAP_F_B, whose backward part fails.
    rc, _, err, _ = run(mpirun, host, 4,
                        ["adaptive", 4, 2, 8, "--fail-rank", 1, "--fail-action", "5B0",
                         "--stall", STALL_FAR], limit=LIMIT)
    if rc == 0:
        fail("exit status 0 after a failed action")
    expect_every_process(err, 4, re.escape("rank 1: (1F5;5B0)OVERLAP_F_B failed with status 1"))


def case_fail_last(mpirun, host):
    # 0B7 is the last action of 1F1B: ranks 1-3 have finished when it fails.
    rc, _, err, _ = run(mpirun, host, 4,
                        ["1f1b", 4, 1, 8, "--fail-rank", 0, "--fail-action", "0B7",
                         "--stall", STALL_FAR], limit=LIMIT)
    if rc == 0:
        fail("exit status 0 after a failed action")
    expect_every_process(err, 4, r"rank 0: 0B7 failed with status 1")
    expect_every_process(err, 4, r"finished, but process 0 failed", who=[1, 2, 3])


def case_die(mpirun, host):
    rc, _, err, _ = run(mpirun, host, 4,
                        ["interleaved", 4, 2, 8, "--die-rank", 1, "--die-action", "1B2",
                         "--stall", STALL_FAR], limit=LIMIT)
    if rc == 0:
        fail("exit status 0 after a process died")
    if "process 1 exits at rank 1's action" not in err:
        fail("the injected exit did not happen")


def case_die_recovery(mpirun, host):
    # Under --enable-recovery mpirun lets the others run on (and exits 0 whatever they do, so
    # the exit status says nothing here): each survivor must stop by itself, in bounded time,
    # and say which rank it waits for or that process 1 sent nothing.
    stall = 2
    rc, _, err, _ = run(mpirun, host, 4,
                        ["interleaved", 4, 2, 8, "--die-rank", 1, "--die-action", "1B2",
                         "--stall", stall], extra=["--enable-recovery"], limit=LIMIT)
    survivors = [0, 2, 3]
    expect_every_process(err, 4, r"run failed: ", who=survivors)
    expect_every_process(err, 4, r"no result from process 1 within", who=survivors)
    if not re.search(r"MPI receive not completed: [^\n]* from rank 1 \(process 1\)", err):
        fail("no survivor names rank 1 as the one it waits for")
    if not re.search(r"rank [0-3]: blocked at step [0-9]+ on [0-9]+[FIBW][0-9]+", err):
        fail("no stall message names a blocked action")


def case_corrupt(mpirun, host):
    rc, out, err, _ = run(mpirun, host, 4, ["zb-h1", 4, 1, 8, "--corrupt-stage", 2])
    if rc != 1:
        fail("exit status %d, want 1" % rc)
    if "MISMATCH" not in out or "stage weight gradients DIFFER" not in err:
        fail("the mismatch was not reported")


def case_usage(mpirun, host):
    rc, _, err, _ = run(mpirun, host, 2, ["1f1b", 4, 1, 8, "--fail-rank", 1, "--fail-action",
                                          "1X3"])
    if rc != 2 or "--fail-action: '1X3' is not a compute action" not in err:
        fail("bad --fail-action: want exit status 2 and a message naming it")
    rc, _, err, _ = run(mpirun, host, 2, ["1f1b", 4, 1, 8, "--stal", 1])
    if rc != 2 or "unknown option --stal (valid: " not in err:
        fail("unknown option: want exit status 2 and the valid options")
    rc, _, err, _ = run(mpirun, host, 3, ["1f1b", 2, 1, 8])
    if rc != 2 or "3 processes for 2 pipeline ranks" not in err:
        fail("too many processes: want exit status 2 and a message")


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    mpirun, host, case = sys.argv[1], sys.argv[2], sys.argv[3]
    if mpirun == "-":
        print("SKIP: mpirun (openmpi-bin) was not found when the build was configured")
        return 77
    args = sys.argv[4:]
    cases = {"run": case_run, "fail": case_fail, "fail-fused": case_fail_fused,
             "fail-last": case_fail_last,
             "die": case_die, "die-recovery": case_die_recovery, "corrupt": case_corrupt,
             "usage": case_usage}
    if case not in cases:
        print("unknown case %s" % case)
        return 2
    cases[case](mpirun, host, *args)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
