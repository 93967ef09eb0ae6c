"""`make claims-seeds`: the claims page on more seeds where a claim's comparison is cheap (Makefile,
presets/claims.yaml, xlt/papers/<slug>/presets/claims.yaml). Only the seeds of the tables those
claims read change; everything else is the tiny preset's."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO
from xlt.workflow.config import load_configs

TINY = [str(REPO / "presets" / "tiny.yaml")]
CLAIMS = [*TINY, str(REPO / "presets" / "claims.yaml")]


def test_the_makefile_target_layers_the_claims_preset_over_the_tiny_one():
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^CLAIMS_PRESET \?= presets/claims\.yaml$", make, re.M)
    body = make.split("\nclaims-seeds:", 1)[1].split("\n\n", 1)[0]
    assert "all_claims" in body and "--configfile $(PRESET) $(CLAIMS_PRESET)" in body


def test_only_the_seeds_of_the_claims_tables_differ_from_the_tiny_preset():
    tiny, more = load_configs(TINY), load_configs(CLAIMS)
    changed = {}
    for slug in tiny["papers"]:
        a, b = tiny["papers"][slug], more["papers"][slug]
        changed[slug] = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    assert changed.pop("xmixup") == {"seeds"} and changed.pop("crossmulti") == {"table6"}
    assert not any(changed.values())
    assert more["papers"]["xmixup"]["seeds"] == [1, 2, 3, 4, 5]
    t6_tiny, t6 = tiny["papers"]["crossmulti"]["table6"], more["papers"]["crossmulti"]["table6"]
    assert t6["seeds"] == list(range(1, 8)) and {**t6, "seeds": t6_tiny["seeds"]} == t6_tiny
    for key in set(tiny) - {"papers"}:
        assert more[key] == tiny[key], key


def test_the_claims_page_then_plans_the_extra_seeds_models(tmp_path):
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "all_claims",
                          "--directory", str(tmp_path), "--configfile", *CLAIMS], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    models = set(re.findall(r"output: (results/models/\S+/seed\d+)\n", out))
    # Table 6's cross NER baseline and its +FA on seed 7; X-Mixup's translate-train on seed 5
    assert any(m.endswith("/ner/en.crossmulti/seed7") for m in models)
    assert any("crossmulti_fa/seed7" in m for m in models)
    assert any("xnli.translate_train/" in m and m.endswith("/seed5") for m in models)
    # Table 2's own models stay on the tiny preset's two seeds
    assert not any("/marc/" in m and m.endswith(("/seed3", "/seed7")) for m in models)
