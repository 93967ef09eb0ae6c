"""What the workflow derives from the registered papers (xlt.papers.PAPERS): every
paper-level target list, the recipes' settings, the papers' kinds of encoder init and of
auxiliary stream, the downloads they read, their claims. The rules reach it as `P`:

    all_tables(cfg)              every table and figure of the configured papers, and their index
    paper_tables(cfg, slug)      results/tables/<slug>/<table>.{csv,md,tex} of its tables
    paper_figures(cfg, slug)     results/figures/<slug>/<figure>.{png,pdf,csv} of the figures
                                 its config makes
    table_inputs / table_spec    what the generic rule `paper_table` reads and passes on
    figure_inputs                what the generic rule `paper_figure` reads
    target_rules()               alias rule name -> files, e.g. crossmulti_table2, underspec_all
    hparams(cfg, recipe, data)   a recipe's training settings, with the extra its tag names
                                 (`<profile>-<tag>`, a paper's RecipeTags)
    aux_streams / aux_inputs     a recipe's auxiliary streams, the papers' kinds among them
    download_plan / prefetch     what the configured papers read from the network

The path grammar (xlt.dag.targets) knows no paper: what a paper adds to it (its kinds of init
and of aux set, the alignment stage's bitext) is handed in from here, never registered into it.
What the table, figure and claims jobs run: xlt.workflow.paper_outputs.
"""

from __future__ import annotations

import re
from importlib import resources

import yaml

from xlt import fidelity
from xlt.align.targets import align_tables, bitext_sources
from xlt.claims import ClaimsFile, check_references, parse_claims
from xlt.dag import targets as T
from xlt.dag.targets import figure_files, table_files
from xlt.errors import XltError, unknown
from xlt.paperkit.published import list_published, load_published, paper_title, table_info
from xlt.papers import PAPERS, configured, get_figure, get_paper, get_table

INDEX = "index.md"  # results/tables/index.md: every table beside its caption (xlt.workflow.report)


# ---- what the papers add to the path grammar: kinds of init and of aux set, downloads ----------


def init_kinds() -> list[T.InitKind]:
    """Every registered paper's kinds of encoder init (Paper.inits), each method once."""
    kinds: dict[str, T.InitKind] = {}
    for slug, paper in PAPERS.items():
        for kind in paper.inits:
            if kind.method in (T.PRETRAINED, "mlm") or kinds.setdefault(kind.method, kind) is not kind:
                raise XltError(f"paper {slug}: encoder init kind {kind.method!r} is declared twice")
    return list(kinds.values())


def aux_kinds() -> dict[str, T.AuxKind]:
    """Every registered paper's kinds of aux set (Paper.aux_kinds), each name once."""
    kinds: dict[str, T.AuxKind] = {}
    for slug, paper in PAPERS.items():
        for name, streams in paper.aux_kinds.items():
            if kinds.setdefault(name, streams) is not streams:
                raise XltError(f"paper {slug}: aux set kind {name!r} is declared twice")
    return kinds


def aux_streams(cfg: dict, recipe: str, dataset: str, encoder: str | None = None, init: str = T.PRETRAINED) -> list[dict]:
    """xlt.dag.targets.aux_streams with the papers' kinds of aux set."""
    return T.aux_streams(cfg, recipe, dataset, encoder, init, kinds=aux_kinds())


def aux_inputs(cfg: dict, recipe: str, dataset: str, encoder: str, init: str) -> list[str]:
    """xlt.dag.targets.aux_inputs with the papers' kinds of aux set."""
    return T.aux_inputs(cfg, recipe, dataset, encoder, init, kinds=aux_kinds())


def download_plan(cfg: dict) -> dict[str, list[str]]:
    """xlt.dag.targets.download_plan with the alignment stage's bitext, when a configured paper
    reads aligned pairs (Paper.reads_alignment)."""
    return T.download_plan(cfg, more=[bitext_sources(cfg)] if reads_alignment(cfg) else [])


def download_langs(cfg: dict, source: str) -> list[str]:
    """The languages to fetch; [] (every language of the entry) for a source no paper reads."""
    return download_plan(cfg).get(source, [])


def prefetch(cfg: dict) -> list[str]:
    """Everything a run needs from the network, fetched once where there is one (a login node):
    the download of every source the configured papers read, and every Hub encoder's snapshot."""
    return [T.download_manifest(cfg, s) for s in download_plan(cfg)] + [T.snapshot_dir(cfg, e) for e in T.hub_encoders(cfg)]


def data_all(cfg: dict) -> list[str]:
    """One download per real source (the catalog, less second routes to the same data, plus
    any route a configured paper reads) and every prepared dataset of the configured papers."""
    # deferred: loads requests, yaml only when this runs
    from xlt.sources.catalog import catalog

    entries = dict(download_plan(cfg))
    if not cfg.get("world"):
        entries.update({name: [] for name, src in catalog().items() if src.same_data_as is None and name not in entries})
    return [T.download_manifest(cfg, s) for s in sorted(entries)] + [T.data_dir(cfg, d) for d in T.datasets(cfg)]


# ---- the papers' config schemas -----------------------------------------------------------------


def schema_fragments() -> dict[str, dict]:
    """Each registered paper's config schema (xlt/papers/<slug>/schema.yaml), for papers.<slug>."""
    out = {}
    for slug in PAPERS:
        with resources.files("xlt.papers").joinpath(slug, "schema.yaml").open("r", encoding="utf-8") as f:
            out[slug] = yaml.safe_load(f)
    return out


# ---- recipes: an extra spelt in the recipe's path --------------------------------------------


def tag_owner(tag: str) -> tuple[str, dict]:
    """The paper whose recipe-tag grammar reads `tag` (`<profile>-<tag>`), and the extra it names."""
    for slug, paper in PAPERS.items():
        if paper.recipe_tags and (extra := paper.recipe_tags.extra_of(tag)) is not None:
            return slug, extra
    grammars = [f"{p.recipe_tags.grammar} ({slug})" for slug, p in PAPERS.items() if p.recipe_tags]
    raise XltError(f"extra tag {tag!r}: no paper spells an extra so; allowed: {', '.join(grammars) or '(none)'}")


def extra_of_tag(tag: str) -> dict:
    return tag_owner(tag)[1]


def hparams(cfg: dict, recipe: str, dataset: str | None = None) -> dict:
    """`xlt.dag.targets.hparams`, an extra tag in the recipe read by the paper whose grammar it is."""
    return T.hparams(cfg, recipe, dataset, extra_of_tag=extra_of_tag)


def caption(slug: str, item: str) -> str:
    """The caption of a table (its own, else the published one) or of a figure."""
    paper = get_paper(slug)
    if item in {f.id for f in paper.figures}:
        return get_figure(slug, item).caption
    table = get_table(slug, item)
    if table.caption is not None:
        return table.caption
    return table_info(slug, item)["caption"]


def title(slug: str) -> str:
    """The paper's title (xlt/papers/<slug>/published/index.yaml)."""
    return paper_title(get_paper(slug).slug)


# ---- what the generic rules read ------------------------------------------------------------


def table_inputs(cfg: dict, slug: str, table_id: str) -> list[str]:
    return get_table(slug, table_id).inputs(cfg)


def table_spec(cfg: dict, slug: str, table_id: str) -> dict:
    table = get_table(slug, table_id)
    return table.spec(cfg) if table.spec else cfg["papers"][slug]


def figure_names(cfg: dict, slug: str) -> list[str]:
    """The figures the config of a paper makes, in the paper's order (none if not configured)."""
    if slug not in cfg["papers"]:
        return []
    block = cfg["papers"][slug]
    return [f.id for f in get_paper(slug).figures if f.when is None or f.when(block)]


def figure_inputs(cfg: dict, slug: str, figure_id: str) -> list[str]:
    paper = get_paper(slug)
    if figure_id not in figure_names(cfg, slug):
        raise unknown(f"figure of paper {slug} (with this config)", figure_id, figure_names(cfg, slug))
    return paper.figure_inputs(cfg)


def figure_spec(cfg: dict, slug: str) -> dict:
    """What a paper's `draw` gets: its `figure_spec(cfg)`, else its config block."""
    paper = get_paper(slug)
    return paper.figure_spec(cfg) if paper.figure_spec else cfg["papers"][slug]


def oracle_languages(cfg: dict, model: str) -> list[str]:
    """The target languages whose dev sets a model's fine-tune also selects on (oracle
    selection), as the configured papers ask (Paper.oracle_models); none for most models."""
    key = id(cfg)
    if _ORACLE_CACHE.get("key") != key:  # one walk of the papers per config, not per job
        wanted: dict[str, list[str]] = {}
        for slug in configured(cfg):
            if (paper := PAPERS[slug]).oracle_models:
                for m, langs in paper.oracle_models(cfg).items():
                    wanted[m] = list(dict.fromkeys([*wanted.get(m, []), *langs]))
        _ORACLE_CACHE.update(key=key, wanted=wanted, cfg=cfg)
    return _ORACLE_CACHE["wanted"].get(str(model), [])


_ORACLE_CACHE: dict = {}


# ---- target lists ---------------------------------------------------------------------------


def paper_tables(cfg: dict, slug: str) -> list[str]:
    return [f for t in get_paper(slug).tables for f in table_files(cfg, slug, t.id)]


def paper_figures(cfg: dict, slug: str) -> list[str]:
    return [f for fig in figure_names(cfg, slug) for f in figure_files(cfg, slug, fig)]


def in_all_tables(cfg: dict) -> list[str]:
    """The configured papers that `all_tables` makes: all but the standalone studies (Paper.standalone)."""
    return [slug for slug in configured(cfg) if not PAPERS[slug].standalone]


def tables_and_figures(cfg: dict) -> list[str]:
    """Every table and figure of the configured papers (not of a standalone study: its own targets)."""
    return [f for slug in in_all_tables(cfg) for f in paper_tables(cfg, slug) + paper_figures(cfg, slug)]


def index_figure_notes(cfg: dict) -> dict[str, list[list]]:
    """paper -> [[note, [figure ids]]]: the fidelity ledger's notes on the figures the index lists."""
    return {slug: notes for slug in in_all_tables(cfg) if (notes := fidelity.figure_notes(cfg, slug, figure_names(cfg, slug)))}


def index_items(cfg: dict) -> list[str]:
    """What the index lists: every table and figure of the configured papers and of the stages
    before them (the alignment stage's AER table and L2 figures)."""
    return tables_and_figures(cfg) + align_tables(cfg)


def reads_alignment(cfg: dict) -> bool:
    """A configured paper reads the alignment stage's aligned pairs (Paper.reads_alignment)."""
    return any(PAPERS[slug].reads_alignment for slug in configured(cfg))


def published_only(cfg: dict) -> list[str]:
    """The files of the tables that show the paper's numbers only under this config: nothing
    computes ours (the table reads no input; its note says why)."""
    return [f for slug in in_all_tables(cfg) for t in get_paper(slug).tables if not t.inputs(cfg)
            for f in table_files(cfg, slug, t.id)]


def is_published_only(cfg: dict, slug: str, table_id: str) -> bool:
    """Whether the table shows the paper's numbers only under this config (`published_only`)."""
    return slug in cfg["papers"] and not get_table(slug, table_id).inputs(cfg)


def all_tables(cfg: dict) -> list[str]:
    """Every table and figure (`index_items`), the claims page and the index of the tables."""
    return index_items(cfg) + (claims_page_files(cfg) if claim_papers(cfg) else []) + [index_file(cfg)]


def index_file(cfg: dict) -> str:
    return f"{cfg['results']}/tables/{INDEX}"


def paper_order(item_id: str) -> tuple:
    """Sort key of a table or figure id in the order the paper prints them: tables before figures,
    by number (table2 before table11), the main text's figures before the appendix's (fig10
    before figa1), a variant after its figure (fig2, fig2_encoder); an id without a number last."""
    m = re.fullmatch(r"(table|fig)([a-z]?)(\d+)(.*)", item_id)
    if not m:
        return (2, 1, "", 0, item_id)
    kind, appendix, number, rest = m.groups()
    return (0 if kind == "table" else 1, 0, appendix, int(number), rest)


def item_targets(slug: str) -> list[str]:
    """The ids of a paper's tables and figures, in paper order (its tables first, named ones too):
    `<slug>_<id>` is each one's target."""
    paper = get_paper(slug)
    return sorted([t.id for t in paper.tables], key=paper_order) + sorted([f.id for f in paper.figures], key=paper_order)


def target_names() -> list[str]:
    """The names of the alias rules (`target_rules`, claims' included), without a config."""
    return [*(f"{slug}_{item}" for slug in PAPERS for item in [*item_targets(slug), "all"]),
            *(f"{slug}_claims" for slug, paper in PAPERS.items() if paper.claims), "all_claims"]


def target_rules(cfg: dict) -> dict[str, list[str]]:
    """The alias rules: <slug>_<table> and <slug>_<figure> (e.g. crossmulti_fig1) for every table
    and figure in paper order, <slug>_all for every paper, <slug>_claims for every paper with
    claims, all_claims for the claims page. A figure the config does not make (xmixup's fig5 on
    the tiny preset) still has its target: asking for it names the config key."""
    out = {}
    for slug, paper in PAPERS.items():
        figures = {f.id for f in paper.figures}
        for item in item_targets(slug):
            out[f"{slug}_{item}"] = (figure_files if item in figures else table_files)(cfg, slug, item)
        out[f"{slug}_all"] = paper_tables(cfg, slug) + paper_figures(cfg, slug)
        if paper.claims:
            out[f"{slug}_claims"] = claims_files(cfg, slug)
    out["all_claims"] = claims_page_files(cfg)
    return out


# ---- claims: which findings hold (xlt.claims) -------------------------------------------------


def load_claims(slug: str):
    """A paper's claims and the findings it leaves out (its `Paper.claims` file), checked: every
    table, column and value a claim names exists in the paper's tables (their published cells)."""

    paper = get_paper(slug)
    if not paper.claims:
        return ClaimsFile([], [], {})
    where = f"xlt/papers/{slug}/{paper.claims}"
    with resources.files("xlt.papers").joinpath(slug, paper.claims).open("r", encoding="utf-8") as f:
        spec = parse_claims(yaml.safe_load(f), where)
    tables, figures = {t.id for t in paper.tables}, {f.id for f in paper.figures}
    if bad := set(spec.beyond_published) - tables:
        raise XltError(f"{where}: beyond_published names {sorted(bad)}, not tables of {slug} ({', '.join(sorted(tables))})")
    for c in spec.claims:
        if c.kind == "figure":
            if c.item not in figures:
                raise unknown(f"figure of paper {slug} ({where}, claim {c.id})", c.item, figures)
            continue
        if c.item not in tables:
            raise unknown(f"table of paper {slug} ({where}, claim {c.id})", c.item, tables)
        if (slug, c.item) not in list_published():
            raise XltError(f"{where}: claim {c.id}: {c.item} prints no published cells to refer to")
        published = load_published(slug, c.item)
        check_references(c, table_info(slug, c.item)["keys"], published, where, spec.beyond_published.get(c.item, {}))
    return spec


def claim_papers(cfg: dict) -> list[str]:
    """The configured papers that declare claims."""
    return [slug for slug in in_all_tables(cfg) if PAPERS[slug].claims]


def claims_inputs(cfg: dict, slug: str) -> list[str]:
    """The table and figure CSVs a paper's claims read, of those this configuration makes."""
    made = set(figure_names(cfg, slug))
    out = []
    for c in load_claims(slug).claims:
        if c.kind == "table":
            out.append(T.table_outputs(cfg, slug, c.item)["csv"])
        elif c.item in made:
            out.append(T.figure_outputs(cfg, slug, c.item)["csv"])
    return list(dict.fromkeys(out))


def claims_files(cfg: dict, slug: str) -> list[str]:
    """results/claims/<slug>.{csv,md}: one paper's claims decided."""
    return [f"{cfg['results']}/claims/{slug}.{ext}" for ext in ("csv", "md")]


def claims_page_files(cfg: dict) -> list[str]:
    """results/claims.{md,csv}: every configured paper's claims on one page."""
    return [f"{cfg['results']}/claims.{ext}" for ext in ("md", "csv")]


def claims_reflect(cfg: dict, slug: str) -> str:
    """What a paper's verdicts are about: the data (the synthetic world or the papers' datasets)
    and the encoder(s) its config block names."""
    block = cfg["papers"].get(slug, {})
    encoders = block.get("encoders") or ([block["encoder"]] if block.get("encoder") else [])
    data = ("the synthetic world (config `world:`, e.g. presets/tiny.yaml): a verdict about that world and this "
            "encoder, not about the paper's") if cfg.get("world") else "the papers' datasets"
    seeds = block.get("seeds")
    return (f"{data}; encoder {', '.join(map(str, encoders)) or '(see the config)'}"
            + (f"; seeds {', '.join(map(str, seeds))} (papers.{slug}.seeds; some tables set their own)" if seeds else ""))


def wildcard_constraints() -> dict[str, str]:
    """Every wildcard's regex: the path grammar's (xlt.dag.targets.WILDCARDS) and the papers' own."""
    out = {**T.WILDCARDS, "init": T.init_pattern(init_kinds())}
    for slug, paper in PAPERS.items():
        for name, regex in paper.wildcards.items():
            if out.setdefault(name, regex) != regex:
                raise XltError(f"paper {slug}: wildcard {name!r} is already {out[name]!r} elsewhere")
    return out


def wildcard_pattern(kind: str) -> str:
    """The regex of a generic rule's {paper}, {table} or {figure} wildcard: the registered names."""
    names = {
        "paper": list(PAPERS),
        "table": [t.id for p in PAPERS.values() for t in p.tables],
        "figure": [f.id for p in PAPERS.values() for f in p.figures],
    }[kind]
    return "|".join(dict.fromkeys(names))
