"""Registering implementations: names are validated, clashes refused, re-imports harmless."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_gpucheck import implementations, implements, not_applicable


def test_unknown_kernel_or_backend_names_the_valid_ones() -> None:
    with pytest.raises(
        ValueError, match=r"unknown kernel 'vector_sum'; valid kernels: .*vector_add"
    ):
        implements("vector_sum", backend="numpy")(lambda a, b, out: None)
    with pytest.raises(ValueError, match=r"unknown backend 'cuda'; valid backends: numpy, "):
        not_applicable("vector_add", "cuda", "why")


def test_a_second_function_under_the_same_name_is_refused() -> None:
    def first(a: Any, b: Any, out: Any) -> None:
        out[...] = a + b

    def second(a: Any, b: Any, out: Any) -> None:
        out[...] = b + a

    implements("vector_add", backend="numpy", name="registry_clash")(first)
    # Registering the same function again (a conftest imported twice) is harmless.
    implements("vector_add", backend="numpy", name="registry_clash")(first)
    with pytest.raises(ValueError, match="already has an implementation named 'registry_clash'"):
        implements("vector_add", backend="numpy", name="registry_clash")(second)
    (impl,) = [
        i for i in implementations("vector_add", backend="numpy") if i.name == "registry_clash"
    ]
    assert impl.func is first
