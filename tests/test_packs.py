"""Which fine-tunes train together (xlt.workflow.packs, config engine.pack): the seeds the tables read,
K at a time, of models that can stack; none on the tiny preset; a bad value names the key."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from xlt.workflow import packs as K
from xlt.dag import targets as T
from xlt.workflow.config import check_workflow_config, load_configs
from xlt.errors import XltError


@pytest.fixture(scope="module")
def full():
    cfg = load_configs([REPO / "config.yaml"])
    check_workflow_config(cfg)
    return cfg


def with_pack(cfg: dict, k) -> dict:
    return {**cfg, "engine": {**cfg["engine"], "pack": k}}


def test_the_tiny_preset_trains_every_model_alone():
    cfg = load_configs([REPO / "config.yaml", REPO / "presets" / "tiny.yaml"])
    check_workflow_config(cfg)
    assert K.pack_size(cfg) == 1 and K.packs(cfg) == []


def test_config_yaml_packs_the_seeds_its_tables_read_k_at_a_time(full):
    assert K.pack_size(full) == 4
    packs = K.packs(full)
    wanted = K.wanted_seeds(full)
    seen = set()
    for pack in packs:
        assert 2 <= len(pack.seeds) <= 4 and list(pack.seeds) == sorted(pack.seeds)
        for family in pack.families:
            assert K.why_not(full, family) is None
            assert set(pack.seeds) <= wanted[family]  # nothing trained that no table reads
            for seed in pack.seeds:
                assert (family, seed) not in seen  # a model is in one pack at most
                seen.add((family, seed))
    by_seeds = {p.seeds: p for p in packs}
    assert (1, 2, 3) in by_seeds  # the tables' three seeds
    five = [f for f, s in wanted.items() if s == {1, 2, 3, 4, 5} and K.why_not(full, f) is None]
    assert five and all(f in by_seeds[(1, 2, 3, 4)].families for f in five)  # 5 is left alone
    underspec = [f for p in packs for f in p.families if f[3].endswith(".underspec")]
    assert underspec  # models only a paper's own rule (the grid) reads: Paper.models_read


def test_models_that_cannot_stack_train_alone(full):
    reasons = {K.why_not(full, f) for f in K.wanted_seeds(full)}
    assert {"a model with extras trains alone", "a recipe with auxiliary streams trains alone",
            "a biaffine head is not packable"} <= reasons
    packed = {f for p in K.packs(full) for f in p.families}
    assert not any(T.Recipe.parse(f[3]).aux for f in packed)
    assert not any(f[2].startswith("parsing") for f in packed)


def test_a_packs_rule_matches_its_families_only(full):
    pack = next(p for p in K.packs(full) if p.seeds == (1, 2, 3))
    pattern = re.compile(rf"results/models/(?P<encoder>{pack.encoder_constraint()})/(?P<init>[^/]+)/(?P<task>[^/]+)/"
                         r"(?P<recipe>[^/]+)/seed2$")
    family = pack.families[0]
    assert pattern.fullmatch("results/models/" + "/".join(family) + "/seed2").group("encoder") == family[0]
    other = (family[0], family[1], family[2], "zz." + family[3].split(".", 1)[1])
    assert pattern.fullmatch("results/models/" + "/".join(other) + "/seed2") is None
    assert pack.rule == "finetune_pack_1_2_3" and K.base_rule(pack.rule) == "finetune"
    assert K.base_rule("finetune") == "finetune" and K.base_rule("finetune_packet") == "finetune_packet"


def test_pack_one_packs_nothing_and_pack_is_no_training_setting(full):
    assert K.packs(with_pack(full, 1)) == []
    assert "pack" not in T.hparams(full, "en.crossmulti", "xnli")  # not a TrainConfig field
    assert all(len(p.seeds) <= 2 for p in K.packs(with_pack(full, 2)))


@pytest.mark.parametrize("bad", [0, -1, "four", 2.5, True])
def test_a_bad_pack_value_names_the_key(full, bad):
    with pytest.raises(XltError, match=r"engine\.pack"):
        check_workflow_config(with_pack(full, bad))
    with pytest.raises(XltError, match=r"engine\.pack=.*integer >= 1"):
        K.pack_size(with_pack(full, bad))
