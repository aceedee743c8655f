# make train: set up .venv and train the structured network on 4x4x4 (+experiment=dqn_444)
# make test:  set up .venv and run the test suite (make test-cli: the tests of the command line, in subprocesses)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup train test test-cli test-all lint perf benchmark

setup: $(VENV)/.installed

# torch is pinned first: the pinned CPU build installs in seconds where it is cached, and a bare
# range would pull a multi-GB CUDA build. The optional extras (all: OpenSpiel, PettingZoo,
# Gymnasium) need neither torch nor a different numpy. TORCH_INDEX picks a build from PyTorch's index:
#   make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu     the CPU build (2.13.0+cpu)
#   make setup TORCH_INDEX=https://download.pytorch.org/whl/cu126   a CUDA 12.6 build (2.13.0+cu126)
TORCH_INDEX ?=

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e ".[dev,all]"
	touch $@

train: setup
	$(BIN)/python -m ttt.train +experiment=dqn_444

test: setup
	$(BIN)/python -m pytest

test-cli: setup
	$(BIN)/python -m pytest -m cli

test-all: setup
	$(BIN)/python -m pytest -m ""

lint: setup
	$(BIN)/ruff check ttt tests experiments

perf: setup
	$(BIN)/python -m ttt.perf

benchmark: setup
	$(BIN)/python -m ttt.benchmark
