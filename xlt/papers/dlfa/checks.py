"""dlfa's check of its config block (papers.dlfa): what the schema cannot express."""

from __future__ import annotations

from xlt.errors import XltError
from xlt.papers.dlfa.plan import SLUG, trained


def check(cfg: dict, p: dict) -> None:
    """Cross-checks the schema cannot express. `ablation` entries of tasks not trained are
    ignored (a preset that trains fewer tasks keeps config.yaml's entries)."""
    control = p["control"]
    ablation = [x for t in trained(p) for x in p["ablation"].get(t, [])]
    bad = [x for x in p["layers"] + ablation + p["table7"]["layers"] if not 0 <= x < control]
    if bad:
        raise XltError(f"config key papers.{SLUG}.layers / ablation / table7.layers: layers {bad} are not below the "
                       f"control (the last layer) {control}")
    for key, tasks, allowed in (("train_tasks", p.get("train_tasks", []), p["tasks"]),
                                ("table7.tasks", p["table7"]["tasks"], trained(p))):
        extra = [t for t in tasks if t not in allowed]
        if extra:
            raise XltError(f"config key papers.{SLUG}.{key}: tasks {extra} not in {allowed}")
    if not any(p["ablation"].get(t) for t in trained(p)):
        raise XltError(f"config key papers.{SLUG}.ablation: no layers for any trained task ({trained(p)}): Table V would be empty")
    if p["table7"]["encoder"] not in cfg["encoders"]:
        raise XltError(f"config key papers.{SLUG}.table7.encoder: unknown encoder {p['table7']['encoder']!r}; "
                       f"allowed: {', '.join(sorted(cfg['encoders']))}")
