"""How `make train` degrades on a shared CPU: iterations of the shipped lost_cities/cpu.yaml with
each thread setting, alone and beside one other CPU-bound process, side by side in one run.

    python scripts/bench_shared_cpu.py                       # 1 and 2 threads, 2 with a passive OpenMP wait, auto
    python scripts/bench_shared_cpu.py --iterations 6 --settings 1,auto

Prints, per setting, the median seconds of an iteration (the first, which allocates the
memories, left out) quiet and loaded, and their ratio. The competing process is a pure-Python
busy loop (one core), as a second job on a laptop would be.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = {  # name -> (run.threads, extra environment)
    "1": ("1", {}),
    "2": ("2", {}),
    "2-passive": ("2", {"OMP_WAIT_POLICY": "PASSIVE"}),
    "auto": ("auto", {}),
}


def iteration_seconds(threads: str, env: dict, iterations: int, work: Path) -> tuple[list[float], list]:
    run_dir = Path(tempfile.mkdtemp(dir=work))
    command = [
        sys.executable,
        "-m",
        "deepcfr.cli.main",
        "train",
        "--config",
        "lost_cities/cpu.yaml",
        "--run-dir",
        str(run_dir / "run"),
        "--json",
    ]
    for override in (
        f"run.iterations={iterations}",
        f"run.threads={threads}",
        "run.time_budget_seconds=null",
        "eval.every=0",
        "strategy.final_train_steps=0",
        "checkpoint.every=0",
        f"checkpoint.latest_every={iterations}",
    ):
        command += ["--set", override]
    subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, check=True, capture_output=True)
    records = [json.loads(line) for line in (run_dir / "run" / "metrics.jsonl").read_text().splitlines()]
    return (
        [r["time/iteration_seconds"] for r in records if "time/iteration_seconds" in r],
        [r.get("run/threads") for r in records if "time/iteration_seconds" in r],
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=5, help="iterations per run (the first is left out)")
    p.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    names = [n.strip() for n in args.settings.split(",") if n.strip()]
    for name in names:
        if name not in SETTINGS:
            raise SystemExit(f"unknown setting {name!r}; valid: {', '.join(SETTINGS)}")
    out = {}
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            threads, env = SETTINGS[name]
            row = {}
            for load in ("quiet", "loaded"):
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "loaded" else None
                try:
                    seconds, used = iteration_seconds(threads, env, args.iterations, Path(work))
                finally:
                    if hog is not None:
                        hog.kill()
                        hog.wait()
                row[load] = statistics.median(seconds[1:])
                row[f"{load}_iterations"] = [round(s, 1) for s in seconds]
                if threads == "auto":
                    row[f"{load}_threads"] = used
            row["ratio"] = row["loaded"] / row["quiet"]
            out[name] = row
            if not args.json:
                print(
                    f"{name:>10}: quiet {row['quiet']:6.1f}s  loaded {row['loaded']:6.1f}s  ratio {row['ratio']:4.2f}"
                    f"  (iterations quiet {row['quiet_iterations']}, loaded {row['loaded_iterations']}"
                    + (f"; threads {row['quiet_threads']} / {row['loaded_threads']}" if threads == "auto" else "")
                    + ")",
                    flush=True,
                )
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
