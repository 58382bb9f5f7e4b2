# Two commands do all the setup: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOME_DIR ?= $(CURDIR)/.episodic

export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 180
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export DO_NOT_TRACK ?= 1
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU build of torch first: an open range would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	EPISODIC_HOME=$(HOME_DIR) $(VENV)/bin/episodic demo

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check episodic storage tasks flows cli bench tests
	$(VENV)/bin/ruff format --check episodic storage tasks flows cli bench tests
	$(VENV)/bin/mypy episodic storage tasks flows cli

bench: install
	EPISODIC_HOME=$(HOME_DIR) $(VENV)/bin/episodic bench all

clean:
	rm -rf $(VENV) $(HOME_DIR) .pytest_cache .mypy_cache .ruff_cache
