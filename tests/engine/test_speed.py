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


def _tiny_encoder(model_type: str, dropout: float):
    """A randomly initialised BERT or XLM-R base model (no weights needed to compare forwards)."""
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    cls_cfg, cls_model = (BertConfig, BertModel) if model_type == "bert" else (XLMRobertaConfig, XLMRobertaModel)
    cfg = cls_cfg(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32,
                  max_position_embeddings=40, pad_token_id=1, hidden_dropout_prob=dropout,
                  attention_probs_dropout_prob=dropout)
    return cls_model(cfg, add_pooling_layer=False)


def _batch():
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(5, 60, (4, 9), generator=g)
    mask = torch.ones(4, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[3, 2:] = 0
    ids[mask == 0] = 1
    return ids, mask


def test_lean_training_forward_equals_the_hugging_face_forward_with_dropout_off():
    """Same maths (fused q/k/v included), every hidden state, BERT and XLM-R (whose position
    ids start after the padding id), a batch with and one without padding; gradients too."""
    from xlt.engine.fastpath import lean_forward, lean_supported
    from xlt.engine.hooks import LayerHooks

    for model_type in ("bert", "xlm-roberta"):
        enc = _tiny_encoder(model_type, dropout=0.0)
        assert lean_supported(enc)
        for ids, mask in (_batch(), (_batch()[0][:1, :5], torch.ones(1, 5, dtype=torch.long))):
            enc.train()
            ref = enc(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            ref_grads = torch.autograd.grad(ref.last_hidden_state[mask.bool()].sum(), list(enc.parameters()))
            hooks = LayerHooks()
            recorded = hooks.record(range(3))
            last = lean_forward(enc, ids, mask, hooks=hooks)
            grads = torch.autograd.grad(last[mask.bool()].sum(), list(enc.parameters()))
            real = mask.bool()
            states = [recorded[k] for k in sorted(recorded)]
            assert len(states) == len(ref.hidden_states) == 3
            for a, b in zip(states, ref.hidden_states):
                torch.testing.assert_close(a[real], b[real], rtol=1e-5, atol=1e-6)
            for a, b in zip(grads, ref_grads):  # BERT's embedding sum is reassociated: fp32 rounding apart
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_lean_forward_runs_in_training_and_in_cpu_evaluation_only_for_plain_encoders(monkeypatch):
    from xlt.engine import fastpath

    enc = _tiny_encoder("bert", dropout=0.1)
    ids, mask = _batch()
    enc.eval()
    calls, lean_forward = [], fastpath.lean_forward
    monkeypatch.setattr(fastpath, "lean_forward", lambda *a, **k: calls.append(a[0]) or lean_forward(*a, **k))
    with torch.no_grad():
        hf = enc(input_ids=ids, attention_mask=mask).last_hidden_state
        lean = fastpath.encode(enc, ids, mask)
        assert calls == [enc]  # evaluation on a CPU: the lean forward (its oneDNN products)
        real = mask.bool()
        torch.testing.assert_close(lean[real], hf[real], rtol=1e-5, atol=1e-6)
        assert torch.equal(fastpath.encode(enc, ids, mask, lean=False), hf) and calls == [enc]  # fast_path off: HF's
    enc.config.is_decoder = True
    assert not fastpath.lean_supported(enc)


def test_keep_mask_dropout_keeps_the_rate_scales_and_is_seeded():
    from xlt.engine.fastpath import Dropout, dropout, use_keep_mask_dropout

    x = torch.ones(200, 500, requires_grad=True)
    torch.manual_seed(5)
    y = dropout(x, 0.1, True)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.005  # 100k draws: 5 std from 0.9
    p_used = round(0.1 * 2**15) / 2**15  # p on the mask's 15-bit grid
    assert abs(p_used - 0.1) <= 2**-16
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p_used)))
    y.sum().backward()
    assert torch.equal(x.grad != 0, kept)  # the gradient goes through the kept elements only, scaled alike
    torch.testing.assert_close(x.grad[kept], torch.full_like(y[kept], 1 / (1 - p_used)))
    for p, n in ((0.5, 7), (0.3, 1), (1.0, 4)):  # odd sizes (two elements per draw), p = 1 drops all
        z = dropout(torch.ones(n, 3), p, True)
        assert z.shape == (n, 3) and ((z == 0) | (z > 1)).all() and (p < 1 or (z == 0).all())
    for p in (0.5, 0.1, 0.9):  # both 15-bit halves of each draw are fair, at the top bit and below it
        halves = (dropout(torch.ones(400_000), p, True) != 0).float()
        assert abs(halves[0::2].mean().item() - (1 - p)) < 0.005 and abs(halves[1::2].mean().item() - (1 - p)) < 0.005
    torch.manual_seed(5)
    assert torch.equal(dropout(x, 0.1, True), y)
    assert dropout(x, 0.1, False) is x
    enc = use_keep_mask_dropout(_tiny_encoder("bert", dropout=0.1))
    drops = [m for m in enc.modules() if isinstance(m, torch.nn.Dropout)]
    assert drops and all(type(m) is Dropout and m.p == 0.1 for m in drops)


def test_bf16_keep_mask_is_the_cast_and_scaled_mask_bit_for_bit():
    """In bf16 the mask is built from the bit pattern of bf16(scale): the same values as
    casting the 0/1 mask and multiplying by the scale, from the same draws."""
    from xlt.engine.fastpath import keep_mask

    for p in (0.1, 0.3, 0.5):
        x = torch.ones(3, 7, 33, dtype=torch.bfloat16)  # odd size: two elements per draw
        torch.manual_seed(11)
        got = keep_mask(x, p)
        torch.manual_seed(11)
        want = keep_mask(x.float(), p).to(torch.bfloat16)  # the fp32 path: cast, then scale
        cut = round(p * 2**15)
        torch.manual_seed(11)
        bits = torch.empty((x.numel() + 1) // 2, dtype=torch.int32).random_().view(torch.int16)[: x.numel()]
        ref = ((bits & 0x7FFF) >= cut).view(x.shape).to(torch.bfloat16) * (2**15 / (2**15 - cut))
        assert got.dtype == torch.bfloat16 and torch.equal(got, ref) and torch.equal(got, want)
        assert set(got.unique().tolist()) == {0.0, float(torch.tensor(2**15 / (2**15 - cut)).bfloat16())}


def test_lean_attention_dropout_is_sdpa_maths_with_the_keep_mask():
    """The CPU attention with dropout: at a vanishing rate it is SDPA's output (masking
    included); at p it zeroes whole attention weights, never a padded key's."""
    from xlt.engine.fastpath import _attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    keep_key = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep_key)
    torch.testing.assert_close(_attention(q, k, v, keep_key, 1e-12, True), ref)
    torch.testing.assert_close(_attention(q, k, v, keep_key, 0.3, False), ref)
    torch.manual_seed(1)
    ones = torch.eye(5).expand(2, 3, 5, 5)  # v = identity: the output is the (dropped) weights themselves
    w = _attention(q, k, ones, keep_key, 0.3, True)
    assert (w[1, :, :, 3:] == 0).all() and (w == 0).any()


def test_clip_grad_norm_is_torchs_bit_for_bit_above_and_below_the_limit():
    from xlt.engine.runtime import clip_grad_norm

    for scale in (10.0, 0.01):  # clipped, and left alone
        g = torch.Generator().manual_seed(3)
        ours = [torch.nn.Parameter(torch.zeros(s)) for s in ((4, 5), (7,), (3, 2))]
        ref = [torch.nn.Parameter(torch.zeros(s)) for s in ((4, 5), (7,), (3, 2))]
        for a, b in zip(ours, ref):
            a.grad = torch.randn(a.shape, generator=g) * scale
            b.grad = a.grad.clone()
        ours.append(torch.nn.Parameter(torch.zeros(2)))  # no gradient: skipped by both
        total = clip_grad_norm(ours, 1.0)
        assert torch.equal(total, torch.nn.utils.clip_grad_norm_(ref, 1.0))
        assert all(torch.equal(a.grad, b.grad) for a, b in zip(ours, ref))
        assert (total > 1.0) == (scale == 10.0)


def test_cpu_fused_adamw_is_torchs_fused_adamw_bit_for_bit_and_resumes():
    """Same update as torch's fused AdamW, a parameter without a gradient on some steps
    included (AdamW skips it and its step counter), and through a state_dict round trip."""
    import io

    from xlt.engine.runtime import CpuFusedAdamW

    def run(make, resume_at=None):
        model = _toy_model(0)
        groups = lambda: [{"params": [model[0].weight, model[2].weight], "weight_decay": 0.01},  # noqa: E731
                          {"params": [model[0].bias, model[1].weight, model[1].bias, model[2].bias], "weight_decay": 0.0}]
        opt = make(groups())
        x, y = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)), torch.arange(32) % 3
        for step in range(6):
            if step == resume_at:
                blob = io.BytesIO()
                torch.save(opt.state_dict(), blob)
                opt = make(groups())
                opt.load_state_dict(torch.load(io.BytesIO(blob.getvalue()), weights_only=True))
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if step % 2:
                model[2].bias.grad = None  # left out of this step
            opt.step()
            opt.zero_grad()
        return model, opt

    ref_model, ref = run(lambda g: torch.optim.AdamW(g, lr=1e-2, fused=True))
    for resume_at in (None, 3):
        model, opt = run(lambda g: CpuFusedAdamW(g, lr=1e-2), resume_at)
        assert all(torch.equal(a, b) for a, b in zip(model.parameters(), ref_model.parameters()))
        steps = [opt.state[p]["step"].item() for p in model.parameters()]
        assert steps == [ref.state[p]["step"].item() for p in ref_model.parameters()] and steps[-1] == 3.0
    assert isinstance(build_optimizer(model, 1e-2, 0.01, device=torch.device("cpu")), CpuFusedAdamW)


def test_attention_weights_padded_rows_are_the_plain_softmax():
    """Rows under 16 keys are padded with weight exactly 0: the same softmax as unpadded, in
    fp32 whatever the scores' dtype, with masked keys at 0."""
    from xlt.engine.fastpath import attention_weights, key_bias

    g = torch.Generator().manual_seed(2)
    for keys in (3, 15, 16, 40):
        scores = torch.randn(2, 4, 5, keys, generator=g)
        keep = torch.ones(2, 1, 1, keys, dtype=torch.bool)
        keep[1, ..., -2:] = False
        w = attention_weights(scores.bfloat16(), 0.5, key_bias(keep))
        ref = (scores.bfloat16().float() * 0.5).masked_fill(~keep, float("-inf")).softmax(-1)
        assert w.dtype == torch.float32 and w.shape == scores.shape
        torch.testing.assert_close(w, ref)
        assert (w[1, ..., -2:] == 0).all()
