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
    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm, train_wordpiece
    from xlt.errors import XltError

    texts = [line for _, line in iter_lines(a.corpus)]
    tok_dir = Path(a.checkpoint_dir) / "tokenizer"
    train_wordpiece(texts, a.build["vocab_size"], tok_dir)
    try:
        shape = EncoderShape(**a.build["shape"])
    except TypeError as e:
        raise XltError(f"config key encoders.*.build.shape: {e}") from None
    mlm = MLMConfig.from_dict(a.build["mlm"], "config key encoders.*.build.mlm")
    train_mlm(texts, a.out, Path(a.checkpoint_dir) / "mlm", mlm, tokenizer_dir=tok_dir, shape=shape,
              text_files=[a.corpus], resolved_config=a.build)


run(main)
