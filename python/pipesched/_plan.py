"""The MoE layer model's overlap planner (ps_plan_*): one step on two streams."""

import ctypes
from collections import namedtuple

from . import _lib
from ._core import Problem, _check, _error
from ._lib import C, text

PLANNERS = ("adaptive", "mindspeed", "megatron", "serial")
# The backward kinds ps_plan_step takes: with weight gradients, without, the weight
# gradients alone (ps_kind values).
_BACKWARD = {"B": 3, "I": 1, "W": 2}

PlanOp = namedtuple("PlanOp", "op stream part layer dense start end")
PlanOp.__doc__ = """One planned sub-operation: op ("attn", "dispatch", "mlp", ...), stream
("compute" or "comm"), part ("F" the forward chunk, "B" the backward chunk), layer (index in
the model), dense (a dense layer), start, end."""


class Plan:
    """A planned step: ``ops`` (:class:`PlanOp`, in start order) and the figures
    ``duration`` (end of the last operation), ``compute``, ``comm`` (all-to-all time),
    ``exposed`` (all-to-all time with the compute stream idle), ``overlap``
    (1 - exposed / comm), ``p2p``, ``p2p_exposed``; ``method``, ``fstage``, ``bstage``,
    ``backward`` say what was planned. :meth:`svg` draws it (libpipesched-viz)."""

    def __init__(self, handle, method, fstage, bstage, backward):
        st = _lib.PlanStats()
        _check(C["ps_plan_stats_get"](handle, ctypes.byref(st)))
        ptr = ctypes.POINTER(_lib.PlanOp)()
        n = C["ps_plan_ops"](handle, ctypes.byref(ptr))
        self._raw = (_lib.PlanOp * n)(*[ptr[i] for i in range(n)]) if n else None
        self._stats = st
        self.ops = [PlanOp(text(C["ps_op_name"](o.op)), "comm" if o.stream else "compute",
                           "B" if o.part else "F", o.layer, bool(o.dense), o.start, o.end)
                    for o in (self._raw or [])]
        for name in ("duration", "compute", "comm", "exposed", "overlap", "p2p", "p2p_exposed"):
            setattr(self, name, getattr(st, name))
        self.method, self.fstage, self.bstage, self.backward = method, fstage, bstage, backward

    def svg(self, title=None, **config):
        """The overlap diagram (compute and communication lanes, exposed time in red)."""
        from ._viz import draw_plan

        return draw_plan(self, title, config)

    def __repr__(self):
        return "<Plan %s F%s+%s%s duration=%g exposed=%g overlap=%.3f>" % (
            self.method, self.fstage, self.backward, self.bstage, self.duration, self.exposed,
            self.overlap)


def _default_stage(problem, stages):
    """The model stage with the most MoE layers (the command line's default)."""
    first, count, dense = ((ctypes.c_int32 * stages)() for _ in range(3))
    if C["ps_problem_stage_split"](problem._h, stages, first, count, dense):
        return 0
    moe = [count[s] - dense[s] for s in range(stages)]
    return moe.index(max(moe))


def plan_step(problem, method, fstage, bstage, backward, stages):
    if method not in PLANNERS:
        raise _error("EINVAL", "unknown planner method %r; the methods: %s"
                     % (method, ", ".join(PLANNERS)))
    if backward not in _BACKWARD:
        raise _error("EINVAL", "backward must be 'B' (with weight gradients), 'I' (without) "
                     "or 'W' (the weight gradients alone); got %r" % (backward,))
    if not problem.has_moe:
        raise _error("ENOTFOUND", "plan needs a MoE model: a config with \"model\" and "
                     "\"cluster\" blocks, or a \"moe\" block (docs/config.md)")
    if stages is None:
        s = problem.generate(validate=False)
        stages = s.num_stages // s.param_copies
    for name, v in (("fstage", fstage), ("bstage", bstage)):
        if v is not None and not -1 <= v < stages:
            raise _error("EINVAL", "%s %d is out of range: the model has %d stages (-1: none)"
                         % (name, v, stages))
    if fstage is None:
        fstage = _default_stage(problem, stages)
    if bstage is None:
        bstage = fstage
    h = ctypes.c_void_p()
    _check(C["ps_plan_new"](ctypes.byref(h), None))
    try:
        rc = C["ps_plan_step"](h, problem._h, PLANNERS.index(method), stages, fstage,
                               _BACKWARD[backward], bstage)
        _check(rc, lambda: text(C["ps_plan_last_error"](h)))
        return Plan(h, method, fstage, bstage, backward)
    finally:
        C["ps_plan_free"](h)


def plan(config=None, method="adaptive", fstage=None, bstage=None, backward="B", stages=None,
         family=None, **options):
    """Plans one step of a MoE model on a device's compute and communication streams: the
    forward of model stage ``fstage`` fused with the backward (``"B"`` with weight
    gradients, ``"I"`` without, ``"W"`` the weight gradients alone) of model stage
    ``bstage`` of another micro-batch (-1: no forward, or no backward), as the steady phase
    of adaptive or DualPipe runs it; with ``method`` "adaptive" (list scheduling and local
    search), "mindspeed", "megatron" (fixed orders) or "serial".

    ``config``: a configuration with the MoE model ("model" and "cluster", or "moe"; dict,
    JSON text or path); ``family`` and ``options`` as for :func:`pipesched.generate`
    (the stages the layers are split over come from the schedule: pp x vpp). By default both
    stages are the one with the most MoE layers, as ``pipesched plan`` does.

    Returns a :class:`Plan`. Raises Error (ENOTFOUND without a MoE model)."""
    problem = Problem(family, config=config, **options)
    return plan_step(problem, method, fstage, bstage, backward, stages)

