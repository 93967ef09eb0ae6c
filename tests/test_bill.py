"""The full-scale bill (xlt.workflow.bill, benchmarks/full_scale_bill.py, `make bill`): every rule priced
or listed with why it costs no device time; one job once whatever its outputs; tokens of
fine-tuning with its auxiliary and paired streams, evaluation, grids, MLM, adjustment, probes,
PPPL, similarity, L2, CKA; hours from measured tokens/s where measured, else from FLOPs at
the stated utilisation; the README's block is the generator's output."""

import json
import math
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO
from xlt.workflow import paper_targets as P
from xlt.workflow.bill import (BITEXT, ESTIMATE_MFU, EVAL_MFU, FLOPS, NO_DEVICE_TIME, PACK_MFU, PRICED, SHARE_MFU, SIDES, Cost,
                      Examples, Levers, bill, classify, dag_jobs, estimate_rate, flop_rates, job_costs, levers_of,
                      markdown, report, throughputs)  # fmt: skip
from xlt.workflow.config import load_configs
from xlt.errors import XltError
from xlt.dag.throughput import SHAPES, length_profile

CFG = load_configs([])  # config.yaml with the papers' own files
MEAN = {t: length_profile(t).mean() for t in ("ner", "pos", "pawsx", "xnli", "marc")}
N_MBERT = SHAPES["mbert"].non_embedding_params()


def dry(*jobs: tuple[str, list[str]]) -> str:
    """The shape of `snakemake -n` output: one block per job."""
    out = ["Building DAG of jobs..."]
    for rule, outputs in jobs:
        out += ["[Thu Nov 26 03:42:58 2026]", f"rule {rule}:", "    input: x"]
        out += [f"    output: {', '.join(outputs)}"] if outputs else []
        out += ["    jobid: 1", "    resources: tmpdir=/tmp"]
    return "\n".join(out + ["Job stats:"])


def workflow_rules() -> set[str]:
    """Every rule the workflow's files define (`rule x:`, `use rule … as x`), and the alias
    rules the papers add (P.target_rules)."""
    text = "\n".join(p.read_text() for p in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))])
    names = set(re.findall(r"^rule (\w+):", text, re.M)) | set(re.findall(r"^use rule \w+ as (\w+)", text, re.M))
    return names | set(P.target_rules(CFG))


def test_every_rule_of_the_workflow_is_priced_or_says_why_it_costs_no_device_time():
    aliases = set(P.target_rules(CFG))
    rules = workflow_rules()
    assert {"finetune", "evaluate_on", "xmixup_cka", "download_encoder", "crossmulti_table2"} <= rules
    for rule in sorted(rules):
        why = classify(rule, aliases)  # raises for a rule that is neither
        assert why == "priced" or len(why) > 10, rule
    assert not PRICED & set(NO_DEVICE_TIME)
    with pytest.raises(XltError, match=r"rule 'new_rule' is neither priced nor listed .*xlt.workflow.bill.NO_DEVICE_TIME"):
        classify("new_rule", aliases)
    with pytest.raises(XltError, match="neither priced"):
        job_costs(CFG, dag_jobs(dry(("new_rule", ["results/x.json"]))), Examples(CFG, None))


def test_a_job_with_several_outputs_is_one_job():
    """xmixup_cka writes the CKA and the PCA file, align_links three: each is one job."""
    jobs = dag_jobs(dry(
        ("xmixup_cka", ["results/xmixup/cka/mbert/pretrained/xnli/en.xmixup/seed1/test.xtreme_xnli.json",
                        "results/xmixup/cka/mbert/pretrained/xnli/en.xmixup/seed1/test.xtreme_xnli.pca.json"]),
        ("align_links", ["results/align/en-es/x/raw", "results/align/en-es/x/links.pharaoh", "results/align/en-es/x/align.json"]),
        ("all_tables", []),
    ))  # fmt: skip
    costs, counts = job_costs(CFG, jobs, Examples(CFG, None), {"all_tables"})
    assert counts == {"xmixup_cka": 1, "align_links": 1, "all_tables": 1}
    (cka,) = costs.values()
    assert dict(cka.jobs) == {"xmixup_cka": 1}
    # parallel XNLI test sets (5,010 each) of English and the 14 other XTREME languages
    assert cka.eval_tokens == pytest.approx(15 * 5010 * MEAN["xnli"])


def _one(path: str, rule: str = "finetune") -> dict:
    costs, _ = job_costs(CFG, dag_jobs(dry((rule, [path]))), Examples(CFG, None))
    return costs


def test_fine_tuning_with_its_auxiliary_and_paired_streams():
    (ft,) = _one("results/models/mbert/pretrained/ner/en.underspec/seed1").values()
    # 5 epochs of WikiANN en (20,000 sentences, underspec table 1) + its dev set 4 times an epoch
    # (the profile's evals_per_epoch, the authors' val_check_interval 0.25)
    assert ft.train_tokens == pytest.approx(5 * 20000 * MEAN["ner"]) and ft.eval_tokens == pytest.approx(5 * 4 * 10000 * MEAN["ner"])
    assert ft.train_flops == pytest.approx(6 * N_MBERT * ft.train_tokens) and ft.eval_flops == pytest.approx(2 * N_MBERT * ft.eval_tokens)
    # crossmulti's +FA: one batch (32) of each auxiliary task (POS es_ancora, NER) per step of PAWS-X
    costs = _one("results/models/mbert/pretrained/pawsx/en.crossmulti.crossmulti_fa/seed1")
    main = costs[("crossmulti", "mbert", "pair", "finetune", 1, False)]
    n = Examples(CFG, None).count("pawsx", "en", "train")
    assert main.train_tokens == pytest.approx(5 * n * MEAN["pawsx"]) and main.jobs["finetune"] == 1
    steps = 5 * math.ceil(n / 32)  # 5 epochs of the English training set, batches of 32
    aux = costs[("crossmulti", "mbert", "tagging", "finetune", 1, False)]
    assert aux.train_tokens == pytest.approx(steps * 32 * (MEAN["pos"] + MEAN["ner"])) and not aux.jobs
    # adjust's continual learning: aligned pairs, both sides trained, the anchor's English forward
    costs = _one("results/models/mbert/adjust-ru-n30000-seed1/ner/en.adjust.adjust_continual/seed1")
    cont = costs[("adjust", "mbert", FLOPS, "finetune", 1, False)]
    main = costs[("adjust", "mbert", "tagging", "finetune", 1, False)]
    hp = P.hparams(CFG, "en.adjust.adjust_continual", "ner")
    steps = hp["epochs"] * math.ceil(Examples(CFG, None).count("ner", "en", "train") / hp["batch_size"])
    bs = CFG["aux_sets"]["adjust_continual"].get("batch_size", hp["batch_size"])
    assert cont.train_tokens == pytest.approx(2 * steps * bs * BITEXT.mean())
    assert cont.eval_tokens == pytest.approx(steps * bs * BITEXT.mean())
    # X-Mixup: both sides of every pair (the translations and their English originals)
    run = "results/models/mbert/pretrained/pawsx.translate_train/de+es+fr+ja+ko+zh.xmixup{}/seed1"
    (xm,) = _one(run.format("-xmixup1")).values()
    (plain,) = _one(run.format("")).values()  # translate-train, the same profile without the extra
    assert xm.train_tokens == pytest.approx(2 * plain.train_tokens) and xm.eval_tokens == pytest.approx(plain.eval_tokens)


def test_the_other_encoder_jobs_are_priced():
    costs = _one("results/encoders/mbert/mlm-ner-crossmulti", "adapt_mlm")
    (mlm,) = costs.values()
    m = CFG["adapt"]["mlm"]
    assert mlm.train_tokens == pytest.approx(m["steps"] * m["batch_size"] * MEAN["ner"])
    mlm_head = SHAPES["mbert"].hidden * SHAPES["mbert"].vocab * 0.15
    assert mlm.train_flops == pytest.approx(6 * (N_MBERT + mlm_head) * mlm.train_tokens)
    (adj,) = _one("results/encoders/mbert/adjust-ru-n30000-seed1", "adjust_encoder").values()
    assert adj.train_tokens == pytest.approx(2 * 30000 * BITEXT.mean()) and adj.eval_tokens == pytest.approx(30000 * BITEXT.mean())
    (ev,) = _one("results/eval/mbert/pretrained/pawsx/en.crossmulti/seed1/test.crossmulti.json", "evaluate").values()
    assert ev.train_tokens == 0 and ev.eval_tokens == pytest.approx(4 * 2000 * MEAN["pawsx"])  # 4 test languages
    (grid,) = _one("results/underspec/grids/mbert/xnli/en-ar/seed1/all.1d.csv", "underspec_grid").values()
    # one job per setting, its 1D grids of both variants: each 2 directions x (21 + 12 extra)
    # alphas, scored on the en and ar dev sets (2,490 each)
    assert grid.eval_tokens == pytest.approx(2 * 66 * 2 * 2490 * MEAN["xnli"]) and dict(grid.jobs) == {"underspec_grid": 1}
    # a setting of Fig. 3 (EN-RU NER): also its 2D grid, 21 x 21 points
    (grid_2d,) = _one("results/underspec/grids/mbert/ner/en-ru/seed1/all.1d.csv", "underspec_grid_2d").values()
    assert grid_2d.eval_tokens == pytest.approx((2 * 66 + 441) * Examples(CFG, None).tokens("ner", ["en", "ru"], "dev"))
    (pppl,) = _one("results/crossmulti/pppl/mbert/pawsx.csv", "crossmulti_pppl").values()
    sq = length_profile("pawsx").sample(20_000, seed=0)
    models = 1 + 2 * len(CFG["papers"]["crossmulti"]["analysis"]["seeds"])  # released + cross and multi per seed
    assert pppl.eval_tokens == pytest.approx(models * 4 * 2000 * sum(n * n for n in sq) / len(sq))
    probe = _one("results/crossmulti/probe/mbert/vanilla.csv", "crossmulti_probe_vanilla")
    assert {k[2] for k in probe} == {"tagging", "pair"} and all(c.train_tokens == 0 for c in probe.values())
    (sim,) = _one("results/dlfa/similarity/mbert/seed1.csv", "dlfa_similarity").values()
    assert sim.eval_tokens > 0 and sim.train_tokens == 0
    for path, rule in (("results/align/en-ru/systran_align/l2/mbert.csv", "align_l2"),
                       ("results/adjust/l2/en-ru/adjusted.seed1.csv", "adjust_l2")):  # fmt: skip
        (l2,) = _one(path, rule).values()
        assert l2.eval_tokens == pytest.approx(2 * CFG["align"]["l2"]["sentences"] * BITEXT.mean())


def test_hours_from_measured_rates_else_from_flops():
    key = ("underspec", "mbert", "tagging", "finetune")
    c = Cost(train_tokens=3.6e9, eval_tokens=7.2e9, train_flops=6e18, eval_flops=2e18)
    rate = estimate_rate()
    assert rate == pytest.approx(ESTIMATE_MFU * 989e12)
    est = flop_rates(None)  # nothing measured: 40% of an H100's bf16 peak, training and evaluation
    assert est("tagging", "ours") == est(None, "hf_best") == (pytest.approx(rate), pytest.approx(rate))
    rates = {("mbert", "tagging", "ours"): (1e6, 2e6)}  # measured for ours only
    h = bill({key: c}, rates, est)
    assert h["underspec"]["ours_alone"] == pytest.approx((3600 + 3600) / 3600) == h["total"]["measured"]
    assert h["underspec"]["hf_best"] == pytest.approx(8e18 / rate / 3600)
    assert bill({key: c}, {}, est)["total"]["measured"] == 0
    # measured on a GPU: what it did not measure runs at the MFU it measured for the workload and side
    rows = [{"shape": "mbert", "workload": w, "side": s, "tokens_per_s": 1e5, "eval_tokens_per_s": 3e5,
             "mfu": m, "eval_mfu": 2 * m} for w, m in (("tagging", 0.01), ("pair", 0.03)) for s in SIDES]  # fmt: skip
    util = flop_rates({"device": "NVIDIA H200", "gpu": True, "peak_tflops": 989.0, "rows": rows})
    assert util("tagging", "ours") == (pytest.approx(0.01 * 989e12), pytest.approx(0.02 * 989e12))
    assert util(None, "hf_best") == (pytest.approx(0.02 * 989e12), pytest.approx(0.04 * 989e12))  # MLM: the mean
    xl = ("underspec", "xlmr-large", "pair", "finetune")
    h = bill({xl: c}, throughputs({"rows": rows}), util)
    assert h["total"]["ours_alone"] == pytest.approx((6e18 / (0.03 * 989e12) + 2e18 / (0.06 * 989e12)) / 3600)
    with pytest.raises(XltError, match="not a gpu_throughput.py JSON"):
        throughputs({"device": "x"})
    with pytest.raises(XltError, match="no bf16 peak known for GPU 'abacus'"):
        estimate_rate("abacus")
    with pytest.raises(XltError, match="not the output of `snakemake -n`"):
        dag_jobs("Building DAG of jobs...\n")


def test_the_report_states_its_assumption_or_its_measurement():
    jobs = dag_jobs(dry(("finetune", ["results/models/mbert/pretrained/ner/en.underspec/seed1"]),
                        ("prepare_task", ["results/data/ner"])))  # fmt: skip
    rep = report(CFG, jobs, Examples(CFG, None), None, "all_tables", "config.yaml")
    md = markdown(rep)
    assert "GPU-hours are an ESTIMATE" in md and "40% MFU of the NVIDIA H100 SXM bf16 dense peak (989 TFLOP/s)" in md
    assert "6 · N · tokens training, 2 · N · tokens inference" in md and "mbert 85.1M" in md
    assert "`prepare_task` ×1 (CPU: reads and normalises the raw files)" in md
    assert "| finetune | 1 |" in md and "FLOPs estimate |" in md
    cpu = {"device": "some CPU", "gpu": False, "rows": []}
    assert "Not used: a throughput file measured on some CPU, not a GPU" in markdown(
        report(CFG, jobs, Examples(CFG, None), cpu, "all_tables", "config.yaml"))
    rows = [{"shape": "mbert", "workload": "tagging", "side": s, "tokens_per_s": 1e5, "eval_tokens_per_s": 3e5}
            for s in ("ours", "hf_default", "hf_best")]
    gpu = {"device": "NVIDIA H100 80GB HBM3", "gpu": True, "date": "2026-11-27", "rows": rows}
    rep = report(CFG, jobs, Examples(CFG, None), gpu, "all_tables", "config.yaml")
    assert rep["rules"]["finetune"]["how"] == "measured"
    assert "(benchmarks/gpu_throughput.json, NVIDIA H100 80GB HBM3, 2026-11-27: 100% of ours one job per GPU)" in markdown(rep)
    json.dumps(rep)  # what `make bill` writes


def test_readme_quotes_the_bill_that_make_bill_writes(tmp_path):
    """The README's block between the bill markers is exactly what the generator prints for the
    full-scale DAG of config.yaml (`make bill` rewrites it)."""
    from benchmarks.full_scale_bill import readme_block

    env = {k: v for k, v in os.environ.items() if k != "XLT_SLURM_GPU_SHARDS"}  # as the README prices it
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "full_scale_bill.py"), "--out", str(tmp_path / "bill")],
                         capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert readme_block((REPO / "README.md").read_text()) == run.stdout == (tmp_path / "bill.md").read_text(), \
        "README.md's bill is stale: run `make bill`"
    assert (tmp_path / "bill.runtimes.json").read_text() == (REPO / "slurm" / "runtimes.json").read_text(), \
        "slurm/runtimes.json is stale: run `make bill`"
    rep = json.loads((tmp_path / "bill.json").read_text())
    assert rep["jobs"] > 2500 and rep["papers"]["total"]["ours"] > 0
    assert set(rep["papers"]) == {"adjust", "crossmulti", "dlfa", "underspec", "xmixup", "total"}


def test_the_bill_names_no_paper_each_paper_prices_its_own_rules():
    """xlt/workflow/bill.py reaches the papers through the registry only: each rule outside the shared
    grammar is priced by the paper that declares it (xlt/papers/<slug>/bill.py)."""
    from xlt.workflow.bill import PAPER_RULES, PATTERNS, TRAIN_MULTIPLES

    code = "\n".join(line.split("#")[0] for line in (REPO / "xlt" / "workflow" / "bill.py").read_text().splitlines())
    named = {slug for slug in P.PAPERS if re.search(rf"\b{slug}\b", code)}
    assert not named, f"xlt/workflow/bill.py names papers {named}: price their rules in xlt/papers/<slug>/bill.py"
    assert set(PATTERNS) == {"finetune", "evaluate", "evaluate_on", "build_encoder"}
    assert PAPER_RULES["xmixup_cka"][0] == "xmixup" and PAPER_RULES["align_l2"][0] == "adjust"
    assert {r for r, (slug, _) in PAPER_RULES.items() if slug == "crossmulti"} == {
        "adapt_mlm", "crossmulti_probe_model", "crossmulti_probe_vanilla", "crossmulti_pppl"}
    assert TRAIN_MULTIPLES == {"xmixup": 2}


MODEL = "results/models/mbert/pretrained/ner/en.underspec/seed{}"
GPU = {"device": "NVIDIA H200", "gpu": True, "peak_tflops": 989.0, "date": "2026-11-27",
       "rows": [{"shape": "mbert", "workload": w, "side": "ours", "tokens_per_s": 5e4, "eval_tokens_per_s": 2e4,
                 "mfu": 0.027, "eval_mfu": 0.004} for w in ("tagging", "pair")]}  # fmt: skip


SHARED = {"XLT_SLURM_GPU_SHARDS": "8"}  # GPU sharing configured (config.yaml: jobs_per_gpu base 4, large 2)


def _priced(jobs, cfg=CFG, runs=(), env=SHARED) -> tuple[dict, dict]:
    """(the report's papers' total, its levers) of these jobs, priced at GPU's rates."""
    rep = report(cfg, dag_jobs(dry(*jobs)), Examples(cfg, None), GPU, "all_tables", "config.yaml",
                 levers=levers_of(cfg, runs, env=env), env=env)
    return rep["papers"]["total"], rep["levers"]


def test_a_pack_is_one_job_of_its_models_fine_tunes_at_a_packs_throughput():
    (one,) = _one(MODEL.format(1)).values()
    jobs = dag_jobs(dry(("finetune_pack_1_2_3", [MODEL.format(s) for s in (1, 2, 3)])))
    assert classify("finetune_pack_1_2_3") == "priced" and classify("finetune_pack_4_5") == "priced"
    costs, counts = job_costs(CFG, jobs, Examples(CFG, None))
    assert counts == {"finetune_pack_1_2_3": 1}
    ((key, pack),) = costs.items()
    assert key[3:] == ("finetune", 3, False) and dict(pack.jobs) == {"finetune": 1}
    assert pack.train_tokens == pytest.approx(3 * one.train_tokens) and pack.eval_tokens == pytest.approx(3 * one.eval_tokens)
    total, levers = _priced([("finetune_pack_1_2_3", [MODEL.format(s) for s in (1, 2, 3)])])
    # alone: training at the measured 5e4 tokens/s (2.7% MFU); packed: 3 x 2.7% (below the cap)
    alone_train = pack.train_tokens / 5e4 / 3600
    assert total["ours_pack"] == pytest.approx(total["ours_alone"] - alone_train + alone_train / 3, rel=1e-3)
    assert levers["pack"]["saves"] == pytest.approx(2 / 3 * alone_train, rel=1e-3)
    assert "ESTIMATE" in levers["pack"]["from"] and f"at most {PACK_MFU:.0%}" in levers["pack"]["from"]
    # measured: a pack of 3 trains 4e5 tokens/s, its models together
    run = {"gpu": True, "rows": [{"shape": "mbert", "workload": "tagging", "side": "ours_packed", "pack": 3, "tokens_per_s": 4e5}]}
    total, levers = _priced([("finetune_pack_1_2_3", [MODEL.format(s) for s in (1, 2, 3)])], runs=[("gpu/pack.json", run)])
    assert total["ours_pack"] == pytest.approx(total["ours_alone"] - alone_train + pack.train_tokens / 4e5 / 3600)
    assert levers["pack"]["from"] == "measured (gpu/pack.json)"


def test_evaluation_in_bf16_is_priced_for_the_evaluation_path_only_and_off_in_fp32():
    ev = ("evaluate", ["results/eval/mbert/pretrained/ner/en.underspec/seed1/test.underspec.json"])
    (cost,) = _one(ev[1][0], "evaluate").values()
    total, levers = _priced([ev])
    assert total["ours_alone"] == pytest.approx(cost.eval_tokens / 2e4 / 3600)  # measured, one job per GPU
    assert total["ours_pack_eval"] == pytest.approx(cost.eval_flops / (EVAL_MFU * 989e12) / 3600)
    assert "ESTIMATE: 30% MFU" in levers["eval"]["from"]
    fp32 = {**CFG, "evaluation": {"precision": "fp32"}}
    assert _priced([ev], fp32)[0]["ours_pack_eval"] == pytest.approx(total["ours_alone"])
    # a fine-tune's dev selection is not the evaluation path: unchanged
    ft = _priced([("finetune", [MODEL.format(1)])])[0]
    assert ft["ours_pack_eval"] == ft["ours_alone"]
    run = {"gpu": True, "rows": [{"shape": "mbert", "workload": "tagging", "side": "ours", "tokens_per_s": 1,
                                  "eval_variants": {"bf16_budget": {"tokens_per_s": 1e6}}}]}  # fmt: skip
    total, levers = _priced([ev], runs=[("gpu/eval.json", run)])
    assert total["ours_pack_eval"] == pytest.approx(cost.eval_tokens / 1e6 / 3600) and "measured" in levers["eval"]["from"]


def test_sharing_a_gpu_speeds_up_idle_jobs_to_its_cap_and_slows_none():
    ft = _priced([("finetune", [MODEL.format(1)])])[0]
    # 2.7% MFU alone (training; 0.4% its dev evaluation): 4 jobs together at 4x, below the 11% cap
    assert ft["ours"] == pytest.approx(ft["ours_pack_eval"] / 4, rel=1e-3)
    c = Cost(train_tokens=1e9, train_flops=6e18)
    key = ("underspec", "mbert", FLOPS, "finetune", 1, False)
    util = flop_rates({"device": "NVIDIA H200", "gpu": True, "peak_tflops": 989.0, "rows": [
        {"shape": "x", "workload": "tagging", "side": "ours", "tokens_per_s": 1, "eval_tokens_per_s": 1,
         "mfu": m, "eval_mfu": m} for m in (0.05, 0.05)]})  # fmt: skip
    h = bill({key: c}, {}, util, levers=Levers(share=4))["total"]
    assert h["ours"] == pytest.approx(6e18 / (SHARE_MFU * 989e12) / 3600)  # 4 x 5% capped at 11%
    busy = flop_rates({"device": "NVIDIA H200", "gpu": True, "peak_tflops": 989.0, "rows": [
        {"shape": "x", "workload": "tagging", "side": "ours", "tokens_per_s": 1, "eval_tokens_per_s": 1,
         "mfu": 0.3, "eval_mfu": 0.3}]})  # fmt: skip
    h = bill({key: c}, {}, busy, levers=Levers(share=4))["total"]
    assert h["ours"] == pytest.approx(h["ours_alone"])  # at 30% alone: sharing does not pay
    assert h["measured_ours"] == 0 and h["hf_best"] > 0


def test_dev_evaluations_follow_the_profiles_cadence():
    from xlt.workflow.bill import dev_evaluations

    assert dev_evaluations({"epochs": 4}, steps=1000) == 4  # each epoch's end
    assert dev_evaluations({"epochs": 4, "eval_steps": 100}, steps=1000) == 14
    assert dev_evaluations({"epochs": 4, "evals_per_epoch": 4}, steps=1000) == 16


def test_sharing_is_priced_as_configured_with_the_other_settings_price():
    """GPU sharing only where XLT_SLURM_GPU_SHARDS is set (xlt.dag.resources); the bill names the
    setting and prices the other one."""
    ft = [("finetune", [MODEL.format(1)])]
    jobs = dag_jobs(dry(*ft))
    on = report(CFG, jobs, Examples(CFG, None), GPU, "all_tables", "config.yaml", env=SHARED)
    off = report(CFG, jobs, Examples(CFG, None), GPU, "all_tables", "config.yaml", env={})
    assert off["papers"]["total"]["ours"] == pytest.approx(off["papers"]["total"]["ours_pack_eval"])
    assert on["papers"]["total"]["ours"] == pytest.approx(off["papers"]["total"]["ours"] / 4, rel=1e-3)
    assert off["levers"]["share"]["setting"].startswith("off (XLT_SLURM_GPU_SHARDS unset)")
    assert on["levers"]["share"]["setting"].startswith("on: XLT_SLURM_GPU_SHARDS=8")
    assert on["sharing_alternative"]["ours"] == pytest.approx(off["papers"]["total"]["ours"])
    assert off["sharing_alternative"]["ours"] == pytest.approx(on["papers"]["total"]["ours"])
    assert "with sharing" in off["sharing_alternative"]["label"] and "without sharing" in on["sharing_alternative"]["label"]
    md = markdown(off)
    assert "on the NVIDIA H200" in md and "GPU sharing off" in md and "with sharing" in md


def test_a_jobs_priced_minutes_are_its_hours_alone_on_the_bills_gpu():
    ft = [("finetune", [MODEL.format(1)])]
    rep = report(CFG, dag_jobs(dry(*ft)), Examples(CFG, None), GPU, "all_tables", "config.yaml", env=SHARED)
    minutes = rep["runtimes"]["finetune"]["base"]
    assert minutes["*"] == minutes["ner"] == pytest.approx(rep["papers"]["total"]["ours_pack_eval"] * 60, abs=0.01)
