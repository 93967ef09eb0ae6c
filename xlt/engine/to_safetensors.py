"""Convert a model directory's pickled weights (`pytorch_model.bin`) to safetensors, once.

    python -m xlt.engine.to_safetensors DIR

No loader in the project reads pickled weights (they can run code when loaded); an encoder
whose directory holds only `pytorch_model.bin` is refused by the config check with this
command. The pickle is read with `torch.load(weights_only=True)`, which builds tensors and
plain containers only; `model.safetensors` (or one safetensors shard per pickled shard, and
its index) is written beside it, and the pickle is left in place.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from xlt.errors import XltError
from xlt.io import PICKLED_WEIGHTS
from xlt.process.cli import ArgumentParser, run

INDEX = "pytorch_model.bin.index.json"


def target_name(pickled: str) -> str:
    """`pytorch_model.bin` -> `model.safetensors`; a shard `pytorch_model-00001-of-00002.bin` ->
    `model-00001-of-00002.safetensors` (the names transformers looks for)."""
    return "model" + pickled.removeprefix("pytorch_model").removesuffix(".bin") + ".safetensors"


def convert(directory: str | Path) -> list[Path]:
    """Write the safetensors file of each pickled weight file in `directory`; the written paths."""
    # deferred: loads torch and safetensors only when this runs
    import torch
    from safetensors.torch import save_file

    directory = Path(directory)
    pickled = sorted(p for pattern in PICKLED_WEIGHTS for p in directory.glob(pattern))
    if not pickled:
        raise XltError(f"{directory}: no pickled weights ({', '.join(PICKLED_WEIGHTS)}) to convert")
    written = []
    for src in pickled:
        try:
            state = torch.load(src, map_location="cpu", weights_only=True)
        except Exception as e:  # an unpickling error names what the file holds beyond tensors
            raise XltError(f"{src}: not a plain state dict of tensors ({type(e).__name__}: {str(e).splitlines()[0]})") from None
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise XltError(f"{src}: not a state dict of tensors (got {type(state).__name__})")
        # safetensors refuses tensors that share storage (tied embeddings): each gets its own copy
        dest = directory / target_name(src.name)
        save_file({k: v.detach().contiguous().clone() for k, v in state.items()}, dest, metadata={"format": "pt"})
        written.append(dest)
    if (directory / INDEX).is_file():  # sharded: the index maps each weight to its new shard
        index = json.loads((directory / INDEX).read_text())
        index["weight_map"] = {k: target_name(v) for k, v in index["weight_map"].items()}
        dest = directory / "model.safetensors.index.json"
        dest.write_text(json.dumps(index, indent=2) + "\n")
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = ArgumentParser(prog="python -m xlt.engine.to_safetensors", description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", help="a Hugging Face model directory with pytorch_model.bin")
    a = ap.parse_args(argv)
    for path in convert(a.directory):
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    run(main)
