# Two commands on a fresh machine: `make train` and `make test`. Each creates .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup train test test-fast champion docs clean

$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned, so nothing below can pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

train: $(BIN)/.installed
	$(BIN)/deepcfr train

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

# Rebuild the shipped champion network and its model card (one bot round, twelve growing rounds in nine
# runs, a league run of five rounds, then two rounds taught by the planner, scripts/make_champion.py's
# SHIPPED_STAGES: about 10 hours on 2 cores; see
# src/deepcfr/players/champion/CARD.md)
champion: $(BIN)/.installed
	$(BIN)/python scripts/make_champion.py

test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not slow"

# The documentation site (mkdocs.yml, docs/) at http://127.0.0.1:8001/, rebuilt as pages change
docs: $(BIN)/.installed
	$(BIN)/mkdocs serve -a 127.0.0.1:8001

clean:
	rm -rf $(VENV) runs site .pytest_cache
