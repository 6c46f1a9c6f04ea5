"""Advice features (a bot's recommended action appended to the network features), warm-started
traversal policies (a bot as sigma_t for the first iterations) and probe sampling in the trainer."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from deepcfr.games.advice import AdvisedGame
from deepcfr.games.base import sample_from_probs
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.layout import legal_mask_from_obs
from deepcfr.games.registry import make_game
from deepcfr.train.config import ConfigError, load_config
from deepcfr.train.run import Run
from deepcfr.train.trainer import Trainer, load_agent

from test_trainer_lost_cities import mini


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), variant=st.sampled_from(["classic", "mini"]))
def test_legal_mask_from_the_observation_equals_the_engines(seed, variant):
    game = make_game("lost_cities", variant=variant)
    gen = torch.Generator().manual_seed(seed)
    state = game.init(64, generator=gen)
    checked = 0
    while not bool(game.is_terminal(state).all()):
        live = ~game.is_terminal(state)
        obs = game.observe(state, game.current_player(state).clamp(0, 1))
        mask = game.legal_mask(state)
        assert torch.equal(legal_mask_from_obs(game.rules, obs)[live], mask[live])
        checked += int(live.sum())
        state = game.step(state, sample_from_probs(mask.float() / mask.sum(1, keepdim=True).clamp(min=1), gen))
    assert checked > 64


def test_advised_encoding_appends_the_bots_action():
    plain = make_game("lost_cities")
    game = make_game("lost_cities", advice_bot="heuristic_balanced")
    assert isinstance(game, AdvisedGame)
    assert game.feature_size == plain.feature_size + plain.num_actions
    assert (game.num_actions, game.obs_size, game.name) == (plain.num_actions, plain.obs_size + 1, plain.name)
    state = game.init(32, generator=torch.Generator().manual_seed(3))
    obs, mask = game.observe(state, 0), game.legal_mask(state)
    plain_obs = plain.observe(state, 0)
    assert obs.shape == (32, game.obs_size) and obs.dtype == plain_obs.dtype
    assert torch.equal(obs[:, : plain.obs_size], plain_obs)
    assert torch.equal(game.obs_player(obs), plain.obs_player(plain_obs))
    features = game.encode(obs)
    assert torch.equal(features[:, : plain.feature_size], plain.encode(plain_obs))
    bot_actions = make_bot(plain, "heuristic_balanced").act(plain_obs, mask)
    assert torch.equal(obs[:, -1].long(), bot_actions)
    advice = features[:, plain.feature_size:]
    assert torch.equal(advice.sum(dim=1), torch.ones(32))
    assert torch.equal(advice.argmax(dim=1), bot_actions)
    assert game.config_dict()["advice_bot"] == "heuristic_balanced"
    # the advised game's own bot of that name reads the column instead of running again
    reader = make_bot(game, "heuristic_balanced")
    assert torch.equal(reader.act(obs, mask), bot_actions)
    assert torch.equal(make_bot(game, "heuristic_careful").act(obs, mask),
                       make_bot(plain, "heuristic_careful").act(plain_obs, mask))


def test_bad_advice_settings_are_named():
    with pytest.raises(ValueError, match="unknown bot 'nobody'"):
        make_game("lost_cities", advice_bot="nobody")
    with pytest.raises(ValueError, match="advice_bot"):
        make_game("leduc", advice_bot="random")
    with pytest.raises((ConfigError, ValueError), match="nobody"):
        Trainer(mini("traversal.warm_start_bot=nobody", "traversal.warm_start_iterations=1"))


def test_warm_start_plays_the_bot_for_its_iterations_then_sigma():
    config = mini("run.iterations=3", "traversal.warm_start_bot=heuristic_careful",
                  "traversal.warm_start_iterations=2", "eval.every=0")
    trainer = Trainer(config)
    bot = make_bot(trainer.game, "heuristic_careful")
    seen = []
    original = trainer.add_strategy_samples

    def spy(samples):
        seen.append((trainer.iteration, samples))
        original(samples)

    trainer.add_strategy_samples = spy
    for _ in range(3):
        trainer.run_iteration()
    for iteration, samples in seen:
        obs, mask, policy = samples["obs"], samples["mask"], samples["policy"]
        bot_policy = torch.nn.functional.one_hot(bot.act(obs, mask), trainer.game.num_actions).float()
        if iteration <= 2:
            assert torch.equal(policy, bot_policy), iteration  # sigma_t is the bot
        else:
            assert not torch.equal(policy, bot_policy)  # regret matching on the advantage nets
    assert {it for it, _ in seen} == {1, 2, 3}


def test_probe_sampling_and_advice_in_a_run_checkpoint_and_reload(tmp_path):
    config = mini("run.iterations=2", "traversal.algorithm=probe", "traversal.probe_rate=0.2",
                  "traversal.epsilon=0.2", "game.advice_bot=heuristic_careful", "eval.every=2",
                  "traversal.warm_start_bot=heuristic_careful", "traversal.warm_start_iterations=1")
    with Run(tmp_path / "run", config, console=False) as run:
        trainer = Trainer(config, run)
        metrics = trainer.train()
    assert trainer.iteration == 2
    agent = load_agent(tmp_path / "run" / "checkpoints" / "latest.pt")
    assert isinstance(agent.game, AdvisedGame) and agent.game.advice_bot == "heuristic_careful"
    state = agent.game.init(5, torch.Generator().manual_seed(1))
    obs, mask = agent.game.observe(state, 0), agent.game.legal_mask(state)
    for kind in ("average", "current"):
        probs = agent.policy(kind)(obs, mask)
        assert (probs[~mask] == 0).all() and torch.allclose(probs.sum(dim=1), torch.ones(5))
