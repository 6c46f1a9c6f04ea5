#!/usr/bin/env python
"""Training-step benchmark: the trainer's advantage and strategy training phases under each
precision / compile mode, and training throughput against the FLOP-bound limit.

For each network shape the replay memories are filled with real Lost Cities samples (lockstep
outcome-sampling traversals under the uniform sigma_1, replicated by reservoir insertion up to
--memory-size samples per memory), then ``Trainer.train_advantage`` and ``Trainer.train_strategy``
run --steps updates of --batch-size per timed phase, exactly as in training (batch draws and
feature encoding included; their share is reported). Modes run interleaved (A/B/A/B...) over
--repeats rounds, so that load from other processes hits them alike.

Modes: fp32 (run.amp=off), fp16, bf16 (run.amp; on CPU these are the logged no-op fallback and
must match fp32), compile (run.compile=true), bf16+compile, fp16+compile, and bf16-cpu: CPU
autocast forced on (not reachable from the config; measured to show what it would give).

Throughput: samples per second through a training step against the FLOP-bound limit of the
network on this device: 3 x (2 x weights) FLOPs per sample (forward + backward) against the
measured matrix-multiply peak in the mode's dtype (``deepcfr.bench.forward.matmul_peak``).
"step-only" excludes the batch draws.

    .venv/bin/python scripts/bench_amp_trainer.py                      # CPU: cpu-config shape and 512x3
    .venv/bin/python scripts/bench_amp_trainer.py --shapes 512x3,1024x6 --device cuda --steps 200
    .venv/bin/python scripts/bench_amp_trainer.py --throughput-batches 256,1024,4096
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from deepcfr.bench import forward as fb
from deepcfr.cfr.policies import UniformPolicy
from deepcfr.cfr.traversal import OutcomeSampling, traverse
from deepcfr.train.amp import MixedPrecision
from deepcfr.train.config import load_config
from deepcfr.train.trainer import Trainer

REPO = Path(__file__).resolve().parents[1]

DEFAULT_CONFIG = "lost_cities/default.yaml"  # shipped configs, by their short names
CPU_CONFIG = "lost_cities/cpu.yaml"
ALL_MODES = ("fp32", "fp16", "bf16", "compile", "bf16+compile", "fp16+compile", "bf16-cpu")
MODE_DTYPE = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "bf16-cpu": "bfloat16"}


def mode_settings(mode: str) -> tuple[str, bool]:
    """(run.amp, run.compile) of a mode name."""
    if mode not in ALL_MODES:
        raise SystemExit(f"--modes: unknown mode {mode!r}; valid: {', '.join(ALL_MODES)}")
    if mode == "bf16-cpu":
        return "bf16", False
    precision, _, compiled = mode.partition("+")
    return ("off" if precision in ("fp32", "compile") else precision), (compiled == "compile" or precision == "compile")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def make_config(shape: tuple[int, int], device: str, args, amp: str = "off", compiled: bool = False):
    hidden, layers = shape
    return load_config(
        DEFAULT_CONFIG,
        [
            f"network.hidden_size={hidden}",
            f"network.num_layers={layers}",
            f"run.device={device}",
            f"run.amp={amp}",
            f"run.compile={str(compiled).lower()}",
            "run.progress=false",
            "eval.every=0",
            f"memory.advantage_capacity={args.memory_size}",
            f"memory.strategy_capacity={args.memory_size}",
            f"advantage.train_steps={args.steps}",
            f"strategy.train_steps={args.steps}",
            f"advantage.batch_size={args.batch_size}",
            f"strategy.batch_size={args.batch_size}",
            f"traversal.chunk_size={args.fill_games}",
            f"traversal.traversals_per_player={args.fill_games}",
        ],
    )


def fill_memories(trainer: Trainer, memory_size: int, games: int, seed: int) -> dict[str, float]:
    """Real samples from lockstep traversals under sigma_1 (uniform), re-offered until every
    memory holds ``memory_size`` samples."""
    generator = torch.Generator(device=trainer.device).manual_seed(seed)
    t0 = time.perf_counter()
    produced = {"advantage": 0, "strategy": 0}
    parts = []
    for player in range(2):
        result = traverse(
            OutcomeSampling(epsilon=0.6),
            trainer.game,
            player,
            games,
            UniformPolicy(),
            UniformPolicy(),
            1,
            generator,
            record_strategy=True,
            device=trainer.device,
        )
        parts.append(result)
        produced["advantage"] += result.advantage["obs"].shape[0]
        produced["strategy"] += result.strategy["obs"].shape[0]
    traversal_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for player, result in enumerate(parts):
        while len(trainer.advantage_memories[player]) < memory_size:
            trainer.add_advantage_samples(player, result.advantage)
    while len(trainer.strategy_memory) < memory_size:
        for result in parts:
            trainer.add_strategy_samples(result.strategy)
    return {
        "traversal_seconds": traversal_seconds,
        "fill_seconds": time.perf_counter() - t0,
        "distinct_advantage_samples": produced["advantage"],
        "distinct_strategy_samples": produced["strategy"],
    }


def build_trainer(source: Trainer, shape, device: str, args, mode: str) -> Trainer:
    amp, compiled = mode_settings(mode)
    trainer = Trainer(make_config(shape, device, args, amp, compiled))
    if mode == "bf16-cpu":
        trainer.amp = MixedPrecision("bf16", trainer.device, allow_cpu=True)
    # Share the filled memories: every mode trains on the same samples.
    trainer.advantage_memories = source.advantage_memories
    trainer.strategy_memory = source.strategy_memory
    trainer.target_scale = source.target_scale
    trainer.iteration = 1
    return trainer


def timed_phase(trainer: Trainer, phase: str, batch_size: int | None = None) -> tuple[float, float, float]:
    """(seconds, batch-draw seconds, loss) of one training phase."""
    if batch_size is not None:
        getattr(trainer.config, phase).batch_size = batch_size
    trainer.fitter.batch_seconds = 0.0
    sync(trainer.device)
    t0 = time.perf_counter()
    loss = trainer.train_advantage(0) if phase == "advantage" else trainer.train_strategy()
    sync(trainer.device)
    return time.perf_counter() - t0, trainer.fitter.batch_seconds, loss


def flop_peaks(device: torch.device, modes: list[str], repeats: int) -> dict[str, float | None]:
    peaks: dict[str, float | None] = {}
    for mode in modes:
        dtype = MODE_DTYPE.get(mode.split("+")[0], "float32")
        if device.type == "cpu" and mode != "bf16-cpu":
            dtype = "float32"  # the AMP modes are float32 on CPU
        if dtype in peaks:
            continue
        if device.type == "cpu" and dtype != "float32":
            peaks[dtype] = cpu_matmul_peak(fb.resolve_dtype(dtype), repeats)
        else:
            peaks[dtype] = fb.matmul_peak(device, dtype, repeats=repeats).flop_per_second
    return peaks


def cpu_matmul_peak(dtype: torch.dtype, repeats: int, sizes=(512, 1024, 2048)) -> float:
    """Best square-matmul FLOP/s on CPU in a reduced precision (``deepcfr.bench.forward.matmul_peak``
    refuses these: most CPUs emulate them; CPUs with AVX512-BF16 or AMX run them natively)."""
    best = 0.0
    for size in sizes:
        a, b = torch.rand(size, size).to(dtype), torch.rand(size, size).to(dtype)
        torch.mm(a, b)
        calls = max(1, int(0.1 / max(_seconds(torch.mm, a, b), 1e-6)))
        times = [_seconds(_repeated, torch.mm, calls, a, b) / calls for _ in range(repeats)]
        best = max(best, 2 * size**3 / statistics.median(times))
    return best


def _seconds(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _repeated(fn, calls: int, *args) -> None:
    for _ in range(calls):
        fn(*args)


def effective_dtype(mode: str, trainer: Trainer) -> str:
    return fb.dtype_name(trainer.amp.dtype) if trainer.amp.dtype is not None else "float32"


def bench_shape(name: str, shape, device: str, modes: list[str], args, say) -> dict:
    dev = torch.device(device)
    filler = Trainer(make_config(shape, device, args))
    fill = fill_memories(filler, args.memory_size, args.fill_games, args.seed)
    say(
        f"\n== {name} on {device}: {fill['distinct_advantage_samples']} advantage / "
        f"{fill['distinct_strategy_samples']} strategy samples from {2 * args.fill_games} traversals "
        f"({fill['traversal_seconds']:.1f}s), memories filled to {args.memory_size} ({fill['fill_seconds']:.1f}s)"
    )
    net = filler.advantage_nets[0]
    params = sum(p.numel() for p in net.parameters())
    flops_per_sample = 3 * fb.mlp_flops_per_state(net)  # forward 2*weights, backward twice that
    peaks = flop_peaks(dev, modes, args.peak_repeats)
    for dtype, peak in peaks.items():
        if peak:
            say(f"matmul peak {dtype}: {peak / 1e9:.1f} GFLOP/s ({torch.get_num_threads()} threads)")
    say(f"{params} parameters, {flops_per_sample / 1e6:.2f} MFLOP per training sample (fwd+bwd)")

    trainers: dict[str, Trainer] = {}
    warmup: dict[str, float] = {}
    for mode in modes:
        trainer = build_trainer(filler, shape, device, args, mode)
        trainers[mode] = trainer
        # Warm-up: compiles (compile modes), allocator and caches; timed separately.
        for phase in ("advantage", "strategy"):
            getattr(trainer.config, phase).train_steps = args.warmup_steps
        t0 = time.perf_counter()
        timed_phase(trainer, "advantage")
        timed_phase(trainer, "strategy")
        warmup[mode] = time.perf_counter() - t0
        for phase in ("advantage", "strategy"):
            getattr(trainer.config, phase).train_steps = args.steps

    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in range(args.repeats):
        for phase in ("advantage", "strategy"):
            for mode in modes:
                samples.setdefault((mode, phase), []).append(timed_phase(trainers[mode], phase))
        say(f"round {r + 1}/{args.repeats} done")

    rows = []
    for phase in ("advantage", "strategy"):
        base = [s[0] for s in samples[(modes[0], phase)]]
        say(
            f"\n{name} {phase} phase: {args.steps} steps x batch {args.batch_size}, {args.repeats} rounds "
            f"(ms per step over rounds; speedup = median of per-round ratios vs {modes[0]})"
        )
        say(
            f"{'mode':>13} {'dtype':>9} {'mean':>8} {'p50':>8} {'p95':>8} {'speedup':>8} {'draw%':>6} "
            f"{'samples/s':>10} {'bound/s':>10} {'%bound':>7} {'step-only%':>10} {'loss':>10}"
        )
        for mode in modes:
            trainer = trainers[mode]
            found = samples[(mode, phase)]
            per_step = [s[0] / args.steps * 1e3 for s in found]
            ratios = [b / s[0] for b, s in zip(base, found)]
            seconds = statistics.median(s[0] for s in found)
            draw = statistics.median(s[1] / s[0] for s in found)
            dtype = effective_dtype(mode, trainer)
            peak = peaks.get(dtype) or peaks.get("float32")
            rate = args.steps * args.batch_size / seconds
            step_rate = args.steps * args.batch_size / statistics.median(s[0] - s[1] for s in found)
            bound = peak / flops_per_sample if peak else None
            row = {
                "net": name,
                "device": device,
                "phase": phase,
                "mode": mode,
                "dtype": dtype,
                "threads": torch.get_num_threads(),
                "steps": args.steps,
                "batch_size": args.batch_size,
                "ms_per_step_mean": statistics.mean(per_step),
                "ms_per_step_p50": statistics.median(per_step),
                "ms_per_step_p95": percentile(per_step, 0.95),
                "ms_per_step_rounds": per_step,
                "speedup_vs_first": statistics.median(ratios),
                "draw_fraction": draw,
                "samples_per_second": rate,
                "step_only_samples_per_second": step_rate,
                "flop_bound_samples_per_second": bound,
                "bound_fraction": rate / bound if bound else None,
                "step_only_bound_fraction": step_rate / bound if bound else None,
                "warmup_seconds": warmup[mode],
                "last_loss": found[-1][2],
                "parameters": params,
            }
            rows.append(row)
            say(
                f"{mode:>13} {dtype:>9} {row['ms_per_step_mean']:>8.2f} {row['ms_per_step_p50']:>8.2f} "
                f"{row['ms_per_step_p95']:>8.2f} {row['speedup_vs_first']:>7.2f}x {100 * draw:>5.1f}% "
                f"{rate:>10.0f} {bound or float('nan'):>10.0f} "
                f"{100 * (row['bound_fraction'] or float('nan')):>6.1f}% "
                f"{100 * (row['step_only_bound_fraction'] or float('nan')):>9.1f}% {found[-1][2]:>10.6g}"
            )
    say("warm-up seconds (first phases; includes compilation): " + ", ".join(f"{m} {s:.1f}" for m, s in warmup.items()))

    throughput = []
    if args.throughput_batches:
        mode = modes[0]
        trainer = trainers[mode]
        say(
            f"\n{name} training throughput ({mode}, advantage phase, {args.steps} steps per point, "
            f"median of {args.repeats})"
        )
        say(f"{'batch':>7} {'samples/s':>10} {'step-only/s':>11} {'bound/s':>10} {'%bound':>7} {'step-only%':>10}")
        dtype = effective_dtype(mode, trainer)
        peak = peaks.get(dtype) or peaks.get("float32")
        bound = peak / flops_per_sample if peak else None
        for batch in args.throughput_batches:
            timed_phase(trainer, "advantage", batch)  # warm-up at this shape
            found = [timed_phase(trainer, "advantage", batch) for _ in range(args.repeats)]
            rate = args.steps * batch / statistics.median(s[0] for s in found)
            step_rate = args.steps * batch / statistics.median(s[0] - s[1] for s in found)
            throughput.append(
                {
                    "net": name,
                    "device": device,
                    "mode": mode,
                    "batch_size": batch,
                    "samples_per_second": rate,
                    "step_only_samples_per_second": step_rate,
                    "flop_bound_samples_per_second": bound,
                    "bound_fraction": rate / bound if bound else None,
                    "step_only_bound_fraction": step_rate / bound if bound else None,
                }
            )
            say(
                f"{batch:>7} {rate:>10.0f} {step_rate:>11.0f} {bound or float('nan'):>10.0f} "
                f"{100 * rate / bound if bound else float('nan'):>6.1f}% "
                f"{100 * step_rate / bound if bound else float('nan'):>9.1f}%"
            )
        trainer.config.advantage.batch_size = args.batch_size
    return {
        "net": name,
        "parameters": params,
        "flops_per_sample": flops_per_sample,
        "peaks": peaks,
        "fill": fill,
        "warmup_seconds": warmup,
        "phases": rows,
        "throughput": throughput,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shapes",
        default=None,
        help="network shapes HIDDENxLAYERS (default: the CPU config's and 512x3; on CUDA 512x3 and 1024x6)",
    )
    parser.add_argument("--device", default="auto", help="cpu | cuda | auto")
    parser.add_argument(
        "--modes", default=None, help=f"comma-separated, first is the baseline; from {', '.join(ALL_MODES)}"
    )
    parser.add_argument("--memory-size", type=int, default=200_000, help="samples per replay memory")
    parser.add_argument("--fill-games", type=int, default=1000, help="traversals per player that produce the samples")
    parser.add_argument("--steps", type=int, default=50, help="updates per timed phase")
    parser.add_argument("--warmup-steps", type=int, default=5, help="updates of the untimed first phase per mode")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    parser.add_argument(
        "--throughput-batches", default="", help="batch sizes for the throughput sweep, e.g. 256,1024,4096"
    )
    parser.add_argument("--peak-repeats", type=int, default=5, help="timed samples of the matmul-peak measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    parser.add_argument("--json-out", default=None, help="also write the JSON report to this file (tables still print)")
    args = parser.parse_args(argv)
    for name in ("memory_size", "fill_games", "steps", "batch_size", "repeats", "threads", "peak_repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1")
    args.throughput_batches = [int(b) for b in args.throughput_batches.split(",") if b.strip()]

    torch.set_num_threads(args.threads)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    try:
        dev = fb.check_device(device)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if args.shapes is None:
        if dev.type == "cuda":
            shapes = ["512x3", "1024x6"]
        else:
            cpu = load_config(CPU_CONFIG).network
            shapes = list(dict.fromkeys([f"{cpu.hidden_size}x{cpu.num_layers}", "512x3"]))
    else:
        shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if args.modes is None:
        modes = (
            ["fp32", "fp16", "bf16", "compile", "bf16+compile"]
            if dev.type == "cuda"
            else ["fp32", "bf16", "compile", "bf16-cpu"]
        )
    else:
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        mode_settings(m)
    if "bf16-cpu" in modes and dev.type != "cpu":
        raise SystemExit("--modes: bf16-cpu is a CPU-only mode")

    say = (lambda *a, **k: None) if args.json else (lambda *a, **k: print(*a, **k, flush=True))
    report = {
        "bench": "amp_trainer",
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "device": device,
        "cuda_device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "args": {k: v for k, v in vars(args).items()},
        "modes": modes,
        "results": [],
    }
    say(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads, device {device}"
        + (f" ({report['cuda_device_name']})" if report["cuda_device_name"] else "")
        + f"; modes {', '.join(modes)}; memories {args.memory_size}; fp32 matmul precision "
        f"{report['float32_matmul_precision']}"
    )
    for name in shapes:
        try:
            shape = fb.parse_shape(name)
        except ValueError as e:
            raise SystemExit(str(e)) from None
        report["results"].append(bench_shape(name, shape, device, modes, args, say))
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    text = json.dumps(report, default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else str(v))
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    if args.json:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
