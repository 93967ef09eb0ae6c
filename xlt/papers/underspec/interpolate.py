"""Linear interpolation between fine-tuned models, in place (underspec paper, Eq. 1-3).

Three models fine-tuned from the same initialisation are the endpoints:

    θ_bi   trained on source + target task data (the "bilingual" model)
    θ_src  trained on source-language data only
    θ_tgt  trained on target-language data only

1D (Eq. 1/2):  θ(α)      = α·θ_bi + (1−α)·θ_other,       θ_other ∈ {θ_src, θ_tgt}
2D (Eq. 3):    θ(α1, α2) = θ_bi + α1·(θ_src−θ_bi) + α2·(θ_tgt−θ_bi)

So α = 0 is the monolingual model, α = 1 the bilingual one; in 2D the corners (0,0), (1,0),
(0,1) are θ_bi, θ_src, θ_tgt. The 1D point α on the src path is the 2D point (1−α, 0).

`Interpolator` loads the endpoints once (on the live model's device and dtype) and writes
each grid point straight into the live parameters with `torch.lerp(..., out=param)` /
`add_` under `torch.no_grad()`: no new module, no checkpoint I/O, so a grid point costs one
pass over the parameters (memory-bound, a few ms for XLM-R large on a GPU) plus the
evaluation itself. Exact endpoints are copied, not computed, so θ(0) == θ_src and
θ(1) == θ_bi bit for bit (torch.lerp is exact at weight 0/1 too, but a copy does not rely
on the kernel's formula).

Which entries are interpolated
------------------------------
`param_filter` picks the interpolated floating-point entries of the model's state dict
(parameters, and floating buffers unless `include_float_buffers=False`): "all", a
callable `name -> bool`, a sequence of name prefixes, or a submodule of the model (all of
its entries: pass the encoder submodule for the paper's encoder-only variant).

The paper's footnote 2 reports an encoder-only variant (and a head-only one) but does not
say where the entries left out stay. Here they are *held* at one endpoint, chosen by
`hold`:

- `hold="bi"` (default): outside the filter the model is θ_bi at every grid point. This is
  Eq. 3 with δ_src and δ_tgt zeroed outside the filter, the anchor of Eq. 3 being θ_bi; it
  keeps α = 1 (the point every score is normalised by) the very same bilingual model in the
  full and the restricted variants, so their normalised curves share their reference.
  With the encoder filter, θ(0) is then (encoder of θ_src, head of θ_bi).
- `hold="other"` (1D only): outside the filter the model is the monolingual endpoint of the
  path (θ_src or θ_tgt), so θ(0) is exactly θ_other and θ(1) is the hybrid. `set_2d`
  refuses this setting: Eq. 3 has no "other" endpoint.

Non-floating entries (e.g. `position_ids`) are never interpolated: they are copied from
θ_bi once, at construction, and must agree across the endpoints (else `XltError`).
Non-persistent buffers are not in the state dict and are left alone. Tied weights (one
tensor under several names, e.g. an LM decoder tied to the word embeddings) are written
once; each endpoint is read under the first of the tensor's names it contains, and a
filter selects the tensor if it selects any of its names.

Construction leaves the model at θ_bi. `point` records the last point written. `select`
re-picks the interpolated entries (another filter) from the endpoints already placed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from xlt.errors import XltError
from xlt.papers.underspec.alpha import ALPHA_EXTRA, alpha_axis, alpha_grid_1d, alpha_grid_2d  # re-exported (torch-free)

__all__ = [
    "ALPHA_EXTRA",
    "Interpolator",
    "alpha_axis",
    "alpha_grid_1d",
    "alpha_grid_2d",
    "delta_geometry",
    "prefix_filter",
]

# --------------------------------------------------------------------------- filters

NameFilter = Callable[[str], bool]
ParamFilter = str | NameFilter | Sequence[str] | nn.Module | None


def prefix_filter(*prefixes: str) -> NameFilter:
    """A name predicate: True for names starting with any of `prefixes`."""
    if not prefixes:
        raise XltError("prefix_filter: give at least one prefix")
    pre = tuple(prefixes)
    return lambda name: name.startswith(pre)


def _name_filter(param_filter: ParamFilter) -> NameFilter:
    if param_filter is None or (isinstance(param_filter, str) and param_filter == "all"):
        return lambda name: True
    if isinstance(param_filter, str):
        raise XltError(
            f"param_filter: unknown name {param_filter!r}; use 'all', a callable name -> bool, "
            "a sequence of name prefixes or a submodule"
        )
    if callable(param_filter) and not isinstance(param_filter, nn.Module):
        return param_filter
    if isinstance(param_filter, Sequence):
        return prefix_filter(*param_filter)
    raise XltError(f"param_filter: unsupported type {type(param_filter).__name__}")


# --------------------------------------------------------------------------- interpolator


def _aliases(sd: Mapping[str, torch.Tensor]) -> list[tuple[list[str], torch.Tensor]]:
    """Group state-dict names that are the same tensor (tied weights), first-seen order."""
    groups: dict[int, tuple[list[str], torch.Tensor]] = {}
    for name, t in sd.items():
        groups.setdefault(id(t), ([], t))[0].append(name)
    return list(groups.values())


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


class Interpolator:
    """Writes interpolated parameters into a live model.

    Args:
        model: the live module that will be evaluated; its parameters are overwritten.
        theta_bi, theta_src, theta_tgt: endpoint state dicts (name -> tensor). `theta_tgt` may
            be None when only the src path is needed. Each floating entry is moved once to the
            model's device and dtype; a tensor that is the live parameter itself is cloned.
        param_filter: which entries are interpolated (see the module docstring); `select`
            changes it later.
        hold: "bi" or "other": where entries outside the filter stay (module docstring).
        include_float_buffers: interpolate floating buffers (e.g. BatchNorm statistics) that
            pass the filter; if False they are held like filtered-out entries.
    """

    def __init__(
        self,
        model: nn.Module,
        theta_bi: Mapping[str, torch.Tensor],
        theta_src: Mapping[str, torch.Tensor],
        theta_tgt: Mapping[str, torch.Tensor] | None = None,
        *,
        param_filter: ParamFilter = "all",
        hold: str = "bi",
        include_float_buffers: bool = True,
    ):
        if hold not in ("bi", "other"):
            raise XltError(f"Interpolator: hold must be 'bi' or 'other', got {hold!r}")
        self.model = model
        self.hold = hold
        self.has_tgt = theta_tgt is not None
        endpoints = {"bi": theta_bi, "src": theta_src}
        if theta_tgt is not None:
            endpoints["tgt"] = theta_tgt
        self._endpoint_names = tuple(endpoints)

        live_sd = model.state_dict(keep_vars=True)
        param_ids = {id(p) for p in model.parameters()}
        self._live_ids = {id(t) for t in live_sd.values()}
        self.include_float_buffers = include_float_buffers

        # Validate every endpoint against the live model before touching anything.
        problems: list[str] = []
        groups = _aliases(live_sd)
        resolved: list[tuple[list[str], torch.Tensor, dict[str, torch.Tensor]]] = []
        for names, live in groups:
            ends: dict[str, torch.Tensor] = {}
            for which, sd in endpoints.items():
                key = next((n for n in names if n in sd), None)
                if key is None:
                    problems.append(f"theta_{which} lacks {names[0]}")
                    continue
                t = sd[key]
                if tuple(t.shape) != tuple(live.shape):
                    problems.append(
                        f"theta_{which}[{key}] has shape {tuple(t.shape)}, the model {tuple(live.shape)}"
                    )
                    continue
                ends[which] = t
            resolved.append((names, live, ends))
        if problems:
            shown = "; ".join(problems[:5]) + (f"; … ({len(problems)} in all)" if len(problems) > 5 else "")
            raise XltError(f"Interpolator: endpoints do not match the model: {shown}")

        def place(t: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
            out = t.detach().to(device=live.device, dtype=live.dtype)
            if _shares_memory(out, live):
                out = out.clone()
            return out

        # Every endpoint of every floating entry is placed once, so `select` can change which
        # entries are interpolated without moving a tensor again.
        self._entries: list[tuple[list[str], torch.Tensor, bool, dict[str, torch.Tensor]]] = []
        with torch.no_grad():
            for names, live, ends in resolved:
                if not live.is_floating_point():
                    ref = ends["bi"].to(live.device)
                    for which, t in ends.items():
                        if which != "bi" and not torch.equal(t.to(live.device), ref):
                            raise XltError(
                                f"Interpolator: non-float entry {names[0]} differs between theta_bi and theta_{which}"
                            )
                    live.copy_(ref)
                    continue
                placed = {which: place(t, live) for which, t in ends.items()}
                self._entries.append((names, live, id(live) in param_ids, placed))
        self.select(param_filter)

    def select(self, param_filter: ParamFilter) -> None:
        """Interpolate the entries `param_filter` picks (module docstring) from now on, the others
        held (`hold`); leaves the model at θ_bi. The endpoints placed at construction serve
        every filter: a grid job switches variant without loading or moving anything."""
        if isinstance(param_filter, nn.Module):
            selected_ids = {id(t) for t in param_filter.state_dict(keep_vars=True).values()}
            if not selected_ids or not selected_ids & self._live_ids:
                raise XltError("param_filter: the given module is not a submodule of the model")
            selects = lambda names, t: id(t) in selected_ids  # noqa: E731
        else:
            fn = _name_filter(param_filter)
            selects = lambda names, t: any(fn(n) for n in names)  # noqa: E731
        names_: list[str] = []  # interpolated entries (first alias)
        held_names: list[str] = []  # floating entries held at an endpoint
        live_: list[torch.Tensor] = []
        ends_: dict[str, list[torch.Tensor]] = {k: [] for k in self._endpoint_names}
        held_live: list[torch.Tensor] = []
        held: dict[str, list[torch.Tensor]] = {k: [] for k in self._endpoint_names}
        for names, live, is_param, placed in self._entries:
            interpolate = selects(names, live) and (is_param or self.include_float_buffers)
            into_names, into_live, into_ends = (names_, live_, ends_) if interpolate else (held_names, held_live, held)
            into_names.append(names[0])
            into_live.append(live)
            for which, t in placed.items():
                into_ends[which].append(t)
        if not names_:
            raise XltError("Interpolator: param_filter selects no floating-point entry of the model")
        self.names, self.held_names, self._live, self._ends = names_, held_names, live_, ends_
        self._held_live, self._held = held_live, held
        self.point: tuple | None = None
        self.set_endpoint("bi")

    # ------------------------------------------------------------------ writers

    @staticmethod
    def _copy(dst: list[torch.Tensor], src: list[torch.Tensor]) -> None:
        for d, s in zip(dst, src, strict=True):
            d.copy_(s)

    def _write_held(self, which: str) -> None:
        if self._held_live:
            self._copy(self._held_live, self._held[which])

    def _need_tgt(self) -> None:
        if not self.has_tgt:
            raise XltError("Interpolator: no theta_tgt was given")

    def set_endpoint(self, which: str) -> None:
        """Load one endpoint exactly ('bi', 'src' or 'tgt'), held entries included."""
        if which not in ("bi", "src", "tgt"):
            raise XltError(f"set_endpoint: expected 'bi', 'src' or 'tgt', got {which!r}")
        if which == "tgt":
            self._need_tgt()
        with torch.no_grad():
            self._copy(self._live, self._ends[which])
            self._write_held("bi" if self.hold == "bi" else which)
        self.point = ("endpoint", which)

    def set_1d(self, alpha: float, other: str = "src") -> None:
        """θ = α·θ_bi + (1−α)·θ_other in the filtered entries (Eq. 1 / Eq. 2)."""
        if other not in ("src", "tgt"):
            raise XltError(f"set_1d: other must be 'src' or 'tgt', got {other!r}")
        if other == "tgt":
            self._need_tgt()
        w = float(alpha)
        if not math.isfinite(w):
            raise XltError(f"set_1d: alpha must be finite, got {alpha!r}")
        bi, oth = self._ends["bi"], self._ends[other]
        with torch.no_grad():
            if w == 0.0:
                self._copy(self._live, oth)
            elif w == 1.0:
                self._copy(self._live, bi)
            else:
                for p, o, b in zip(self._live, oth, bi, strict=True):
                    torch.lerp(o, b, w, out=p)
            self._write_held("bi" if self.hold == "bi" else other)
        self.point = ("1d", other, w)

    def set_2d(self, alpha1: float, alpha2: float) -> None:
        """θ = θ_bi + α1·(θ_src−θ_bi) + α2·(θ_tgt−θ_bi) in the filtered entries (Eq. 3)."""
        self._need_tgt()
        if self.hold != "bi":
            raise XltError("set_2d: hold='other' has no meaning in 2D (Eq. 3 is anchored at θ_bi)")
        a1, a2 = float(alpha1), float(alpha2)
        if not (math.isfinite(a1) and math.isfinite(a2)):
            raise XltError(f"set_2d: alphas must be finite, got {alpha1!r}, {alpha2!r}")
        bi, src, tgt = self._ends["bi"], self._ends["src"], self._ends["tgt"]
        with torch.no_grad():
            if a2 == 0.0 and a1 in (0.0, 1.0):
                self._copy(self._live, bi if a1 == 0.0 else src)
            elif a1 == 0.0 and a2 == 1.0:
                self._copy(self._live, tgt)
            elif a2 == 0.0:
                for p, b, s in zip(self._live, bi, src, strict=True):
                    torch.lerp(b, s, a1, out=p)
            elif a1 == 0.0:
                for p, b, t in zip(self._live, bi, tgt, strict=True):
                    torch.lerp(b, t, a2, out=p)
            else:
                for p, b, s, t in zip(self._live, bi, src, tgt, strict=True):
                    torch.lerp(b, s, a1, out=p)
                    p.add_(t - b, alpha=a2)
            self._write_held("bi")
        self.point = ("2d", a1, a2)

    # ------------------------------------------------------------------ geometry

    def geometry(self) -> dict[str, float]:
        """`delta_geometry` over exactly the interpolated entries (as stored, model dtype)."""
        self._need_tgt()
        return _geometry(zip(self._ends["bi"], self._ends["src"], self._ends["tgt"], strict=True))


def _geometry(triples: Iterable[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> dict[str, float]:
    acc = None
    n = 0
    for b, s, t in triples:
        b64 = b.detach().to(torch.float64)
        ds = s.detach().to(device=b.device, dtype=torch.float64) - b64
        dt = t.detach().to(device=b.device, dtype=torch.float64) - b64
        part = torch.stack([(ds * ds).sum(), (dt * dt).sum(), (ds * dt).sum()]).cpu()
        acc = part if acc is None else acc + part
        n += b.numel()
    if acc is None:
        raise XltError("delta_geometry: no floating-point entry selected")
    ss, tt, st = (float(v) for v in acc)
    norm_src, norm_tgt = math.sqrt(ss), math.sqrt(tt)
    if norm_src == 0.0 or norm_tgt == 0.0:
        which = "δ_src" if norm_src == 0.0 else "δ_tgt"
        raise XltError(f"delta_geometry: {which} is zero on the selected entries (an endpoint equals θ_bi)")
    cosine = max(-1.0, min(1.0, st / (norm_src * norm_tgt)))
    return {
        "norm_src": norm_src,
        "norm_tgt": norm_tgt,
        "ratio": norm_src / norm_tgt,
        "cosine": cosine,
        "angle_deg": math.degrees(math.acos(cosine)),
        "n_params": n,
    }


def delta_geometry(
    theta_bi: Mapping[str, torch.Tensor],
    theta_src: Mapping[str, torch.Tensor],
    theta_tgt: Mapping[str, torch.Tensor],
    param_filter: str | NameFilter | Sequence[str] | None = "all",
) -> dict[str, float]:
    """Norms, norm ratio and angle of δ_src = θ_src−θ_bi and δ_tgt = θ_tgt−θ_bi (Fig. 4).

    Over the floating-point entries of `theta_bi` whose name passes `param_filter` (names
    only: "all", a callable or prefixes), each δ flattened and concatenated, accumulated in
    float64. Entries that are one tensor under two names (tied weights) count once.
    Returns norm_src, norm_tgt, ratio = ‖δ_src‖/‖δ_tgt‖, cosine, angle_deg, n_params.
    """
    fn = _name_filter(param_filter)
    triples = []
    missing = []
    for names, b in _aliases(theta_bi):
        if not b.is_floating_point() or not any(fn(n) for n in names):
            continue
        name = names[0]
        if name not in theta_src or name not in theta_tgt:
            missing.append(name)
            continue
        s, t = theta_src[name], theta_tgt[name]
        if s.shape != b.shape or t.shape != b.shape:
            raise XltError(f"delta_geometry: shape mismatch at {name}")
        triples.append((b, s, t))
    if missing:
        raise XltError(f"delta_geometry: theta_src/theta_tgt lack {', '.join(missing[:5])}")
    return _geometry(triples)
