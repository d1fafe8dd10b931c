#!/usr/bin/env bash
# Probe + validate + calibrate on this machine's CPU; about 2-3 minutes on 2 cores. Run it on an idle machine:
# every other process competes for the same two cores and the same memory bandwidth.
# Writes under evidence/cpu/ (or $1): probe.toml, probe.txt, validate.csv/.json/.png/.txt, calibrate.json
# and calibrate.png (held-out split seed 0) and calibrate.txt (hash splits with seeds 0, 1, 2,
# then structured splits holding out one context or a set of batches). Needs `kokuban` installed with the `validate` extra.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-evidence/cpu}
mkdir -p "$OUT_DIR"
# 1. the machine: read bandwidth and fp32/bf16 matmul FLOP/s, as an accelerator entry
kokuban probe --device cpu --seconds 4 --out "$OUT_DIR/probe.toml" | tee "$OUT_DIR/probe.txt"
# 2. Llama-3.2-1B, 4 of 16 layers, fp32, batch 1-64 x context 128-4096, prompts 16-256; 5 interleaved rounds
kokuban validate --gpu-file "$OUT_DIR/probe.toml" --out-dir "$OUT_DIR" | tee "$OUT_DIR/validate.txt"
# 3. fit compute, memory, KV-read, overlap fractions and per-step overhead on 2/3 of the decode rows, judge on the rest
kokuban calibrate --source validate-csv --csv "$OUT_DIR/validate.csv" --phase decode --json \
  --plot "$OUT_DIR/calibrate.png" > "$OUT_DIR/calibrate.json"
{
  for seed in 0 1 2; do
    echo "== held-out split: hash of the row id, seed $seed"
    kokuban calibrate --source validate-csv --csv "$OUT_DIR/validate.csv" --phase decode --seed "$seed"
  done
  # structured splits: the fit never sees the held-out context or batches
  for split in context=4096 context=1024 context=128 batch=2,8,32 batch=1,4,16,64; do
    echo "== held-out split: $split"
    kokuban calibrate --source validate-csv --csv "$OUT_DIR/validate.csv" --phase decode --hold-out "$split"
  done
} | tee "$OUT_DIR/calibrate.txt"
