#!/usr/bin/env bash
# Every GPU check of the project in one command of at most 9 minutes on one CUDA machine.
#
#   OUT=/tmp/gpu bash scripts/gpu_checks.sh            # on the GPU machine (results under $OUT)
#   OUT=/tmp/dry bash scripts/gpu_checks.sh --dry-run  # the same steps on the CPU, tiny settings
#
# Steps, each with its own time limit (clipped to what is left of the 8-minute budget, so the
# script always ends in time; a failing or skipped step never stops the others). The dry run
# enforces neither the limits nor the budget (only a hang guard): it checks the steps, not the speed.
#   env            machine, torch/CUDA, bf16 support, which Python modules are importable
#   cuda_tests     every test marked `cuda` (pytest -m cuda over the files that have one)
#   train          a small Lost Cities run on CUDA: critic sampling, packed memories, colour
#                  relabelling, evaluation, the final strategy fit (t^4-weighted average); then
#   resume         that run resumed on CUDA from its checkpoint for one more iteration
#   amp            training step fp32 against fp16 and bf16 (512x3), with the throughput sweep
#   server         the inference server on CUDA against the local (worker CPU) backend
#   forward        the forward profile at batch 1 ... 65536 (fp32, bf16) against the matmul peak
#   traversal      traversal decisions/s of the default config (512x3) against the forward bound
#   search         the search bench (`deepcfr bench search` over the train step's network):
#                  rollout decisions/s against the forward bound; then with the network in
#                  the rollouts (search_network_rollouts_float32, _bfloat16)
#   search_eval    the search agent over the train step's network against it, 256 paired games
#   teacher        the growing teacher's bench over the shipped champion (positions a second)
#   luck           champion@greedy against heuristic_balanced, 10,000 games, plain and luck-corrected
#   exploit        the search exploiter against champion@greedy (base: the champion), 128 games
#   warm_start     Deep CFR from the champion (train --init champion), one iteration, vs champion@greedy
#   improve        one short round of lost_cities/grow.yaml (the growing teacher) from the champion
#   compile        training step with torch.compile off and on (fp32, bf16); last, so that a
#                  slow compilation costs only its own figures
#
# At most 8 files come back from $OUT; this writes 3:
#   summary.json    every step's status, time and figures (the JSON each step printed)
#   gpu_checks.log  everything every step printed
#   tables.md       the steps and the main figures as Markdown tables (docs/performance.md)
#
# Python: $PYTHON (default python3, with a CUDA torch for the real run). The steps import
# pydantic, yaml, numpy, rich, tensorboard, pytest and hypothesis; nothing is installed. A step
# whose modules are missing is reported as skipped, naming them. The lent GPU image lacks
# pydantic: `bash scripts/gpu_wheels.sh` fetches it as wheels into ./.whl (carry that folder) and this script
# puts them on the path with pip's offline install (--no-index, into a temporary folder).
set -u
DRY=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "gpu_checks.sh: unknown argument '$arg' (valid: --dry-run, --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_results}"
PYTHON="${PYTHON:-python3}"
BUDGET="${GPU_CHECKS_BUDGET:-540}"  # seconds for every step together
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_checks.XXXXXX")"  # step outputs and run directories (not under $OUT)
[ -z "${GPU_CHECKS_KEEP:-}" ] && trap 'rm -rf "$WORK"' EXIT  # GPU_CHECKS_KEEP=1 keeps it (debugging)
LOG="$OUT/gpu_checks.log"
: > "$LOG"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=PASSIVE
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" .whl/*.whl >>"$LOG" 2>&1 \
    && export PYTHONPATH="$PYTHONPATH:$WORK/site"
fi
CONFIGS=src/deepcfr/configs/lost_cities
START=$SECONDS

if [ "$DRY" = 1 ]; then
  DEVICE=cpu
  # the mini rules (short games) and small memories: the dry run checks the steps, not the speed
  TINY=(--set game.variant=mini --set memory.advantage_capacity=20000 --set memory.strategy_capacity=20000
        --set critic.capacity=20000 --set run.threads=1)
else
  DEVICE=cuda
  TINY=()
fi

# The dry run checks that every step runs and reports, not how fast: on a slow or shared machine
# (a busy two-core CI) a step may take several times its GPU limit. So under --dry-run neither the
# per-step limits nor the budget are enforced; each step only runs under a hang guard of
# $GPU_CHECKS_DRY_HANG seconds (default 1800), and the GPU limit is still reported beside its time.
DRY_HANG="${GPU_CHECKS_DRY_HANG:-1800}"

# step NAME LIMIT MODULES COMMAND...: run COMMAND under `timeout`, stdout to $WORK/NAME.out (a
# step's JSON goes there or to $WORK/NAME.json), everything to the log; MODULES (comma-separated)
# must be importable, else the step is skipped naming the missing ones. LIMIT (seconds) is the
# step's wall-clock limit on the GPU run (not enforced by the dry run: see DRY_HANG).
step() {
  local name=$1 limit=$2 modules=$3; shift 3
  local left=$((BUDGET - (SECONDS - START)))
  local missing=""
  if [ -n "$modules" ]; then
    missing=$("$PYTHON" - "$modules" <<'EOF'
import importlib.util, sys
print(",".join(m for m in sys.argv[1].split(",") if importlib.util.find_spec(m) is None))
EOF
)
  fi
  if [ -n "$missing" ]; then
    printf '%s\tskipped\t-\t0\t%s\tmissing Python modules: %s\n' "$name" "$limit" "$missing" >> "$WORK/steps.tsv"
    echo "== $name: skipped (missing Python modules: $missing)" | tee -a "$LOG"
    return
  fi
  if [ "$DRY" != 1 ] && [ "$left" -lt 15 ]; then  # no budget in the dry run: no step is skipped for time
    printf '%s\tskipped\t-\t0\t%s\tno time left in the %ss budget\n' "$name" "$limit" "$BUDGET" >> "$WORK/steps.tsv"
    echo "== $name: skipped (no time left)" | tee -a "$LOG"
    return
  fi
  [ "$DRY" != 1 ] && [ "$limit" -gt "$left" ] && limit=$left
  local enforced=$limit
  if [ "$DRY" = 1 ]; then
    enforced=$DRY_HANG
    echo "== $name (GPU limit ${limit}s, not enforced by the dry run; hang guard ${enforced}s): $*" | tee -a "$LOG"
  else
    echo "== $name (limit ${limit}s): $*" | tee -a "$LOG"
  fi
  local t0=$SECONDS
  timeout --signal=INT --kill-after=10 "$enforced" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"
  local rc=$?
  local status=ok
  [ "$rc" -ne 0 ] && status=failed
  [ "$rc" -eq 124 ] && status=timeout
  { cat "$WORK/$name.out"; cat "$WORK/$name.err"; } >> "$LOG"
  printf '%s\t%s\t%s\t%s\t%s\t\n' "$name" "$status" "$rc" "$((SECONDS - t0))" "$limit" >> "$WORK/steps.tsv"
  echo "   $status (rc=$rc) in $((SECONDS - t0))s" | tee -a "$LOG"
  tail -n 4 "$WORK/$name.err"
}
: > "$WORK/steps.tsv"

# ---------------------------------------------------------------------------------------------
step env 20 "" "$PYTHON" - "$DEVICE" <<'EOF'
import importlib.util, json, os, platform, subprocess, sys
import torch
cuda = torch.cuda.is_available()
info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
        "cuda_available": cuda, "device": torch.cuda.get_device_name(0) if cuda else platform.processor() or "cpu",
        "bf16_native": bool(cuda and torch.cuda.is_bf16_supported(including_emulation=False)),
        "cpus": os.cpu_count(), "platform": platform.platform(), "checks_device": sys.argv[1],
        "modules": {m: importlib.util.find_spec(m) is not None
                    for m in ("pydantic", "yaml", "numpy", "rich", "tensorboard", "pytest", "hypothesis")}}
try:
    info["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                         "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
except (OSError, subprocess.SubprocessError):
    info["nvidia_smi"] = None
if sys.argv[1] == "cuda" and not cuda:
    print(json.dumps(info)); sys.exit("CUDA is not available: the GPU steps will fail (use --dry-run on a CPU machine)")
print(json.dumps(info))
EOF

# ---------------------------------------------------------------------------------------------
mapfile -t CUDA_TEST_FILES < <(grep -l "mark.cuda" tests/test_*.py)
step cuda_tests 100 pytest,hypothesis,pydantic,yaml "$PYTHON" -m pytest -q -m cuda -p no:cacheprovider \
  --junitxml="$WORK/cuda_tests.xml" "${CUDA_TEST_FILES[@]}"

# ---------------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  TRAIN_SIZE=(--set traversal.traversals_per_player=48 --set traversal.chunk_size=48 --set network.hidden_size=32
              --set critic.train_steps=3 --set advantage.train_steps=3 --set strategy.train_steps=3
              --set strategy.final_train_steps=4 --set eval.games=8 --set init.games=8 --set init.train_steps=3
              "${TINY[@]}")
else
  TRAIN_SIZE=(--set traversal.traversals_per_player=4096 --set traversal.chunk_size=4096
              --set critic.train_steps=200 --set advantage.train_steps=200 --set strategy.train_steps=200
              --set strategy.final_train_steps=400 --set eval.games=200 --set memory.advantage_capacity=1000000
              --set memory.strategy_capacity=1000000 --set critic.capacity=1000000)
fi
# make train's run: the fit of a network to heuristic_balanced, then sigma_t regularised toward it
step train 90 pydantic,yaml,numpy,rich,tensorboard "$PYTHON" -m deepcfr.cli.main train --config "$CONFIGS/cpu.yaml" \
  --run-dir "$WORK/run" --iterations 2 --set run.device="$DEVICE" --set run.time_budget_seconds=null \
  --set run.progress=false --set strategy.every=1 --set eval.every=2 \
  --set eval.opponents=[random] --set checkpoint.latest_every=1 "${TRAIN_SIZE[@]}"
step resume 45 pydantic,yaml,numpy,rich,tensorboard "$PYTHON" -m deepcfr.cli.main train --resume "$WORK/run" --iterations 3

# ---------------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  AMP_SIZE=(--shapes 32x1 --steps 2 --warmup-steps 1 --repeats 1 --memory-size 2000 --fill-games 8 --peak-repeats 1
            --throughput-batches 64)
  COMPILE_MODES=fp32  # torch.compile's CPU build takes minutes: the dry run checks the step, not the compiler
else
  AMP_SIZE=(--shapes 512x3 --steps 100 --repeats 3 --memory-size 200000 --fill-games 500 --throughput-batches 1024,8192)
  COMPILE_MODES=fp32,compile,bf16,bf16+compile
fi
step amp 60 pydantic,yaml,numpy "$PYTHON" scripts/bench_amp_trainer.py --device "$DEVICE" --modes fp32,fp16,bf16 \
  "${AMP_SIZE[@]}" --json-out "$WORK/amp.json"

# ---------------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  SERVER_SIZE=(--workers 1 --worker-batch 16 --traversals 16 --train-steps 2 --set network.hidden_size=32
               --set critic.train_steps=2 "${TINY[@]}")
else
  SERVER_SIZE=(--workers 4 --worker-batch 512 --traversals 1024 --train-steps 50 --set critic.train_steps=50)
fi
step server 60 pydantic,yaml,numpy "$PYTHON" scripts/bench_inference_backend.py --config "$CONFIGS/cpu.yaml" \
  --server-device "$DEVICE" --iterations 2 --set strategy.final_train_steps=0 "${SERVER_SIZE[@]}" --json

# ---------------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  FORWARD=(--devices cpu --threads 1 --shapes 32x1 --batches 1,64 --repeats 1 --min-sample-seconds 0.005)
else
  FORWARD=(--devices cuda --shapes 512x3 --cuda-dtypes float32,bfloat16 --cuda-latency --repeats 1
           --min-sample-seconds 0.01 --batches 1,64,1024,16384,65536)
fi
step forward 40 "" "$PYTHON" scripts/profile_gpu_forward.py "${FORWARD[@]}" --json

# ---------------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  TRAVERSAL=(--set traversal.traversals_per_player=32 --set traversal.chunk_size=32 --set network.hidden_size=32
             --set critic.train_steps=2 --set advantage.train_steps=2 --set strategy.train_steps=2 --repeats 1
             "${TINY[@]}")
else  # the default config's 512x3 networks, one lockstep batch of 8192 games per player
  TRAVERSAL=(--set traversal.traversals_per_player=8192 --set traversal.chunk_size=8192
             --set critic.train_steps=100 --set advantage.train_steps=100 --set strategy.train_steps=100 --repeats 2)
fi
step traversal 50 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main bench traversal --config "$CONFIGS/default.yaml" \
  --set run.device="$DEVICE" "${TRAVERSAL[@]}" --json

# ---------------------------------------------------------------------------------------------
# The search bench: a quarter of a million rollouts in one lockstep batch (256 decisions x 4
# candidates x 256 deals) by the search at the shipped defaults over the train step's network.
CK="$WORK/run/checkpoints/latest.pt"
SEARCH=(--player "search:$CK" --device "$DEVICE" --json --decisions 256 --search-determinizations 256
        --search-max-batch 1048576 --repeats 1)
[ "$DRY" = 1 ] && SEARCH+=(--dry-run)
step search 40 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main bench search "${SEARCH[@]}"
# The same bench with the network playing the rollouts (the expert-iteration teacher after its
# bootstrap round), its forward passes in float32 and in bfloat16
for dtype in float32 bfloat16; do
  step "search_network_rollouts_$dtype" 25 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main bench search "${SEARCH[@]}" \
    --search-rollout-policy base --search-rollout-dtype "$dtype"
done
# The growing teacher of lost_cities/grow.yaml over the shipped champion, at an improve batch
# on the GPU (256 decisions at once): searched positions a second
TEACHER=(--player "search[candidates=3,rollout_policy=base]:champion" --device "$DEVICE" --json --decisions 256
         --repeats 1)
[ "$DRY" = 1 ] && TEACHER+=(--dry-run)
step teacher 40 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main bench search "${TEACHER[@]}"

# ---------------------------------------------------------------------------------------------
# The search agent at the shipped defaults over the train step's network against that network
# (256 paired games, every deciding game x candidates x deals in one lockstep batch), then one
# short expert-iteration round from the same checkpoint (search-labelled self-play, training,
# gate, evaluation of the network and the search over it).
# One round of lost_cities/grow.yaml (the growing teacher: the network in its own rollouts) from
# the shipped champion, shortened to fit: self-play, training, the gate against the champion and
# the evaluation against heuristic_balanced and the champion. The dry run does the same on the
# train step's mini network with a tiny teacher.
if [ "$DRY" = 1 ]; then
  SEARCH_GAMES=4
  GROW=(--checkpoint "$CK" --set improve.games_per_round=4 --set improve.batch_games=4 --set improve.train_steps=3
        --set improve.batch_size=16 --set improve.gate_games=4 --set improve.eval_games=4
        --set "improve.teacher=search[determinizations=2,candidates=2,rollout_policy=base]:learner"
        --set "improve.eval_opponents=[heuristic_balanced]" --set run.threads=1)
else
  SEARCH_GAMES=256
  GROW=(--checkpoint champion --set improve.games_per_round=128 --set improve.batch_games=128
        --set improve.train_steps=300 --set improve.batch_size=1024 --set improve.gate_games=400
        --set improve.eval_games=400 --set "improve.eval_opponents=[heuristic_balanced,champion@greedy]")
fi
step search_eval 70 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main arena --a "search:$CK" --b "$CK" \
  --games "$SEARCH_GAMES" --device "$DEVICE" --json
# The luck-corrected estimate on the device (the value function beside the champion): its variance
# ratio and what the corrections cost there, beside the plain paired estimate of the same games.
LUCK_GAMES=10000
[ "$DRY" = 1 ] && LUCK_GAMES=4
step luck 60 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main arena --a champion@greedy --b heuristic_balanced \
  --games "$LUCK_GAMES" --device "$DEVICE" --json
# The search exploiter's lower bound on the champion's exploitability (issue 36): the champion
# network as the exploiter's base, the champion@greedy target's own policy in the rollouts, the
# belief over its hidden cards from its past moves, luck-corrected. The dry run exploits the train
# step's mini network the same way.
if [ "$DRY" = 1 ]; then
  EXPLOIT=(--target "$CK@greedy" --base "$CK@greedy" --games 4 --determinizations 2 --rollouts 1)
else
  EXPLOIT=(--target champion@greedy --base champion@greedy --games 128)
fi
step exploit 110 pydantic,yaml,numpy "$PYTHON" -m deepcfr.cli.main exploit "${EXPLOIT[@]}" --device "$DEVICE" --json
# Deep CFR from the champion (issue 37): the warm start on the device (the start games, the fit of
# the advantage networks to the champion, the strategy memory seeded) and one Deep CFR iteration,
# evaluated head to head against champion@greedy; regret matching (init.kl_temperature 0: the train step
# ran the regularised rule). The dry run starts from the train step's network.
if [ "$DRY" = 1 ]; then
  WARM=(--init "$CK" --set init.weight=2 --set "eval.opponents=[random]" "${TRAIN_SIZE[@]}")
else
  WARM=(--init champion --set init.games=4096 --set "eval.opponents=[champion@greedy]" "${TRAIN_SIZE[@]}")
fi
step warm_start 90 pydantic,yaml,numpy,rich,tensorboard "$PYTHON" -m deepcfr.cli.main train --config "$CONFIGS/cpu.yaml" \
  --run-dir "$WORK/warm" --iterations 1 --set run.device="$DEVICE" --set run.time_budget_seconds=null \
  --set run.progress=false --set eval.every=1 --set init.kl_temperature=0 "${WARM[@]}"
step improve 90 pydantic,yaml,numpy,rich,tensorboard "$PYTHON" -m deepcfr.cli.main improve --config lost_cities/grow.yaml \
  --run-dir "$WORK/improve" --rounds 1 --set run.device="$DEVICE" --set run.progress=false \
  --set improve.executor=inline "${GROW[@]}" --json

# ---------------------------------------------------------------------------------------------
# Last: a slow compilation (minutes, at worst) can only cost its own figures.
step compile 60 pydantic,yaml,numpy "$PYTHON" scripts/bench_amp_trainer.py --device "$DEVICE" --modes "$COMPILE_MODES" \
  "${AMP_SIZE[@]}" --throughput-batches "" --json-out "$WORK/compile.json"

# ---------------------------------------------------------------------------------------------
"$PYTHON" scripts/gpu_checks_summary.py "$WORK" "$OUT" "$DRY" "$((SECONDS - START))" 2>&1 | tee -a "$LOG"
exit "${PIPESTATUS[0]}"
