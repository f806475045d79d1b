#!/usr/bin/python3
"""Actions per second through the executor from Python (issue 14), and what the GIL costs.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_exec.py [--quick] [--c-bench EXE]

Zero-duration compute, every rank local, the loop on the package's thread; the run's own
time (ExecResult.seconds: from ps_exec_start() to the end of the last action, as the C
benchmark times it; setting up and closing the loop is not counted), median of several runs:

  (a)  the compute callable returns None: the package completes the action on the loop thread
       as the callable returns (one C -> Python -> C round trip per action);
  (a') the same while another Python thread computes (a pure-Python busy loop): the loop
       thread must win the GIL for every action;
  (b)  the callable defers the task and a Python thread completes it (queue.SimpleQueue):
       the C executor's mode (b), plus the GIL on both threads;
  emu  the executor's emulated compute with zero durations, no Python per action: C worker
       threads complete the actions (the C floor of mode (b), same process, same moment).

Also the floor of entering Python from C: libc's qsort with a ctypes comparator, ns per call.
With --c-bench, runs build/bench/pipesched-exec-bench --quick afterwards and prints its (a)
and (b) figures, the C host's per-action cost, next to these.
"""

import ctypes
import ctypes.util
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
import pipesched

CASES = [("1f1b", 4, 1, 4096, 512), ("interleaved", 16, 2, 128, 32), ("zb-v", 8, 2, 512, 64)]


def timed(fn, reps):
    """Median over reps of the seconds fn returns."""
    return statistics.median(fn() for _ in range(reps))


def mode_a(s):
    return pipesched.execute(s, lambda task: None).seconds


def mode_a_busy(s):
    stop = threading.Event()

    def spin():
        n = 0
        while not stop.is_set():
            n += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        return pipesched.execute(s, lambda task: None).seconds
    finally:
        stop.set()
        t.join()


def mode_b(s):
    q = queue.SimpleQueue()

    def worker():
        while True:
            task = q.get()
            if task is None:
                return
            task.complete()

    t = threading.Thread(target=worker)
    t.start()

    def compute(task):
        task.defer()
        q.put(task)

    try:
        return pipesched.execute(s, compute).seconds
    finally:
        q.put(None)
        t.join()


def mode_emu(s):
    return pipesched.execute(s, emulate=True, time_scale=1e-12).seconds


def callback_floor(n):
    """ns per call of a Python comparator called by libc's qsort through ctypes."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    cmp_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                             ctypes.POINTER(ctypes.c_int))
    calls = [0]

    def cmp(a, b):
        calls[0] += 1
        return 0

    cb = cmp_t(cmp)
    arr = (ctypes.c_int * n)(*range(n))
    t0 = time.perf_counter()
    libc.qsort(arr, n, ctypes.sizeof(ctypes.c_int), cb)
    return (time.perf_counter() - t0) / calls[0] * 1e9


def main():
    quick = "--quick" in sys.argv
    reps = 3 if quick else 5
    print("python executor, zero-duration compute, all ranks local (median of %d runs);" % reps)
    print("ns per action; rate = actions per second")
    print("  %-12s %-18s %7s | %9s %9s | %9s %9s | %9s %9s | %9s" % (
        "family", "size", "actions", "(a) rate", "(a) ns", "(a') rate", "(a') ns", "(b) rate",
        "(b) ns", "emu ns"))
    for family, pp, vpp, m, quick_m in CASES:
        s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=quick_m if quick else m)
        n = s.total_actions
        row = []
        for fn in (mode_a, mode_a_busy, mode_b, mode_emu):
            fn(s)  # warm-up: thread start, first allocations
            t = timed(lambda: fn(s), reps)
            row += [n / t, t / n * 1e9]
        print("  %-12s %-18s %7d | %9.3g %9.0f | %9.3g %9.0f | %9.3g %9.0f | %9.0f" % (
            family, "pp=%d v=%d m=%d" % (pp, vpp, s.microbatches), n, row[0], row[1], row[2],
            row[3], row[4], row[5], row[7]))
    floor = statistics.median(callback_floor(20000) for _ in range(reps))
    print("floor of entering Python from C (libc qsort with a ctypes comparator): "
          "%.0f ns per call" % floor)
    print("switch interval of this Python: %.1f ms (what (a') waits for the GIL at worst)"
          % (sys.getswitchinterval() * 1e3))
    if "--c-bench" in sys.argv:
        exe = sys.argv[sys.argv.index("--c-bench") + 1]
        out = subprocess.run([exe, "--quick"], stdout=subprocess.PIPE, check=True).stdout
        print("C host, %s --quick, dispatch part:" % exe)
        for line in out.decode().splitlines():
            if re.match(r"\s+(family|1f1b|interleaved|zb-v)\s", line) and "makespan" not in line:
                print(line)
            if line.startswith("emulated"):
                break


if __name__ == "__main__":
    main()
