"""A paper's schema declares the shared config blocks only it reads (`extends` in
xlt/papers/<slug>/schema.yaml, composed by xlt.workflow.config.workflow_schema): the adjust paper's
adaptation stage (`adapt.adjust`) and auxiliary stream kind (`aligned_pairs`) are its own,
and are checked as strictly as the shared schema checks its blocks."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import REPO
from tests.test_bad_config import refused, tiny_sources  # noqa: F401  (a fixture)
from xlt.workflow.config import SCHEMA, extend_schema, workflow_schema
from xlt.errors import XltError


def test_the_adjust_papers_blocks_live_in_its_schema_and_compose_into_the_workflows():
    shared = yaml.safe_load(SCHEMA.read_text())
    own = yaml.safe_load((REPO / "xlt" / "papers" / "adjust" / "schema.yaml").read_text())
    assert "adjust" not in shared["properties"]["adapt"]["properties"]
    assert "aligned_pairs" not in SCHEMA.read_text()
    composed = workflow_schema()
    assert composed["properties"]["adapt"]["properties"]["adjust"] == own["extends"]["/properties/adapt/properties"]["adjust"]
    kinds = [b["properties"].get("kind", {}).get("const") for b in composed["properties"]["aux_sets"]["additionalProperties"]["oneOf"]]
    assert kinds == [None, "aligned_pairs"]  # the shared task streams first, then the paper's kind
    assert "extends" not in composed["properties"]["papers"]["properties"]["adjust"]


@pytest.mark.parametrize("bad,line", [
    ({"adapt": {"adjust": {"lr_peak": 1}}}, "config key adapt.adjust: unknown key(s) ['lr_peak']; allowed: adam_betas, "),
    ({"adapt": {"adjust": {"precision": "fp16"}}}, "config key adapt.adjust.precision: 'fp16' is not allowed; allowed: auto, bf16, fp32"),
    ({"adapt": {"adjust": {"adam_betas": [0.9]}}}, "config key adapt.adjust.adam_betas: [0.9] is too short"),
    ({"aux_sets": {"y": {"kind": "aligned_pairs", "weight": 0.01}}}, "config key aux_sets.y: {'kind': 'aligned_pairs', "),
    ({"aux_sets": {"y": {"kind": "aligned_pairs", "weight": 0.01, "size": 2, "tokens": "all"}}}, "config key aux_sets.y: "),
])
def test_the_papers_blocks_are_checked_as_strictly_naming_the_key(tiny_sources, bad, line):  # noqa: F811
    assert refused(tiny_sources, bad).startswith(f"bad.yaml: {line}")


def test_an_extension_that_does_not_fit_the_shared_schema_fails_naming_the_paper_and_the_key():
    schema = copy.deepcopy(yaml.safe_load(SCHEMA.read_text()))
    where = "xlt/papers/toy/schema.yaml: extends"
    with pytest.raises(XltError, match=r"toy/schema.yaml: extends /properties/adapt/propertys: 'propertys' is not in the shared schema"):
        extend_schema(schema, "/properties/adapt/propertys", {"x": {}}, f"{where} /properties/adapt/propertys")
    with pytest.raises(XltError, match=r"\['mlm'\] already defined in the shared schema or by another paper"):
        extend_schema(schema, "/properties/adapt/properties", {"mlm": {}}, where)
    with pytest.raises(XltError, match="adds a dict to a list"):
        extend_schema(schema, "/properties/aux_sets/additionalProperties/oneOf", {"x": {}}, where)
    extend_schema(schema, "/properties/adapt/properties", {"toy": {"type": "object"}}, where)
    assert list(schema["properties"]["adapt"]["properties"]) == ["mlm", "toy"]
