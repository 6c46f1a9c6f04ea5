import pytest
import torch

from deepcfr.cfr.memory import ReservoirMemory

FIELDS = {"obs": ((4,), torch.uint8), "target": ((3,), torch.float32), "iteration": ((), torch.int32)}


def _batch(start: int, m: int) -> dict:
    ids = torch.arange(start, start + m)
    return {
        "obs": (ids[:, None] % 256).to(torch.uint8).expand(m, 4).clone(),
        "target": ids[:, None].float().expand(m, 3).clone(),
        "iteration": ids.to(torch.int32),
    }


def test_fill_counts_and_contents():
    mem = ReservoirMemory(10, FIELDS)
    g = torch.Generator().manual_seed(0)
    assert len(mem) == 0 and mem.seen == 0
    assert mem.add(g, **_batch(0, 4)) == 4
    assert len(mem) == 4 and mem.seen == 4
    assert torch.equal(mem.data("iteration"), torch.arange(4, dtype=torch.int32))
    mem.add(g, **_batch(4, 5))
    assert len(mem) == 9 and mem.seen == 9
    mem.add(g, **_batch(9, 30))  # straddles capacity
    assert len(mem) == 10 and mem.seen == 39
    ids = mem.data("iteration").long()
    assert ids.unique().numel() == 10 and ids.max() < 39
    # Fields stay aligned per sample.
    assert torch.equal(mem.data("target")[:, 0].long(), ids)
    assert torch.equal(mem.data("obs")[:, 0].long(), ids % 256)
    assert mem.nbytes_per_sample == 4 + 12 + 4


def test_sample_shapes_device_and_membership():
    mem = ReservoirMemory(20, FIELDS)
    g = torch.Generator().manual_seed(1)
    mem.add(g, **_batch(0, 50))
    batch = mem.sample(64, g, device="cpu")
    assert batch["obs"].shape == (64, 4) and batch["obs"].dtype == torch.uint8
    assert batch["target"].shape == (64, 3) and batch["iteration"].shape == (64,)
    held = set(mem.data("iteration").tolist())
    assert set(batch["iteration"].tolist()) <= held
    assert torch.equal(batch["target"][:, 0].long(), batch["iteration"].long())


@pytest.mark.parametrize("batch_sizes", [[1] * 40 + [13] * 20, [7] * 40 + [20], [300], [45, 5, 250]])
def test_reservoir_is_uniform(batch_sizes):
    """Every offered sample is held with probability capacity / seen, whatever the batching
    (including one batch far larger than the capacity, where slots collide)."""
    total, capacity, trials = sum(batch_sizes), 30, 300
    g = torch.Generator().manual_seed(1234)
    counts = torch.zeros(total)
    for _ in range(trials):
        mem = ReservoirMemory(capacity, {"id": ((), torch.int64)})
        start = 0
        for m in batch_sizes:
            mem.add(g, id=torch.arange(start, start + m))
            start += m
        assert len(mem) == capacity and mem.seen == total
        ids = mem.data("id")
        assert ids.unique().numel() == capacity
        counts[ids] += 1
    p = capacity / total
    expected = trials * p
    # Pearson statistic with binomial variance; mean about `total`, sd about sqrt(2 total).
    stat = ((counts - expected) ** 2 / (trials * p * (1 - p))).sum().item()
    assert stat < total + 5 * (2 * total) ** 0.5, stat
    # No drift between early and late offers (a classic batching bug favours one end).
    half = total // 2
    assert abs(counts[:half].mean() - counts[half:].mean()) < 0.1 * expected


def test_state_round_trip():
    mem = ReservoirMemory(16, FIELDS)
    g = torch.Generator().manual_seed(2)
    mem.add(g, **_batch(0, 40))
    state = mem.state_dict()
    assert state["data"]["obs"].shape == (16, 4)
    other = ReservoirMemory(16, FIELDS)
    other.load_state_dict(state)
    assert len(other) == 16 and other.seen == 40
    for name in FIELDS:
        assert torch.equal(other.data(name), mem.data(name))
    # Continuing both with the same generator state gives the same result.
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    mem.add(g1, **_batch(40, 10))
    other.add(g2, **_batch(40, 10))
    assert torch.equal(other.data("iteration"), mem.data("iteration"))

    partial = ReservoirMemory(16, FIELDS)
    partial.add(g, **_batch(0, 3))
    state = partial.state_dict()
    assert state["data"]["target"].shape == (3, 3)  # only the filled part is saved
    restored = ReservoirMemory(16, FIELDS)
    restored.load_state_dict(state)
    assert len(restored) == 3 and restored.seen == 3


def test_errors_name_the_problem():
    mem = ReservoirMemory(4, FIELDS)
    with pytest.raises(ValueError, match="empty"):
        mem.sample(2)
    with pytest.raises(ValueError, match="missing"):
        mem.add(None, obs=torch.zeros(2, 4, dtype=torch.uint8))
    bad = _batch(0, 2)
    bad["obs"] = torch.zeros(2, 5, dtype=torch.uint8)
    with pytest.raises(ValueError, match="'obs'"):
        mem.add(None, **bad)
    with pytest.raises(ValueError, match="capacity"):
        ReservoirMemory(0, FIELDS)
    other = ReservoirMemory(8, FIELDS)
    with pytest.raises(ValueError, match="capacity"):
        other.load_state_dict(mem.state_dict())


def _filled(capacity: int, offered: int, device="cpu", pin_memory=False) -> ReservoirMemory:
    memory = ReservoirMemory(
        capacity, {"x": ((3,), torch.int16), "y": ((), torch.float32)}, device=device, pin_memory=pin_memory
    )
    g = torch.Generator().manual_seed(0)
    for start in range(0, offered, 7):
        m = min(7, offered - start)
        memory.add(
            generator=g,
            x=torch.arange(start, start + m).repeat_interleave(3).view(m, 3).to(torch.int16),
            y=torch.arange(start, start + m, dtype=torch.float32),
        )
    return memory


def test_state_without_copy_shares_a_full_memory_and_copies_a_partial_one(tmp_path):
    full, partial = _filled(20, 50), _filled(20, 12)
    shared = full.state_dict(copy=False)
    assert shared["data"]["x"].data_ptr() == full.data("x").data_ptr()  # no copy of a full memory
    assert full.state_dict()["data"]["x"].data_ptr() != full.data("x").data_ptr()
    kept = partial.state_dict(copy=False)
    assert kept["data"]["x"].shape[0] == 12
    # a view of part of the storage would save all of it; the partial state saves its rows only
    torch.save(kept, tmp_path / "partial.pt")
    torch.save({**kept, "data": {k: v[:0] for k, v in kept["data"].items()}}, tmp_path / "empty.pt")
    assert (tmp_path / "partial.pt").stat().st_size - (tmp_path / "empty.pt").stat().st_size < 12 * 10 + 256
    for memory, state in ((full, shared), (partial, kept)):
        restored = ReservoirMemory(20, memory.fields)
        restored.load_state_dict(state)
        assert torch.equal(restored.data("x"), memory.data("x")) and restored.seen == memory.seen


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("where", ["cuda", "cpu_pinned"])
def test_cuda_memories_store_and_draw_what_a_cpu_memory_does(where):
    """Slots and draws come from the CPU generator: the same samples on every device; a pinned
    memory's draws arrive on the GPU through non-blocking copies."""
    cpu = _filled(20, 50)
    other = _filled(20, 50, device="cpu" if where == "cpu_pinned" else "cuda", pin_memory=where == "cpu_pinned")
    assert other.pinned == (where == "cpu_pinned")
    assert torch.equal(other.data("x").cpu(), cpu.data("x"))
    a = cpu.sample(64, generator=torch.Generator().manual_seed(1))
    b = other.sample(64, generator=torch.Generator().manual_seed(1), device="cuda")
    assert b["x"].is_cuda
    torch.cuda.synchronize()
    assert all(torch.equal(a[k], b[k].cpu()) for k in a)
    state = other.state_dict(copy=False)
    assert state["data"]["x"].device.type == "cpu"
    assert torch.equal(state["data"]["x"], cpu.data("x"))
