"""Can numba-cuda compile here?  Asked before a backend is reported available.

numba-cuda imports most of its typing and lowering modules lazily, at the first
compile (``numba_cuda/numba/cuda/target.py``, ``load_additional_registries``),
so ``cuda.is_available()`` and ``select_device`` succeed on an install whose
every kernel then fails.  The first H100 run met one: numba-cuda 0.30.4 with
NumPy 2.5.2, where every ``@cuda.jit`` launch raised ``AttributeError: module
'numpy' has no attribute 'row_stack'`` and 27 correct kernels read as red cells.

:func:`compile_problem` imports those modules (no device, no context: it runs
on a machine without a GPU and costs about 0.1 s once ``numba.cuda`` is
imported) and, on a device, :func:`one_element_kernel_problem` compiles and
runs a one-element kernel.  Either failure becomes one probe line naming the
versions, the cause and the fix; a failure that matches a known
incompatibility (:data:`KNOWN_INCOMPATIBILITIES`, each with its reason) gets
that entry's cause and fix, any other one a generic line.

The CUDA simulator does not import these modules (it runs kernels as Python),
so it is not affected: checked with ``np.row_stack`` deleted, where its
``@cuda.jit`` kernels still run.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any

#: The modules numba-cuda's CUDA target imports at the first compile
#: (``CUDATargetContext.load_additional_registries`` and the typing context's
#: ``refresh``, numba-cuda 0.30.4); a name an older release lacks is skipped.
FIRST_COMPILE_MODULES = (
    "numba.cuda.np.arrayobj",
    "numba.cuda.np.npdatetime",
    "numba.cuda.np.polynomial",
    "numba.cuda.np.arraymath",
    "numba.cuda.np.npyimpl",
)


@dataclass(frozen=True)
class Incompatibility:
    """A known pair of releases that does not fit together, recognised by its error.

    ``error`` is a regular expression searched in ``"ExceptionType: message"``;
    ``cause`` is what the probe line says in parentheses, ``fix`` the command
    after it, and ``reason`` why (the upstream source), kept for readers.
    """

    error: str
    cause: str
    fix: str
    reason: str


KNOWN_INCOMPATIBILITIES: tuple[Incompatibility, ...] = (
    Incompatibility(
        error=r"module 'numpy' has no attribute 'row_stack'",
        cause="np.row_stack removed",
        fix="pip install 'numpy<2.5'",
        reason=(
            "numba-cuda 0.30.x registers overload(np.row_stack) for every NumPy >= 2.0 "
            "(numba_cuda/numba/cuda/np/arrayobj.py), and NumPy 2.5 removed np.row_stack; "
            "numba 0.67 guards the same line, numba-cuda did not: NVIDIA/numba-cuda#907, "
            "its fix #916 closed unmerged (numba-cuda is in maintenance mode, #902)"
        ),
    ),
)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def describe(exc: BaseException, *, what: str = "run") -> str:
    """One line: the versions, the cause and the fix, for what the first compile raised."""
    first = (str(exc).strip().splitlines() or [""])[0]
    raised = f"{type(exc).__name__}: {first}"
    numba_cuda = f"numba-cuda {_version('numba-cuda')}"
    numpy = f"NumPy {_version('numpy')}"
    for known in KNOWN_INCOMPATIBILITIES:
        if re.search(known.error, raised):
            return f"{numba_cuda} cannot {what} with {numpy} ({known.cause}): {known.fix}"
    return (f"{numba_cuda} cannot {what} with {numpy} and numba {_version('numba')} "
            f"({raised}); install releases that fit together (numba-cuda's release notes "
            "name the NumPy and numba it supports)")


def compile_problem() -> str | None:
    """Why numba-cuda's first compile would fail here, found without a device; None if not.

    Imports the modules the first compile imports; a module an older release
    does not have is skipped, any other failure is the answer.
    """
    for module in FIRST_COMPILE_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                continue  # this release keeps the module elsewhere
            return describe(exc)
        except Exception as exc:  # what the first @cuda.jit launch would raise
            return describe(exc)
    return None


def one_element_kernel_problem(cuda: Any) -> str | None:
    """Compile and run a one-element ``@cuda.jit`` kernel on the current device.

    None when it wrote what it should; else one line (see :func:`describe`).
    """
    import numpy as np

    try:
        def add_one(a: Any) -> None:
            a[0] += 1.0

        kernel = cuda.jit(add_one)
        array = cuda.to_device(np.zeros(1, dtype=np.float64))
        kernel[1, 1](array)
        got = array.copy_to_host()
    except Exception as exc:
        return describe(exc, what="compile and run a one-element kernel")
    if got.shape != (1,) or float(got[0]) != 1.0:
        return (f"numba-cuda {_version('numba-cuda')}: a one-element kernel that adds 1 to "
                f"0.0 wrote {got!r}; the install is broken (reinstall numba-cuda)")
    return None


def numba_cuda_problem() -> str | None:
    """Why numba-cuda kernels cannot run here (not installed, or the first compile fails).

    For a backend that runs numba-cuda kernels without being numba-cuda (the
    cuda-python backend's MPI operations); None when they can.
    """
    import importlib.util

    if importlib.util.find_spec("numba") is None or importlib.util.find_spec("numba.cuda") is None:
        return ("numba-cuda is not installed; install it with: "
                "pip install 'pytest-gpucheck[cuda13]' (or [cuda12])")
    return compile_problem()
