PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench lint clean graphviz

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

# Graphviz's `dot` renders chainrule.viz graphs to PNG/SVG. Install it when missing and
# possible (Debian/Ubuntu as root); never fail the build: rendering tests skip without it.
graphviz:
	@command -v dot >/dev/null 2>&1 || \
		(DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) || \
		echo "graphviz not installed: rendering tests will skip"

demo: $(VENV)/.stamp-demo graphviz
	$(PY) -m chainrule demo

test: $(VENV)/.stamp-test graphviz
	$(PY) -m ruff check src tests bench examples tools
	$(PY) -m pytest

bench: $(VENV)/.stamp-base
	$(PY) -m pip install -q -e ".[demo]"
	-$(PY) -m pip install -q "torch==2.13.0"
	$(PY) bench/elementwise_chain.py
	$(PY) bench/mlp_step.py
	$(PY) bench/linalg_svdvals_logdet.py
	$(PY) bench/jacobian_hvp.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
