"""scripts/gpu_tier_probe.py: the GPU tier's first step, its figures written as they come.

On a GPU it measures host dispatch and device time per call of each framework's copy and
kernel, the fixture's round timer against ``cupyx.profiler.benchmark``, and where ``xp``
creates arrays on cupy, torch-cuda and jax-gpu.  Here: the ``xp`` check on a torch-cuda
backend whose device is PyTorch's ``meta`` device (not torch's default, as ``cuda:0``
is not), with the broken twin that places arrays as the namespace's default does (the
old ``xp``), and the whole script on the CPU tier.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from user_runs import REPO, load_script, run_command

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_tier_probe.py"


def load() -> ModuleType:
    return load_script("gpu_tier_probe")


def meta_backends() -> tuple[Any, Any]:
    """(torch-cuda on the meta device, the same with the old xp: no device bound)."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from pytest_gpucheck.backends.torch.backend import TorchCudaBackend

    class OnMeta(TorchCudaBackend):
        @property
        def device_string(self) -> str:
            return "meta"

    class OldXp(OnMeta):
        def xp_device(self) -> Any:
            return None

    return OnMeta(), OldXp()


def test_the_xp_check_names_arrays_made_elsewhere(tmp_path: Path) -> None:
    probe_module = load()
    right, old = meta_backends()
    probe = probe_module.Probe(tmp_path)
    probe_module.check_xp(probe, right)
    assert not probe.failed
    line = (tmp_path / "probe.txt").read_text().splitlines()[-1]
    assert line == ("xp torch-cuda: ones(3) on meta, asarray([1.0]) on meta, fft.fftfreq(4) on "
                    "meta (the backend's arrays: meta): ok"), line
    probe_module.check_xp(probe, old)
    assert probe.failed
    line = (tmp_path / "probe.txt").read_text().splitlines()[-1]
    assert line.endswith("(the backend's arrays: meta): WRONG: ones(3), asarray([1.0]), "
                         "fft.fftfreq(4) elsewhere"), line
    # The JSON holds every figure so far (rewritten after each: a killed step keeps them).
    figures = json.loads((tmp_path / "probe.json").read_text())
    assert [(f["kind"], f["wrong"]) for f in figures] == [("xp", False), ("xp", True)]


@pytest.mark.slow
def test_the_probe_on_the_cpu_tier(tmp_path: Path) -> None:
    done = run_command([sys.executable, str(SCRIPT), "--backends=numpy,torch-cpu",
                        f"--out={tmp_path}", "--dry-run"], REPO, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    kinds = [line.split(" ")[0] + " " + line.split(" ")[1].rstrip(":")
             for line in (tmp_path / "probe.txt").read_text().splitlines()]
    assert kinds == ["backend numpy", "backend torch-cpu", "xp numpy", "xp torch-cpu",
                     "copy numpy", "copy torch-cpu", "copy numpy", "copy torch-cpu",
                     "kernel numpy", "kernel torch-cpu", "cupyx numpy", "done all"], kinds
    figures = json.loads((tmp_path / "probe.json").read_text())
    assert all(figure["median_s"] > 0 for figure in figures if figure["kind"] == "copy")
