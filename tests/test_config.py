from pathlib import Path

import pytest
import yaml

from deepcfr.improve import ImproveRunConfig
from deepcfr.train.config import (
    ConfigError,
    TrainConfig,
    dump_config,
    load_config,
    read_config_file,
    shipped_config_names,
    shipped_config_path,
    upgrade_saved_config,
)

RETIRED = [  # (section.key=value, the key named in the error): the options issue 13 removed
    ("traversal.batch_size=64", "traversal.batch_size"),
    ("traversal.worker_batch_size=64", "traversal.worker_batch_size"),
    ("traversal.probe_rate=0.1", "traversal.probe_rate"),
    ("traversal.explore=every", "traversal.explore"),
    ("traversal.importance_clip=10", "traversal.importance_clip"),
    ("traversal.warm_start_bot=heuristic_balanced", "traversal.warm_start_bot"),
    ("traversal.warm_start_iterations=3", "traversal.warm_start_iterations"),
    ("game.advice_bot=heuristic_balanced", "game.advice_bot"),
    ("critic.td_lambda=0.9", "critic.td_lambda"),
    ("critic.value_scale=2", "critic.value_scale"),
    ("advantage.target_scale=2", "advantage.target_scale"),
    ("advantage.lr_iteration_decay=0.5", "advantage.lr_iteration_decay"),
    ("advantage.weight_averaging=0.5", "advantage.weight_averaging"),
    ("advantage.lr_final_fraction=0.1", "advantage.lr_final_fraction"),
    ("advantage.discount_alpha=1.5", "advantage.discount_alpha"),
    ("strategy.reinit=true", "strategy.reinit"),
    ("strategy.lr_iteration_decay=0.5", "strategy.lr_iteration_decay"),
    ("strategy.weight_averaging=0.5", "strategy.weight_averaging"),
    ("strategy.lr_final_fraction=0.1", "strategy.lr_final_fraction"),
    ("checkpoint.numbered_memories=true", "checkpoint.numbered_memories"),
]


def schema_of(name: str) -> type[TrainConfig]:
    """The schema of a shipped config: an improvement run's when it has an improve section."""
    return ImproveRunConfig if "improve" in read_config_file(name) else TrainConfig


@pytest.mark.parametrize("name", shipped_config_names())
def test_every_shipped_config_validates(name):
    schema = schema_of(name)
    config = load_config(name, config_class=schema)  # by its short name, from any directory
    assert type(config) is schema
    assert load_config(shipped_config_path(name), config_class=schema) == config
    # And survives the run directory's round trip (config.yaml).
    assert schema.model_validate(yaml.safe_load(dump_config(config))) == config


@pytest.mark.parametrize("name", shipped_config_names())
def test_a_shipped_config_sets_only_what_differs_from_the_defaults(name):
    """The defaults are the measured run (their comments say what was measured): a shipped
    config restates none of them."""
    schema = schema_of(name)
    defaults = schema().model_dump(mode="json")
    resolved = load_config(name, config_class=schema).model_dump(mode="json")
    restated = [
        f"{section}.{key}"
        for section, values in read_config_file(name).items()
        for key in values
        if resolved[section][key] == defaults[section][key]
    ]
    assert not restated, f"{name} restates the defaults of {restated}"


def test_the_train_schema_has_no_improve_section():
    assert "improve" not in TrainConfig.model_fields and "improve" not in dump_config(load_config(None))
    improvement_runs = {"lost_cities/improve.yaml", "lost_cities/grow.yaml"}
    assert all(
        "improve" not in read_config_file(name) for name in shipped_config_names() if name not in improvement_runs
    )


def test_one_config_tree_in_the_package():
    root = Path(__file__).resolve().parent.parent
    assert not (root / "configs").exists()  # no second copy to keep in step
    assert {
        "kuhn/default.yaml",
        "leduc/default.yaml",
        "liars_dice/default.yaml",
        "lost_cities/cpu.yaml",
        "lost_cities/default.yaml",
        "lost_cities/default_server.yaml",
        "lost_cities/smoke.yaml",
        "lost_cities/improve.yaml",
        "lost_cities/grow.yaml",
        "lost_cities/from_champion.yaml",
    } == set(shipped_config_names())


@pytest.mark.parametrize("setting, key", RETIRED)
def test_a_retired_option_is_an_unknown_key(tmp_path, setting, key):
    section, rest = setting.split(".", 1)
    name, value = rest.split("=", 1)
    path = tmp_path / "old.yaml"
    path.write_text(f"{section}:\n  {name}: {value}\n")
    with pytest.raises(ConfigError, match=rf"unknown key '{key}'"):
        load_config(path)


def test_a_saved_config_of_an_older_run_still_loads():
    old = load_config("lost_cities/default_server.yaml").model_dump(mode="json")
    old["traversal"].update(
        batch_size=10000,
        worker_batch_size=1024,
        probe_rate=0.05,
        explore="once",
        importance_clip=None,
        warm_start_bot=None,
        warm_start_iterations=0,
        unsampled_target="zero",
        tail_correction=True,
    )
    del old["traversal"]["chunk_size"]
    old["critic"].update(td_lambda=1.0, value_scale=None)
    old["advantage"].update(lr_iteration_decay=0.0, weight_averaging=0.0, discount_alpha=1.5)
    upgraded = TrainConfig.model_validate(upgrade_saved_config(old))
    assert upgraded == load_config("lost_cities/default_server.yaml")  # the workers' chunk size
    old["critic"]["td_lambda"] = 0.9  # a retired experiment that was on: refused, by name
    with pytest.raises(ValueError, match="critic.td_lambda"):
        TrainConfig.model_validate(upgrade_saved_config(old))


def test_defaults_are_the_recommended_run():
    """What is learned (network, traversal, memories, critic, training) defaults to the shipped
    CPU run; how long it runs, how often it evaluates and whether the average network trains
    during the run as well as at its end (strategy.every) are the run's own choice."""
    defaults, cpu = load_config(None), load_config("lost_cities/cpu.yaml")
    for section in ("game", "network", "memory", "critic", "advantage", "regret_matching", "league"):
        assert getattr(defaults, section) == getattr(cpu, section), section
    assert defaults.strategy.model_copy(update={"every": cpu.strategy.every}) == cpu.strategy
    assert defaults.traversal.options() == cpu.traversal.options()
    for key in ("algorithm", "traversals_per_player", "chunk_size", "opponent", "executor"):
        assert getattr(defaults.traversal, key) == getattr(cpu.traversal, key), key


def test_traversal_options_belong_to_the_algorithm():
    assert load_config(None, ["traversal.algorithm=outcome"]).traversal.options().epsilon == 0.6
    with pytest.raises(ConfigError, match="tail_correction: not an option of critic sampling"):
        load_config(None, ["traversal.tail_correction=false"])
    with pytest.raises(ConfigError, match="epsilon: not an option of external sampling"):
        load_config(
            None, ["game.name=kuhn", "memory.augment=false", "traversal.algorithm=external", "traversal.epsilon=0.5"]
        )


def test_shipped_config_profiles():
    smoke = load_config(shipped_config_path("lost_cities/smoke.yaml"))
    assert smoke.game.variant == "mini" and smoke.run.device == "cpu"
    cpu = load_config(shipped_config_path("lost_cities/cpu.yaml"))
    assert cpu.game.variant == "classic" and cpu.traversal.algorithm == "critic" and cpu.run.device == "cpu"
    assert {"random", "discard_only", "heuristic_careful", "heuristic_balanced"} <= set(cpu.eval.opponents)
    # make train's run: Deep CFR from heuristic_balanced, its sigma_t regularised toward the bot
    assert cpu.init.spec == "heuristic_balanced" and cpu.init.kl_temperature > 0
    # its average network trains once, from scratch, at the end
    assert cpu.strategy.every == 0 and cpu.strategy.final_train_steps > 0
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
        ("network.num_layers=0", "network.num_layers"),
        ("traversal.chunk_size=0", "traversal.chunk_size"),
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
            "network.num_layers=3",
            "eval.opponents=[random, heuristic_careful]",
            "game.rules={ply_cap: 50}",
            "advantage.grad_clip=null",
            "run.time_budget_seconds=90",
            "game.variant=mini",
        ],
    )
    assert config.run.iterations == 7 and config.network.hidden_size == 8
    assert config.advantage.lr == 3e-4 and isinstance(config.advantage.lr, float)
    assert config.network.num_layers == 3
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
