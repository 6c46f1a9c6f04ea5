"""`deepcfr report RUN_DIR`: PNG plots and a Markdown summary from a run's metrics.jsonl."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="write PNG plots and a Markdown summary of a training run",
        description="Plots losses, exploitability or win rates (with 95%% bands), seconds per phase, "
        "memory fill and realized forward batch sizes from RUN_DIR/metrics.jsonl, and writes "
        "summary.md beside them. Works while the run is still going. For live viewing use "
        "`tensorboard --logdir RUN_DIR`.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory holding metrics.jsonl")
    p.add_argument("--out", default=None, help="output folder (default RUN_DIR/report)")
    p.set_defaults(func=run)


def run(args) -> int:
    from deepcfr.report import write_report

    report = write_report(args.run_dir, args.out)
    for w in report.warnings:
        print(f"warning: {w}", file=sys.stderr)
    note = " (last line incomplete: run still writing)" if report.partial_last_line else ""
    print(f"report: {report.iterations} iterations{note}")
    for p in report.plots:
        print(f"  {p}")
    print(f"  {report.summary}")
    return 0
