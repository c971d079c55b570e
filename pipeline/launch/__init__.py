"""The launching process only: Beam's flags, the output claim, the output directory, dry runs.

Nothing here runs on a worker: it checks flags before a job starts (``beam_options``), claims
``--output`` for one run (``claim``) and clears its leftovers (``output_dir``), and estimates a run
before it starts (``dry_run``, ``dry_run_sample``). May import every pipeline sub-package.
"""
