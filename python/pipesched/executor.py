"""The executor from Python: a schedule run for real, with Python callables doing the work.

The executor (``include/pipesched/exec.h``) is the engine the simulator uses, driven by an
event loop instead of a virtual clock: it decides what runs when, hands every action to the
host and waits for the host to say it finished. This module owns that loop (a libuv loop on
a thread of its own, created and closed by the package): a Python program gives callables
and never sees libuv.

The callables::

    def compute(task): ...   # run task.action (F, I, W, B, or a fused FB pair) of task.rank
    def send(task): ...      # start sending task.action's result to task.peer
    def recv(task): ...      # start receiving it from task.peer

Each receives a :class:`Task`. The work it stands for ends in one of three ways:

* the callable returns ``None``: the work ended when it returned (a compute done in place);
* the callable returns a pending object: something with ``wait()`` (``torch.distributed``'s
  ``Work`` from ``isend``/``irecv``), a list or tuple of them, or a
  ``concurrent.futures.Future``: the work ends when that finishes (the package waits for it
  on a thread of its own);
* the callable calls ``task.defer()`` (before handing the task to another thread), and later
  ``task.complete()`` (or ``task.complete(error)``) is called from any thread.

A callable that raises, a pending object that fails, or ``task.complete(error)`` stops the run;
:meth:`Executor.run` then raises :class:`ExecError` naming the rank and the action, with the
Python exception as its ``__cause__``.

Threads. Every callable is called on the executor's loop thread, one at a time, in the
order the engine releases actions (a rank's compute actions strictly in its list's order).
``task.complete()``, :meth:`Executor.cancel` and :meth:`Executor.wait` may be called from
any thread. While a callable runs, the loop waits for it: a long computation holds back the
other ranks' dispatch in the same process, not their work already running elsewhere.

The GIL. Every action crosses into Python and back: the C callback takes the GIL, the
callable runs, the completion goes back through the executor's thread-safe queue.
``bench/python_exec.py`` measures the cost per action (bench/README.md, "Python executor").
"""

import concurrent.futures
import ctypes
import queue
import threading
from collections import namedtuple

from . import _lib
from ._core import ERROR_CODES, Error, Simulation, Timed, _ACTION, _check, _error, _from_fields
from ._lib import text

_UV_RUN_DEFAULT, _UV_RUN_ONCE = 0, 1
_UV_TIMER = 13  # uv_handle_type; checked against uv.h by the python suite (tests/python/abi.c)
_TICK_MS = 50  # the loop thread looks at cancel requests this often


class ExecError(Error):
    """The run stopped before every action ran: ``code`` is EHOST (a callable raised or
    reported an error; ``__cause__`` is the Python exception), ESTALL (nothing completed
    for the stall timeout; the message names what each rank waits for), ECANCELED
    (:meth:`Executor.cancel`, or KeyboardInterrupt in :meth:`Executor.run`); ``result`` is
    the :class:`ExecResult` of what ran."""

    def __init__(self, code, message, result=None):
        super().__init__(code, message)
        self.result = result


ExecError.__module__ = "pipesched"


class Task:
    """One piece of host work: a compute action, or one end of a transfer.

    ``rank``: the local rank doing it; ``action``: the :class:`pipesched.Action` (``kind``
    "F", "I", "W", "B" or "FB" for compute; "SEND_F", "RECV_F", "SEND_B", "RECV_B" for
    transfers); ``kind``, ``stage``, ``mb``, ``chunk``: the action's. For a transfer also
    ``peer`` (the rank at the other end), ``peer_stage``, ``direction`` ("F": an
    activation going forward, "B": an input gradient going back) and ``tag``: a number that
    names this transfer and is the same at both ends (for ``isend``/``irecv`` tags),
    ``(mb * num_stages + producing stage) * 2 + (0 for F, 1 for B)``.
    """

    __slots__ = ("_ex", "token", "rank", "action", "peer", "tag", "_state")

    def __init__(self, ex, token, rank, action, peer=None, tag=None):
        self._ex = ex
        self.token = token
        self.rank = rank
        self.action = action
        self.peer = peer
        self.tag = tag
        self._state = 0  # 0 in the callable, 1 deferred, 2 completed

    kind = property(lambda self: self.action.kind)
    stage = property(lambda self: self.action.stage)
    mb = property(lambda self: self.action.mb)
    chunk = property(lambda self: self.action.chunk)
    peer_stage = property(lambda self: self.action.peer_stage)

    @property
    def direction(self):
        k = self.action.kind
        return k[-1] if k.startswith(("SEND", "RECV")) else None

    def defer(self):
        """Says that the work ends later, with :meth:`complete`: call it before handing the
        task to another thread."""
        with self._ex._lock:
            if self._state == 0:
                self._state = 1

    def complete(self, error=None):
        """Reports the end of the work (thread-safe). ``error``: None for success, or an
        exception (or any other object) for a failure, which stops the run. Completing a task
        twice raises Error (ESTATE); a completion after the run stopped is ignored."""
        self._ex._complete(self, error)

    def __repr__(self):
        extra = "" if self.peer is None else " peer=%d tag=%d" % (self.peer, self.tag)
        return "<Task rank=%d %s%s>" % (self.rank, self.action, extra)


ExecResult = namedtuple("ExecResult", "status seconds timeline metrics measured")
ExecResult.__doc__ = """What a run measured: ``status`` (0: every local action ran),
``seconds`` (the end of the last local action, since the start), ``timeline`` (per rank, a
:class:`pipesched.Timed` per compute action with its measured start and end in seconds; -1
for an action that did not run; empty for a remote rank), ``metrics`` (dict makespan, bubble,
bubble_ratio of the local ranks in seconds, or None when the run failed) and ``measured``
(a :class:`pipesched.Simulation` holding the measured timeline in ``unit`` seconds when
every rank was local, for the same exports and drawings as a simulation; else None)."""


def _per_rank(fn, name):
    if fn is None or callable(fn):
        return lambda rank: fn
    if isinstance(fn, dict):
        return fn.get
    raise TypeError("%s must be a callable or a dict from rank to callable" % name)


class _Waiters:
    """Threads that wait for pending objects and complete their tasks. A new thread starts
    whenever none is idle, so a wait that blocks long never holds back another."""

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = []

    def submit(self, task, pending):
        with self._lock:
            if self._idle == 0:
                t = threading.Thread(target=self._main, name="pipesched-waiter", daemon=True)
                self._threads.append(t)
                t.start()
            else:
                self._idle -= 1
        self._q.put((task, pending))

    def _main(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            task, pending = item
            try:
                for p in pending:
                    p.wait()
            except BaseException as e:  # noqa: B902 - reported to the run, not lost
                task.complete(e)
            else:
                task.complete()
            with self._lock:
                self._idle += 1

    def stop(self):
        """Lets the idle threads end (the busy ones end after their wait)."""
        for _ in self._threads:
            self._q.put(None)


class Executor:
    """Runs ``schedule`` with Python callables doing the work.

    ``compute``, ``send``, ``recv``: callables taking a :class:`Task` (or dicts from rank to
    callable); ``send`` and ``recv`` are needed only when some ranks are remote (``ranks``
    names the local ones; None: every rank in this process, and results move between them
    inside the executor). ``on_event(rank, index, action, start_s, end_s)``: called after each
    compute action, on the loop thread. ``stall_timeout``: stop with ESTALL when nothing
    completed for that many seconds (0: never). ``emulate``: compute takes the cost model's
    duration times ``time_scale`` seconds on a thread per rank, and ``compute`` is not
    called. ``unit``: the time unit of ``ExecResult.measured`` (default: ``time_scale`` when
    emulating, else 1 s).

    :meth:`run` blocks until the run ends; :meth:`start`, :meth:`wait` and :meth:`cancel`
    let the caller do something else meanwhile. An Executor runs once.
    """

    def __init__(self, schedule, compute=None, send=None, recv=None, ranks=None,
                 stall_timeout=0.0, on_event=None, emulate=False, time_scale=1e-3, unit=None):
        self._L = _lib.exec_library()
        if self._L is None:
            raise _error("ESTATE", "this build of pipesched has no executor (libuv was not "
                         "found when it was built: install libuv1-dev and rebuild)")
        if compute is None and not emulate:
            raise _error("EINVAL", "the executor needs a compute callable (or emulate=True)")
        self.schedule = schedule
        self._compute_fns = [_per_rank(compute, "compute")(r) for r in range(schedule.pp)]
        self._send = _per_rank(send, "send")
        self._recv = _per_rank(recv, "recv")
        self._on_event = on_event
        self._ranks = None if ranks is None else sorted(set(int(r) for r in ranks))
        if self._ranks is not None:
            bad = [r for r in self._ranks if not 0 <= r < schedule.pp]
            if bad:
                raise _error("EINVAL", "ranks %s out of range: the schedule has ranks 0..%d"
                             % (bad, schedule.pp - 1))
            remote = len(self._ranks) < schedule.pp
            if remote and (send is None or recv is None):
                raise _error("EINVAL", "ranks %s are local and the others remote: the executor "
                             "needs send and recv callables" % (self._ranks,))
        self._stall = float(stall_timeout)
        self._emulate = bool(emulate)
        self._time_scale = float(time_scale)
        self._unit = float(unit) if unit else (self._time_scale if emulate else 1.0)
        self._lock = threading.Lock()
        self._exec_complete = self._L.ps_exec_complete
        self._closed = False
        self._x = None
        self._started = False
        self._finished = threading.Event()
        self._cancel_requested = False
        self._status = 1
        self._message = ""
        self._cause = None
        self._result = None
        self._waiters = _Waiters()
        # Compute actions come in each rank's list order: the k-th compute callback of rank r
        # is schedule.ranks[r][k] (exec.h: the engine issues the head of a rank's list).
        self._lists = schedule.ranks
        self._next = [0] * schedule.pp
        self._placement = schedule.placement
        self._nstages = schedule.num_stages

    # ---- the C callbacks (loop thread) ----------------------------------------------------

    def _fail(self, exc):
        if self._cause is None:
            self._cause = exc

    def _dispatch(self, fn, task):
        """Calls fn(task) and settles how its work ends. Returns 0, or 1 when fn raised."""
        try:
            pending = fn(task)
        except BaseException as e:  # noqa: B902 - a KeyboardInterrupt on this thread too
            self._fail(e)
            return 1
        if pending is None:
            # The work ended as the callable returned (the common case, inlined: one lock,
            # one call into the library).
            with self._lock:
                if task._state == 0:
                    task._state = 2
                    self._exec_complete(self._x, task.token, 0)
            return 0
        with self._lock:
            task._state = max(task._state, 1)
        if isinstance(pending, concurrent.futures.Future):
            pending.add_done_callback(lambda f: task.complete(
                concurrent.futures.CancelledError() if f.cancelled() else f.exception()))
            return 0
        items = list(pending) if isinstance(pending, (list, tuple)) else [pending]
        if not all(callable(getattr(p, "wait", None)) for p in items):
            self._fail(TypeError("%s returned %r: return None, an object with wait() (a list "
                                 "of them), or a concurrent.futures.Future"
                                 % (getattr(fn, "__name__", "the callable"), pending)))
            return 1
        self._waiters.submit(task, items)
        return 0

    def _c_compute(self, x, a, rank, token, ud):
        try:
            k = self._next[rank]
            self._next[rank] = k + 1
            task = Task(self, token, rank, self._lists[rank][k])
            fn = self._compute_fns[rank]
            if fn is None:
                self._fail(LookupError("no compute callable for rank %d" % rank))
                return 1
            return self._dispatch(fn, task)
        except BaseException as e:  # noqa: B902
            self._fail(e)
            return 1

    def _transfer(self, table, a, rank, token):
        try:
            k, bk, _, st, mb, bst, bmb = _ACTION.unpack(ctypes.string_at(a, _ACTION.size))
            action = _from_fields(k, bk, st, mb, bst, bmb, rank, self.schedule.chunk_of)
            back = action.kind.endswith("B")
            producer = st if action.kind.startswith("SEND") else bst
            tag = (mb * self._nstages + producer) * 2 + back
            task = Task(self, token, rank, action, self._placement[bst], tag)
            fn = table(rank)
            if fn is None:
                self._fail(LookupError("no %s callable for rank %d" % (
                    "send" if action.kind.startswith("SEND") else "recv", rank)))
                return 1
            return self._dispatch(fn, task)
        except BaseException as e:  # noqa: B902
            self._fail(e)
            return 1

    def _c_send(self, x, a, rank, token, ud):
        return self._transfer(self._send, a, rank, token)

    def _c_recv(self, x, a, rank, token, ud):
        return self._transfer(self._recv, a, rank, token)

    def _c_event(self, x, rank, index, a, start, end, ud):
        try:
            self._on_event(rank, index, self._lists[rank][index], start, end)
        except BaseException as e:  # noqa: B902
            self._fail(e)
            self._cancel_requested = True

    def _c_done(self, x, status, ud):
        self._status = status

    def _c_tick(self, handle):
        if self._cancel_requested and self._status == 2:
            self._L.ps_exec_cancel(self._x)

    def _c_exec_closed(self, x, ud):
        pass

    def _c_timer_closed(self, handle):
        pass

    # ---- completions (any thread) ---------------------------------------------------------

    def _complete(self, task, error):
        with self._lock:
            if task._state == 2:
                raise _error("ESTATE", "%r completed twice" % (task,))
            task._state = 2
            if error is not None:
                self._fail(error if isinstance(error, BaseException)
                           else RuntimeError("%r failed: %r" % (task, error)))
            if self._closed:
                return
            self._exec_complete(self._x, task.token, 0 if error is None else 1)

    # ---- running --------------------------------------------------------------------------

    def start(self):
        """Starts the run on the package's loop thread and returns at once."""
        if self._started:
            raise _error("ESTATE", "an Executor runs once; make a new one")
        self._started = True
        ready = threading.Event()
        failure = []

        def main():
            try:
                self._loop_main(ready)
            except BaseException as e:  # noqa: B902 - handed to wait()
                failure.append(e)
                ready.set()
            finally:
                self._finished.set()

        self._thread = threading.Thread(target=main, name="pipesched-exec", daemon=True)
        self._failure = failure
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def _loop_main(self, ready):
        L = self._L
        loop = ctypes.create_string_buffer(L.uv_loop_size())
        rc = L.uv_loop_init(loop)
        if rc:
            raise _error("ESYS", "uv_loop_init: %s" % text(L.uv_strerror(rc)))
        try:
            self._run_on(loop, ready)
        finally:
            L.uv_run(loop, _UV_RUN_DEFAULT)  # the close callbacks
            L.uv_loop_close(loop)

    def _config(self):
        cfg = _lib.ExecConfig()
        self._L.ps_exec_config_init(ctypes.byref(cfg))
        # The ctypes callbacks live as long as the executor (self holds them).
        self._cbs = [_lib.ExecActionCb(self._c_compute), _lib.ExecActionCb(self._c_send),
                     _lib.ExecActionCb(self._c_recv), _lib.ExecEventCb(self._c_event),
                     _lib.ExecDoneCb(self._c_done), _lib.UvTimerCb(self._c_tick),
                     _lib.ExecCloseCb(self._c_exec_closed),
                     _lib.UvCloseCb(self._c_timer_closed)]
        if not self._emulate:
            cfg.compute = self._cbs[0]
        remote = self._ranks is not None and len(self._ranks) < self.schedule.pp
        if remote:
            cfg.send, cfg.recv = self._cbs[1], self._cbs[2]
        if self._on_event is not None:
            cfg.on_event = self._cbs[3]
        cfg.on_done = self._cbs[4]
        if self._ranks is not None:
            self._rank_array = (ctypes.c_int * len(self._ranks))(*self._ranks)
            cfg.local_ranks = self._rank_array
            cfg.n_local = len(self._ranks)
        cfg.stall_timeout_s = self._stall
        if self._emulate:
            cfg.emulate = 1
            cfg.problem = self.schedule.problem._h
            cfg.time_scale = self._time_scale
        return cfg

    def _run_on(self, loop, ready):
        L = self._L
        cfg = self._config()
        x = ctypes.c_void_p()
        rc = L.ps_exec_new(ctypes.byref(x), loop, self.schedule._h, ctypes.byref(cfg), None)
        if rc == ERROR_CODES["ESTATE"]:
            raise Error(rc, "the executor needs a validated schedule: call validate() first")
        _check(rc, lambda: "ps_exec_new: %s (emulate needs costs matching the stages; "
               "time_scale > 0; stall_timeout >= 0)" % text(_lib.C["ps_strerror"](rc)))
        self._x = x
        # The timer's memory outlives the run: libuv uses it until its close callback, in
        # _loop_main's last uv_run.
        timer = self._timer = ctypes.create_string_buffer(L.uv_handle_size(_UV_TIMER))
        L.uv_timer_init(loop, timer)
        L.uv_timer_start(timer, self._cbs[5], _TICK_MS, _TICK_MS)
        L.uv_unref(timer)
        try:
            rc = L.ps_exec_start(x)
            _check(rc, lambda: "ps_exec_start: %s" % text(_lib.C["ps_strerror"](rc)))
            self._status = 2
            ready.set()
            while L.uv_run(loop, _UV_RUN_ONCE) or self._status == 2:
                pass
            self._message = text(L.ps_exec_last_error(x))
            self._result = self._collect(x)
        finally:
            ready.set()
            L.uv_timer_stop(timer)
            L.uv_close(timer, self._cbs[7])
            with self._lock:
                self._closed = True
            L.ps_exec_close(x, self._cbs[6])
            self._waiters.stop()

    def _collect(self, x):
        L = self._L
        local = range(self.schedule.pp) if self._ranks is None else self._ranks
        timeline = [[] for _ in range(self.schedule.pp)]
        last = 0.0
        for r in local:
            acts = self._lists[r]
            n = len(acts)
            starts, ends = L.ps_exec_starts(x, r), L.ps_exec_ends(x, r)
            st = starts[:n] if n else []
            en = ends[:n] if n else []
            timeline[r] = [Timed(a, s0, e0) for a, s0, e0 in zip(acts, st, en)]
            if en:
                last = max(last, max(en))
        metrics = measured = None
        if self._status == 0:
            m = _lib.Metrics()
            if L.ps_exec_metrics(x, 1.0, ctypes.byref(m)) == 0:
                metrics = {"makespan": m.makespan, "bubble": m.bubble,
                           "bubble_ratio": m.bubble_ratio}
            if self._ranks is None or len(self._ranks) == self.schedule.pp:
                try:
                    sim = self.schedule.simulate()
                except Error:
                    sim = None  # a memory limit the schedule exceeds: no measured timeline
                if sim is not None and L.ps_exec_measured(x, self._unit, sim._h) == 0:
                    measured = Simulation(sim._h, sim.schedule, sim.problem)
                    sim._h = None  # handed over to `measured`
        return ExecResult(self._status, last, timeline, metrics, measured)

    def cancel(self):
        """Asks the run to stop (any thread): it ends with ECANCELED within about 50 ms."""
        self._cancel_requested = True

    def wait(self, timeout=None):
        """Waits for the run to end (any thread) and returns its :class:`ExecResult`; raises
        :class:`ExecError` when it stopped early. Returns None if ``timeout`` (seconds) passed
        first."""
        if not self._started:
            raise _error("ESTATE", "the run was not started: call start() or run()")
        if not self._finished.wait(timeout):
            return None
        self._thread.join()
        if self._failure:
            raise self._failure[0]
        if self._status != 0:
            msg = self._message or text(_lib.C["ps_strerror"](self._status))
            if self._cause is not None and not msg.endswith(repr(self._cause)):
                msg = "%s: %s: %s" % (msg, type(self._cause).__name__, self._cause)
            raise ExecError(self._status, msg, self._result) from self._cause
        return self._result

    def run(self):
        """Runs the schedule and returns its :class:`ExecResult` once every local action ran;
        raises :class:`ExecError` when the run stopped early. Ctrl-C cancels the run (and is
        raised again once the loop closed)."""
        self.start()
        try:
            while True:
                r = self.wait(0.1)
                if r is not None:
                    return r
        except KeyboardInterrupt:
            self.cancel()
            self._finished.wait()
            raise


def execute(schedule, compute=None, send=None, recv=None, **options):
    """Runs schedule with the given callables: ``Executor(schedule, compute, send, recv,
    **options).run()``."""
    return Executor(schedule, compute, send, recv, **options).run()
