"""What differs between the two sides of ``--gpu-bench-against`` by construction, and
what the gate does so that no such difference is a bias (issue 43: identical code read
-2.75% [-3.86%, -1.63%] on a NumPy user project).

Found by dumping both sides' processes in an A/A run of that project
(``scripts/measure_accuracy.py``'s ``write_project``): the same modules (569 each), each
side's own ``kernels.py``, ``conftest.py`` and test file; argv and the environment
differ in ``--rootdir`` (the checkouts' paths: 3 bytes there), the CPUs and placement
seed variables and the socket's descriptor number; and the baseline's process was always
started first.  No timing here: the environment, the start order and the files each
process imported.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bench_projects import SMALL_GATE_INI
from user_runs import run_pytest

from pytest_gpucheck.bench.interleave import (
    SIDES,
    pinned_environment,
    start_order,
)
from pytest_gpucheck.bench.placement import STACK_PAD_BYTES, STACK_PAD_VARIABLE


def test_each_process_gets_a_stack_pad_of_its_own_random_length() -> None:
    """argv and the environment sit at the top of a process's stack, so their size sets
    where its frames start within a page, and the sides' differ by a fixed amount (the
    checkouts' paths).  Each process's environment holds a pad of 0 to 4095 bytes drawn
    from its placement seed: two pairs' processes get different lengths, and over many
    seeds the length (so the stack's offset within a page, whatever the constant
    difference) is spread over the whole page, in every 16-byte alignment.  On the old
    code there was no pad."""
    lengths = [len(pinned_environment({}, None, None, seed)[STACK_PAD_VARIABLE])
               for seed in range(4096)]
    assert pinned_environment({}, None, None, 1) == pinned_environment({}, None, None, 1)
    assert lengths[0] != lengths[1]
    assert min(lengths) >= 0
    assert max(lengths) < STACK_PAD_BYTES
    # Every 16-byte step of the page (what the kernel's 16-byte stack alignment keeps)
    # about as often as the others: 4096 draws, 16 per step expected; the draws are
    # fixed by the seeds, so this never varies (a Poisson(16) bin holds 40 or more with
    # chance about 1e-7).
    steps = Counter(length // 16 for length in lengths)
    assert len(steps) == STACK_PAD_BYTES // 16, len(steps)
    assert max(steps.values()) < 40, steps.most_common(3)
    # No seed, no placement control: no pad either (the stored mode's processes).
    assert STACK_PAD_VARIABLE not in pinned_environment({}, None, None, None)


def test_the_side_that_starts_a_pair_has_its_process_started_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``BenchSession.peers`` starts each pair's processes in :func:`start_order`: the
    baseline's first in even pairs, the candidate's in odd ones (the baseline's was
    always first on the old code); each pair is still held as (baseline, candidate),
    each process in its own checkout with a placement seed of its own."""
    import pytest_gpucheck.bench.session as session_module
    from pytest_gpucheck.bench.fixture import MeasureDefaults
    from pytest_gpucheck.bench.peers import PeerBytecode, RetiredPeers
    from pytest_gpucheck.bench.session import BenchSession

    started: list[tuple[str, Any, dict[str, Any]]] = []

    class Peer:
        def __init__(self, config: object, checkout: Path, nodeids: list[str],
                     role: str = "baseline", **kwargs: Any) -> None:
            self.role, self.checkout = role, checkout
            self.collected: set[str] = set()
            started.append((role, checkout, kwargs))

        def wait_collected(self) -> None:
            pass

    monkeypatch.setattr(session_module, "BaselinePeer", Peer)

    class Session:
        items: tuple[object, ...] = ()
        config = type("C", (), {"rootpath": "/candidate"})()

    state: Any = BenchSession.__new__(BenchSession)
    state.pairs, state.pin, state.against = [], "off", Path("/base")
    state.retired = RetiredPeers()
    # Its processes write compiled modules as Python does (no folder to fill first).
    state.bytecode = PeerBytecode(asked=True)
    state.measure = MeasureDefaults(replicates=4, placement_seed=7)
    state.check_baseline_tests = lambda session, collected: None
    pairs = state.peers(Session())
    assert [role for role, _, _ in started] == [
        "baseline", "candidate", "candidate", "baseline",
        "baseline", "candidate", "candidate", "baseline"]
    assert [start_order(pair) for pair in range(2)] == [SIDES, SIDES[::-1]]
    assert [(base.role, cand.role) for base, cand in pairs] == [SIDES] * 4
    assert all(base.checkout == Path("/base") and cand.checkout == Path("/candidate")
               for base, cand in pairs)
    seeds = [kwargs["placement_seed"] for _, _, kwargs in started]
    assert len(set(seeds)) == len(seeds)


#: The user project's own code, imported by the test from a module and a conftest
#: fixture (as the A/A project whose -2.75% this searched); each process that runs the
#: test writes what it imported and what it was started with, without timing.
KERNELS = textwrap.dedent("""\
    import numpy as np


    def scale(x):
        return 2.5 * x + x
    """)
CONFTEST = textwrap.dedent("""\
    import json
    import os
    import sys

    import numpy as np
    import pytest


    @pytest.fixture
    def arrays():
        return np.ones(1 << 12)


    @pytest.fixture(autouse=True)
    def where(request):
        yield
        if not any(arg.startswith("--gpu-bench-peer") for arg in sys.argv):
            return  # the lead process
        import kernels

        facts = {"cwd": os.getcwd(), "kernels": kernels.__file__, "conftest": __file__,
                 "test": str(request.node.path), "modules": len(sys.modules),
                 "pad": len(os.environ.get("PYTEST_GPUCHECK_BENCH_STACK_PAD", "")),
                 "argv": sys.argv}
        out = os.path.join(os.environ["WHERE_OUT"], f"{os.getpid()}.json")
        with open(out, "w") as f:
            json.dump(facts, f)
    """)
TEST = textwrap.dedent("""\
    import kernels


    def test_scale(gpu_benchmark, arrays):
        gpu_benchmark(kernels.scale, arrays)
    """)


@pytest.mark.slow
def test_each_side_imports_its_own_files_and_gets_its_own_stack_pad(tmp_path: Path) -> None:
    """A/A as users run it (``python -m pytest --gpu-bench-against=../base`` in a
    subprocess, a real ``conftest.py`` and a ``kernels.py``): each baseline process
    imports the baseline checkout's kernels, conftest and test file, each candidate
    process its own checkout's; both import as many modules; the four processes' stack
    pads are not all of one length.  The import half held on the old code too (a guard
    for what the A/A bias search ruled out); the pad half failed there (no pad).
    Identical code at 2 pairs and family level 1e-5: only these facts are asserted, not
    the verdict."""
    folders = {}
    for name in ("project", "base"):
        folder = folders[name] = tmp_path / name
        folder.mkdir()
        # A fixed seed: the pads' lengths are then the same in every run of this test.
        (folder / "pytest.ini").write_text(SMALL_GATE_INI + "gpu_bench_placement_seed = 3\n")
        for file, text in (("kernels.py", KERNELS), ("conftest.py", CONFTEST),
                           ("test_kernels.py", TEST)):
            (folder / file).write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    run = run_pytest(folders["project"], "--gpu-bench-against=../base",
                     "--gpu-bench-family-level=1e-5", timeout=600,
                     extra_env={"WHERE_OUT": str(out)})
    assert run.returncode == 0, run.stdout + run.stderr
    facts = [json.loads(path.read_text()) for path in sorted(out.glob("*.json"))]
    sides = {name: [f for f in facts if Path(f["cwd"]).resolve() == folders[name].resolve()]
             for name in folders}
    assert len(sides["project"]) == len(sides["base"]) == 2, facts
    for name, processes in sides.items():
        for process in processes:
            for what, file in (("kernels", "kernels.py"), ("conftest", "conftest.py"),
                               ("test", "test_kernels.py")):
                assert Path(process[what]).resolve() == (folders[name] / file).resolve(), \
                    (name, process)
    assert len({process["modules"] for process in facts}) == 1, facts
    assert len({process["pad"] for process in facts}) > 1, facts
