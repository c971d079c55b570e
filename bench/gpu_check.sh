#!/usr/bin/env bash
# The GPU check: one machine with an NVIDIA GPU, under 8 minutes; not part of CI (no GPU there).
#
#   bash bench/gpu_check.sh [WORK_DIR]
#
# 1. builds the built-in sample with --seq_len=2048 (python -m pipeline.run, DirectRunner);
# 2. trains the 125m preset with --bf16 --xla on --backend=single and on --backend=multiworker
#    with one worker (TF_CONFIG on 127.0.0.1), and fails unless both trained on GPU devices
#    (the "devices=" start-up line of trainer.loop) and TensorFlow saw the GPU;
# 3. prints tokens/s and MFU of 125m and 350m (python -m bench.train_bench: float32, float32 +
#    XLA, bf16 + XLA);
# 4. reloads the multiworker run's export in a fresh process and generates from it
#    (python -m trainer.generate --export_dir=...).
#
# Environment: PYTHON (default python), STEPS (training steps per run, 20), BATCH (global batch
# of the 125m runs: 8 on a GPU of >= 100 GiB, else 4), BATCH_350M (4, else 2; bench.train_bench
# also runs float32, which needs twice bf16's activations: python -m trainer.memory),
# PEAK_TFLOPS (the GPU's dense bf16 peak, for MFU; default: looked up from the GPU's name
# below, else MFU is not printed).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
STEPS=${STEPS:-20}
WORK=${1:-$(mktemp -d -t pilepack-gpu-check-XXXXXX)}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-1}
START=$SECONDS

fail() { echo "gpu_check: FAILED: $*" >&2; exit 1; }
stage() { echo; echo "== [$((SECONDS - START)) s] $*"; }

stage "GPU and TensorFlow"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) || fail "nvidia-smi: no NVIDIA GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PYTHON" -c "
import sys, tensorflow as tf
gpus = tf.config.list_physical_devices('GPU')
print('TensorFlow', tf.__version__, 'CUDA build:', tf.test.is_built_with_cuda(), 'GPUs:', gpus)
sys.exit(0 if gpus else 1)" || fail "TensorFlow sees no GPU (a CPU-only TensorFlow?)"
case "$GPU_NAME" in  # dense bf16 tensor-core peak, TFLOP/s (NVIDIA's data sheets)
  *H100*PCIe*) PEAK=756 ;;
  *H100*|*H200*) PEAK=989 ;;
  *A100*) PEAK=312 ;;
  *L40S*) PEAK=362 ;;
  *L4*) PEAK=121 ;;
  *) PEAK=0 ;;
esac
PEAK=${PEAK_TFLOPS:-$PEAK}
echo "peak for MFU: $PEAK TFLOP/s ($GPU_NAME; set PEAK_TFLOPS to override)"
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
if (( ${GPU_MIB%%.*} >= 100 * 1024 )); then BATCH=${BATCH:-8} BATCH_350M=${BATCH_350M:-4}
else BATCH=${BATCH:-4} BATCH_350M=${BATCH_350M:-2}; fi

stage "dataset: the built-in sample, seq_len 2048"
"$PYTHON" -m pipeline.run --runner=DirectRunner --output="$WORK/data" --seq_len=2048 2>&1 \
  | grep -E "^\[(train|val)\]" || fail "pipeline.run"
DATA=$WORK/data/train

# The backend's start-up line, e.g. "backend=single rank=0/1 replicas=1 chief=True
# devices=/job:localhost/replica:0/task:0/device:GPU:0": every device must be a GPU.
assert_gpu() {  # LOG BACKEND
  local line
  line=$(grep -o "backend=$2 [^;]*devices=[^;]*" "$1" | head -n 1) || true
  [[ -n "$line" ]] || fail "$2: no start-up line in $1"
  local devices=${line##*devices=}
  [[ "$devices" == *GPU* && "$devices" != *CPU* ]] || fail "$2 trained on $devices ($1)"
  echo "ok: $line"
}

train() {  # BACKEND MODEL_DIR [trainer.train flags...]
  local backend=$1 model_dir=$2
  shift 2
  "$PYTHON" -m trainer.train --train_manifest="$DATA" --eval_manifest="$WORK/data/val" \
    --model_dir="$model_dir" --preset=125m --bf16 --xla --steps="$STEPS" \
    --global_batch_size="$BATCH" --log_every=5 --eval_batches=2 --backend="$backend" "$@" \
    > "$model_dir.log" 2>&1 || { tail -n 40 "$model_dir.log"; fail "trainer.train --backend=$backend"; }
  grep -E "step [0-9]+ (loss|eval_loss)" "$model_dir.log" | tail -n 3
  assert_gpu "$model_dir.log" "$backend"
}

stage "train 125m, bf16 + XLA, --backend=single"
train single "$WORK/single"

stage "train 125m, bf16 + XLA, --backend=multiworker (one worker, NCCL)"
PORT=$("$PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
TF_CONFIG="{\"cluster\": {\"worker\": [\"127.0.0.1:$PORT\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}" \
  train multiworker "$WORK/multiworker"

for preset in 125m 350m; do
  batch=$BATCH
  [[ $preset == 350m ]] && batch=$BATCH_350M
  stage "throughput: $preset, global batch $batch x 2048 tokens"
  "$PYTHON" -m bench.train_bench --manifest="$DATA" --preset="$preset" --global_batch_size="$batch" \
    --warmup=5 --steps=15 --bf16 --peak_tflops="$PEAK" 2> "$WORK/bench-$preset.log" \
    | tee "$WORK/bench-$preset.json" || { tail -n 40 "$WORK/bench-$preset.log"; fail "train_bench $preset"; }
done

stage "export -> reload in a fresh process -> generate"
# trainer.generate (section 3 of the serving work) loads the SavedModel the run exported.
"$PYTHON" -m trainer.generate --export_dir="$WORK/multiworker/export/saved_model" \
  --prompt="The river" --prompt="def main(" --max_new_tokens=32 > "$WORK/generate.jsonl" \
  || fail "trainer.generate"
cat "$WORK/generate.jsonl"
"$PYTHON" -c "
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 2 and all(isinstance(r['completion'], str) and r['tokens'] > 0 for r in rows), rows
" "$WORK/generate.jsonl" || fail "generate's output"

stage "passed in $((SECONDS - START)) s; work directory: $WORK"
