#!/usr/bin/env python3
"""PyTorch training driven by a pipesched schedule, one process per pipeline rank.

A small MLP in float64 is cut into pieces, one per virtual stage of a micro-batch's path, and
every piece is placed on the rank the schedule puts its stage on (loop, V or DualPipe's
bidirectional placement, where each rank holds a piece of each of the two model copies). Each
rank is a process (``torch.multiprocessing``) in a gloo process group on the loopback
interface, and runs its own list of actions through :class:`pipesched.Executor`:

* ``compute(task)`` runs the action with autograd: ``F`` the forward of the chunk; ``B`` the
  full backward; ``I`` the input gradient (``torch.autograd.grad`` on the chunk's input and
  its Linear outputs, keeping the graph); ``W`` the weight gradients later
  (``torch.autograd.grad`` of each Linear output on its weight and bias, which frees the
  graph); a fused ``FB`` action both of its parts;
* ``send(task)`` and ``recv(task)`` move activations and input gradients with
  ``torch.distributed.isend``/``irecv`` (tag ``task.tag``) and return the ``Work``, which the
  executor waits for. Between two stages of the same rank (the bottom of a V) nothing is sent:
  the executor moves the result itself and the next stage reads it here.

The loss is the mean squared error of the last stage, divided by the number of micro-batches,
so that the gradients summed over the micro-batches (and over DualPipe's two copies) are the
gradient of the full batch. After one iteration every rank adds its gradients into one vector
indexed like the unsplit model, the vectors are summed over the ranks, and rank 0 compares the
sum and the loss with two single-process runs of the unsplit model:

* on the whole batch with one backward: they must agree within 1e-10 (float64);
* one micro-batch at a time, the gradients summed in the order the schedule sums them (each
  stage's B or W actions in its rank's order, DualPipe's copies added last): they must be
  identical, bit for bit (floating-point addition is not associative, hence the order).

Run it from the repository root once the build exists (Debian's python3 has torch)::

    PYTHONPATH=build/python python3 docs/examples/torch_pipeline.py -s 1f1b -s zb-v
    PYTHONPATH=build/python python3 docs/examples/torch_pipeline.py --all
    PYTHONPATH=build/python python3 docs/examples/torch_pipeline.py -p 2 -m 4 --every-family

``-s NAME[:key=value,...]`` takes a family and its options as :func:`pipesched.generate`
does (``-s interleaved:vpp=2,group_size=4``). Exit status: 0 when every schedule matched both
references, 1 when one did not (or a rank failed), 2 for bad arguments, 77 when torch or pipesched cannot be
imported (the test suite's "skipped").
"""

import argparse
import datetime
import os
import socket
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:  # reported in main()
    torch = None
    _TORCH_ERROR = e

try:
    import pipesched
except ImportError as e:  # reported in main()
    pipesched = None
    _PIPESCHED_ERROR = e

SKIP = 77
TOLERANCE = 1e-10

# The families the issue requires, then the ones PyTorch has no schedule for.
REQUIRED = ["1f1b", "interleaved", "zb-h1", "zb-v", "dualpipev", "adaptive"]
EXTRA = ["v-half", "v-min", "zb-auto", "zb-auto:vpp=2", "dualpipe"]
# Options a family is shown with when the command line gives none: two chunks per rank for the
# loop-placed families that take any vpp (the V families fix vpp = 2 themselves).
DEFAULT_OPTIONS = {"interleaved": {"vpp": 2}, "adaptive": {"vpp": 2}}


# ---- the model --------------------------------------------------------------------------------


def build_piece(index, width, layers, seed):
    """Piece ``index`` of the model: ``layers`` times Linear(width, width) then tanh, with
    weights drawn from a generator seeded by (seed, index), so that every process (and both
    DualPipe copies, and the single-process reference) builds the same numbers."""
    gen = torch.Generator().manual_seed(seed * 1009 + index)
    mods = []
    for _ in range(layers):
        lin = torch.nn.Linear(width, width)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(width, width, generator=gen) / width ** 0.5)
            lin.bias.copy_(torch.randn(width, generator=gen) * 0.1)
        mods += [lin, torch.nn.Tanh()]
    return torch.nn.Sequential(*mods)


def make_batch(microbatches, mb_size, width, seed):
    """The batch: inputs and targets, ``microbatches * mb_size`` rows."""
    gen = torch.Generator().manual_seed(seed + 7)
    n = microbatches * mb_size
    return torch.randn(n, width, generator=gen), torch.randn(n, width, generator=gen)


def reference(n_pieces, args):
    """The single-process run: the unsplit model on the whole batch, one backward. Returns the
    loss and the gradient of every parameter in piece order, flattened into one vector."""
    pieces = [build_piece(k, args.width, args.layers, args.seed) for k in range(n_pieces)]
    x, y = make_batch(args.microbatches, args.mb_size, args.width, args.seed)
    out = x
    for p in pieces:
        out = p(out)
    loss = torch.nn.functional.mse_loss(out, y)
    loss.backward()
    grads = torch.cat([q.grad.reshape(-1) for p in pieces for q in p.parameters()])
    return loss.item(), grads


def reference_in_schedule_order(schedule, n_pieces, args):
    """The single-process run one micro-batch at a time, each micro-batch's gradients kept
    apart, then summed as the schedule sums them: a stage's gradients in the order of its
    backward actions (B, or W after I) in its rank's list, the loss in the order of the last
    stage's forwards, DualPipe's two copies added at the end. Floating-point addition is not
    associative, so this is the sum the pipeline must reproduce bit for bit. Returns the loss
    and the gradients like :func:`reference`."""
    x, y = make_batch(args.microbatches, args.mb_size, args.width, args.seed)
    xs, ys = x.split(args.mb_size), y.split(args.mb_size)
    grad, loss = {}, {}  # (stage, mb) -> its piece's gradient vector; mb -> its loss
    for stages, first, count in schedule.paths:
        pieces = [build_piece(k, args.width, args.layers, args.seed) for k in range(n_pieces)]
        for mb in range(first, first + count):
            for p in pieces:
                p.zero_grad(set_to_none=True)
            out = xs[mb]
            for p in pieces:
                out = p(out)
            mb_loss = torch.nn.functional.mse_loss(out, ys[mb]) / args.microbatches
            mb_loss.backward()
            loss[mb] = mb_loss.item()
            for st, p in zip(stages, pieces):
                grad[(st, mb)] = torch.cat([q.grad.reshape(-1) for q in p.parameters()])
    last = {stages[-1] for stages, _, _ in schedule.paths}
    per_stage, per_copy_loss = {}, {}
    for acts in schedule.ranks:
        for a in acts:
            for part in (a.forward, a.backward) if a.kind == "FB" else (a,):
                key = (part.stage, part.mb)
                if part.kind in ("B", "W"):
                    g = grad[key]
                    per_stage[part.stage] = g if part.stage not in per_stage \
                        else per_stage[part.stage] + g
                elif part.kind == "F" and part.stage in last:
                    per_copy_loss[part.stage] = per_copy_loss.get(part.stage, 0.0) + loss[part.mb]
    size = grad[next(iter(grad))].numel()
    flat = torch.zeros(n_pieces * size)
    for stages, _, _ in schedule.paths:
        for k, st in enumerate(stages):
            flat[k * size:(k + 1) * size] += per_stage[st]
    return sum(per_copy_loss.values()), flat


# ---- one rank of the pipeline -----------------------------------------------------------------


class _Transfer:
    """An ``isend``/``irecv`` in flight and the tensor it moves, kept alive together until the
    executor saw it end (``wait()``)."""

    __slots__ = ("work", "tensor")

    def __init__(self, work, tensor):
        self.work = work
        self.tensor = tensor

    def wait(self):
        self.work.wait()


class RankRunner:
    """What one rank holds for one iteration of a schedule: its pieces of the model, the
    micro-batches' activations and gradients, and the executor's three callables.

    A stage's piece is given by where the stage sits on its path: the k-th stage of a path
    runs piece k, and a path is one model copy (DualPipe has two paths over disjoint stages;
    every other family one). The callables run on the executor's loop thread one at a time;
    only the waits of the transfers happen elsewhere, so the dictionaries need no lock.
    """

    def __init__(self, schedule, rank, args):
        self.s = schedule
        self.rank = rank
        self.placement = schedule.placement
        self.m = schedule.microbatches
        self.path_of = {}  # mb -> the stages of its path
        self.where = {}  # stage -> (copy, piece)
        for copy, (stages, first, count) in enumerate(schedule.paths):
            for mb in range(first, first + count):
                self.path_of[mb] = stages
            for k, st in enumerate(stages):
                self.where[st] = (copy, k)
        self.n_pieces = max(k for _, k in self.where.values()) + 1
        self.modules = {st: build_piece(k, args.width, args.layers, args.seed)
                        for st, (_, k) in self.where.items() if self.placement[st] == rank}
        x, y = make_batch(self.m, args.mb_size, args.width, args.seed)
        self.x, self.y = x.split(args.mb_size), y.split(args.mb_size)
        self.shape = (args.mb_size, args.width)
        self.width, self.layers = args.width, args.layers
        # (stage, mb) -> the forward's input, output and the outputs of its Linear layers,
        # until the backward (B, or W after I) that frees its graph
        self.saved = {}
        self.pending_w = {}  # (stage, mb) -> the gradients of the Linear outputs, from I to W
        self.grad_in = {}  # (stage, mb) -> the input gradient, until sent or used here
        self.received = {}  # (stage, mb, "F" or "B") -> what a recv brought
        self.loss = 0.0  # this rank's part of the loss (the last stages it holds)

    def neighbor(self, stage, mb, step):
        """The stage before (step -1) or after (+1) ``stage`` on micro-batch mb's path, or
        None at the path's ends."""
        path = self.path_of[mb]
        i = path.index(stage) + step
        return path[i] if 0 <= i < len(path) else None

    # -- compute --

    def forward(self, stage, mb):
        prev = self.neighbor(stage, mb, -1)
        if prev is None:
            x = self.x[mb]
        elif self.placement[prev] == self.rank:
            x = self.saved[(prev, mb)][1].detach().requires_grad_()
        else:
            x = self.received.pop((stage, mb, "F")).requires_grad_()
        out, linear_outs = x, []
        for layer in self.modules[stage]:
            out = layer(out)
            if isinstance(layer, torch.nn.Linear):
                linear_outs.append(out)
        if self.neighbor(stage, mb, +1) is None:
            out = torch.nn.functional.mse_loss(out, self.y[mb]) / self.m
            self.loss += out.item()
        self.saved[(stage, mb)] = (x, out, linear_outs)

    def output_grad(self, stage, mb):
        """The gradient of the stage's output: None for the loss, else the next stage's input
        gradient, computed here or received."""
        nxt = self.neighbor(stage, mb, +1)
        if nxt is None:
            return None
        if self.placement[nxt] == self.rank:
            return self.grad_in.pop((nxt, mb))
        return self.received.pop((stage, mb, "B"))

    def accumulate(self, params, grads):
        for p, g in zip(params, grads):
            p.grad = g if p.grad is None else p.grad + g

    def backward(self, stage, mb):
        """B: the input and weight gradients in one pass over the graph, which it frees."""
        x, out, _ = self.saved.pop((stage, mb))
        params = list(self.modules[stage].parameters())
        wrt = ([x] if x.requires_grad else []) + params
        grads = torch.autograd.grad(out, wrt, self.output_grad(stage, mb))
        if x.requires_grad:
            self.grad_in[(stage, mb)] = grads[0]
            grads = grads[1:]
        self.accumulate(params, grads)

    def backward_input(self, stage, mb):
        """I: one pass from the output back to the input (the stage's input gradient, sent on
        at once) that also yields the gradient of every Linear's output, keeping the graph.
        The first stage has no input gradient; its I computes only the latter."""
        x, out, linear_outs = self.saved[(stage, mb)]
        wrt = ([x] if x.requires_grad else []) + linear_outs
        grads = torch.autograd.grad(out, wrt, self.output_grad(stage, mb), retain_graph=True)
        if x.requires_grad:
            self.grad_in[(stage, mb)] = grads[0]
            grads = grads[1:]
        self.pending_w[(stage, mb)] = grads

    def backward_weight(self, stage, mb):
        """W: each Linear's weight and bias gradients from its output's gradient (what I kept),
        one layer at a time: no input gradient is computed again. Frees the graph."""
        _, _, linear_outs = self.saved.pop((stage, mb))
        linears = [m for m in self.modules[stage] if isinstance(m, torch.nn.Linear)]
        for lin, y, g in zip(linears, linear_outs, self.pending_w.pop((stage, mb))):
            params = [lin.weight, lin.bias]
            self.accumulate(params, torch.autograd.grad(y, params, g))

    def run_action(self, a):
        if a.kind == "FB":
            self.run_action(a.forward)
            self.run_action(a.backward)
        elif a.kind == "F":
            self.forward(a.stage, a.mb)
        elif a.kind == "B":
            self.backward(a.stage, a.mb)
        elif a.kind == "I":
            self.backward_input(a.stage, a.mb)
        elif a.kind == "W":
            self.backward_weight(a.stage, a.mb)
        else:
            raise ValueError("rank %d: unexpected compute action %s" % (self.rank, a))

    # -- the executor's callables --

    def compute(self, task):
        self.run_action(task.action)

    def send(self, task):
        """SEND_F: the stage's output; SEND_B: its input gradient (task.stage produced it)."""
        key = (task.stage, task.mb)
        if task.direction == "F":
            t = self.saved[key][1].detach()
        else:
            t = self.grad_in.pop(key)
        return _Transfer(dist.isend(t, dst=task.peer, tag=task.tag), t)

    def recv(self, task):
        """RECV_F/RECV_B into a fresh buffer, read by the consuming stage (task.stage)."""
        buf = torch.empty(self.shape)
        self.received[(task.stage, task.mb, task.direction)] = buf
        return _Transfer(dist.irecv(buf, src=task.peer, tag=task.tag), buf)

    # -- after the run --

    def flat_grads(self):
        """This rank's gradients added into a vector laid out like the unsplit model (piece by
        piece), and how many copies of each piece this rank holds."""
        per_piece = self.layers * (self.width * self.width + self.width)
        flat = torch.zeros(self.n_pieces * per_piece)
        held = torch.zeros(self.n_pieces)
        for st, mod in self.modules.items():
            k = self.where[st][1]
            missing = [n for n, q in mod.named_parameters() if q.grad is None]
            if missing:
                raise RuntimeError("rank %d: stage %d has no gradient for %s (no backward ran)"
                                   % (self.rank, st, ", ".join(missing)))
            flat[k * per_piece:(k + 1) * per_piece] += torch.cat(
                [q.grad.reshape(-1) for q in mod.parameters()])
            held[k] += 1
        return flat, held


# ---- the processes ----------------------------------------------------------------------------


def worker(rank, args, specs, port, results):
    """One pipeline rank: joins the gloo group, runs every schedule of ``specs`` for one
    iteration through the executor, sums the gradients over the ranks and (rank 0) compares
    them with the single-process reference, putting one result per schedule on ``results``."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    dist.init_process_group("gloo", rank=rank, world_size=args.pp,
                            timeout=datetime.timedelta(seconds=args.timeout))
    try:
        for spec, name, opts in specs:
            s = pipesched.generate(name, pp=args.pp, microbatches=args.microbatches, **opts)
            runner = RankRunner(s, rank, args)
            ex = pipesched.Executor(s, runner.compute, runner.send, runner.recv, ranks=[rank],
                                    stall_timeout=args.timeout)
            seconds = torch.tensor([ex.run().seconds])
            flat, held = runner.flat_grads()
            loss = torch.tensor([runner.loss])
            for t in (flat, held, loss):
                dist.all_reduce(t)
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            if rank == 0:
                ref_loss, ref_grads = reference(runner.n_pieces, args)
                seq_loss, seq_grads = reference_in_schedule_order(s, runner.n_pieces, args)
                copies = len(s.paths)
                results.put({
                    "spec": spec, "family": s.family, "pp": s.pp, "vpp": s.vpp,
                    "m": s.microbatches, "stages": s.num_stages, "copies": copies,
                    "actions": s.total_actions, "seconds": seconds.item(),
                    "loss": loss.item(), "ref_loss": ref_loss,
                    "grad_diff": (flat - ref_grads).abs().max().item(),
                    "grad_max": ref_grads.abs().max().item(), "params": ref_grads.numel(),
                    "seq_diff": max(abs(loss.item() - seq_loss),
                                    (flat - seq_grads).abs().max().item()),
                    "coverage": bool((held == copies).all().item())})
            dist.barrier()  # the next schedule reuses the tags
    finally:
        dist.destroy_process_group()


def parse_spec(spec):
    """``NAME[:key=value,...]`` -> (NAME, options), the family's defaults under the given
    options; values are read as true/false, int, float, else kept as text."""
    name, _, rest = spec.partition(":")
    opts = dict(DEFAULT_OPTIONS.get(name, {}))
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError("%r: an option is key=value, got %r" % (spec, item))
        bools = {"true": True, "false": False}
        for conv in (lambda v: bools[v.lower()], int, float, str):
            try:
                opts[key.strip()] = conv(value)
                break
            except (KeyError, ValueError):
                pass
    return name, opts


def free_port():
    """A TCP port of the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def report(r, width=12):
    """One line per schedule (its name padded to width); True when it matched both
    references."""
    loss_diff = abs(r["loss"] - r["ref_loss"])
    close = loss_diff <= TOLERANCE and r["grad_diff"] <= TOLERANCE
    exact = r["seq_diff"] == 0
    ok = close and exact and r["coverage"]
    print("%-*s pp %d vpp %d m %2d stages %d copies %d actions %3d  loss %.12f  |loss - "
          "reference| %.1e  max |grad - reference| %.1e (of %d, max |grad| %.2f)  "
          "in schedule order: %s  %.3f s  %s" % (
              width, r["spec"], r["pp"], r["vpp"], r["m"], r["stages"], r["copies"],
              r["actions"], r["loss"], loss_diff, r["grad_diff"], r["params"], r["grad_max"],
              "identical" if exact else "differs by %.1e" % r["seq_diff"], r["seconds"],
              "ok" if ok else "MISMATCH"))
    if not close:
        print("  the loss or a gradient differs from the single-process run by more than %g"
              % TOLERANCE)
    elif not exact:
        print("  within %g of the single-process run but not bit-identical to its micro-batch "
              "gradients summed in the schedule's order: a backward ran on other values or "
              "its gradient was added out of order" % TOLERANCE)
    if not r["coverage"]:
        print("  a piece of the model is not held once per copy: the placement was misread")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Train one iteration of a small float64 MLP with a pipesched schedule, "
        "one process per pipeline rank (gloo), and compare the loss and gradients with a "
        "single-process run.")
    ap.add_argument("-s", "--schedule", action="append", default=[], metavar="NAME[:k=v,...]",
                    help="a family and its generate() options (repeatable)")
    ap.add_argument("--all", action="store_true",
                    help="%s, then %s" % (", ".join(REQUIRED), ", ".join(EXTRA)))
    ap.add_argument("--every-family", action="store_true",
                    help="every family of pipesched.families(), with its default options")
    ap.add_argument("-p", "--pp", type=int, default=4, help="pipeline ranks (processes)")
    ap.add_argument("-m", "--microbatches", type=int, default=8)
    ap.add_argument("--mb-size", type=int, default=2, help="rows per micro-batch")
    ap.add_argument("--width", type=int, default=8, help="the MLP's width")
    ap.add_argument("--layers", type=int, default=1, help="Linear+tanh layers per stage")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds without progress before a rank gives up")
    args = ap.parse_args(argv)
    if torch is None:
        print("torch_pipeline: skipped: torch cannot be imported (%s); on Debian: apt-get "
              "install python3-torch, and run Debian's python3" % _TORCH_ERROR, file=sys.stderr)
        return SKIP
    if pipesched is None:
        print("torch_pipeline: skipped: pipesched cannot be imported (%s); set "
              "PYTHONPATH=build/python (the build tree) or meson install" % _PIPESCHED_ERROR,
              file=sys.stderr)
        return SKIP
    if not pipesched.has_executor():
        print("torch_pipeline: skipped: this pipesched was built without the executor "
              "(libuv1-dev)", file=sys.stderr)
        return SKIP
    names = (REQUIRED + EXTRA if args.all else []) \
        + ([f.name for f in pipesched.families()] if args.every_family else []) + args.schedule
    if not names:
        ap.error("give a schedule (-s NAME), --all or --every-family")
    specs = []
    for spec in names:
        try:
            name, opts = parse_spec(spec)
            pipesched.generate(name, pp=args.pp, microbatches=args.microbatches, **opts)
        except (ValueError, TypeError, pipesched.Error) as e:
            print("torch_pipeline: %s: %s" % (spec, e), file=sys.stderr)
            return 2
        specs.append((spec, name, opts))
    results = mp.get_context("spawn").SimpleQueue()
    start = time.perf_counter()
    try:
        mp.spawn(worker, args=(args, specs, free_port(), results), nprocs=args.pp)
    except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
        print("torch_pipeline: a rank failed: %s" % e, file=sys.stderr)
        return 1
    ok = True
    width = max(len(spec) for spec, _, _ in specs)
    for _ in specs:
        ok = report(results.get(), width) and ok
    print("%d schedule(s), %d processes, %.1f s in all (process start and torch import "
          "included)" % (len(specs), args.pp, time.perf_counter() - start))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
