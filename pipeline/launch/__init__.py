"""The launching process only: Beam's flags, the output claim, the output directory, dry runs.

Nothing here runs on a worker: it checks flags (``beam_options``), claims ``--output`` for one
run (``claim``, bound to its job by ``jobs``), clears its leftovers (``output_dir``), estimates
a run (the ``dry_run`` sub-package) and finds the input of a run without ``--input``
(``builtin_sample``). May import every pipeline sub-package.
"""
