"""The ctypes declarations against the C compiler's layouts (tests/python/abi.c)."""

import ctypes
import os
import subprocess
import unittest

from pipesched import _lib
from pipesched import executor


class Abi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        exe = os.environ.get("PIPESCHED_ABI")
        if not exe:
            raise unittest.SkipTest("PIPESCHED_ABI is not set (run the suite with meson test)")
        out = subprocess.run([exe], check=True, stdout=subprocess.PIPE).stdout.decode()
        cls.c = dict(line.rsplit(" ", 1) for line in out.splitlines())

    def test_every_structure_and_field(self):
        """Same size and offsets, and no field that one side has and the other lacks."""
        checked = 0
        for cname, cls in _lib.STRUCTS.items():
            if cname not in self.c:
                self.assertIn(cname, ("ps_exec_config",), "%s missing from abi.c" % cname)
                continue
            self.assertEqual(ctypes.sizeof(cls), int(self.c[cname]), cname)
            c_fields = {k.split(".", 1)[1] for k in self.c if k.startswith(cname + ".")}
            py_fields = {name for name, _ in cls._fields_}
            self.assertEqual(py_fields, c_fields, cname)
            for name in py_fields:
                self.assertEqual(getattr(cls, name).offset, int(self.c[cname + "." + name]),
                                 "%s.%s" % (cname, name))
            checked += 1
        self.assertGreaterEqual(checked, 25)

    def test_constants(self):
        self.assertEqual(_lib.COMM_KINDS, int(self.c["PS_COMM_KINDS"]))
        self.assertEqual(_lib.KNOBS, int(self.c["PS_KNOBS"]))
        self.assertEqual(_lib.OP_LAYER_COUNT, int(self.c["PS_OP_LAYER_COUNT"]))
        self.assertEqual(_lib.PHASE_COUNT, int(self.c["PS_PHASE_COUNT"]))
        if "UV_TIMER" in self.c:
            self.assertEqual(executor._UV_TIMER, int(self.c["UV_TIMER"]))
            self.assertEqual(executor._UV_RUN_DEFAULT, int(self.c["UV_RUN_DEFAULT"]))
            self.assertEqual(executor._UV_RUN_ONCE, int(self.c["UV_RUN_ONCE"]))


if __name__ == "__main__":
    unittest.main()
