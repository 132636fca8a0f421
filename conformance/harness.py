"""Run one implementation of a kernel on hypothesis-drawn cases and apply every check.

For each drawn case the harness puts the inputs on the backend's device in
the drawn layouts, allocates ``out`` (or the in-place array) inside guard
bands, launches, and then checks, reporting every failed check at once:

1. the call returned normally (the simulator raises ``IndexError`` on an
   out-of-bounds access);
2. nothing was written outside the output (guard bands);
3. every input buffer is bit-for-bit unchanged;
4. the result's dtype and shape are the reference's;
5. its values match the reference under the spec's derived tolerance (or,
   for ``monte_carlo_pi``, pass the statistical tests).

Before the random search, the boundary sweep (:func:`sweep`) and the repeat
check (:func:`repeat_check`: the same large case run again, and on a thread
pool under two thread counts, must give the same bits where the contract is
exact) run fixed cases.

The hypothesis seed is chosen here and printed in the reproducer, so
``--hypothesis-seed=N`` reruns exactly the failing sequence of examples.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from pytest_gpucheck import environment
from pytest_gpucheck.checking import hypothesis_profiles
from pytest_gpucheck.checking import strategies as gst
from pytest_gpucheck.checking.assertions import (
    CheckContext,
    LazyText,
    dtype_problem,
    guard_problem,
    shape_problem,
    show_values,
    unchanged_problem,
    values_problem,
)
from pytest_gpucheck.checking.device_views import layout_of
from pytest_gpucheck.checking.guards import GuardedBuffer, GuardReadback, same_bits
from pytest_gpucheck.checking.kernel_launch import LaunchConfig
from pytest_gpucheck.checking.randomness import uniform_samples_problems
from pytest_gpucheck.conformance.known_defects import Tracker
from pytest_gpucheck.conformance.specs import Case, KernelSpec, derived, spec_for
from pytest_gpucheck.registry import Implementation
from pytest_gpucheck.reporting import ci

#: Recorded (``item.user_properties``) when guard bands cannot apply.
IMMUTABLE_NOTE = "not applicable: immutable arrays ({backend} returns new arrays)"


@dataclass(frozen=True)
class Cell:
    """One parameter of the ``impl`` fixture: an implementation on a backend."""

    backend: str
    implementation: Implementation

    @property
    def id(self) -> str:
        return self.implementation.id


def launch_strategy(spec: KernelSpec, sizing: gst.Sizing,
                    domain: tuple[int, ...]) -> st.SearchStrategy[LaunchConfig]:
    """The launch configurations drawn for ``spec`` over ``domain`` (C-order shape)."""
    if spec.launch == "grid-stride":
        return gst.launch_1d(sizing, domain[0], grid_stride=True)
    if len(domain) == 1:
        return gst.launch_1d(sizing, domain[0])
    return gst.launch_nd(sizing, domain, square=spec.square_blocks)


def conformance_settings() -> tuple[str, settings]:
    """The profile the suites run under, and its settings (for the suites' own tests only:
    nothing here loads a profile or changes one).

    ``--hypothesis-profile=gpucheck-NAME`` (or ``settings.load_profile``): that one.  A
    loaded ``ci``, whoever registered it (hypothesis loads its own on a CI machine, a
    project registers its own): ``gpucheck-ci``, so the suites' CI runs stay derandomized
    at 12 examples while the project's tests get its ``ci``.  Another profile the user
    loaded (``--hypothesis-profile=huge``): its settings.  Otherwise ``gpucheck-ci`` when
    the ``CI`` environment variable is set, else ``gpucheck-dev``.
    """
    hypothesis_profiles.register_profiles()
    # settings.get_current_profile_name() is newer than the hypothesis 6.100 we declare;
    # there, the loaded profile's name is the class attribute it sets.
    current = (settings.get_current_profile_name()
               if hasattr(settings, "get_current_profile_name")
               else str(getattr(settings, "_current_profile", "default")))
    if current in hypothesis_profiles.PROFILES:
        return current, settings.get_profile(current)
    if current == "ci":
        name = hypothesis_profiles.CI_PROFILE
        return name, settings.get_profile(name)
    if current != "default" and settings.default is not None:
        return current, settings.default
    name = (hypothesis_profiles.CI_PROFILE if os.environ.get("CI")
            else hypothesis_profiles.DEV_PROFILE)
    return name, settings.get_profile(name)


def choose_seed(nodeid: str) -> int:
    """The hypothesis seed of this run: ``--hypothesis-seed`` when given; a stable
    hash of the node id under a derandomized profile (``gpucheck-ci``); else random."""
    from hypothesis import core

    forced = getattr(core, "global_force_seed", None)
    if forced is not None:
        return int(forced) if str(forced).isdigit() else zlib.crc32(str(forced).encode())
    if conformance_settings()[1].derandomize:
        return zlib.crc32(nodeid.encode())
    return random.getrandbits(32)


def check_implementation(cell: Cell, request: pytest.FixtureRequest) -> None:
    """Run the conformance property of ``cell``'s kernel against it (the body of every
    suite test).  Examples per backend: the profile's ``max_examples`` divided by the
    backend's :attr:`~pytest_gpucheck.checking.strategies.Sizing.example_divisor`."""
    __tracebackhide__ = True
    from pytest_gpucheck.selection import get_selection

    impl = cell.implementation
    spec = spec_for(impl.kernel)
    backend = get_selection(request.config).backend(cell.backend)
    sizing = gst.sizing_for(backend.name)
    # The node id as the user's process names it, in every process (a child that selects
    # a bundled suite's file by its path names the item otherwise): the derandomized
    # seed and the example database key must not depend on where the item runs.
    nodeid = ci.stable_nodeid(request.node)
    run_seed = choose_seed(nodeid)
    profile, current = conformance_settings()
    _check_signature(spec, impl, backend)
    notes: dict[str, str] = {"gpucheck.seed": str(run_seed)}  # a JUnit property
    if not backend.mutable_arrays:
        notes["guard_bands"] = IMMUTABLE_NOTE.format(backend=backend.name)
    invocation = rerun_invocation(request.config)
    selector = rerun_selector(Path(request.node.path), request.node.name, invocation)
    compile_counter = _jax_compile_counter(backend)
    before = compile_counter()
    cases = spec.cases(sizing)
    # Framework defects recorded for this cell (known_defects.py): their cases are taken
    # as the defect, every other case is checked as usual.
    # And the clauses the implementation is expected to fail (implements(..., xfail=...)).
    defects = Tracker(spec.name, backend.name, impl.name, impl.xfail)

    def base_context(case: str, launch: LaunchConfig | None, seed_: int | None) -> CheckContext:
        return CheckContext(kernel=spec.name, backend=backend.name, implementation=impl.name,
                            case=case, launch=launch, seed=seed_,
                            profile=profile if seed_ is not None else None, nodeid=nodeid,
                            device=backend.describe_device(),
                            rerun_options=ci.options_for(selector, invocation["options"]),
                            rerun_selector=selector)

    @given(data=st.data())
    def example(data: st.DataObject) -> None:
        __tracebackhide__ = True
        case = data.draw(cases, label="case")
        layouts = {
            name: data.draw(gst.layouts(array.ndim), label=f"layout of {name}")
            if backend.mutable_arrays else gst.CONTIGUOUS  # JAX arrays have no strides
            for name, array in case.arrays.items() if name != spec.in_place
        }
        launches: list[LaunchConfig | None] = [None]
        if impl.takes_launch:
            # The launch differential: the same inputs under two drawn launches.
            launches = [data.draw(launch_strategy(spec, sizing, case.domain), label=label)
                        for label in ("launch", "second launch")]
        results: list[np.ndarray] = []
        for launch in launches:
            context = base_context(case.describe, launch, run_seed)
            # The second launch that explains a poisoned output is for the printed
            # (final) example only, so shrinking is not slowed down.
            problems = run_case(spec, impl, backend, case, layouts, launch, context,
                                diagnose=_final_example(), results=results)
            if defects and defects.explains(case, problems):
                return
            if problems:
                raise failure_of(problems, context.reproducer())
        context = base_context(case.describe, None, run_seed)
        problem = launch_differential_problem(spec, case, launches, results, context)
        if problem:
            raise AssertionError(problem + "\n" + context.reproducer())

    divisor = sizing.statistical_divisor if spec.statistical else sizing.example_divisor
    # A sanitized worker (--gpu-sanitize) runs a quarter of them (the header says so).
    examples = max(2, current.max_examples // divisor // hypothesis_profiles.examples_divisor())
    test = settings(
        parent=current,
        max_examples=examples,
        deadline=None,  # the first example of each shape includes JIT compilation
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
        # One minimal failure per test, without the explain phase's extra runs.
        report_multiple_bugs=False,
        phases=[phase for phase in current.phases if phase is not Phase.explain],
    )(example)
    test = seed(run_seed)(test)
    # One example database entry per parametrized item, as for ordinary @given tests.
    test.hypothesis.inner_test._hypothesis_internal_add_digest = nodeid.encode()  # type: ignore[attr-defined]
    # Watches what the implementation compiles (numba-cpu: its prange loops), to read the
    # loops for races once the calls are done (see static_race_problem).
    scan = backend.race_scan()
    try:
        try:
            with scan if scan is not None else contextlib.nullcontext():
                if defects:
                    def run_contiguous(case: Case) -> list[str]:
                        layouts = {name: gst.CONTIGUOUS for name in case.arrays
                                   if name != spec.in_place}
                        return run_case(spec, impl, backend, case, layouts, None,
                                        base_context(case.describe, None, None))

                    defects.run_minimal(run_contiguous)
                relevance_check(spec, impl, backend, sizing, base_context, defects)
                sweep(spec, impl, backend, sizing, base_context, defects)
                repeat_check(spec, impl, backend, sizing, base_context, notes, defects)
                test()
                defects.finish(f"{backend.distribution} {backend.version()}")
        except (AssertionError, pytest.fail.Exception) as failure:
            # A race read in the compiled loop comes first: the other checks saw it (or
            # not) by chance.
            race = static_race_problem(scan, notes, base_context)
            if race:
                raise AssertionError(f"{race}\nthe other checks also failed:\n{failure}") \
                    from failure.__cause__
            raise
        race = static_race_problem(scan, notes, base_context)
        if race:
            raise AssertionError(race)
    finally:
        compiles = compile_counter() - before
        if compiles >= 0 and backend.traces_under_jit:
            notes["jax_compilations"] = str(compiles)
        for key, value in notes.items():
            request.node.user_properties.append((key, value))


#: Set by the process the user started for every process under it: what a rerun command
#: needs from the command the user typed (the core's variable, named here as before).
RERUN_VARIABLE = environment.RERUN_VARIABLE


def kernel_test(kernel: str, contract: str) -> Callable[[Cell, pytest.FixtureRequest], None]:
    """The suite test of ``kernel``, to bind to a ``test_<kernel>`` name in a suite file:
    every registered implementation of the kernel (the ``impl`` fixture: ``backend:name``,
    parametrized from the ``gpu_kernel`` marker) is run through
    :func:`check_implementation` on hypothesis-drawn cases, with the checks every launch
    gets (this module's docstring).
    ``contract`` (what the kernel must do, within which tolerance) is the docstring.

    Pytest places the test in the suite file that binds it (``place_as``: its location in
    reports), not here; a failure's traceback shows the call below, as it showed the
    suite's own function before.
    """

    @pytest.mark.gpu_kernel(kernel)
    def test(impl: Cell, request: pytest.FixtureRequest) -> None:
        check_implementation(impl, request)

    suite = sys._getframe(1).f_globals["__name__"]  # the suite module binding the test
    test.__name__ = test.__qualname__ = f"test_{kernel}"
    test.__doc__ = contract
    test.__module__ = suite
    test.place_as = sys.modules[suite]  # type: ignore[attr-defined]
    return test


def rerun_invocation(config: pytest.Config) -> dict[str, Any]:
    """What the user's command contributes to a rerun (the folder it ran in, the paths it
    named, the options that decide which items exist and how they run): the core's
    :func:`pytest_gpucheck.reporting.ci.rerun_invocation`, the same in every process of
    the run (an isolation worker, the simulator child, an xdist worker, an MPI rank)."""
    return ci.rerun_invocation(config)


def rerun_selector(item_path: Path, name: str, invocation: dict[str, Any]) -> tuple[str, ...]:
    """The arguments that select exactly this item from the user's folder: the core's one
    rule (:func:`pytest_gpucheck.reporting.ci.rerun_selector`), applied to the user's command
    (:func:`rerun_invocation`), so this line, the report and the CI annotation agree."""
    return ci.rerun_selector(item_path, name, invocation_dir=invocation["dir"],
                             named=invocation["paths"],
                             added=tuple(Path(folder) for folder in invocation["added"]))


def sweep(spec: KernelSpec, impl: Implementation, backend: Any, sizing: gst.Sizing,
          make_context: Any, defects: Tracker | None = None) -> None:
    """The boundary sweep: run every edge case of the contract (:attr:`KernelSpec.edges`)
    before the random search, under each sweep launch when the implementation takes
    ``launch``; fail on the first case that breaks a check, listing every check it
    breaks.  Launches of one case must agree (:func:`launch_differential_problem`)."""
    __tracebackhide__ = True
    edges = derived.sweep_edges(spec, sizing)
    for index, edge in enumerate(edges, start=1):
        case = edge.case
        if edge.launches is not None and not impl.takes_launch:
            continue  # a launch edge: the implementation chooses its own launch
        chosen = dict(edge.layouts)
        layouts = {name: (chosen.get(name, edge.layout) if backend.mutable_arrays and
                          (chosen.get(name, edge.layout) != gst.TRANSPOSED or array.ndim == 2)
                          else gst.CONTIGUOUS)
                   for name, array in case.arrays.items() if name != spec.in_place}
        launches: list[LaunchConfig | None] = [None]
        if impl.takes_launch:
            launches = list(edge.launches) if edge.launches is not None else list(
                gst.sweep_launches(sizing, case.domain, grid_stride=spec.launch == "grid-stride",
                                   square=spec.square_blocks))
        label = f"{case.describe}; boundary sweep {index}/{len(edges)}: {edge.what}"
        results: list[np.ndarray] = []
        explained = False
        for launch in launches:
            context = make_context(label, launch, None)
            problems = run_case(spec, impl, backend, case, layouts, launch, context,
                                results=results)
            if defects and defects.explains(case, problems, clause=clause_of(edge.what)):
                explained = True  # the recorded defect; the next case is checked as usual
                break
            if problems:
                raise failure_of(problems, context.reproducer())
        if explained:
            continue
        problem = launch_differential_problem(spec, case, launches, results,
                                              make_context(label, None, None))
        if problem:
            raise AssertionError(problem + "\n" + make_context(label, None, None).reproducer())


def clause_of(what: str) -> str:
    """The contract clause a sweep case belongs to, as ``implements(..., xfail=...)`` names
    it: the kernel's own value class (``one NaN``), or a derived class without the argument
    it was written into (``x: NaN first`` -> ``NaN first``: a NaN-skipping implementation
    departs from the clause whichever argument holds the NaN)."""
    return what.split(": ", 1)[-1]


def relevance_check(spec: KernelSpec, impl: Implementation, backend: Any, sizing: gst.Sizing,
                    make_context: Any, defects: Tracker | None = None) -> None:
    """Every scalar parameter with a relevance check (contract coverage,
    :attr:`~pytest_gpucheck.reference_kernels.catalog.Entry.parameters`) is moved between the
    edges of its domain on one case: where the reference's result changes (for a statistical
    kernel: always, two seeds give different samples), the implementation's must change too.
    An implementation that ignores the parameter, or hard-codes it, fails with a message that
    names it, before the sweep's value checks (which would fail it without saying why).
    Runs before the sweep; the sweep runs the same cases again with every check."""
    __tracebackhide__ = True
    for parameter, cases in derived.plan_for(spec, sizing).relevance.items():
        results: list[np.ndarray] = []
        ran: list[Case] = []
        for case in cases:
            got: list[np.ndarray] = []
            problems = run_case(spec, impl, backend, case, {}, _first_launch(spec, impl, sizing,
                                                                              case),
                                make_context(case.describe, None, None), diagnose=False,
                                results=got)
            if defects and defects.explains(case, problems):
                return
            if got:
                results.append(got[0])
                ran.append(case)
        for i in range(len(ran)):
            for j in range(i + 1, len(ran)):
                if results[i].shape != results[j].shape or not bool(
                        same_bits(results[i], results[j]).all()):
                    continue
                if not spec.statistical and _same_reference(spec, ran[i], ran[j]):
                    continue
                a, b = ran[i].inputs[parameter], ran[j].inputs[parameter]
                what = "the samples" if spec.statistical else spec.in_place or "out"
                context = make_context(f"{ran[j].describe}; relevance of {parameter}", None,
                                       None)
                raise AssertionError(
                    f"{parameter} is ignored: {what} came out bit for bit the same for "
                    f"{parameter}={_shown(a)} and {parameter}={_shown(b)}, but "
                    + ("two seeds must give different samples" if spec.statistical else
                       "the reference's result differs") +
                    f"; the implementation ignores {parameter} or hard-codes it "
                    f"{context.tag}\n{context.reproducer()}")


def _shown(value: Any) -> str:
    return repr(value.item()) if isinstance(value, np.generic) else repr(value)


def _same_reference(spec: KernelSpec, first: Case, second: Case) -> bool:
    a, b = spec.expected(first), spec.expected(second)
    return a.shape == b.shape and bool(same_bits(a, b).all())


def _first_launch(spec: KernelSpec, impl: Implementation, sizing: gst.Sizing,
                  case: Case) -> LaunchConfig | None:
    if not impl.takes_launch:
        return None
    return gst.sweep_launches(sizing, case.domain, grid_stride=spec.launch == "grid-stride",
                              square=spec.square_blocks)[0]


def static_race_problem(scan: Any, notes: dict[str, str], make_context: Any) -> str | None:
    """The races the backend's scan (:meth:`~pytest_gpucheck.backends.base.Backend.race_scan`)
    read in the parallel loops compiled during the item, with the reproducer; None where it
    found none.  Its note (what it inspected, or why it could not) becomes the JUnit
    property ``gpucheck.race_scan``, and each "may race" (an index that follows the loop
    only through data, or a write on some iterations only) ``gpucheck.may_race``: those
    are not failures, the repeat check decides them."""
    if scan is None:
        return None
    findings, note = scan.findings()  # never raises: a note instead
    notes["gpucheck.race_scan"] = note
    maybe = [finding.message() for finding in findings if finding.kind != "race"]
    if maybe:
        notes["gpucheck.may_race"] = "; ".join(maybe)
    races = [finding.message() for finding in findings if finding.kind == "race"]
    if not races:
        return None
    context = make_context("its compiled loops", None, None)
    return "\n".join(f"{race} {context.tag}" for race in races) + "\n" + context.reproducer()


#: The repeat check's message when two runs of one case disagree where the contract is exact.
RACE = "two runs of the same inputs gave different results: a data race or an uninitialised read"
#: Calls in a row on the whole thread pool (:func:`run_back_to_back`).  A ``prange`` loop
#: that races into ``out[0]`` at 65537 elements shows the race only while the pool's second
#: thread is awake on a core when a call starts (OpenMP's workers spin a while after each
#: call): then nearly every call is wrong.  On 2 cores shared with other test runs (load
#: average 7 to 30) that state comes and goes over seconds; while it is away each call
#: waits tens of milliseconds for the second thread, which then runs after the first has
#: finished, and no call is wrong.  16 calls in a row missed the race in tries that 64
#: caught; with 64 the suite caught it in 13 of 20 derandomized runs at load average 7 to
#: 20 and in 5 of 20 at 22 to 58 (a correct prange reduction passed 40 of 40); in the
#: second 20, every run that passed it found the pool not overlapping (``threads_overlap``).
#: Such a race is now read in the compiled loop first (:func:`static_race_problem`, numba-cpu's
#: ``race_check``): rejected in 20 of 20 runs at load average 21 to 98, 15 of them with the
#: pool not overlapping (a correct reduction passed 20 of 20); this hunt stays for
#: what that reading cannot decide (indexes read from arrays, writes on some iterations, loops
#: loaded from Numba's cache) and for pools that are not Numba's.
POOL_RUNS = 64


def repeat_check(spec: KernelSpec, impl: Implementation, backend: Any, sizing: gst.Sizing,
                 make_context: Any, notes: dict[str, str],
                 defects: Tracker | None = None) -> None:
    """Determinism: each of the spec's repeat cases (:meth:`KernelSpec.repeat_cases`, large
    enough that threads overlap) runs twice under the sweep's first launch (and, where exact,
    once under its second), or, on a backend with a thread pool
    (:meth:`~pytest_gpucheck.backends.base.Backend.thread_counts`), :data:`POOL_RUNS` times
    in a row on the whole pool and once on one thread.  Every run
    gets every check; where the result is exact by contract (the case's rule is exact, or
    the kernel's bits may not follow the launch) the runs must agree bit for bit, else
    :data:`RACE`.  A float result whose order may follow the schedule (run once per thread
    count) only has to meet its tolerance; the largest difference between runs is recorded
    as the JUnit property ``gpucheck.repeat_spread``.  After the calls in a row on the pool,
    the backend's probe (:meth:`~pytest_gpucheck.backends.base.Backend.threads_overlap`) says
    whether its threads overlap at that time: the JUnit property
    ``gpucheck.threads_overlapped`` is ``no`` when a race could not have shown in the run."""
    __tracebackhide__ = True
    counts = backend.thread_counts()
    spreads = []
    for case in spec.repeat_cases(sizing):
        expected = spec.expected(case)
        exact = spec.launch_invariant or spec.rule(case, expected).kind == "exact"
        # Hunting a race takes many calls on the pool; a spread needs one per thread count.
        # An implementation that takes `launch` runs twice under the sweep's first launch and
        # once under its second: exact results may not follow the launch shape either.
        launches: list[LaunchConfig | None] = [None]
        if impl.takes_launch:
            launches = list(gst.sweep_launches(sizing, case.domain,
                                               grid_stride=spec.launch == "grid-stride",
                                               square=spec.square_blocks))
        groups: list[tuple[int | None, int, LaunchConfig | None]] = (
            [(counts[0], POOL_RUNS if exact else 1, launches[0])]
            + [(count, 1, launches[0]) for count in counts[1:]] if counts
            else [(None, 2, launches[0])])
        if exact and len(launches) > 1:
            groups.append((counts[0] if counts else None, 1, launches[1]))
        plan = [(count, launch) for count, runs, launch in groups for _ in range(runs)]
        layouts = {name: gst.CONTIGUOUS for name in case.arrays if name != spec.in_place}
        threads = " on " + ", ".join(f"{count} thread{'s' if count != 1 else ''} x {runs}"
                                     for count, runs, _ in groups) if counts else ""
        label = f"{case.describe}; repeat check: {len(plan)} runs{threads}"
        results: list[np.ndarray] = []
        problems: list[str] = []
        for count, runs, launch in groups:
            context = make_context(label, launch, None)
            with backend.using_threads(count) if count is not None else contextlib.nullcontext():
                found = run_back_to_back(spec, impl, backend, case, layouts, launch, context,
                                         runs, results)
            if defects and defects.explains(case, found):
                return
            problems += [p for p in found if p not in problems]
            if count is not None and runs > 1:
                # Right after the calls in a row: did the pool's threads overlap at all?  If
                # not, a race could not show in this run, whatever the verdict says.
                overlapped = backend.threads_overlap()
                notes["gpucheck.threads_overlapped"] = (
                    "yes" if overlapped or notes.get("gpucheck.threads_overlapped") == "yes"
                    else "no")
        context = make_context(label, None if len(launches) > 1 else launches[0], None)
        index, differ = _runs_differ(results, plan) if len(results) == len(plan) else (0, "")
        if exact and differ and plan[index][1] == plan[0][1]:
            problems.insert(0, f"{RACE}: {differ} {context.tag}")
        elif exact and differ:
            problems.insert(0, f"{differ}, but this result is exact and must not depend on the "
                               f"launch {context.tag}")
        if problems:
            raise failure_of(problems, context.reproducer())
        if not exact and len(results) > 1:
            spreads.append(max(float(np.max(np.abs(r.astype(np.float64) -
                                                   results[0].astype(np.float64)), initial=0.0))
                               for r in results[1:]))
    if spreads:
        notes["gpucheck.repeat_spread"] = f"{max(spreads):.3g}"


def _runs_differ(results: list[np.ndarray],
                 plan: list[tuple[int | None, LaunchConfig | None]]) -> tuple[int, str]:
    """The first later run whose result differs from the first run's (by bits), and where,
    in words; ``(0, '')`` if none."""
    def run(index: int) -> str:
        count, launch = plan[index]
        said = ([f"{count} thread{'s' if count != 1 else ''}"] if count else []) + \
            ([f"launch {launch}"] if launch is not None and plan[0][1] != plan[-1][1] else [])
        return f"run {index + 1}" + (f" ({', '.join(said)})" if said else "")

    first = results[0] if results else None
    for index, other in enumerate(results[1:], start=1):
        assert first is not None
        if other.shape != first.shape:
            return index, f"{run(0)} gave shape {first.shape}, {run(index)} {other.shape}"
        same = same_bits(first, other)
        if not bool(same.all()):
            where = tuple(int(i) for i in np.argwhere(~same)[0])
            at = ", ".join(map(str, where))
            return index, (f"out differs between {run(0)} and {run(index)} in "
                           f"{int(np.count_nonzero(~same))} element(s) (first at [{at}]: "
                           f"{first[where]!r} and {other[where]!r})")
    return 0, ""


def launch_differential_problem(spec: KernelSpec, _case: Case,
                                launches: list[LaunchConfig | None],
                                results: list[np.ndarray], context: CheckContext) -> str | None:
    """Kernels whose result cannot depend on the launch (:attr:`KernelSpec.launch_invariant`)
    must give the same bits under every launch of one case.

    Each result has already been compared with the reference; for exact rules the
    comparison says the rest.  Under a tolerance (saxpy, sigmoid, stencils, matmul),
    a kernel whose arithmetic per element changes with the launch (a summation order
    that follows ``blockDim``, a code path per block) can pass every comparison and
    still give different answers to the same question: this finds it.
    """
    if len(results) < 2 or not spec.launch_invariant:
        return None
    first = results[0]
    for launch, other in zip(launches[1:], results[1:], strict=True):
        if other.shape != first.shape or not bool(same_bits(first, other).all()):
            differ = int(np.count_nonzero(~same_bits(first, other))) \
                if other.shape == first.shape else other.size
            return (f"out differs between launch {launches[0]} and launch {launch} in {differ} "
                    f"element(s), but this kernel's result must not depend on the launch "
                    f"{context.tag}")
    return None


def _check_signature(spec: KernelSpec, impl: Implementation, backend: Any) -> None:
    __tracebackhide__ = True
    if impl.writes_out and not backend.mutable_arrays:
        pytest.fail(f"{impl.where} takes `out`, but {backend.name} arrays are immutable: "
                    "return the result instead (docs/kernels.md)", pytrace=False)
    if spec.requires_out and not impl.writes_out:
        pytest.fail(f"{impl.where} must take `out`: {spec.name} writes its output in place "
                    "(docs/kernels.md)", pytrace=False)


def _jax_compile_counter(backend: Any) -> Any:
    """A callable returning the number of XLA compilations so far (JAX backends only)."""
    if not backend.traces_under_jit:
        return lambda: 0
    return _JaxCompiles.counter()


class _JaxCompiles:
    """Counts ``backend_compile`` events reported through ``jax.monitoring``."""

    count = 0
    installed = False

    @classmethod
    def counter(cls) -> Any:
        if not cls.installed:
            import jax.monitoring

            def listener(event: str, duration_secs: float, **kwargs: str | int) -> None:
                if event.endswith("backend_compile_duration"):
                    cls.count += 1

            jax.monitoring.register_event_duration_secs_listener(listener)
            cls.installed = True
        return lambda: cls.count


#: The second initial value of a poisoned output (see :func:`run_case`): finite (NaN
#: plus anything is NaN, so only a number shows an accumulation), exact in every
#: dtype of the suites, and unlikely as a correct result.
SECOND_INITIAL = -1234


@dataclass
class _Call:
    """One launch of a case, prepared: device inputs (in their layouts), guarded outputs,
    and the call's arguments."""

    expected: np.ndarray
    args: list[Any]
    kwargs: dict[str, Any]
    inputs: dict[str, gst.DeviceInput]
    in_place: GuardedBuffer | None
    out: GuardedBuffer | None


#: The reference's result and rule of the boundary sweep's cases, by the case object: a
#: sweep case runs under two launches, and its object is shared by every backend a process
#: checks (the sweep's edges are built once per kernel and sizing), so its reference is
#: computed once, not once per backend and launch.  Drawn cases are not kept (each is new).
_REFERENCES: dict[int, tuple[Case, np.ndarray, list[Any]]] = {}


def _reference(spec: KernelSpec, case: Case) -> np.ndarray:
    """``spec.result_template(case)``, computed once per sweep case (see above)."""
    found = _REFERENCES.get(id(case))
    if found is not None and found[0] is case:
        return found[1]
    expected = spec.result_template(case)
    if derived.is_sweep_case(case):
        _REFERENCES[id(case)] = (case, expected, [])
    return expected


def _rule(spec: KernelSpec, case: Case, expected: np.ndarray) -> Any:
    """``spec.rule(case, expected)``, made once per case object with :func:`_reference`."""
    found = _REFERENCES.get(id(case))
    if found is None or found[0] is not case or found[1] is not expected:
        return spec.rule(case, expected)
    if not found[2]:
        found[2].append(spec.rule(case, expected))
    return found[2][0]


def _described(head: str, values: np.ndarray) -> LazyText:
    """``head`` and the values of an input (the case's own array, never written), formatted
    only if a reproducer shows them."""
    return LazyText(lambda: head + show_values(values))


def _prepare(spec: KernelSpec, impl: Implementation, backend: Any, case: Case,
             layouts: dict[str, str], launch: LaunchConfig | None, context: CheckContext,
             initial: Any) -> _Call:
    """Put ``case``'s inputs on the device and allocate ``out`` (or the in-place array) inside
    guard bands; the arrays are described in ``context`` for the reproducer."""
    expected = _reference(spec, case)
    args: list[Any] = []
    inputs: dict[str, gst.DeviceInput] = {}
    in_place: GuardedBuffer | None = None
    for name in spec.arguments:
        value = case.inputs[name]
        if not isinstance(value, np.ndarray):
            args.append(value)
        elif name == spec.in_place and backend.mutable_arrays:
            in_place = GuardedBuffer(backend, name, value.shape, value.dtype, value)
            context.arrays[name] = _described(
                f"{layout_of(in_place.view)} dtype={value.dtype} "
                f"(interior of a guard-banded buffer) values=", value)
            args.append(in_place.view)
        else:
            layout = layouts.get(name, gst.CONTIGUOUS)
            inputs[name] = gst.to_device_with_layout(backend, value, layout)
            context.arrays[name] = _described(
                f"{layout_of(inputs[name].view)} dtype={value.dtype} "
                f"({inputs[name].layout}) values=", value)
            args.append(inputs[name].view)
    kwargs: dict[str, Any] = {}
    out: GuardedBuffer | None = None
    if impl.writes_out:
        out = GuardedBuffer(backend, "out", expected.shape, expected.dtype,
                            spec.initial_output(expected.dtype) if initial is None else initial)
        context.arrays["out"] = f"{layout_of(out.view)} dtype={expected.dtype} " \
                                "(view inside guard bands)"
        kwargs["out"] = out.view
    else:
        kwargs.update({name: case.inputs[name] for name in spec.size_arguments})
    if launch is not None:
        kwargs["launch"] = launch
    return _Call(expected, args, kwargs, inputs, in_place, out)


def _invoke(impl: Implementation, backend: Any, call: _Call,
            context: CheckContext) -> tuple[Any, str | None]:
    """Launch a prepared call and wait for it: (what it returned, None), or (None, the
    problem when it raised)."""
    try:
        returned = impl.func(*call.args, **call.kwargs)
        backend.synchronize()
    except Exception as exc:
        return None, Raised(f"{impl.where} raised {type(exc).__name__}: {exc}, but should "
                            f"return normally {context.tag}", exc)
    return returned, None


class Raised(str):
    """The problem "the implementation raised", which carries what it raised (``cause``),
    so that the failure shows the user's traceback, not only its message."""

    cause: BaseException

    def __new__(cls, text: str, cause: BaseException) -> Raised:
        problem = super().__new__(cls, text)
        # The traceback from the frame that called the implementation (this module's
        # _invoke) down: from the user's own frame on, as pytest shows a test's.
        tb = cause.__traceback__
        problem.cause = cause.with_traceback(tb.tb_next if tb is not None else None)
        return problem


def failure_of(problems: list[str], reproducer: str) -> AssertionError:
    """The failure of a case: every problem and the reproducer.  When the implementation
    raised, that exception is its cause (``raise ... from``): pytest prints it first, the
    user's frames filtered as pytest filters a test's traceback (``--tb=long`` shows more
    of them, ``--tb=short`` and ``--tb=line`` less), then this message."""
    failure = AssertionError("\n".join(problems) + "\n" + reproducer)
    causes = [problem.cause for problem in problems if isinstance(problem, Raised)]
    if causes:
        failure.__cause__ = causes[0]
    return failure


def run_back_to_back(spec: KernelSpec, impl: Implementation, backend: Any, case: Case,
                     layouts: dict[str, str], launch: LaunchConfig | None,
                     context: CheckContext, count: int,
                     results: list[np.ndarray]) -> list[str]:
    """Launch ``impl`` on ``case`` ``count`` times in a row, nothing between the calls (every
    call's arrays prepared first), then check each call as :func:`run_case` does; the
    failed checks of all calls, each once.  A thread pool woken by one call is still awake
    for the next, so its threads start together and a race among them shows, where the
    work of preparing and checking a call between two calls lets them fall asleep and,
    woken one by one on a loaded machine, run one after the other."""
    calls = [_prepare(spec, impl, backend, case, layouts, launch, context, None)
             for _ in range(count)]
    launched = [_invoke(impl, backend, call, context) for call in calls]
    problems: list[str] = []
    for call, (returned, raised) in zip(calls, launched, strict=True):
        found = [raised] if raised else _check(spec, impl, backend, case, layouts, launch,
                                               context, call, returned, diagnose=False,
                                               results=results)
        problems += [p for p in found if p not in problems]
    return problems


def run_case(spec: KernelSpec, impl: Implementation, backend: Any, case: Case,
             layouts: dict[str, str], launch: LaunchConfig | None,
             context: CheckContext, *, diagnose: bool = True,
             initial: Any = None, results: list[np.ndarray] | None = None) -> list[str]:
    """Launch ``impl`` on one case; return the failed checks (empty when it conforms).

    When elements of a poisoned output are wrong and still hold the NaN poison,
    and ``diagnose`` is set, the case is launched once more with ``out``
    starting at :data:`SECOND_INITIAL`, so the message can tell "never written"
    from "accumulated into the uninitialised output".  ``initial`` overrides
    what ``out`` starts with; ``results`` receives the result read back.
    """
    # The cases hold NaN, infinities and the dtype's extremes on purpose (the derived value
    # classes): NumPy's floating-point warnings about them, from the reference, the rule or
    # the implementation, say nothing the checks do not (97 of them filled the main job's
    # warnings summary), so they are not raised; the checks give the verdict.
    with np.errstate(all="ignore"):
        call = _prepare(spec, impl, backend, case, layouts, launch, context, initial)
        returned, raised = _invoke(impl, backend, call, context)
        if raised:
            return [raised]
        return _check(spec, impl, backend, case, layouts, launch, context, call, returned,
                      diagnose=diagnose, results=results)


def _check(spec: KernelSpec, impl: Implementation, backend: Any, case: Case,
           layouts: dict[str, str], launch: LaunchConfig | None, context: CheckContext,
           call: _Call, returned: Any, *, diagnose: bool,
           results: list[np.ndarray] | None) -> list[str]:
    """Every check of one finished call (:func:`run_case`)."""
    expected, inputs, in_place, out = call.expected, call.inputs, call.in_place, call.out
    problems: list[str] = []
    readback: GuardReadback | None = None
    if out is not None:
        readback = out.read()
    elif in_place is not None:
        readback = in_place.read()
    if readback is not None:
        problems.append(guard_problem(readback, context) or "")
        result = readback.region
    elif returned is None:
        return [f"{impl.where} returned None, but should return the result (it takes no "
                f"`out`) {context.tag}"]
    else:
        result = np.asarray(backend.to_host(returned))
    if results is not None:
        results.append(result)
    for name, device_input in inputs.items():
        after = np.asarray(backend.to_host(device_input.parent))
        problems.append(unchanged_problem(device_input.parent_before, after, context,
                                          name=name) or "")
    name = spec.in_place or "out"
    problems.append(dtype_problem(result.dtype, expected.dtype, context, name=name) or "")
    problems.append(shape_problem(result.shape, expected.shape, context, name=name) or "")
    if result.dtype == expected.dtype and result.shape == expected.shape:
        if spec.statistical:
            problems.extend(f"{p} {context.tag}" for p in uniform_samples_problems(result))
        else:
            poison = spec.initial_output(expected.dtype) if (
                out is not None and spec.output_init == "poison") else None
            rule = _rule(spec, case, expected)
            problem = values_problem(result, expected, rule, context, name=name, poison=poison)
            if problem and poison is not None and diagnose:
                second = expected.dtype.type(SECOND_INITIAL)
                again: list[np.ndarray] = []
                run_case(spec, impl, backend, case, layouts, launch, context, diagnose=False,
                         initial=second, results=again)
                if again and again[0].shape == result.shape:
                    problem = values_problem(result, expected, rule, context, name=name,
                                             poison=poison, second=(second, again[0]))
            problems.append(problem or "")
    return [p for p in problems if p]


def _final_example() -> bool:
    from hypothesis.control import current_build_context

    try:
        return bool(current_build_context().is_final)
    except Exception:  # outside a hypothesis run (never in the suites): explain anyway
        return True


__all__ = ["IMMUTABLE_NOTE", "POOL_RUNS", "RACE", "Cell", "check_implementation", "choose_seed",
           "launch_differential_problem", "launch_strategy", "relevance_check", "repeat_check",
           "run_case",
           "static_race_problem", "sweep"]
