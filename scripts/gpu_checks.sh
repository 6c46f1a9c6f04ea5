#!/usr/bin/env bash
# Every GPU check of the project, run once on a CUDA machine; results go under $OUT (default
# ./gpu_results). Sized for one 10-minute command: each step has its own time limit and a
# failing step does not stop the others. See docs/performance.md ("Training step").
#
#   OUT=/tmp/gpu bash scripts/gpu_checks.sh
#
# Steps: machine info; the cuda-marked tests; the AMP / compile training-step bench at 512x3 and
# 1024x6 (with the training-throughput sweep); the inference-server A/B (when
# scripts/bench_inference_backend.py exists); the forward profile at batch 1..65536; traversal
# (critic sampling) against the forward bound at the default config.
#
# Python: $PYTHON (default python3, which must hold a CUDA torch). Missing pure-Python
# dependencies (pydantic 2 is not in the lent machine's image) travel as wheels in ./.whl: on the
# development machine, in the repo root,
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     pydantic==2.* pydantic-core annotated-types typing-inspection typing-extensions
# (pydantic-core must be the version that pydantic pins) and carry `.whl`; this script installs them.
set -u
OUT="${OUT:-$PWD/gpu_results}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
SUMMARY="$OUT/summary.txt"  # machine info and every step's status (at most 8 files come back from $OUT)
{
  date -u; uname -a; nvidia-smi || true
  "$PYTHON" -c "import torch, sys; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-'); print('bf16 native', torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False))"
  "$PYTHON" -c "import pydantic, yaml; print('pydantic', pydantic.VERSION)" || echo "pydantic missing: carry wheels in .whl (see the header)"
} > "$SUMMARY" 2>&1
cat "$SUMMARY"

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.txt, record the status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "== $name (limit ${limit}s): $*" | tee -a "$SUMMARY"
  timeout --signal=INT --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "   rc=$rc, $((SECONDS - t0))s" | tee -a "$SUMMARY"
  tail -n 25 "$OUT/$name.txt"
}

# 1. CUDA tests (AMP smoke and fp32-vs-AMP parity, and every other cuda-marked test).
step cuda_tests 110 "$PYTHON" -m pytest -q -m cuda -p no:cacheprovider --continue-on-collection-errors tests/

# 2. Training step at 512x3 and 1024x6, batches of 1024, 200 updates per phase, 5 interleaved
#    rounds: (a) fp32 / fp16 / bf16 with the training-throughput sweep; (b) torch.compile, in its
#    own step so that a slow compilation cannot cost the AMP figures.
step amp_bench 130 "$PYTHON" scripts/bench_amp_trainer.py --device cuda --shapes 512x3,1024x6 \
  --modes fp32,fp16,bf16 --steps 200 --repeats 5 --memory-size 1000000 --fill-games 2000 \
  --throughput-batches 1024,4096,16384 --json-out "$OUT/amp_bench.json"
step compile_bench 120 "$PYTHON" scripts/bench_amp_trainer.py --device cuda --shapes 512x3,1024x6 \
  --modes fp32,compile,bf16,bf16+compile --steps 200 --repeats 5 --memory-size 1000000 --fill-games 2000 \
  --json-out "$OUT/compile_bench.json"

# 3. Inference-server A/B (local vs server backend), when that bench exists.
if [ -f scripts/bench_inference_backend.py ]; then
  step inference_backend 80 "$PYTHON" scripts/bench_inference_backend.py
else
  echo "== inference_backend: scripts/bench_inference_backend.py not present, skipped" | tee -a "$SUMMARY"
fi

# 4. Forward profile on CUDA (fp32 and bf16, batch 1..65536) against the measured matmul peak.
step forward_profile 80 "$PYTHON" scripts/profile_gpu_forward.py --devices cuda --shapes 512x3,1024x6,256x2 \
  --cuda-dtypes float32,bfloat16 --cuda-latency --repeats 5

# 5. Traversal against the forward bound at the default (GPU) config, networks on CUDA.
step traversal_bench 60 "$PYTHON" -m deepcfr.cli.main bench traversal --config lost_cities/default.yaml \
  --set run.device=cuda --set traversal.traversals_per_player=4096 --set advantage.train_steps=100 \
  --set strategy.train_steps=100 --repeats 2 --json

echo "done; results in $OUT" | tee -a "$SUMMARY"
