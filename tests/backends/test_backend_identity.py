"""A backend object is one device of one framework: hashable, equal only to itself.

``CudaPythonBackend`` was a ``@dataclass`` by accident (the decorator stayed behind when
``DeviceArray`` moved out of its module): a dataclass without fields compares every two
instances equal and sets ``__hash__`` to None, so ``hash()`` raised, the backends of two
devices compared equal (a dict or set keyed by backend merged devices 0 and 1), and the
repr was ``CudaPythonBackend()``, naming no device.  Every backend class is checked
here, without importing any framework (a backend's constructor imports nothing).
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_gpucheck.backends import BACKENDS, backend_class


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_is_one_device_of_one_framework(name: str) -> None:
    cls = backend_class(name)
    assert not dataclasses.is_dataclass(cls), f"{cls.__name__} is a dataclass"
    first, second = cls(0), cls(1)
    assert first == first
    assert first != second, "two devices' backends compare equal"
    assert len({first, second, cls(0)}) == 3, "hash() or equality merges backends"
    assert hash(first) == hash(first)
    assert repr(second) == f"<{cls.__name__} {name} device=1>"
