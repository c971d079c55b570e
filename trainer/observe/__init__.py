"""Where a training run's time goes: TensorBoard scalars, a system-metrics sampler, per-step
input-wait / compute timing and ``tf.profiler`` traces (written by ``telemetry``), and the rules
and charts of ``python -m trainer.profile_report`` (``diagnose``, ``charts``).

Only ``telemetry`` imports TensorFlow: the sampler, the rules and the charts run without it.
"""
