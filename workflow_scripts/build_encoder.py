#!/usr/bin/env python
"""Train a WordPiece tokenizer on a corpus and MLM-pretrain a small BERT; save in HF format."""

from pathlib import Path

from xlt.cli import ArgumentParser, json_arg, run, set_threads
from xlt.io import iter_lines


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--build", type=json_arg, required=True, help="the encoder's build block (JSON)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.encoder_pretrain import EncoderShape, MLMConfig, pretrain_mlm, train_wordpiece
    from xlt.errors import XltError

    texts = [line for _, line in iter_lines(a.corpus)]
    tok_dir = Path(a.checkpoint_dir) / "tokenizer"
    train_wordpiece(texts, a.build["vocab_size"], tok_dir)
    try:
        shape, mlm = EncoderShape(**a.build["shape"]), MLMConfig(**a.build["mlm"])
    except TypeError as e:
        raise XltError(f"config key encoders.*.build: {e}") from None
    pretrain_mlm(texts, tok_dir, a.out, Path(a.checkpoint_dir) / "mlm", shape, mlm, text_files=[a.corpus])


run(main)
