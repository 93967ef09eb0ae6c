"""The speed features keep the arithmetic: each one against the plain computation it replaces."""

import torch

from xlt.engine.runtime import build_optimizer


def _toy_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 3))


def test_fused_adamw_on_cpu_matches_the_per_tensor_update():
    fused_model, plain_model = _toy_model(0), _toy_model(0)
    fused = build_optimizer(fused_model, 1e-2, 0.01, device=torch.device("cpu"))
    assert fused.defaults["fused"]
    decay = [p for n, p in plain_model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in plain_model.named_parameters() if p.ndim < 2]
    plain = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                              lr=1e-2, foreach=False)
    x, y = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)), torch.arange(32) % 3
    for _ in range(5):
        for model, opt in ((fused_model, fused), (plain_model, plain)):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    for a, b in zip(fused_model.parameters(), plain_model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert not torch.equal(fused_model[0].weight, _toy_model(0)[0].weight)  # it did train


def _tiny_bert_mlm(seed: int):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                     max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForMaskedLM(cfg)


def test_mlm_head_on_masked_positions_only_equals_the_full_head():
    from xlt.engine.kinds import IGNORE, kind_of
    from xlt.engine.recipes.mlm import MLMModel

    sparse, dense = MLMModel(_tiny_bert_mlm(0)), _tiny_bert_mlm(0)
    assert sparse._head_name == "cls"
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(5, 50, (4, 12), generator=g)
    attention = torch.ones_like(ids)
    attention[1, 7:] = 0  # one padded row
    labels = torch.where((torch.rand(ids.shape, generator=g) < 0.3) & (attention == 1), ids, IGNORE)
    batch = {"input_ids": ids, "attention_mask": attention, "mlm_labels": labels}
    out = sparse(batch)
    assert out["logits"].shape == (int((labels != IGNORE).sum()), 50)  # only the masked positions
    loss_sparse = kind_of("mlm").loss(out, batch)
    loss_dense = kind_of("mlm").loss({"logits": dense(input_ids=ids, attention_mask=attention).logits}, batch)
    torch.testing.assert_close(loss_sparse, loss_dense, rtol=1e-5, atol=1e-5)
    loss_sparse.backward()
    loss_dense.backward()
    for (name, a), b in zip(sparse.mlm.named_parameters(), dense.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)
    # without labels (evaluation, or a layout it cannot split) the whole head runs
    assert sparse({"input_ids": ids, "attention_mask": attention})["logits"].shape == (4, 12, 50)
