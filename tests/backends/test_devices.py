"""Device selection: explicit index, MPI local rank, xdist worker, round robin."""

from __future__ import annotations

import pytest

from pytest_gpucheck.backends.devices import (
    CudaDevice,
    CudaDriver,
    DeviceSpecError,
    cuda_driver,
    local_slot,
    select_device,
)

TWO_GPUS = CudaDriver(
    12080,
    (
        CudaDevice(0, "GPU A", (9, 0), 80 * 2**30),
        CudaDevice(1, "GPU B", (9, 0), 80 * 2**30),
    ),
)
NO_GPU = CudaDriver(reason="no NVIDIA driver found (libcuda could not be loaded)")


def test_explicit_index_must_be_visible() -> None:
    assert select_device("1", TWO_GPUS, {}).index == 1
    with pytest.raises(DeviceSpecError, match=r"only 2 CUDA device\(s\) visible; use auto"):
        select_device("2", TWO_GPUS, {})
    with pytest.raises(DeviceSpecError, match="no NVIDIA driver found"):
        select_device("0", NO_GPU, {})


@pytest.mark.parametrize(
    ("env", "index", "source"),
    [
        (
            {"PYTEST_GPUCHECK_LOCAL_RANK": "3", "SLURM_LOCALID": "0"},
            1,
            "PYTEST_GPUCHECK_LOCAL_RANK",
        ),
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "1"}, 1, "OMPI_COMM_WORLD_LOCAL_RANK"),
        ({"MPI_LOCALRANKID": "2"}, 0, "MPI_LOCALRANKID"),
        ({"SLURM_LOCALID": "1"}, 1, "SLURM_LOCALID"),
        ({"PYTEST_XDIST_WORKER": "gw3"}, 1, "pytest-xdist worker gw3"),
        ({}, 0, "default"),
    ],
)
def test_auto_takes_the_local_slot_round_robin(
    env: dict[str, str], index: int, source: str
) -> None:
    selection = select_device("auto", TWO_GPUS, env)
    assert selection.index == index
    assert source in selection.how


def test_oversubscription_is_reported() -> None:
    selection = select_device("auto", TWO_GPUS, {"OMPI_COMM_WORLD_LOCAL_RANK": "2"})
    assert selection.oversubscribed
    assert "round robin over 2 devices" in selection.how
    assert not select_device("auto", TWO_GPUS, {"OMPI_COMM_WORLD_LOCAL_RANK": "1"}).oversubscribed


def test_local_rank_wins_over_xdist_worker() -> None:
    assert local_slot({"PYTEST_XDIST_WORKER": "gw1", "SLURM_LOCALID": "0"}) == (
        0,
        "local rank 0 from SLURM_LOCALID",
    )


def test_auto_without_gpu_never_fails() -> None:
    selection = select_device("auto", NO_GPU, {"PYTEST_XDIST_WORKER": "gw5"})
    assert selection.index == 0
    assert "no CUDA device" in selection.how


def test_driver_query_never_raises_and_explains_itself() -> None:
    driver = cuda_driver()
    assert driver.available or driver.reason
