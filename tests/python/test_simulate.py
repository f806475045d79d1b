"""Simulations against hand-worked timelines and the closed forms of docs/guide.md."""

import json
import unittest

import pipesched
from common import cli, source


def times(sim, rank):
    return [(str(t.action), t.start, t.end) for t in sim.timeline[rank]]


class OneFOneB(unittest.TestCase):
    def test_p2_m2_by_hand(self):
        """1F1B, p=2, m=2, f=b=w=1 (a full backward costs b+w=2), c=0:
        rank 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7];
        rank 0: F0 [0,1] F1 [1,2] B0 waits for rank 1's B0: [4,6], B1 for its B1: [7,9]."""
        r = pipesched.generate("1f1b", pp=2, microbatches=2).simulate(f=1, b=1, w=1, c=0)
        self.assertEqual(times(r, 0), [("0F0", 0, 1), ("0F1", 1, 2), ("0B0", 4, 6),
                                       ("0B1", 7, 9)])
        self.assertEqual(times(r, 1), [("1F0", 1, 2), ("1B0", 2, 4), ("1F1", 4, 5),
                                       ("1B1", 5, 7)])
        self.assertEqual(r.makespan, 9)
        self.assertEqual(r.bubble, 3)  # (p-1)(f+b+w)
        self.assertAlmostEqual(r.bubble_ratio, 1 - 12 / 18)
        self.assertEqual([(x.busy, x.span, x.idle) for x in r.ranks], [(6, 9, 3), (6, 6, 0)])
        self.assertEqual([x.peak_activations for x in r.ranks], [2, 1])  # min(p - r, m)

    def test_p2_m2_transfer_cost(self):
        """The same with c=1 on every cross-rank edge: rank 1's F0 starts at 1+1, rank 0's
        B0 at 5+1, rank 1's F1 at max(2+1, 5), rank 0's B1 at 8+1."""
        r = pipesched.generate("1f1b", pp=2, microbatches=2).simulate(c=1)
        self.assertEqual(times(r, 1), [("1F0", 2, 3), ("1B0", 3, 5), ("1F1", 5, 6),
                                       ("1B1", 6, 8)])
        self.assertEqual(times(r, 0)[2:], [("0B0", 6, 8), ("0B1", 9, 11)])
        self.assertEqual(r.makespan, 11)

    def test_closed_form(self):
        """makespan = (m + p - 1)(f + b + w) and bubble ratio (p-1)/(m+p-1) with c = 0."""
        for p, m, f, b, w in ((4, 8, 1, 2, 1), (3, 5, 2, 1, 1), (8, 16, 1, 1, 1)):
            r = pipesched.generate("1f1b", pp=p, microbatches=m).simulate(f=f, b=b, w=w)
            self.assertAlmostEqual(r.makespan, (m + p - 1) * (f + b + w))
            self.assertAlmostEqual(r.bubble, (p - 1) * (f + b + w))
            self.assertAlmostEqual(r.bubble_ratio, (p - 1) / (m + p - 1))

    def test_interleaved_closed_form(self):
        """Interleaved: bubble ratio (p-1)/(v m + p - 1) in chunk costs."""
        for p, v, m in ((4, 2, 8), (2, 3, 4), (4, 4, 16)):
            r = pipesched.generate("interleaved", pp=p, vpp=v, microbatches=m).simulate()
            self.assertAlmostEqual(r.bubble_ratio, (p - 1) / (v * m + p - 1))
            self.assertAlmostEqual(r.makespan, 3 * (v * m + p - 1))

    def test_costs_are_restored(self):
        s = pipesched.generate("1f1b", pp=2, microbatches=2, costs="f=2,b=1,w=1")
        self.assertEqual(s.simulate(f=1).makespan, 9)
        self.assertEqual(s.problem.costs["f"], 2)
        self.assertEqual(s.simulate().makespan, 12)  # (m+p-1)(2+1+1)

    def test_zero_bubble_h1(self):
        """ZB-H1 bubble (p-1)(f+b-w) with f=b=w: (p-1) f."""
        r = pipesched.generate("zb-h1", pp=4, microbatches=12).simulate(f=1, b=1, w=1)
        self.assertAlmostEqual(r.bubble, 3)

    def test_memory_limit(self):
        s = pipesched.generate("1f1b", pp=4, microbatches=8, mem_limit=2)
        with self.assertRaises(pipesched.Error) as e:
            s.simulate()
        self.assertEqual(e.exception.code, pipesched.EINVALID)
        self.assertIn("rank 0", str(e.exception))

    def test_metrics_match_cli(self):
        s = pipesched.generate("zb-v", pp=4, microbatches=8, costs="f=1,b=2,w=1,c=0.5")
        r = s.simulate()
        out = json.loads(cli("simulate", "-s", "zb-v", "-p", 4, "-m", 8,
                             "--costs", "f=1,b=2,w=1,c=0.5", "--json"))
        self.assertEqual(r.makespan, out["makespan"])
        for mine, theirs in zip(r.ranks, out["ranks"]):
            self.assertEqual(mine.busy, theirs["busy"])
            self.assertEqual(mine.peak_activations, theirs["peak_activations"])

    def test_moe_comm(self):
        cfg = source("docs", "examples", "pangu-ultra-moe-718b.json")
        s = pipesched.generate(None, config=cfg)
        r = s.simulate()
        out = json.loads(cli("simulate", "--config", cfg, "--json"))
        self.assertAlmostEqual(r.makespan, out["makespan"])
        self.assertIsNotNone(r.comm)
        self.assertEqual(set(r.comm["exposed"]), {"warmup", "steady", "cooldown", "all"})
        self.assertIsNone(pipesched.generate("1f1b").simulate().comm)


if __name__ == "__main__":
    unittest.main()
