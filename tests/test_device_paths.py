"""What a CUDA run needs that a CPU machine can check: tensors made on the right device (the
'meta' device stands in for a GPU: mixing it with CPU tensors fails as CUDA would), generator
states that resume on any device, and training steps without a host sync per step."""

import logging
import math

import torch

from deepcfr.cfr.samples import SampleCodec
from deepcfr.host_syncs import SyncCounter
from deepcfr.train.config import load_config
from deepcfr.train.fit import sample_weights
from deepcfr.train.trainer import Trainer


def tiny(*extra):
    return load_config(
        None,
        [
            "game.name=kuhn",
            "traversal.algorithm=external",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=32",
            "network.hidden_size=16",
            "advantage.train_steps=24",
            "advantage.batch_size=32",
            "strategy.train_steps=8",
            "strategy.batch_size=32",
            "eval.every=0",
            "memory.advantage_capacity=500",
            "memory.strategy_capacity=500",
            "memory.augment=false",
            "run.progress=false",
            *extra,
        ],
    )


def test_sample_weights_stay_on_the_iterations_device():
    iteration = torch.tensor([1, 2, 5], dtype=torch.int32)
    for scheme in ("linear", "uniform", "discounted"):
        on_meta = sample_weights(iteration.to("meta"), scheme, 4.0)
        assert on_meta.device.type == "meta" and on_meta.shape == (3,), scheme
    assert torch.equal(sample_weights(iteration, "discounted", 2.0), torch.tensor([1.0, 4.0, 25.0]))


def test_codec_bit_tables_are_made_once_per_device():
    codec = SampleCodec(num_actions=11, max_legal=11, value_dtype=torch.float16)
    assert codec.bits(torch.device("cpu")) is codec.bits(torch.device("cpu"))
    mask = torch.rand(5, 11, generator=torch.Generator().manual_seed(0)) < 0.5
    assert torch.equal(codec.unpack_mask(codec.pack_mask(mask)), mask)
    packed = codec.pack_mask(mask.to("meta"))  # CPU tables on a 'meta' mask would fail here
    assert packed.device.type == "meta" and codec.unpack_mask(packed).shape == (5, 11)


def test_run_generators_live_on_the_cpu_and_their_states_say_so():
    trainer = Trainer(tiny())
    assert all(g.device.type == "cpu" for g in trainer.generators.values())
    state = trainer.state_dict()
    assert set(state["rng_devices"].values()) == {"cpu"}


def test_generator_state_saved_for_another_device_is_reseeded_with_a_warning(caplog):
    first = Trainer(tiny())
    first.run_iteration()
    state = first.state_dict()
    # An older checkpoint of a CUDA run: its traversal stream was a CUDA generator (a 16-byte state).
    state["rng"]["traversal"] = torch.zeros(16, dtype=torch.uint8)
    state["rng_devices"]["traversal"] = "cuda:0"
    resumed = Trainer(tiny())
    with caplog.at_level(logging.WARNING, logger="deepcfr"):
        resumed.load_state_dict(state)
    assert "generator 'traversal' was saved for device cuda:0" in caplog.text and "reseeded" in caplog.text
    assert torch.equal(resumed.generators["sample"].get_state(), first.generators["sample"].get_state())
    metrics = resumed.run_iteration()
    assert resumed.iteration == 2 and math.isfinite(metrics["loss/advantage_p0"])


def test_a_training_phase_reads_the_device_once_not_per_step():
    """Before: two host syncs per step (the finite check and the loss). Now the skip is decided
    on the device and the losses are added up there, read once at the end."""
    trainer = Trainer(
        tiny(
            "game.name=lost_cities",
            "game.variant=mini",
            "traversal.algorithm=outcome",
            "advantage.reinit=false",
            "memory.augment=true",
        )
    )
    trainer.run_iteration()
    steps = trainer.config.advantage.train_steps
    with SyncCounter() as counter:
        loss = trainer.train_advantage(0)
        count = trainer.nonfinite_loss_count
    assert math.isfinite(loss) and count == 0
    assert counter.count <= 4 < steps, counter.by_op
