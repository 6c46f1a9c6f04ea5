"""Expert iteration (deepcfr improve): targets, gating, kill-and-resume, the CLI's checkpoint, and
(slow) a short mini-variant run that makes the network stronger than its start."""

import copy
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.checkpoints import load_checkpoint
from deepcfr.cli.main import main
from deepcfr.evaluate.arena import play_match
from deepcfr.improve import (
    Improver,
    ImproveRunConfig,
    PositionMemory,
    Positions,
    improve_config,
    improved_target,
    one_sided_p,
    retargeted,
)
from deepcfr.improve.labelling import teaches_over_learner
from deepcfr.players import load_player
from deepcfr.train.config import ConfigError
from deepcfr.train.run import Run
from search_helpers import tiny_checkpoint

TINY = [  # a round of a few mini games with a cheap teacher
    "improve.teacher=search[determinizations=3,candidates=3]:learner",
    "improve.games_per_round=8",
    "improve.batch_games=8",
    "improve.train_steps=15",
    "improve.batch_size=32",
    "improve.gate_games=8",
    "improve.eval_games=0",
    "run.threads=1",
]


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    torch.set_num_threads(1)
    return tiny_checkpoint(tmp_path_factory.mktemp("improve") / "mini.pt")


# Targets ---------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 10**6), st.floats(0.1, 50.0), st.booleans())
def test_improved_target_is_a_distribution_over_the_valid_candidates_only(n, k, seed, temperature, with_prior):
    gen = torch.Generator().manual_seed(seed)
    candidates = torch.randint(0, 40, (n, k), generator=gen)
    unused = torch.rand(n, k, generator=gen) < 0.4
    unused[:, 0] = False  # the base move is always a candidate
    candidates = candidates.masked_fill(unused, -1)
    values = (torch.randn(n, k, generator=gen) * 30).masked_fill(unused, float("nan"))  # as SearchDecision.mean
    prior = torch.rand(n, k, generator=gen) if with_prior else None
    target = improved_target(candidates, values, prior, temperature)
    assert torch.isfinite(target).all() and (target >= 0).all()
    assert torch.all(target[unused] == 0)
    assert torch.allclose(target.sum(dim=1), torch.ones(n), atol=1e-5)
    if prior is None:  # uniform prior: a higher value never gets a lower target
        for i in range(n):
            valid = ~unused[i]
            order = values[i][valid].argsort()
            assert torch.all(target[i][valid][order].diff() >= -1e-6)


def test_searched_positions_target_legal_actions_only(mini_checkpoint):
    config = improve_config(str(mini_checkpoint), overrides=TINY)
    improver = Improver(config)
    positions, metrics = improver.self_play(1)
    assert metrics["selfplay/positions"] == len(positions) > 0
    assert positions.obs.dtype == torch.uint8 and positions.target.dtype == torch.float16
    valid = positions.candidates >= 0
    assert bool((valid.sum(dim=1) > 1).all())  # forced moves are not recorded
    legal = positions.mask.gather(1, positions.candidates.long().clamp(min=0))
    assert bool(legal[valid].all())  # every candidate is legal where it was searched
    assert torch.all(positions.target.float()[~valid] == 0)
    assert torch.allclose(positions.target.float().sum(dim=1), torch.ones(len(positions)), atol=2e-3)


def test_a_bot_teachers_target_is_its_searchs_choice(mini_checkpoint):
    overrides = [x for x in TINY if not x.startswith("improve.teacher=")]
    config = improve_config(
        str(mini_checkpoint),
        overrides=[*overrides, "improve.teacher=search[determinizations=3,candidates=3]:heuristic_balanced"],
    )
    positions, _ = Improver(config).self_play(1)
    target = positions.target.float()
    assert len(positions) > 0
    assert torch.all((target == 0) | (target == 1)) and torch.all(target.sum(dim=1) == 1)  # one-hot
    assert bool((positions.candidates.long()[target == 1] >= 0).all())  # on a candidate


def test_a_teacher_with_a_belief_is_given_each_games_action_history(mini_checkpoint):
    """A Lost Cities observation does not hold the history: self-play keeps it for a teacher (and an
    opponent) whose belief weighs the other player's past moves."""
    overrides = [x for x in TINY if not x.startswith("improve.teacher=")]
    config = improve_config(
        str(mini_checkpoint),
        overrides=[
            *overrides,
            "improve.teacher=search[determinizations=3,candidates=3,belief=base,belief_particles=2]:learner",
            "improve.opponents=[self, heuristic_careful]",
        ],
    )
    positions, metrics = Improver(config).self_play(1)
    assert metrics["selfplay/positions"] == len(positions) > 0
    legal = positions.mask.gather(1, positions.candidates.long().clamp(min=0))
    assert bool(legal[positions.candidates >= 0].all())


def test_a_round_reports_held_out_fit_and_the_greedy_network(mini_checkpoint):
    config = improve_config(
        str(mini_checkpoint),
        overrides=[*TINY, "improve.holdout=0.25", "improve.eval_games=4", "improve.eval_opponents=[random]"],
    )
    improver = Improver(config)
    metrics = improver.run_round()
    held = int(metrics["selfplay/positions"] * 0.25)
    assert held > 0 and metrics["train/heldout_loss"] > 0 and 0 <= metrics["train/heldout_agreement"] <= 1
    for kind in ("sampled", "greedy"):  # the network sampled and playing its argmax ("average" is CFR's)
        assert 0 <= metrics[f"eval/random/{kind}/win_rate"] <= 1
    assert not any("/average/" in k for k in metrics)


def test_a_teacher_list_names_the_teacher_of_each_round(mini_checkpoint):
    bot, learner = "search[determinizations=3,candidates=3]:heuristic_balanced", "search[determinizations=3]:learner"
    config = improve_config(str(mini_checkpoint), overrides=[*TINY, f'improve.teacher=["{bot}", "{learner}"]'])
    assert [config.improve.teacher_of(r) for r in (1, 2, 3)] == [bot, learner, learner]
    improver = Improver(config)
    for r, teacher in ((1, bot), (2, learner), (5, learner)):
        chunks, networks = improver.label_chunks(r)
        assert {c.teacher for c in chunks} == {teacher}
        assert ("learner" in networks) == (teacher == learner)  # a bot teacher needs no network
    with pytest.raises(ValueError, match="must be a search spec"):
        Improver(improve_config(str(mini_checkpoint), overrides=[*TINY, f'improve.teacher=["{bot}", "random"]']))
    with pytest.raises(ConfigError, match="improve.teacher"):
        improve_config(str(mini_checkpoint), overrides=["improve.teacher=[]"])


def test_position_memory_keeps_the_last_rounds_and_round_trips():
    memory = PositionMemory(keep_rounds=2)
    for r in (1, 2, 3):
        obs = torch.full((r, 4), r, dtype=torch.uint8)
        cand = torch.tensor([[0, 1]] * r)
        memory.add_round(
            r, Positions.make(obs, torch.ones(r, 3, dtype=torch.bool), cand, torch.zeros(r, 2), torch.full((r, 2), 0.5))
        )
    assert [r for r, _ in memory.rounds] == [2, 3] and len(memory) == 5
    copy_ = PositionMemory(1)
    copy_.load_state_dict(memory.state_dict())
    assert torch.equal(copy_.all().obs, memory.all().obs) and copy_.keep_rounds == 2


def test_rounds_taught_with_different_candidate_counts_train_together(mini_checkpoint):
    """A round taught over fewer candidates after one over more (a new teacher, or an earlier
    run's positions): the memory pads the narrower round with unused slots, which change no loss."""
    from deepcfr.improve.distil import distillation_loss

    improver = Improver(improve_config(str(mini_checkpoint), overrides=TINY))
    wide, _ = improver.self_play(1)
    keep = (wide.candidates[:, :2] >= 0).all(dim=1)
    wide = wide[keep.nonzero().squeeze(1)]
    narrow = Positions.make(
        wide.obs,
        wide.mask,
        wide.candidates[:, :2],
        wide.values[:, :2].float(),
        torch.softmax(torch.randn(len(wide), 2), 1),
    )
    assert wide.candidates.shape[1] > 2
    memory = PositionMemory(keep_rounds=2)
    memory.add_round(1, wide)
    memory.add_round(2, narrow)
    both = memory.all()
    n, k = len(wide), wide.candidates.shape[1]
    assert both.candidates.shape == (2 * n, k)
    extra = both[n:]
    assert (
        (extra.candidates[:, 2:] == -1).all() and (extra.target[:, 2:] == 0).all() and (extra.values[:, 2:] == 0).all()
    )
    assert torch.equal(extra.candidates[:, :2], narrow.candidates)
    net, game = improver.current, improver.game
    assert torch.allclose(distillation_loss(net, game, extra)[0], distillation_loss(net, game, narrow)[0])
    with pytest.raises(ValueError, match="narrow"):
        both.widened(2)


# Gating ----------------------------------------------------------------------------------------
def _wager_happy(game, net):
    """A deliberately weakened network: opens expeditions with wagers and discards the rest."""
    net = copy.deepcopy(net)
    with torch.no_grad():
        net.head.weight.zero_()
        for a in range(game.num_actions):
            name = game.action_name(a)
            net.head.bias[a] = (
                8.0
                if name.startswith("play") and name.endswith("wager")
                else 4.0
                if name.startswith("discard")
                else 0.0
            )
    return net


def test_gating_keeps_the_old_network_against_a_weakened_candidate_and_takes_a_better_one(mini_checkpoint):
    config = improve_config(str(mini_checkpoint), overrides=[*TINY, "improve.gate_games=100"])
    improver = Improver(config)
    start = improver.current
    weak = _wager_happy(improver.game, start)
    accepted, figures = improver.gate(weak, round_index=1)
    assert not accepted and figures["gate/accepted"] == 0
    assert figures["gate/mean_score_diff"] < 0 and figures["gate/p_value"] > 0.5
    improver.current = weak
    accepted, figures = improver.gate(start, round_index=1)
    assert accepted and figures["gate/p_value"] < config.improve.gate_alpha


def test_one_sided_p_value():
    assert one_sided_p(1.96, 1.96) == pytest.approx(0.025, abs=1e-3)  # z = 1.96 standard errors above 0
    assert one_sided_p(-1.0, 1.96) == pytest.approx(0.841, abs=1e-3)
    assert one_sided_p(0.0, 0.0) == 0.5 and one_sided_p(1.0, 0.0) == 0.0


# Resume ----------------------------------------------------------------------------------------
def _comparable(records):
    return [{k: v for k, v in r.items() if "second" not in k and not k.startswith("time/")} for r in records]


def test_a_kill_during_a_round_resumes_to_the_uninterrupted_result(mini_checkpoint, tmp_path):
    overrides = [
        *TINY,
        "improve.rounds=2",
        "improve.games_per_round=8",
        "improve.batch_games=4",
        "improve.init=fine_tune",
        "improve.gate_games=0",
    ]
    config = improve_config(str(mini_checkpoint), overrides=overrides)
    with Run(tmp_path / "whole", config, console=False) as run:
        whole = Improver(config, run=run)
        whole.improve()
        whole_metrics = run.read_metrics()

    class Killed(Exception):
        pass

    def kill(round_index, batch):
        if round_index == 2 and batch == 0:
            raise Killed

    with pytest.raises(Killed):
        with Run(tmp_path / "killed", config, console=False) as run:
            first = Improver(config, run=run)
            first.batch_listeners.append(kill)
            first.improve()
    with Run.open(tmp_path / "killed", console=False, config_class=ImproveRunConfig) as run:
        resumed = Improver(run.config, run=run)
        assert resumed.round == 1
        resumed.improve()
        resumed_metrics = run.read_metrics()
    assert resumed.round == whole.round == 2
    for a, b in zip(whole.current.state_dict().values(), resumed.current.state_dict().values()):
        assert torch.equal(a, b)
    assert torch.equal(whole.memory.all().target, resumed.memory.all().target)
    assert _comparable(whole_metrics) == _comparable(resumed_metrics)
    assert [r["iteration"] for r in resumed_metrics] == [0, 1, 2]


# CLI and checkpoint ----------------------------------------------------------------------------
def test_cli_improve_writes_a_checkpoint_every_player_spec_loads(mini_checkpoint, tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = [
        "improve",
        "--checkpoint",
        str(mini_checkpoint),
        "--run-dir",
        str(run_dir),
        "--rounds",
        "1",
        "--json",
        *[
            x
            for item in [
                *TINY,
                "improve.eval_games=4",
                "improve.eval_opponents=[random]",
                "improve.eval_search=search:learner",
            ]
            for x in ("--set", item)
        ],
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    # progress on stderr (--json keeps stdout to the one object): batches, the round, the evaluations
    assert "round 1: self-play batch 1/1 done" in captured.err
    assert "round 1/1" in captured.err and "ETA" in captured.err
    assert "vs random" in captured.err and "search" in captured.err
    # no silent phase: round 0's and round 1's evaluations count their matches with an ETA
    assert "round 0: evaluation (sampled vs random next), matches 0/3" in captured.err
    assert "round 1: evaluation, matches 3/3" in captured.err
    assert "round 1: gate (8 greedy games), matches 1/1" in captured.err
    assert "latest.pt@greedy --b heuristic_balanced" in captured.err  # how an improved network is meant to play
    assert "play it in a browser:    deepcfr serve --checkpoint" in captured.err  # the page seats Lost Cities
    assert summary["rounds"] == 1 and summary["checkpoint"].endswith("latest.pt")
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1]
    assert "eval/random/sampled/win_rate" in records[0] and records[1]["selfplay/positions"] > 0
    assert summary["eval/random/sampled/win_rate"] == records[1]["eval/random/sampled/win_rate"]
    assert 0 <= records[1]["eval/random/search/win_rate"] <= 1
    assert (run_dir / "reports" / "round_001.json").is_file()
    network = load_player(summary["checkpoint"])
    searched = load_player(f"search[determinizations=2,candidates=2]:{summary['checkpoint']}")
    result = play_match(network.game, network, searched, 4, seed=0)
    assert result.games == 4
    # resuming a finished run with more rounds continues it
    assert main(["improve", "--resume", str(run_dir), "--rounds", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rounds"] == 2


def test_a_run_from_an_earlier_runs_network_trains_on_its_positions_too(mini_checkpoint, tmp_path, capsys):
    # rounds run as separate runs (each from the last one's network) keep training on the last
    # keep_rounds rounds, as one resumed run does
    first = tmp_path / "first"
    sets = [x for item in [*TINY, "improve.gate_games=0"] for x in ("--set", item)]
    assert (
        main(
            ["improve", "--checkpoint", str(mini_checkpoint), "--run-dir", str(first), "--rounds", "1", "--json", *sets]
        )
        == 0
    )
    capsys.readouterr()
    first_ck = first / "checkpoints" / "latest.pt"
    earlier = load_checkpoint(first_ck)["memories"]["rounds"]
    earlier_positions = sum(len(r["obs"]) for r in earlier)
    assert earlier_positions > 0
    second = tmp_path / "second"
    assert (
        main(
            [
                "improve",
                "--checkpoint",
                str(first_ck),
                "--positions-from",
                str(first_ck),
                "--run-dir",
                str(second),
                "--rounds",
                "1",
                "--json",
                *sets,
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    record = json.loads((second / "metrics.jsonl").read_text().splitlines()[-1])
    assert record["train/positions"] == earlier_positions + record["selfplay/positions"]
    assert improve_config(summary["checkpoint"]).improve.positions_from == []  # a run's start is not inherited
    kept = load_checkpoint(summary["checkpoint"])["memories"]["rounds"]
    assert torch.equal(kept[0]["target"], earlier[0]["target"])  # same temperature: the stored targets themselves
    # colder targets are remade from the stored ones; keep_rounds still bounds the memory
    config = improve_config(
        str(first_ck),
        overrides=[
            *TINY,
            "improve.temperature=1",
            "improve.keep_rounds=1",
            f"improve.positions_from=[{first_ck}, {first_ck}]",
        ],
    )
    with Improver(config) as improver:
        assert len(improver.memory.rounds) == 1 and len(improver.memory) == earlier_positions
        stored = Positions.from_state_dict({k: v for k, v in earlier[0].items() if k != "round"})
        assert torch.equal(improver.memory.all().target, retargeted(stored, 5.0, 1.0).target)
        assert not torch.equal(improver.memory.all().target, stored.target)
    # what cannot be used is refused, naming the setting and the file
    with pytest.raises(ValueError, match=r"improve.positions_from: .*first.*colder"):
        Improver(
            improve_config(
                str(first_ck), overrides=[*TINY, "improve.temperature=50", f"improve.positions_from=[{first_ck}]"]
            )
        )
    with pytest.raises(ValueError, match=r"improve.positions_from: .*mini.pt holds a Deep CFR run"):
        Improver(improve_config(str(first_ck), overrides=[*TINY, f"improve.positions_from=[{mini_checkpoint}]"]))
    with pytest.raises(ValueError, match=r"improve.positions_from: .*not found"):
        Improver(improve_config(str(first_ck), overrides=[*TINY, f"improve.positions_from=[{tmp_path / 'none.pt'}]"]))
    assert main(["improve", "--resume", str(second), "--positions-from", str(first_ck)]) != 0
    assert "drop --checkpoint/--config/--run-dir/--positions-from" in capsys.readouterr().err


def test_the_shipped_improve_config_lays_over_a_checkpoints_config(mini_checkpoint):
    config = improve_config(str(mini_checkpoint), "lost_cities/improve.yaml")
    assert config.game.variant == "mini"  # the game and network stay the checkpoint's
    assert config.improve.teacher_of(1).endswith(":heuristic_balanced") and config.run.time_budget_seconds == 7200
    improver = Improver(config)  # every teacher in it is a search spec
    assert improver.cfg.executor == "processes"


def test_the_growing_recipe_starts_from_the_champion_and_searches_over_the_learner():
    """lost_cities/grow.yaml over `--checkpoint champion`: the shipped network's game and network,
    a teacher with the learner in its own rollouts, and the champion among the evaluation
    opponents (the fixed reference)."""
    from deepcfr.players.shipped import champion_file

    config = improve_config("champion", "lost_cities/grow.yaml")
    assert config.improve.checkpoint == str(champion_file())
    assert config.game.variant == "classic" and config.network.hidden_size == 256
    teacher = config.improve.teacher_of(1)
    assert teaches_over_learner(teacher) and "rollout_policy=base" in teacher
    assert "champion@greedy" in config.improve.eval_opponents and config.improve.gate_games == 10000
    improver = Improver(config)
    assert improver.current is not None and improver.game.name == "lost_cities"


def test_improve_owns_its_config_section(mini_checkpoint, tmp_path):
    """deepcfr train's schema has no improve section; an improvement run's config is
    ImproveRunConfig, which its run directory, its checkpoint and the saved configs reload as."""
    from deepcfr.train.agent import load_agent
    from deepcfr.train.config import SharedConfig, TrainConfig, config_from_dict, load_config, upgrade_saved_config

    assert "improve" not in TrainConfig.model_fields and "improve" not in load_config(None).model_dump()
    with pytest.raises(ConfigError, match="unknown key 'improve'"):
        load_config(None, ["improve.rounds=2"])
    config = improve_config(str(mini_checkpoint), overrides=[*TINY, "improve.rounds=1", "improve.gate_games=0"])
    assert isinstance(config, ImproveRunConfig) and config.improve.checkpoint == str(mini_checkpoint)
    with Run(tmp_path / "run", config, console=False) as run:
        Improver(config, run=run).improve()
    with Run.open(tmp_path / "run", ["improve.rounds=2"], console=False, config_class=ImproveRunConfig) as run:
        assert run.config.improve.rounds == 2 and run.config.improve.teacher == config.improve.teacher
    latest = tmp_path / "run" / "checkpoints" / "latest.pt"
    agent = load_agent(latest)  # not a Deep CFR run's: the shared sections, its improve section dropped
    assert type(agent.config) is SharedConfig and agent.config.network == config.network
    assert load_agent(latest, config_class=ImproveRunConfig).config.improve == config.improve
    # an older train checkpoint's config held improve at its defaults (improve.play included)
    old = {
        **TrainConfig().model_dump(mode="json"),
        "improve": {**ImproveRunConfig().improve.model_dump(mode="json"), "play": "chosen"},
    }
    assert config_from_dict(upgrade_saved_config(old)) == TrainConfig()
    assert (
        config_from_dict(upgrade_saved_config(old, ImproveRunConfig), config_class=ImproveRunConfig)
        == ImproveRunConfig()
    )
    old["improve"]["play"] = "target"  # a retired value that changed what was played: refused, by name
    with pytest.raises(ConfigError, match="improve.play"):
        config_from_dict(upgrade_saved_config(old, ImproveRunConfig), config_class=ImproveRunConfig)
    # improve.gain_weight (retired 2026-12-06): the runs saved with it at 0 load; a weighted one is refused
    old["improve"].update(play="chosen", gain_weight=0.0)
    assert (
        config_from_dict(upgrade_saved_config(old, ImproveRunConfig), config_class=ImproveRunConfig)
        == ImproveRunConfig()
    )
    old["improve"]["gain_weight"] = 1.0
    with pytest.raises(ConfigError, match="improve.gain_weight"):
        config_from_dict(upgrade_saved_config(old, ImproveRunConfig), config_class=ImproveRunConfig)


def test_an_improvement_runs_config_holds_no_training_field(mini_checkpoint):
    """ImproveRunConfig is the shared sections and improve: nothing the Deep CFR training reads, not
    even in the shared sections (run.iterations); a train checkpoint's config gives it its game and
    network, its training fields dropped; a training field set by hand is an unknown key."""
    from deepcfr.train.config import SharedConfig, TrainConfig

    assert set(ImproveRunConfig.model_fields) == {*SharedConfig.model_fields, "improve"}
    assert not {"traversal", "memory", "advantage", "strategy", "eval", "league"} & set(ImproveRunConfig.model_fields)
    dumped = improve_config(str(mini_checkpoint)).model_dump()
    assert "iterations" not in dumped["run"] and "save_memories" not in dumped["checkpoint"]
    assert set(TrainConfig().model_dump()["run"]) - set(dumped["run"]) == {"iterations", "amp", "compile"}
    assert dumped["game"]["variant"] == "mini" and dumped["network"]["hidden_size"] == 8
    for key, unknown in (("run.iterations=3", "run.iterations"), ("traversal.chunk_size=4", "traversal")):
        with pytest.raises(ConfigError, match=f"unknown key '{unknown}'"):
            improve_config(str(mini_checkpoint), overrides=[key])


def test_bad_improve_settings_are_clear_errors(mini_checkpoint):
    with pytest.raises(ConfigError, match="unknown key 'improve.round'"):
        improve_config(str(mini_checkpoint), overrides=["improve.round=3"])
    with pytest.raises(ConfigError, match="improve.gate_games"):
        improve_config(str(mini_checkpoint), overrides=["improve.gate_games=3"])
    with pytest.raises(ValueError, match="must be a search spec"):
        Improver(improve_config(str(mini_checkpoint), overrides=["improve.teacher=heuristic_balanced"]))


# Strength (slow) -------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_short_mini_improvement_makes_the_network_stronger_than_its_start(mini_checkpoint):
    config = improve_config(
        str(mini_checkpoint),
        overrides=[
            "improve.teacher=search[determinizations=6,candidates=3]:learner",
            "improve.rounds=2",
            "improve.temperature=2.0",
            "improve.games_per_round=48",
            "improve.batch_games=48",
            "improve.train_steps=300",
            "improve.batch_size=128",
            "improve.gate_games=0",
            "improve.eval_games=0",
            "run.threads=1",
        ],
    )
    improver = Improver(config)
    start = improver.network_player(improver.current, "start")
    improver.improve()
    improved = improver.network_player(improver.current, "improved")
    result = play_match(improver.game, improved, start, 400, seed=123)
    # measured: +6.9 +- 1.1 points a game, 74.6% wins (start: a random-weight network)
    assert result.mean_score_diff - result.score_diff_ci95 > 3.0, result


def test_a_bot_teacher_needs_no_start_network_and_gives_what_a_checkpoint_start_gives(
    mini_checkpoint, tmp_path, capsys
):
    """Self-play with a bot teacher on both seats never consults the start network and the
    student starts fresh: with and without a Deep CFR checkpoint, the same positions and network."""
    bot_round = [
        *TINY[1:],
        "improve.teacher=search[determinizations=3,candidates=3]:heuristic_balanced",
        "improve.gate_games=0",
        "improve.rounds=1",
    ]
    own = ["game.variant=mini", "game.rules.ply_cap=400", "network.hidden_size=8"]  # the checkpoint's game and network
    runs = {}
    for name, args in (("start", ["--checkpoint", str(mini_checkpoint)]), ("none", [f"--set={x}" for x in own])):
        run_dir = tmp_path / name
        assert main(["improve", *args, "--run-dir", str(run_dir), *[f"--set={x}" for x in bot_round]]) == 0
        runs[name] = load_checkpoint(str(run_dir / "checkpoints" / "latest.pt"), map_location="cpu")
    assert (
        "no start network: round 1's teacher search[determinizations=3,candidates=3]:heuristic_balanced plays"
        in capsys.readouterr().out
    )
    a, b = runs["start"], runs["none"]
    (ra,), (rb,) = a["memories"]["rounds"], b["memories"]["rounds"]
    assert len(ra["target"]) > 0 and all(torch.equal(ra[k], rb[k]) for k in ("obs", "mask", "candidates", "target"))
    for x, y in zip(a["strategy_net"].values(), b["strategy_net"].values()):
        assert torch.equal(x, y)
    # the checkpoint-free network plays like any improved one; it has no current policy
    assert load_player(str(tmp_path / "none" / "checkpoints" / "latest.pt") + "@greedy").greedy
    with pytest.raises(ValueError, match="no current policy"):
        load_player(str(tmp_path / "none" / "checkpoints" / "latest.pt") + "@current")
    # a teacher over the learner needs a network to search over
    assert (
        main(
            [
                "improve",
                "--run-dir",
                str(tmp_path / "bad"),
                *[f"--set={x}" for x in own],
                "--set",
                "improve.teacher=search:learner",
            ]
        )
        == 2
    )
    assert "needs a start network" in capsys.readouterr().err


# What a round keeps ----------------------------------------------------------------------------
def test_a_self_play_rounds_targets_are_the_improved_target_at_the_configured_temperature(mini_checkpoint, monkeypatch):
    """Each stored target is improved_target of the teacher's decision (its candidates, values
    and the network's prior) at improve.temperature, not at another temperature."""
    from deepcfr.players import SearchPlayer

    decisions, act = [], SearchPlayer.act

    def recording_act(self, obs, mask, generator=None):
        actions = act(self, obs, mask, generator)
        decisions.append(self.last_decision)
        return actions

    monkeypatch.setattr(SearchPlayer, "act", recording_act)
    config = improve_config(str(mini_checkpoint), overrides=[*TINY, "improve.temperature=2.0"])
    positions, _ = Improver(config).self_play(1)
    expected = []
    for d in decisions:
        assert d.prior is not None  # a teacher over the network: the prior is the network's
        keep = (d.candidates >= 0).sum(dim=1) > 1
        expected.append(improved_target(d.candidates, d.mean, d.prior, 2.0)[keep])
    expected = torch.cat(expected)
    assert len(positions) == len(expected) > 0
    assert torch.allclose(positions.target.float(), expected.to(torch.float16).float(), atol=1e-3)
    assert not torch.allclose(
        expected,
        torch.cat(
            [improved_target(d.candidates, d.mean, d.prior, 5.0)[(d.candidates >= 0).sum(dim=1) > 1] for d in decisions]
        ),
        atol=1e-2,
    )  # the temperature matters here


def test_a_run_without_a_start_network_keeps_keep_rounds_rounds_of_positions():
    """A bot teacher and no start network: the Improver's memory holds the last improve.keep_rounds
    rounds, as a run from a checkpoint does."""
    config = improve_config(
        None,
        overrides=[
            "game.variant=mini",
            "game.rules.ply_cap=400",
            "network.hidden_size=8",
            "run.threads=1",
            "improve.teacher=search[determinizations=2,candidates=2]:heuristic_balanced",
            "improve.games_per_round=2",
            "improve.batch_games=2",
            "improve.train_steps=1",
            "improve.batch_size=8",
            "improve.gate_games=0",
            "improve.eval_games=0",
            "improve.value_fn=none",
            "improve.keep_rounds=2",
        ],
    )
    improver = Improver(config)
    assert improver.current is None
    for _ in range(3):
        improver.run_round()
    assert improver.memory.keep_rounds == 2 and [r for r, _ in improver.memory.rounds] == [2, 3]
    assert len(improver.memory) == sum(len(p) for _, p in improver.memory.rounds) > 0
