PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench lint clean

$(VENV)/.stamp-base:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	touch $@

$(VENV)/.stamp-demo: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install -q -e ".[demo]"
	touch $@

$(VENV)/.stamp-test: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install -q -e ".[test]"
	touch $@

demo: $(VENV)/.stamp-demo
	$(PY) -m chainrule demo

test: $(VENV)/.stamp-test
	$(PY) -m ruff check src tests bench examples
	$(PY) -m pytest

bench: $(VENV)/.stamp-base
	$(PY) -m pip install -q -e ".[demo]"
	-$(PY) -m pip install -q "torch==2.13.0"
	$(PY) bench/elementwise_chain.py
	$(PY) bench/mlp_step.py
	$(PY) bench/linalg_svdvals_logdet.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
