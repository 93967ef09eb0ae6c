"""versus (the methods side by side, issue 55): each row's composition (the init, extra tag, aux set
and data its models get, and what a trained model records), the methods table and the verdicts on
constructed inputs, and that `all_tables` does not make it."""

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.papers.versus import plan, tables
from xlt.papers.versus.figures import gains
from xlt.workflow.config import load_configs


@pytest.fixture(scope="module")
def tiny():
    return load_configs(["presets/tiny.yaml"])


@pytest.fixture(scope="module")
def full():
    return load_configs([])


# ---- composition: what each row's fine-tunes get ----------------------------------------------

# row -> (init kind, extras by name, aux tasks?) on XNLI; None: no models, the reason's first words
XNLI = {
    "baseline": ("pretrained", set(), False),
    "adjusted": ("adjust", set(), False),
    "da": ("mlm", set(), False),
    "fa": ("pretrained", set(), True),
    "dlfa": ("pretrained", {"dlfa"}, False),
    "xmixup": ("pretrained", {"xmixup"}, False),
    "adjusted+dlfa": ("adjust", {"dlfa"}, False),
    "adjusted+xmixup": ("adjust", {"xmixup"}, False),
    "da+fa+dlfa": ("mlm", {"dlfa"}, True),
    "da+adjusted": None,
    "dlfa+xmixup": None,
}


def _init_kind(init: str) -> str:
    return "pretrained" if init == "pretrained" else Path(init).name.partition("-")[0]


@pytest.mark.parametrize("row", list(XNLI))
def test_each_row_composes_its_methods_parts(tiny, row):
    models = plan.models(tiny, row, "xnli", 1)
    if XNLI[row] is None:
        assert models == [] and plan.why_not(tiny, row, "xnli").startswith("not expressible")
        return
    init, extras, aux = XNLI[row]
    assert models
    for m in models:
        assert _init_kind(m.init) == init
        T.Init.parse(m.init, P.init_kinds())  # a name of the path grammar (the adjusted kind registered by its plugin)
        hp = P.hparams(tiny, m.recipe, m.dataset)  # the finetune rule's own resolution
        assert {e["name"] for e in hp.get("extras", [])} == extras
        assert hp["lr"] == tiny["hparams"]["versus"]["lr"]  # one profile for every row
        streams = P.aux_streams(tiny, m.recipe, m.dataset)
        assert bool(streams) == aux
        if "dlfa" in extras:
            assert hp["extras"][-1]["layer"] == tiny["papers"]["versus"]["dlfa_layer"]["xnli"]
        if "xmixup" in extras:  # the translate-train set, English and every target; scored on translate-test
            assert m.dataset == "xnli.translate_train" and m.testset == "xnli.translate_test"
            assert set(T.Recipe.parse(m.recipe).train_langs) == {"en", *plan.targets(tiny, "xnli")}
        else:
            assert T.Recipe.parse(m.recipe).train_langs == ("en",)
    if init == "adjust":  # one adjusted encoder per target language, scored on it alone
        assert [m.langset for m in models] == plan.targets(tiny, "xnli")
        assert all(m.init == f"adjust-{m.langset}-n300-seed1" for m in models)
    assert tables.row_methods(models[0].init, models[0].recipe) == frozenset(plan.methods_of(row))


def test_rows_without_data_or_expression_say_why(tiny):
    assert plan.why_not(tiny, "xmixup", "ner").startswith("not run: X-Mixup trains on translations")
    assert "inits do not chain" in plan.why_not(tiny, "da+adjusted", "ner")
    assert "one extra tag" in plan.why_not(tiny, "dlfa+xmixup", "xnli")
    assert plan.components("da+fa+dlfa") == ["da", "fa", "dlfa"] and plan.components("dlfa") == []


def test_the_comparison_is_not_part_of_all_tables(tiny, full):
    for cfg in (tiny, full):
        assert not any("/versus/" in f for f in P.all_tables(cfg))
        rules = P.target_rules(cfg)
        assert rules["versus_methods"] == T.table_files(cfg, "versus", "methods")
        assert set(rules["versus_all"]) >= set(T.figure_files(cfg, "versus", "fig1"))
    # the full scale plans every task; the tiny preset two
    assert full["papers"]["versus"]["tasks"] == ["xnli", "pawsx", "ner", "pos"]
    assert len(plan.methods_inputs(tiny)) < len(plan.methods_inputs(full))


@pytest.mark.parametrize("row", ["da+fa+dlfa", "adjusted+xmixup"])
def test_a_trained_model_records_the_composed_extras_aux_tasks_and_init(tiny, tiny_encoder, toy_data, tmp_path, row):
    """A combination's XNLI recipe, resolved as the finetune rule resolves it (xlt.workflow.paper_targets.hparams
    and aux_streams), trained for one epoch by the finetune stage from an encoder
    directory named as the row's init, on the toy data: marc for the task (with each review as its
    own English side for X-Mixup), pos for the auxiliary tagging task. The saved model's recorded
    config carries every method of the row."""
    from xlt.engine.model import load_model
    from xlt.io import read_json, write_jsonl
    from xlt.stages.finetune import finetune
    from xlt.stages.finetune_job import FinetuneJob

    cfg = copy.deepcopy(tiny)
    cfg["papers"]["versus"]["dlfa_layer"]["xnli"] = 1  # the test encoder has 2 layers
    m = plan.models(cfg, row, "xnli", 1)[0]
    hp = {**P.hparams(cfg, m.recipe, "marc"), "epochs": 1, "max_train_examples": 32, "progress": False}
    aux = [{**a, "data": str(toy_data / "pos")} for a in P.aux_streams(cfg, m.recipe, m.dataset) if a["task"] == "pos"]
    data = toy_data / "marc"
    if "xmixup" in row:  # X-Mixup's records carry their English side
        data = tmp_path / "marc"
        for split in ("train", "dev"):
            records = [json.loads(line) for line in (toy_data / "marc" / "en" / f"{split}.jsonl").read_text().splitlines()]
            write_jsonl(data / "en" / f"{split}.jsonl", [{**r, "source": {"text": r["text"]}} for r in records])
    encoder = tmp_path / "encoders" / "tiny" / m.init
    encoder.parent.mkdir(parents=True)
    encoder.symlink_to(tiny_encoder, target_is_directory=True)
    out = tmp_path / "model"
    finetune(FinetuneJob(task="marc", encoder=str(encoder), data=str(data), train_langs=["en"], hparams=hp, seeds=[1],
                         outs=[str(out)], checkpoint_dirs=[str(tmp_path / "ck")], aux=aux))
    meta = read_json(out / "xlt_model.json")
    assert tables.recorded_methods(meta) == frozenset(plan.methods_of(row))
    assert meta["train_config"]["encoder"] == str(encoder)
    if "fa" in plan.methods_of(row):
        assert aux and meta["spec"]["aux_tasks"] == ["pos"]
    assert [e["name"] for e in meta["spec"]["extras"]] == [e["name"] for e in hp["extras"]]
    assert load_model(out)[2]["spec"] == meta["spec"]  # rebuilt exactly as recorded


# ---- the methods table and the verdicts on constructed inputs --------------------------------


def _spec(rows, tasks=("xnli",), targets=("es", "hi")):
    return {"rows": list(rows), "tasks": list(tasks), "targets": {t: list(targets) for t in tasks}, "source": "en",
            "metric": {t: "accuracy" for t in tasks}, "encoder": "tiny", "hparams": "versus", "seeds": [1, 2, 3],
            "labels": {r: plan.label(r) for r in rows}, "components": {r: plan.components(r) for r in rows},
            "why_not": {r: {t: None for t in tasks} for r in rows}, "device": "CPU"}


def _scores(values: dict) -> pd.DataFrame:
    """{row: [per-seed value of es, …]} -> score lines, hi = es + 2 in every seed."""
    out = []
    for row, per_seed in values.items():
        for seed, v in enumerate(per_seed, 1):
            out += [{"task": "xnli", "row": row, "lang": "es", "seed": seed, "value": v, "collapsed": False},
                    {"task": "xnli", "row": row, "lang": "hi", "seed": seed, "value": v + 2, "collapsed": False}]
    return pd.DataFrame(out)


ROWS = ["baseline", "adjusted", "dlfa", "adjusted+dlfa", "da", "fa", "da+fa+dlfa"]
VALUES = {"baseline": [50, 52, 51], "adjusted": [55, 57, 56], "dlfa": [52, 53, 53],
          "adjusted+dlfa": [60, 61, 62],  # stacks: above adjusted (the best part) in every seed, by 4-6
          "da": [51, 52, 52], "fa": [53, 55, 53],
          "da+fa+dlfa": [49, 50, 49]}  # worse: below FA (the best part) by 3-5 in every seed


def test_the_methods_table_averages_targets_per_seed_and_pairs_by_seed():
    spec = _spec(ROWS)
    costs = pd.DataFrame([{"task": "xnli", "row": r, "train_seconds": 10.0 * (i + 1)} for i, r in enumerate(ROWS)])
    table = tables.methods_long(spec, _scores(VALUES), costs, {("xnli", "dlfa"): "dlfa"})
    avg = table[table["lang"] == "avg"].set_index("row")
    assert avg.loc["baseline", "mean"] == pytest.approx(52.0) and avg.loc["baseline", "per_seed"] == "1=51.0000 2=53.0000 3=52.0000"
    assert avg.loc["adjusted", "delta"] == pytest.approx(5.0)
    assert avg.loc["adjusted", "ci_low"] == pytest.approx(5.0) and avg.loc["adjusted", "pvalue"] == 0.0  # a constant gain
    assert avg.loc["dlfa", "extras"] == "dlfa" and avg.loc["fa", "train_seconds"] == 60.0
    assert avg.loc["adjusted+dlfa", "vs_parts"].startswith("adjusted: +5.00 [")
    es = table[(table["lang"] == "es") & (table["row"] == "baseline")].iloc[0]
    assert es["mean"] == pytest.approx(51.0) and es["std"] == pytest.approx(1.0)
    md, tex = tables.render_methods(table, spec)
    assert "| cross-lingual adjustment + DLFA | 61.0 ± 1.0 | 63.0 ± 1.0 | 62.0 ± 1.0 | +10.00 [" in md
    assert "\\pm" in tex


def test_a_row_without_results_says_why_in_one_line():
    spec = _spec(["baseline", "xmixup", "dlfa+xmixup"])
    spec["why_not"]["dlfa+xmixup"]["xnli"] = "not expressible: DLFA and X-Mixup: a recipe spells one extra tag"
    table = tables.methods_long(spec, _scores({"baseline": [50, 52, 51]}), pd.DataFrame(columns=["task", "row", "train_seconds"]), {})
    why = table.set_index("row")["why"]
    assert why["dlfa+xmixup"].startswith("not expressible") and why["xmixup"] == "no evaluation read (not run)"
    md, _ = tables.render_methods(table, spec)
    assert "- XNLI / DLFA + X-Mixup: not expressible: DLFA and X-Mixup" in md


def _decided(values: dict, rows=ROWS, spec=None) -> pd.DataFrame:
    spec = spec or _spec(rows)
    table = tables.methods_long(spec, _scores(values), pd.DataFrame(columns=["task", "row", "train_seconds"]), {})
    return tables.decide(table, spec).set_index("row")


def test_verdicts_stacks_worse_and_no_better_than_the_best_part(tmp_path):
    v = _decided(VALUES)
    assert v.loc["adjusted+dlfa", "verdict"] == "stacks" and v.loc["adjusted+dlfa", "best_part"] == "adjusted"
    assert v.loc["da+fa+dlfa", "verdict"] == "worse" and v.loc["da+fa+dlfa", "best_part"] == "fa"
    assert set(v.index) == {"adjusted+dlfa", "da+fa+dlfa"}  # one verdict per combination
    # within the seeds' noise of the best part: undecided, with the seeds that would decide it
    noisy = {**VALUES, "adjusted+dlfa": [57, 55, 58]}  # vs adjusted: +2, -2, +2
    v = _decided(noisy)
    assert v.loc["adjusted+dlfa", "verdict"] == "no better than the best part"
    assert v.loc["adjusted+dlfa", "seeds_to_decide"].isdigit() or v.loc["adjusted+dlfa", "seeds_to_decide"].startswith("more than")
    # two seeds that differ from the best part by the same amount: no spread, no verdict yet
    two = _decided({k: v[:2] for k, v in {**VALUES, "adjusted+dlfa": [57, 59, 0]}.items()})
    assert two.loc["adjusted+dlfa", "verdict"] == "no better than the best part"
    assert two.loc["adjusted+dlfa", "seeds_to_decide"].startswith("at least 3")
    # decided on the CSV the methods table writes (per_seed read back)
    spec = _spec(ROWS)
    table = tables.methods_long(spec, _scores(VALUES), pd.DataFrame(columns=["task", "row", "train_seconds"]), {})
    table.to_csv(tmp_path / "methods.csv", index=False, float_format="%.4f")
    out, md, _ = tables.verdicts(spec, [str(tmp_path / "methods.csv")])
    assert list(out["verdict"]) == ["stacks", "worse"]
    assert "| XNLI | cross-lingual adjustment + DLFA | stacks | cross-lingual adjustment | +5.00 [" in md


def test_a_verdict_needs_every_part_and_an_expressible_combination():
    spec = _spec(ROWS + ["da+adjusted"])
    spec["why_not"]["da+adjusted"]["xnli"] = "not expressible: inits do not chain"
    values = {k: v for k, v in VALUES.items() if k != "dlfa"}
    v = _decided(values, spec=spec)
    assert v.loc["adjusted+dlfa", "verdict"] == "not decided" and "dlfa" in v.loc["adjusted+dlfa", "detail"]
    assert v.loc["da+adjusted", "verdict"] == "not expressible"


def test_read_runs_maps_each_evaluation_to_its_row_and_sums_training_time(tmp_path):
    """Evaluation JSONs and model / encoder metadata under the path grammar: each file's row comes
    from its init and recipe; a row's cost counts every model and adapted encoder once."""
    spec = _spec(["baseline", "adjusted", "da+fa+dlfa"])
    spec["metric"] = {"xnli": "accuracy"}
    inputs = []
    for init, recipe, langs in (("pretrained", "en.versus", {"en": 70, "es": 60, "hi": 50}),
                                ("adjust-es-n300-seed1", "en.versus", {"es": 64}),
                                ("adjust-hi-n300-seed1", "en.versus", {"hi": 52}),
                                ("mlm-xnli.translate_train-versus_xnli", "en.versus-dlfa3.versus_fa", {"es": 61, "hi": 51})):
        model = tmp_path / "models" / "tiny" / init / "xnli" / recipe / "seed1"
        model.mkdir(parents=True)
        (model / "xlt_model.json").write_text(json.dumps({"train": {"seconds_this_process": 5.0}}))
        if init != "pretrained":
            enc = tmp_path / "encoders" / "tiny" / init
            enc.mkdir(parents=True)
            (enc / "xlt_encoder.json").write_text(json.dumps({"seconds_this_process": 2.0}))
        ev = tmp_path / "eval" / init / "test.json"
        ev.parent.mkdir(parents=True)
        ev.write_text(json.dumps({"task": "xnli", "seed": 1, "model": str(model),
                                  "metrics": {k: {"accuracy": v, "n": 10} for k, v in langs.items()}}))
        inputs += [str(ev), str(model)]
    scores, costs = tables.read_runs(spec, inputs)
    assert set(scores["lang"]) == {"es", "hi"}  # the source is not a target
    assert scores.groupby("row")["value"].mean().to_dict() == {"adjusted": 58.0, "baseline": 55.0, "da+fa+dlfa": 56.0}
    assert costs.set_index("row")["train_seconds"].to_dict() == {"baseline": 5.0, "adjusted": 14.0, "da+fa+dlfa": 7.0}


def test_the_figure_plots_each_rows_gain_with_its_interval():
    spec = _spec(ROWS)
    table = tables.methods_long(spec, _scores(VALUES), pd.DataFrame(columns=["task", "row", "train_seconds"]), {})
    g = gains(table, spec).set_index("row")
    assert "baseline" not in g.index and g.loc["adjusted", "delta"] == pytest.approx(5.0)
    assert g.loc["da+fa+dlfa", "ci_high"] < 0


def test_the_figure_is_drawn_with_a_reason_for_rows_without_a_result(tmp_path):
    from xlt.papers.versus.figures import draw

    rows = ROWS + ["dlfa+xmixup"]
    spec = _spec(rows, tasks=("xnli", "ner"))
    spec["why_not"]["dlfa+xmixup"] = {"xnli": "not expressible: one extra tag", "ner": "not expressible: one extra tag"}
    scores = pd.concat([_scores(VALUES), _scores(VALUES).assign(task="ner")])
    table = tables.methods_long(spec, scores, pd.DataFrame(columns=["task", "row", "train_seconds"]), {})
    table.to_csv(tmp_path / "methods.csv", index=False, float_format="%.4f")
    draw(spec, [str(tmp_path / "methods.csv")], str(tmp_path), "fig1")  # the layout checked (tests/conftest.py)
    plotted = pd.read_csv(tmp_path / "fig1.csv")
    assert set(plotted["row"]) == set(ROWS) - {"baseline"} and set(plotted["task"]) == {"xnli", "ner"}
    assert (tmp_path / "fig1.png").stat().st_size > 0 and (tmp_path / "fig1.pdf").is_file()
