#!/usr/bin/env python
"""Write the world's unlabelled multilingual text, one sentence a line, for tokenizer and MLM."""

from xlt.process.cli import ArgumentParser, json_arg, run
from xlt.io import write_text


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--world", type=json_arg, required=True)
    ap.add_argument("--sentences", type=int, required=True, help="per language")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    from xlt.world import pretraining_text

    text = pretraining_text(a.world, a.sentences)
    write_text(a.out, "".join(s + "\n" for lang in sorted(text) for s in text[lang]))


run(main)
