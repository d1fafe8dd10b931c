#!/usr/bin/env bash
# kokuban against llama.cpp on this machine's CPU: build (or find) llama.cpp's benchmark tools, write random-weight
# GGUF models of catalog architectures, quantize them (Q8_0, Q4_0, Q4_K_M), run llama-bench and llama-batched-bench,
# fit the efficiency fractions per type on some sizes and depths and report the error on the held-out rest.
# Writes evidence/cpu/llamacpp.json (raw: every repetition, command lines, llama.cpp commit, date, machine),
# llamacpp.csv, llamacpp.txt and llamacpp-report.json (or under $1). Needs probe.toml from evidence/cpu/cpu.sh,
# the `gguf` package (pip install 'kokuban[llamacpp]'), cmake and a C++ compiler when the tools must be built.
# On 2 quiet cores (2026-12-04): under 5 minutes of building and about 8 minutes of benchmarks (268 s of them in
# llama-bench); on a busy machine 16-32 minutes of building and up to the budget retrying disturbed tests.
# Environment: LLAMA_CPP_BIN (folder with the three tools; default: build them), LLAMA_WORK (build and model
# folder, default /tmp/kokuban-llamacpp; the GGUF files take ~6 GB), PYTHON (default: python3), BUDGET_S.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-evidence/cpu}
WORK=${LLAMA_WORK:-/tmp/kokuban-llamacpp}
PY=${PYTHON:-python3}
VERSION=0.3.36  # llama-cpp-python's sdist vendors llama.cpp (for 0.3.36 the commit PINNED below)
mkdir -p "$OUT_DIR" "$WORK/models"
BIN=${LLAMA_CPP_BIN:-}
if [ -z "$BIN" ]; then
  BIN="$WORK/build/bin"
  if [ ! -x "$BIN/llama-bench" ] || [ ! -x "$BIN/llama-batched-bench" ] || [ ! -x "$BIN/llama-quantize" ]; then
    # 1. the tools: only the three targets, from the llama.cpp vendored in llama-cpp-python's source distribution
    (cd "$WORK" && "$PY" -m pip download --no-binary :all: --no-deps "llama-cpp-python==$VERSION" -d . \
      && tar xzf "llama_cpp_python-$VERSION.tar.gz")
    SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
    nice -n 19 cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON
    nice -n 19 cmake --build "$WORK/build" -j2 --target llama-bench llama-batched-bench llama-quantize
  fi
fi
# the sdist carries no git history: the commit of 0.3.36's vendored llama.cpp (its submodule pin) is written here
PINNED="0c1e57098bba43ac29e6e3b677cdceebdd22334f 2026-10-01T11:11:48+09:00"
COMMIT=$(git -C "$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp" log -1 --format='%H %cI' 2>/dev/null \
  || { [ "$VERSION" = 0.3.36 ] && [ -z "${LLAMA_CPP_BIN:-}" ] && echo "$PINNED"; } || echo unknown)
# 2. models, quantization and the benchmarks (2 threads, niced): each test is its own llama-bench run, started when
#    the machine is quiet and kept only if other processes used <= 0.15 cores meanwhile; disturbed tests are run
#    again until every test has a quiet run or $BUDGET_S seconds have passed (what never got one is listed)
nice -n 19 "$PY" -m evidence.llamacpp measure --clean --budget-s "${BUDGET_S:-2100}" --bin "$BIN" \
  --work "$WORK/models" --raw "$OUT_DIR/llamacpp.json" --llama-cpp "llama-cpp-python $VERSION sdist, llama.cpp $COMMIT"
# 3. the prediction, the per-type fit on the fitted rows and the error on the held-out rows
"$PY" -m evidence.llamacpp report --raw "$OUT_DIR/llamacpp.json" --probe "$OUT_DIR/probe.toml" --out-dir "$OUT_DIR"
