"""Errors, actions, families, problems, schedules and simulations: libpipesched's core."""

import csv
import ctypes
import difflib
import io
import json
import operator
import os
import struct
from collections import namedtuple

from . import _lib
from ._lib import C, text

# ---------------------------------------------------------------------------------------------
# Errors


class Error(Exception):
    """A failure reported by libpipesched.

    ``str(e)`` is the library's message (the detailed one of the handle that failed, which
    names the key, the line and column or the blocked action); ``e.code`` is the negative
    ``PS_E*`` code and ``e.name`` its symbolic name without the prefix (``"EUNSUPPORTED"``).
    The codes are also module constants: ``e.code == pipesched.EUNSUPPORTED``.
    """

    def __init__(self, code, message=""):
        self.code = code
        self.name = text(C["ps_err_name"](code))
        self.message = message or text(C["ps_strerror"](code))
        super().__init__(self.message)

    def __repr__(self):
        return "pipesched.Error(%s, %r)" % (self.name, self.message)


Error.__module__ = "pipesched"  # tracebacks say pipesched.Error, the name users catch


def _codes():
    codes = {}
    for code in range(-1, -64, -1):
        name = text(C["ps_err_name"](code))
        if name == "UNKNOWN":
            break
        codes[name] = code
    return codes


# EINVAL, ENOMEM, ... as the library's table defines them (pipesched.h, PS_ERRNO_MAP).
ERROR_CODES = _codes()


def _check(rc, message=None):
    """Raises Error(rc, message()) when rc is a failure; returns rc otherwise."""
    if rc < 0:
        raise Error(rc, message() if message else "")
    return rc


def _error(code_name, message):
    return Error(ERROR_CODES[code_name], message)


def _i32(value, what, bits=32):
    """A whole number for a C int32_t (int64_t with bits=64): refused rather than wrapped."""
    try:
        v = operator.index(value)
    except TypeError:
        if not (isinstance(value, float) and value.is_integer()):
            raise _error("EINVAL", "%s must be a whole number; got %r" % (what, value)) from None
        v = int(value)
    if isinstance(value, bool):
        raise _error("EINVAL", "%s must be a whole number; got %r" % (what, value))
    if not -2 ** (bits - 1) <= v < 2 ** (bits - 1):
        raise _error("ERANGE", "%s = %d is outside the %d-bit range" % (what, v, bits))
    return v


def _set_field(struct, field, arg, v):
    """Sets a ctypes field from argument ``arg``, refusing what ctypes would silently wrap or
    cut (2**32 + 8 into an int32 is 8): a whole number in the field's range (not a bool), or
    for a double field a real number. The library checks the values' own bounds after."""
    ctype = dict(type(struct)._fields_)[field]
    if ctype is ctypes.c_double:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _error("EINVAL", "%s must be a number; got %r" % (arg, v))
        setattr(struct, field, float(v))
    else:
        setattr(struct, field, _i32(v, arg, 8 * ctypes.sizeof(ctype)))


def _write_collector():
    """A ps_write_fn that gathers what the library writes, and a function returning it."""
    chunks = []

    def write(ud, data, n):
        chunks.append(ctypes.string_at(data, n))
        return 0

    return _lib.WriteFn(write), lambda: b"".join(chunks).decode("utf-8")


# ---------------------------------------------------------------------------------------------
# Actions

_KIND_NAMES = ("F", "I", "W", "B", "FB", "SEND_F", "RECV_F", "SEND_B", "RECV_B")
_KIND_CODES = {name: code for code, name in enumerate(_KIND_NAMES)}
_COMPUTE = frozenset(("F", "I", "W", "B", "FB"))
_ACTION = struct.Struct("<BBHiiii")  # ps_action
assert _ACTION.size == ctypes.sizeof(_lib.Action)


class Action:
    """One action of a rank's list.

    ``kind`` is ``"F"`` (forward), ``"I"`` (backward for inputs), ``"W"`` (backward for
    weights), ``"B"`` (full backward), ``"FB"`` (a fused pair: ``forward`` and ``backward``
    are its two parts, each an Action), or a transfer of the lowered lists: ``"SEND_F"``,
    ``"RECV_F"``, ``"SEND_B"``, ``"RECV_B"`` (``peer_stage`` is the stage at the other end).
    ``stage`` is the virtual stage, ``mb`` the micro-batch (for a fused pair: its forward
    part's). In a schedule's lists, ``rank`` is the rank that runs it and ``chunk`` the index
    of its stage among the rank's stages (0 for the first; for a fused pair, the forward
    part's); both are None for an action parsed alone.

    ``str(a)`` is PyTorch's action notation: ``0F1``, ``2I0``, ``2W0``, ``1SEND_F3``,
    ``(0F7;7B3)OVERLAP_F_B``. The attributes of PyTorch's ``_Action`` are there too
    (``stage_index``, ``computation_type``, ``microbatch_index``, ``sub_actions``). Two
    actions are equal when their notation is (an action also equals its string); rank and
    chunk do not take part. A transfer parsed from a string has ``peer_stage`` None: the
    notation leaves it implied.
    """

    __slots__ = ("kind", "stage", "mb", "peer_stage", "forward", "backward", "rank", "chunk")

    def __init__(self, kind, stage, mb, peer_stage=None, forward=None, backward=None, rank=None,
                 chunk=None):
        self.kind = kind
        self.stage = stage
        self.mb = mb
        self.peer_stage = peer_stage
        self.forward = forward
        self.backward = backward
        self.rank = rank
        self.chunk = chunk

    @classmethod
    def parse(cls, s):
        """Parses one action string (PyTorch's notation, whole; ``BW`` reads as ``B``).

        Raises Error (EPARSE naming the column; ENOTFOUND for an empty string)."""
        raw = s.encode("utf-8")
        a = _lib.Action()
        col = ctypes.c_size_t(0)
        rc = C["ps_action_parse"](raw, len(raw), ctypes.byref(a), ctypes.byref(col))
        if rc == ERROR_CODES["EPARSE"]:
            raise Error(rc, "malformed action %r at column %d" % (s, col.value + 1))
        if rc == ERROR_CODES["ENOTFOUND"]:
            raise Error(rc, "empty action string (an idle cell)")
        _check(rc)
        return _from_fields(a.kind, a.bkind, a.stage, a.mb, a.bstage, a.bmb)

    @property
    def is_compute(self):
        """True for F, I, W, B and fused pairs; False for the transfers."""
        return self.kind in _COMPUTE

    @property
    def is_fused(self):
        return self.kind == "FB"

    # PyTorch's _Action names.
    @property
    def stage_index(self):
        return -1 if self.kind == "FB" else self.stage

    @property
    def computation_type(self):
        return "OVERLAP_F_B" if self.kind == "FB" else self.kind

    @property
    def microbatch_index(self):
        return None if self.kind == "FB" else self.mb

    @property
    def sub_actions(self):
        return (self.forward, self.backward) if self.kind == "FB" else None

    def _key(self):
        if self.kind == "FB":
            return ("FB", self.forward._key(), self.backward._key())
        return (self.kind, self.stage, self.mb)

    def __eq__(self, other):
        if isinstance(other, Action):
            return self._key() == other._key()
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        if self.kind == "FB":
            return "(%s;%s)OVERLAP_F_B" % (self.forward, self.backward)
        return "%d%s%d" % (self.stage, self.kind, self.mb)

    def __repr__(self):
        where = "" if self.rank is None else " rank=%d chunk=%d" % (self.rank, self.chunk)
        return "<Action %s%s>" % (self, where)


def _from_fields(kind, bkind, stage, mb, bstage, bmb, rank=None, chunk_of=None):
    name = _KIND_NAMES[kind]
    if name == "FB":
        fwd = Action("F", stage, mb, rank=rank, chunk=chunk_of and chunk_of[stage])
        bwd = Action(_KIND_NAMES[bkind], bstage, bmb, rank=rank,
                     chunk=chunk_of and chunk_of[bstage])
        return Action("FB", stage, mb, forward=fwd, backward=bwd, rank=rank,
                      chunk=fwd.chunk)
    if name in _COMPUTE:
        return Action(name, stage, mb, rank=rank, chunk=chunk_of and chunk_of[stage])
    return Action(name, stage, mb, peer_stage=bstage if bstage >= 0 else None, rank=rank,
                  chunk=chunk_of and chunk_of[stage])


def _read_actions(ptr, n, rank, chunk_of):
    if not n:
        return []
    raw = ctypes.string_at(ptr, n * _ACTION.size)
    return [_from_fields(k, bk, st, mb, bst, bmb, rank, chunk_of)
            for k, bk, _, st, mb, bst, bmb in _ACTION.iter_unpack(raw)]


# ---------------------------------------------------------------------------------------------
# Families


class Family(namedtuple("Family", "name aliases description constraints placement vpp "
                        "default_vpp model_copies cost_aware parameters")):
    """A schedule family of the registry.

    ``aliases``: the other names it answers to (PyTorch's class names among them);
    ``placement``: ``"loop"``, ``"v"`` or ``"bidirectional"``; ``vpp``: the vpp it requires
    (None when any goes); ``default_vpp``: the vpp it uses when none is given;
    ``model_copies``: 2 for DualPipe; ``cost_aware``: its schedule changes with the costs and
    the memory model (zb-auto); ``parameters``: the keyword options :func:`generate` takes
    for it (``pp``, ``vpp``, ``microbatches`` and the family's own, e.g. ``group_size``).
    """

    __slots__ = ()


def _family(i):
    fi = _lib.FamilyInfo()
    fp = _lib.FamilyParams()
    _check(C["ps_family_get"](i, ctypes.byref(fi)))
    _check(C["ps_family_params_get"](i, ctypes.byref(fp)))
    options = tuple(o for o in text(fp.options).split(",") if o)
    return Family(text(fi.name), tuple(a for a in text(fi.aliases).split(",") if a),
                  text(fi.description), text(fi.constraints), text(fi.placement),
                  fp.vpp or None, fp.default_vpp, fp.model_copies, bool(fp.cost_aware),
                  ("pp", "vpp", "microbatches") + options)


def families():
    """The schedule families of the registry, in its order (a list of :class:`Family`)."""
    return [_family(i) for i in range(C["ps_family_count"]())]


def family(name):
    """The family named ``name`` or one of its aliases (case-insensitive; ``-`` = ``_``).

    Raises Error (ENOTFOUND) naming the families when there is none."""
    i = C["ps_family_lookup"](name.encode("utf-8"), None)
    if i < 0:
        raise Error(i, "unknown schedule family %r; the families: %s"
                    % (name, ", ".join(f.name for f in families())))
    return _family(i)


# ---------------------------------------------------------------------------------------------
# Problems

# The keyword options, as the command line names them (docs/guide.md, "Common options"), with
# - for _. Those in _JSON_KEYS go through the configuration loader (docs/config.md), which
# checks their types and ranges and names the offending key; the others have setters.
_JSON_KEYS = ("pp", "vpp", "microbatches", "group_size", "extra_warmup", "split_backward",
              "stage_costs", "stage_memory", "model", "cluster", "moe")
_OPTIONS = _JSON_KEYS + ("costs", "memory", "mem_limit")
_COST_NAMES = ("f", "b", "w", "c", "fb")


def _config_text(config):
    """A configuration as JSON text: a dict, JSON text, or the path of a file."""
    if isinstance(config, dict):
        return json.dumps(config)
    if isinstance(config, bytes):
        return config.decode("utf-8")
    if isinstance(config, str) and config.lstrip().startswith("{"):
        return config
    with open(os.fspath(config), encoding="utf-8") as f:
        return f.read()


class Problem:
    """The parameters of a schedule and its cost model (a ``ps_problem``).

    ``Problem(family, config=None, **options)``: ``family`` is a family name or alias;
    ``config`` a configuration (docs/config.md) as a dict, JSON text or a file path, applied
    first; then the options, named as on the command line with ``_`` for ``-``: ``pp``,
    ``vpp``, ``microbatches``, ``group_size``, ``extra_warmup``, ``split_backward``,
    ``costs`` (``"f=1,b=2,w=1,c=0"`` or a dict), ``memory`` (``"f=1,b=-0.5,w=-0.5"`` or a
    dict), ``mem_limit``, and the configuration's own keys ``stage_costs``,
    ``stage_memory``, ``model``, ``cluster``, ``moe``. Bad input raises :class:`Error` with
    the library's message, which names the key and what would be valid.
    """

    def __init__(self, family=None, config=None, **options):
        h = ctypes.c_void_p()
        _check(C["ps_problem_new"](ctypes.byref(h), None))
        self._h = h
        if config is not None:
            self._load(_config_text(config))
        unknown = [k for k in options if k not in _OPTIONS]
        if unknown:
            k = unknown[0]
            near = difflib.get_close_matches(k, _OPTIONS, 1)
            raise _error("EINVAL", "unknown option %r%s; the options: %s"
                         % (k, "; did you mean %r?" % near[0] if near else "",
                            ", ".join(_OPTIONS)))
        if family is not None:
            rc = C["ps_problem_set_schedule"](self._h, family.encode("utf-8"))
            if rc == ERROR_CODES["ENOTFOUND"]:
                raise Error(rc, "%s; the families: %s"
                            % (self.last_error, ", ".join(f.name for f in families())))
            _check(rc, lambda: self.last_error)
        obj = {k: v for k, v in options.items() if k in _JSON_KEYS and v is not None}
        for key in ("costs", "memory"):
            if isinstance(options.get(key), dict):
                obj[key] = options[key]
        if obj:
            self._load(json.dumps(obj))
        if isinstance(options.get("costs"), str):
            _check(C["ps_problem_set_costs_string"](self._h, options["costs"].encode()),
                   lambda: self.last_error)
        if isinstance(options.get("memory"), str):
            _check(C["ps_problem_set_memory_string"](self._h, options["memory"].encode()),
                   lambda: self.last_error)
        if options.get("mem_limit") is not None:
            _check(C["ps_problem_set_mem_limit"](self._h, float(options["mem_limit"])),
                   lambda: "mem_limit: %s" % (self.last_error or "must be in [0, 1e12]"))

    def _load(self, text_):
        raw = text_.encode("utf-8")
        _check(C["ps_problem_load_json"](self._h, raw, len(raw)), lambda: self.last_error)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            C["ps_problem_free"](h)
            self._h = None

    @property
    def last_error(self):
        return text(C["ps_problem_last_error"](self._h))

    @property
    def family(self):
        """The canonical family name."""
        return text(C["ps_problem_schedule"](self._h))

    def _int(self, which):
        return C["ps_problem_get_int"](self._h, which)

    pp = property(lambda self: self._int(0), doc="Pipeline ranks.")
    vpp = property(lambda self: self._int(1), doc="Chunks per rank (0: the family's default).")
    microbatches = property(lambda self: self._int(2), doc="Micro-batches per iteration.")
    group_size = property(lambda self: self._int(3), doc="Group size (0: pp).")

    @property
    def costs(self):
        """The per-chunk costs: a dict with f, b, w, c and fb (fb < 0: the default)."""
        return {n: C["ps_problem_get_cost"](self._h, i) for i, n in enumerate(_COST_NAMES)}

    def set_costs(self, **costs):
        """Sets some of the costs f, b, w, c, fb (Error ECONFIG/ERANGE naming the bad one)."""
        for name, value in costs.items():
            if name not in _COST_NAMES:
                raise _error("EINVAL", "unknown cost %r; the costs: %s"
                             % (name, ", ".join(_COST_NAMES)))
            rc = C["ps_problem_set_cost"](self._h, _COST_NAMES.index(name), float(value))
            _check(rc, lambda: "%s=%r: %s" % (name, value, self.last_error
                                              or "a cost must be finite, >= 0 and <= 1e12"))

    @property
    def mem_limit(self):
        return C["ps_problem_mem_limit"](self._h)

    @property
    def has_moe(self):
        """True when the problem carries a MoE model (its durations come from the planner)."""
        return C["ps_problem_get_moe"](self._h, ctypes.byref(_lib.MoeModel())) == 0

    @property
    def a2a(self):
        """The all-to-all estimate of a MoE model given by its dimensions, as a dict (chosen
        algorithm, bytes and milliseconds of flat and hierarchical); None otherwise."""
        info = _lib.A2aInfo()
        if C["ps_problem_a2a_info"](self._h, ctypes.byref(info)):
            return None
        return {"chosen": ("auto", "flat", "hierarchical")[info.chosen],
                "flat": {"inter_bytes": info.flat_inter, "intra_bytes": info.flat_intra,
                         "time_ms": info.flat_time},
                "hierarchical": {"inter_bytes": info.hier_inter, "intra_bytes": info.hier_intra,
                                 "time_ms": info.hier_time}}

    def generate(self, validate=True):
        """Generates the family's compute-only schedule (and validates it, as the command line
        does). Raises Error: EUNSUPPORTED with the family's reason, ERANGE beyond the limits,
        EINVALID/EDEADLOCK when validation fails."""
        return Schedule._generate(self, validate)

    def plan(self, method="adaptive", fstage=None, bstage=None, backward="B", stages=None):
        """The overlap planner's plan of one step under the problem's MoE model: see
        :func:`pipesched.plan`."""
        from ._plan import plan_step

        return plan_step(self, method, fstage, bstage, backward, stages)

    def __repr__(self):
        return "<Problem %s pp=%d vpp=%d microbatches=%d>" % (
            self.family, self.pp, self.vpp, self.microbatches)


# ---------------------------------------------------------------------------------------------
# Schedules

# ps_format
FORMATS = {"table": 0, "table-timed": 1, "json": 2, "csv": 3, "csv-comms": 4, "trace": 5,
           "metrics": 6}


class Schedule:
    """p ordered action lists (one per rank), the stage placement and the micro-batch paths.

    Made by :func:`pipesched.generate` (or :meth:`Problem.generate`) and
    :func:`pipesched.load_csv`. ``ranks[r]`` is rank r's list of compute actions
    (:class:`Action`); :meth:`lowered` adds the transfers. Exports: :meth:`to_csv` (PyTorch,
    exactly what ``pipesched generate --format csv`` prints), :meth:`to_json`,
    :meth:`to_table`; :meth:`simulate` gives the timeline and the metrics.
    """

    def __init__(self, handle, problem):
        self._h = handle
        self.problem = problem
        self._ranks = None
        self._lowered = None
        self._twin = None
        self._chunk_of = None

    @classmethod
    def _new_handle(cls):
        h = ctypes.c_void_p()
        _check(C["ps_schedule_new"](ctypes.byref(h), None))
        return h

    @classmethod
    def _generate(cls, problem, validate):
        s = cls(cls._new_handle(), problem)
        _check(C["ps_schedule_generate"](s._h, problem._h), lambda: s.last_error)
        if validate:
            s.validate()
        return s

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            C["ps_schedule_free"](h)
            self._h = None

    @property
    def last_error(self):
        return text(C["ps_schedule_last_error"](self._h))

    def validate(self):
        """Checks the schedule (every micro-batch through every stage of its path once, each
        dependency satisfiable in each rank's order; matched transfers when lowered). Returns
        self; raises Error EINVALID or EDEADLOCK, whose message names each rank's blocked
        action."""
        _check(C["ps_schedule_validate"](self._h), lambda: self.last_error)
        return self

    family = property(lambda self: text(C["ps_schedule_family"](self._h)),
                      doc='The family\'s name ("custom" for a loaded table).')
    pp = property(lambda self: C["ps_schedule_pp"](self._h), doc="Pipeline ranks.")
    vpp = property(lambda self: C["ps_schedule_vpp"](self._h),
                   doc="Stages per rank (0 when uneven).")
    num_stages = property(lambda self: C["ps_schedule_num_stages"](self._h),
                          doc="Virtual stages (2 pp vpp for DualPipe's two copies).")
    microbatches = property(lambda self: C["ps_schedule_microbatches"](self._h))
    group_size = property(lambda self: C["ps_schedule_group_size"](self._h),
                          doc="The interleaved group size (0 when not applicable).")
    param_copies = property(lambda self: C["ps_schedule_param_copies"](self._h),
                            doc="Model copies a rank holds (2 for DualPipe).")
    total_actions = property(lambda self: C["ps_schedule_total_actions"](self._h),
                             doc="Compute actions over all ranks.")

    @property
    def placement(self):
        """The rank of each stage (a list indexed by stage)."""
        return [C["ps_schedule_stage_rank"](self._h, st) for st in range(self.num_stages)]

    @property
    def paths(self):
        """The micro-batch paths: a list of (stages, first micro-batch, count)."""
        out = []
        for i in range(C["ps_schedule_num_paths"](self._h)):
            st = ctypes.POINTER(ctypes.c_int32)()
            n, first, count = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            _check(C["ps_schedule_path"](self._h, i, ctypes.byref(st), ctypes.byref(n),
                                         ctypes.byref(first), ctypes.byref(count)))
            out.append(([st[k] for k in range(n.value)], first.value, count.value))
        return out

    @property
    def chunk_of(self):
        """The chunk of each stage: its index among the stages of its rank, in stage order."""
        if self._chunk_of is None:
            seen = {}
            chunk = []
            for r in self.placement:
                chunk.append(seen.get(r, 0))
                seen[r] = chunk[-1] + 1
            self._chunk_of = chunk
        return self._chunk_of

    @property
    def ranks(self):
        """Each rank's compute actions, in order: a list (one per rank) of lists of Action."""
        if self._ranks is None:
            chunk_of = self.chunk_of
            self._ranks = [
                _read_actions(C["ps_schedule_rank_actions"](self._h, r),
                              C["ps_schedule_rank_length"](self._h, r), r, chunk_of)
                for r in range(self.pp)]
        return self._ranks

    def _lowered_twin(self):
        """A lowered copy of this schedule. Lowering changes what a schedule exports (its
        table and JSON show the lowered lists), so this one stays as generated, as
        ``pipesched generate`` leaves it for every format but csv-comms. The copy is the
        family regenerated from the problem, or, for a table read from CSV (or a cost-aware
        family whose costs changed since), the CSV read back."""
        if self._twin is None:
            twin = None
            if C["ps_schedule_is_lowered"](self._h):
                return self
            if self.family != "custom":
                twin = Schedule._generate(self.problem, False)
                if twin.to_csv() != self.to_csv() or twin.placement != self.placement:
                    twin = None
            if twin is None:
                twin = load_csv(self.to_csv(), self.microbatches, validate=False)
                if twin.placement != self.placement or len(self.paths) > 1:
                    raise _error("EINTERNAL", "cannot copy this schedule to lower it")
            _check(C["ps_schedule_lower"](twin._h), lambda: twin.last_error)
            self._twin = twin
        return self._twin

    def lowered(self):
        """Each rank's list with the transfers (SEND_F, RECV_F, SEND_B, RECV_B) placed as
        PyTorch's lowering places them (the sender puts the receive on its peer). Error
        EDEADLOCK when impossible. The schedule itself stays unlowered (a lowered copy holds
        these lists), so its other exports stay those of ``pipesched generate``."""
        if self._lowered is None:
            twin = self._lowered_twin()
            chunk_of = self.chunk_of
            self._lowered = [
                _read_actions(C["ps_schedule_lowered_actions"](twin._h, r),
                              C["ps_schedule_lowered_length"](twin._h, r), r, chunk_of)
                for r in range(self.pp)]
        return self._lowered

    def export(self, fmt, sim=None):
        """The schedule in format fmt ("table", "json", "csv", "csv-comms"; with a
        simulation, also "table-timed", "trace", "metrics") as str."""
        if fmt not in FORMATS:
            raise _error("EINVAL", "unknown format %r; the formats: %s"
                         % (fmt, ", ".join(FORMATS)))
        h = self._lowered_twin()._h if fmt == "csv-comms" else self._h
        write, result = _write_collector()
        rc = C["ps_export"](h, sim._h if sim else None, FORMATS[fmt], write, None)
        _check(rc, lambda: "%s export: %s" % (fmt, "needs a simulation"
                                               if rc == ERROR_CODES["EINVAL"] and sim is None
                                               else text(C["ps_strerror"](rc))))
        return result()

    def to_csv(self, comms=False):
        """The PyTorch CSV table: compute_only, or with comms=True compute_comms (the lowered
        lists). Byte for byte what ``pipesched generate --format csv`` (``csv-comms``)
        prints."""
        return self.export("csv-comms" if comms else "csv")

    def to_json(self):
        """The schedule as JSON text (docs/guide.md, "JSON")."""
        return self.export("json")

    def to_table(self):
        """The text table: one row per rank, one column per step."""
        return self.export("table")

    def pytorch_actions(self, format="compute_only", factory=None):
        """What ``_PipelineScheduleRuntime._load_actions(actions, format)`` consumes, and what
        its ``_load_csv(filename, format)`` builds from this schedule's CSV: a dict from rank
        to that rank's list, one entry per cell, ``factory(cell)`` for each (``None`` for an
        idle cell).

        format: ``"compute_only"`` (the compute lists; PyTorch lowers them) or
        ``"compute_comms"`` (the lowered lists). factory: PyTorch's
        ``torch.distributed.pipelining.schedules._Action.from_str`` by default (the PyTorch
        release must have ``torch.distributed.pipelining``); ``str`` gives the strings.
        Built from :meth:`to_csv` exactly as PyTorch reads a file (``csv.reader``), so the
        two loads are the same."""
        if format not in ("compute_only", "compute_comms"):
            raise _error("EINVAL", "format must be 'compute_only' or 'compute_comms'; got %r"
                         % (format,))
        if factory is None:
            try:
                from torch.distributed.pipelining.schedules import _Action
            except ImportError as e:
                raise ImportError(
                    "pytorch_actions() builds PyTorch's _Action objects, which need a PyTorch "
                    "with torch.distributed.pipelining (2.4 or later); pass factory=str for "
                    "the strings") from e
            factory = _Action.from_str
        table = self.to_csv(comms=format == "compute_comms")
        reader = csv.reader(io.StringIO(table, newline=""))

        def cell(s):
            return factory(s) if s.strip() else None

        return {rank: [cell(s) for s in row] for rank, row in enumerate(reader)}

    def simulate(self, f=None, b=None, w=None, c=None, fb=None):
        """Simulates the schedule under its problem's costs, with any of f, b, w, c, fb
        replaced for this run (the defaults of a new problem are f=1, b=1, w=1, c=0).
        Returns a :class:`Simulation`; raises Error (EINVALID over the memory limit,
        EDEADLOCK, ECONFIG for per-stage costs that do not match)."""
        given = {k: v for k, v in zip(_COST_NAMES, (f, b, w, c, fb)) if v is not None}
        saved = self.problem.costs
        try:
            self.problem.set_costs(**given)
            return Simulation._run(self, self.problem)
        finally:
            self.problem.set_costs(**{k: saved[k] for k in given})

    def svg(self, kind="timeline", **config):
        """Simulates with the problem's costs and draws it (see :meth:`Simulation.svg`)."""
        return self.simulate().svg(kind, **config)

    def __repr__(self):
        return "<Schedule %s pp=%d vpp=%d microbatches=%d actions=%d>" % (
            self.family, self.pp, self.vpp, self.microbatches, self.total_actions)


def generate(family, pp=None, vpp=None, microbatches=None, config=None, validate=True,
             **options):
    """Generates (and validates) the schedule of ``family`` with ``pp`` ranks, ``vpp`` chunks
    per rank and ``microbatches`` micro-batches; the other keyword options are the command
    line's (``group_size``, ``extra_warmup``, ``split_backward``, ``costs``, ``memory``,
    ``mem_limit``; see :class:`Problem`), ``config`` a configuration applied first.

    >>> s = generate("interleaved", pp=4, vpp=2, microbatches=8)
    >>> str(s.ranks[0][0]), len(s.ranks)
    ('0F0', 4)

    Raises :class:`Error` with the library's message and code: an unknown family
    (ENOTFOUND), a value out of range (ECONFIG naming the key), parameters the family does
    not take (EUNSUPPORTED with its reason)."""
    opts = {k: v for k, v in (("pp", pp), ("vpp", vpp), ("microbatches", microbatches))
            if v is not None}
    opts.update(options)
    return Problem(family, config=config, **opts).generate(validate)


def load_csv(source, microbatches=0, format="auto", validate=True):
    """Loads a PyTorch-style CSV table (text, or the path of a file) as a Schedule of family
    "custom": pp = the rows, stages and micro-batches from the largest numbers (or
    ``microbatches``), the placement inferred. format: "auto", "compute_only" or
    "compute_comms". Errors name the line and column (EPARSE, EINVALID)."""
    formats = {"auto": 0, "compute_only": 1, "compute_comms": 2}
    if format not in formats:
        raise _error("EINVAL", "format must be one of %s; got %r" % (", ".join(formats), format))
    if isinstance(source, str) and ("," in source or "\n" in source
                                    or not os.path.exists(source)):
        data = source  # a table (a file name has no comma or newline, and exists)
    else:
        with open(os.fspath(source), encoding="utf-8", newline="") as fh:
            data = fh.read()
    raw = data.encode("utf-8")
    s = Schedule(Schedule._new_handle(), Problem())
    _check(C["ps_schedule_load_csv"](s._h, raw, len(raw), formats[format], microbatches),
           lambda: s.last_error)
    if validate:
        s.validate()
    return s


# ---------------------------------------------------------------------------------------------
# Simulations

RankStats = namedtuple("RankStats",
                       "rank busy span idle peak_activations peak_memory param_copies")
RankStats.__doc__ = """Per-rank metrics: busy (sum of action durations), span (end of the last
action - start of the first), idle (span - busy), peak_activations (chunks whose forward ran
and whose W/B has not), peak_memory (the memory model's peak), param_copies."""
Timed = namedtuple("Timed", "action start end")
Timed.__doc__ = "An action with its start and end time."
_PHASES = ("warmup", "steady", "cooldown", "all")


class Simulation:
    """A simulated timeline: ``makespan``, ``bubble`` (the largest idle time of a rank),
    ``bubble_ratio`` (1 - busy / (p makespan)), ``ranks`` (a :class:`RankStats` per rank),
    ``timeline`` (per rank, a :class:`Timed` per compute action, aligned with
    ``schedule.ranks``), ``comm`` (the all-to-all figures with a MoE model, else None).
    Exports: :meth:`to_trace` (Chrome/Perfetto), :meth:`to_json` (the schedule with start and
    end), :meth:`metrics_json`, :meth:`to_table` (timed), :meth:`svg`."""

    def __init__(self, handle, schedule, problem):
        self._h = handle
        self.schedule = schedule
        self.problem = problem
        m = _lib.Metrics()
        _check(C["ps_sim_metrics"](self._h, ctypes.byref(m)), lambda: self.last_error)
        self.makespan = m.makespan
        self.bubble = m.bubble
        self.bubble_ratio = m.bubble_ratio
        self.pp = m.pp
        self._ranks = None
        self._timeline = None

    @classmethod
    def _run(cls, schedule, problem):
        h = ctypes.c_void_p()
        _check(C["ps_sim_new"](ctypes.byref(h), None))
        rc = C["ps_sim_run"](h, schedule._h, problem._h)
        if rc < 0:
            msg = text(C["ps_sim_last_error"](h))
            C["ps_sim_free"](h)
            raise Error(rc, msg)
        return cls(h, schedule, problem)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            C["ps_sim_free"](h)
            self._h = None

    @property
    def last_error(self):
        return text(C["ps_sim_last_error"](self._h))

    @property
    def ranks(self):
        if self._ranks is None:
            out = []
            for r in range(self.pp):
                rm = _lib.RankMetrics()
                _check(C["ps_sim_rank_metrics"](self._h, r, ctypes.byref(rm)))
                out.append(RankStats(r, rm.busy, rm.span, rm.idle, rm.peak_activations,
                                     rm.peak_memory, rm.param_copies))
            self._ranks = out
        return self._ranks

    @property
    def timeline(self):
        if self._timeline is None:
            out = []
            for r, acts in enumerate(self.schedule.ranks):
                n = len(acts)
                starts = C["ps_sim_starts"](self._h, r)
                ends = C["ps_sim_ends"](self._h, r)
                if n and (not starts or not ends):
                    raise _error("ESTATE", "the simulation holds no timeline of the schedule")
                st = starts[:n] if n else []
                en = ends[:n] if n else []
                out.append([Timed(a, s0, e0) for a, s0, e0 in zip(acts, st, en)])
            self._timeline = out
        return self._timeline

    @property
    def comm(self):
        """Exposed all-to-all of a MoE model, summed over ranks: a dict with total, exposed and
        overlap, each a dict by phase (warmup, steady, cooldown, all); None without a MoE
        model."""
        cm = _lib.CommMetrics()
        if C["ps_sim_comm"](self._h, ctypes.byref(cm)):
            return None
        return {key: dict(zip(_PHASES, getattr(cm, key))) for key in
                ("total", "exposed", "overlap")}

    def to_trace(self, us_per_unit=None, events=()):
        """The Chrome/Perfetto trace (JSON text). us_per_unit: trace microseconds per time
        unit (default 1000: 1 cost unit = 1 ms; 1e6 for costs in seconds). events: extra
        events, each a dict with name, rank, start, dur and optionally cat and track (0
        compute, 1 communication), in the simulation's time unit."""
        evs = (_lib.TraceEvent * max(1, len(events)))()
        keep = []
        for i, ev in enumerate(events):
            name = str(ev["name"]).encode("utf-8")
            cat = ev.get("cat")
            cat = cat.encode("utf-8") if cat is not None else None
            keep += [name, cat]
            evs[i] = _lib.TraceEvent(name, cat, int(ev["rank"]), int(ev.get("track", 0)),
                                     float(ev["start"]), float(ev["dur"]))
        opt = _lib.TraceOptions(us_per_unit or 0.0, evs if events else None, len(events))
        write, result = _write_collector()
        rc = C["ps_export_trace"](self.schedule._h, self._h, ctypes.byref(opt), write, None)
        _check(rc, lambda: "trace: %s (an event's rank, track or times out of range?)"
               % text(C["ps_strerror"](rc)))
        return result()

    def to_json(self):
        """The schedule as JSON with "start" and "end" on every action."""
        return self.schedule.export("json", self)

    def metrics_json(self):
        """The metrics as ``pipesched simulate --json`` prints them (JSON text)."""
        return self.schedule.export("metrics", self)

    def to_table(self, width=0):
        """The timed text table (one column per time unit; width > 0 bounds a row)."""
        write, result = _write_collector()
        _check(C["ps_export_timed_table"](self.schedule._h, self._h, int(width), write, None))
        return result()

    def svg(self, kind="timeline", **config):
        """An SVG drawing (str) with libpipesched-viz: kind "timeline" (one lane per rank)
        or "dag" (the dependency graph and its critical path). config: the fields of
        ps_viz_config (max_boxes, max_lanes, max_width, max_dag_actions, time_unit,
        window_from, window_to, overview). Raises Error ESTATE when the build has no viz."""
        from ._viz import draw

        return draw(kind, self.schedule, self, config)

    def __repr__(self):
        return "<Simulation %s makespan=%g bubble=%g bubble_ratio=%.4f>" % (
            self.schedule.family, self.makespan, self.bubble, self.bubble_ratio)
