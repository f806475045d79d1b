"""balance.h from Python (data reordering, expert traces and placement), the parts of tune.h
beyond the search (the Pareto front of three, the CSV, a row's estimate) and the scatter
plot: hand-worked cases, the command line's --json for the same input, and bad input."""

import doctest
import json
import os
import re
import subprocess
import tempfile
import unittest

import pipesched
from common import CLI, SOURCE_ROOT, cli, needs_viz


def cli_error(*args):
    """Runs the program expecting a failure; returns (exit status, standard error)."""
    if not CLI:
        raise unittest.SkipTest("PIPESCHED_CLI is not set (run the suite with meson test)")
    r = subprocess.run([CLI] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return r.returncode, r.stderr.decode()


class TempDir(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(content)
        return path


class Guide(unittest.TestCase):
    def test_load_balancing_session(self):
        """docs/python.md's "Load balancing" session prints what the guide shows."""
        with open(os.path.join(SOURCE_ROOT, "docs", "python.md")) as f:
            text = f.read()
        text = text[text.index("### Load balancing"):text.index("## 6.")]
        text = "\n".join("" if line.startswith("```") else line for line in text.splitlines())
        test = doctest.DocTestParser().get_doctest(text, {"pipesched": pipesched},
                                                   "docs/python.md", None, 0)
        self.assertGreater(len(test.examples), 6)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        self.assertEqual(runner.failures, 0)


class Samples(TempDir):
    def test_parse_by_hand(self):
        s = pipesched.parse_samples("512, 2048,128\r\n3\n")
        self.assertEqual(len(s), 2)
        self.assertEqual(s[0], pipesched.Sample(2688.0, 512.0 ** 2 + 2048.0 ** 2 + 128.0 ** 2, 3))
        self.assertEqual(s[1], pipesched.Sample(3.0, 9.0, 1))
        self.assertIsInstance(s[0].tokens, float)

    def test_time_by_hand(self):
        m = pipesched.SampleModel(a=1.0, c=2.0, d=3.0)
        # lengths 2 and 3: sq = 13, tokens = 5: 13 + 10 + 3
        self.assertEqual(m.time([2, 3]), 26.0)
        self.assertEqual(m.time(pipesched.Sample(5.0, 13.0, 2)), 26.0)

    def test_bad_samples_carry_the_librarys_message(self):
        bad = "512,2048\n7,x9\n"
        with self.assertRaises(pipesched.Error) as e:
            pipesched.parse_samples(bad)
        self.assertEqual(e.exception.code, pipesched.EPARSE)
        self.assertIn("line 2", str(e.exception))
        # The command line prints the same message for the same text.
        path = self.write("bad.txt", bad)
        rc, err = cli_error("balance", "data", "--samples", path, "--dp", 1, "-m", 1,
                            "--cost", "a=1,c=1,d=0")
        self.assertEqual(rc, 2)
        self.assertIn(str(e.exception), err)
        for text in ("", "0\n", "1,,2\n", "-3\n"):
            with self.assertRaises(pipesched.Error):
                pipesched.parse_samples(text)

    def test_sample_model_of_a_dense_model(self):
        m = pipesched.sample_model("llama3-8b", "h100-sxm")
        self.assertGreater(m.a, 0)
        self.assertGreater(m.c, 0)
        self.assertEqual(m.d, 0.0)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.sample_model("llama3-8b", {"base": "h100-sxm", "gemm_eff": -1})
        self.assertIn("gemm_eff", str(e.exception))


class BalanceData(TempDir):
    def test_two_ranks_by_hand(self):
        """pp = 1, one micro-batch slot of one sample per slot: a rank's step is the sum of its
        slots' times. Round-robin deals 4+2 and 3+1 (step 6); the best split is 4+1 | 3+2."""
        r = pipesched.balance_data([4, 3, 2, 1], dp=2, microbatches=2, pp=1)
        self.assertEqual(r.baseline_step_time, 6.0)
        self.assertEqual(r.step_time, 5.0)
        self.assertAlmostEqual(r.gain, 0.2)
        per_rank = [0.0, 0.0]
        for i, t in enumerate([4, 3, 2, 1]):
            per_rank[r.rank[i]] += t
        self.assertEqual(sorted(per_rank), [5.0, 5.0])
        # every (rank, slot) holds mbs = 1 sample
        self.assertEqual(sorted(zip(r.rank, r.slot)), [(0, 0), (0, 1), (1, 0), (1, 1)])

    def test_matches_cli(self):
        lines = ["%d,%d" % (100 + 37 * i % 900, 50 + 91 * i % 700) for i in range(24)]
        path = self.write("samples.txt", "\n".join(lines) + "\n")
        cost = "a=0.001,c=1,d=5"
        out = json.loads(cli("balance", "data", "--samples", path, "--dp", 2, "-m", 4,
                             "--cost", cost, "-s", "zb-h1", "-p", 4, "--costs", "f=1,b=1,w=1",
                             "--json"))
        with open(path) as f:
            samples = pipesched.parse_samples(f.read())
        r = pipesched.balance_data(samples, dp=2, microbatches=4,
                                   cost=pipesched.SampleModel(0.001, 1, 5), family="zb-h1",
                                   pp=4, costs="f=1,b=1,w=1")
        self.assertEqual([list(a) for a in zip(r.rank, r.slot)], out["assignment"])
        for key in ("step_time", "baseline_step_time", "lpt_step_time", "gain"):
            self.assertEqual(getattr(r, key), out[key], key)
        self.assertEqual(r.evals, out["evaluations"])
        self.assertEqual(r.mbs, out["mbs"])

    def test_model_cost_matches_cli(self):
        path = self.write("s.txt", "".join("%d,%d\n" % (512 * (i % 5 + 1), 300 + 7 * i)
                                           for i in range(8)))
        out = json.loads(cli("balance", "data", "--samples", path, "--dp", 2, "-m", 2,
                             "--model", "llama3-8b", "--hardware", "h100-sxm", "-p", 2,
                             "--json"))
        with open(path) as f:
            samples = pipesched.parse_samples(f.read())
        cost = pipesched.sample_model("llama3-8b", "h100-sxm")
        r = pipesched.balance_data(samples, 2, 2, cost=cost, pp=2)
        self.assertEqual(r.step_time, out["step_time"])
        self.assertEqual([list(a) for a in zip(r.rank, r.slot)], out["assignment"])

    def test_errors(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, 2, 3], dp=2, microbatches=1, mbs=1, pp=1)
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        self.assertIn("3", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, -2], dp=2, microbatches=1, pp=1)
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, float("nan")], dp=2, microbatches=1, pp=1)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data(["x"], dp=1, microbatches=1)
        self.assertEqual(e.exception.code, pipesched.EINVAL)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, 2], dp=1, microbatches=2, family="nope")
        self.assertEqual(e.exception.code, pipesched.ENOTFOUND)
        # sizes beyond int32_t are refused, not wrapped (2**32 + 2 would wrap to 2)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, 2], dp=2 ** 32 + 2, microbatches=1, mbs=1, pp=1)
        self.assertEqual(e.exception.code, pipesched.ERANGE)
        self.assertIn("dp", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.balance_data([1, 2], dp="2", microbatches=1, pp=1)
        self.assertEqual(e.exception.code, pipesched.EINVAL)


TRACE = "step,layer,expert,tokens\n0,0,0,10\n0,0,1,20\n1,0,0,30\n"


class Experts(TempDir):
    def test_trace_by_hand(self):
        with pipesched.ExpertTrace.load(TRACE) as t:
            self.assertEqual(t.shape, (2, 1, 2))
            self.assertEqual(t.tokens(1, 0, 1), 0.0)  # missing from the CSV
            self.assertEqual(t.tokens(1, 0, 0), 30.0)
            # P_1 = EL_0 = (10, 20); P_2 = 0.5 P_1 + 0.5 EL_1 = (20, 10)
            self.assertEqual(t.predict(0.5), [[20.0, 10.0]])
            self.assertEqual(t.predict(0.0), [[30.0, 0.0]])
            with self.assertRaises(IndexError):
                t.tokens(2, 0, 0)
            with self.assertRaises(pipesched.Error) as e:
                t.predict(1.0)
            self.assertEqual(e.exception.code, pipesched.ERANGE)
        with self.assertRaises(pipesched.Error) as e:
            t.predict()
        self.assertEqual(e.exception.code, pipesched.ESTATE)
        plain = pipesched.ExpertTrace.load("1 2 3\n4 5 6\n")
        self.assertEqual(plain.shape, (1, 2, 3))
        self.assertEqual(plain.predict(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        plain.close()
        plain.close()  # twice is harmless

    def test_bad_trace_carries_the_librarys_message(self):
        bad = "1 2 3\n4 5\n"
        with self.assertRaises(pipesched.Error) as e:
            pipesched.ExpertTrace.load(bad)
        self.assertEqual(e.exception.code, pipesched.EPARSE)
        self.assertIn("line 2", str(e.exception))
        rc, err = cli_error("balance", "experts", "--load", self.write("t.txt", bad),
                            "--devices", 1)
        self.assertEqual(rc, 2)
        self.assertIn(str(e.exception), err)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.ExpertTrace.synthetic("zipf:1,drfit:2", 2, 4)
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        self.assertIn("drfit", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.ExpertTrace.synthetic("zipf:1", 2, pipesched_max_experts() + 1)
        self.assertEqual(e.exception.code, pipesched.ERANGE)

    def test_placement_by_hand(self):
        self.assertEqual(pipesched.expert_identity(8, 4), [0, 0, 1, 1, 2, 2, 3, 3])
        self.assertEqual(pipesched.expert_group_check((4, 2), 8), 2)
        load = [5, 4, 3, 3, 3, 2]
        # two devices of three experts: 20 in all, and {5,3,2} | {4,3,3} reaches 10 each
        place = pipesched.place_experts(load, pipesched.ExpertGroup(2))
        self.assertEqual(sorted(place), [0, 0, 0, 1, 1, 1])
        self.assertEqual(pipesched.expert_device_loads(load, place, 2), [10.0, 10.0])
        self.assertEqual(pipesched.expert_device_loads(load, [0, 0, 0, 1, 1, 1], 2), [12.0, 8.0])
        with self.assertRaises(pipesched.Error) as e:
            pipesched.place_experts(load, pipesched.ExpertGroup(4))
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        self.assertIn("4", str(e.exception))
        with self.assertRaises(pipesched.Error):
            pipesched.place_experts([1, -1], 2)
        with self.assertRaises(pipesched.Error):
            pipesched.expert_device_loads([1, 2], [0, 5], 2)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.expert_identity(8, pipesched.ExpertGroup(2 ** 32 + 4))
        self.assertEqual(e.exception.code, pipesched.ERANGE)
        # a relabelling keeps the loads and puts back what it can: swapping the two devices
        # of the identity is undone
        self.assertEqual(pipesched.expert_align([0, 0, 1, 1], [1, 1, 0, 0], 2), [0, 0, 1, 1])

    def test_migration_by_hand(self):
        self.assertTrue(pipesched.expert_should_migrate(2.0, 1.0, 10.0, 11))
        self.assertFalse(pipesched.expert_should_migrate(2.0, 1.0, 10.0, 10))
        self.assertFalse(pipesched.expert_should_migrate(1.0, 2.0, 0.0, 10))
        # a gated expert MLP holds 3 hidden x moe_ffn weights; 14 bytes each move
        b = pipesched.expert_migration_bytes("deepseek-v3")
        self.assertEqual(b, 3 * 7168 * 2048 * 14)
        self.assertEqual(pipesched.expert_migration_bytes("llama3-8b"), 0.0)
        sec, moved = pipesched.expert_migration([0, 0, 1, 1], [0, 1, 0, 1], 2, b, "h100-sxm")
        self.assertEqual(moved, 2)
        self.assertGreater(sec, 0)
        self.assertEqual(pipesched.expert_migration([0, 1], [0, 1], 2, b, "h100-sxm"),
                         (0.0, 0))

    def test_matches_cli(self):
        """The command line's placement and layer times, rebuilt from the functions."""
        spec = "zipf:1.1,seed:5,steps:6,drift:0.2"
        out = json.loads(cli("balance", "experts", "--model", "deepseek-v3", "--hardware",
                             "h100-sxm", "--synthetic-experts", spec, "--devices", 32,
                             "--nodes", 4, "--json"))
        group = pipesched.ExpertGroup(32, 4)
        with pipesched.ExpertTrace.synthetic(spec, len(out["layers"]), out["experts"]) as t:
            self.assertEqual(t.steps, out["steps"])
            pred = t.predict(out["theta"])
        ident = pipesched.expert_identity(out["experts"], group)
        for layer, want in zip(pred, out["layers"]):
            place = pipesched.place_experts(layer, group)
            self.assertEqual(place, want["device_of_expert"])
            self.assertEqual(max(pipesched.expert_device_loads(layer, place, 32)),
                             want["max_load"])
            self.assertEqual(max(pipesched.expert_device_loads(layer, ident, 32)),
                             want["before_max_load"])
            for key, p in (("time_after", place), ("time_before", ident)):
                lt = pipesched.expert_layer_time("deepseek-v3", "h100-sxm", layer, p, group)
                self.assertEqual(lt._asdict(), want[key])

    def test_layer_time_errors(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.expert_layer_time("llama3-8b", "h100-sxm", [1, 2], [0, 1], 2)
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.expert_layer_time("deepseek-v3", "h100-sxm", [1], [0], 1, precision="fp4")
        self.assertEqual(e.exception.code, pipesched.EINVAL)


def pipesched_max_experts():
    with open(os.path.join(SOURCE_ROOT, "include", "pipesched", "balance.h")) as f:
        return int(re.search(r"#define PS_MAX_EXPERTS (\d+)", f.read()).group(1))


class EstimateImbalance(TempDir):
    JOB = dict(gpus=16, tp=1, pp=2, ep=2, gbs=16, mbs=1, seq=4096)
    ARGS = ["--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", 16, "--tp", 1,
            "--pp", 2, "--ep", 2, "--gbs", 16, "--mbs", 1, "--seq", 4096]

    def test_uniform_is_the_even_step(self):
        """Samples of one full-length document each and no trace: every figure is the even
        estimate's, the factors 1, and the assignment the input order round-robin."""
        even = pipesched.estimate("mixtral-8x7b", "h100-sxm", **self.JOB).step_time_s
        r = pipesched.estimate_imbalance("mixtral-8x7b", "h100-sxm", samples=[[4096]] * 16,
                                         **self.JOB)
        for t in (r.even_step_time_s, r.imbalanced_step_time_s, r.experts_step_time_s,
                  r.balanced_step_time_s):
            self.assertEqual(t, even)
        self.assertEqual((r.expert_factor, r.data_imbalance), (1.0, 1.0))
        self.assertEqual(sorted(zip(r.rank, r.slot)),
                         sorted((i % 8, i // 8) for i in range(16)))
        self.assertIsNone(pipesched.estimate_imbalance("mixtral-8x7b", "h100-sxm",
                                                       **self.JOB).rank)

    def test_matches_cli(self):
        out = json.loads(cli("estimate", *self.ARGS, "--synthetic-experts", "zipf:1.2",
                             "--synthetic-samples", "lognormal:7,1.5", "--json"))["imbalance"]
        trace = pipesched.ExpertTrace.synthetic("zipf:1.2", 32, 8)
        r = pipesched.estimate_imbalance("mixtral-8x7b", "h100-sxm", samples="lognormal:7,1.5",
                                         trace=trace, **self.JOB)
        self.assertEqual(r.even_step_time_s, out["even_step_time_s"])
        self.assertEqual(r.imbalanced_step_time_s, out["unbalanced_step_time_s"])
        self.assertEqual(r.experts_step_time_s, out["experts_placed_step_time_s"])
        self.assertEqual(r.balanced_step_time_s, out["balanced_step_time_s"])
        self.assertEqual(r.expert_factor, out["expert_max_over_mean"])
        self.assertEqual(r.evals, out["reorder_simulations"])
        self.assertGreater(r.imbalanced_step_time_s, r.even_step_time_s)
        self.assertLessEqual(r.balanced_step_time_s, r.imbalanced_step_time_s)
        self.assertEqual(len(r.rank), 16)

    def test_errors(self):
        cases = ((dict(samples=[[4096]] * 15), "ECONFIG", "15"),
                 (dict(samples="lognormal:7"), "ECONFIG", "lognormal"),
                 (dict(trace="zipf:1.2"), "EINVAL", "ExpertTrace"),
                 (dict(samples=[[4096]] * 16, theta="x"), "EINVAL", "theta"),
                 (dict(samples=[[4096]] * 16, max_evals=1.5), "EINVAL", "max_evals"))
        for kw, code, word in cases:
            with self.assertRaises(pipesched.Error) as e:
                pipesched.estimate_imbalance("mixtral-8x7b", "h100-sxm", **kw, **self.JOB)
            self.assertEqual(e.exception.code, pipesched.ERROR_CODES[code], kw)
            self.assertIn(word, str(e.exception))
        with self.assertRaises(pipesched.Error) as e:  # a dense model with a trace
            pipesched.estimate_imbalance("llama3-8b", "h100-sxm", gpus=8, tp=1, pp=2, gbs=8,
                                         seq=4096, trace=pipesched.ExpertTrace.synthetic(
                                             "zipf:1.2", 32, 8))
        self.assertEqual(e.exception.code, pipesched.ECONFIG)


class TuneParts(TempDir):
    def test_pareto3_by_hand(self):
        # (step, peak, gpus): b dominates d (better in all three); a and c trade off; e equals
        # a in all three, so both stay
        step = [1.0, 2.0, 3.0, 2.5, 1.0]
        peak = [5.0, 3.0, 1.0, 3.5, 5.0]
        gpus = [8, 8, 8, 8, 8]
        self.assertEqual(pipesched.pareto3(step, peak, gpus), [True, True, True, False, True])
        # more GPUs for the same step and memory is dominated; fewer for a worse step is not
        self.assertEqual(pipesched.pareto3([1, 1, 2], [1, 1, 1], [8, 16, 4]),
                         [True, False, True])
        self.assertEqual(pipesched.pareto3([], [], []), [])
        with self.assertRaises(pipesched.Error):
            pipesched.pareto3([1], [1, 2], [1])

    def test_families(self):
        self.assertEqual(pipesched.tune_families(),
                         ["1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "v-half", "v-min",
                          "dualpipe", "dualpipev", "adaptive", "zb-auto"])

    def test_csv_row_estimate_and_progress(self):
        args = dict(gpus=8, gbs=16, seq=4096, top=3, threads=1, fix={"tp": 1},
                    allow={"schedule": ["1f1b", "zb-v"]})
        seen = []
        t = pipesched.tune("llama3-8b", "h100-sxm", record_all=True,
                           progress=lambda *a: seen.append(a), **args)
        path = os.path.join(self.dir, "all.csv")
        cli("tune", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", 8, "--gbs", 16,
            "--seq", 4096, "--top", 3, "--threads", 1, "--fix", "tp=1", "--allow",
            "schedule=1f1b,zb-v", "--csv", path)
        with open(path) as f:
            self.assertEqual(t.csv, f.read())
        self.assertEqual(len(t.csv.splitlines()), t.stats["candidates"] + 1)
        self.assertTrue(seen)
        done, total = seen[-1][:2]
        self.assertEqual(done, total)
        self.assertEqual(total, t.stats["candidates"])
        for row in t.top[:2] + t.front[:1]:
            e = t.estimate(row)
            self.assertEqual(e.step_time_s, row.step_time_s)
            self.assertEqual(e.peak_gib, row.peak_gib)
            self.assertEqual(e.dp, row.dp)
        self.assertIsNone(pipesched.tune("llama3-8b", "h100-sxm", **args).csv)

    def test_progress_exception_is_raised(self):
        def stop(*a):
            raise KeyboardInterrupt("stop")

        with self.assertRaises(KeyboardInterrupt):
            pipesched.tune("llama3-8b", "h100-sxm", gpus=8, gbs=16, seq=4096, threads=1,
                           fix={"tp": 1, "pp": 1}, progress=stop)
        with self.assertRaises(pipesched.Error):
            pipesched.tune("llama3-8b", "h100-sxm", gpus=8, progress=3)


@needs_viz
class Scatter(unittest.TestCase):
    def test_points_and_labels(self):
        svg = pipesched.scatter_svg([1, 2, 3], [30, 20, 10], ["a", None, "c & d"],
                                    "peak (GiB)", "step (s)", "front")
        self.assertEqual(sorted(re.findall(r"<title>(point\d+)</title>", svg)),
                         ["point0", "point1", "point2"])
        self.assertEqual(sorted(re.findall(r"<title>(label\d+)</title>", svg)),
                         ["label0", "label2"])
        self.assertIn("c &amp; d", svg)
        self.assertIn("peak (GiB)", svg)

    def test_errors(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.scatter_svg([1, float("nan")], [1, 2])
        self.assertEqual(e.exception.code, pipesched.EINVAL)
        self.assertTrue(str(e.exception))
        for args in (([], []), ([1], [1, 2]), ([1], [1], ["a", "b"])):
            with self.assertRaises(pipesched.Error):
                pipesched.scatter_svg(*args)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.scatter_svg([1, 2], [1, 2], ["a", "x" * 121])
        self.assertEqual(str(e.exception), "label 1 is 121 bytes long; at most 120")


if __name__ == "__main__":
    unittest.main()
