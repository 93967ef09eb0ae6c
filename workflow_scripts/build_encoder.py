#!/usr/bin/env python
"""Train a WordPiece tokenizer on a corpus and MLM-pretrain a small BERT; save in HF format."""

from pathlib import Path

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads
from xlt.io import iter_lines

HEARTBEAT_S = 30.0


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

    name = f"build_encoder {Path(a.out).parent.name}"  # the console shows this job's progress: it runs minutes
    texts = [line for _, line in iter_lines(a.corpus)]
    tok_dir = Path(a.checkpoint_dir) / "tokenizer"
    print(f"{name}: WordPiece vocabulary of {a.build['vocab_size']} from {len(texts)} sentences", flush=True)
    train_wordpiece(texts, a.build["vocab_size"], tok_dir)
    try:
        shape = EncoderShape(**a.build["shape"])
    except TypeError as e:
        raise XltError(f"config key encoders.*.build.shape: {e}") from None
    mlm = MLMConfig.from_dict(a.build["mlm"], "config key encoders.*.build.mlm")
    print(f"{name}: MLM pretraining, {mlm.steps} steps (a line every {HEARTBEAT_S:.0f} s)", flush=True)
    train_mlm(texts, a.out, Path(a.checkpoint_dir) / "mlm", mlm, tokenizer_dir=tok_dir, shape=shape,
              text_files=[a.corpus], resolved_config=a.build, desc=name, heartbeat_s=HEARTBEAT_S)


run(main)
