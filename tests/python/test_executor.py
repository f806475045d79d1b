"""The executor from Python: order, dependencies, real arithmetic across two executors joined
by an in-memory transport (as two processes would be by a network), and every way a run
stops."""

import concurrent.futures
import threading
import time
import unittest

import pipesched
from common import needs_executor


class Mailboxes:
    """One mailbox per rank: send puts a value under a tag into the peer's box, a receive
    waits for it in its own."""

    def __init__(self, pp):
        self.cv = threading.Condition()
        self.boxes = [dict() for _ in range(pp)]

    def put(self, rank, tag, value):
        with self.cv:
            assert tag not in self.boxes[rank], "tag %d sent twice to rank %d" % (tag, rank)
            self.boxes[rank][tag] = value
            self.cv.notify_all()

    def get(self, rank, tag, timeout=20):
        with self.cv:
            if not self.cv.wait_for(lambda: tag in self.boxes[rank], timeout):
                raise TimeoutError("rank %d: nothing arrived under tag %d" % (rank, tag))
            return self.boxes[rank].pop(tag)


class Pending:
    """What torch.distributed's isend/irecv return: an object with wait()."""

    def __init__(self, fn):
        self.fn = fn

    def wait(self):
        self.fn()


class Host:
    """One process's side of a pipeline whose stage s computes y = 2 x + s (its weight
    gradient is x times the output gradient; the input gradient twice it), the loss being
    the last stage's output. Values live in this host's store only: what another host
    computed arrives through the mailboxes."""

    def __init__(self, schedule, mail):
        self.s = schedule
        self.mail = mail
        self.store = {}
        self.wgrad = {}
        self.path = {}
        for stages, first, count in schedule.paths:
            for mb in range(first, first + count):
                self.path[mb] = stages
        self.calls = []

    def neighbors(self, stage, mb):
        p = self.path[mb]
        i = p.index(stage)
        return (p[i - 1] if i else None), (p[i + 1] if i + 1 < len(p) else None)

    def forward(self, stage, mb):
        prev, _ = self.neighbors(stage, mb)
        x = float(mb) if prev is None else self.store[("F", prev, mb)]
        self.store[("x", stage, mb)] = x
        self.store[("F", stage, mb)] = 2 * x + stage

    def backward(self, stage, mb, weights):
        _, nxt = self.neighbors(stage, mb)
        g = 1.0 if nxt is None else self.store[("B", nxt, mb)]
        self.store[("g", stage, mb)] = g
        self.store[("B", stage, mb)] = 2 * g
        if weights:
            self.weight(stage, mb)

    def weight(self, stage, mb):
        key = (stage, mb)
        assert key not in self.wgrad, "weight gradient of %s twice" % (key,)
        self.wgrad[key] = self.store[("x", stage, mb)] * self.store[("g", stage, mb)]

    def compute(self, task):
        a = task.action
        self.calls.append((task.rank, str(a)))
        if a.kind == "FB":
            self.forward(a.forward.stage, a.forward.mb)
            a = a.backward
        if a.kind == "F":
            self.forward(a.stage, a.mb)
        elif a.kind in ("B", "I"):
            self.backward(a.stage, a.mb, a.kind == "B")
        elif a.kind == "W":
            self.weight(a.stage, a.mb)

    def send(self, task):
        d = task.direction
        value = self.store[(d, task.stage, task.mb)]
        self.mail.put(task.peer, task.tag, value)
        return None

    def recv(self, task):
        d = task.direction
        key = (d, task.peer_stage, task.mb)

        def arrive():
            self.store[key] = self.mail.get(task.rank, task.tag)

        return Pending(arrive)


def reference(schedule):
    """The loss of every micro-batch and the weight gradients, computed in path order."""
    h = Host(schedule, None)
    for mb, stages in h.path.items():
        for st in stages:
            h.forward(st, mb)
        for st in reversed(stages):
            h.backward(st, mb, True)
    return h


@needs_executor
class Executor(unittest.TestCase):
    def test_order_and_dependencies(self):
        s = pipesched.generate("interleaved", pp=4, vpp=2, microbatches=8)
        seen = []
        res = pipesched.execute(s, lambda t: seen.append(t.action))
        self.assertEqual(res.status, 0)
        self.assertEqual(len(seen), s.total_actions)
        for r in range(s.pp):
            self.assertEqual([a for a in seen if a.rank == r], s.ranks[r])
        pos = {str(a): i for i, a in enumerate(seen)}
        for a in seen:
            if a.kind == "F" and a.stage > 0:
                self.assertLess(pos["%dF%d" % (a.stage - 1, a.mb)], pos[str(a)])
            if a.kind == "B" and a.stage < s.num_stages - 1:
                self.assertLess(pos["%dB%d" % (a.stage + 1, a.mb)], pos[str(a)])
        self.assertEqual(len(res.timeline), 4)
        for r, tl in enumerate(res.timeline):
            self.assertEqual([t.action for t in tl], s.ranks[r])
            self.assertTrue(all(0 <= t.start <= t.end <= res.seconds for t in tl))
        self.assertIsNotNone(res.measured)
        self.assertAlmostEqual(res.measured.makespan, res.metrics["makespan"])
        self.assertAlmostEqual(res.metrics["makespan"], res.seconds)

    def test_two_hosts_compute_the_reference(self):
        """Two executors (ranks 0-1 and 2-3), each with its own values, moving activations and
        gradients through send/recv: the losses and weight gradients equal the sequential
        run's, for families with split backward, V placement, fused pairs, two model
        copies."""
        cases = [("1f1b", 1, {}), ("interleaved", 2, {}), ("zb-h1", 1, {}),
                 ("zb-v", 2, {}), ("dualpipev", 2, {}), ("dualpipe", 1, {}),
                 ("adaptive", 2, {"split_backward": True})]
        for family, vpp, opts in cases:
            with self.subTest(family=family):
                s = pipesched.generate(family, pp=4, vpp=vpp, microbatches=8, **opts)
                mail = Mailboxes(s.pp)
                hosts = [Host(s, mail), Host(s, mail)]
                exs = [pipesched.Executor(s, h.compute, h.send, h.recv, ranks=ranks,
                                          stall_timeout=20)
                       for h, ranks in zip(hosts, ([0, 1], [2, 3]))]
                for ex in exs:
                    ex.start()
                results = [ex.wait() for ex in exs]
                self.assertEqual([r.status for r in results], [0, 0])
                self.assertEqual(results[0].timeline[2], [])
                self.assertIsNone(results[0].measured)
                ref = reference(s)
                wgrad = {**hosts[0].wgrad, **hosts[1].wgrad}
                self.assertEqual(wgrad, ref.wgrad)
                for mb, stages in ref.path.items():
                    last = stages[-1]
                    owner = hosts[0] if s.placement[last] < 2 else hosts[1]
                    self.assertEqual(owner.store[("F", last, mb)], ref.store[("F", last, mb)])
                self.assertEqual(sum(len(h.calls) for h in hosts), s.total_actions)
                self.assertEqual(mail.boxes, [{}, {}, {}, {}])

    def test_deferred_and_future_completions(self):
        s = pipesched.generate("1f1b", pp=3, microbatches=6)
        pool = concurrent.futures.ThreadPoolExecutor(3)

        def later(task):
            task.defer()
            pool.submit(task.complete)

        self.assertEqual(pipesched.execute(s, later).status, 0)
        self.assertEqual(pipesched.execute(s, lambda t: pool.submit(lambda: None)).status, 0)
        self.assertEqual(pipesched.execute(s, lambda t: [Pending(lambda: None)] * 2).status, 0)
        pool.shutdown()

    def test_events(self):
        s = pipesched.generate("zb-h1", pp=2, microbatches=3)
        events = []
        pipesched.execute(s, lambda t: None,
                          on_event=lambda r, i, a, st, en: events.append((r, i, a)))
        for r in range(2):
            mine = [(i, a) for rr, i, a in events if rr == r]
            self.assertEqual(mine, list(enumerate(s.ranks[r])))

    def test_failures(self):
        s = pipesched.generate("1f1b", pp=4, microbatches=8)

        def boom(task):
            if str(task.action) == "2F3":
                raise ValueError("boom")

        with self.assertRaises(pipesched.ExecError) as e:
            pipesched.execute(s, boom)
        self.assertEqual(e.exception.code, pipesched.EHOST)
        self.assertIn("rank 2", str(e.exception))
        self.assertIn("2F3", str(e.exception))
        self.assertIsInstance(e.exception.__cause__, ValueError)
        tl = e.exception.result.timeline[2]
        self.assertEqual(tl[[str(t.action) for t in tl].index("2F3")].end, -1)

        with self.assertRaises(pipesched.ExecError) as e:
            pipesched.execute(s, lambda t: t.complete(RuntimeError("bad data"))
                              if str(t.action) == "1B0" else None)
        self.assertEqual(e.exception.code, pipesched.EHOST)
        self.assertIn("1B0", str(e.exception))
        self.assertIn("bad data", str(e.exception))

        with self.assertRaises(pipesched.ExecError) as e:
            pipesched.execute(s, lambda t: 42)
        self.assertIsInstance(e.exception.__cause__, TypeError)

        t0 = time.monotonic()
        with self.assertRaises(pipesched.ExecError) as e:
            pipesched.execute(s, lambda t: t.defer(), stall_timeout=0.2)
        self.assertEqual(e.exception.code, pipesched.ESTALL)
        self.assertIn("rank 1: blocked", str(e.exception))
        self.assertLess(time.monotonic() - t0, 10)

        ex = pipesched.Executor(s, lambda t: t.defer())
        ex.start()
        ex.cancel()
        with self.assertRaises(pipesched.ExecError) as e:
            ex.wait(10)
        self.assertEqual(e.exception.code, pipesched.ECANCELED)

    def test_complete_twice(self):
        s = pipesched.generate("1f1b", pp=2, microbatches=2)
        errors = []

        def twice(task):
            task.complete()
            try:
                task.complete()
            except pipesched.Error as e:
                errors.append(e.code)

        pipesched.execute(s, twice)
        self.assertEqual(errors, [pipesched.ESTATE] * 8)

    def test_bad_arguments(self):
        s = pipesched.generate("1f1b", pp=4, microbatches=8)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.Executor(s, lambda t: None, ranks=[0, 1])
        self.assertIn("send and recv", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.Executor(s, lambda t: None, ranks=[4])
        self.assertEqual(e.exception.code, pipesched.EINVAL)
        with self.assertRaises(pipesched.Error):
            pipesched.Executor(s)
        ex = pipesched.Executor(s, lambda t: None)
        ex.run()
        with self.assertRaises(pipesched.Error) as e:
            ex.run()
        self.assertEqual(e.exception.code, pipesched.ESTATE)

    def test_emulated(self):
        """Emulated compute takes the cost model's durations: the measured makespan, in
        time_scale units, is at least the simulated one."""
        s = pipesched.generate("1f1b", pp=4, microbatches=8)
        res = pipesched.execute(s, emulate=True, time_scale=2e-3)
        sim = s.simulate()
        self.assertGreaterEqual(res.measured.makespan, sim.makespan * 0.999)
        self.assertLess(res.measured.makespan, sim.makespan * 10)
        self.assertGreater(len(res.measured.to_trace()), 1000)


if __name__ == "__main__":
    unittest.main()
