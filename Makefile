# make train: set up .venv and train the structured network on 4x4x4 (+experiment=dqn_444)
# make test:  set up .venv and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup train test test-all lint perf benchmark

setup: $(VENV)/.installed

# torch is pinned first: the pinned CPU build installs in seconds where it is cached, and a bare
# range would pull a multi-GB CUDA build. The optional extras (all: OpenSpiel, PettingZoo,
# Gymnasium) need neither torch nor a different numpy.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev,all]"
	touch $@

train: setup
	$(BIN)/python -m ttt.train +experiment=dqn_444

test: setup
	$(BIN)/python -m pytest

test-all: setup
	$(BIN)/python -m pytest -m ""

lint: setup
	$(BIN)/ruff check ttt tests experiments

perf: setup
	$(BIN)/python -m ttt.perf

benchmark: setup
	$(BIN)/python -m ttt.benchmark
