"""One fine-tune job (xlt.stages.finetune_job.FinetuneJob): built once by the rule
(xlt.workflow.packs.finetune_job), handed whole as one JSON argument to finetune.py, read back
as the same job; a pack is the same job with several seeds."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from xlt.errors import XltError
from xlt.stages.finetune_job import FinetuneJob
from xlt.workflow import packs as K
from xlt.workflow.config import check_workflow_config, load_configs


@pytest.fixture(scope="module")
def full():
    cfg = load_configs([REPO / "config.yaml"])
    check_workflow_config(cfg)
    return cfg


def _wildcards(family):
    encoder, init, task, recipe = family
    return SimpleNamespace(encoder=encoder, init=init, task=task, recipe=recipe)


def _model(cfg, family, seed):
    return f"{cfg['results']}/models/{'/'.join(family)}/seed{seed}"


def test_a_pack_and_a_seed_are_one_job_round_tripped_whole(full):
    pack = next(p for p in K.packs(full) if len(p.seeds) == 3)
    family = pack.families[0]
    outs = [_model(full, family, s) for s in pack.seeds]
    job = K.finetune_job(full, _wildcards(family), outs)
    assert job.packed and job.seeds == list(pack.seeds) and job.outs == outs
    assert job.pack_checkpoint_dir.endswith(f"/{pack.stem}") and job.tensorboard_dir is None and job.aux == []
    assert job.checkpoint_dirs == [o.replace("/models/", "/checkpoints/models/", 1) for o in outs]
    again = FinetuneJob.from_dict(json.loads(job.to_json()))
    assert again == job
    # every setting of the recipe travels: the run's TrainConfig is the profile with the job's seed
    cfg = again.train_config(2)
    assert cfg.seed == 2 and cfg.lr == job.hparams["lr"] and cfg.task == job.task
    one = K.finetune_job(full, _wildcards(family), outs[:1])
    assert not one.packed and one.pack_checkpoint_dir is None and one.tensorboard_dir.endswith("/seed1")
    assert {f.name: getattr(one, f.name) for f in dataclasses.fields(one) if f.name not in
            ("seeds", "outs", "checkpoint_dirs", "oracle_langs", "pack_checkpoint_dir", "tensorboard_dir")} == \
        {f.name: getattr(job, f.name) for f in dataclasses.fields(job) if f.name not in
         ("seeds", "outs", "checkpoint_dirs", "oracle_langs", "pack_checkpoint_dir", "tensorboard_dir")}


def test_a_new_training_option_travels_in_the_job_untouched():
    """A TrainConfig field in a profile reaches the run with no edit between the config and the
    engine: the job carries the resolved profile whole."""
    job = FinetuneJob.of_seed("pos", "enc", "d", ["en"], {"lr": 1e-3, "max_grad_value": 0.5}, 3, "m", "ck")
    assert FinetuneJob.from_dict(json.loads(job.to_json())).train_config(3).max_grad_value == 0.5


@pytest.mark.parametrize("change, match", [
    ({"outs": ["a", "b"]}, "needs as many outputs"),
    ({"seeds": []}, "at least one seed"),
    ({"seeds": [1, 2], "outs": ["a", "b"], "checkpoint_dirs": ["c", "d"], "oracle_langs": [[], []]},
     "a pack .* needs pack_checkpoint_dir"),
])
def test_a_job_that_does_not_add_up_is_refused(change, match):
    base = dataclasses.asdict(FinetuneJob.of_seed("pos", "enc", "d", ["en"], {}, 1, "m", "ck"))
    with pytest.raises(XltError, match=match):
        FinetuneJob.from_dict({**base, **change})


def test_unknown_and_missing_fields_are_named():
    base = dataclasses.asdict(FinetuneJob.of_seed("pos", "enc", "d", ["en"], {}, 1, "m", "ck"))
    with pytest.raises(XltError, match=r"--job: unknown fine-tune job field\(s\) \['learning_rate'\]"):
        FinetuneJob.from_dict({**base, "learning_rate": 1}, where="--job")
    with pytest.raises(XltError, match=r"missing fine-tune job field\(s\) \['task'\]"):
        FinetuneJob.from_dict({k: v for k, v in base.items() if k != "task"})
