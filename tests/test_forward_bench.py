"""deepcfr.bench.forward: the measurement functions return sane, consistent figures (no timed assertions)."""

import math

import pytest
import torch

from deepcfr.bench import forward as fb
from deepcfr.cfr.networks import DeepCFRMLP

FAST = dict(repeats=2, min_sample_seconds=0.0)


def tiny_net() -> DeepCFRMLP:
    torch.manual_seed(0)
    return DeepCFRMLP(input_size=10, output_size=4, hidden_size=8, num_layers=2)


def check_timing(t: fb.ForwardTiming, batch: int, device: str, net: DeepCFRMLP) -> None:
    assert t.batch == batch
    assert t.device.startswith(device)
    assert t.threads >= 1
    for name in ("us_per_call", "us_per_state", "states_per_second", "flop_per_second"):
        value = getattr(t, name)
        assert math.isfinite(value) and value > 0, name
    assert t.us_per_state == pytest.approx(t.us_per_call / batch)
    assert t.states_per_second == pytest.approx(1e6 / t.us_per_state)
    assert t.flops_per_state == fb.mlp_flops_per_state(net) == 2 * (10 * 8 + 8 * 8 + 8 * 4)
    assert t.flop_per_second == pytest.approx(t.flops_per_state * t.states_per_second)
    assert t.calls_per_sample >= 1 and t.repeats == FAST["repeats"]
    assert set(t.as_dict()) >= {"us_per_call", "us_per_state", "states_per_second", "flop_per_second", "peak_fraction"}


def test_sweep_forward_cpu_fields_and_consistency():
    net = tiny_net()
    peak = fb.matmul_peak("cpu", size=64, **FAST)
    assert peak.flop_per_second > 0 and peak.seconds_per_matmul > 0 and peak.size == 64
    assert peak.flop_per_second == pytest.approx(2 * 64**3 / peak.seconds_per_matmul)
    results = fb.sweep_forward(net, [1, 8], "cpu", peak_flop_per_second=peak.flop_per_second, **FAST)
    assert [r.batch for r in results] == [1, 8]
    for r, batch in zip(results, [1, 8]):
        check_timing(r, batch, "cpu", net)
        assert r.dtype == "float32"
        assert r.peak_fraction == pytest.approx(r.flop_per_second / peak.flop_per_second)


def test_time_forward_without_peak_and_leaves_net_alone():
    net = tiny_net().train()
    before = [p.clone() for p in net.parameters()]
    t = fb.time_forward(net, 3, "cpu", **FAST)
    check_timing(t, 3, "cpu", net)
    assert t.peak_fraction is None and t.peak_flop_per_second is None
    assert net.training  # mode restored
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))


def test_forward_bound_states_per_second_positive():
    assert fb.forward_bound_states_per_second(tiny_net(), 4, "cpu", repeats=1, min_sample_seconds=0.0) > 0


def test_bad_arguments_name_the_parameter():
    net = tiny_net()
    with pytest.raises(ValueError, match="batch"):
        fb.time_forward(net, 0, "cpu")
    with pytest.raises(ValueError, match="repeats"):
        fb.time_forward(net, 1, "cpu", repeats=0)
    with pytest.raises(ValueError, match="dtype"):
        fb.time_forward(net, 1, "cpu", dtype="float8")
    with pytest.raises(ValueError, match="HIDDENxLAYERS"):
        fb.parse_shape("512-3")
    assert fb.parse_shape("512x3") == (512, 3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            fb.time_forward(net, 1, "cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_sweep_forward_cuda():
    net = tiny_net()
    for dtype in ("float32", "bfloat16"):
        peak = fb.matmul_peak("cuda", dtype, size=256, **FAST)
        assert peak.flop_per_second > 0
        results = fb.sweep_forward(net, [1, 8], "cuda", dtype, peak.flop_per_second, **FAST)
        for r, batch in zip(results, [1, 8]):
            check_timing(r, batch, "cuda", net)
            assert r.dtype == dtype
    synced = fb.time_forward(net, 8, "cuda", sync_every_call=True, **FAST)
    check_timing(synced, 8, "cuda", net)
    assert next(net.parameters()).device.type == "cpu"  # the caller's net is not moved
