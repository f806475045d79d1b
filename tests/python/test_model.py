"""The MoE planner, estimate and tune against the command line; the version; the drawings."""

import doctest
import json
import os
import re
import tempfile
import unittest

import pipesched
from common import cli, needs_viz, source

EST = dict(gpus=64, tp=4, pp=4, vpp=5, cp=2, gbs=128, mbs=1, seq=8192,
           distributed_optimizer=True)
EST_ARGS = ["--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", 64, "--tp", 4, "--pp",
            4, "--vpp", 5, "--cp", 2, "--gbs", 128, "--mbs", 1, "--seq", 8192,
            "--distributed-optimizer"]


class Version(unittest.TestCase):
    def test_version_is_the_projects(self):
        with open(source("meson.build")) as f:
            declared = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
        self.assertEqual(pipesched.__version__, declared)
        self.assertEqual(cli("--version").decode().split()[-1], declared)

    def test_guide_sessions(self):
        """The sessions of docs/python.md's sections 2 and 3 print what the guide shows."""
        with open(source("docs", "python.md")) as f:
            text = f.read()
        text = text[text.index("## 2."):text.index("## 4.")]
        # A fence closes a block: to doctest it is the end of the expected output.
        text = "\n".join("" if line.startswith("```") else line for line in text.splitlines())
        test = doctest.DocTestParser().get_doctest(text, {}, "docs/python.md", None, 0)
        self.assertGreater(len(test.examples), 15)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            os.chdir(d)
            try:
                runner.run(test)
            finally:
                os.chdir(cwd)
            self.assertTrue(os.path.exists(os.path.join(d, "sched.csv")))
        self.assertEqual(runner.failures, 0)

    def test_docstring_session(self):
        """The session in the package's docstring runs as written."""
        failures, tried = doctest.testmod(pipesched, verbose=False)
        self.assertGreater(tried, 3)
        self.assertEqual(failures, 0)


class Plan(unittest.TestCase):
    def test_plan_matches_cli(self):
        cfg = source("docs", "examples", "deepseek-v3.json")
        out = json.loads(cli("plan", "--config", cfg, "--json"))
        p = pipesched.plan(cfg)
        pair = out["pair"]
        self.assertEqual((p.fstage, p.bstage), (pair["forward_stage"], pair["backward_stage"]))
        for key in ("duration", "compute", "comm", "exposed", "overlap", "p2p"):
            self.assertAlmostEqual(getattr(p, key), pair[key], places=9)
        self.assertEqual([(o.op, o.stream, o.part, o.layer) for o in p.ops],
                         [(o["op"], o["stream"], o["part"], o["layer"]) for o in pair["ops"]])
        warm = pipesched.plan(cfg, bstage=-1)
        self.assertAlmostEqual(warm.duration, out["warmup"]["duration"], places=9)
        for c in out["compare"]:
            self.assertAlmostEqual(pipesched.plan(cfg, method=c["method"]).duration,
                                   c["duration"], places=9)
        problem = pipesched.Problem(config=cfg)
        self.assertEqual(problem.a2a["chosen"], out["a2a"]["chosen"])
        self.assertEqual(problem.a2a["flat"]["inter_bytes"], out["a2a"]["flat"]["inter_bytes"])

    def test_plan_errors(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.plan(None, family="1f1b")
        self.assertEqual(e.exception.code, pipesched.ENOTFOUND)
        self.assertIn("MoE model", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.plan(source("docs", "examples", "deepseek-v3.json"), method="greedy")
        self.assertIn("adaptive", str(e.exception))


class Estimate(unittest.TestCase):
    def test_estimate_matches_cli(self):
        e = pipesched.estimate("llama3-70b", "h100-sxm", **EST)
        out = json.loads(cli("estimate", *EST_ARGS, "--json"))
        for key in ("step_time_s", "tokens_per_s_per_gpu", "mfu", "bubble_s", "dp",
                    "microbatches"):
            self.assertEqual(getattr(e, key), out[key], key)
        self.assertEqual(e.exposed_s, out["exposed_s"])
        self.assertEqual(e.peak_gib, out["memory"]["peak_gib"])
        self.assertEqual([m.total for m in e.memory],
                         [r["total_gib"] for r in out["memory"]["ranks"]])
        self.assertEqual(e.schedule.family, "interleaved")
        self.assertEqual(len(e.stage_layers), 4 * 5)
        self.assertEqual(sum(s["layers"] for s in e.stage_layers), 80)
        self.assertAlmostEqual(e.simulation.makespan + e.optimizer_s, e.step_time_s, delta=0.5)
        self.assertIn("traceEvents", e.to_trace())
        self.assertEqual(len(e.schedule.ranks), 4)
        same = pipesched.estimate(config=source("docs", "examples", "estimate-llama3-70b.json"))
        self.assertEqual(same.step_time_s, e.step_time_s)

    def test_estimate_errors_name_the_key(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.estimate("llama3-70b", "h100-sxm", gpus=64, tp=3, pp=4, gbs=128, seq=8192)
        self.assertEqual(e.exception.code, pipesched.ECONFIG)
        self.assertIn("tp", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.estimate("llama3-70b", "h100-sxm", gpus=64, tpp=4)
        self.assertIn("tpp", str(e.exception))
        with self.assertRaises(pipesched.Error):
            pipesched.estimate("no-such-model", "h100-sxm", gpus=8)


class Tune(unittest.TestCase):
    def test_tune_matches_cli(self):
        args = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", 8, "--gbs", 16,
                "--seq", 4096, "--top", 3, "--threads", 1, "--fix", "tp=1",
                "--allow", "schedule=1f1b,zb-v"]
        out = json.loads(cli("tune", *args, "--json"))
        t = pipesched.tune("llama3-8b", "h100-sxm", gpus=8, gbs=16, seq=4096, top=3, threads=1,
                           fix={"tp": 1}, allow={"schedule": ["1f1b", "zb-v"]})
        self.assertEqual(len(t.top), len(out["top"]))
        for mine, theirs in zip(t.top, out["top"]):
            self.assertEqual(mine.index, theirs["index"])
            self.assertEqual(mine.step_time_s, theirs["step_time_s"])
            self.assertEqual(mine.knobs, theirs["knobs"])
        for key in ("candidates", "rejected", "simulated", "fitting"):
            self.assertEqual(t.stats[key], out["search"][key])
        self.assertTrue(all(r.knobs["schedule"] in ("1f1b", "zb-v") for r in t.top))

    def test_tune_csv_matches_cli(self):
        """Tune.csv (record_all, ps_tune_write_csv after the search) is the file that
        tune --csv writes as the search goes, byte for byte (one thread: the same pruning),
        over-memory rows and their peaks included."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "all.csv")
            cli("tune", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", 8, "--gbs",
                16, "--seq", 4096, "--top", 3, "--threads", 1, "--max", "pp=2", "--csv", path)
            with open(path) as f:
                want = f.read()
        t = pipesched.tune("llama3-8b", "h100-sxm", gpus=8, gbs=16, seq=4096, top=3, threads=1,
                           max={"pp": 2}, record_all=True)
        self.assertEqual(t.csv, want)
        self.assertEqual(want.count("\n"), t.stats["candidates"] + 1)
        self.assertRegex(want, r",over-memory,\"[^\"]*\",,,,[0-9.]+\n")

    def test_tune_recompute_fit(self):
        """A recompute fit row carries its layer count, as the CLI's JSON does."""
        fix = "tp=4,pp=8,vpp=5,cp=1,mbs=1,schedule=interleaved,recompute=fit"
        out = json.loads(cli("tune", "--model", "llama3-70b", "--hardware", "h100-sxm",
                             "--gpus", 64, "--gbs", 128, "--seq", 8192, "--top", 2,
                             "--allow", "precision=fp8", "--fix", fix, "--json"))
        t = pipesched.tune("llama3-70b", "h100-sxm", gpus=64, gbs=128, seq=8192, top=2,
                           allow={"precision": "fp8"},
                           fix=dict(kv.split("=") for kv in fix.split(",")))
        self.assertEqual(len(t.top), len(out["top"]))
        for mine, theirs in zip(t.top, out["top"]):
            self.assertEqual(mine.knobs["recompute"], "fit")
            self.assertEqual(mine.recompute_layers, theirs["recompute_layers"])
            self.assertGreater(mine.recompute_layers, 0)
            self.assertEqual(mine.step_time_s, theirs["step_time_s"])

    def test_tune_errors(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.tune("llama3-8b", "h100-sxm", gpus=8, gbs=16, seq=4096,
                           fix={"tensor": 2})
        self.assertIn("tp", str(e.exception))
        with self.assertRaises(pipesched.Error):
            pipesched.tune("llama3-8b", "h100-sxm", gpus=8, gbs=16, seq=4096,
                           fix={"tp": 2}, max={"tp": 4})
        # What ctypes would wrap or cut is refused, naming the argument: 2**32 + 8 GPUs
        # once ran as 8, and a bool passed as a count of threads.
        for kw, code, word in ((dict(gpus=2 ** 32 + 8), "ERANGE", "gpus = 4294967304 is outside"),
                               (dict(gbs=2 ** 63), "ERANGE", "gbs"),
                               (dict(threads=True), "EINVAL", "threads must be a whole"),
                               (dict(seq=4096.5), "EINVAL", "seq must be a whole"),
                               (dict(mem_reserve_gib="2"), "EINVAL", "mem_reserve_gib must be")):
            args = dict(gpus=8, gbs=16, seq=4096, top=1)
            args.update(kw)
            with self.assertRaises(pipesched.Error) as e:
                pipesched.tune("llama3-8b", "h100-sxm", **args)
            self.assertEqual(e.exception.code, pipesched.ERROR_CODES[code])
            self.assertIn(word, str(e.exception))


@needs_viz
class Drawings(unittest.TestCase):
    def test_timeline_and_dag(self):
        s = pipesched.generate("1f1b", pp=2, microbatches=3)
        svg = s.svg()
        self.assertTrue(svg.lstrip().startswith("<?xml") or "<svg" in svg[:400])
        titles = set(re.findall(r"<title>(r\d+\.\d+)</title>", svg))
        self.assertEqual(titles, {"r%d.%d" % (r, i) for r in range(2) for i in range(6)})
        dag = s.simulate().svg("dag")
        self.assertEqual(len(re.findall(r"<title>r\d+\.\d+</title>", dag)), 12)
        with self.assertRaises(pipesched.Error) as e:
            s.svg(max_boxez=3)
        self.assertIn("max_boxes", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:  # not wrapped to 3
            s.svg(max_boxes=2 ** 32 + 3)
        self.assertIn("max_boxes = 4294967299 is outside", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            s.svg(max_width="wide")
        self.assertIn("max_width must be a number", str(e.exception))

    def test_overlap(self):
        p = pipesched.plan(source("docs", "examples", "deepseek-v3.json"))
        svg = p.svg(title="pair")
        self.assertEqual(len(re.findall(r"<title>op\d+</title>", svg)), len(p.ops))


if __name__ == "__main__":
    unittest.main()
