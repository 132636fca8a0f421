"""One module owns the launcher and rank environment variables; the parametrization path."""

from __future__ import annotations

import doctest

import pytest

from pytest_gpucheck import environment as launch_env
from pytest_gpucheck.backends import devices
from pytest_gpucheck.mpi import binding, gpu_aware, rank_session
from pytest_gpucheck.mpi import plugin as mpi_plugin


def test_the_examples_in_the_docstrings_hold() -> None:
    failed, tried = doctest.testmod(launch_env)
    assert tried >= 5
    assert failed == 0


def test_the_other_modules_read_the_same_variables() -> None:
    assert devices.local_slot is launch_env.local_slot
    assert launch_env.LOCAL_RANK_VARIABLES[0] == binding.LOCAL_RANK_VARIABLE
    assert mpi_plugin.launched_rank is launch_env.launched_rank
    assert rank_session.claim_rank_environment is launch_env.claim_rank_environment


def test_the_gpu_aware_probe_leaves_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"PMI_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "SLURM_PROCID": "0",
                        "HYDRA_CONTROL_FD": "5", "MPI_LOCALRANKID": "1",
                        launch_env.RANK_PID_VARIABLE: "123"}.items():
        monkeypatch.setenv(name, value)
    env = gpu_aware.probe_environment()
    assert not [k for k in env if k.startswith(launch_env.LAUNCHER_PREFIXES)]
    assert env[launch_env.RANK_PID_VARIABLE] == ""
    assert launch_env.launched_rank(env) is None


def test_the_child_option_is_the_selection_given(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("numba")
    from pytest_gpucheck.selection import get_selection

    config = pytester.parseconfigure("--gpu-backends=numpy,numba-cpu")
    assert get_selection(config).child_option == "--gpu-backends=numpy,numba-cpu"


def test_each_item_names_its_backend_in_its_parameters(pytester: pytest.Pytester) -> None:
    # It names these frameworks' backends: without them (the core alone) it skips.
    pytest.importorskip("numba")
    pytester.makeconftest("""
        from pytest_gpucheck.selection import item_backend

        def pytest_collection_modifyitems(items):
            for item in items:
                print("BACKEND", item.name, item_backend(item))
    """)
    pytester.makepyfile("""
        import pytest

        def test_a(gpu_backend):
            pass

        @pytest.mark.parametrize("x", ["numpy-like", "numba-cpu"])
        def test_b(x):
            pass

        @pytest.mark.gpu_backends("numba-cpu")
        def test_c(xp):
            pass
    """)
    result = pytester.runpytest("--gpu-backends=numpy,numba-cpu", "--co", "-s", "-q")
    result.stdout.fnmatch_lines([
        "BACKEND test_a[[]numpy[]] numpy",
        "BACKEND test_a[[]numba-cpu[]] numba-cpu",
        # A parameter that only looks like a backend name is not a backend.
        "BACKEND test_b[[]numpy-like[]] None",
        "BACKEND test_b[[]numba-cpu[]] None",
        "BACKEND test_c[[]numba-cpu[]] numba-cpu",
    ])
