# Two commands: `make tables` (the main job on the embedded tiny preset) and `make test`;
# `make report` puts every table and figure, captioned, into report.html.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
CORES ?= all
PRESET ?= presets/tiny.yaml
# The tiny preset never needs the Hub; this keeps transformers/datasets from trying.
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: tables report test install install-test lint bench lock pins clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Snakemake reads config files before the workflow runs: a file that is not YAML would stop it
# with a message naming neither file nor line. `python -m xlt.config` checks first.
# Jobs start from a fork server with torch and transformers imported (xlt/zygote.py): ~4 s of
# CPU saved per job. ZYGOTE= (empty) runs every job in its own fresh process instead.
ZYGOTE ?= $(PY) -m xlt.zygote with --
tables: install
	@$(PY) -m xlt.config $(PRESET)
	$(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) --configfile=$(PRESET) all_tables
	@echo
	@echo "Tables (paper | ours mean ± std | Δ) are in results/tables/:"
	@find results/tables -name '*.md' | sort | sed 's/^/  /'
	@echo "Figures (PNG, PDF and the CSV behind each) are in results/figures/:"
	@find results/figures -name '*.png' 2>/dev/null | sort | sed 's/^/  /'

# Snakemake's own report of what `make tables` made (it runs what is missing first).
report: tables
	$(VENV)/bin/snakemake --configfile=$(PRESET) --report report.html all_tables
	@echo "Open report.html in a browser; results/tables/index.md lists the same with links."

# Tests run in parallel (pytest-xdist): one worker more than cores, as the SLURM tests mostly wait
# on the scheduler. PYTEST_ARGS adds options (CI: the slowest tests).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: install-test
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

lint: install-test
	$(VENV)/bin/snakemake --lint --configfile=$(PRESET)
	$(VENV)/bin/snakefmt --check Snakefile rules/

bench: install-test
	$(PY) benchmarks/train_throughput.py && $(PY) benchmarks/mlm_throughput.py

# Re-pin every installed version after changing pyproject.toml.
lock: install-test
	( echo '# Exact versions of every package the project installs (pip install -c constraints.txt).'; \
	  echo '# Regenerate with `make lock` after changing pyproject.toml.'; \
	  $(PY) -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu/torch==\1/' ) > constraints.txt

# What each catalog entry's files are pinned or locked to (xlt/sources/catalog.lock.yaml), and
# which are not locked yet (docs/sources.md, "Pinning"). PINS_CONFIG: the config with download:.
PINS_CONFIG ?= config.yaml
pins: install
	@$(PY) -m xlt.sources.pins --config $(PINS_CONFIG)

# The full-scale bill (xlt/bill.py): device-hours per paper, per rule and in total, written to
# results/bill.{md,json} and into README.md between its bill markers (a test checks they agree).
.PHONY: bill
bill: install
	$(PY) benchmarks/full_scale_bill.py --out results/bill --readme README.md

# What config.yaml's run needs from the network, fetched and locked once where there is network
# (a login node): every dataset and encoder snapshot (docs/sources.md, "Offline compute nodes").
.PHONY: prefetch
prefetch: install
	HF_HUB_OFFLINE=0 HF_DATASETS_OFFLINE=0 $(VENV)/bin/snakemake --cores 1 --configfile $(PINS_CONFIG) prefetch

clean:
	rm -rf results logs .snakemake report.html
