"""What the trainer's system sampler costs: its CPU time against the training steps' time.

    python -m bench.profile_bench [--steps=300] [--sample_system_every_ms=500] [--model_dir=DIR]

1. ``SystemSampler.sample()`` alone: CPU time per sample (median of ``--samples`` calls in one
   thread), and what that is at the sampling period.
2. A real run: ``trainer.loop.train`` (preset ``tiny``, synthetic data with vocabulary 8192 and
   seq_len 256, global batch 16, single backend, one evaluation and one checkpoint) with the
   sampler on; the sampler thread's CPU time (``sampler_cpu_s`` of its last row) over the sum
   of the steps' time (``profile/steps.jsonl``). With ``--model_dir`` the run is kept, for
   ``python -m trainer.profile_report --model_dir=DIR``.

Prints one JSON object.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import statistics
import sys
import tempfile
import time

import keras

from bench.input_bench import synthetic_dataset
from common.flags import ArgumentParser, add_flags, flag, from_args
from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute import make_backend
from trainer.model import GPTConfig
from trainer.observe import jsonl
from trainer.observe.sampler import SystemSampler


@dataclasses.dataclass(frozen=True)
class Options:
    steps: int = flag(300, help="training steps of the run")
    sample_system_every_ms: int = flag(500, help="the sampler's period")
    samples: int = flag(200, help="calls of sample() timed alone")
    model_dir: str = flag("", help="keep the run here (empty: a temporary directory)")


def sample_cost(*, samples: int, work_dir: str) -> float:
    """Median CPU seconds of one ``sample()`` call."""
    sampler = SystemSampler(path=os.path.join(work_dir, "alone.jsonl"))
    sampler.reset_counters()
    costs = []
    for _ in range(samples):
        started = time.thread_time()
        sampler.sample()
        costs.append(time.thread_time() - started)
        time.sleep(0.002)
    return statistics.median(costs)


def training_overhead(*, options: Options, model_dir: str, data_dir: str) -> dict:
    data = manifest.load(
        synthetic_dataset(data_dir, records=4000, seq_len=256, shards=2, vocab_size=8192)
    )
    keras.utils.set_random_seed(0)
    loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=8192, seq_len=256),
        train_config=TrainConfig(
            steps=options.steps,
            global_batch_size=16,
            warmup_steps=0,
            log_every=50,
            checkpoint_every=options.steps // 2,
            eval_every=options.steps // 2,
            eval_batches=20,
            sample_system_every_ms=options.sample_system_every_ms,
        ),
        backend=make_backend("single"),
        train_data=data,
        eval_data=data,
        model_dir=model_dir,
        export=False,
    )
    profile = os.path.join(model_dir, jsonl.PROFILE_DIR)
    steps = jsonl.read(os.path.join(profile, jsonl.STEPS_FILE))
    samples = jsonl.read(os.path.join(profile, jsonl.SYSTEM_FILE))
    step_s = sum(row["input_s"] + row["compute_s"] for row in steps)
    sampler_s = samples[-1]["sampler_cpu_s"]
    return {
        "steps": len(steps),
        "step_time_s": round(step_s, 2),
        "samples": len(samples),
        "sampler_cpu_s": round(sampler_s, 4),
        "sampler_share_of_step_time": round(sampler_s / step_s, 5),
    }


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.profile_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        cost = sample_cost(samples=options.samples, work_dir=tmp)
        run = training_overhead(
            options=options,
            model_dir=options.model_dir or os.path.join(tmp, "run"),
            data_dir=os.path.join(tmp, "data"),
        )
    period = options.sample_system_every_ms / 1000
    print(json.dumps({
        "cpus": os.cpu_count(),
        "sample_cpu_ms": round(1000 * cost, 3),
        "sampler_share_of_one_core": round(cost / period, 5),
        "training": run,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
