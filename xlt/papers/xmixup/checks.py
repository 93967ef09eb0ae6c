"""xmixup's check of its config block (papers.xmixup): the mixup layers and the QA test sets."""

from __future__ import annotations

from xlt.errors import XltError, check_config_ref
from xlt.papers.xmixup.plan import BUILT, LABELS, NOT_BUILT, QA_TESTS, SLUG, _langs, mixup_layer, qa_test_model
from xlt.dag.targets import check_testset, task_languages
from xlt.dag.throughput import encoder_depth


def check(cfg: dict, p: dict) -> None:
    for task in p["tasks"]:
        if task not in BUILT:
            raise XltError(f"papers.{SLUG}.tasks: {task!r}: {NOT_BUILT.split(':')[0]}; allowed: {', '.join(BUILT)}")
        for key in ("translate_train", "mixup_layer"):
            if task not in (p.get(key) or {}):
                raise XltError(f"papers.{SLUG}.{key}: no entry for task {task!r}")
    if "qa" in p["tasks"]:
        _check_qa_tests(cfg, p)
    _check_layers(cfg, p)


def _check_layers(cfg: dict, p: dict) -> None:
    """Each mixup layer (and Figure 5's) within the encoder's depth, where the config tells it
    (a built encoder's shape, a known Hub id): else the engine refuses it when training starts."""
    depth = encoder_depth(cfg, p["encoder"])
    if depth is None:
        return
    layers = {f"mixup_layer.{t}": mixup_layer(p, t) for t in p["tasks"]}
    layers.update({f"figure5.layers[{i}]": x for i, x in enumerate((p.get("figure5") or {}).get("layers", []))})
    for key, layer in layers.items():
        if not 1 <= layer <= depth:
            raise XltError(f"config key papers.{SLUG}.{key}: {layer} is out of range for encoder {p['encoder']!r} "
                           f"({depth} layers); allowed: 1 … {depth} (the paper's numbering: the mixup happens "
                           f"inside that layer, 1 the first)")


def _check_qa_tests(cfg: dict, p: dict) -> None:
    """papers.xmixup.qa_tests: a table's set, a language set the set holds and, for the models
    trained on translations, one they were trained for (a language no translation reached is
    not that model's setting)."""
    known = [q["set"] for q in QA_TESTS.values()]
    for name, t in (p.get("qa_tests") or {}).items():
        key = f"papers.{SLUG}.qa_tests.{name}"
        check_config_ref("QA test set of Tables 16-17", f"papers.{SLUG}.qa_tests", name, known)
        check_config_ref("language set", f"{key}.languages", t["languages"], cfg["language_sets"])
        train = t.get("train")
        if train:  # the set's own training data: named sets of qa, the translations' languages trained for
            sets = [f"qa.{x}" for x in (cfg["data"].get("qa") or {}).get("sets") or {}]
            for side in ("zero_shot", "translate_train"):
                check_config_ref("qa named set (data.qa.sets)", f"{key}.train.{side}", train[side], sets)
            if train.get("hparams"):
                check_config_ref("hparams profile", f"{key}.train.hparams", train["hparams"], cfg["hparams"])
            trained, where = set(task_languages(cfg, train["translate_train"])), f"{key}.train.translate_train"
        else:
            trained, where = set(_langs(cfg, "qa")), f"papers.{SLUG}.test_languages.qa"
        for model in t["models"]:
            dataset = qa_test_model(cfg, name, model)[0]
            try:
                check_testset(cfg, dataset, f"qa.{name}", "test", t["languages"])
            except XltError as e:
                raise XltError(f"config key {key}: {e}") from None
            beyond = [x for x in cfg["language_sets"][t["languages"]] if x not in trained]
            if model != "zero_shot" and beyond:
                raise XltError(f"config key {key}: the {LABELS[model]} model is trained for "
                               f"{', '.join(sorted(trained))} ({where}), not {', '.join(beyond)}; "
                               f"score it on a language set within those, or only the zero-shot model (models: [zero_shot])")
