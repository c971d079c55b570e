"""``--dry_run``: estimate a run's tokens, shards, data-quality drops and core-hours from a
sample of its input, without running it.

``estimate`` is the entry (``dry_run``): it samples each input (``sample``), applies the
data-quality options to the sample (``drops``, ``quality``), extrapolates (``figures``) at the
measured per-core rate (``rates``, kept in ``rates.json``) and prints the report (``report``).
"""
