# Three commands: `make first` (one table in minutes), `make tables` (the main job on the embedded tiny preset) and `make test`;
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

.PHONY: help first tables claims-seeds report test install install-test lint bench lock pins clean fast_align

# `make help` lists each target with its `##` line, then the workflow's targets (xlt/workflow/help.py).
help:  ## this list: make targets, then the main Snakemake targets
	@$(if $(wildcard $(PY)),$(PY) -m xlt.workflow.help --preset $(PRESET),PYTHONPATH=. $(PYTHON) -m xlt.workflow.help)

# pip byte-compiles every file it installs: ~28 of the ~50 s of a fresh install, mostly torch
# modules no job imports. Installed without that (--no-compile), the bytecode of what the
# workflow does import is written by importing it once (`xlt.process.zygote warm`, whatever
# PYTHONDONTWRITEBYTECODE says: without .pyc files each later process compiles its imports again,
# ~+9 s before make tables' first job and ~+20 job-seconds in its jobs); measured: a fresh
# install 49-51 s -> 33-35 s (docs/developing.md, "The 15-minute budget", Headroom).
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -c constraints.txt -e .
	$(PY) -m xlt.process.zygote warm snakemake.cli snakemake.api snakemake.workflow snakemake.dag
	touch $@

# Snakemake reads --configfile files before any workflow code runs and names neither file nor
# line for one that is not YAML: the venv's `snakemake` reads them first (xlt/process/snakemake_cli.py).
$(VENV)/.snakemake-cli: $(VENV)/.installed xlt/process/snakemake_cli.py
	$(PY) -m xlt.process.snakemake_cli install $(VENV)/bin/snakemake
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(VENV)/.snakemake-cli
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

install: $(VENV)/.installed $(VENV)/.snakemake-cli  ## the virtual environment .venv with the pinned packages
install-test: $(VENV)/.installed-test  ## install plus the test extras

# Snakemake reads config files before the workflow runs: a file that is not YAML would stop it
# with a message naming neither file nor line. `python -m xlt.workflow.config` checks first.
# Jobs start from a fork server with torch and transformers imported (xlt/process/zygote.py): ~4 s of
# CPU saved per job. ZYGOTE= (empty) runs every job in its own fresh process instead.
# PRESET may name several files, layered in order: PRESET="presets/tiny.yaml my.yaml".
# --keep-going: a failed job stops only what needs it; xlt.workflow.runsummary then prints the timing,
# each failed job's error line and that rerunning resumes, and writes results/summary.json.
ZYGOTE ?= $(PY) -m xlt.process.zygote with --
tables: install  ## every table and figure on PRESET (default: the tiny preset), then a timing line and results/summary.json
	@$(PY) -m xlt.workflow.config $(PRESET)
	@start=$$(date +%s); rc=0; \
	echo "$(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) --keep-going all_tables --configfile $(PRESET)"; \
	XLT_RUN_SUMMARY=1 $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) --keep-going all_tables --configfile $(PRESET) || rc=$$?; \
	echo; \
	if [ $$rc = 0 ]; then \
	  echo "Tables (paper | ours mean ± std | Δ) are in results/tables/:"; \
	  find results/tables -name '*.md' | sort | sed 's/^/  /'; \
	  echo "Figures (PNG, PDF and the CSV behind each) are in results/figures/:"; \
	  find results/figures -name '*.png' 2>/dev/null | sort | sed 's/^/  /'; \
	fi; \
	$(PY) -m xlt.workflow.runsummary --since $$start --rc $$rc --command "make tables" $(PRESET); exit $$rc

# The first result in minutes: xmixup's Table 14 (NER F1 per language), ours beside the paper's
# mBERT row. Its 10 jobs are what that one table needs: the world, the tiny encoder (the same one
# `make tables` builds and then reuses; its 800 MLM steps are most of the time), English NER
# fine-tuned on two seeds (underspec's θ_src, which `make tables` trains too and reuses) and
# scored on the world's nine languages. FIRST_PRESET turns on what `make tables`' preset leaves
# off (papers.xmixup.zero_shot_tagging: there Table 14 shows the paper's values alone).
# OMP_WAIT_POLICY=PASSIVE: the encoder's two OpenMP threads sleep while they wait rather than spin.
# Where threads wait, not what they compute: the encoder is bit for bit the same. On a busy
# 2-core machine (load ~10) its MLM steps took 66 s for 30 with spinning threads, 9 s passive
# (docs/developing.md, "The first result"); the tests set the same (tests/conftest.py). XLT_SHOWN:
# the table is printed by xlt.workflow.first (its cells with ours), not by the workflow's onsuccess.
FIRST_PRESET ?= presets/first.yaml
FIRST_TARGET := xmixup_table14
first: install  ## the first result in minutes: one table, ours beside the paper (xmixup Table 14: zero-shot NER per language)
	@$(PY) -m xlt.workflow.config $(PRESET) $(FIRST_PRESET)
	@start=$$(date +%s); rc=0; \
	echo "OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) $(FIRST_TARGET) --configfile $(PRESET) $(FIRST_PRESET)"; \
	XLT_SHOWN=make OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) $(FIRST_TARGET) \
	  --configfile $(PRESET) $(FIRST_PRESET) || rc=$$?; \
	$(PY) -m xlt.workflow.first --target $(FIRST_TARGET) --since $$start --rc $$rc $(PRESET) $(FIRST_PRESET); exit $$rc

# The claims page on more seeds where a claim's comparison is cheap on the tiny world (not part of
# `make tables`, whose budget is spent): CLAIMS_PRESET raises the seeds of the tables those claims
# read (xlt/papers/<slug>/presets/claims.yaml) and reuses every model `make tables` made. It rewrites
# results/claims.md and the tables it read with every seed; a later `make tables` rewrites them
# with the tiny preset's seeds again (its models stay, so either page is seconds to get back).
CLAIMS_PRESET ?= presets/claims.yaml
claims-seeds: install  ## results/claims.md on more seeds where the comparison is cheap (xlt/papers/*/presets/claims.yaml)
	@$(PY) -m xlt.workflow.config $(PRESET) $(CLAIMS_PRESET)
	@start=$$(date +%s); rc=0; \
	echo "OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) all_claims --configfile $(PRESET) $(CLAIMS_PRESET)"; \
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) all_claims \
	  --configfile $(PRESET) $(CLAIMS_PRESET) || rc=$$?; \
	echo "make claims-seeds: $$(( $$(date +%s) - start )) s, exit $$rc; the page: results/claims.md"; exit $$rc

# The methods of the five papers side by side on one encoder, and whether they stack (issue 55;
# xlt/papers/<its folder>/README.md): its table (md, csv, tex), verdicts and figure on PRESET, by
# its own Snakemake target, which `make tables` does not include (its budget is spent). It reuses
# the world, the tiny encoder and the alignment stage of `make tables` where they are made.
COMPARE_TARGET := versus_all
compare: install  ## the methods side by side on one encoder, and whether they stack: results/tables/versus/ (not part of `make tables`)
	@$(PY) -m xlt.workflow.config $(PRESET)
	@start=$$(date +%s); rc=0; \
	echo "OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) --keep-going $(COMPARE_TARGET) --configfile $(PRESET)"; \
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} $(ZYGOTE) $(VENV)/bin/snakemake --cores $(CORES) --keep-going $(COMPARE_TARGET) \
	  --configfile $(PRESET) || rc=$$?; \
	echo "make compare: $$(( $$(date +%s) - start )) s elapsed, rc $$rc"; \
	if [ $$rc = 0 ]; then cat results/tables/$(COMPARE_TARGET:_all=)/verdicts.md; \
	  find results/tables/$(COMPARE_TARGET:_all=) results/figures/$(COMPARE_TARGET:_all=) -type f | sort | sed 's/^/  /'; fi; exit $$rc

# Its full-scale bill (config.yaml): results/bill-compare.{md,json}; README's bill block stays all_tables'.
.PHONY: compare compare-bill
compare-bill: install  ## the full-scale bill of `make compare`'s target in GPU-hours: results/bill-compare.md
	$(PY) benchmarks/full_scale_bill.py --target $(COMPARE_TARGET) --out results/bill-compare

# Snakemake's own report of what `make tables` made (it runs what is missing first).
report: tables  ## report.html: every table and figure with its caption (runs what is missing first)
	$(VENV)/bin/snakemake --report report.html all_tables --configfile $(PRESET)
	@echo "Open report.html in a browser; results/tables/index.md lists the same with links."

# Tests run in parallel (pytest-xdist): one worker more than cores, as the SLURM tests mostly wait
# on the scheduler. PYTEST_ARGS adds options (CI: the slowest tests).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: install-test  ## the test suite (TEST_WORKERS, PYTEST_ARGS)
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

lint: install-test  ## snakemake --lint and snakefmt --check
	$(VENV)/bin/snakemake --lint --configfile $(PRESET)
	$(VENV)/bin/snakefmt --check Snakefile rules/

# BENCH_ARGS: e.g. --precision fp32 (both sides in fp32, like for like, on any CPU), --ablations
BENCH_ARGS ?=
bench: install-test  ## engine throughput against the Hugging Face Trainer (BENCH_ARGS="--precision fp32")
	$(PY) benchmarks/train_throughput.py $(BENCH_ARGS) && $(PY) benchmarks/mlm_throughput.py $(BENCH_ARGS)

# Do the tiny preset's baselines learn in every seed? Reruns every trial recorded in
# xlt/papers/benchmarks/tiny_baselines.json (its families x settings x seeds) on the tiny encoder and data,
# which it makes first (benchmarks/README.md, "Tiny baselines").
.PHONY: bench-baselines
bench-baselines: install  ## the tiny baselines over seeds (xlt/papers/benchmarks/tiny_baselines.json), rerun
	$(VENV)/bin/snakemake --cores $(CORES) --configfile $(PRESET) results/encoders/tiny/pretrained \
	  $$($(PY) xlt/papers/benchmarks/tiny_baselines.py --data-targets --json xlt/papers/benchmarks/tiny_baselines.json)
	$(PY) xlt/papers/benchmarks/tiny_baselines.py --rerun --json xlt/papers/benchmarks/tiny_baselines.json

# fast_align (the adjust paper's aligner: align.backend fast_align) has no package: clone it at
# the measured commit and build it with cmake and a C++ compiler (network needed once). The
# binary and atools land in $(FAST_ALIGN_DIR)/build: put that on PATH (docs/align.md).
FAST_ALIGN_URL ?= https://github.com/clab/fast_align
FAST_ALIGN_COMMIT ?= cab1e9aac8d3bb02ff5ae58218d8d225a039fa11
FAST_ALIGN_DIR ?= .tools/fast_align
fast_align:  ## build the fast_align binary (adjust's aligner; network once) into .tools/
	@command -v cmake >/dev/null && command -v g++ >/dev/null || \
	  { echo "make fast_align needs cmake and g++ (Debian: apt-get install cmake g++)" >&2; exit 1; }
	@test -d $(FAST_ALIGN_DIR)/src/.git || git clone -q $(FAST_ALIGN_URL) $(FAST_ALIGN_DIR)/src
	@git -C $(FAST_ALIGN_DIR)/src checkout -q $(FAST_ALIGN_COMMIT)
	@cmake -S $(FAST_ALIGN_DIR)/src -B $(FAST_ALIGN_DIR)/build -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_POLICY_VERSION_MINIMUM=3.5 > $(FAST_ALIGN_DIR)/cmake.log 2>&1 || { cat $(FAST_ALIGN_DIR)/cmake.log; exit 1; }
	@cmake --build $(FAST_ALIGN_DIR)/build -j > $(FAST_ALIGN_DIR)/build.log 2>&1 || { tail -20 $(FAST_ALIGN_DIR)/build.log; exit 1; }
	@echo "fast_align and atools built in $(abspath $(FAST_ALIGN_DIR))/build (commit $(FAST_ALIGN_COMMIT)); use them with"
	@echo "  export PATH=$(abspath $(FAST_ALIGN_DIR))/build:\$$PATH"

# Re-pin every installed version after changing pyproject.toml.
lock: install-test  ## re-pin constraints.txt after a change of pyproject.toml
	( echo '# Exact versions of every package the project installs (pip install -c constraints.txt).'; \
	  echo '# Regenerate with `make lock` after changing pyproject.toml.'; \
	  $(PY) -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu/torch==\1/' ) > constraints.txt

# What each catalog entry's files are pinned or locked to (xlt/sources/catalog.lock.yaml), and
# which are not locked yet (docs/sources.md, "Pinning"). PINS_CONFIG: the config with download:.
PINS_CONFIG ?= config.yaml
pins: install  ## what each catalog source is pinned or locked to (PINS_CONFIG)
	@$(PY) -m xlt.sources.pins --config $(PINS_CONFIG)

# The full-scale bill (xlt/workflow/bill.py): device-hours per paper, per rule and in total, written to
# results/bill.{md,json} and into README.md between its bill markers (a test checks they agree).
.PHONY: bill
bill: install  ## the full-scale bill in GPU-hours: results/bill.md and README's block
	$(PY) benchmarks/full_scale_bill.py --out results/bill --readme README.md --runtimes slurm/runtimes.json

# README's status block and docs/papers.md's table of the papers, from the registry and the two
# configs (xlt/workflow/status.py; tests check both are current).
.PHONY: status
status: install  ## README's status block and docs/papers.md's table, regenerated from the paper plugins
	$(PY) -m xlt.workflow.status --write README.md --write docs/papers.md

# What config.yaml's run needs from the network, fetched and locked once where there is network
# (a login node): every dataset and encoder snapshot (docs/sources.md, "Offline compute nodes").
.PHONY: prefetch
prefetch: install  ## fetch and lock every dataset and encoder snapshot (login node, network)
	HF_HUB_OFFLINE=0 HF_DATASETS_OFFLINE=0 $(VENV)/bin/snakemake --cores 1 --configfile $(PINS_CONFIG) prefetch

# The plan of a full-scale run (xlt/workflow/plan.py), one screen, nothing run: jobs and GPU-hours per
# stage (the bill), what is missing first (prefetch, locks, XLT_SLURM_ACCOUNT), the next command.
# PINS_CONFIG: the config files; TARGET: what to plan; GPUS: the wall-clock on that many GPUs.
TARGET ?= all_tables
GPUS ?= 8
.PHONY: plan
plan: install  ## the plan of a full-scale run: GPU-hours per stage, wall-clock, time limits, what is missing (PINS_CONFIG, TARGET, GPUS)
	@$(PY) workflow_scripts/plan.py --target $(TARGET) --configfile $(PINS_CONFIG) --gpus $(GPUS)

clean:  ## remove results, logs, .snakemake and report.html
	rm -rf results logs .snakemake report.html

# `make <target>`: any Snakemake target on PRESET (`make help` lists them: crossmulti_table2,
# crossmulti_fig1, underspec_all, ...). A name that is no target stops here with the nearest
# names, and a bad PRESET with its file and line or key, before Snakemake reads the workflow.
# It ends with the table made (its first rows) and its path (xlt.workflow.shown), also when
# nothing was left to run (XLT_SHOWN: the workflow's own onsuccess leaves that to this line).
.DEFAULT:
	@$(MAKE) -s --no-print-directory $(VENV)/.installed $(VENV)/.snakemake-cli
	@$(PY) -m xlt.workflow.help --check $@
	@$(PY) -m xlt.workflow.config $(PRESET)
	XLT_SHOWN=make $(VENV)/bin/snakemake --cores $(CORES) $@ --configfile $(PRESET)
	@$(PY) -m xlt.workflow.shown $@ --configfile $(PRESET)
