"""``/api/runs...``: the training runs under the runs directory, their reports and plots."""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from ..state import AppState

router = APIRouter()


@router.get("/api/runs")
def run_list(state: AppState):
    """The run directories under the runs directory."""
    return {"runs": state.runs.runs()}


@router.get("/api/runs/report")
def run_report(state: AppState, run: str = Query(..., max_length=1000)):
    """A run's latest evaluation, plots and checkpoints (drawn into the server's cache)."""
    return state.runs.report(run)


@router.get("/api/runs/plot")
def run_plot(state: AppState, run: str = Query(..., max_length=1000), name: str = Query(..., max_length=100)):
    """One plot of a run's report (PNG)."""
    return FileResponse(state.runs.plot(run, name), media_type="image/png", headers={"Cache-Control": "no-store"})
