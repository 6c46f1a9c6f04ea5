#!/usr/bin/env python
"""Forward-pass profile of DeepCFRMLP: microseconds per call and per state, states/second and
achieved FLOP/s against the device's measured matmul peak, at batch sizes 1 ... 65536, on CPU
(at each --threads count) and on CUDA when present (skipped cleanly otherwise).

    .venv/bin/python scripts/profile_gpu_forward.py
    .venv/bin/python scripts/profile_gpu_forward.py --shapes 512x3,128x2 --threads 1,2 --json

Input size defaults to the Lost Cities feature size (and output size to its action count);
give --input-size/--output-size when that engine is absent. Network shapes default to 512x3
and the CPU config's size (the shipped lost_cities/cpu.yaml). The measurement functions live in
deepcfr.bench.forward.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from pathlib import Path

import torch

from deepcfr.bench import forward as fb
from deepcfr.cfr.networks import DeepCFRMLP

REPO = Path(__file__).resolve().parents[1]

CPU_CONFIG_CANDIDATES = (REPO / "src/deepcfr/configs/lost_cities/cpu.yaml",)


def lost_cities_sizes() -> tuple[int | None, int | None]:
    try:
        from deepcfr.games.registry import make_game

        game = make_game("lost_cities")
        return int(game.feature_size), int(game.num_actions)
    except Exception:  # the engine may not exist yet in this checkout
        return None, None


def cpu_config_shape() -> str | None:
    try:
        from deepcfr.train.config import load_config
    except Exception:
        return None
    for path in CPU_CONFIG_CANDIDATES:
        if path.is_file():
            cfg = load_config(path)
            return f"{cfg.network.hidden_size}x{cfg.network.num_layers}"
    return None


def parse_int_list(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"{name}: expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise SystemExit(f"{name}: expected positive integers, got {text!r}")
    return values


def median_by(items: list, key):
    """The item whose key is the (lower) median."""
    ordered = sorted(items, key=key)
    return ordered[(len(ordered) - 1) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shapes",
        default=None,
        help="network shapes HIDDENxLAYERS, comma-separated (default: 512x3 and the CPU config's)",
    )
    parser.add_argument("--input-size", type=int, default=None, help="feature size (default: Lost Cities')")
    parser.add_argument(
        "--output-size", type=int, default=None, help="output size (default: Lost Cities' action count)"
    )
    parser.add_argument(
        "--batches", default=",".join(map(str, fb.DEFAULT_BATCHES)), help="batch sizes, comma-separated"
    )
    parser.add_argument("--devices", default="cpu,cuda", help="cpu and/or cuda[:N]; cuda is skipped when absent")
    parser.add_argument("--threads", default="1,2", help="CPU intra-op thread counts to measure, comma-separated")
    parser.add_argument("--cuda-dtypes", default="float32,bfloat16", help="forward dtypes on CUDA (CPU is float32)")
    parser.add_argument(
        "--cuda-latency", action="store_true", help="on CUDA also time with a synchronize after every call"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed samples per point (median reported)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="interleaved repetitions of the whole sweep (median reported)"
    )
    parser.add_argument("--min-sample-seconds", type=float, default=0.05, help="length of one timed sample")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = parser.parse_args(argv)

    lc_input, lc_output = lost_cities_sizes()
    input_size = args.input_size or lc_input
    output_size = args.output_size or lc_output
    if input_size is None or output_size is None:
        raise SystemExit("the Lost Cities engine is not available: give --input-size and --output-size")
    if args.shapes is None:
        shapes = ["512x3"]
        cpu_shape = cpu_config_shape()
        if cpu_shape and cpu_shape not in shapes:
            shapes.append(cpu_shape)
    else:
        shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    try:
        parsed_shapes = [(s, fb.parse_shape(s)) for s in shapes]
        cuda_dtypes = [fb.resolve_dtype(d.strip()) for d in args.cuda_dtypes.split(",") if d.strip()]
    except ValueError as e:
        raise SystemExit(str(e)) from None
    batches = parse_int_list(args.batches, "--batches")
    thread_counts = parse_int_list(args.threads, "--threads")
    if args.rounds < 1 or args.repeats < 1:
        raise SystemExit("--rounds and --repeats must be at least 1")
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]

    nets = {}
    for name, (hidden, layers) in parsed_shapes:
        torch.manual_seed(0)
        nets[name] = DeepCFRMLP(input_size, output_size, hidden, layers)

    report: dict = {
        "bench": "forward",
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),  # other processes' load makes CPU figures unreliable
        "input_size": input_size,
        "output_size": output_size,
        "batches": batches,
        "nets": {
            name: {
                "hidden_size": h,
                "num_layers": n,
                "flops_per_state": fb.mlp_flops_per_state(nets[name]),
                "parameters": sum(p.numel() for p in nets[name].parameters()),
            }
            for name, (h, n) in parsed_shapes
        },
        "peaks": [],
        "results": [],
        "skipped": [],
    }
    say = (lambda *a, **k: None) if args.json else print
    say(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
        f"input {input_size}, output {output_size}"
    )
    for name, info in report["nets"].items():
        say(f"net {name}: {info['parameters']} parameters, {info['flops_per_state'] / 1e6:.3f} MFLOP per state")

    for device in devices:
        dev = torch.device(device)
        if dev.type == "cuda" and not fb.cuda_available():
            report["skipped"].append(f"{device}: CUDA not available")
            say(f"\n{device}: skipped (CUDA not available)")
            continue
        if dev.type == "cpu":
            configs = [(t, torch.float32) for t in thread_counts]
            peak_dtypes = [torch.float32]
        else:
            configs = [(max(thread_counts), d) for d in cuda_dtypes]
            peak_dtypes = list(dict.fromkeys(cuda_dtypes + [torch.float32, torch.bfloat16, torch.float16]))
            say(f"\n{torch.cuda.get_device_name(dev)}; fp32 matmul precision: {torch.get_float32_matmul_precision()}")
            report["cuda_device_name"] = torch.cuda.get_device_name(dev)
            report["float32_matmul_precision"] = torch.get_float32_matmul_precision()
        modes = [False, True] if (dev.type == "cuda" and args.cuda_latency) else [False]

        # Rounds interleave the configurations (A/B/A/B...) so that a burst of load from other
        # processes hits them alike; each point reports its median round.
        peak_rounds: dict[tuple[int, str], list[fb.MatmulPeak]] = {}
        rounds: dict[tuple, list[fb.ForwardTiming]] = {}
        for r in range(args.rounds):
            for threads in dict.fromkeys(t for t, _ in configs):
                torch.set_num_threads(threads)
                for dtype in peak_dtypes:
                    peak = fb.matmul_peak(dev, dtype, repeats=args.repeats)
                    peak_rounds.setdefault((threads, fb.dtype_name(dtype)), []).append(peak)
            for threads, dtype in configs:
                torch.set_num_threads(threads)
                for name, net in nets.items():
                    for sync in modes:
                        timings = fb.sweep_forward(
                            net, batches, dev, dtype, None, args.repeats, args.min_sample_seconds, sync_every_call=sync
                        )
                        for t in timings:
                            rounds.setdefault((threads, fb.dtype_name(dtype), name, sync, t.batch), []).append(t)
            if args.rounds > 1:
                say(f"{device}: round {r + 1}/{args.rounds} done")

        peaks: dict[tuple[int, str], float] = {}
        for (threads, dtype_name), found in peak_rounds.items():
            peak = median_by(found, lambda p: p.flop_per_second)
            peaks[(threads, dtype_name)] = peak.flop_per_second
            report["peaks"].append({**peak.as_dict(), "rounds": len(found)})
            say(
                f"\n{device} matmul peak ({dtype_name}, best of sizes: {peak.size}^2, {threads} threads): "
                f"{peak.flop_per_second / 1e9:.1f} GFLOP/s"
            )
        for threads, dtype in configs:
            dname = fb.dtype_name(dtype)
            peak = peaks[(threads, dname)]
            for name in nets:
                for sync in modes:
                    say(f"\n{device} {name} {dname} threads={threads}{' (synchronize every call)' if sync else ''}")
                    say(f"{'batch':>7} {'us/call':>11} {'us/state':>10} {'states/s':>12} {'GFLOP/s':>9} {'% peak':>7}")
                    for batch in batches:
                        found = rounds[(threads, dname, name, sync, batch)]
                        t = median_by(found, lambda x: x.us_per_call)
                        row = {
                            "net": name,
                            **t.as_dict(),
                            "peak_flop_per_second": peak,
                            "peak_fraction": t.flop_per_second / peak,
                            "rounds": len(found),
                            "us_per_call_rounds": [x.us_per_call for x in found],
                        }
                        report["results"].append(row)
                        say(
                            f"{t.batch:>7} {t.us_per_call:>11.1f} {t.us_per_state:>10.3f} {t.states_per_second:>12.0f} "
                            f"{t.flop_per_second / 1e9:>9.1f} {100 * row['peak_fraction']:>6.1f}%"
                        )
    report["loadavg_end"] = list(os.getloadavg())
    say(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        print(json.dumps(report, default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else str(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
