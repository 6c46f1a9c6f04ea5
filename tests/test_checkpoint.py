import os
from pathlib import Path

import pytest
import torch

from deepcfr import checkpoints as ckpt
from deepcfr.checkpoints import CheckpointError, expected_meta, load_checkpoint, make_meta, save_checkpoint
from deepcfr.train.config import load_config


@pytest.fixture
def config():
    return load_config(
        None, ["game.name=kuhn", "memory.augment=false", "traversal.algorithm=external", "network.hidden_size=16"]
    )


def _payload(config, iteration=3, value=1.0):
    return {"meta": make_meta(config, iteration), "weights": torch.full((4,), value), "extra": {"rng": [1, 2]}}


def test_round_trip_and_meta(tmp_path, config):
    path = save_checkpoint(tmp_path / "sub" / "c.pt", _payload(config))
    loaded = load_checkpoint(path, expected_meta(config))
    meta = loaded["meta"]
    assert meta["format_version"] == ckpt.FORMAT_VERSION
    assert meta["game"] == "kuhn" and meta["iteration"] == 3 and meta["created"]
    assert meta["network"]["hidden_size"] == 16 and meta["network"]["output_size"] == 2
    assert isinstance(meta["game_version"], int) and isinstance(meta["game_config"], dict)
    assert torch.equal(loaded["weights"], torch.ones(4))
    assert [p.name for p in path.parent.iterdir()] == ["c.pt"]  # no temp files left


def test_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="not found") as e:
        load_checkpoint(tmp_path / "nope.pt")
    assert "nope.pt" in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_file_names_path(tmp_path, config, damage):
    path = save_checkpoint(tmp_path / "c.pt", _payload(config))
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a checkpoint at all" * 10)
    else:
        path.write_bytes(b"")
    with pytest.raises(CheckpointError, match="corrupt" if damage == "truncate" else "is not a checkpoint") as e:
        load_checkpoint(path)
    assert str(path) in str(e.value)
    assert "not a checkpoint at all" not in str(e.value)  # nothing of what the file holds is quoted


def test_wrong_format(tmp_path, config):
    path = tmp_path / "plain.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError, match="not a deepcfr checkpoint"):
        load_checkpoint(path)
    payload = _payload(config)
    payload["meta"]["format_version"] = 999
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="999"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="format_version"):
        save_checkpoint(path, {"weights": 1})


@pytest.mark.parametrize("version", sorted({ckpt.FORMAT_VERSION - 1, 0}))
def test_an_older_format_version_is_refused_by_name(tmp_path, config, version):
    """Only this format version is read: an older file is refused as a newer one is, naming its version."""
    path = tmp_path / "old.pt"
    payload = _payload(config)
    payload["meta"]["format_version"] = version
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match=rf"format version {version}\b"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "override, key",
    [
        (["network.hidden_size=32"], "network.hidden_size"),
        (["network.num_layers=3"], "network.num_layers"),
        (["game.name=leduc", "memory.augment=false"], "game"),
    ],
)
def test_mismatch_names_key_and_values(tmp_path, config, override, key):
    path = save_checkpoint(tmp_path / "c.pt", _payload(config))
    other = load_config(
        None,
        ["game.name=kuhn", "memory.augment=false", "traversal.algorithm=external", "network.hidden_size=16", *override],
    )
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(path, expected_meta(other))
    msg = str(e.value)
    assert f" {key} is " in msg, msg
    assert "does not match" in msg


def test_game_config_mismatch(tmp_path):
    base = ["game.variant=mini", "network.hidden_size=8"]
    a = load_config(None, base)
    b = load_config(None, [*base, "game.rules={ply_cap: 50}"])
    path = save_checkpoint(tmp_path / "c.pt", {"meta": make_meta(a, 1)})
    with pytest.raises(CheckpointError, match=r"game_config\.ply_cap is 1000 .* but 50"):
        load_checkpoint(path, expected_meta(b))
    c = load_config(None, ["game.variant=classic", "network.hidden_size=8"])
    with pytest.raises(CheckpointError, match="game_config|network.input_size"):
        load_checkpoint(path, expected_meta(c))


def test_failed_save_keeps_previous_checkpoint(tmp_path, config, monkeypatch):
    path = save_checkpoint(tmp_path / "c.pt", _payload(config, value=1.0))
    real_save = torch.save

    def crashing_save(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 partial bytes of a zip")  # half-written file
        f.flush()
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(torch, "save", crashing_save)
    with pytest.raises(OSError, match="simulated"):
        save_checkpoint(path, _payload(config, value=2.0))
    monkeypatch.setattr(torch, "save", real_save)
    assert os.listdir(tmp_path) == ["c.pt"]  # temp file removed
    assert torch.equal(load_checkpoint(path, expected_meta(config))["weights"], torch.ones(4))
    # And a later save succeeds.
    save_checkpoint(path, _payload(config, value=2.0))
    assert torch.equal(load_checkpoint(path)["weights"], torch.full((4,), 2.0))


def test_link_or_copy(tmp_path, config):
    src = save_checkpoint(tmp_path / "iter_000001.pt", _payload(config, iteration=1))
    dst = ckpt.link_or_copy_checkpoint(src, tmp_path / "latest.pt")
    assert load_checkpoint(dst)["meta"]["iteration"] == 1
    # Replacing latest later does not touch the numbered file.
    save_checkpoint(dst, _payload(config, iteration=2))
    assert load_checkpoint(src)["meta"]["iteration"] == 1
    assert load_checkpoint(dst)["meta"]["iteration"] == 2


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "checkpoints"


@pytest.mark.parametrize(
    "name, kind",
    [("deepcfr_run.pt", ckpt.DEEPCFR_RUN), ("improve_run.pt", ckpt.IMPROVE_RUN), ("network.pt", ckpt.NETWORK)],
)
def test_a_file_of_each_kind_written_before_kinds_existed_loads(name, kind):
    """The fixtures were written by the code before checkpoints had one owner (make_fixtures.py):
    reading upgrades them (their kind from their keys), and every kind plays as a player spec."""
    from deepcfr.players import load_player

    path = FIXTURES / name
    payload = load_checkpoint(path)
    assert "kind" not in torch.load(path, weights_only=False)["meta"]  # written before meta.kind
    assert payload["meta"]["kind"] == kind == ckpt.checkpoint_kind(payload)
    player = load_player(str(path))
    assert player.game.name == "lost_cities" and player.agent.has_current_policy == (kind == ckpt.DEEPCFR_RUN)


def test_a_kind_is_written_and_a_wrong_one_refused(tmp_path, config):
    path = save_checkpoint(tmp_path / "c.pt", _payload(config))
    assert load_checkpoint(path, kinds=(ckpt.DEEPCFR_RUN,))["meta"]["kind"] == ckpt.DEEPCFR_RUN
    with pytest.raises(
        CheckpointError, match=r"c.pt holds a Deep CFR run \(deepcfr train\); this needs an? improvement run"
    ):
        load_checkpoint(path, kinds=(ckpt.IMPROVE_RUN,))
    with pytest.raises(CheckpointError, match="unknown checkpoint kind 'model'"):
        make_meta(config, 1, kind="model")
    with pytest.raises(CheckpointError, match="needs meta with format_version and kind"):
        save_checkpoint(path, {"meta": {"format_version": 1}})


def test_export_network_takes_an_improvement_run_and_writes_a_network(tmp_path):
    out = ckpt.export_network(FIXTURES / "improve_run.pt", tmp_path / "net.pt")
    payload = load_checkpoint(out, kinds=(ckpt.NETWORK,))
    source = load_checkpoint(FIXTURES / "improve_run.pt")
    assert payload["improve_rounds"] == source["improve"]["round"] == 1
    assert set(payload) == {"config", "game", "meta", "iteration", "strategy_net", "improve_rounds"}
    assert all(torch.equal(payload["strategy_net"][k], v) for k, v in source["strategy_net"].items())
    with pytest.raises(CheckpointError, match="holds a Deep CFR run"):
        ckpt.export_network(FIXTURES / "deepcfr_run.pt", tmp_path / "bad.pt")
