"""The JSON bodies the API's POST routes take: unknown fields refused, integers strict."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from .limits import MAX_SEED


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlayRequest(_Body):
    opponent: str  # checked by check_spec, as /api/watch's players are: one limit, one status (400)
    seat: StrictInt = Field(0, ge=0, le=1)
    seed: StrictInt | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = Field(None, max_length=50)


class WatchRequest(_Body):
    players: list[str] = Field(min_length=2, max_length=2)
    seed: StrictInt | None = Field(None, ge=0, le=MAX_SEED)
    variant: str | None = Field(None, max_length=50)


class MoveRequest(_Body):
    action: StrictInt  # true is not action 1, nor 1.0
    decision: StrictInt | None = None  # the decision number the page saw; a stale move is refused
