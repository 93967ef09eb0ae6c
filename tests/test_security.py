"""Weights load only from safetensors, torch.load only tensors, and no path leaves results/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from xlt import papers
from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.workflow import packs as PACKS
from xlt.workflow import footprint as FOOT
from xlt.workflow.config import load_configs

LIBRARY = sorted((REPO / "xlt").rglob("*.py")) + sorted((REPO / "workflow_scripts").glob("*.py"))


def _calls(name: str):
    """(file, call node) of every call of an attribute `name` in the library and scripts."""
    for path in LIBRARY:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name:
                yield path, node


def _keyword(node: ast.Call, name: str):
    kw = next((k for k in node.keywords if k.arg == name), None)
    return kw.value.value if kw is not None and isinstance(kw.value, ast.Constant) else None


def test_every_torch_load_is_weights_only():
    loads = [(p, n) for p, n in _calls("load") if isinstance(n.func.value, ast.Name) and n.func.value.id == "torch"]
    assert loads, "no torch.load found: the scan is broken"
    bad = [f"{p.relative_to(REPO)}:{n.lineno}" for p, n in loads if _keyword(n, "weights_only") is not True]
    assert not bad, f"torch.load without weights_only=True (unpickling runs code): {bad}"


def test_every_model_from_pretrained_is_safetensors_only():
    models = [(p, n) for p, n in _calls("from_pretrained")
              if isinstance(n.func.value, ast.Name) and "Tokenizer" not in n.func.value.id]
    assert models, "no model from_pretrained found: the scan is broken"
    bad = [f"{p.relative_to(REPO)}:{n.lineno}" for p, n in models if _keyword(n, "use_safetensors") is not True]
    assert not bad, f"from_pretrained without use_safetensors=True (a pytorch_model.bin is a pickle): {bad}"


def test_a_pickled_encoder_is_refused(tiny_encoder, tmp_path):
    import shutil

    from xlt.engine.model import load_encoder
    from xlt.errors import XltError

    enc = tmp_path / "enc"
    shutil.copytree(tiny_encoder, enc)
    (enc / "model.safetensors").rename(enc / "pytorch_model.bin")
    with pytest.raises(XltError, match=r"holds only pickled weights \(pytorch_model\.bin\).*to_safetensors"):
        load_encoder(str(enc))


# ---- wildcards ------------------------------------------------------------------------------

RULES = sorted((REPO / "rules").glob("*.smk"))
ESCAPES = ["..", "../x", "a/b", "/etc", "a/../b", "", "x\n", "seed1/../../y"]


def _rule_wildcards() -> dict[str, set[str]]:
    """{rule file: wildcard names in its f-string ({{name}}) and plain ({name}) paths}."""
    out = {}
    for path in RULES:
        text = path.read_text(encoding="utf-8")
        paths = re.findall(r'f?"([^"\n]*/[^"\n]*)"', text)
        names = set()
        for p in paths:
            names |= set(re.findall(r"\{\{(\w+)\}\}", p)) if p.count("{{") else set(re.findall(r"\{(\w+)\}", p))
        out[path.name] = {n for n in names if n not in {"RESULTS", "log", "output", "input", "params", "threads", "wildcards"}}
    return out


def test_every_wildcard_is_constrained_and_no_constraint_leaves_its_folder():
    seen = set().union(*_rule_wildcards().values())
    assert {"encoder", "task", "recipe", "seed", "entry"} <= seen, "the rule scan is broken"
    from xlt.align import targets as A

    constraints = {**P.wildcard_constraints(), **A.WILDCARDS}  # the global ones (the papers' too), and the alignment stage's
    unconstrained = sorted(seen - set(constraints))
    assert not unconstrained, f"wildcards without a constraint in xlt.dag.targets / a paper's / xlt.align.targets WILDCARDS: {unconstrained}"
    for name, pattern in constraints.items():
        for value in ESCAPES:
            assert not re.fullmatch(pattern, value), f"wildcard {name}={value!r} would leave results/"


def test_rule_level_constraints_stay_inside_their_folder():
    found = 0
    config = load_configs([])  # a constraint the plan computes from the config (underspec's 2D grids)
    for path in RULES:
        for block in re.findall(r"wildcard_constraints:\n((?:\s+\w+=.*\n)+)", path.read_text(encoding="utf-8")):
            for line in block.strip().splitlines():
                name, _, expr = line.strip().rstrip(",").partition("=")
                # the rule's own expression, e.g. "|".join(T.STATS_TABLES); a pack's rule (one per pack of
                # config.yaml's seeds, rules/finetune.smk) is checked for each pack; finetune_temp's over
                # the model families config.yaml removes once evaluated (xlt.workflow.footprint)
                packs = PACKS.packs(config) if "_pack" in expr else [None]
                removed = FOOT.removed_families(config)
                for pack in packs:
                    pattern = eval(expr, {"T": T, "P": P, "papers": papers, "_pack": pack, "config": config, "FOOT": FOOT, "REMOVED": removed})
                    found += 1
                    for value in ESCAPES:
                        assert not re.fullmatch(pattern, value), f"{path.name}: {name}={value!r} would leave results/"
    assert found, "no rule-level wildcard_constraints found: the scan is broken"


def test_every_output_is_under_results_or_the_raw_root_or_logs():
    """A rule writes only under {RESULTS}/, the raw manifests (download) or logs/ (T, P, A, Z: the
    path functions of xlt.dag.targets, xlt.workflow.paper_targets, xlt.align.targets, xlt.zeroshot;
    `papers.<slug>`: a paper's own plan, through the registry)."""
    checked = 0
    for path in RULES:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"\n    (?:output|log):\n((?:        .*\n)+)", text):
            for line in block.splitlines():
                line = line.strip()
                if not line or line.startswith(("directory(", ")", "unpack(")):
                    continue
                assert re.search(r'RESULTS\}|"logs/|(?:[TPAZ]|papers)(\.\w+)+\(|^\w+=[TPAZ]\.|^\w+=f"\{RESULTS\}|rules\.', line), \
                    f"{path.name}: {line}"
                checked += 1
    assert checked > 10, "the output scan is broken"
