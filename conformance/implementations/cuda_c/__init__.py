"""Raw CUDA C kernels shared by the ``cupy`` (RawModule) and ``cuda-python`` (NVRTC) backends.

:mod:`.sources` holds the CUDA C text, :mod:`.drivers` the host side (grid
choice and argument lists) written once against a small :class:`~.drivers.Launcher`
that each framework implements.  Importing this package imports no framework.
"""

from __future__ import annotations
