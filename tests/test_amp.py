"""Mixed precision (run.amp): the CPU fallback, the non-finite-loss guard, loss scaling with the
clip on true gradients, float32 losses, and fp32-vs-AMP parity. The CUDA path also runs on CPU
here with CPU autocast forced on (``MixedPrecision(..., allow_cpu=True)``); the CUDA tests skip
without a GPU."""

import copy
import logging
import math

import pytest
import torch

from deepcfr.train.amp import MixedPrecision, amp_support
from deepcfr.train.fit import advantage_loss, strategy_loss
from deepcfr.train.trainer import Trainer
from train_helpers import tiny_config

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")


def tiny(game="kuhn", *extra):
    return tiny_config(game, *extra)


def weights(trainer):
    return [p.detach().clone() for net in [*trainer.advantage_nets, trainer.strategy_net] for p in net.parameters()]


def same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def small_net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def regression_loss(net, seed=1, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 6, generator=g)
    y = scale * torch.randn(32, 3, generator=g)
    return (net(x).float() - y).square().mean()


# ------------------------------------------------------------------ resolution and the CPU fallback
def test_amp_support_resolves_modes():
    assert amp_support("off", "cpu") == (None, None)
    for mode in ("fp16", "bf16"):
        dtype, notice = amp_support(mode, "cpu")
        assert dtype is None and f"run.amp={mode}" in notice and "float32" in notice
    with pytest.raises(ValueError, match="run.amp"):
        amp_support("fp8", "cpu")
    if CUDA:
        assert amp_support("fp16", "cuda") == (torch.float16, None)


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_cpu_fallback_is_float32_with_one_notice(mode, caplog):
    with caplog.at_level(logging.INFO, logger="deepcfr"):
        trainer = Trainer(tiny("kuhn", f"run.amp={mode}"))
        metrics = [trainer.run_iteration() for _ in range(2)]
    notices = [r for r in caplog.records if f"run.amp={mode}" in r.getMessage()]
    assert len(notices) == 1
    assert not trainer.amp.enabled and trainer.amp.scaler is None
    for m in metrics:
        assert m["amp/grad_scale"] == 1.0
        assert m["amp/nonfinite_loss_count"] == 0
        assert all(math.isfinite(m[k]) for k in ("loss/advantage_p0", "loss/advantage_p1", "loss/strategy"))
    # The same code path as run.amp=off: identical networks.
    plain = Trainer(tiny("kuhn"))
    for _ in range(2):
        plain.run_iteration()
    assert same(weights(trainer), weights(plain))


# ------------------------------------------------------------------ the non-finite-loss guard
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("mode", ["off", "fp16"])
def test_guard_skips_a_nonfinite_loss(mode, fused):
    """Skipped on the device (fused Adam's found_inf; fp16: the scaler), or by the host for an
    optimizer without that support: weights and optimizer state stay as they were."""
    net = small_net()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.1, fused=fused)
    amp = MixedPrecision(mode, "cpu", allow_cpu=True)
    assert bool(amp.step(net.parameters(), optimizer, regression_loss(net), grad_clip=1.0))
    before = copy.deepcopy(net.state_dict())
    state = copy.deepcopy(optimizer.state_dict()["state"])
    for bad in (float("inf"), float("nan")):
        finite = amp.step(net.parameters(), optimizer, regression_loss(net) * bad, grad_clip=1.0)
        assert isinstance(finite, torch.Tensor) and finite.dim() == 0 and not bool(finite)
    after = optimizer.state_dict()["state"]
    assert all(torch.equal(state[0][k], after[0][k]) for k in state[0])  # step count and moments kept
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in before.items())
    assert bool(amp.step(net.parameters(), optimizer, regression_loss(net), grad_clip=1.0))
    assert not torch.equal(before["0.weight"], net.state_dict()["0.weight"])


def test_guard_on_the_device_matches_skipping_the_step():
    """fused Adam with a NaN step in the middle equals the same run without that step, bit for bit."""
    runs = []
    for skip in (False, True):
        net = small_net()
        optimizer = torch.optim.Adam(net.parameters(), lr=0.1, fused=True)
        amp = MixedPrecision("off", "cpu")
        for seed in range(5):
            if seed == 2:
                if skip:
                    continue
                assert not bool(amp.step(net.parameters(), optimizer, regression_loss(net, seed) * math.nan, 1.0))
            else:
                amp.step(net.parameters(), optimizer, regression_loss(net, seed), 1.0)
        runs.append([p.detach().clone() for p in net.parameters()])
    assert same(*runs)


def test_forced_nonfinite_loss_in_training_is_skipped_counted_and_reported(monkeypatch):
    import deepcfr.train.trainer as trainer_module

    trainer = Trainer(tiny("kuhn", "advantage.reinit=false"))
    trainer.run_iteration()
    original = trainer_module.advantage_loss
    # every advantage step overflows
    monkeypatch.setattr(trainer_module, "advantage_loss", lambda *a: original(*a) * float("inf"))
    before = [p.detach().clone() for p in trainer.advantage_nets[0].parameters()]
    adam_steps = trainer.advantage_optimizers[0].state_dict()["state"][0]["step"].clone()
    assert math.isnan(trainer.train_advantage(0))
    steps = trainer.config.advantage.train_steps
    assert trainer.nonfinite_loss_count == steps
    assert same(before, [p.detach() for p in trainer.advantage_nets[0].parameters()])
    assert torch.equal(trainer.advantage_optimizers[0].state_dict()["state"][0]["step"], adam_steps)
    m = trainer.run_iteration()  # both players: 2 * steps more
    assert m["amp/nonfinite_loss_count"] == 3 * steps == m["train/nonfinite_loss_count"]
    assert math.isfinite(m["loss/strategy"])  # the strategy loss was not touched


# ------------------------------------------------------------------ loss scaling
def test_fp16_scaler_unscales_before_clipping():
    """With SGD a clip applied to scaled gradients would shrink the update by the scale; the
    scaled step must equal the plain float32 step (the scale is a power of two: exact)."""
    plain, scaled = small_net(), small_net()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1)
    opt_scaled = torch.optim.SGD(scaled.parameters(), lr=0.1)
    amp_off = MixedPrecision("off", "cpu")
    amp_fp16 = MixedPrecision("fp16", "cpu", allow_cpu=True)
    assert amp_fp16.grad_scale == 65536.0
    for seed in range(3):
        assert bool(
            amp_off.step(plain.parameters(), opt_plain, regression_loss(plain, seed, scale=50.0), grad_clip=0.5)
        )
        assert bool(
            amp_fp16.step(scaled.parameters(), opt_scaled, regression_loss(scaled, seed, scale=50.0), grad_clip=0.5)
        )
    for p, q in zip(plain.parameters(), scaled.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert not torch.equal(small_net()[0].weight, plain[0].weight)


def test_fp16_scaler_skips_overflowing_gradients_and_lowers_the_scale():
    net = small_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    amp = MixedPrecision("fp16", "cpu", allow_cpu=True)
    amp.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**127)  # scaled gradients overflow float32
    before = copy.deepcopy(net.state_dict())
    assert bool(amp.step(net.parameters(), optimizer, regression_loss(net, scale=100.0), grad_clip=1.0))
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in before.items())
    assert amp.grad_scale == 2.0**126


def test_scaler_state_round_trips_through_trainer_state():
    amp = MixedPrecision("fp16", "cpu", allow_cpu=True)
    amp.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    net = small_net()
    amp.step(net.parameters(), torch.optim.SGD(net.parameters(), lr=0.1), regression_loss(net), None)
    restored = MixedPrecision("fp16", "cpu", allow_cpu=True)
    restored.load_state_dict(amp.state_dict())
    assert restored.grad_scale == 1024.0
    MixedPrecision("off", "cpu").load_state_dict(amp.state_dict())  # another mode: ignored
    trainer = Trainer(tiny("kuhn"))
    assert trainer.state_dict()["amp"] == {"mode": "off", "scaler": None}


# ------------------------------------------------------------------ float32 losses
def test_losses_are_float32_for_half_precision_outputs():
    mask = torch.tensor([[True, True, False]])
    weight = torch.ones(1)
    # A regret difference of 1000: 1e6 overflows float16 (max 65504) if squared there.
    outputs = torch.tensor([[1000.0, 0.0, 5.0]], dtype=torch.float16)
    target = torch.zeros(1, 3)
    loss = advantage_loss(outputs, mask, target, weight)
    assert loss.dtype == torch.float32 and loss.item() == pytest.approx(1e6)
    logits = torch.tensor([[30.0, -30.0, 1e4]], dtype=torch.float16)
    policy = torch.tensor([[0.5, 0.5, 0.0]])
    ce = strategy_loss(logits, mask, policy, weight)
    ref = strategy_loss(logits.float(), mask, policy, weight)
    assert ce.dtype == torch.float32 and math.isfinite(ce.item())
    torch.testing.assert_close(ce, ref)


# ------------------------------------------------------------------ fp32 vs AMP parity
def _parity(device: str, modes: list[str], steps: int, allow_cpu: bool, tolerance: float):
    """Train one advantage network and the strategy network ``steps`` updates on the same
    memories from the same initial weights in float32 and in each AMP mode; the final losses
    (mean of the last quarter of the steps) must agree within ``tolerance`` (relative)."""
    base_cfg = [
        f"run.device={device}",
        "network.hidden_size=64",
        f"advantage.train_steps={steps}",
        f"strategy.train_steps={steps}",
        "advantage.batch_size=256",
        "strategy.batch_size=256",
        "memory.advantage_capacity=20000",
        "memory.strategy_capacity=20000",
        "traversal.traversals_per_player=512",
        "traversal.chunk_size=512",
        "advantage.lr=3e-3",
    ]
    source = Trainer(tiny("leduc", *base_cfg, "advantage.train_steps=1", "strategy.train_steps=1"))
    source.run_iteration()
    losses = {}
    for mode in ["off", *modes]:
        trainer = Trainer(tiny("leduc", *base_cfg, f"run.amp={mode}"))
        if allow_cpu:
            trainer.amp = trainer.fitter.amp = MixedPrecision(mode, device, allow_cpu=True)
        assert trainer.amp.enabled == (mode != "off")
        trainer.advantage_memories = source.advantage_memories
        trainer.strategy_memory = source.strategy_memory
        trainer.target_scale = source.target_scale
        trainer.iteration = 1
        losses[mode] = (trainer.train_advantage(0), trainer.train_strategy())
        assert trainer.nonfinite_loss_count == 0
        if mode == "fp16":
            assert trainer.amp.grad_scale >= 1.0
    for mode in modes:
        for got, ref in zip(losses[mode], losses["off"]):
            assert math.isfinite(got)
            assert abs(got - ref) <= tolerance * abs(ref), (mode, losses)
    return losses


def test_amp_parity_with_cpu_autocast_forced():
    # The CUDA code path (autocast, fp16 GradScaler) on CPU; bf16 has 8 mantissa bits.
    _parity("cpu", ["fp16", "bf16"], steps=60, allow_cpu=True, tolerance=0.01)


@pytest.mark.cuda
@needs_cuda
def test_cuda_amp_smoke():
    for mode in ("fp16", "bf16"):
        if mode == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
            continue
        trainer = Trainer(tiny("leduc", "run.device=cuda", f"run.amp={mode}"))
        assert trainer.amp.enabled and (trainer.amp.scaler is not None) == (mode == "fp16")
        for _ in range(2):
            m = trainer.run_iteration()
        assert all(math.isfinite(m[k]) for k in ("loss/advantage_p0", "loss/advantage_p1", "loss/strategy"))
        assert m["amp/nonfinite_loss_count"] == 0
        assert m["amp/grad_scale"] > 1.0 if mode == "fp16" else m["amp/grad_scale"] == 1.0
        assert next(trainer.advantage_nets[0].parameters()).dtype == torch.float32  # master weights


@pytest.mark.cuda
@needs_cuda
def test_cuda_fp32_vs_amp_loss_parity_over_hundreds_of_steps():
    modes = ["fp16"] + (["bf16"] if torch.cuda.is_bf16_supported(including_emulation=False) else [])
    _parity("cuda", modes, steps=300, allow_cpu=False, tolerance=0.05)
