"""A paper's settings beside it, as layers of the workflow config.

Each registered paper may hold, in its folder:

    xlt/papers/<slug>/config.yaml            its full-scale defaults: `papers.<slug>`, and the
                                             names it declares in the shared blocks (DECLARED):
                                             fine-tuning profiles (`hparams.<name>`), language
                                             sets, aux sets, adaptation methods (`adapt.<method>`)
    xlt/papers/<slug>/presets/<preset>.yaml  its values in a preset (e.g. tiny.yaml: the tiny
                                             preset's trims), over the defaults

The config is the merge, later layers winning, of: every paper's config.yaml (registry order),
then each config source in order (config.yaml, each --configfile, --config), a source that says
`paper_preset: <preset>` preceded by every paper's presets/<preset>.yaml. So a key of config.yaml
overrides a paper's default, and the tiny preset's file overrides both (as it did when the papers'
blocks lived in config.yaml and presets/tiny.yaml). `paper_preset` itself is consumed here: the
merged config does not hold it.

A declared name belongs to one paper: two papers declaring it fail (naming both files). The
repository's config.yaml declares none of them (a test holds it to that); a key set there, like one
of a --configfile or --config, overrides the paper's value (a cluster's edited config.yaml works).
"""

from __future__ import annotations

from pathlib import Path

from xlt.errors import XltError
from xlt.io import read_yaml
from xlt.papers import PAPERS

FOLDER = Path(__file__).resolve().parent
REPO = FOLDER.parent.parent
PRESET_KEY = "paper_preset"  # in a config source: merge the papers' presets/<value>.yaml beneath it
DEFAULTS = "config.yaml"
OWN = "papers"  # a paper's own block, papers.<slug>
# the shared blocks a paper may declare names in, each name its own: what the paper alone reads
DECLARED = ("hparams", "language_sets", "aux_sets", "adapt", "zero_shot")
KEYS = (OWN, *DECLARED)  # what a paper's config file may set


def _label(path: Path) -> str:
    """A paper's file as the repository names it (xlt/papers/<slug>/...), wherever the run is."""
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def paper_file(slug: str, preset: str | None = None) -> Path:
    """A paper's defaults (preset None) or its values in `preset`."""
    return FOLDER / slug / (DEFAULTS if preset is None else f"presets/{preset}.yaml")


def presets() -> list[str]:
    """Every preset some registered paper has values for."""
    return sorted({p.stem for slug in PAPERS for p in (FOLDER / slug / "presets").glob("*.yaml")})


def _read(slug: str, path: Path) -> dict:
    """A paper's config file, checked: only `papers.<slug>` and names in the DECLARED blocks."""
    label = _label(path)
    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise XltError(f"{label}: expected a mapping of config keys, got {type(data).__name__}")
    extra = sorted(set(data) - set(KEYS))
    if extra:
        raise XltError(f"{label}: config key {extra[0]} is not a paper's to set; allowed: {', '.join(KEYS)} "
                       "(shared settings belong in config.yaml)")
    for key in KEYS:
        if not isinstance(data.get(key, {}), dict):
            raise XltError(f"{label}: config key {key}: expected a mapping, got {type(data[key]).__name__}")
    others = sorted(set(data.get(OWN, {})) - {slug})
    if others:
        raise XltError(f"{label}: config key papers.{others[0]}: a paper's file sets its own block only; allowed: papers.{slug}")
    return data


def declared(data: dict) -> list[str]:
    """The names a config mapping sets in the DECLARED blocks, as keys `<block>.<name>`."""
    return [f"{block}.{name}" for block in DECLARED if isinstance(data.get(block), dict) for name in data[block]]


def layer(preset: str | None = None) -> list[tuple[str, dict]]:
    """(file, mapping) of every registered paper that has a file for `preset` (None: its
    defaults), in registry order. Two papers declaring one name fail: which one wins would
    depend on the registry's order."""
    out, owner = [], {}
    for slug in PAPERS:
        path = paper_file(slug, preset)
        if not path.is_file():
            continue
        data = _read(slug, path)
        for key in declared(data):
            if key in owner:
                raise XltError(f"{_label(path)}: config key {key} is also set by {owner[key]}; "
                               "a name belongs to one paper")
            owner[key] = _label(path)
        out.append((_label(path), data))
    return out


def with_paper_files(sources: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """`sources` ((label, mapping) in merge order) with the papers' files where they belong:
    their defaults first, their values in a preset just before the source naming it."""
    out = layer()
    for label, data in sources:
        if isinstance(data, dict) and PRESET_KEY in data:
            data = dict(data)
            preset = data.pop(PRESET_KEY)
            allowed = presets()
            if preset not in allowed:
                raise XltError(f"{label}: config key {PRESET_KEY}: {preset!r} is no paper's preset "
                               f"(xlt/papers/<slug>/presets/<preset>.yaml); allowed: {', '.join(allowed) or '(none)'}")
            out += layer(preset)
        out.append((label, data))
    return out
