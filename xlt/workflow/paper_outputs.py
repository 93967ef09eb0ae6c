"""What the generic table, figure and claims jobs run (workflow_scripts/make_table.py,
make_figure.py, make_claims.py, claims_page.py): a paper's builders, through the registry; what
they read and where they write is planned in xlt.workflow.paper_targets."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlt.claims import evaluate, read_csv, render, write_csv
from xlt.io import write_text
from xlt.paperkit.published import list_published, load_published
from xlt.papers import get_figure, get_paper, get_table
from xlt.tables import check_accounted, write_table
from xlt.workflow.paper_targets import load_claims, title


def make_table(slug: str, table_id: str, spec: dict, inputs: list[str], out_prefix: str,
               ledger_notes: list[str] = ()):
    """Build one table and write <out_prefix>.{csv,md,tex}; return the long table. `ledger_notes`:
    what the paper's fidelity ledger says of this table in this run (xlt.fidelity.item_notes)."""
    table, md, tex = get_table(slug, table_id).build(spec, inputs)
    check_accounted(table, published_cells(slug, table_id), f"{slug} {table_id}",
                    per_cell=not get_paper(slug).reasons_in_notes)
    write_table(table, out_prefix, with_ledger_notes(md, ledger_notes), tex)
    return table


LEDGER_HEADING = "Settings beside the paper (generated from the paper's fidelity ledger, fidelity.yaml):"


def with_ledger_notes(md: str, notes) -> str:
    """A table's Markdown with the ledger's notes after its own."""
    if not notes:
        return md
    return md.rstrip("\n") + "\n\n" + LEDGER_HEADING + "\n\n" + "".join(f"- {n}\n" for n in notes)


def published_cells(slug: str, table_id: str) -> int:
    """How many cells the paper prints in the table (0 for a table it prints none of)."""
    return len(load_published(slug, table_id)) if (slug, table_id) in list_published() else 0


def draw_figure(slug: str, figure_id: str, spec: dict, inputs: list[str], out_dir: str) -> None:
    """Draw one figure: <out_dir>/<figure>.{png,pdf,csv}."""
    get_figure(slug, figure_id)
    get_paper(slug).draw(spec, inputs, out_dir, figure_id)


def make_claims(slug: str, reflects: str, inputs: list[str], out_prefix: str) -> None:
    """Decide a paper's claims on the CSVs `inputs` (results/{tables,figures}/<slug>/<id>.csv) and
    write <out_prefix>.csv and .md."""
    spec = load_claims(slug)
    files = {f"{Path(p).parent.parent.name}/{Path(p).stem}": p for p in inputs}
    write_csv(evaluate(slug, spec.claims, files, reflects), out_prefix + ".csv")
    # rendered from the CSV as written, as the page is (claims_page)
    write_text(out_prefix + ".md", render(read_csv(out_prefix + ".csv"), {slug: title(slug)}, {slug: spec.left_out}))


def claims_page(inputs: list[str], out_md: str, out_csv: str) -> None:
    """The one page of every paper's claims (results/claims.md, .csv) from their CSVs
    (results/claims/<slug>.csv)."""
    table = pd.concat([read_csv(p) for p in inputs], ignore_index=True)
    slugs = list(dict.fromkeys(table["paper"]))
    write_csv(table, out_csv)
    write_text(out_md, render(table, {s: title(s) for s in slugs}, {s: load_claims(s).left_out for s in slugs}))
