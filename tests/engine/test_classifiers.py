"""The classification heads a paper declares (TrainConfig.classifier): one linear layer on
[CLS] (underspec), Hugging Face's sequence classifier (crossmulti, dlfa: BERT's pretrained
pooler + a linear layer), or our fresh dense head; each rebuilt from its saved spec."""

import pytest
import torch

from xlt.workflow.config import config_sources, merged
from xlt.engine import heads
from xlt.engine.train_config import TrainConfig
from xlt.engine.model import load_encoder, load_model
from xlt.errors import XltError

HP = {"lr": 1e-3, "epochs": 1, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}


@pytest.fixture(scope="module")
def pooled_encoder(tiny_encoder, tmp_path_factory):
    """The tiny encoder with a pretrained pooler of known weights, as mBERT's checkpoint has."""
    from transformers import AutoTokenizer, BertModel

    out = tmp_path_factory.mktemp("pooled") / "enc"
    bert = BertModel.from_pretrained(tiny_encoder, add_pooling_layer=True)
    with torch.no_grad():
        bert.pooler.dense.weight.copy_(torch.arange(32 * 32, dtype=torch.float32).view(32, 32) / 1000)
        bert.pooler.dense.bias.fill_(0.5)
    bert.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_encoder).save_pretrained(out)
    return out


def _build(encoder_dir, classifier, task="marc", **hp):
    from xlt.engine.recipes.finetune import build_task_model

    cfg = TrainConfig.from_dict({**HP, **hp, "task": task, "encoder": str(encoder_dir), "classifier": classifier})
    encoder, _ = load_encoder(str(encoder_dir), pooler=classifier == "hf_sequence_classifier")
    return build_task_model(cfg, encoder), encoder


def test_hf_sequence_classifier_starts_from_berts_pretrained_pooler(pooled_encoder):
    model, encoder = _build(pooled_encoder, "hf_sequence_classifier")
    assert model.spec.classifier == "pooler" and isinstance(model.head, heads.PooledClassificationHead)
    assert model.head.pooler.bias.eq(0.5).all() and model.head.pooler.weight[1, 2].item() == pytest.approx(0.034)
    assert encoder.pooler is None  # the head holds it: the saved encoder stays a base model
    # the logits are the linear layer on tanh(pooler([CLS])), nothing else
    h = torch.randn(2, 5, 32)
    model.eval()
    expected = model.head.out(torch.tanh(h[:, 0] @ model.head.pooler.weight.T + 0.5))
    assert torch.allclose(model.head(h, {})["logits"], expected)


def test_linear_is_one_layer_on_cls(tiny_encoder):
    model, _ = _build(tiny_encoder, "linear", head_dropout=0.2, dropout=0.1)
    assert [type(m) for m in model.head.modules() if isinstance(m, torch.nn.Linear)] == [torch.nn.Linear]
    assert model.spec.dropout == 0.2 and model.head.dropout.p == 0.2  # head_dropout, not the encoder's 0.1
    assert model.encoder.config.hidden_dropout_prob == 0.1


def test_hf_sequence_classifier_follows_the_architecture():
    from transformers import BertConfig, XLMRobertaConfig

    from xlt.engine.recipes.finetune import spec_classifier

    shape = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37, vocab_size=100)
    assert spec_classifier("hf_sequence_classifier", BertConfig(**shape)) == "pooler"
    assert spec_classifier("hf_sequence_classifier", XLMRobertaConfig(**shape)) == "dense"  # RoBERTa's fresh head
    assert spec_classifier("linear", BertConfig(**shape)) == "linear"


def test_a_pooled_model_saves_and_reloads_its_head(pooled_encoder, toy_data, tmp_path):
    from safetensors import safe_open

    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "marc", "encoder": str(pooled_encoder), "seed": 1,
                                 "classifier": "hf_sequence_classifier"})
    out = tmp_path / "m"
    train(cfg, [toy_data / "marc" / "en" / "train.jsonl"], [toy_data / "marc" / "en" / "dev.jsonl"], out, tmp_path / "ck")
    model, _, meta = load_model(out)
    assert meta["spec"]["classifier"] == "pooler" and isinstance(model.head, heads.PooledClassificationHead)
    with safe_open(str(out / "encoder" / "model.safetensors"), "pt") as f:
        assert not any("pooler" in k for k in f.keys())
    with safe_open(str(out / "modules.safetensors"), "pt") as f:
        trained = f.get_tensor("heads.marc.pooler.bias")
    assert torch.equal(model.head.pooler.bias, trained) and not trained.eq(0.5).all()  # fine-tuned, then saved


def test_an_unknown_classifier_is_refused_with_the_allowed_ones():
    with pytest.raises(XltError, match="classifier='mlp'; allowed: dense, linear, hf_sequence_classifier"):
        TrainConfig.from_dict({"task": "marc", "encoder": "x", "classifier": "mlp"})


@pytest.mark.parametrize("preset", [[], ["presets/tiny.yaml"]])
def test_each_paper_declares_its_head(preset):
    """underspec: "a linear classifier" (its authors' one nn.Linear on [CLS]); crossmulti: Hugging
    Face's sequence classifier; dlfa: XTREME's, the same (and XTREME's no warmup)."""
    config = merged(config_sources(preset))
    profile = {slug: config["hparams"][config["papers"][slug]["hparams"]] for slug in ("underspec", "crossmulti", "dlfa")}
    assert profile["underspec"]["classifier"] == "linear"
    assert profile["underspec"]["adam_betas"] == [0.9, 0.99] and profile["underspec"]["head_dropout"] == 0.2
    assert profile["crossmulti"]["classifier"] == profile["dlfa"]["classifier"] == "hf_sequence_classifier"
    assert profile["dlfa"]["warmup_ratio"] == 0.0
