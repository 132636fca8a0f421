"""Conformance of the elementwise kernels: ``vector_add``, ``saxpy``, ``sigmoid`` and
``add_one_2d``."""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_vector_add = kernel_test("vector_add", (
    "``out = a + b``: bit-exact (one correctly rounded add), any layout of ``a`` and ``b``."))

test_saxpy = kernel_test("saxpy", (
    "``out = alpha * x + y`` within ``gamma_3 * (|alpha x| + |y|)``, fused or not."))

test_sigmoid = kernel_test("sigmoid", (
    "``out = 1 / (1 + exp(-x))`` within 4 ULP of the float64 reference."))

test_add_one_2d = kernel_test("add_one_2d", (
    "``a += 1`` in place on the interior of a guard-banded 2-D buffer."))
