"""xmixup's figures, drawn by the generic rule `paper_figure` (rules/tables.smk):

- Figure 1: a 2-D PCA of the mean-pooled last-layer sentence representations of the XNLI test
  set, translate-train (a) vs X-Mixup (b), the paper's four languages (en es ar sw) that the
  language set holds; the coordinates are the rule `xmixup_cka`'s sidecar (`pca_file`: one PCA
  per model, fitted on the first 200 rows of every language of the set together, all of a
  shorter test set's), those rows plotted, one seed; caption and title say so.
- Figure 3: per language, CKA with English (x) vs XNLI test accuracy (y) of the three models,
  one point per (model, language) averaged over seeds; each model's Spearman ρ in the legend.
  It reads the CKA and score files Tables 2 and 7 read: no job of its own but the drawing.
- Figure 4: language centroids of the POS test set, one panel per model (zero-shot,
  translate-train, X-Mixup), made when `papers.xmixup.figure4: {task, dataset, languages}` is
  set: the rule `xmixup_centroids` encodes the test set of `dataset` (a POS set) with the
  encoders of `task`'s three models, first seed (`centroids_file`; the paper used its POS
  models: POS has no public translate-train data, so ours are that task's models, and the
  figure says so); each panel a PCA of that model's centroids alone (`centroids.centroid_pca`).
- Figure 5: the mixup-layer sweep, made only when `papers.xmixup.figure5: {task, layers}` is
  set: one X-Mixup model per layer and seed (recipe `<targets>.<profile>-xmixup<layer>`),
  accuracy averaged over the language set vs layer, translate-train as a dashed line.

Each writes <out_dir>/<figure>.{png,pdf,csv} (the CSV: the numbers plotted). No matplotlib,
sklearn or scipy at import time (the plugin is imported when the DAG is built).
"""

from __future__ import annotations

import re

import pandas as pd

from xlt.errors import XltError
from xlt.paperkit.base import Figure
from xlt.papers.xmixup.cka import PCA_ROWS
from xlt.papers.xmixup.plan import LABELS, MODELS, SLUG, _langs, _setting, cka_file, model_of, scores_file, table_spec
from xlt.papers.xmixup.tables import _cka_rows
from xlt.dag import targets as T
from xlt.tables import eval_rows
from xlt.io import read_json
from xlt.dag.targets import Recipe
from xlt.papers.xmixup.centroids import centroid_pca
from xlt.dag.targets import task_of

FIG1_LANGS = ("en", "es", "ar", "sw")  # the paper's Figure 1
FIG13_TASK = "xnli"  # Figures 1 and 3: XNLI (the paper's Figure 3 adds PAWS-X)
COLORS = {"zero_shot": "tab:gray", "trans_train": "tab:blue", "xmixup": "tab:red"}
LAYER = re.compile(r"-xmixup(\d+)$")


def _p(cfg: dict) -> dict:
    return cfg["papers"][SLUG]


def _has_fig13(p: dict) -> bool:
    return FIG13_TASK in p["tasks"]


def pca_file(cfg: dict, task: str, model: str, seed: int) -> str:
    """The 2-D PCA coordinates the rule `xmixup_cka` writes beside a model's CKA file."""
    return cka_file(cfg, task, model, seed).removesuffix(".json") + ".pca.json"


def with_layer(cfg: dict, task: str, layer: int) -> dict:
    """The config whose X-Mixup model of `task` mixes at `layer` (Figure 5's models)."""
    p = _p(cfg)
    return {**cfg, "papers": {**cfg["papers"], SLUG: {**p, "mixup_layer": {**p["mixup_layer"], task: int(layer)}}}}


def figure5_files(cfg: dict) -> list[str]:
    """Figure 5's score files: X-Mixup at every layer and translate-train, every seed."""
    fig5 = _p(cfg).get("figure5")
    if not fig5:
        return []
    task, seeds = fig5["task"], fig5.get("seeds") or _p(cfg)["seeds"]
    return ([scores_file(with_layer(cfg, task, layer), task, "xmixup", seed) for layer in fig5["layers"] for seed in seeds]
            + [scores_file(cfg, task, "trans_train", seed) for seed in seeds])


def centroids_file(cfg: dict, model: str, seed: int) -> str:
    """The language centroids (rule `xmixup_centroids`) of one of `figure4.task`'s three models
    on the test split of `figure4.dataset`, the languages of `figure4.languages`."""
    p = _p(cfg)
    fig4 = p["figure4"]
    dataset, recipe = model_of(cfg, fig4["task"], model)
    return (f"{cfg['results']}/xmixup/centroids/{p['encoder']}/pretrained/{dataset}/{recipe}/seed{seed}/"
            f"on-{fig4['dataset']}/test.{fig4['languages']}.json")


def max_sentences_arg(cfg: dict) -> str:
    """The centroid job's cap on sentences per language (`figure4.max_sentences`; none: all)."""
    n = (_p(cfg).get("figure4") or {}).get("max_sentences")
    return f"--max-sentences {int(n)}" if n else ""


def figure4_files(cfg: dict) -> list[str]:
    """Figure 4's centroid files: the three models of `figure4.task`, the first seed."""
    p = _p(cfg)
    if not p.get("figure4"):
        return []
    return [centroids_file(cfg, m, p["seeds"][0]) for m in MODELS]


def figure_inputs(cfg: dict) -> list[str]:
    p = _p(cfg)
    out = figure4_files(cfg)
    if _has_fig13(p):
        seed = p["seeds"][0]
        out += [pca_file(cfg, FIG13_TASK, m, seed) for m in ("trans_train", "xmixup")]
        out += [f for s in p["seeds"] for m in MODELS
                for f in (cka_file(cfg, FIG13_TASK, m, s), scores_file(cfg, FIG13_TASK, m, s))]
    return list(dict.fromkeys(out + figure5_files(cfg)))


def figure_spec(cfg: dict) -> dict:
    p = _p(cfg)
    langs = _langs(cfg, FIG13_TASK) if _has_fig13(p) else []
    return {**table_spec(cfg), "fig1_langs": [x for x in FIG1_LANGS if x in langs], "fig1_seed": p["seeds"][0],
            "fig13_task": FIG13_TASK,
            "fig5_langs": _langs(cfg, p["figure5"]["task"]) if p.get("figure5") else [],
            "fig4_langs": list(cfg["language_sets"][p["figure4"]["languages"]]) if p.get("figure4") else []}


def check(cfg: dict, p: dict) -> None:
    """Figures 4's and 5's task must be one the paper runs (its translate-train set and models);
    Figure 4's languages a known language set, English and two more among them, every one held
    by its dataset (the languages the workflow prepares it with)."""

    for fig in ("figure4", "figure5"):
        spec = p.get(fig)
        if spec and spec["task"] not in p["tasks"]:
            raise XltError(f"config key papers.{SLUG}.{fig}.task: {spec['task']!r} is not one of papers.{SLUG}.tasks "
                           f"({', '.join(p['tasks'])})")
    fig5 = p.get("figure5") or {}
    extra = [s for s in fig5.get("seeds") or [] if s not in p["seeds"]]
    if extra:
        raise XltError(f"config key papers.{SLUG}.figure5.seeds: {', '.join(map(str, extra))} not among "
                       f"papers.{SLUG}.seeds ({', '.join(map(str, p['seeds']))})")
    fig4 = p.get("figure4")
    if not fig4:
        return
    key, sets = f"papers.{SLUG}.figure4", cfg.get("language_sets") or {}
    if fig4["languages"] not in sets:
        raise XltError(f"config key {key}.languages: unknown language set {fig4['languages']!r}; "
                       f"allowed: {', '.join(sorted(sets))}")
    langs = list(sets[fig4["languages"]])
    if p["source"] not in langs or len(langs) < 3:
        raise XltError(f"config key {key}.languages: {fig4['languages']} ({', '.join(langs)}) must hold "
                       f"{p['source']} and at least two more languages (a 2-D PCA of the centroids)")
    held = T.task_languages(cfg, fig4["dataset"])
    missing = [x for x in langs if x not in held]
    if missing:
        raise XltError(f"config key {key}.languages: dataset {fig4['dataset']!r} has no {', '.join(missing)} "
                       f"(it holds {', '.join(held)})")


def with_figure_check(check_config):
    """The plugin's config check followed by the figures' own."""
    def both(cfg: dict, p: dict) -> None:
        check_config(cfg, p)
        check(cfg, p)
    return both


# ---- reading the inputs ----------------------------------------------------------------------


def _kind(path: str) -> str:
    if "/xmixup/centroids/" in path:
        return "centroids"
    if "/xmixup/cka/" in path:
        return "pca" if path.endswith(".pca.json") else "cka"
    return "scores"


def _layer_setting(recipe) -> str:
    """A score file's model, X-Mixup with its layer (`xmixup1`); ablations are not read here."""
    if "-xmixup" in recipe.hparams:
        m = LAYER.search(recipe.hparams)
        if not m:
            raise XltError(f"recipe {recipe.name}: an X-Mixup variant; the figures read plain X-Mixup models")
        return f"xmixup{m[1]}"
    return _setting(recipe)


def _scores(spec: dict, inputs: list[str]) -> pd.DataFrame:

    paths = [f for f in inputs if _kind(f) == "scores"]
    if not paths:
        return pd.DataFrame(columns=["task", "model", "lang", "seed", "value", "collapsed"])
    return eval_rows(paths, spec["metric"], setting_of=_layer_setting).rename(columns={"setting": "model"})


def _need(frame: pd.DataFrame, what: str, figure: str) -> pd.DataFrame:
    if frame.empty:
        raise XltError(f"xmixup {figure}: no {what} among the inputs")
    return frame


# ---- Figure 3: CKA vs accuracy --------------------------------------------------------------


def fig3_points(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """One row per (model, target language): CKA and accuracy averaged over seeds, the seeds
    averaged, and the model's Spearman ρ over those points."""
    # deferred: loads scipy only when this runs
    from scipy.stats import spearmanr

    task = spec["fig13_task"]
    cka = _need(_cka_rows([f for f in inputs if _kind(f) == "cka"]), "CKA files", "fig3")
    cka = cka[cka["task"] == task]
    acc = _scores(spec, inputs)
    main = f"xmixup{spec['mixup_layer'][task]}"
    acc = acc[(acc["task"] == task) & acc["model"].isin(["zero_shot", "trans_train", main])].replace({"model": {main: "xmixup"}})
    both = cka.merge(acc[["model", "lang", "seed", "value"]], on=["model", "lang", "seed"], suffixes=("_cka", "_acc"))
    both = _need(both[both["lang"].isin(spec["langs"][task]) & (both["lang"] != spec["source"])], "CKA with scores", "fig3")
    points = (both.groupby(["model", "lang"], as_index=False)
              .agg(cka=("value_cka", "mean"), accuracy=("value_acc", "mean"), n_seeds=("seed", "nunique")))
    order = {m: i for i, m in enumerate(MODELS)}
    langs = {x: i for i, x in enumerate(spec["langs"][task])}
    points = points.sort_values(["model", "lang"], key=lambda s: s.map(order if s.name == "model" else langs))
    rho = {}
    for model, g in points.groupby("model"):
        defined = len(g) >= 2 and g["cka"].nunique() > 1 and g["accuracy"].nunique() > 1
        rho[model] = float(spearmanr(g["cka"], g["accuracy"]).statistic) if defined else float("nan")
    return points.assign(spearman_rho=points["model"].map(rho)).reset_index(drop=True)


def _one_panel(figsize: tuple[float, float]):
    # deferred: loads matplotlib only when this runs
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=figsize)
    return fig, fig.add_subplot()


def _seeds(n: int) -> str:
    return f"{n} seed{'' if n == 1 else 's'}"


def _finish(fig, ax, labels: tuple[str, str], title: str, stem: str, points: pd.DataFrame,
            point_labels: list[tuple[float, float, str]] = ()) -> None:
    """Axis labels, title and legend of a one-panel figure, then each point's label where it is
    free (`label_points`); its PNG, PDF and CSV (`points`)."""
    # deferred: loads matplotlib only when this runs
    from xlt.figures import label_points, save_figure

    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title)
    # beside the panel, not in it: "best" weighs the points only, and every point carries a label
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    label_points([(ax, list(point_labels))])
    save_figure(fig, stem, points)


def _draw_fig3(spec: dict, inputs: list[str], stem: str) -> None:
    points = fig3_points(spec, inputs)
    fig, ax = _one_panel((8, 4.5))  # the legend beside the panel (_finish)
    for model, g in points.groupby("model", sort=False):
        rho = g["spearman_rho"].iloc[0]
        label = f"{LABELS[model]} (ρ = {rho:.2f})" if rho == rho else f"{LABELS[model]} (ρ undefined)"
        ax.scatter(g["cka"], g["accuracy"], color=COLORS[model], label=label)
    ax.margins(0.12)  # room for the labels of the outermost points inside the frame
    task = LABELS[spec["fig13_task"]]
    _finish(fig, ax, ("CKA with English", f"{task} test accuracy"),
            f"Performance vs CKA ({task}, mean over {_seeds(points['n_seeds'].max())})", stem, points,
            list(zip(points["cka"], points["accuracy"], points["lang"])))


# ---- Figure 1: PCA of sentence representations -----------------------------------------------


def fig1_points(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """(panel, model, lang, row, pc1, pc2) of translate-train and X-Mixup, the Figure 1 languages."""

    rows = []
    for path in inputs:
        if _kind(path) != "pca":
            continue
        parts = path.split("/")  # …/cka/<encoder>/<init>/<dataset>/<recipe>/seed<s>/<split>.<langset>.pca.json
        model = _setting(Recipe.parse(parts[-3]))
        pca = read_json(path)
        for lang in spec["fig1_langs"]:
            if lang not in pca["coords"]:
                raise XltError(f"{path}: no PCA coordinates of {lang}")
            for k, (x, y) in enumerate(pca["coords"][lang]):
                rows.append({"panel": "a" if model == "trans_train" else "b", "model": model, "lang": lang, "row": k,
                             "pc1": x, "pc2": y, "explained_variance_ratio_pc1": pca["explained_variance_ratio"][0],
                             "explained_variance_ratio_pc2": pca["explained_variance_ratio"][1]})
    frame = _need(pd.DataFrame(rows), "PCA files", "fig1")
    if set(frame["model"]) != {"trans_train", "xmixup"}:
        raise XltError(f"xmixup fig1: PCA files of translate-train and X-Mixup expected, got {sorted(set(frame['model']))}")
    return frame.sort_values(["panel"], kind="stable").reset_index(drop=True)


def _rows(points: pd.DataFrame) -> str:
    """How many rows per language Figure 1 plots: `150 rows`, or `150–200 rows` if they differ."""
    n = points.groupby(["model", "lang"])["row"].nunique()
    return f"{n.min()} rows" if n.min() == n.max() else f"{n.min()}–{n.max()} rows"


def _draw_fig1(spec: dict, inputs: list[str], stem: str) -> None:
    # deferred: loads matplotlib only when this runs
    from matplotlib.figure import Figure as MplFigure

    # deferred: loads matplotlib only when this runs
    from xlt.figures import save_figure

    points = fig1_points(spec, inputs)
    fig = MplFigure(figsize=(10, 4.5))
    for i, (panel, g) in enumerate(points.groupby("panel")):
        ax = fig.add_subplot(1, 2, i + 1)
        for lang, h in g.groupby("lang", sort=False):
            ax.scatter(h["pc1"], h["pc2"], s=6, alpha=0.6, label=lang)
        ev = g[["explained_variance_ratio_pc1", "explained_variance_ratio_pc2"]].iloc[0]
        ax.set_xlabel(f"PC1 ({100 * ev.iloc[0]:.0f}% of variance)")
        ax.set_ylabel(f"PC2 ({100 * ev.iloc[1]:.0f}%)")
        ax.set_title(f"({panel}) {LABELS[g['model'].iloc[0]]}")
        ax.legend(fontsize=8, markerscale=2)
    fig.suptitle(f"Sentence representations, {LABELS[spec['fig13_task']]} test (seed {spec['fig1_seed']}, "
                 f"the first {_rows(points)} per language, the PCA's fit and the points plotted)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, stem, points)


# ---- Figure 4: language centroids --------------------------------------------------------------


def fig4_points(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """One row per (model, language) of Figure 4: the centroid's two PCA coordinates (one PCA
    per model, fitted on its centroids), its Euclidean distance to the source's centroid in the
    full space and the language's radius (both as the job wrote them), the sentences averaged,
    and the model's mean distance to the source over the other languages."""

    rows, langs, source = [], spec["fig4_langs"], spec["source"]
    for path in inputs:
        if _kind(path) != "centroids":
            continue
        parts = path.split("/")  # …/centroids/<encoder>/<init>/<dataset>/<recipe>/seed<s>/on-<set>/<split>.<langset>.json
        model, seed = _setting(Recipe.parse(parts[-4])), int(parts[-3].removeprefix("seed"))
        job = read_json(path)
        missing = [x for x in langs if x not in job["centroids"]]
        if missing:
            raise XltError(f"{path}: no centroid of {', '.join(missing)}")
        pca = centroid_pca({x: job["centroids"][x] for x in langs})
        far = [job["distance_to_source"][x] for x in langs if x != source]
        for lang in langs:
            x, y = pca["coords"][lang]
            rows.append({"model": model, "seed": seed, "lang": lang, "pc1": x, "pc2": y,
                         "distance_to_source": 0.0 if lang == source else job["distance_to_source"][lang],
                         "radius": job["radius"][lang], "n_sentences": job["n"][lang],
                         "mean_distance_to_source": sum(far) / len(far),
                         "explained_variance_ratio_pc1": pca["explained_variance_ratio"][0],
                         "explained_variance_ratio_pc2": pca["explained_variance_ratio"][1]})
    frame = _need(pd.DataFrame(rows), "centroid files", "fig4")
    if sorted(set(frame["model"])) != sorted(MODELS):
        raise XltError(f"xmixup fig4: centroid files of {', '.join(MODELS)} expected, got {sorted(set(frame['model']))}")
    order = {m: i for i, m in enumerate(MODELS)}
    return frame.sort_values("model", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _draw_fig4(spec: dict, inputs: list[str], stem: str) -> None:
    # deferred: loads matplotlib only when this runs
    from matplotlib.figure import Figure as MplFigure

    # deferred: loads matplotlib only when this runs
    from xlt.figures import label_points, save_figure

    points = fig4_points(spec, inputs)
    fig = MplFigure(figsize=(13, 4.5))
    panels = []
    for i, (model, g) in enumerate(points.groupby("model", sort=False)):
        ax = fig.add_subplot(1, len(MODELS), i + 1)
        for _, r in g.iterrows():
            is_source = r["lang"] == spec["source"]
            ax.scatter([r["pc1"]], [r["pc2"]], s=60 if is_source else 30, marker="*" if is_source else "o",
                       color="black" if is_source else COLORS[model])
        panels.append((ax, list(zip(g["pc1"], g["pc2"], g["lang"]))))
        ax.margins(0.15)  # room for the outermost languages' labels inside the frame
        ax.set_aspect("equal", adjustable="datalim")  # a panel's distances as they are in its PCA plane
        ax.set_xlabel(f"PC1 ({100 * g['explained_variance_ratio_pc1'].iloc[0]:.0f}% of the centroids' variance)")
        ax.set_ylabel(f"PC2 ({100 * g['explained_variance_ratio_pc2'].iloc[0]:.0f}%)")
        ax.set_title(f"{LABELS[model]}: mean distance to {spec['source']} {g['mean_distance_to_source'].iloc[0]:.2f}\n"
                     f"(mean radius {g['radius'].mean():.2f})", fontsize=10)
    fig4 = spec["figure4"]
    models_of = LABELS.get(fig4["task"], fig4["task"])
    task = LABELS.get(task_of(fig4["dataset"]), fig4["dataset"])
    fig.suptitle(f"Language centroids of the {task} test set ({fig4['dataset']}), encoded by the {models_of} models' encoders "
                 f"(the paper: its POS models), seed {int(points['seed'].iloc[0])}", fontsize=10)
    fig.tight_layout()
    label_points(panels, fontsize=9)  # once the layout is final: each language's label where it is free
    save_figure(fig, stem, points)


# ---- Figure 5: the mixup-layer sweep ---------------------------------------------------------


def fig5_points(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """(model, layer, accuracy, n_seeds): each seed's accuracy averaged over the language set,
    then over seeds; X-Mixup per layer, translate-train once (no layer)."""
    task, layers = spec["figure5"]["task"], [int(x) for x in spec["figure5"]["layers"]]
    acc = _scores(spec, inputs)
    acc = acc[(acc["task"] == task) & acc["lang"].isin(spec["fig5_langs"])]
    per_seed = acc.groupby(["model", "seed"], as_index=False).agg(value=("value", "mean"))
    points = per_seed.groupby("model", as_index=False).agg(accuracy=("value", "mean"), n_seeds=("seed", "nunique"))
    wanted = {f"xmixup{layer}": layer for layer in layers}
    missing = [m for m in [*wanted, "trans_train"] if m not in set(points["model"])]
    if missing:
        raise XltError(f"xmixup fig5: no scores of {', '.join(missing)} on {task} among the inputs")
    points = points[points["model"].isin([*wanted, "trans_train"])]
    points = points.assign(layer=points["model"].map(wanted).astype("Int64"),
                           model=points["model"].where(points["model"] == "trans_train", "xmixup"))
    return points.sort_values(["model", "layer"]).reset_index(drop=True)[["model", "layer", "accuracy", "n_seeds"]]


def _draw_fig5(spec: dict, inputs: list[str], stem: str) -> None:
    points = fig5_points(spec, inputs)
    task = LABELS.get(spec["figure5"]["task"], spec["figure5"]["task"])
    fig, ax = _one_panel((8, 4))  # the legend beside the panel (_finish)
    xm = points[points["model"] == "xmixup"]
    ax.plot(xm["layer"].astype(int), xm["accuracy"], "o-", color=COLORS["xmixup"], label=LABELS["xmixup"])
    tt = points[points["model"] == "trans_train"]["accuracy"].iloc[0]
    ax.axhline(tt, linestyle="--", color=COLORS["trans_train"], label=LABELS["trans_train"])
    ax.set_xticks(xm["layer"].astype(int).tolist())
    _finish(fig, ax, ("mixup layer", f"{task} accuracy (average over languages)"),
            f"X-Mixup at different layers ({task}, mean over {_seeds(points['n_seeds'].max())})", stem, points)


DRAW = {"fig1": _draw_fig1, "fig3": _draw_fig3, "fig4": _draw_fig4, "fig5": _draw_fig5}


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    """Write <out_dir>/<figure>.{png,pdf,csv} from the files `figure_inputs` lists."""
    # deferred: loads matplotlib only when this runs
    import matplotlib

    matplotlib.use("Agg")
    DRAW[figure](spec, inputs, f"{out_dir}/{figure}")


FIGURES = (
    Figure("fig1", "PCA of the mean-pooled last-layer sentence representations of the XNLI test set (the paper's "
           "en, es, ar, sw that the language set holds): (a) translate-train, (b) X-Mixup; one PCA per model, fitted "
           f"on the first {PCA_ROWS} rows of every language of the set together, or all of a language's rows where its "
           "test set is shorter (sklearn, random_state fixed), and those rows plotted; the title gives how many; "
           "the first seed.", when=_has_fig13),
    Figure("fig3", "XNLI test accuracy vs CKA with English, per target language and model (zero-shot, translate-train, "
           "X-Mixup), averaged over seeds; each model's Spearman ρ over the languages in the legend.", when=_has_fig13),
    Figure("fig4", "Language centroids (the mean of each language's mean-pooled last-layer sentence representations) "
           "of a POS test set (papers.xmixup.figure4), one panel per model: zero-shot, translate-train, X-Mixup, the first "
           "seed; each panel a 2-D PCA of that model's centroids, titled with the mean Euclidean distance of the "
           "centroids to English's in the full space. The paper encodes with its POS models; POS has no public "
           "translate-train data, so ours are the models of figure4.task (e.g. XNLI's).",
           when=lambda p: bool(p.get("figure4"))),
    Figure("fig5", "Accuracy averaged over the language set with X-Mixup at each mixup layer (solid) and translate-train "
           "(dashed), averaged over seeds (papers.xmixup.figure5).", when=lambda p: bool(p.get("figure5"))),
)
