"""The full-scale bill (xlt.bill, benchmarks/full_scale_bill.py): jobs from the DAG's summary,
example counts from disk or the papers' tables, tokens, hours per paper and side."""

import json
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO
from xlt.bill import Examples, bill, job_costs, summary_jobs, throughputs
from xlt.errors import XltError
from xlt.throughput import length_profile

CFG = yaml.safe_load((REPO / "config.yaml").read_text())
HEADER = "output_file\tdate\trule\tlog-file(s)\tstatus\tplan"


def summary(*rows: tuple[str, str]) -> str:
    return "\n".join([HEADER, *(f"{path}\t-\t{rule}\t-\tmissing\tupdate pending" for rule, path in rows)])


JOBS = summary(
    ("finetune", "results/models/mbert/pretrained/ner/en.underspec/seed1"),
    ("evaluate", "results/eval/mbert/pretrained/pawsx/en.crossmulti/seed1/test.crossmulti.json"),
    ("evaluate", "results/eval/mbert/pretrained/pawsx/en.crossmulti/seed1/test.crossmulti.predictions.jsonl"),
    ("underspec_grid", "results/underspec/grids/mbert/xnli/en-ar/seed1/all.1d.csv"),
    ("underspec_grid", "results/underspec/grids/mbert/xnli/en-ar/seed1/all.1d.json"),
    ("download", "resources/raw/manifests/wikiann.json"),
    ("adapt_mlm", "results/encoders/mbert/mlm-ner-crossmulti"),
)


def test_tokens_per_job_from_the_path_grammar_and_the_published_sizes(tmp_path):
    costs, unpriced = job_costs(CFG, summary_jobs(JOBS), Examples(CFG, tmp_path))
    mean = {t: length_profile(t).mean() for t in ("ner", "pawsx", "xnli")}
    ft = costs[("underspec", "mbert", "tagging")]
    # 5 epochs of WikiANN en (20,000 sentences, underspec table 1) + its dev set after each epoch
    assert ft.train_tokens == pytest.approx(5 * 20000 * mean["ner"])
    assert ft.eval_tokens == pytest.approx(5 * 10000 * mean["ner"])
    ev = costs[("crossmulti", "mbert", "pair")]
    assert ev.train_tokens == 0 and ev.eval_tokens == pytest.approx(4 * 2000 * mean["pawsx"])  # 4 test languages
    grid = costs[("underspec", "mbert", "pair")]
    # 1D grid: 2 directions x (21 + 12 extra) alphas, each scored on the en and ar dev sets (2,490 each)
    assert grid.eval_tokens == pytest.approx(66 * 2 * 2490 * mean["xnli"]) and dict(grid.jobs) == {"underspec_grid": 1}
    assert unpriced == {"adapt_mlm": 1}


def test_prepared_data_on_disk_wins_over_published_sizes(tmp_path):
    data = tmp_path / "results" / "data" / "ner" / "en"
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text('{"tokens": ["a"]}\n' * 3)
    ex = Examples(CFG, tmp_path)
    assert ex.count("ner", "en", "train") == 3 and ex.count("ner", "de", "train") == 20000
    assert ex.sources == {"prepared data on disk": 1, "published underspec table1": 1}
    assert ex.count("qa.mlqa", "hi", "test") == 4918  # a named set's own count (adjust's public sizes)
    with pytest.raises(XltError, match="no size for qa de train"):
        ex.count("qa", "de", "train")


def test_hours_are_tokens_over_measured_rates():
    costs, _ = job_costs(CFG, summary_jobs(JOBS[: JOBS.index("\n", len(HEADER) + 1)]), Examples(CFG, REPO))
    tokens = costs[("underspec", "mbert", "tagging")]
    rates = {("mbert", "tagging", s): (r, 2 * r) for s, r in (("ours", 3000.0), ("hf_default", 1000.0), ("hf_best", 1500.0))}
    hours, unmeasured = bill(costs, rates)
    assert unmeasured == {}
    expected = (tokens.train_tokens / 1000 + tokens.eval_tokens / 2000) / 3600
    assert hours["underspec"]["hf_default"] == pytest.approx(expected) == hours["total"]["hf_default"]
    assert hours["total"]["ours"] == pytest.approx(hours["total"]["hf_default"] / 3)
    other = {("xlmr-large", "pair", s): (1.0, 1.0) for s in ("ours", "hf_default", "hf_best")}
    with pytest.raises(XltError, match=r"no throughput for mbert / tagging / ours in the benchmark JSON; it has xlmr-large/pair"):
        bill(costs, other)
    hours, unmeasured = bill(costs, other, partial=True)  # billed: nothing; left out, and said so: the rest
    assert hours == {} and unmeasured == costs


def test_bad_inputs_fail_with_one_clear_message():
    with pytest.raises(XltError, match="not the output of `snakemake --summary`"):
        summary_jobs("Building DAG of jobs...\n")
    with pytest.raises(XltError, match="not a gpu_throughput.py JSON"):
        throughputs({"device": "x"})


def test_script_bills_the_full_scale_dag(tmp_path):
    """The real DAG of config.yaml (snakemake --summary), priced with a throughput file; a
    CPU file is labelled as CPU-hours."""
    rows = [{"shape": s, "workload": w, "side": side, "tokens_per_s": 1e4, "eval_tokens_per_s": 3e4}
            for s in ("mbert", "xlmr-large") for w in ("tagging", "pair") for side in ("ours", "hf_default", "hf_best")]
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"device": "test CPU", "gpu": False, "rows": rows}))
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "full_scale_bill.py"), "--throughput", str(bench)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "CPU-hours, not GPU-hours" in out
    papers = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert papers == ["adjust", "crossmulti", "dlfa", "underspec", "xmixup", "total"], out
    total = next(line for line in out.splitlines() if line.startswith("| total"))
    ours, default, best = (float(x.replace(",", "")) for x in total.strip("| ").split("|")[-3:])
    assert ours == default == best > 0  # equal rates in, equal hours out
    missing = subprocess.run([sys.executable, str(REPO / "benchmarks" / "full_scale_bill.py"), "--throughput",
                              str(tmp_path / "nope.json")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and missing.stderr.startswith("error: ") and "Traceback" not in missing.stderr
