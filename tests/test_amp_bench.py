"""scripts/bench_amp_trainer.py runs end to end at a toy size (figures at a toy size mean
nothing; this only keeps the script working)."""

import json

from script_helpers import load_script


def load_bench():
    return load_script("bench_amp_trainer")


def test_bench_runs_and_reports_every_mode_and_phase(tmp_path, capsys):
    bench = load_bench()
    out = tmp_path / "report.json"
    assert (
        bench.main(
            [
                "--device",
                "cpu",
                "--shapes",
                "16x1",
                "--modes",
                "fp32,bf16,bf16-cpu",
                "--memory-size",
                "2000",
                "--fill-games",
                "16",
                "--steps",
                "2",
                "--warmup-steps",
                "1",
                "--batch-size",
                "64",
                "--repeats",
                "2",
                "--peak-repeats",
                "1",
                "--throughput-batches",
                "32",
                "--json-out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "1 threads" in printed and "speedup" in printed
    report = json.loads(out.read_text())
    assert report["threads"] == 1 and report["modes"] == ["fp32", "bf16", "bf16-cpu"]
    (result,) = report["results"]
    rows = {(r["mode"], r["phase"]): r for r in result["phases"]}
    assert set(rows) == {(m, p) for m in ("fp32", "bf16", "bf16-cpu") for p in ("advantage", "strategy")}
    assert rows[("bf16", "advantage")]["dtype"] == "float32"  # the CPU fallback
    assert rows[("bf16-cpu", "advantage")]["dtype"] == "bfloat16"
    for row in rows.values():
        assert row["samples_per_second"] > 0 and row["flop_bound_samples_per_second"] > 0
        assert len(row["ms_per_step_rounds"]) == 2
    assert [t["batch_size"] for t in result["throughput"]] == [32]


def test_mode_names():
    bench = load_bench()
    assert bench.mode_settings("fp32") == ("off", False)
    assert bench.mode_settings("compile") == ("off", True)
    assert bench.mode_settings("bf16+compile") == ("bf16", True)
    assert bench.mode_settings("fp16") == ("fp16", False)
