from pathlib import Path

import pytest
import yaml

from xlt.workflow.config import check_workflow_config, load_configs, validate
from xlt.errors import XltError

REPO = Path(__file__).resolve().parent.parent


def shipped_configs():
    """config.yaml and each preset over it, resolved as a run reads them (the papers' own files merged)."""
    yield "config.yaml", load_configs([])
    for preset in sorted((REPO / "presets").glob("*.yaml")):
        yield preset.name, load_configs([preset])


@pytest.mark.parametrize("name,cfg", list(shipped_configs()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_shipped_config_validates(name, cfg):
    validate(cfg)


def base():
    return dict(shipped_configs())["config.yaml"]


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda c: c["papers"]["crossmulti"]["tasks"].append("nre"),
         r"config key papers\.crossmulti\.tasks\[4\]: 'nre' is not allowed; allowed: pos, ner, pawsx, marc"),
        (lambda c: c["papers"]["crossmulti"].update(encoder="mbrt"),
         r"papers\.crossmulti\.encoder: unknown encoder 'mbrt'; allowed: .*Did you mean 'mbert'\?"),
        (lambda c: c["hparams"]["crossmulti"].update(select="worst"),
         r"config key hparams\.crossmulti\.select: 'worst' is not allowed; allowed: best, last"),
        (lambda c: c.update(resultz="x"), r"unknown key\(s\) \['resultz'\]; allowed: .*Did you mean 'results'\?"),
        (lambda c: c["hparams"]["crossmulti"].update(epochs="five"), r"hparams\.crossmulti\.epochs: 'five' should be of type integer"),
        (lambda c: c["language_sets"].update(crossmulti=["en", "xx"]), r"task pos has no data for \['xx'\]"),
        (lambda c: c["hparams"]["crossmulti"].update(learning_rate=1), r"hparams\.crossmulti: unknown key\(s\) \['learning_rate'\]; allowed: .*lr"),
        (lambda c: c["hparams"]["crossmulti"].update(dropot=0.2), r"hparams\.crossmulti: unknown key.*Did you mean 'dropout'\?"),
        (lambda c: c["hparams"]["crossmulti"].update(dropout="high"), r"hparams\.crossmulti\.dropout: 'high' should be of type number"),
        (lambda c: c["hparams"]["crossmulti"].update(lr=float("nan")), r"config key hparams\.crossmulti\.lr: nan is not a finite number"),
        (lambda c: c["hparams"]["crossmulti"].update(per_task={"paws": {"lr": 1e-5}}),
         r"config key hparams\.crossmulti\.per_task\.paws: unknown task 'paws'; allowed: pos, ner, pawsx"),
        (lambda c: c["hparams"]["crossmulti"].update(per_task={"pawsx": {"lr": -1}}),
         r"hparams\.crossmulti\.per_task\.pawsx\.lr: -1 is less than or equal to the minimum of 0"),
        (lambda c: c["hparams"]["crossmulti"].update(per_task={"pawsx": {"learning_rate": 1e-5}}),
         r"hparams\.crossmulti\.per_task\.pawsx: unknown key\(s\) \['learning_rate'\]"),
        (lambda c: c["hparams"]["crossmulti"].update(per_task={"pawsx": {"per_task": {}}}),
         r"config key hparams\.crossmulti\.per_task\.pawsx: unknown training option\(s\) \['per_task'\]"),
        (lambda c: c["papers"]["underspec"]["grid"]["alpha_1d"]["extra"].append(float("inf")),
         r"config key papers\.underspec\.grid\.alpha_1d\.extra\[12\]: inf is not a finite number"),
        (lambda c: c["data"].update(xnli={"train_sourse": "x"}), r"data\.xnli: unknown key.*Did you mean 'train_source'\?"),
        (lambda c: c["data"].update(nre={"train_source": "x"}), r"config key data: unknown key\(s\) \['nre'\].*Did you mean 'ner'\?"),
        (lambda c: c["encoders"].update(local={"path": "/nonexistent/encoder"}),
         r"config key encoders\.local\.path: /nonexistent/encoder is not a Hugging Face model directory"),
        (lambda c: c["papers"]["crossmulti"]["metric"].update(ner="f1"),
         r"papers\.crossmulti\.metric\.ner: unknown metric of task ner 'f1'; allowed: accuracy, span_f1, span_f1_macro, token_f1_macro"),
        (lambda c: c["papers"]["crossmulti"].update(treebanks="ancora"),
         r"papers\.crossmulti\.treebanks: unknown treebank set 'ancora'; allowed: es_ancora, xtreme\. Did you mean 'es_ancora'\?"),
        (lambda c: c["data"]["ud"]["treebanks"].pop("hi"),
         r"config key data\.ud\.treebanks: no treebank for \['hi'\] \(papers\.underspec needs them for task pos\)"),
        (lambda c: c["papers"]["dlfa"]["languages"].pop("ner"), r"papers\.dlfa\.languages\.ner: no language set for task ner"),
        (lambda c: c["language_sets"]["xtreme_pawsx"].append("ru"), r"papers\.dlfa\.languages\.pawsx: task pawsx has no data for \['ru'\]"),
        (lambda c: c["data"]["ud"]["sets"]["xtreme"].update(treebanks="every"), r"config key data\.ud\.sets\.xtreme\.treebanks: 'every' is not allowed; expected .*or 'all'"),
        (lambda c: c["download"].update(require_pin=True), r"download: unknown key\(s\) \['require_pin'\].*Did you mean 'require_pins'\?"),
        # underspec
        (lambda c: c["papers"]["underspec"]["tasks"].append("marc"),
         r"config key papers\.underspec\.tasks\[4\]: 'marc' is not allowed; allowed: xnli, ner, pos, parsing"),
        (lambda c: c["papers"]["underspec"].update(encoders=["mbert", "xlmr_larg"]),
         r"papers\.underspec\.encoders: unknown encoder 'xlmr_larg'.*Did you mean 'xlmr_large'\?"),
        (lambda c: c["papers"]["underspec"].update(targets="underspec_target"),
         r"papers\.underspec\.targets: unknown language set 'underspec_target'.*Did you mean 'underspec_targets'\?"),
        (lambda c: c["papers"]["underspec"]["metric"].update(parsing="lass"),
         r"papers\.underspec\.metric\.parsing: unknown metric of task parsing 'lass'; allowed: las, uas"),
        (lambda c: c["papers"]["underspec"].update(variants=["all", "head"]),
         r"config key papers\.underspec\.variants\[1\]: 'head' is not allowed; allowed: all, encoder"),
        (lambda c: c["papers"]["underspec"]["grid"]["alpha_2d"].update(step=0.3),
         r"papers\.underspec\.grid\.alpha_2d: alpha axis: step 0\.3 does not divide"),
        (lambda c: c["papers"]["underspec"]["grid"]["alpha_1d"].update(lo=0.25),
         r"papers\.underspec\.grid\.alpha_1d: .*must include 0 and 1"),
        (lambda c: c["papers"]["underspec"]["figures"]["fig3"].append({"task": "ner", "source": "en", "target": "ja"}),
         r"papers\.underspec\.figures\.fig3\[2\]\.target: unknown target language \(not in the targets set\) 'ja'"),
        (lambda c: c["language_sets"].update(underspec_targets=["de", "xx"]),
         r"papers\.underspec\.targets: task xnli has no data for \['xx'\]"),
        # named sets (data.<task>.sets) and the datasets that name them
        (lambda c: c["aux_sets"]["crossmulti_fa"]["tasks"]["ner"].append("pos.ancora"),
         r"config key aux_sets\.crossmulti_fa\.tasks\.ner\[2\]: unknown treebank set 'ancora'"),
        (lambda c: c["aux_sets"]["crossmulti_fa"]["tasks"]["ner"].append("qa.mlq"),
         r"config key aux_sets\.crossmulti_fa\.tasks\.ner\[2\]: dataset 'qa\.mlq': unknown set 'mlq' of task 'qa' "
         r"\(config key data\.qa\.sets\); allowed: mlqa, mlqa_q_en, mlqa_q_target, translate_test, translate_train, translated, tydiqa, "
         r"tydiqa_train, tydiqa_translate_train, xquad"),
        (lambda c: c["data"]["qa"]["sets"]["mlqa"].update(languages=[*c["language_sets"]["xtreme_mlqa"], "th"]),
         r"config key data\.qa\.sets\.mlqa\.languages: task qa has no data for \['th'\]; its source offers: en, ar"),
        # MLQA has no Russian: no download delivers the file (SQuAD's normalisation here: MLQA's
        # has no rule for ru either, tests/test_answer_normalisation.py)
        (lambda c: c["data"]["qa"]["sets"]["mlqa"].update(languages=[*c["language_sets"]["xtreme_mlqa"], "ru"],
                                                          answer_normalisation="squad"),
         r"dataset 'qa\.mlqa', language 'ru', split 'test': no catalog source delivers mlqa-v1/test/test-context-ru-question-ru\.json"),
        (lambda c: c["data"]["qa"]["sets"]["xquad_q_en"].update(cross={"question": "es"}),
         r"config key data\.qa\.sets\.xquad_q_en\.cross: 'es' is one of the set's own languages"),
        (lambda c: c["data"]["xnli"]["sets"]["mixed"].update(mix={"with": "en"}),
         r"config key data\.xnli\.sets\.mixed\.mix: 'seed' is a required property"),
        (lambda c: c["data"]["xnli"]["sets"]["mixed"].update(cross={"question": "en"}),
         r"config key data\.xnli\.sets\.mixed: unknown key\(s\) \['cross'\]"),
        (lambda c: c["data"]["xnli"]["sets"].update(Mixed={"languages": ["es"]}),
         r"config key data\.xnli\.sets: the name 'Mixed' is not allowed; expected a named set"),
    ],
)
def test_bad_config_names_the_key_and_allowed_values(mutate, message):
    cfg = base()
    mutate(cfg)
    with pytest.raises(XltError, match=message):
        check_workflow_config(cfg)  # validate, then the target lists (a source no download delivers)


class _NoDuplicates(yaml.SafeLoader):
    """PyYAML (and so Snakemake) keeps the last of two equal keys silently; we refuse."""


def _mapping(loader, node, deep=False):
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise AssertionError(f"duplicate key(s) {dup} in the mapping at line {node.start_mark.line + 1}")
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_NoDuplicates.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


SHIPPED_YAML = ["config.yaml", "slurm/profile.yaml", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "presets").glob("*.yaml")),
                *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "xlt" / "papers").glob("*/config.yaml")),
                *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "xlt" / "papers").glob("*/presets/*.yaml"))]


@pytest.mark.parametrize("path", SHIPPED_YAML)
def test_shipped_yaml_has_no_duplicate_keys(path):
    yaml.load((REPO / path).read_text(), Loader=_NoDuplicates)


def test_schema_declares_every_training_option_and_only_those():
    """hparams profiles are TrainConfig fields less what each run sets: the two stay in step."""
    import dataclasses

    from xlt.engine.train_config import TrainConfig

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    declared = set(schema["properties"]["hparams"]["additionalProperties"]["properties"])
    per_run = {"task", "encoder", "encoder_revision", "seed"}
    assert declared - {"per_task"} == {f.name for f in dataclasses.fields(TrainConfig)} - per_run


def test_schema_declares_the_encoder_build_blocks():
    import dataclasses

    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    build = schema["properties"]["encoders"]["additionalProperties"]["properties"]["build"]["properties"]
    assert set(build["shape"]["properties"]) == {f.name for f in dataclasses.fields(EncoderShape)}
    mlm = schema["$defs"]["mlm"]["properties"]  # encoders.*.build.mlm and adapt.mlm
    assert build["mlm"] == schema["properties"]["adapt"]["properties"]["mlm"] == {"$ref": "#/$defs/mlm"}
    assert set(mlm) == {f.name for f in dataclasses.fields(MLMConfig)}


def test_schema_declares_a_source_override_block_for_every_task():
    from xlt.registry import TASKS

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    assert set(schema["properties"]["data"]["properties"]) == {"ud", "wikimatrix", *TASKS}
