from pathlib import Path

import pytest
import yaml

from deepcfr.train.config import ConfigError, TrainConfig, dump_config, load_config
from deepcfr.train.run import shipped_config_path

ROOT = Path(__file__).resolve().parent.parent
REPO_CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))
PACKAGE_CONFIGS = sorted((ROOT / "src" / "deepcfr" / "configs").rglob("*.yaml"))


@pytest.mark.parametrize("path", REPO_CONFIGS + PACKAGE_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_config_validates(path):
    config = load_config(path)
    assert isinstance(config, TrainConfig)
    # And survives the run directory's round trip (config.yaml).
    assert TrainConfig.model_validate(yaml.safe_load(dump_config(config))) == config


def test_lost_cities_configs_shipped_in_package_and_identical():
    names = {"smoke.yaml", "cpu.yaml", "default.yaml", "default_server.yaml"}
    repo = {p.name for p in (ROOT / "configs" / "lost_cities").glob("*.yaml")}
    assert names <= repo
    for p in PACKAGE_CONFIGS:
        twin = ROOT / "configs" / p.relative_to(ROOT / "src" / "deepcfr" / "configs")
        assert twin.read_text() == p.read_text(), f"{p} differs from {twin}"
    for name in names:
        assert shipped_config_path(f"lost_cities/{name}").read_text() == (ROOT / "configs/lost_cities" / name).read_text()


def test_shipped_config_profiles():
    smoke = load_config(shipped_config_path("lost_cities/smoke.yaml"))
    assert smoke.game.variant == "mini" and smoke.run.device == "cpu"
    cpu = load_config(shipped_config_path("lost_cities/cpu.yaml"))
    assert cpu.game.variant == "classic" and cpu.traversal.algorithm == "critic" and cpu.run.device == "cpu"
    assert {"random", "discard_only", "heuristic_careful"} <= set(cpu.eval.opponents)
    default = load_config(shipped_config_path("lost_cities/default.yaml"))
    assert (default.network.hidden_size, default.network.num_layers) == (512, 3)
    assert default.advantage.batch_size == 1024 and default.run.device == "auto"
    server = load_config(shipped_config_path("lost_cities/default_server.yaml"))
    assert server.traversal.executor == "processes" and server.traversal.inference_backend == "server"
    assert server.network == default.network and server.advantage == default.advantage
    assert server.critic == default.critic and default.traversal.algorithm == "critic"


def test_missing_shipped_config():
    with pytest.raises(ConfigError, match="nope.yaml"):
        shipped_config_path("lost_cities/nope.yaml")


def test_unknown_key_is_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("network:\n  hidden_size: 8\n  hiden_layers: 2\n")
    with pytest.raises(ConfigError, match=r"unknown key 'network\.hiden_layers'") as e:
        load_config(path)
    assert str(path) in str(e.value)
    with pytest.raises(ConfigError, match=r"unknown key 'netwrk'"):
        load_config(None, ["netwrk.hidden_size=3"])


@pytest.mark.parametrize(
    "override, key",
    [
        ("network.hidden_size=0", "network.hidden_size"),
        ("network.activation=swish", "network.activation"),
        ("traversal.epsilon=1.5", "traversal.epsilon"),
        ("run.iterations=many", "run.iterations"),
        ("eval.policies=[average, best]", "eval.policies.1"),
    ],
)
def test_bad_value_names_key(override, key):
    with pytest.raises(ConfigError) as e:
        load_config(None, [override])
    assert key in str(e.value)


def test_cross_field_rule():
    with pytest.raises(ConfigError, match="external"):
        load_config(None, ["game.name=lost_cities", "traversal.algorithm=external"])


def test_set_overrides_and_nested_types(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("run:\n  iterations: 5\nnetwork:\n  hidden_size: 8\n")
    config = load_config(
        path,
        [
            "run.iterations=7",
            "advantage.lr=3e-4",
            "network.layer_norm=true",
            "eval.opponents=[random, heuristic_careful]",
            "game.rules={ply_cap: 50}",
            "advantage.grad_clip=null",
            "run.time_budget_seconds=90",
            "game.variant=mini",
        ],
    )
    assert config.run.iterations == 7 and config.network.hidden_size == 8
    assert config.advantage.lr == 3e-4 and isinstance(config.advantage.lr, float)
    assert config.network.layer_norm is True
    assert config.eval.opponents == ["random", "heuristic_careful"]
    assert config.game.rules == {"ply_cap": 50}
    assert config.advantage.grad_clip is None
    assert config.run.time_budget_seconds == 90.0
    assert config.game.variant == "mini"


@pytest.mark.parametrize("override", ["run.iterations", "=3", "run..iterations=3", "run.iterations.x=3"])
def test_malformed_override(override):
    with pytest.raises(ConfigError):
        load_config(None, [override])


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(listy)
