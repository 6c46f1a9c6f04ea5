"""The device rules of the bottom layer: which devices compute bfloat16 natively, and where it is faster."""

import pytest
import torch

from deepcfr import devices
from deepcfr.devices import cpu_bfloat16_speedup, cpu_flags, fast_bfloat16, native_bfloat16

X86 = "fpu vme sse sse2 avx avx2 avx512f avx512bw avx512vl avx512dq"  # an AVX-512 CPU without bfloat16
CPUS = [  # (what /proc/cpuinfo says, whether bfloat16 is native)
    (f"processor\t: 0\nflags\t\t: {X86} avx512_bf16 avx512_vnni\n", True),  # Cooper Lake, Zen 4
    (f"processor\t: 0\nflags\t\t: {X86} amx_bf16 amx_tile amx_int8\n", True),  # Sapphire Rapids
    (f"processor\t: 0\nflags\t\t: {X86} avx512_vnni\n", False),  # Cascade Lake: emulated
    ("processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma\n", False),
    ("processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n", True),  # Arm Neoverse V1
    ("processor\t: 0\nFeatures\t: fp asimd evtstrm crc32\n", False),
]


@pytest.mark.parametrize("cpuinfo, native", CPUS)
def test_a_cpu_computes_bfloat16_natively_only_with_the_instructions_for_it(monkeypatch, tmp_path, cpuinfo, native):
    """The answer follows what the CPU lists (not the function replaced): an AVX-512 CPU without
    avx512_bf16 / AMX emulates bfloat16 even where oneDNN has bfloat16 kernels for it."""
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    monkeypatch.setattr(devices, "CPUINFO", str(path))
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
    assert native_bfloat16(torch.device("cpu")) is native
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)  # no oneDNN kernels
    assert native_bfloat16(torch.device("cpu")) is False


def test_a_cpu_whose_instructions_cannot_be_read_is_taken_at_onednns_word(monkeypatch, tmp_path):
    monkeypatch.setattr(devices, "CPUINFO", str(tmp_path / "missing"))
    assert cpu_flags() is None
    for kernels in (True, False):
        monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda kernels=kernels: kernels)
        assert native_bfloat16(torch.device("cpu")) is kernels


def test_cuda_follows_the_gpu_and_other_devices_are_not_native(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for supported in (True, False):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, supported=supported, **k: supported)
        assert native_bfloat16(torch.device("cuda")) is supported
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert native_bfloat16(torch.device("cuda")) is False
    assert native_bfloat16(torch.device("meta")) is False


@pytest.mark.parametrize("speedup, fast", [(0.5, False), (1.05, False), (2.3, True)])
def test_a_cpu_runs_bfloat16_only_where_it_measures_faster(monkeypatch, speedup, fast):
    """Native bfloat16 is not enough on a CPU: an Intel Xeon VM listing avx512_bf16 ran the
    project's forwards at half the float32 speed; the measured speedup decides."""
    monkeypatch.setattr(devices, "native_bfloat16", lambda device: True)
    monkeypatch.setattr(devices, "cpu_bfloat16_speedup", lambda: speedup)
    assert fast_bfloat16(torch.device("cpu")) is fast
    monkeypatch.setattr(devices, "native_bfloat16", lambda device: False)  # never without the kernels
    assert fast_bfloat16(torch.device("cpu")) is False


def test_a_gpu_with_native_bfloat16_uses_it_without_measuring(monkeypatch):
    def no_measuring():
        raise AssertionError("a GPU's bfloat16 is not measured against the CPU")

    monkeypatch.setattr(devices, "cpu_bfloat16_speedup", no_measuring)
    for native in (True, False):
        monkeypatch.setattr(devices, "native_bfloat16", lambda device, native=native: native)
        assert fast_bfloat16(torch.device("cuda")) is native


def test_the_cpu_bfloat16_speedup_is_measured_once_a_process():
    cpu_bfloat16_speedup.cache_clear()  # measurable on any CPU (emulated bfloat16 is just slow)
    first = cpu_bfloat16_speedup()
    assert 0 < first < float("inf")
    assert cpu_bfloat16_speedup() == first  # cached, not measured again
    assert cpu_bfloat16_speedup.cache_info().hits >= 1
