"""The plugin's hypothesis profiles carry its name (``gpucheck-dev``, ``gpucheck-ci``,
``gpucheck-thorough``) and never replace a profile a project or hypothesis registered;
the conformance suites choose theirs by their own rule (``conformance_settings``), for
their own tests only.  The foreign project's run with and without the plugin is
tests/plugin/test_foreign_project.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from pytest_gpucheck.checking import hypothesis_profiles
from pytest_gpucheck.conformance.harness import conformance_settings


@pytest.fixture(autouse=True)
def _profile_stays() -> Iterator[None]:
    """These tests load profiles in this very process: the session's is put back."""
    profile = settings.get_current_profile_name()
    yield
    settings.load_profile(profile)


def test_the_plugins_profiles_have_names_of_their_own() -> None:
    hypothesis_profiles.register_profiles()
    assert set(hypothesis_profiles.PROFILES) == {"gpucheck-dev", "gpucheck-ci",
                                                 "gpucheck-thorough"}
    ci = settings.get_profile("gpucheck-ci")
    assert (ci.max_examples, ci.derandomize, ci.database, ci.deadline) == (12, True, None, None)
    assert settings.get_profile("gpucheck-dev").max_examples == 10
    assert settings.get_profile("gpucheck-thorough").max_examples == 200


def test_registering_replaces_no_profile() -> None:
    """Hypothesis's own ``ci`` is the object it was, and a profile already registered under
    one of the plugin's names (a project's choice) is kept."""
    hypothesis_ci = settings.get_profile("ci")
    hypothesis_profiles.register_profiles()
    assert settings.get_profile("ci") is hypothesis_ci
    before = settings.get_profile("gpucheck-thorough")
    settings.register_profile("gpucheck-thorough", max_examples=3)
    try:
        hypothesis_profiles.register_profiles()
        assert settings.get_profile("gpucheck-thorough").max_examples == 3
    finally:
        settings.register_profile("gpucheck-thorough", before)


@pytest.mark.parametrize(("loaded", "ci_variable", "expected"), [
    ("default", None, "gpucheck-dev"),
    ("default", "true", "gpucheck-ci"),
    # Hypothesis loads its own ci on a CI machine (or the project registered one): the
    # suites stay derandomized at 12 examples.
    ("ci", "true", "gpucheck-ci"),
    ("gpucheck-thorough", None, "gpucheck-thorough"),
])
def test_the_suites_choose_their_profile(monkeypatch: pytest.MonkeyPatch, loaded: str,
                                         ci_variable: str | None, expected: str) -> None:
    if ci_variable is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci_variable)
    hypothesis_profiles.register_profiles()
    settings.load_profile(loaded)
    name, chosen = conformance_settings()
    assert name == expected
    assert chosen.max_examples == settings.get_profile(expected).max_examples
    assert chosen.derandomize == settings.get_profile(expected).derandomize


def test_a_profile_the_user_loaded_applies_to_the_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    settings.register_profile("huge-for-this-test", max_examples=321)
    settings.load_profile("huge-for-this-test")
    name, chosen = conformance_settings()
    assert (name, chosen.max_examples) == ("huge-for-this-test", 321)


@pytest.mark.parametrize("former", ["dev", "thorough"])
def test_a_former_name_nothing_registered_is_a_usage_error(pytester: pytest.Pytester,
                                                           former: str) -> None:
    """The names the plugin's profiles had before: one line naming the new one, exit 4."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest(f"--hypothesis-profile={former}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --hypothesis-profile={former}: no hypothesis profile '{former}' is "
        f"registered; pytest-gpucheck's is named gpucheck-{former} (so that a project's own "
        f"'{former}' keeps its settings): use --hypothesis-profile=gpucheck-{former}"])


def test_a_former_name_the_project_registered_is_the_projects(pytester: pytest.Pytester) -> None:
    """The twin: a project's own ``dev`` is loaded as it is, not refused or replaced."""
    pytester.makeconftest("from hypothesis import settings\n\n"
                          "settings.register_profile('dev', max_examples=4)\n")
    pytester.makepyfile(test_dev="""
        from hypothesis import given, settings, strategies as st

        seen = []

        @given(st.integers())
        def test_counts(n):
            seen.append(n)

        def test_four():
            assert settings.get_current_profile_name() == 'dev'
            assert settings.default.max_examples == 4
            assert len(seen) == 4
        """)
    result = pytester.runpytest("--hypothesis-profile=dev")
    result.assert_outcomes(passed=2)
