import pytest
import torch
from torch import nn

from deepcfr.cfr.networks import DeepCFRMLP, build_network, masked_log_softmax, masked_softmax
from deepcfr.train.config import NetworkConfig


def test_mlp_shapes_and_layers():
    net = DeepCFRMLP(10, 4, hidden_size=16, num_layers=3)
    out = net(torch.randn(7, 10))
    assert out.shape == (7, 4)
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 4  # 3 hidden + head
    assert linears[-1] is net.head and net.head.out_features == 4
    assert not any(isinstance(m, nn.LayerNorm) for m in net.modules())


def test_retired_network_options_load_at_their_only_value_and_are_refused_otherwise():
    from deepcfr.train.config import ConfigError, config_from_dict, upgrade_saved_config

    saved = {"network": {"hidden_size": 8, "activation": "relu", "layer_norm": False}, "improve": {"play": "chosen"}}
    assert config_from_dict(upgrade_saved_config(saved)).network.hidden_size == 8
    with pytest.raises(ConfigError, match="network.layer_norm"):
        config_from_dict(upgrade_saved_config({"network": {"layer_norm": True}}))


@pytest.mark.parametrize(
    "kwargs, name",
    [({"hidden_size": 0}, "hidden_size"), ({"num_layers": 0}, "num_layers"), ({"input_size": 0}, "input_size")],
)
def test_bad_arguments_name_the_parameter(kwargs, name):
    args = {"input_size": 4, "output_size": 2, "hidden_size": 8, "num_layers": 1} | kwargs
    with pytest.raises(ValueError, match=name):
        DeepCFRMLP(**args)


def test_build_network_from_config():
    net = build_network(NetworkConfig(hidden_size=32, num_layers=1), 6, 9)
    assert net.shape_dict() == {"input_size": 6, "output_size": 9, "hidden_size": 32, "num_layers": 1}
    assert build_network({"hidden_size": 4, "num_layers": 2}, 3, 2)(torch.zeros(1, 3)).shape == (1, 2)


def test_masked_softmax_exact_zeros_and_sums():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 12, generator=g) * 30
    mask = torch.rand(64, 12, generator=g) < 0.4
    mask[:, 0] = True
    logits[mask.logical_not() & (torch.rand(64, 12, generator=g) < 0.3)] = float("inf")  # illegal junk
    logits[~mask & (torch.rand(64, 12, generator=g) < 0.3)] = float("nan")
    probs = masked_softmax(logits, mask)
    assert probs.dtype == torch.float32
    assert torch.all(probs[~mask] == 0)
    assert torch.all(probs[mask] >= 0)
    torch.testing.assert_close(probs.sum(1), torch.ones(64))
    logp = masked_log_softmax(logits, mask)
    assert torch.all(torch.isneginf(logp[~mask]))
    torch.testing.assert_close(logp[mask].exp(), probs[mask])


def test_masked_softmax_fp32_from_half_inputs():
    logits = torch.tensor([[1000.0, 0.0, -3.0]], dtype=torch.bfloat16)
    mask = torch.tensor([[False, True, True]])
    probs = masked_softmax(logits, mask)
    assert probs.dtype == torch.float32
    assert probs[0, 0] == 0
    torch.testing.assert_close(probs[0, 1:], torch.softmax(torch.tensor([0.0, -3.0]), 0))


def test_single_legal_action_gets_probability_one():
    probs = masked_softmax(torch.randn(3, 5), torch.eye(5, dtype=torch.bool)[:3])
    assert torch.equal(probs, torch.eye(5)[:3])
