"""scripts/gpu_checks.sh --dry-run: every step of the GPU check script on the CPU with tiny
settings, so that the script cannot rot between the rare runs on a GPU machine."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_checks_dry_run_passes_every_step(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    # a hang guard, not a speed limit: the dry run checks that every step ran and reported, however
    # slow the machine (a busy two-core CI took 94 s for a step whose GPU limit is 90 s)
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_checks.sh"), "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert files == ["gpu_checks.log", "summary.json", "tables.md"]  # at most 8 come back from a GPU run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] and summary["dry_run"] and not summary["problems"]
    assert summary["limits_enforced"] is False  # the GPU limits are reported, not enforced
    steps = summary["steps"]
    expected = [
        "env",
        "cuda_tests",
        "train",
        "resume",
        "amp",
        "server",
        "forward",
        "traversal",
        "search",
        "search_network_rollouts_float32",
        "search_network_rollouts_bfloat16",
        "teacher",
        "search_eval",
        "luck",
        "exploit",
        "warm_start",
        "improve",
        "compile",
    ]
    assert list(steps) == expected
    for name in expected:  # every step ran to its end and reported its figures; how fast is not checked
        assert steps[name]["status"] == "ok" and steps[name]["rc"] == 0, steps[name]
        assert steps[name]["figures"], (name, steps[name])
        assert f"== {name} (GPU limit " in proc.stdout  # it started, its GPU limit named but not enforced
    assert steps["env"]["figures"]["checks_device"] == "cpu"
    tests = steps["cuda_tests"]["figures"]
    assert tests["tests"] >= 10 and tests["skipped"] == tests["tests"]  # no CUDA here: all skip cleanly
    trained = steps["resume"]["figures"]
    assert sorted(trained["iterations"], key=int) == ["1", "2", "3"] and trained["resumed"]
    assert all(m["traversal/decisions_per_second"] > 0 for m in trained["iterations"].values())
    assert "latest.pt" in trained["checkpoint_bytes"]
    assert {p["mode"] for r in steps["amp"]["figures"]["results"] for p in r["phases"]} == {"fp32", "fp16", "bf16"}
    assert steps["server"]["figures"]["traversal_speedup_server_vs_local"] > 0
    assert [r["batch"] for r in steps["forward"]["figures"]["results"]] == [1, 64]
    assert steps["traversal"]["figures"]["decisions_per_second"] > 0
    assert steps["search"]["figures"]["rollout_decisions_per_second"] > 0
    for dtype in ("float32", "bfloat16"):
        figures = steps[f"search_network_rollouts_{dtype}"]["figures"]
        assert figures["rollout_decisions_per_second"] > 0 and figures["search_rollout_dtype"] == dtype
    match = steps["search_eval"]["figures"]
    assert match["games"] == 4 and match["a_searched_decisions"] > 0
    luck = steps["luck"]["figures"]
    assert luck["games"] == 4 and luck["corrected_ci95"] >= 0 and luck["correction_seconds"] > 0
    exploit = steps["exploit"]["figures"]
    assert exploit["games"] == 4 and exploit["searched_decisions"] > 0 and exploit["exploiter_ci95"] >= 0
    warm = steps["warm_start"]["figures"]
    assert list(warm["iterations"]) == ["1"] and any(k.startswith("eval/random") for k in warm["iterations"]["1"])
    teacher = steps["teacher"]["figures"]
    assert (
        teacher["positions_per_second"] > 0 and teacher["player"] == "search[candidates=3,rollout_policy=base]:champion"
    )
    improved = steps["improve"]["figures"]
    assert (
        improved["rounds"] == 1 and improved["selfplay/positions"] > 0 and improved["selfplay/positions_per_second"] > 0
    )
    assert 0 <= improved["eval/heuristic_balanced/greedy/win_rate"] <= 1
    tables = (out / "tables.md").read_text()
    for heading in (
        "## CUDA tests",
        "## Lost Cities training run",
        "## Training step (amp)",
        "## Forward pass",
        "## Traversal against the forward bound",
        "## Inference server",
        "## Search agent against its network",
        "## Search with the network in the rollouts",
        "## The growing teacher over the champion",
        "## Luck-corrected match",
        "## Search exploiter",
        "## Deep CFR from the champion (one iteration after the warm start)",
        "## Expert iteration round",
    ):
        assert heading in tables
    assert not list(tmp_path.glob("gpu_checks.*"))  # its work folder is removed


def test_gpu_checks_refuses_unknown_arguments():
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_checks.sh"), "--fast"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "unknown argument '--fast'" in proc.stderr and "--dry-run" in proc.stderr


FAKE_PYTHON = """#!/usr/bin/env bash
# stands in for every step's Python (the summary excepted): each step reports at once, one sleeps
case "$1" in
  scripts/gpu_checks_summary.py) exec "$REAL_PYTHON" "$@" ;;
  -) cat > /dev/null; exit 0 ;;  # the module check: nothing is missing
  -m) [ "$2" = deepcfr.cli.main ] && [ "$3" = bench ] && [ "$4" = traversal ] && sleep "$SLOW_STEP_SECONDS" ;;
esac
echo '{"fake": true}'
"""


def _fake_dry_run(tmp_path, **env_extra):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "PYTHON": str(fake),
        "REAL_PYTHON": sys.executable,
        "TMPDIR": str(tmp_path),
        "SLOW_STEP_SECONDS": "0",
        **env_extra,
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_checks.sh"), "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, json.loads((out / "summary.json").read_text())


def test_gpu_checks_dry_run_enforces_no_budget(tmp_path):
    """With no time left in the budget, a GPU run skips every step; the dry run still runs them all
    (it checks the steps, not the speed, so a slow shared machine cannot fail it)."""
    proc, summary = _fake_dry_run(tmp_path, GPU_CHECKS_BUDGET="0")
    assert summary["dry_run"] and summary["limits_enforced"] is False
    steps = summary["steps"]
    assert len(steps) == 18
    assert all(s["status"] == "ok" and s["rc"] == 0 for s in steps.values()), steps
    assert all(s["limit_seconds"] > 0 for s in steps.values())  # the GPU limits are still reported
    assert "no time left" not in proc.stdout
    assert "GPU limit (not enforced)" in (tmp_path / "out" / "tables.md").read_text()


def test_gpu_checks_dry_run_only_guards_against_hangs(tmp_path):
    """The one wall-clock bound of the dry run is its hang guard (GPU_CHECKS_DRY_HANG): a step past it
    is reported as timed out, every other step still runs and reports."""
    proc, summary = _fake_dry_run(tmp_path, GPU_CHECKS_DRY_HANG="1", SLOW_STEP_SECONDS="5")
    steps = summary["steps"]
    assert steps["traversal"]["status"] == "timeout" and steps["traversal"]["rc"] == 124
    assert proc.returncode == 1 and summary["problems"]
    assert all(s["status"] == "ok" for name, s in steps.items() if name != "traversal"), steps
    assert "hang guard 1s" in proc.stdout
