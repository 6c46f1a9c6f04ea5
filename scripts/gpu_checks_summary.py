#!/usr/bin/env python
"""The last step of ``scripts/gpu_checks.sh``: gathers every step's status and figures into
``OUT/summary.json`` and writes the main figures as Markdown tables to ``OUT/tables.md``.

    python scripts/gpu_checks_summary.py WORK_DIR OUT_DIR DRY_RUN(0|1) TOTAL_SECONDS

Standard library only (it must run whatever else is missing). Exit status 0 when every step
passed (or was skipped with a reason that is not a failure: a bench that does not exist yet;
a dry run's CUDA tests, which skip on the CPU), 1 otherwise.
"""

from __future__ import annotations

import json
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TRAIN_KEYS = (
    "loss/advantage_p0",
    "loss/advantage_p1",
    "loss/strategy",
    "loss/critic_p0",
    "loss/critic_p1",
    "traversal/decisions_per_second",
    "traversal/avg_batch",
    "traversal/advantage_samples",
    "time/traversal_seconds",
    "time/critic_train_seconds",
    "time/advantage_train_seconds",
    "time/strategy_train_seconds",
    "time/eval_seconds",
    "time/checkpoint_seconds",
    "time/iteration_seconds",
)


def finite(value):
    """JSON without NaN/Infinity (strict parsers refuse them): non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def last_json(path: Path):
    """The last line of ``path`` that is a JSON object (a step's one JSON report), else None."""
    if not path.exists():
        return None
    for line in reversed(path.read_text(errors="replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def read_steps(work: Path) -> list[dict]:
    steps = []
    for line in (work / "steps.tsv").read_text().splitlines():
        name, status, rc, seconds, limit, note = (line.split("\t") + [""] * 6)[:6]
        steps.append(
            {
                "name": name,
                "status": status,
                "rc": None if rc == "-" else int(rc),
                "seconds": int(seconds),
                "limit_seconds": int(limit),
                "note": note,
            }
        )
    return steps


def cuda_tests(work: Path) -> dict | None:
    path = work / "cuda_tests.xml"
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    out = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "failed": [], "skipped_reasons": {}}
    for suite in root.iter("testsuite"):
        for key in ("tests", "failures", "errors", "skipped"):
            out[key] += int(suite.get(key, 0))
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        for bad in (*case.findall("failure"), *case.findall("error")):
            out["failed"].append({"test": name, "message": (bad.get("message") or "").splitlines()[:1]})
        for skip in case.findall("skipped"):
            reason = skip.get("message") or ""
            out["skipped_reasons"][reason] = out["skipped_reasons"].get(reason, 0) + 1
    out["passed"] = out["tests"] - out["failures"] - out["errors"] - out["skipped"]
    return out


def training(run: Path) -> dict | None:
    """The figures of the training run in ``run`` (the train/resume steps' run, the warm start's)."""
    metrics = run / "metrics.jsonl"
    if not metrics.exists():
        return None
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    iterations = {}
    final = {}
    for row in rows:
        if "loss/strategy_final" in row:
            final[row["iteration"]] = {
                k: row[k] for k in ("loss/strategy_final", "time/strategy_final_seconds") if k in row
            }
            continue
        evals = {k: v for k, v in row.items() if k.startswith("eval/")}
        iterations[row["iteration"]] = {**{k: row[k] for k in TRAIN_KEYS if k in row}, **evals}
    log = (run / "train.log").read_text(errors="replace") if (run / "train.log").exists() else ""
    checkpoints = sorted((run / "checkpoints").glob("*.pt")) if (run / "checkpoints").exists() else []
    return {
        "iterations": iterations,
        "final_strategy_fits": final,
        "resumed": "resumed from iteration" in log,
        "checkpoint_bytes": {p.name: p.stat().st_size for p in checkpoints},
        "notices": [line for line in log.splitlines() if "WARNING" in line or "notice" in line.lower()][:20],
    }


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return lines + [""]


def tables(summary: dict) -> str:
    env = summary["steps"].get("env", {}).get("figures") or {}
    out = [
        f"# GPU checks ({'dry run on the CPU' if summary['dry_run'] else 'CUDA'}): "
        f"{env.get('device', '?')}, torch {env.get('torch', '?')}, {summary['total_seconds']} s",
        "",
    ]
    limit = "limit" if summary.get("limits_enforced", True) else "GPU limit (not enforced)"
    out += table(
        ["step", "status", "seconds", limit, "note"],
        [[s["name"], s["status"], s["seconds"], s["limit_seconds"], s["note"]] for s in summary["steps"].values()],
    )
    tests = summary["steps"].get("cuda_tests", {}).get("figures")
    if tests:
        out += ["## CUDA tests", ""]
        out += table(
            ["tests", "passed", "failed", "errors", "skipped"],
            [[tests["tests"], tests["passed"], tests["failures"], tests["errors"], tests["skipped"]]],
        )
        out += [f"- FAILED {f['test']}: {' '.join(f['message'])}" for f in tests["failed"]] + [""]
    train = summary["steps"].get("resume", {}).get("figures") or summary["steps"].get("train", {}).get("figures")
    if train:
        out += ["## Lost Cities training run (then resumed)", ""]
        rows = [
            [
                it,
                m.get("traversal/decisions_per_second"),
                m.get("traversal/avg_batch"),
                m.get("loss/advantage_p0"),
                m.get("loss/strategy"),
                m.get("time/traversal_seconds"),
                m.get("time/critic_train_seconds"),
                m.get("time/advantage_train_seconds"),
                m.get("time/iteration_seconds"),
            ]
            for it, m in sorted(train["iterations"].items(), key=lambda kv: int(kv[0]))
        ]
        out += table(
            [
                "iteration",
                "decisions/s",
                "avg batch",
                "loss adv p0",
                "loss strategy",
                "traversal s",
                "critic s",
                "advantage s",
                "iteration s",
            ],
            rows,
        )
    for name in ("amp", "compile"):
        report = summary["steps"].get(name, {}).get("figures")
        if not report:
            continue
        out += [f"## Training step ({name})", ""]
        rows = [
            [
                p["net"],
                p["phase"],
                p["mode"],
                p.get("ms_per_step_p50"),
                p.get("speedup_vs_first"),
                p.get("samples_per_second"),
                p.get("bound_fraction"),
            ]
            for r in report.get("results", [])
            for p in r.get("phases", [])
        ]
        out += table(["net", "phase", "mode", "ms/step", "speedup", "samples/s", "of FLOP bound"], rows)
    server = summary["steps"].get("server", {}).get("figures")
    if server:
        out += ["## Inference server against the local backend", ""]
        med = server.get("medians", {})
        out += table(
            ["backend", "iteration s", "traversal s", "rows/call (worker)", "rows/forward (server)"],
            [
                [
                    b,
                    med.get(b, {}).get("iteration"),
                    med.get(b, {}).get("traversal"),
                    med.get(b, {}).get("worker_rows"),
                    med.get(b, {}).get("server_rows"),
                ]
                for b in ("local", "server")
            ],
        )
        out += [f"server vs local traversal time: {fmt(server.get('traversal_speedup_server_vs_local'))}x", ""]
    forward = summary["steps"].get("forward", {}).get("figures")
    if forward:
        out += ["## Forward pass", ""]
        rows = [
            [
                r["net"],
                r["device"],
                r["dtype"],
                r["batch"],
                r.get("us_per_call"),
                r.get("us_per_state"),
                r.get("states_per_second"),
                r.get("peak_fraction"),
                r.get("sync_every_call"),
            ]
            for r in forward.get("results", [])
        ]
        out += table(["net", "device", "dtype", "batch", "us/call", "us/state", "states/s", "of peak", "synced"], rows)
    trav = summary["steps"].get("traversal", {}).get("figures")
    if trav:
        out += ["## Traversal against the forward bound", ""]
        out += table(
            ["config", "network", "device", "decisions/s", "avg forward batch", "bound states/s", "of bound"],
            [
                [
                    Path(str(trav.get("config"))).name,
                    trav.get("network"),
                    trav.get("device"),
                    trav.get("decisions_per_second"),
                    trav.get("avg_forward_batch"),
                    trav.get("forward_bound_states_per_second"),
                    trav.get("fraction_of_bound"),
                ]
            ],
        )
    search = summary["steps"].get("search", {}).get("figures")
    if search:
        out += ["## Search", "", "```", json.dumps(search, indent=1)[:3000], "```", ""]
    rollouts = {
        dtype: summary["steps"].get(f"search_network_rollouts_{dtype}", {}).get("figures")
        for dtype in ("float32", "bfloat16")
    }
    if any(rollouts.values()):
        out += [
            "## Search with the network in the rollouts",
            "",
            "| forward dtype | rollout decisions/s | s per decision | forward bound states/s |",
            "|---|---|---|---|",
        ]
        for dtype, figures in rollouts.items():
            if figures:
                out.append(
                    f"| {dtype} | {figures.get('rollout_decisions_per_second', 0):.0f} | "
                    f"{figures.get('seconds_per_decision', 0):.4f} | "
                    f"{figures.get('forward_bound_states_per_second', 0):.0f} |"
                )
        out.append("")
    teacher = summary["steps"].get("teacher", {}).get("figures")
    if teacher:
        out += ["## The growing teacher over the champion", ""]
        out += table(
            ["decisions", "positions/s", "rollout decisions/s", "rollout dtype", "device"],
            [
                [
                    teacher.get("decisions"),
                    teacher.get("positions_per_second"),
                    teacher.get("rollout_decisions_per_second"),
                    teacher.get("rollout_dtype_used"),
                    teacher.get("device"),
                ]
            ],
        )
    match = summary["steps"].get("search_eval", {}).get("figures")
    if match:
        out += ["## Search agent against its network", ""]
        out += table(
            ["games", "win rate", "mean diff", "ci95", "s/move", "rollout decisions/s", "capped rollouts"],
            [
                [
                    match.get("games"),
                    match.get("win_rate"),
                    match.get("mean_score_diff"),
                    match.get("score_diff_ci95"),
                    match.get("a_seconds_per_move"),
                    match.get("a_rollout_decisions_per_second"),
                    match.get("a_capped_rollouts"),
                ]
            ],
        )
    luck = summary["steps"].get("luck", {}).get("figures")
    if luck:
        out += ["## Luck-corrected match", ""]
        out += table(
            ["games", "plain diff", "ci95", "corrected diff", "ci95", "variance ratio", "correction s"],
            [
                [
                    luck.get("games"),
                    luck.get("mean_score_diff"),
                    luck.get("score_diff_ci95"),
                    luck.get("corrected_score_diff"),
                    luck.get("corrected_ci95"),
                    luck.get("variance_ratio"),
                    luck.get("correction_seconds"),
                ]
            ],
        )
    exploit = summary["steps"].get("exploit", {}).get("figures")
    if exploit:
        out += ["## Search exploiter", ""]
        out += table(
            [
                "target",
                "base",
                "games",
                "exploiter mean",
                "ci95",
                "corrected",
                "ci95",
                "ESS fraction",
                "fallbacks",
                "decisions",
                "seconds",
            ],
            [
                [
                    exploit.get("target"),
                    exploit.get("base"),
                    exploit.get("games"),
                    exploit.get("exploiter_mean"),
                    exploit.get("exploiter_ci95"),
                    exploit.get("exploiter_corrected_score_diff"),
                    exploit.get("exploiter_corrected_ci95"),
                    exploit.get("ess_mean_fraction"),
                    exploit.get("belief_fallbacks"),
                    exploit.get("searched_decisions"),
                    exploit.get("seconds"),
                ]
            ],
        )
    warm = summary["steps"].get("warm_start", {}).get("figures")
    if warm:
        out += ["## Deep CFR from the champion (one iteration after the warm start)", ""]
        out += table(
            ["iteration", "figure", "value"],
            [
                [it, k, v]
                for it, row in warm["iterations"].items()
                for k, v in row.items()
                if isinstance(v, (int, float))
            ],
        )
    improve = summary["steps"].get("improve", {}).get("figures")
    if improve:
        out += ["## Expert iteration round", ""]
        out += table(["figure", "value"], [[k, v] for k, v in improve.items() if isinstance(v, (int, float))])
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    work, out, dry, total = Path(argv[0]), Path(argv[1]), argv[2] == "1", int(argv[3])
    steps = {s["name"]: s for s in read_steps(work)}
    for name, s in steps.items():
        figures = None
        if name == "cuda_tests":
            figures = cuda_tests(work)
        elif name in ("train", "resume"):
            figures = training(work / "run")
        elif name == "warm_start":
            figures = training(work / "warm")
        elif (work / f"{name}.json").exists():
            figures = json.loads((work / f"{name}.json").read_text())
        else:
            figures = last_json(work / f"{name}.out")
        s["figures"] = figures
    problems = []
    for name, s in steps.items():
        if s["status"] in ("failed", "timeout"):
            problems.append(f"{name}: {s['status']} (rc={s['rc']})")
        elif s["status"] == "skipped" and "does not exist yet" not in s["note"]:
            problems.append(f"{name}: skipped ({s['note']})")
    tests = steps.get("cuda_tests", {}).get("figures")
    if tests and not dry and tests["skipped"]:
        problems.append(f"cuda_tests: {tests['skipped']} skipped on the GPU: {tests['skipped_reasons']}")
    resume = steps.get("resume", {})
    if resume.get("status") == "ok" and not (resume.get("figures") or {}).get("resumed"):
        problems.append("resume: the run did not report resuming from its checkpoint")
    # the dry run checks that every step ran and reported, not how fast: it enforces no step's limit
    summary = {
        "dry_run": dry,
        "limits_enforced": not dry,
        "total_seconds": total,
        "ok": not problems,
        "problems": problems,
        "steps": steps,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(finite(summary), indent=1, allow_nan=False) + "\n")
    (out / "tables.md").write_text(tables(summary) + "\n")
    print(
        f"gpu_checks: {'all steps passed' if not problems else 'PROBLEMS: ' + '; '.join(problems)} "
        f"({total} s); {out}/summary.json, tables.md, gpu_checks.log"
    )
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
