"""Mixed-precision training steps (``run.amp: off | fp16 | bf16``).

- fp16: ``torch.autocast`` around the forward pass and a ``torch.amp.GradScaler``: the loss is
  scaled before backward, gradients are unscaled *before* clipping (so the clip sees the true
  gradients), and the scaler skips a step whose gradients overflowed and lowers its scale.
- bf16: autocast only (bfloat16 has float32's exponent range, so no scaler), where the device
  supports it natively.
- off, or a device without support (CPU, a GPU without bf16): plain float32 through the same code
  path, after one logged notice. ``autocast()`` is then a null context and the scale is 1.

Whatever the mode, a step whose loss is not finite changes neither the weights nor the
optimizer state, and is reported, so one overflowing batch cannot poison the weights. The skip
is decided on the device, without a host sync: the fused optimizers (the trainer's Adam) take
a ``found_inf`` flag, the protocol GradScaler uses, and skip their update in the kernel; with
fp16 the GradScaler's own overflow check skips it (and lowers the scale, as for any overflow).
Only an optimizer without that support makes the host read the flag. So the CPU can queue the
next steps while the GPU works; callers read the flags and losses when they report. Losses are
computed outside autocast, in float32 (``deepcfr.train.trainer``: the advantage loss squares
differences in float32, since regret targets are large and float16 squares overflow above
about 256).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

AMP_MODES = ("off", "fp16", "bf16")
AMP_DTYPES = {"off": None, "fp16": torch.float16, "bf16": torch.bfloat16}


def amp_support(mode: str, device: str | torch.device) -> tuple[torch.dtype | None, str | None]:
    """``(autocast dtype or None, notice)`` for ``run.amp=mode`` on ``device``: the dtype is None
    when training runs in float32; the notice says why a requested mode has no effect."""
    if mode not in AMP_DTYPES:
        raise ValueError(f"run.amp must be one of {', '.join(AMP_MODES)}, got {mode!r}")
    device = torch.device(device)
    dtype = AMP_DTYPES[mode]
    if dtype is None:
        return None, None
    if device.type != "cuda":
        return None, f"run.amp={mode} has no effect on {device} (mixed precision is for CUDA); training in float32"
    if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported(including_emulation=False):
        name = torch.cuda.get_device_name(device)
        return None, f"run.amp=bf16: {name} has no native bfloat16; training in float32 (fp16 works there)"
    return dtype, None


class MixedPrecision:
    """Autocast context, loss scaling and the guarded optimizer step of one trainer.

    ``mode`` and ``device`` as in ``amp_support``; ``log(message)`` receives the one notice when
    the mode has no effect. ``allow_cpu=True`` enables CPU autocast (and, for fp16, a CPU
    GradScaler): the trainer never does so, it is for tests and the benchmark, which run the CUDA
    code path on a CPU-only machine.
    """

    def __init__(
        self,
        mode: str,
        device: str | torch.device,
        log: Callable[[str], Any] | None = None,
        allow_cpu: bool = False,
    ) -> None:
        self.mode = mode
        self.device = torch.device(device)
        if allow_cpu and self.device.type == "cpu" and mode in AMP_DTYPES:
            dtype, notice = AMP_DTYPES[mode], None
        else:
            dtype, notice = amp_support(mode, self.device)
        self.dtype = dtype
        self.notice = notice
        if notice is not None:
            (log or logging.getLogger("deepcfr").info)(notice)
        self.scaler = torch.amp.GradScaler(self.device.type) if dtype == torch.float16 else None

    @property
    def enabled(self) -> bool:
        return self.dtype is not None

    def autocast(self) -> AbstractContextManager:
        """Context for the forward pass (a null context in float32 mode)."""
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)

    @property
    def grad_scale(self) -> float:
        """The GradScaler's current loss scale; 1.0 without a scaler."""
        return float(self.scaler.get_scale()) if self.scaler is not None else 1.0

    def step(
        self,
        parameters: Iterable[torch.nn.Parameter],
        optimizer: torch.optim.Optimizer,
        loss: torch.Tensor,
        grad_clip: float | None,
    ) -> torch.Tensor:
        """Backward, clip and optimizer step for ``loss``. Returns whether the loss was finite: a
        0-dim bool tensor on the loss's device (reading it is a host sync: callers add them up
        and read the total once). A non-finite loss's step leaves weights and optimizer state
        as they were. With a scaler, a step whose gradients overflow is skipped by the scaler
        itself (the batch counts as used, the scale is lowered)."""
        finite = torch.isfinite(loss.detach())
        params = list(parameters) if grad_clip is not None else []
        optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            _step_if(optimizer, finite)
            return finite
        self.scaler.scale(loss).backward()
        if grad_clip is not None:
            self.scaler.unscale_(optimizer)  # the clip must see true gradients, not scaled ones
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        self.scaler.step(optimizer)  # a non-finite loss gives non-finite gradients: skipped there
        self.scaler.update()
        return finite

    def state_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "scaler": self.scaler.state_dict() if self.scaler is not None else None}

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        """Restore the loss scale; a state from another mode (or none) leaves the scaler fresh."""
        if state and self.scaler is not None and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])


__all__ = ["AMP_MODES", "MixedPrecision", "amp_support"]


def _step_if(optimizer: torch.optim.Optimizer, finite: torch.Tensor) -> None:
    """``optimizer.step()`` unless ``finite`` is false, decided on the device where the optimizer
    supports it (fused Adam/SGD: the ``found_inf`` flag of GradScaler's protocol, checked inside
    the kernel, which also leaves the step count as it was)."""
    if getattr(optimizer, "_step_supports_amp_scaling", False):
        # attributes the Optimizer class does not declare: set in its __dict__, as GradScaler.step does
        vars(optimizer).update(grad_scale=None, found_inf=(~finite).to(torch.float32))
        try:
            optimizer.step()
        finally:
            del vars(optimizer)["grad_scale"], vars(optimizer)["found_inf"]
    elif bool(finite):
        optimizer.step()
