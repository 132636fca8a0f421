"""The baseline checkout imports its own code, the project's own package included
(issue 43).

With ``pip install -e .`` of this project, setuptools' editable finder maps
``pytest_gpucheck.conformance`` to ``conformance/`` and
``pytest_gpucheck.reference_kernels`` to ``reference_kernels/`` of the candidate's
checkout.  The baseline process mapped top-level names only, and its foreign-module
check exempted every ``pytest_gpucheck.*``, so the baseline timed the candidate's
bundled kernels: a +29% slowdown planted in ``conformance/implementations/numpy_impls.py``
read -4.6%, green.  Checked without timing: the baseline process, started as the gate
starts it (``python -m pytest_gpucheck.bench.interleave LEAD -- ARGS`` in the baseline
checkout), reports the file each module came from.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from bench_projects import WITHOUT_HYPOTHESIS
from user_runs import run_command

import pytest_gpucheck
import pytest_gpucheck.conformance

#: The checkout the editable install points at (the lead, here this one).
LEAD = Path(pytest_gpucheck.conformance.__file__).resolve().parents[1]
EDITABLE = (LEAD / "pytest_gpucheck").resolve() == Path(pytest_gpucheck.__file__).resolve().parent \
    and (LEAD / "conformance").is_dir()

#: What the test plants in the baseline copy's bundled NumPy kernels: a marker the
#: baseline process reports (the file it came from is the evidence; no timing).
PLANT = '\n\nPLANTED = "baseline copy"\n'

WHERE = textwrap.dedent("""\
    import json
    import os
    from pathlib import Path


    def test_where():
        import pytest_gpucheck
        import pytest_gpucheck.conformance.implementations.numpy_impls as impls
        import pytest_gpucheck.reference_kernels as kernels
        from pytest_gpucheck.bench.interleave import PeerServer

        class Server:
            lead_root = Path(os.environ["LEAD_ROOT"])

        Path(os.environ["WHERE_OUT"]).write_text(json.dumps({
            "impls": impls.__file__, "planted": getattr(impls, "PLANTED", None),
            "kernels": kernels.__file__, "plugin": pytest_gpucheck.__file__,
            "foreign": PeerServer._foreign_modules(Server()),
        }))
    """)


@pytest.mark.skipif(not EDITABLE, reason="needs this project installed editable (pip "
                    "install -e .): the case the gate got wrong")
def test_the_baseline_process_imports_the_bundled_kernels_of_its_own_checkout(
        tmp_path: Path) -> None:
    base = tmp_path / "base"
    for folder in ("conformance", "reference_kernels", "pytest_gpucheck"):
        shutil.copytree(LEAD / folder, base / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    impls = base / "conformance" / "implementations" / "numpy_impls.py"
    impls.write_text(impls.read_text() + PLANT)
    (base / "pytest.ini").write_text("[pytest]\n" + WITHOUT_HYPOTHESIS)
    (base / "test_where.py").write_text(WHERE)
    out = tmp_path / "where.json"
    run = run_command([sys.executable, "-m", "pytest_gpucheck.bench.interleave", str(LEAD),
                       "--", "-p", "no:cacheprovider", "-q", "test_where.py"], base,
                      timeout=600, extra_env={"WHERE_OUT": str(out), "LEAD_ROOT": str(LEAD)})
    assert run.returncode == 0, run.stdout + run.stderr
    where = json.loads(out.read_text())
    # The bundled kernels: the baseline's own files, with the planted change.
    assert Path(where["impls"]).resolve() == impls.resolve()
    assert where["planted"] == "baseline copy"
    assert Path(where["kernels"]).resolve().is_relative_to(base.resolve())
    # The plugin's own package: ``python -m`` puts the baseline checkout first on the
    # path, so a checkout of this project runs its own copy of the harness too.
    assert Path(where["plugin"]).resolve().is_relative_to(base.resolve())
    # And nothing of the lead's code under test is left in the baseline process.
    assert where["foreign"] == [], where["foreign"]


def test_the_foreign_module_check_does_not_exempt_the_bundled_kernels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process imported ``pytest_gpucheck.conformance`` from the lead's checkout;
    seen from another checkout it is foreign (the old check exempted every
    ``pytest_gpucheck.*``), while the plugin's own modules, the harness, are not."""
    from pytest_gpucheck.bench.interleave import PeerServer

    class Server:
        lead_root = LEAD

    monkeypatch.chdir(tmp_path)
    found = PeerServer._foreign_modules(Server())  # type: ignore[arg-type]
    if EDITABLE:
        assert "pytest_gpucheck.conformance" in found, found
    assert not any(name == "pytest_gpucheck" or name.startswith("pytest_gpucheck.bench")
                   for name in found), found
