"""Conformance of ufunc kernels: ``@vectorize`` (targets cpu, parallel, cuda) and
``@guvectorize`` (layouts ``(n),(n)->()`` and ``(m,n)->(m,n)``), and their kin in NumPy,
JAX, CuPy and torch.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_ufunc_saxpy = kernel_test("ufunc_saxpy", (
    "``alpha * x + y`` broadcast (``y`` of shape ``(m, n)``, ``(n,)`` or ``(m, 1)``), "
    "the inputs' float dtype kept, within ``gamma_3 * (|alpha x| + |y|)``."))

test_gufunc_dot = kernel_test("gufunc_dot", (
    "Layout ``(n),(n)->()`` over a stack of rows: exact on small integer-valued data, "
    "else Higham's bound per row."))

test_gufunc_laplacian_2d = kernel_test("gufunc_laplacian_2d", (
    "Layout ``(m,n)->(m,n)``: the five-point Laplacian of every 2-D slice of a stack."))
