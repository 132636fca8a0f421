"""MPI support: rank fixtures, the ``mpi`` marker, rank-to-GPU binding, no hangs.

Two ways of running, one behaviour:

* **under a launcher** (``mpiexec -n 2 python -m pytest -m mpi``): every rank
  runs the session; marked tests get a collective outcome (a failure on one
  rank fails the test on every rank, labelled by rank), a watchdog stops a
  hung test at its timeout, and only rank 0 prints;
* **spawned** (plain ``pytest``): each marked test is run under the
  configured launcher in a child job and its per-rank outcome is replayed
  here.

Loading this package imports no framework and never imports ``mpi4py``
(importing it initialises MPI): that happens only under a launcher or inside a
spawned rank.
"""

from __future__ import annotations
