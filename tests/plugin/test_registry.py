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


def test_the_registration_contract_matches_the_suites() -> None:
    from pytest_gpucheck.conformance.specs import SPECS
    from pytest_gpucheck.registry import CONTRACTS, IN_PLACE

    for name, spec in SPECS.items():
        contract = CONTRACTS[name]
        assert contract.inputs == spec.arguments, name
        assert contract.sizes == spec.size_arguments, name
        assert contract.requires_out == spec.requires_out, name
        assert (name in IN_PLACE) == (spec.in_place is not None), name


def test_a_signature_off_the_contract_is_refused_with_the_expected_one() -> None:
    with pytest.raises(TypeError, match=r"expected saxpy\(alpha, x, y, out\[, launch\]\)"):
        implements("saxpy", backend="numpy", name="registry_no_alpha")(
            lambda x, y, out: None)
    # Extra parameters with defaults, *args and keyword-only launch all bind.
    implements("saxpy", backend="numpy", name="registry_defaults")(
        lambda alpha, x, y, out, scale=1.0: None)
    implements("vector_add", backend="numpy", name="registry_varargs")(lambda *args, **kw: None)
