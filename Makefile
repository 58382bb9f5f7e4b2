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

LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: install bytecode demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU build of torch first: an open range would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	# llama.cpp built for this sandbox's CPUs: the native build uses AVX-512/AMX and
	# crashes on the first generation; pip caches the wheel, later installs reuse it
	$(PY) -m pip install -q -e '.[dev]'
	# the local model is optional: a failed build leaves the rest installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q -e '.[dev,local]' \
	  || echo "warning: the local extra (llama-cpp-python) did not install; local-model tests skip"
	touch $@

install: $(VENV)/.installed bytecode

# the project's own bytecode: pip compiles what it installs but not an editable
# tree, and where PYTHONDONTWRITEBYTECODE is set (this sandbox, many CI images)
# every command compiled the modules it imports again (60-140 ms of `episodic
# status`); a no-op when the files are current
bytecode: $(VENV)/.installed
	@$(PY) -m compileall -q episodic storage tasks flows

demo: install
	EPISODIC_HOME=$(HOME_DIR) $(VENV)/bin/episodic demo

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check episodic storage tasks flows tests
	$(VENV)/bin/ruff format --check episodic storage tasks flows tests
	$(VENV)/bin/mypy episodic storage tasks flows tests

bench: install
	EPISODIC_HOME=$(HOME_DIR) $(VENV)/bin/episodic bench all

clean:
	rm -rf $(VENV) $(HOME_DIR) .pytest_cache .mypy_cache .ruff_cache
