#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""torch's own distributed tests (torch/testing/_internal/distributed/
distributed_test.py, shipped by python3-torch) against a backend, through
the suite's plugin hook: fork mode, so torch is imported once.

    torch_dist_suite.py [--backend icfab|gloo] [--world N] [PATTERN ...]

PATTERNs are unittest -k substrings (default: the ops the icfab backend
offers, see OPS). Prints one TAP line per test (skips as "# SKIP") and
the counts; then runs the tests that torch's file skipped because they
name gloo again, decorated as for gloo, on the backend. For icfab it commits dgx-h100 first (icfabd --apply).
Importable: run() is what torch_test.py calls after its own tests.
"""
import importlib
import os
import re
import subprocess
import sys
import time
import unittest

OPS = ["test_all_reduce", "test_all_gather", "test_all_to_all", "test_reduce_scatter",
       "test_broadcast", "test_barrier", "test_send_recv", "test_isend", "test_irecv",
       "test_all_gather_into_tensor", "test_reduce_scatter_tensor"]


def _top():
    """The tree (this file runs from build/selftests/icfab/)."""
    return os.environ.get("ICFAB_TOP") or os.path.abspath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def load(backend, world, decorate_as=None):
    """The suite's test class for @backend (BACKEND is read at import):
    with @decorate_as, the tests are decorated (skipped or not) as for
    that backend, then run on @backend."""
    os.environ["BACKEND"] = decorate_as or backend
    os.environ["WORLD_SIZE"] = str(world)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch  # noqa: F401
    try:
        import expecttest  # noqa: F401
    except ImportError:
        # torch's test helpers base their TestCase on expecttest's, which
        # Debian does not package; the distributed tests use none of its
        # expect-inline helpers, so unittest's TestCase stands in.
        import types
        sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase,
                                                        ACCEPT=False)
    if backend == "icfab":
        sys.path.insert(0, os.path.join(_top(), "build", "python"))
        import fabricdev.torch  # noqa: F401
        from torch.testing._internal.common_distributed import DistTestCases
        DistTestCases.backend_feature["plugin"].add(backend)
    # a fresh copy when decorated otherwise (import_module, since "from
    # package import name" would hand back the package's old attribute)
    name = "torch.testing._internal.distributed.distributed_test"
    if sys.modules.pop(name, None):
        # set by the first copy's setUpClass; its absence at the first
        # import is what the gated tests were decorated against
        os.environ.pop("INIT_METHOD", None)
    dt = importlib.import_module(name)
    # the ranks read both when they run
    dt.BACKEND = os.environ["BACKEND"] = backend

    class TestBackendWithFork(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            # 1.13's harness only spawns, which imports torch again in
            # every rank (minutes each in the test VM): fork instead.
            self._start_processes(torch.multiprocessing.get_context("fork").Process)

    TestBackendWithFork.__name__ = "Test_%s" % backend
    return TestBackendWithFork


class _Tap(unittest.TextTestResult):
    """unittest's result, printed as TAP as it goes (or handed to
    report(ok, name, why) when one is set)."""
    n = 0
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    report = None
    gated = []          # tests skipped because torch's file names another backend
    suffix = ""

    def _line(self, test, status, extra="", why=""):
        _Tap.n += 1
        name = test.id().split(".")[-1] + _Tap.suffix
        _Tap.counts[status] += 1
        if _Tap.report:
            _Tap.report(status != "failed", name + extra, why)
            return
        print("%s %d %s%s" % ("not ok" if status == "failed" else "ok", _Tap.n, name, extra))
        if why:
            print("# " + why)
        sys.stdout.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, "passed")

    @staticmethod
    def _why(err):
        """The innermost "...Error: message" line of a rank's traceback
        (torch's C++ errors end in a stack of frames, not the message)."""
        lines = [l.strip() for l in str(err[1]).splitlines() if l.strip()] or [""]
        named = [l for l in lines if re.match(r"^[\w.]*(Error|Exception)\b.*:", l)]
        return "%s: %s" % (err[0].__name__, (named or lines)[-1][:300])

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(test, "failed", why=self._why(err))

    def addError(self, test, err):
        super().addError(test, err)
        self._line(test, "failed", why=self._why(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if "gloo" in reason and "Nccl" not in reason and "NCCL" not in reason:
            _Tap.gated.append(test.id().split(".")[-1])
        self._line(test, "skipped", " # SKIP %s" % reason.splitlines()[0][:120])


def run(patterns=None, backend="icfab", world=4, report=None, exact=False,
        decorate_as=None):
    """Run the suite's tests matching @patterns (named exactly by them
    with @exact); returns the counts."""
    _Tap.report = report
    _Tap.counts = {"passed": 0, "failed": 0, "skipped": 0}
    cls = load(backend, world, decorate_as)
    names = unittest.TestLoader().getTestCaseNames(cls)
    pats = OPS if not patterns else patterns
    names = [n for n in names if any(p == n or (p in n and not exact) for p in pats)]
    suite = unittest.TestSuite(cls(n) for n in names)
    with open(os.devnull, "w") as quiet:
        runner = unittest.TextTestRunner(stream=quiet, resultclass=_Tap, verbosity=0)
        t0 = time.time()
        runner.run(suite)
    c = dict(_Tap.counts)
    print("# torch distributed_test on %s%s, %d ranks: %d passed, %d failed, %d skipped "
          "(%.0f s)" % (backend, " decorated as for " + decorate_as if decorate_as else "",
                        world, c["passed"], c["failed"], c["skipped"], time.time() - t0))
    return c


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="icfab")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("patterns", nargs="*")
    a = ap.parse_args()
    if a.backend == "icfab":
        # run_tests.sh runs this alone in a fresh VM: commit a topology
        subprocess.run([os.path.join(_top(), "build", "bin", "icfabd"), "--apply", "--preset",
                        "dgx-h100"], check=True, stdout=subprocess.DEVNULL)
    print("TAP version 13")
    c = run(a.patterns, a.backend, a.world)
    failed = c["failed"]
    if a.backend != "gloo" and _Tap.gated:
        # torch's file runs some tests only when BACKEND is gloo (by name,
        # not by feature): those again, decorated as for gloo, on icfab
        print("# again, decorated as for gloo: %s" % " ".join(_Tap.gated))
        _Tap.suffix = " (decorated as for gloo)"
        c = run(list(_Tap.gated), a.backend, a.world, exact=True, decorate_as="gloo")
        failed += c["failed"]
    print("1..%d" % _Tap.n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
