"""Conformance of the reductions: ``sum``, ``dot``, ``max``, ``weighted_sum``, ``sum_of_squares``,
``histogram`` and the statistical ``monte_carlo_pi``.
"""

from __future__ import annotations

from pytest_gpucheck.conformance.harness import kernel_test

test_sum = kernel_test("sum", (
    "``out[0] = sum(x)``: exact on integer-valued inputs: a dropped or doubled element "
    "fails."))

test_dot = kernel_test("dot", (
    "``out[0] = sum(x * y)``: exact on small integer-valued inputs, else Higham's bound."))

test_max = kernel_test("max", (
    "``out[0] = max(x)``, exact, ``out`` preset to the identity (-inf / the minimum)."))

test_weighted_sum = kernel_test("weighted_sum", "``out[0] = sum(w * x)``.")

test_sum_of_squares = kernel_test("sum_of_squares", "``out[0] = sum(x * x)``.")

test_histogram = kernel_test("histogram", (
    "``out[v]`` counts the elements equal to ``v`` (atomics), exactly."))

test_monte_carlo_pi = kernel_test("monte_carlo_pi", (
    "Samples uniform in [0, 1)^2: pi within a z-bound (false alarm 1e-6), "
    "uniform bins, and no repeated points (threads must not share a random stream)."))
