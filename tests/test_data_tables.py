"""Data-size tables end to end: files delivered by hand (resources/manual/) -> the download
step -> prepare_task -> manifest.json counts -> the paper's Table 1 beside ours."""

from __future__ import annotations

import io
import json
import tarfile

import pandas as pd

from tests.conftest import REPO
from tests.test_config import base
from xlt.dag import targets as T
from xlt.workflow import paper_targets as P
from xlt.formats.hub_parquet import write_parquet
from xlt.io import write_json
from xlt.stages.prepare import prepare_task
from xlt.paperkit import datasize
from xlt.workflow.paper_outputs import make_table

LINDAT = "https://lindat.mff.cuni.cz/repository/xmlui/bitstream/handle/11234/"


def load_script(name: str):
    """A workflow script as a module (in-process: the Hub stays patched offline)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"script_{name}", REPO / "workflow_scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def conllu(lang: str, n: int, textless: int = 0) -> str:
    """`n` sentences with text (the first with a multiword token and an empty node), then
    `textless` sentences whose forms are all '_' (as in text-less treebanks)."""
    out = []
    for i in range(n):
        rows = [f"# sent_id = {lang}-{i}", f"# text = Ab cd {i}."]
        if i == 0:
            rows += ["1-2\tAbcd\t_\t_\t_\t_\t_\t_\t_\t_", "1\tAb\tab\tADP\t_\t_\t2\tcase\t_\t_",
                     "2\tcd\tcd\tNOUN\t_\t_\t0\troot\t_\t_", "2.1\tx\tx\tVERB\t_\t_\t_\t_\t2:dep\t_"]  # fmt: skip
        else:
            rows += ["1\tAb\tab\tDET\t_\t_\t2\tdet:poss\t_\t_", "2\tcd\tcd\tNOUN\t_\t_\t0\troot\t_\t_"]
        rows += [f"3\t{i}\t{i}\tNUM\t_\t_\t2\tnummod\t_\t_", "4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_", ""]
        out += rows
    for i in range(textless):
        out += [f"# sent_id = {lang}-nt-{i}", "1\t_\t_\tNOUN\t_\t_\t0\troot\t_\t_", ""]
    return "\n".join(out) + "\n"


def ud_tgz(version: str, treebanks: dict[str, dict[str, str]]) -> bytes:
    """`ud-treebanks-v<version>.tgz` as LINDAT ships it: {UD_dir: {file name: CoNLL-U}}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for tb, files in treebanks.items():
            for name, text in {**files, "LICENSE.txt": "CC BY-SA 4.0\n"}.items():
                data = text.encode()
                info = tarfile.TarInfo(f"ud-treebanks-v{version}/{tb}/{name}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def treebank(code: str, sizes: dict[str, int], textless: int = 0) -> dict[str, str]:
    lang = code.split("_")[0]
    return {f"{code}-ud-{split}.conllu": conllu(lang, n, textless if split == "train" else 0) for split, n in sizes.items()}


# Hand-made sizes: per language, (train, test); dev is 2 everywhere.
SIZES = {"en": (7, 4), "de": (6, 3), "es": (5, 2), "fr": (4, 1)}


def fill_manual_dir(manual) -> None:
    """What a user downloads by hand: the UD tarball under its URL's file name, Hub files
    under their raw paths (docs/sources.md, "When the network fails")."""
    tbs = {
        "UD_English-EWT": treebank("en_ewt", {"train": 7, "dev": 2, "test": 4}, textless=3),
        "UD_German-GSD": treebank("de_gsd", {"train": 6, "dev": 2, "test": 3}),
        "UD_Spanish-AnCora": treebank("es_ancora", {"train": 5, "dev": 2, "test": 2}),
        "UD_Spanish-GSD": treebank("es_gsd", {"train": 9, "dev": 9, "test": 9}),  # not crossmulti's
        "UD_French-GSD": treebank("fr_gsd", {"train": 4, "dev": 2, "test": 1}),
    }
    manual.mkdir(parents=True)
    (manual / "ud-treebanks-v2.7.tgz").write_bytes(ud_tgz("2.7", tbs))
    for lang, (n_train, n_test) in SIZES.items():
        for split, n in (("train", n_train), ("validation", 2), ("test", n_test)):
            write_parquet(manual / f"wikiann/{lang}/{split}-00000-of-00001.parquet", "wikiann",
                          {"tokens": [["Jo", "lives"]] * n, "ner_tags": [[1, 0]] * n,
                           "langs": [[lang, lang]] * n, "spans": [["PER: Jo"]] * n})  # fmt: skip
            write_parquet(manual / f"paws-x/{lang}/{split}-00000-of-00001.parquet", "pawsx",
                          {"id": list(range(n)), "sentence1": ["a"] * n, "sentence2": ["b"] * n, "label": [1] * n})  # fmt: skip
            rows = [{"id": f"{lang}_{i}", "text": "Good\n\nfine.", "label": i % 5} for i in range(n + 1)]
            path = manual / f"marc/{lang}/{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_crossmulti_table1_from_manual_files_through_prepare(tmp_path, dead_url, monkeypatch):
    from huggingface_hub import constants

    download_main = load_script("download").main
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # the Hub is out of reach: manual copies
    cfg = base()
    cfg["papers"] = {"crossmulti": cfg["papers"]["crossmulti"]}
    del cfg["data"]["pawsx"]  # its named sets (xmixup's translate-train) would be fetched with the rest
    cfg["results"], cfg["raw_root"] = str(tmp_path / "results"), str(tmp_path / "raw")
    fill_manual_dir(tmp_path / "manual")
    cfg["download"] = {**cfg["download"], "manual_dir": str(tmp_path / "manual"), "lock": str(tmp_path / "lock.yaml"),
                       "mirrors": {LINDAT: f"{dead_url}/"}, "retries": 1}  # fmt: skip

    # The download jobs (rule `download`: one per source, the command it runs)
    plan = P.download_plan(cfg)
    assert plan == {"marc": ["en", "de", "es", "fr"], "paws-x": ["en", "de", "es", "fr"],
                    "ud-2.7": ["en", "de", "es", "fr"], "wikiann": ["en", "de", "es", "fr"]}  # fmt: skip
    for source, langs in plan.items():
        argv = ["--source", source, "--raw-root", cfg["raw_root"], "--langs", *langs,
                "--manifest", T.download_manifest(cfg, source), "--download", json.dumps(cfg["download"])]  # fmt: skip
        assert download_main(argv) == 0
    ud = json.loads((tmp_path / "raw/manifests/ud-2.7.json").read_text())
    assert {f["origin"] for f in ud["files"]} == {"manual", "extracted"}
    assert not (tmp_path / "raw/ud-treebanks-v2.7/UD_English-EWT/LICENSE.txt").exists()  # only CoNLL-U

    # The prepare jobs, then the table rule
    for dataset in T.datasets(cfg):
        prepare_task(T.task_of(dataset), T.task_languages(cfg, dataset), cfg["raw_root"],
                     T.source_cfg(cfg, dataset), T.data_dir(cfg, dataset))  # fmt: skip
    prefix = tmp_path / "results/tables/crossmulti/table1"
    make_table("crossmulti", "table1", datasize.spec(cfg, "crossmulti"), datasize.inputs(cfg, "crossmulti"), str(prefix))

    table = pd.read_csv(f"{prefix}.csv")
    assert list(table.columns) == ["task", "split", "lang", "paper", "ours", "delta", "why"]
    assert len(table) == 4 * 2 * 4 and table["ours"].notna().all()
    ours = table.set_index(["task", "split", "lang"])["ours"]
    for lang, (n_train, n_test) in SIZES.items():
        assert ours["pos", "train", lang] == n_train  # es: AnCora's 5, not GSD's 9; en: 3 text-less skipped
        assert ours["pos", "test", lang] == n_test
        assert ours["ner", "train", lang] == ours["pawsx", "train", lang] == n_train
        assert ours["marc", "test", lang] == n_test + 1
    row = table[(table.task == "pos") & (table.split == "train") & (table.lang == "en")].iloc[0]
    assert (row.paper, row.delta) == (12543, 7 - 12543)
    md = prefix.with_suffix(".md").read_text()
    assert "| UD train | 12,543 · 7 · -12,536 |" in md  # the paper's EN column first, as printed
    assert "± " not in md  # counts: one value, no spread
    assert "es UD_Spanish-AnCora" in md
    assert prefix.with_suffix(".tex").read_text().count("\\\\") == 1 + 8


def test_xtreme_selection_takes_every_treebank_and_records_absent_splits(tmp_path):
    """dlfa's POS (UD v2.5, all treebanks of a language); th has a test set only."""
    raw = tmp_path / "raw"
    root = raw / "ud-treebanks-v2.5"
    for tb, files in {
        "UD_English-EWT": treebank("en_ewt", {"train": 5, "dev": 2, "test": 3}),
        "UD_English-GUM": treebank("en_gum", {"train": 4, "dev": 1, "test": 2}),
        "UD_English-PUD": treebank("en_pud", {"test": 6}),
        "UD_Thai-PUD": treebank("th_pud", {"test": 7}),
        "UD_German-GSD": treebank("de_gsd", {"train": 2, "dev": 1, "test": 1}),
    }.items():
        for name, text in files.items():
            (root / tb).mkdir(parents=True, exist_ok=True)
            (root / tb / name).write_text(text)
    cfg = base()
    cfg["results"] = str(tmp_path / "results")
    cfg["language_sets"]["xtreme_pos"] = ["en", "th", "de"]
    sc = T.source_cfg(cfg, "pos.xtreme")
    man = prepare_task("pos", ["en", "th", "de"], raw, sc, tmp_path / "results/data/pos.xtreme")
    assert man["counts"] == {"en": {"train": 9, "dev": 3, "test": 11}, "th": {"test": 7},
                             "de": {"train": 2, "dev": 1, "test": 1}}  # fmt: skip
    assert man["absent"] == {"th": ["train", "dev"]}
    assert not (tmp_path / "results/data/pos.xtreme/th/train.jsonl").exists()

    spec = datasize.spec(cfg, "dlfa")
    spec["tasks"] = {"pos": spec["tasks"]["pos"]}
    table, md, _ = make_table_frame("dlfa", spec, [str(tmp_path / "results/data/pos.xtreme")], tmp_path)
    pos = table[table["task"] == "pos"]
    got = pos.set_index("stat")["ours"].dropna().to_dict()
    assert got == {"train": 9, "dev": 3, "test_min": 1, "test_max": 11, "langs": 3}
    assert list(pos["stat"]) == ["train", "dev", "test_min", "test_max", "langs"]
    # every published cell stays: the tasks this spec does not count, with the reason
    assert len(table) == 18 and table[table["task"] != "pos"]["why"].str.startswith("Tasks not counted in this run").all()
    assert "| POS | 21,253 · 9 · -21,244 | 3,974 · 3 · -3,971 |" in md
    assert "every treebank of each language" in md


def test_underspec_table1_folds_parsing_and_shows_missing_languages(tmp_path):
    cfg = base()
    spec = datasize.spec(cfg, "underspec")
    spec["tasks"] = {t: {**s, "languages": ["en", "ar"]} for t, s in spec["tasks"].items()}
    folders = []
    for task in ("xnli", "ner", "pos", "parsing"):
        folder = tmp_path / task
        n = {"xnli": 30, "ner": 20, "pos": 10, "parsing": 10}[task]
        write_json(folder / "manifest.json", {"task": task, "counts": {"en": {"train": n, "dev": 2, "test": 2}}})
        folders.append(str(folder))
    table, md, _ = make_table_frame("underspec", spec, folders, tmp_path)
    assert set(table["task"]) == {"xnli", "ner", "pos"}  # parsing's counts are POS's column
    assert len(table) == 9 * 2 * 3  # every published cell
    ours = table.set_index(["task", "lang", "split"])["ours"]
    assert ours["pos", "en", "train"] == 10 and ours["xnli", "en", "dev"] == 2
    assert pd.isna(ours["pos", "ar", "train"])  # ar has no data: shown "–"
    assert "| en train | 392,703 · 30 · -392,673 | 20,000 · 20 · -19,980 | 12,543 · 10 · -12,533 |" in md
    assert "| ar train | 392,703 · – · – |" in md
    assert "| vi dev |" in md  # a language the table does not cover still shows the paper's counts


def test_underspec_table1_xnli_note_reads_its_numbers_from_the_published_csv_and_the_data(tmp_path):
    cfg = base()
    spec = datasize.spec(cfg, "underspec")
    folders = []
    for task, n in (("xnli", 30), ("pos", 10)):
        write_json(tmp_path / task / "manifest.json", {"task": task, "counts": {"en": {"train": n, "dev": 2}}})
        folders.append(str(tmp_path / task))
    spec["tasks"] = {t: {**s, "languages": ["en"]} for t, s in spec["tasks"].items() if t in ("xnli", "pos")}
    _, md, _ = make_table_frame("underspec", spec, folders, tmp_path)
    assert "XNLI: the paper prints 392,703 training examples per language" in md  # published/table1.csv
    assert "(this run counts 30 pairs)" in md and "392,702" not in md  # no count typed by hand
    _, md, _ = make_table_frame("underspec", {**spec, "world": True}, folders, tmp_path / "world")
    assert "this run counts" not in md  # the synthetic world's count is not the corpus's


def make_table_frame(paper: str, spec: dict, inputs: list[str], tmp_path):
    prefix = tmp_path / "tables" / paper / "table1"
    table = make_table(paper, "table1", spec, inputs, str(prefix))
    return table, prefix.with_suffix(".md").read_text(), prefix.with_suffix(".tex").read_text()
