#!/usr/bin/env bash
# Probe + validate + calibrate on one CUDA GPU; about 3-5 minutes on an H200 (must stay under ten).
# Writes under evidence/gpu/ (or $1): probe.toml, validate.csv, validate.json, validate.png,
# calibrate.json (held-out error before/after fitting compute, memory, KV-read and overlap fractions and the
# step overhead on 2/3 of the decode rows),
# and log.txt. Runs unchanged from a checkout: uses an installed `kokuban` or the source tree (needs
# PyTorch with CUDA, numpy, pandas, matplotlib, click, rich, tqdm, scipy).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-evidence/gpu}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1
if command -v kokuban >/dev/null 2>&1; then
  K=(kokuban)
else
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
  K=(python3 -c 'import sys; from kokuban.cli import main; sys.exit(main(sys.argv[1:]))')
fi
{
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  # 1. the machine: HBM read bandwidth and fp32/bf16/fp16 matmul FLOP/s, as an accelerator entry
  "${K[@]}" probe --device cuda --seconds 10 --id probed-cuda --out "$OUT_DIR/probe.toml"
  # 2. Llama-3.1-8B, all 32 layers, bf16 weights and KV, random weights; KV caches up to 60 GB
  "${K[@]}" validate --device cuda --dtype bf16 --model llama-3.1-8b --layers 0 \
    --batches 1,8,32,64,128,256 --contexts 512,2048,4096 --prompts 512,2048,8192 --prefill-batch 1 \
    --warmup 1 --repeats 7 --max-kv-gb 60 --gpu-file "$OUT_DIR/probe.toml" --gpu probed-cuda --out-dir "$OUT_DIR"
  # 3. fit compute, memory, KV-read and overlap fractions and the per-step overhead on 2/3 of the decode rows, judge on the rest
  "${K[@]}" calibrate --source validate-csv --csv "$OUT_DIR/validate.csv" --phase decode --json \
    --plot "$OUT_DIR/calibrate.png" > "$OUT_DIR/calibrate.json"
  "${K[@]}" calibrate --source validate-csv --csv "$OUT_DIR/validate.csv" --phase decode
} 2>&1 | tee "$OUT_DIR/log.txt"
