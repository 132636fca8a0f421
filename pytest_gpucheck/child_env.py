"""Environment variables the plugin sets for the child processes it starts.

Kept apart from :mod:`pytest_gpucheck.isolation` so that reading them costs
nothing when a run starts no child.
"""

from __future__ import annotations

#: Directory a child writes its serialized reports into (one file per rank).
REPORT_SINK_VARIABLE = "PYTEST_GPUCHECK_REPORT_SINK"
#: Set in the child that runs the simulator items.
SIMULATOR_CHILD_VARIABLE = "PYTEST_GPUCHECK_SIMULATOR_CHILD"
#: ``<pid>@<host>`` of the pytest that started the child: the child ends its
#: process tree when that process is gone.
PARENT_VARIABLE = "PYTEST_GPUCHECK_PARENT"
#: JSON list of the ``conftest.py`` paths the parent loaded; the child loads them too.
CONFTESTS_VARIABLE = "PYTEST_GPUCHECK_CONFTESTS"
