"""The performance model (model.h: estimate) and the search (tune.h: tune)."""

import ctypes
import json
from collections import namedtuple

from . import _lib
from ._core import Error, Problem, Schedule, Simulation, _check, _config_text, _error, \
    _set_field, _write_collector
from ._lib import C, text

_COMM = ("tp", "cp", "ep", "pp", "dp")
_ERRLEN = 4096
_LAYOUT_CAP = 1 << 16


def models():
    """The names of the built-in models (docs/models.md)."""
    return _names(C["ps_transformer_builtin_name"])


def hardware_presets():
    """The names of the built-in hardware presets (docs/hardware.md)."""
    return _names(C["ps_hardware_builtin_name"])


def _names(fn):
    out, i = [], 0
    while True:
        name = fn(i)
        if not name:
            return out
        out.append(text(name))
        i += 1


def _load(config, model, hardware, train):
    """The model, hardware and train structs of an estimate configuration (docs/config.md,
    "Estimate configuration"): config (dict, JSON text or path) with model, hardware and the
    train keys laid over it. Errors name the JSON path ($.train.tp) and the value."""
    doc = json.loads(_config_text(config)) if config is not None else {}
    if model is not None:
        doc["model"] = model
    if hardware is not None:
        doc["hardware"] = hardware
    if train:
        doc["train"] = dict(doc.get("train", {}), **train)
    raw = json.dumps(doc).encode("utf-8")
    m, hw, tr = _lib.Transformer(), _lib.Hardware(), _lib.Train()
    layout = ctypes.create_string_buffer(_LAYOUT_CAP)
    err = ctypes.create_string_buffer(_ERRLEN)
    rc = C["ps_estimate_config_load"](raw, len(raw), ctypes.byref(m), ctypes.byref(hw),
                                      ctypes.byref(tr), layout, _LAYOUT_CAP, err, _ERRLEN)
    _check(rc, lambda: text(err.value))
    return m, hw, tr, layout


RankMemory = namedtuple("RankMemory",
                        "rank weights grads optimizer activations overhead total peak_inflight")
RankMemory.__doc__ = "GiB one pipeline rank holds at its peak, by kind; peak_inflight chunks."


class Estimate:
    """An estimate of one training configuration (``ps_estimate_run``): step time,
    throughput, MFU, bubble, exposed communication by kind, memory by rank, and the
    simulated schedule behind them (times in seconds).

    Attributes: ``step_time_s``, ``tokens_per_s_per_gpu``, ``model_tflops_per_gpu``,
    ``mfu``, ``bubble_s``, ``compute_s``, ``exposed_s`` (dict: tp, cp, ep, pp, dp),
    ``optimizer_s``, ``dp``, ``microbatches``, ``peak_gib``, ``peak_rank``, ``fits``,
    ``memory`` (a :class:`RankMemory` per pipeline rank), ``stage_layers`` (what each
    virtual stage holds), ``layout`` (the Megatron layout string of that split),
    ``schedule`` and ``simulation`` (for exports and drawings), ``model_name``,
    ``hardware_name``. :meth:`to_trace` writes the step as a Chrome trace."""

    def __init__(self, model=None, hardware=None, config=None, **train):
        m, hw, tr, self._layout_buf = _load(config, model, hardware, train)
        self._run(m, hw, tr)

    @classmethod
    def _of(cls, m, hw, tr):
        """The estimate of structs made elsewhere (a tune row's train)."""
        e = cls.__new__(cls)
        e._layout_buf = None
        e._run(m, hw, tr)
        return e

    def _run(self, m, hw, tr):
        h = ctypes.c_void_p()
        _check(C["ps_estimate_new"](ctypes.byref(h), None))
        self._h = h
        _check(C["ps_estimate_run"](h, ctypes.byref(m), ctypes.byref(hw), ctypes.byref(tr)),
               lambda: text(C["ps_estimate_last_error"](h)))
        r = _lib.EstimateResult()
        _check(C["ps_estimate_result_get"](h, ctypes.byref(r)))
        for name, _ in _lib.EstimateResult._fields_:
            if name != "exposed_s":
                setattr(self, name, getattr(r, name))
        self.fits = bool(r.fits)
        self.exposed_s = dict(zip(_COMM, r.exposed_s))
        self.model_name = text(m.name)
        self.hardware_name = text(hw.name)
        self.memory = []
        pp = C["ps_schedule_pp"](C["ps_estimate_schedule"](h))
        for rank in range(pp):
            rm = _lib.RankMemory()
            _check(C["ps_estimate_rank_memory"](h, rank, ctypes.byref(rm)))
            self.memory.append(RankMemory(rank, rm.weights, rm.grads, rm.optimizer,
                                          rm.activations, rm.overhead, rm.total,
                                          rm.peak_inflight))
        ptr = ctypes.POINTER(_lib.StageLayers)()
        n = _check(C["ps_estimate_stage_layers"](h, ctypes.byref(ptr)))
        self.stage_layers = [{k: getattr(ptr[i], k) for k, _ in _lib.StageLayers._fields_}
                             for i in range(n)]
        buf = ctypes.create_string_buffer(_LAYOUT_CAP)
        rc = C["ps_layout_format"](ptr, n, buf, _LAYOUT_CAP)
        self.layout = text(buf.value) if rc >= 0 else None
        self._schedule = None
        self._simulation = None

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            C["ps_estimate_free"](h)
            self._h = None

    @property
    def schedule(self):
        """The simulated schedule (borrowed from the estimate: it lives as long as this)."""
        if self._schedule is None:
            self._schedule = _Borrowed.schedule(self, C["ps_estimate_schedule"](self._h),
                                                C["ps_estimate_problem"](self._h))
        return self._schedule

    @property
    def simulation(self):
        """The simulation of the step, in seconds (borrowed, as :attr:`schedule`)."""
        if self._simulation is None:
            self._simulation = _Borrowed.simulation(self, self.schedule,
                                                    C["ps_estimate_sim"](self._h))
        return self._simulation

    def to_trace(self):
        """The step as a Chrome/Perfetto trace (JSON text), in real time: the pipeline, then
        each rank's exposed data-parallel communication and optimizer step."""
        write, result = _write_collector()
        _check(C["ps_estimate_write_trace"](self._h, write, None))
        return result()

    def __repr__(self):
        return "<Estimate %s on %s: step %.4f s, MFU %.3f, peak %.2f GiB%s>" % (
            self.model_name, self.hardware_name, self.step_time_s, self.mfu, self.peak_gib,
            "" if self.fits else " (does not fit)")


class _Borrowed:
    """Wrappers of handles that another handle owns (an estimate's schedule, problem and
    simulation): they keep the owner alive and never free the handle."""

    class Problem(Problem):
        def __init__(self, owner, handle):
            self._owner = owner
            self._h = handle

        def __del__(self):
            pass

    class Schedule(Schedule):
        def __del__(self):
            pass

    class Simulation(Simulation):
        def __del__(self):
            pass

    @classmethod
    def schedule(cls, owner, sh, ph):
        s = cls.Schedule(ctypes.c_void_p(sh), cls.Problem(owner, ctypes.c_void_p(ph)))
        s._owner = owner
        return s

    @classmethod
    def simulation(cls, owner, schedule, simh):
        sim = cls.Simulation(ctypes.c_void_p(simh), schedule, schedule.problem)
        sim._owner = owner
        return sim


def estimate(model=None, hardware=None, config=None, **train):
    """Estimates one training configuration of a real model on real hardware.

    ``model``: a built-in name (:func:`models`), ``{"hf": {...config.json...}}`` or
    ``{"base": NAME, ...fields}``; ``hardware``: a preset name (:func:`hardware_presets`) or a
    hardware object (docs/hardware.md); ``train``: the parallel setup and the job by the
    keys of docs/config.md's "train" table (``gpus``, ``tp``, ``pp``, ``vpp``, ``cp``,
    ``ep``, ``gbs``, ``mbs``, ``seq``, ``precision="fp8"``, ``recompute="full"``,
    ``distributed_optimizer=True``, ``schedule``, ``layout``, ...); ``config``: an estimate
    configuration (dict, JSON text or path) they are laid over.

    >>> e = estimate("llama3-70b", "h100-sxm", gpus=64, tp=4, pp=4, vpp=5, cp=2, gbs=128,
    ...              seq=8192, distributed_optimizer=True)

    Returns an :class:`Estimate`; raises Error (ECONFIG naming $.train.KEY and the value, or
    what does not divide)."""
    return Estimate(model, hardware, config, **train)


# ---------------------------------------------------------------------------------------------
# tune


def knobs():
    """The knobs of the search, in the order that numbers the candidates."""
    return [text(C["ps_tune_knob_name"](k)) for k in range(_lib.KNOBS)]


def tune_families():
    """The schedule families the search tries, in its order (its "schedule" knob)."""
    return _names(C["ps_tune_family_name"])


def pareto3(step, peak, gpus):
    """The Pareto front of n points against step time, peak memory and GPU count
    (``ps_tune_pareto3``, as ``tune --gpus 8,16`` merges its fronts): a list of n bools,
    True where no other point is at least as good in all three and better in one (points
    equal in all three are all on it). Raises Error (EINVAL: lists of different lengths)."""
    step, peak, gpus = list(step), list(peak), list(gpus)
    n = len(step)
    if len(peak) != n or len(gpus) != n:
        raise _error("EINVAL", "step, peak and gpus differ in length (%d, %d, %d)"
                     % (n, len(peak), len(gpus)))
    try:
        s = (ctypes.c_double * max(n, 1))(*[float(v) for v in step])
        p = (ctypes.c_double * max(n, 1))(*[float(v) for v in peak])
        g = (ctypes.c_int32 * max(n, 1))(*[int(v) for v in gpus])
    except (TypeError, ValueError):
        raise _error("EINVAL", "step and peak take numbers, gpus whole numbers") from None
    on = (ctypes.c_uint8 * max(n, 1))()
    C["ps_tune_pareto3"](s, p, g, n, on)
    return [bool(v) for v in on[:n]]


def _knob(name):
    k = C["ps_tune_knob_lookup"](str(name).replace("_", "-").encode("utf-8"))
    if k < 0:
        raise Error(k, "unknown knob %r; the knobs: %s" % (name, ", ".join(knobs())))
    return k


def _value(knob, word):
    if isinstance(word, bool):
        word = int(word)
    v = ctypes.c_int32()
    rc = C["ps_tune_value_parse"](knob, str(word).encode("utf-8"), ctypes.byref(v))
    _check(rc, lambda: "bad value %r of knob %s" % (word, knobs()[knob]))
    return v.value


def _word(knob, value):
    buf = ctypes.create_string_buffer(64)
    _check(C["ps_tune_value_name"](knob, value, buf, 64))
    return text(buf.value)


def _typed(knob, value):
    """A knob's value as Python has it: the sizes as int, the distributed optimizer as bool,
    the others as their words ("interleaved", "full", "fp8", "hierarchical")."""
    word = _word(knob, value)
    if knobs()[knob] in ("distributed-optimizer", "split-backward"):
        return bool(value)
    return int(word) if word.isdigit() else word


TuneRow = namedtuple("TuneRow", "index knobs step_time_s tokens_per_s_per_gpu mfu peak_gib "
                     "dp microbatches bubble_s exposed_s gap gap_s recompute_layers")
TuneRow.__doc__ = """One configuration of the search: index (its candidate number), knobs (a
dict by knob name: the sizes as int, "distributed-optimizer" and "split-backward" as bool,
the others as words:
"interleaved", "full", "fp8", "hierarchical"), the estimate's figures and the dominant gap
(what the step spends most on besides compute) with its seconds, and recompute_layers (the
layers per stage of a recompute "fit" row, else 0)."""


class Tune:
    """The result of a search (``ps_tune_run``): ``top`` (the fastest configurations that
    fit, fastest first), ``front`` (the Pareto front of step time against peak memory),
    ``rejections`` (list of (reason, example, count), most frequent first), ``stats``
    (a dict: candidates, rejected, simulated, ..., seconds, limit_gib, min_need_gib) and,
    with ``record_all``, ``csv`` (every candidate's outcome, as ``tune --csv`` writes it;
    else None). :meth:`estimate` gives the full :class:`Estimate` of a row."""

    def __init__(self, model, hardware, config, gpus, gbs, seq, top, threads, mem_reserve_gib,
                 gpus_per_node, no_prune, fix, allow, max, record_all=False, progress=None):
        m, hw, _, _ = _load(config, model, hardware, None)
        job = _lib.TuneJob()
        C["ps_tune_job_init"](ctypes.byref(job))
        for name, arg, v in (("gpus", "gpus", gpus), ("gbs", "gbs", gbs), ("seq", "seq", seq),
                             ("top_k", "top", top), ("threads", "threads", threads),
                             ("mem_reserve_gib", "mem_reserve_gib", mem_reserve_gib),
                             ("gpus_per_node", "gpus_per_node", gpus_per_node)):
            if v is not None:
                _set_field(job, name, arg, v)
        job.no_prune = int(bool(no_prune))
        job.record_all = int(bool(record_all))
        raised = []
        if progress is not None:
            if not callable(progress):
                raise _error("EINVAL", "progress must be callable: progress(done, total, "
                             "seconds, best_step_s)")

            def relay(ud, p):
                if raised:
                    return
                try:
                    q = p.contents
                    progress(q.done, q.total, q.seconds, q.best_step_s)
                except BaseException as e:  # carried out of the C frames, raised after the run
                    raised.append(e)

            job.progress = _lib.TuneProgressFn(relay)
        h = ctypes.c_void_p()
        _check(C["ps_tune_new"](ctypes.byref(h), None))
        try:
            self._constrain(h, fix or {}, allow or {}, max or {})
            _check(C["ps_tune_run"](h, ctypes.byref(m), ctypes.byref(hw), ctypes.byref(job)),
                   lambda: text(C["ps_tune_last_error"](h)))
            if raised:
                raise raised[0]
            self._read(h)
            self.csv = None
            if record_all:
                write, result = _write_collector()
                _check(C["ps_tune_write_csv"](h, write, None),
                       lambda: text(C["ps_tune_last_error"](h)))
                self.csv = result()
        finally:
            C["ps_tune_free"](h)
        job.progress = _lib.TuneProgressFn()
        self._m, self._hw, self._job = m, hw, job
        self.model_name = text(m.name)
        self.hardware_name = text(hw.name)

    def estimate(self, row):
        """The :class:`Estimate` of a row of this search (of ``top`` or ``front``): the same
        model, hardware and job, the row's knobs (``ps_tune_config_train``). Its figures are
        the row's: the search simulates each candidate with the estimate."""
        cfg = _lib.TuneConfig()
        names = knobs()
        for k, name in enumerate(names):
            cfg.knob[k] = _value(k, row.knobs[name])
        tr = _lib.Train()
        C["ps_tune_config_train"](ctypes.byref(self._job), ctypes.byref(cfg), ctypes.byref(tr))
        return Estimate._of(self._m, self._hw, tr)

    @staticmethod
    def _constrain(h, fix, allow, max_):
        seen = {}
        for what, table in (("fix", fix), ("allow", allow), ("max", max_)):
            for name, values in table.items():
                k = _knob(name)
                if k in seen:
                    raise _error("EINVAL", "knob %s is in both %s and %s: contradictory "
                                 "constraints" % (knobs()[k], seen[k], what))
                seen[k] = what
                if what == "max":
                    _check(C["ps_tune_max"](h, k, int(values)),
                           lambda: text(C["ps_tune_last_error"](h)))
                    continue
                if what == "fix" or isinstance(values, (str, int, bool)):
                    values = [values]
                vals = [_value(k, v) for v in values]
                arr = (ctypes.c_int32 * len(vals))(*vals)
                _check(C["ps_tune_allow"](h, k, arr, len(vals)),
                       lambda: text(C["ps_tune_last_error"](h)))

    def _read(self, h):
        st = _lib.TuneStats()
        _check(C["ps_tune_stats_get"](h, ctypes.byref(st)))
        self.stats = {name: getattr(st, name) for name, _ in _lib.TuneStats._fields_}
        names = knobs()

        def row(getter, i):
            r = _lib.TuneRow()
            _check(getter(h, i, ctypes.byref(r)))
            e = r.result
            return TuneRow(r.index, {names[k]: _typed(k, r.config.knob[k])
                                     for k in range(_lib.KNOBS)},
                           e.step_time_s, e.tokens_per_s_per_gpu, e.mfu, e.peak_gib, e.dp,
                           e.microbatches, e.bubble_s, dict(zip(_COMM, e.exposed_s)),
                           text(C["ps_tune_gap_name"](r.gap)), r.gap_s,
                           r.config.recompute_layers)

        self.top = [row(C["ps_tune_top"], i) for i in range(C["ps_tune_top_count"](h))]
        self.front = [row(C["ps_tune_front"], i) for i in range(C["ps_tune_front_count"](h))]
        self.rejections = []
        for i in range(C["ps_tune_reason_count"](h)):
            t, ex, n = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_uint64()
            _check(C["ps_tune_reason"](h, i, ctypes.byref(t), ctypes.byref(ex),
                                       ctypes.byref(n)))
            self.rejections.append((text(t.value), text(ex.value), n.value))

    def __repr__(self):
        return "<Tune %s on %s: %d candidates, %d fit, best %s>" % (
            self.model_name, self.hardware_name, self.stats["candidates"],
            self.stats["fitting"], "%.4f s" % self.top[0].step_time_s if self.top else "none")


def tune(model=None, hardware=None, gpus=None, gbs=None, seq=None, top=10, threads=0,
         mem_reserve_gib=None, gpus_per_node=None, no_prune=False, fix=None, allow=None,
         max=None, config=None, record_all=False, progress=None):
    """Searches the parallel configurations of a job (docs/tune.md): every combination of the
    knobs (:func:`knobs`: tp, cp, pp, ep, etp, vpp, schedule, mbs, recompute (none,
    selective, full, fit), distributed-optimizer, precision, a2a, layout (even, balanced,
    first, last, first-last), group) that the
    constraints leave, each candidate simulated with the estimate. The group size (in
    multiples of pp) and layout "auto" join only when ``allow`` names them:
    ``allow={"group": [1, 2], "layout": ["even", "balanced", "auto"]}``.

    ``model``, ``hardware``, ``config``: as for :func:`estimate`; ``gpus``, ``gbs``,
    ``seq``: the job; ``top``: rows kept; ``threads`` (0: every core); constraints by knob
    name: ``fix={"tp": 4}``, ``allow={"schedule": ["1f1b", "zb-v"], "pp": [2, 4]}``,
    ``max={"pp": 8}``; ``record_all``: keep every candidate's outcome (:attr:`Tune.csv`);
    ``progress``: called as ``progress(done, total, seconds, best_step_s)`` between chunks
    of candidates (at most every 0.2 s, and once at the end); an exception it raises is
    raised once the search returns.

    Returns a :class:`Tune`; raises Error (ECONFIG naming the knob when a constraint leaves
    no value, or what the model or job get wrong)."""
    return Tune(model, hardware, config, gpus, gbs, seq, top, threads, mem_reserve_gib,
                gpus_per_node, no_prune, fix, allow, max, record_all, progress)
