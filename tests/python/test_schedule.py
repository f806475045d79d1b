"""Families, generation, errors, actions and every export, against the command line of the same
build and against hand-worked tables."""

import csv
import io
import json
import os
import re
import tempfile
import unittest

import pipesched
from common import cli, source

# (family, pp, vpp, microbatches, extra CLI args / keyword options)
CASES = [
    ("1f1b", 4, 1, 8, {}),
    ("gpipe", 3, 1, 5, {}),
    ("interleaved", 4, 2, 8, {}),
    ("interleaved", 4, 2, 12, {"group_size": 6}),
    ("interleaved-rounds", 4, 2, 8, {}),
    ("looped-bfs", 2, 3, 4, {}),
    ("zb-h1", 4, 1, 8, {}),
    ("zb-h2", 4, 1, 8, {}),
    ("interleaved-zb", 4, 2, 8, {}),
    ("zb-v", 4, 2, 8, {}),
    ("v-half", 4, 2, 8, {}),
    ("v-min", 4, 2, 8, {}),
    ("zb-auto", 4, 1, 8, {"costs": "f=1,b=2,w=1,c=0.5"}),
    ("dualpipe", 4, 1, 8, {}),
    ("dualpipev", 4, 2, 8, {}),
    ("adaptive", 4, 2, 8, {"extra_warmup": 2, "split_backward": True}),
]


def cli_args(family, pp, vpp, m, opts):
    args = ["-s", family, "-p", pp, "-v", vpp, "-m", m]
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        args += [flag] if v is True else [flag, v]
    return args


# A cell of PyTorch's action notation (torch.distributed.pipelining's _Action.from_str reads
# [stage][type][microbatch], and (a;b)OVERLAP_F_B for a fused pair).
SIMPLE = r"\d+(?:F|I|W|B|SEND_F|RECV_F|SEND_B|RECV_B)\d+"
CELL = re.compile(r"^(?:%s|\((%s);(%s)\)OVERLAP_F_B)$" % (SIMPLE, SIMPLE, SIMPLE))


class Families(unittest.TestCase):
    def test_list_matches_cli(self):
        listed = json.loads(cli("list", "--json"))
        fams = pipesched.families()
        self.assertEqual([f.name for f in fams], [f["name"] for f in listed])
        for f, c in zip(fams, listed):
            self.assertEqual(",".join(f.aliases), c["aliases"])
            self.assertEqual(f.placement, c["placement"])
            self.assertEqual(f.constraints, c["constraints"])

    def test_parameters(self):
        self.assertEqual(pipesched.family("Interleaved1F1B").name, "interleaved-rounds")
        il = pipesched.family("interleaved")
        self.assertEqual(il.parameters, ("pp", "vpp", "microbatches", "group_size"))
        self.assertIsNone(il.vpp)
        ad = pipesched.family("adaptive")
        self.assertEqual(ad.parameters[3:], ("group_size", "extra_warmup", "split_backward"))
        zbv = pipesched.family("ScheduleZBVZeroBubble")
        self.assertEqual((zbv.name, zbv.vpp, zbv.default_vpp, zbv.placement), ("zb-v", 2, 2, "v"))
        self.assertEqual(pipesched.family("dualpipe").model_copies, 2)
        self.assertTrue(pipesched.family("zb-auto").cost_aware)
        self.assertFalse(pipesched.family("1f1b").cost_aware)
        with self.assertRaises(pipesched.Error) as e:
            pipesched.family("zigzag")
        self.assertEqual(e.exception.code, pipesched.ENOTFOUND)
        self.assertIn("1f1b", str(e.exception))

    def test_every_family_takes_its_parameters(self):
        """Each family generates with the default of every parameter it lists."""
        for f in pipesched.families():
            opts = {"group_size": 4, "extra_warmup": 1, "split_backward": True}
            given = {k: v for k, v in opts.items() if k in f.parameters}
            s = pipesched.generate(f.name, pp=4, vpp=f.default_vpp, microbatches=8, **given)
            self.assertEqual(s.vpp, f.default_vpp, f.name)


class Exports(unittest.TestCase):
    def test_csv_json_table_equal_cli(self):
        for family, pp, vpp, m, opts in CASES:
            with self.subTest(family=family, opts=opts):
                s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=m, **opts)
                args = cli_args(family, pp, vpp, m, opts)
                self.assertEqual(s.to_csv().encode(), cli("generate", *args, "-f", "csv"))
                self.assertEqual(s.to_csv(comms=True).encode(),
                                 cli("generate", *args, "-f", "csv-comms"))
                self.assertEqual(s.to_json().encode(), cli("generate", *args, "-f", "json"))
                self.assertEqual(s.to_table().encode(), cli("generate", *args))

    def test_simulation_exports_equal_cli(self):
        for family, pp, vpp, m, opts in CASES[:4] + CASES[12:15]:
            with self.subTest(family=family):
                costs = "f=1,b=2,w=1,c=0.25"
                o = dict(opts, costs=opts.get("costs", costs))
                s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=m, **o)
                r = s.simulate()
                args = cli_args(family, pp, vpp, m, o)
                self.assertEqual(r.metrics_json().encode(), cli("simulate", *args, "--json"))
                self.assertEqual(r.to_json().encode(), cli("simulate", *args, "-f", "json"))
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "t.json")
                    cli("simulate", *args, "--trace", path)
                    with open(path, "rb") as fh:
                        self.assertEqual(r.to_trace().encode(), fh.read())
                json.loads(r.to_trace(us_per_unit=1e6, events=[
                    {"name": "optimizer", "rank": 0, "start": r.makespan, "dur": 1.0}]))
                self.assertEqual(r.to_table().encode(), cli("simulate", *args, "-f", "table"))

    def test_csv_is_what_pytorch_reads(self):
        """Every cell parses as PyTorch's notation, and pytorch_actions() is the table as
        PyTorch's _load_csv reads it (csv.reader, one _Action.from_str per cell)."""
        for family, pp, vpp, m, opts in CASES:
            s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=m, **opts)
            for fmt, comms in (("compute_only", False), ("compute_comms", True)):
                rows = list(csv.reader(io.StringIO(s.to_csv(comms=comms), newline="")))
                self.assertEqual(len(rows), pp)
                for row in rows:
                    for cell in row:
                        self.assertRegex(cell, CELL)
                acts = s.pytorch_actions(fmt, factory=str)
                self.assertEqual(acts, dict(enumerate(rows)))
                lists = s.lowered() if comms else s.ranks
                self.assertEqual(acts, {r: [str(a) for a in lst] for r, lst in enumerate(lists)})

    def test_pytorch_actions_default_factory(self):
        s = pipesched.generate("1f1b", pp=2, microbatches=2)
        try:
            from torch.distributed.pipelining.schedules import _Action
        except ImportError:
            with self.assertRaises(ImportError) as e:
                s.pytorch_actions()
            self.assertIn("factory=str", str(e.exception))
            return
        acts = s.pytorch_actions()
        self.assertEqual([str(a) for a in acts[0]], ["0F0", "0F1", "0B0", "0B1"])
        self.assertTrue(all(isinstance(a, _Action) for a in acts[1]))

    def test_load_csv_round_trip(self):
        for family, pp, vpp, m, opts in CASES:
            s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=m, **opts)
            t = pipesched.load_csv(s.to_csv())
            self.assertEqual(t.family, "custom")
            self.assertEqual(t.to_csv(), s.to_csv())
            self.assertEqual(t.placement, s.placement) if family != "dualpipe" else None
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
        try:
            t = pipesched.load_csv(f.name)
            self.assertEqual(t.simulate().makespan, 9.0)
        finally:
            os.unlink(f.name)

    def test_load_csv_errors_name_line_and_column(self):
        with self.assertRaises(pipesched.Error) as e:
            pipesched.load_csv("0F0,0F1x,0B0\n")
        self.assertEqual(e.exception.code, pipesched.EPARSE)
        self.assertIn("line 1, column 8", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.load_csv("0F0,1F0,0B0\n1F0,1B0\n")
        self.assertIn("line 2, column 1", str(e.exception))


class Actions(unittest.TestCase):
    def test_hand_worked_lists(self):
        """1F1B, p=2, m=2: rank 0 warms up with one forward; zb-h1, p=3, m=3: the last rank
        runs I right after each F and its W after the steady phase."""
        s = pipesched.generate("1f1b", pp=2, microbatches=2)
        self.assertEqual([[str(a) for a in r] for r in s.ranks],
                         [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]])
        z = pipesched.generate("zb-h1", pp=3, microbatches=3)
        self.assertEqual([str(a) for a in z.ranks[2]],
                         ["2F0", "2I0", "2F1", "2I1", "2F2", "2I2", "2W0", "2W1", "2W2"])
        a = z.ranks[2][1]
        self.assertEqual((a.kind, a.stage, a.mb, a.rank, a.chunk), ("I", 2, 0, 2, 0))
        self.assertEqual((a.stage_index, a.computation_type, a.microbatch_index),
                         (2, "I", 0))

    def test_fused_and_chunks(self):
        s = pipesched.generate("dualpipev", pp=2, microbatches=4)
        fused = [a for a in s.ranks[0] if a.is_fused]
        self.assertEqual(str(fused[0]), "(0F3;3B1)OVERLAP_F_B")
        f, b = fused[0].sub_actions
        self.assertEqual((f.kind, f.stage, f.mb, f.chunk), ("F", 0, 3, 0))
        self.assertEqual((b.kind, b.stage, b.mb, b.chunk), ("B", 3, 1, 1))
        self.assertEqual(fused[0].computation_type, "OVERLAP_F_B")
        # V placement: rank r holds stages r and 2p-1-r, chunks 0 and 1.
        self.assertEqual(s.placement, [0, 1, 1, 0])
        self.assertEqual(s.chunk_of, [0, 0, 1, 1])
        il = pipesched.generate("interleaved", pp=2, vpp=3, microbatches=4)
        self.assertEqual(il.chunk_of, [0, 0, 1, 1, 2, 2])

    def test_lowered_transfers(self):
        s = pipesched.generate("1f1b", pp=2, microbatches=2)
        low = s.lowered()
        self.assertEqual([str(a) for a in low[0]],
                         ["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0RECV_B1", "0B0",
                          "0B1"])
        send = low[0][1]
        self.assertEqual((send.kind, send.stage, send.peer_stage, send.is_compute),
                         ("SEND_F", 0, 1, False))
        self.assertEqual(s.ranks[0][0], "0F0")

    def test_parse(self):
        for family, pp, vpp, m, opts in CASES:
            s = pipesched.generate(family, pp=pp, vpp=vpp, microbatches=m, **opts)
            for lst in s.ranks + s.lowered():
                for a in lst:
                    b = pipesched.Action.parse(str(a))
                    self.assertEqual(b, a)
                    self.assertEqual(str(b), str(a))
        self.assertEqual(pipesched.Action.parse(" 3BW2 ").kind, "B")
        with self.assertRaises(pipesched.Error) as e:
            pipesched.Action.parse("0F1x")
        self.assertEqual((e.exception.code, e.exception.name), (-4, "EPARSE"))
        self.assertIn("column 4", str(e.exception))
        with self.assertRaises(pipesched.Error) as e:
            pipesched.Action.parse("")
        self.assertEqual(e.exception.code, pipesched.ENOTFOUND)


class Errors(unittest.TestCase):
    def assertFails(self, code, fn, *words):
        with self.assertRaises(pipesched.Error) as e:
            fn()
        self.assertEqual(e.exception.code, code, str(e.exception))
        for w in words:
            self.assertIn(w, str(e.exception))
        return e.exception

    def test_codes_are_the_headers(self):
        # pipesched.h, PS_ERRNO_MAP
        self.assertEqual((pipesched.EINVAL, pipesched.ENOMEM, pipesched.ERANGE,
                          pipesched.EPARSE, pipesched.ECONFIG, pipesched.EUNSUPPORTED,
                          pipesched.ENOTFOUND, pipesched.EINVALID, pipesched.EDEADLOCK,
                          pipesched.EHOST, pipesched.EINTERNAL),
                         (-1, -2, -3, -4, -5, -6, -7, -8, -9, -14, -16))

    def test_bad_input(self):
        g = pipesched.generate
        self.assertFails(pipesched.ENOTFOUND, lambda: g("zigzag", pp=4), "zigzag", "1f1b")
        self.assertFails(pipesched.EUNSUPPORTED,
                         lambda: g("interleaved", pp=4, vpp=2, microbatches=7),
                         "m mod group_size")
        self.assertFails(pipesched.EUNSUPPORTED, lambda: g("1f1b", pp=4, group_size=2),
                         "group_size")
        self.assertFails(pipesched.EUNSUPPORTED, lambda: g("zb-v", pp=4, vpp=3), "vpp = 2")
        self.assertFails(pipesched.ECONFIG, lambda: g("1f1b", pp=0), "pp")
        self.assertFails(pipesched.ECONFIG, lambda: g("1f1b", pp="four"), "pp")
        self.assertFails(pipesched.ERANGE, lambda: g("1f1b", pp=4096, microbatches=1 << 20))
        e = self.assertFails(pipesched.EINVAL, lambda: g("1f1b", grop_size=2), "group_size")
        self.assertEqual(e.name, "EINVAL")
        self.assertFails(pipesched.ECONFIG, lambda: g("1f1b", costs="f=1,q=2"), "q")
        self.assertFails(pipesched.ECONFIG, lambda: g("1f1b", costs={"f": -1}), "f")
        self.assertFails(pipesched.ECONFIG, lambda: g("1f1b", memory="f=1,b=1,w=1"))
        self.assertFails(pipesched.EINVAL, lambda: g("1f1b").export("svg"), "csv")

    def test_config_file_and_dict(self):
        s = pipesched.generate("interleaved", config=source("docs", "examples",
                                                            "interleaved.json"))
        with open(source("docs", "examples", "interleaved.json")) as f:
            cfg = json.load(f)
        t = pipesched.generate(None, config=cfg)
        self.assertEqual(s.to_csv(), t.to_csv())
        self.assertEqual(s.to_csv().encode(),
                         cli("generate", "--config", source("docs", "examples",
                                                            "interleaved.json"), "-f", "csv"))


if __name__ == "__main__":
    unittest.main()
