"""underspec's check of its config block (papers.underspec)."""

from __future__ import annotations

from xlt.errors import XltError, check_config_ref
from xlt.papers.underspec.plan import SLUG
from xlt.registry import TASKS


def check(config: dict, paper: dict) -> None:
    """papers.underspec: encoders, language sets, metrics, grid axes and the 2D figures' settings."""
    from xlt.papers.underspec.alpha import alpha_axis  # not interpolate: it imports torch

    key = f"papers.{SLUG}"
    for enc in paper["encoders"]:
        check_config_ref("encoder", f"{key}.encoders", enc, config["encoders"])
    check_config_ref("hparams profile", f"{key}.hparams", paper["hparams"], config["hparams"])
    langs = {}
    for role in ("sources", "targets"):
        check_config_ref("language set", f"{key}.{role}", paper[role], config["language_sets"])
        langs[role] = config["language_sets"][paper[role]]
    for task in paper["tasks"]:
        if task not in paper["metric"]:
            raise XltError(f"config key {key}.metric: no metric for task {task}")
        check_config_ref(f"metric of task {task}", f"{key}.metric.{task}", paper["metric"][task], TASKS[task].metrics)
        for role in ("sources", "targets"):
            missing = [lang for lang in langs[role] if lang not in TASKS[task].languages]
            if missing:
                raise XltError(
                    f"config key {key}.{role}: task {task} has no data for {missing}; "
                    f"its source offers: {', '.join(TASKS[task].languages)}"
                )
    if not any(t != s for s in langs["sources"] for t in langs["targets"]):
        raise XltError(f"config key {key}.targets: no target differs from a source language")
    for axis in ("alpha_1d", "alpha_2d"):
        g = paper["grid"][axis]
        if not g["lo"] <= 0 < 1 <= g["hi"]:
            raise XltError(f"config key {key}.grid.{axis}: lo={g['lo']}, hi={g['hi']}: the grid must include 0 and 1 "
                           "(the monolingual and bilingual models)")  # fmt: skip
        try:
            alpha_axis(g["step"], g["lo"], g["hi"])
        except XltError as e:
            raise XltError(f"config key {key}.grid.{axis}: {e}") from None
    for fig, panels in paper["figures"].items():
        for i, p in enumerate(panels):
            where = f"{key}.figures.{fig}[{i}]"
            check_config_ref("task (not in papers.underspec.tasks)", f"{where}.task", p["task"], paper["tasks"])
            check_config_ref("source language (not in the sources set)", f"{where}.source", p["source"], langs["sources"])
            check_config_ref("target language (not in the targets set)", f"{where}.target", p["target"], langs["targets"])
            if p["source"] == p["target"]:
                raise XltError(f"config key {where}: source and target are both {p['source']!r}")
