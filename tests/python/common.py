"""What the python suite's test files share: the command-line program of the same build, and
the skip for a build without a part (viz, the executor)."""

import os
import subprocess
import unittest

import pipesched

CLI = os.environ.get("PIPESCHED_CLI", "")
SOURCE_ROOT = os.environ.get("PIPESCHED_SOURCE_ROOT",
                             os.path.join(os.path.dirname(__file__), "..", ".."))


def cli(*args, check=True):
    """Runs the pipesched program of this build; returns its standard output as bytes."""
    if not CLI:
        raise unittest.SkipTest("PIPESCHED_CLI is not set (run the suite with meson test)")
    r = subprocess.run([CLI] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise AssertionError("pipesched %s: exit %d: %s" % (" ".join(map(str, args)),
                                                            r.returncode, r.stderr.decode()))
    return r.stdout


def source(*parts):
    return os.path.join(SOURCE_ROOT, *parts)


needs_viz = unittest.skipUnless(pipesched.has_viz(), "this build has no libpipesched-viz")
needs_executor = unittest.skipUnless(pipesched.has_executor(), "this build has no executor")
