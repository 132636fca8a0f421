"""The grid-sync suite on the CUDA simulator gives a verdict, not a coin toss.

Numba's simulator runs a kernel one block at a time and its ``this_grid().sync()``
synchronises only the running block.  These tests pin the simulator internals the
guard (:mod:`pytest_gpucheck.backends.numba.simulator_guard`) relies on, prove the guard turns a
multi-block grid sync into a failure with its one line, and run the bundled cooperative
kernel on fields many blocks wide after poisoning the memory its scratch is recycled
from.  Their code runs in child processes with ``NUMBA_ENABLE_CUDASIM=1``
(``numba.cuda`` binds to the simulator when first imported), each test's in its own
section, two processes for the four tests (:data:`PROCESSES` says why two).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from user_runs import run_command

ROOT = Path(__file__).resolve().parents[2]

# The tests read one simulator subprocess (numba fixes the target at import).
pytestmark = pytest.mark.slow


#: Runs each section of code (name -> source, from JSON on stdin) in order in one
#: simulator process, each with its own globals, and prints name -> [its stdout, the
#: traceback that ended it or ""] as JSON: one Numba import for several tests.
RUN_SECTIONS = """
import contextlib, io, json, sys, traceback
sections = json.load(sys.stdin)
results = {}
for name, code in sections.items():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, name, "exec"), {"__name__": name})
            error = ""
        except BaseException:
            error = traceback.format_exc()
    results[name] = [out.getvalue(), error]
print(json.dumps(results))
"""

#: Each test's code, by name.
SECTIONS: dict[str, str] = {}

#: The processes, each running its sections in this order.  The backend probe's section
#: reads that a fresh process has no guard yet, and the internals' section reads the
#: simulator's own ``GridGroup.sync``, which the guard replaces: each goes first in its
#: process; the others run after the probe installed the guard, as in a user's run.
PROCESSES = (("probe", "grid_sync", "bundled"), ("internals",))


def _section(name: str, code: str) -> None:
    SECTIONS[name] = textwrap.dedent(code)


@pytest.fixture(scope="module")
def simulated() -> dict[str, tuple[str, str]]:
    """Every section's (stdout, traceback), from :data:`PROCESSES`'s
    ``NUMBA_ENABLE_CUDASIM=1`` processes."""
    pytest.importorskip("numba")
    found: dict[str, tuple[str, str]] = {}
    for names in PROCESSES:
        result = run_command([sys.executable, "-c", RUN_SECTIONS], ROOT, timeout=900,
                             extra_env={"NUMBA_ENABLE_CUDASIM": "1"},
                             input=json.dumps({name: SECTIONS[name] for name in names}))
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        found.update((name, (out, error)) for name, (out, error) in
                     json.loads(result.stdout.splitlines()[-1]).items())
    return found


def _simulate(simulated: dict[str, tuple[str, str]], name: str) -> str:
    """The stdout of section ``name``; fails with its traceback if it raised."""
    out, error = simulated[name]
    assert not error, out[-3000:] + error[-3000:]
    return out


_section("internals", """
        import inspect
        from numba.cuda.simulator import kernel, kernelapi
        from pytest_gpucheck.backends.numba import simulator_guard
        # One block at a time, each by a BlockManager that knows the grid.
        source = inspect.getsource(kernel.FakeCUDAKernel.__call__)
        assert "for grid_point in np.ndindex(*grid_dim)" in source, source
        assert "BlockManager(" in source, source
        assert "self._grid_dim = grid_dim" in inspect.getsource(kernel.BlockManager.__init__)
        assert "self._manager = manager" in inspect.getsource(kernel.BlockThread.__init__)
        # A grid sync is the block's barrier, and one block is all a cooperative grid gets.
        assert "syncthreads()" in inspect.getsource(kernelapi.GridGroup.sync)
        assert kernel.FakeCUDAKernel.overloads.fget(None)[()].max_cooperative_grid_blocks(
            (8, 1, 1)) == 1
        print(simulator_guard.install(), simulator_guard.installed())
        print(simulator_guard.install(), simulator_guard.installed())
""")


def test_simulator_internals_the_guard_relies_on(simulated: dict[str, tuple[str, str]]) -> None:
    """Fails loudly when upstream changes what the guard reads: if the simulator starts
    running cooperative grids of several blocks, ``install`` steps aside and says so."""
    out = _simulate(simulated, "internals")
    assert out.split() == ["None", "True", "None", "True"], out


_section("probe", """
        from pytest_gpucheck.backends.numba import simulator_guard
        from pytest_gpucheck.backends import get_backend
        print(simulator_guard.installed())
        print(get_backend("numba-cudasim").probe().available, simulator_guard.installed())
""")


def test_the_backend_probe_installs_the_guard(simulated: dict[str, tuple[str, str]]) -> None:
    out = _simulate(simulated, "probe")
    assert out.split() == ["False", "True", "True"], out


_section("grid_sync", """
        import numpy as np
        from numba import cuda
        from pytest_gpucheck.backends.numba import simulator_guard

        assert simulator_guard.install() is None
        import sys
        sys.path.insert(0, "tests")
        import grid_sync_user_kernels as k

        u = np.arange(40, dtype=np.float64)
        def launch(kernel, blocks):
            a = cuda.device_array(40)
            b = cuda.device_array(40)
            out = np.zeros(40)
            kernel[blocks, 8](u, a, b, out, 0.1, 3)
            return out
        try:
            launch(k.GRID, 2)
        except simulator_guard.CooperativeGridTooLarge as exc:
            print("refused:", exc)
        else:
            print("not refused")
        # One block: the grid sync is a real barrier there, and the result is right.
        one = launch(k.GRID, 1)
        # No grid sync at all: the guard does not touch plain multi-block kernels.
        launch(k.BLOCK, 5)
        ref = u.copy()
        for _ in range(3):
            nxt = np.zeros_like(ref)
            nxt[1:-1] = ref[1:-1] + 0.1 * (ref[:-2] - 2 * ref[1:-1] + ref[2:])
            ref = nxt
        np.testing.assert_allclose(one, ref, rtol=1e-12, atol=1e-12)
        print("one block ok")
""")


def test_a_grid_sync_over_several_blocks_fails_with_one_line(
        simulated: dict[str, tuple[str, str]]) -> None:
    out = _simulate(simulated, "grid_sync")
    lines = out.splitlines()
    # Whichever thread of block 0 reaches the sync first; block 0 is the one running.
    assert re.match(r"refused: tid=\[\d, 0, 0\] ctaid=\[0, 0, 0\]: this_grid", lines[0]), out
    assert "cooperative grid of 2 blocks" in lines[0]
    assert "the CUDA simulator runs one block at a time and cannot synchronise blocks" in out
    assert "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" in lines[0]
    assert "launch at most kernel.max_cooperative_grid_blocks(block) blocks" in lines[0]
    assert lines[1] == "one block ok", out


_section("bundled", """
        import numpy as np
        from numba import cuda
        from pytest_gpucheck.conformance.implementations.grid_sync_impls import (
            cooperative_grid, heat_steps_grid_sync, kernels)
        from pytest_gpucheck.reference_kernels.cooperative import heat_steps_grid_sync as reference

        assert cooperative_grid(kernels(), (), 1000, 8) == 1
        rng = np.random.default_rng(7)
        runs = 0
        for repeat in range(2):
            for n in (9, 17, 40, 97):
                for steps in (1, 2, 5):
                    for dtype in (np.float32, np.float64):
                        poison = [np.full(n, np.nan, dtype=dtype) for _ in range(4)]
                        del poison
                        u = rng.uniform(-1, 1, n).astype(dtype)
                        out = np.full(n, np.nan, dtype=dtype)
                        heat_steps_grid_sync(u, dtype(0.25), steps, out)
                        expected = reference(u, 0.25, steps)
                        tol = 1e-5 if dtype == np.float32 else 1e-12
                        np.testing.assert_allclose(out, expected, rtol=tol, atol=tol,
                                                   err_msg=f"n={n} steps={steps}")
                        runs += 1
        print(runs)
""")


def test_bundled_kernel_is_right_on_many_blocks_of_cells_over_poisoned_memory(
        simulated: dict[str, tuple[str, str]]) -> None:
    """Sizes many 8-thread blocks wide, each run after NaN-filled arrays of its size were
    freed (the simulator's scratch is ``np.empty``, which recycles them): a read of a cell
    nobody wrote this launch would come back NaN."""
    out = _simulate(simulated, "bundled")
    assert out.split() == ["48"], out
