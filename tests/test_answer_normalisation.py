"""MLQA's answer normalisation on the evaluate job's path (issue 51): the MLQA sets of config.yaml
declare it (data.qa.sets.<set>.answer_normalisation), xlt.dag.targets.answer_languages turns it
into evaluate.py's --answer-languages, and xlt.stages.finetune.evaluate_model -> EvalSet.finish
scores with it; every other QA set keeps SQuAD v1.1's."""

import copy
import json
import shlex

import pytest

from tests.test_config import base
from xlt.dag import targets as T
from xlt.engine.evalset import EvalSet
from xlt.errors import XltError
from xlt.io import write_jsonl
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob
from xlt.stats import read_seed_outputs
from xlt.workflow.config import MLQA_ANSWER_LANGUAGES, check_workflow_config

HP = {"lr": 1e-3, "epochs": 1, "batch_size": 16, "warmup_ratio": 0.1, "max_length": 32, "stride": 8, "progress": False}


def test_the_mlqa_sets_declare_mlqa_normalisation_by_their_context_language():
    cfg = base()
    assert T.answer_languages(cfg, "qa.mlqa", ["es", "zh"]) == {"es": "es", "zh": "zh"}
    # context en, question xx: MLQA's script takes the answer (= context) language
    assert T.answer_languages(cfg, "qa.mlqa_q_target", ["es", "hi"]) == {"es": "en", "hi": "en"}
    assert T.answer_languages(cfg, "qa.mlqa_q_en", ["es", "vi"]) == {"es": "es", "vi": "vi"}
    for squad in ("qa", "qa.xquad", "qa.xquad_xtreme", "qa.xquad_q_target", "qa.tydiqa", "qa.translate_test"):
        assert T.answer_languages(cfg, squad, ["es"]) is None
    # evaluate's option, shell-quoted; nothing for the others
    arg = T.answer_languages_arg(cfg, "qa.mlqa_q_target", "adjust_mlqa")
    assert shlex.split(arg)[0] == "--answer-languages" and json.loads(shlex.split(arg)[1]) == {"es": "en", "vi": "en", "hi": "en"}
    assert T.answer_languages_arg(cfg, "qa.xquad", "adjust_targets") == ""
    # scoring keys are not preparation: the prepare job's source config is unchanged
    assert "answer_normalisation" not in T.source_cfg(cfg, "qa.mlqa")["qa"]
    assert "answer_language" not in T.source_cfg(cfg, "qa.mlqa_q_target")["qa"]


def test_the_config_check_copies_mlqas_languages():
    from xlt.metrics import MLQA_LANGUAGES

    assert MLQA_ANSWER_LANGUAGES == MLQA_LANGUAGES


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s["xquad"].update(answer_normalisation="mlqa"), r"data\.qa\.sets\.xquad\.languages: .* no rule for ru"),
    (lambda s: s["mlqa_q_target"].update(answer_language="ru"), r"data\.qa\.sets\.mlqa_q_target\.answer_language: .* ru"),
    (lambda s: s["xquad"].update(answer_language="en"), r"data\.qa\.sets\.xquad\.answer_language: only with answer_normalisation: mlqa"),
])
def test_a_bad_normalisation_declaration_fails_naming_the_key(mutate, message):
    cfg = copy.deepcopy(base())
    mutate(cfg["data"]["qa"]["sets"])
    with pytest.raises(XltError, match=message):
        check_workflow_config(cfg)


@pytest.fixture(scope="module")
def qa_model(tiny_encoder, toy_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("qa_model")
    finetune(FinetuneJob.of_seed("qa", str(tiny_encoder), toy_data / "qa", ["en"], HP, 1, out / "m", out / "ck"))
    return out / "m"


GOLD = {"es": "la casa blanca", "en": "the white house"}  # the prediction drops the article
PRED = {"es": "casa blanca", "en": "white house"}


@pytest.fixture()
def article_data(tmp_path, monkeypatch):
    """A test set per language whose gold answer is PRED plus an article, and the model's
    predictions replaced by PRED (the forward passes still run)."""
    for lang, gold in GOLD.items():
        ctx = f"vimos {gold} ayer ."
        write_jsonl(tmp_path / "data" / lang / "test.jsonl",
                    [{"id": f"{lang}{i}", "context": ctx, "question": "que ?",
                      "answers": {"text": [gold], "answer_start": [ctx.index(gold)]}} for i in range(3)])
    monkeypatch.setattr(EvalSet, "decode", lambda self, pending, device: [PRED[self.records[0]["id"][:2]]] * len(self.records))
    return tmp_path


def _evaluate(model, root, name, answer_languages):
    report = evaluate_model(str(model), str(root / "data"), "test", ["es", "en"], root / f"{name}.json",
                            root / f"{name}.predictions.jsonl", device="cpu", answer_languages=answer_languages)
    return report, {lang: m["f1"] for lang, m in report["metrics"].items()}


def test_an_mlqa_evaluation_normalises_the_languages_articles(qa_model, article_data):
    cfg = base()
    # qa.mlqa: MLQA's script per language: "la" is a Spanish article, "the" an English one
    report, f1 = _evaluate(qa_model, article_data, "mlqa", T.answer_languages(cfg, "qa.mlqa", ["es", "en"]))
    assert f1 == {"es": 100.0, "en": 100.0}
    assert report["answer_languages"] == {"es": "es", "en": "en"}
    # the per-example rescoring (adjust's significance test) follows the recorded normalisation
    assert read_seed_outputs([article_data / "mlqa.json"], "es").values.mean() == pytest.approx(100.0)
    # SQuAD v1.1's (qa.xquad, the task's own data): English articles only
    report, f1 = _evaluate(qa_model, article_data, "xquad", T.answer_languages(cfg, "qa.xquad", ["es", "en"]))
    assert f1["en"] == 100.0 and f1["es"] == pytest.approx(80.0)  # P 1, R 2/3
    assert "answer_languages" not in report
    assert read_seed_outputs([article_data / "xquad.json"], "es").values.mean() == pytest.approx(80.0)
    # a context-en set (qa.mlqa_q_target) is scored as English whatever the question's language
    _, f1 = _evaluate(qa_model, article_data, "q_target", {"es": "en", "en": "en"})
    assert f1 == {"es": pytest.approx(80.0), "en": 100.0}


def test_answer_languages_must_cover_the_languages_scored(qa_model, article_data):
    with pytest.raises(XltError, match="answer languages given for es, but the languages scored are es, en"):
        _evaluate(qa_model, article_data, "bad", {"es": "es"})
