"""Load balancing (balance.h, docs/balance.md): data reordering over data-parallel ranks and
expert placement over expert-parallel devices."""

import ctypes
from collections import namedtuple

from . import _lib
from ._core import Error, Problem, _check, _error, _i32
from ._lib import C, text

_ERRLEN = 1024


def _err_buf():
    return ctypes.create_string_buffer(_ERRLEN)


def _model_struct(model):
    """A ps_transformer from a built-in name or a model object (as estimate takes them)."""
    from ._model import _load, hardware_presets

    return _load(None, model, hardware_presets()[0], None)[0]


def _hardware_struct(hardware):
    """A ps_hardware from a preset name or a hardware object (docs/hardware.md)."""
    from ._model import _load, models

    return _load(None, models()[0], hardware, None)[1]


def _model_hardware(model, hardware):
    from ._model import _load

    m, hw, _, _ = _load(None, model, hardware, None)
    return m, hw


def _doubles(values, what):
    try:
        vals = [float(v) for v in values]
    except (TypeError, ValueError):
        raise _error("EINVAL", "%s: expected a list of numbers" % what) from None
    return (ctypes.c_double * max(len(vals), 1))(*vals), len(vals)


def _ints(values, what):
    try:
        vals = [int(v) for v in values]
    except (TypeError, ValueError):
        raise _error("EINVAL", "%s: expected a list of whole numbers" % what) from None
    if any(not -2 ** 31 <= v < 2 ** 31 for v in vals):
        raise _error("ERANGE", "%s: a value outside the 32-bit range" % what)
    return (ctypes.c_int32 * max(len(vals), 1))(*vals), len(vals)


# ---------------------------------------------------------------------------------------------
# D: data reordering

Sample = namedtuple("Sample", "tokens sq docs")
Sample.__doc__ = """A sample of a global batch (a packed sequence of documents): tokens (the sum
of its document lengths), sq (the sum of their squares), docs (how many)."""


class SampleModel(namedtuple("SampleModel", "a c d")):
    """The linear model of a sample's compute time: ``a * sq + c * tokens + d``
    (docs/balance-data.md). :meth:`time` predicts one sample's time."""

    __slots__ = ()

    def time(self, sample):
        """The predicted time of a :class:`Sample` (or a list of document lengths)."""
        if not isinstance(sample, Sample):
            sample = _sample_of(sample)
        m = _lib.SampleModel(self.a, self.c, self.d)
        x = _lib.Sample(sample.tokens, sample.sq, sample.docs)
        return C["ps_sample_time"](ctypes.byref(m), ctypes.byref(x))


def _sample_of(lengths):
    lengths = [int(n) for n in lengths]
    return Sample(float(sum(lengths)), float(sum(n * n for n in lengths)), len(lengths))


def parse_samples(text_):
    """Parses a samples file's text (str or bytes): one sample per line, its document lengths
    separated by commas (``"512,2048,128"``). Returns a list of :class:`Sample`.

    Raises Error (EPARSE with the library's message naming the line and the column)."""
    raw = text_.encode("utf-8") if isinstance(text_, str) else bytes(text_)
    err = _err_buf()
    n = ctypes.c_size_t()
    _check(C["ps_samples_parse"](raw, len(raw), None, 0, ctypes.byref(n), err, _ERRLEN),
           lambda: text(err.value))
    out = (_lib.Sample * max(n.value, 1))()
    _check(C["ps_samples_parse"](raw, len(raw), out, n.value, ctypes.byref(n), err, _ERRLEN),
           lambda: text(err.value))
    return [Sample(s.tokens, s.sq, s.docs) for s in out[:n.value]]


def sample_model(model, hardware):
    """The :class:`SampleModel` of a model on a device (``ps_sample_model_derive``): c from
    the GEMM FLOPs of a token at the bf16 peak times gemm_eff, a from the causal attention
    FLOPs per squared document length at the peak times attn_eff, d = 0 (seconds of one
    device). ``model`` and ``hardware`` as for :func:`pipesched.estimate`.

    Raises Error (ECONFIG naming what fails the model's or the hardware's check)."""
    m, hw = _model_hardware(model, hardware)
    out = _lib.SampleModel()
    err = _err_buf()
    _check(C["ps_sample_model_derive"](ctypes.byref(m), ctypes.byref(hw), ctypes.byref(out),
                                       err, _ERRLEN), lambda: text(err.value))
    return SampleModel(out.a, out.c, out.d)


class DataBalance:
    """An assignment of the samples of a global batch (``ps_balance_data``): ``rank`` and
    ``slot`` (lists: sample i runs on data-parallel rank ``rank[i]`` in micro-batch slot
    ``slot[i]``), ``step_time`` (the slowest replica's simulated makespan, in the times'
    unit), ``baseline_step_time`` (the input order dealt round-robin), ``lpt_step_time``
    (the longest-processing-time start), ``gain`` (baseline / step_time - 1), ``evals``
    (simulations run), and ``dp``, ``microbatches``, ``mbs``."""

    def __init__(self, rank, slot, result, dp, microbatches, mbs):
        self.rank = list(rank)
        self.slot = list(slot)
        self.step_time = result.step_time
        self.baseline_step_time = result.baseline_step_time
        self.lpt_step_time = result.lpt_step_time
        self.evals = result.evals
        self.gain = (self.baseline_step_time / self.step_time - 1) if self.step_time > 0 else 0.0
        self.dp, self.microbatches, self.mbs = dp, microbatches, mbs

    def __repr__(self):
        return "<DataBalance %d samples over dp %d: step %g (round-robin %g), gain %+.1f%%>" % (
            len(self.rank), self.dp, self.step_time, self.baseline_step_time, 100 * self.gain)


def balance_data(times, dp, microbatches, mbs=None, max_evals=0, cost=None, family="1f1b",
                 config=None, **options):
    """Assigns the samples of a global batch to data-parallel ranks and micro-batch slots so
    that the slowest replica's simulated pipeline is shortest (docs/balance-data.md).

    ``times``: each sample's predicted time (numbers), or the samples themselves
    (:class:`Sample` or lists of document lengths) with ``cost`` a :class:`SampleModel`;
    ``dp`` ranks of ``microbatches`` slots of ``mbs`` samples each (default: the samples
    divided by dp x microbatches); ``max_evals``: simulations the search may run (0: the
    library's default); ``family``, ``config`` and ``options`` the pipeline every replica
    runs, as for :func:`pipesched.generate` (its micro-batch count is replaced).

    Returns a :class:`DataBalance`. Raises Error (ECONFIG with the library's message when the
    samples do not fill dp x microbatches x mbs, a time is negative or not finite, or the
    schedule refuses that many micro-batches)."""
    times = list(times)
    if cost is not None:
        cost = SampleModel(*cost)
        times = [cost.time(x) for x in times]
    arr, n = _doubles(times, "times")
    dp, microbatches = _i32(dp, "dp"), _i32(microbatches, "microbatches")
    if mbs is None:
        per = dp * microbatches
        mbs = n // per if per > 0 else 0
    mbs = _i32(mbs, "mbs")
    pb = Problem(family, config=config, **options)
    cfg = _lib.DataConfig(dp, microbatches, mbs, _i32(max_evals, "max_evals", 64))
    rank = (ctypes.c_int32 * max(n, 1))()
    slot = (ctypes.c_int32 * max(n, 1))()
    res = _lib.DataResult()
    err = _err_buf()
    rc = C["ps_balance_data"](pb._h, arr, n, ctypes.byref(cfg), rank, slot, ctypes.byref(res),
                              err, _ERRLEN)
    _check(rc, lambda: text(err.value))
    return DataBalance(rank[:n], slot[:n], res, dp, microbatches, mbs)


# ---------------------------------------------------------------------------------------------
# E: expert placement


class ExpertTrace:
    """A routing trace (``ps_expert_trace``): the tokens each expert of each MoE layer
    received at each training step. Build one with :meth:`load` (a CSV
    ``step,layer,expert,tokens`` or one line of per-expert tokens per layer) or
    :meth:`synthetic` (``"zipf:S[,drift:X][,seed:N][,steps:T][,tokens:K]"``).

    ``steps``, ``layers``, ``experts``; :meth:`tokens` one entry; :meth:`predict` the EMA
    prediction per layer. Usable as a context manager; :meth:`close` frees it at once
    (else the garbage collector does)."""

    def __init__(self):
        h = ctypes.c_void_p()
        _check(C["ps_expert_trace_new"](ctypes.byref(h), None))
        self._h = h
        self._shape = None

    @classmethod
    def load(cls, text_):
        """A trace from its text (str or bytes; docs/balance.md gives the formats). Raises
        Error (EPARSE naming the line and the column, ERANGE beyond the bounds)."""
        t = cls()
        raw = text_.encode("utf-8") if isinstance(text_, str) else bytes(text_)
        t._fill(C["ps_expert_trace_load"](t._h, raw, len(raw)))
        return t

    @classmethod
    def synthetic(cls, spec, layers, experts):
        """A seeded synthetic trace of ``layers`` MoE layers of ``experts`` experts. Raises
        Error (ECONFIG naming the word of the spec that is wrong, ERANGE beyond the bounds)."""
        t = cls()
        t._fill(C["ps_expert_trace_synthetic"](t._h, str(spec).encode("utf-8"),
                                               _i32(layers, "layers"),
                                               _i32(experts, "experts")))
        return t

    def _fill(self, rc):
        if rc < 0:
            msg = text(C["ps_expert_trace_last_error"](self._h))
            self.close()
            raise Error(rc, msg)
        s, l, e = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32()
        _check(C["ps_expert_trace_shape"](self._h, ctypes.byref(s), ctypes.byref(l),
                                          ctypes.byref(e)))
        self._shape = (s.value, l.value, e.value)

    def _live(self):
        if not getattr(self, "_h", None):
            raise _error("ESTATE", "the expert trace is closed")
        return self._h

    @property
    def shape(self):
        """(steps, layers, experts)."""
        self._live()
        return self._shape

    steps = property(lambda self: self.shape[0], doc="training steps of the trace")
    layers = property(lambda self: self.shape[1], doc="MoE layers")
    experts = property(lambda self: self.shape[2], doc="experts per layer")

    def tokens(self, step, layer, expert):
        """The tokens expert ``expert`` of layer ``layer`` received at step ``step``. Raises
        IndexError outside the trace."""
        v = C["ps_expert_trace_tokens"](self._live(), _i32(step, "step"), _i32(layer, "layer"),
                                        _i32(expert, "expert"))
        if v < 0:
            raise IndexError("(step %d, layer %d, expert %d) is outside the trace of shape %s"
                             % (step, layer, expert, self._shape))
        return v

    def predict(self, theta=0.9):
        """The EMA prediction of every expert's load after the last step: a list per layer of
        a float per expert (P_1 = EL_0, P_{t+1} = theta P_t + (1 - theta) EL_t). Raises Error
        (ERANGE: theta outside [0, 1))."""
        h = self._live()
        steps, layers, experts = self._shape
        out = (ctypes.c_double * (layers * experts))()
        _check(C["ps_expert_trace_predict"](h, float(theta), out),
               lambda: "theta %r is outside [0, 1)" % (theta,))
        return [list(out[l * experts:(l + 1) * experts]) for l in range(layers)]

    def close(self):
        """Frees the trace now (afterwards its methods raise Error ESTATE)."""
        h = getattr(self, "_h", None)
        if h:
            C["ps_expert_trace_free"](h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if not getattr(self, "_h", None):
            return "<ExpertTrace closed>"
        return "<ExpertTrace %d steps x %d layers x %d experts>" % self._shape


ExpertGroup = namedtuple("ExpertGroup", "devices nodes capacity", defaults=(1, 0))
ExpertGroup.__doc__ = """The expert-parallel group: ``devices`` on ``nodes`` (the same count on
each), ``capacity`` experts per device (0: experts / devices, which must then divide)."""

ExpertLayerTime = namedtuple("ExpertLayerTime",
                             "device gemm_s a2a_s layer_s a2a_bytes a2a_inter_bytes")
ExpertLayerTime.__doc__ = """One MoE layer's time per step on the slowest device of a placement:
``device``, its expert GEMMs ``gemm_s``, its all-to-all ``a2a_s``, ``layer_s`` (their sum),
the bytes it receives ``a2a_bytes``, of which from other nodes ``a2a_inter_bytes``."""


def _group(group):
    if isinstance(group, int):
        group = ExpertGroup(group)
    elif not isinstance(group, ExpertGroup):
        group = ExpertGroup(*group)
    return _lib.ExpertGroup(_i32(group.devices, "devices"), _i32(group.nodes, "nodes"),
                            _i32(group.capacity, "capacity"))


def expert_group_check(group, experts):
    """Checks ``group`` (an :class:`ExpertGroup`, a tuple of its fields or a device count)
    against a layer of ``experts`` experts; returns the capacity in force. Raises Error
    (ECONFIG with the reason)."""
    g = _group(group)
    cap = ctypes.c_int32()
    err = _err_buf()
    _check(C["ps_expert_group_check"](ctypes.byref(g), _i32(experts, "experts"),
                                      ctypes.byref(cap), err, _ERRLEN), lambda: text(err.value))
    return cap.value


def expert_identity(experts, group):
    """Megatron's placement: device d holds experts d*c .. d*c + c - 1 (a list of the device
    of each expert). Raises Error (ECONFIG as :func:`expert_group_check`)."""
    g = _group(group)
    experts = _i32(experts, "experts")
    if experts < 1:
        raise _error("EINVAL", "experts must be >= 1; got %d" % experts)
    out = (ctypes.c_int32 * experts)()
    err = _err_buf()
    _check(C["ps_expert_group_check"](ctypes.byref(g), experts, None, err, _ERRLEN),
           lambda: text(err.value))
    _check(C["ps_expert_identity"](experts, ctypes.byref(g), out))
    return out[:experts]


def expert_device_loads(load, device_of, devices):
    """The load of each device (the sum of its experts' loads): a list of ``devices`` floats.
    Raises Error (EINVAL: the lists differ in length, or an expert's device is outside
    [0, devices))."""
    w, n = _doubles(load, "load")
    d, nd = _ints(device_of, "device_of")
    if n != nd:
        raise _error("EINVAL", "load has %d experts but device_of %d" % (n, nd))
    devices = _i32(devices, "devices")
    if devices < 1:
        raise _error("EINVAL", "devices must be >= 1; got %d" % devices)
    out = (ctypes.c_double * devices)()
    if C["ps_expert_device_loads"](w, n, d, devices, out) < 0:
        raise _error("EINVAL", "an expert's device is outside [0, %d)" % devices)
    return list(out)


def place_experts(load, group, current=None):
    """Places the experts of one layer with predicted loads ``load`` (>= 0) on ``group``'s
    devices so that the most loaded device carries as little as it can (nodes first, then
    the devices of each node; ``ps_expert_place``). ``current``: the placement in force,
    which a result no better than it keeps. Returns the device of each expert (a list).
    Raises Error (ECONFIG with the library's reason)."""
    w, n = _doubles(load, "load")
    g = _group(group)
    cur = None
    if current is not None:
        cur, nc = _ints(current, "current")
        if nc != n:
            raise _error("EINVAL", "current has %d experts but load %d" % (nc, n))
    out = (ctypes.c_int32 * max(n, 1))()
    err = _err_buf()
    _check(C["ps_expert_place"](w, n, ctypes.byref(g), cur, out, None, err, _ERRLEN),
           lambda: text(err.value))
    return out[:n]


def expert_align(current, placement, group):
    """``placement`` with its devices relabelled (whole nodes among nodes, devices within a
    node: the loads stay) so that as many experts as possible stay where ``current`` has
    them. Returns the new list. Raises Error (ECONFIG: a device out of range)."""
    cur, n = _ints(current, "current")
    out, n2 = _ints(placement, "placement")
    if n != n2:
        raise _error("EINVAL", "current has %d experts but placement %d" % (n, n2))
    g = _group(group)
    _check(C["ps_expert_align"](cur, out, n, ctypes.byref(g), None),
           lambda: "a device outside the group of %d devices" % g.devices)
    return out[:n]


_PRECISIONS = ("bf16", "fp8")


def expert_layer_time(model, hardware, load, device_of, group, precision="bf16"):
    """One MoE layer's time per step on the slowest device of the placement ``device_of``
    (docs/balance.md): an :class:`ExpertLayerTime`. ``model`` and ``hardware`` as for
    :func:`pipesched.estimate`; ``precision``: "bf16" or "fp8". Raises Error (ECONFIG: a
    dense model, experts other than the model's, a device out of range)."""
    if precision not in _PRECISIONS:
        raise _error("EINVAL", "precision must be bf16 or fp8; got %r" % (precision,))
    m, hw = _model_hardware(model, hardware)
    w, n = _doubles(load, "load")
    d, nd = _ints(device_of, "device_of")
    if n != nd:
        raise _error("EINVAL", "load has %d experts but device_of %d" % (n, nd))
    g = _group(group)
    out = _lib.ExpertLayerTime()
    err = _err_buf()
    _check(C["ps_expert_layer_time_get"](ctypes.byref(m), ctypes.byref(hw),
                                         _PRECISIONS.index(precision), w, n, d, ctypes.byref(g),
                                         ctypes.byref(out), err, _ERRLEN),
           lambda: text(err.value))
    return ExpertLayerTime(out.device, out.gemm_s, out.a2a_s, out.layer_s, out.a2a_bytes,
                           out.a2a_inter_bytes)


def expert_migration_bytes(model):
    """Bytes that moving one expert of ``model`` carries (its parameters times 14); 0 for a
    dense model."""
    m = _model_struct(model)
    return C["ps_expert_migration_bytes"](ctypes.byref(m))


def expert_migration(from_, to, group, bytes_per_expert, hardware):
    """The time to move a layer from placement ``from_`` to ``to`` over ``hardware``'s links:
    (seconds, moved experts). Raises Error (ECONFIG: a device out of range)."""
    a, n = _ints(from_, "from_")
    b, n2 = _ints(to, "to")
    if n != n2:
        raise _error("EINVAL", "from_ has %d experts but to %d" % (n, n2))
    g = _group(group)
    hw = _hardware_struct(hardware)
    moved, sec = ctypes.c_int32(), ctypes.c_double()
    _check(C["ps_expert_migration_s"](a, b, n, ctypes.byref(g), float(bytes_per_expert),
                                      ctypes.byref(hw), ctypes.byref(moved), ctypes.byref(sec)),
           lambda: "a device outside the group of %d devices" % g.devices)
    return sec.value, moved.value


def expert_should_migrate(before_s, after_s, migration_s, horizon):
    """True when ``horizon`` steps of the gain (before_s - after_s per step) exceed the
    migration's seconds."""
    return bool(C["ps_expert_should_migrate"](float(before_s), float(after_s),
                                              float(migration_s), _i32(horizon, "horizon")))


# ---------------------------------------------------------------------------------------------
# EDPB in the estimate

Imbalance = namedtuple(
    "Imbalance",
    "even_step_time_s imbalanced_step_time_s experts_step_time_s balanced_step_time_s "
    "expert_factor expert_factor_balanced data_imbalance data_imbalance_balanced "
    "slowest_replica slowest_replica_balanced evals rank slot")
Imbalance.__doc__ = """The step time of a job with uneven samples and expert loads
(``ps_edpb_estimate``, docs/balance.md "In the estimate"): even (no imbalance), imbalanced
(input order, identity placement), experts placed, and balanced (placed and the samples
reordered); the experts' mean max/mean device load before and after; the data imbalance
(heaviest replica's mean slot weight) before and after; the replicas that set the step; the
reordering's simulations; ``rank`` and ``slot``: the balanced assignment of each sample in
input order (lists), or None without samples."""


def _samples_array(samples, tr):
    """A ps_sample array of samples: None, a synthetic spec (``"lognormal:MU,SIGMA"``, one
    sample per sequence of the global batch), or a list of :class:`Sample` or of lists of
    document lengths."""
    if samples is None:
        return None, 0
    if isinstance(samples, (str, bytes)):
        spec = samples.encode("utf-8") if isinstance(samples, str) else samples
        n = int(tr.gbs)
        out = (_lib.Sample * max(n, 1))()
        err = _err_buf()
        _check(C["ps_samples_synthetic"](spec, tr.seq, out, n, err, _ERRLEN),
               lambda: text(err.value))
        return out, n
    xs = [x if isinstance(x, Sample) else _sample_of(x) for x in samples]
    out = (_lib.Sample * max(len(xs), 1))(*[_lib.Sample(x.tokens, x.sq, x.docs) for x in xs])
    return out, len(xs)


def estimate_imbalance(model=None, hardware=None, config=None, samples=None, trace=None,
                       theta=0.9, max_evals=0, **train):
    """The step time of one configuration (as :func:`pipesched.estimate` takes it: ``model``,
    ``hardware``, ``config`` and the train keys) with the imbalance of real data, without and
    with balancing (what ``pipesched estimate --samples/--expert-load`` prints).

    ``samples``: the global batch's samples in input order (``gbs`` of them; a list of
    :class:`Sample` or of lists of document lengths, as :func:`parse_samples` gives), or a
    synthetic spec ``"lognormal:MU,SIGMA[,seed:N]"``; ``trace``: an :class:`ExpertTrace` of
    the model's experts; ``theta``: its EMA factor; ``max_evals``: the reordering's budget of
    simulations (0: its default).

    Returns an :class:`Imbalance`; raises Error (ECONFIG: a sample count other than gbs, a
    trace that does not match the model, a dense model with a trace; ERANGE: theta outside
    [0, 1))."""
    from ._model import _load

    m, hw, tr, _layout = _load(config, model, hardware, train)
    xs, n = _samples_array(samples, tr)
    inp = _lib.EdpbInput()
    if xs is not None:
        inp.samples = ctypes.cast(xs, ctypes.POINTER(_lib.Sample))
        inp.n_samples = n
    if trace is not None:
        if not isinstance(trace, ExpertTrace):
            raise _error("EINVAL", "trace must be an ExpertTrace; got %r" % (trace,))
        inp.trace = trace._live()
    try:
        inp.theta = float(theta)
    except (TypeError, ValueError):
        raise _error("EINVAL", "theta must be a number; got %r" % (theta,)) from None
    inp.max_evals = _i32(max_evals, "max_evals", 64)
    out = _lib.EdpbResult()
    rank = (ctypes.c_int32 * max(n, 1))()
    slot = (ctypes.c_int32 * max(n, 1))()
    h = ctypes.c_void_p()
    _check(C["ps_estimate_new"](ctypes.byref(h), None))
    err = _err_buf()
    try:
        _check(C["ps_edpb_estimate"](h, ctypes.byref(m), ctypes.byref(hw), ctypes.byref(tr),
                                     ctypes.byref(inp), ctypes.byref(out),
                                     rank if n else None, slot if n else None, err, _ERRLEN),
               lambda: text(err.value) or text(C["ps_estimate_last_error"](h)))
    finally:
        C["ps_estimate_free"](h)
    figures = [getattr(out, name) for name, _ in _lib.EdpbResult._fields_]
    return Imbalance(*figures, list(rank[:n]) if n else None, list(slot[:n]) if n else None)
