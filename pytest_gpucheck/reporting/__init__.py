"""What a run prints and writes: the conformance matrix and its failure lines
(``report``), CI outputs (``ci``: JUnit properties, annotations, the job summary), the
terminal's width (``terminal_width``) and writes that leave no half-written file
(``atomic_files``)."""
