"""The bad-input corpus: every entry point refuses bad input the same way.

Each case runs one entry point as a user (or a rule) would — `python -m xlt.workflow.config`, a
workflow script, `snakemake` — on one bad input and asserts what issue 13 asks of all of
them: a non-zero exit, exactly one `error:` line naming the file and line (or the config key
and the allowed values), no traceback, and no partial output.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.sources.realfiles import CONLLU_EN, make_marc_jsonl, make_squad_json, make_wikiann_parquet

SCRIPTS = REPO / "workflow_scripts"
TINY = REPO / "presets" / "tiny.yaml"


@dataclass
class Bad:
    """One bad input: files to write under a fresh folder, the command, the expected line."""

    id: str
    argv: list[str]  # {tmp} is the case's folder; a first word ending in .py is a workflow script
    expect: str  # regex searched in the one `error:` line
    files: dict[str, str | bytes | Callable[[Path], None]] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=lambda: ["out"])  # must not exist afterwards
    fixture: str | None = None  # a fixture copied to {tmp}/model first


def run_case(case: Bad, tmp: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`env`: the `zygote` fixture's, where the case's workflow script is to be served by the
    session's fork server (as under `make tables`); by default it runs in its own process."""
    for rel, content in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    if argv[0].endswith(".py"):
        argv = [sys.executable, str(SCRIPTS / argv[0]), *argv[1:]]
    return subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300,
                          env={**_env(), "PYTHONPATH": str(REPO)} if env is None else env)


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}


def assert_refused(run: subprocess.CompletedProcess, expect: str, tmp: Path, outputs: list[str]) -> None:
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    assert "Traceback" not in out and not re.search(r'^\s*File ".*", line \d+', out, re.M), out[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, run.stderr[-3000:]
    assert re.search(expect, errors[0]), errors[0]
    for rel in outputs:
        assert not (tmp / rel).exists(), f"partial output left behind: {rel}"


# ---- file makers -----------------------------------------------------------------------------

CONLLU_OK = CONLLU_EN + CONLLU_EN.replace("en-1", "en-2")


def conllu_with(line_no: int, new: str) -> str:
    """CONLLU_OK with its line `line_no` (1-based) replaced."""
    lines = CONLLU_OK.splitlines()
    lines[line_no - 1] = new
    return "\n".join(lines) + "\n"


def parquet(kind: str, **columns) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        from xlt.formats import write_parquet

        write_parquet(path, kind, columns)

    return make


def gz(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"), mtime=0)


MARC_OK = make_marc_jsonl("en").decode()
MARC_LINE = json.dumps({"id": "en_1", "text": "good", "label": 4})
SQUAD_OK = json.loads(make_squad_json())


def squad(mutate: Callable[[dict], None]) -> str:
    doc = json.loads(json.dumps(SQUAD_OK))
    mutate(doc)
    return json.dumps(doc)


def qa0(doc: dict) -> dict:
    return doc["data"][0]["paragraphs"][0]["qas"][0]


def prepare(task: str, source: str, *, lang: str = "en", data: dict | None = None) -> list[str]:
    """prepare_task.py reading `source` (under {tmp}/raw) as the train split of `task`."""
    cfg = data if data is not None else {task: {"train_source": source}}
    return ["prepare_task.py", "--task", task, "--langs", lang, "--raw-root", "{tmp}/raw",
            "--data", json.dumps(cfg), "--out", "{tmp}/out"]


def config_check(*files: str) -> list[str]:
    return [sys.executable, "-m", "xlt.workflow.config", *files]


def yaml_file(obj) -> str:
    return yaml.safe_dump(obj)


# ---- the corpus ------------------------------------------------------------------------------

CONFIG = [
    Bad("config-not-yaml", config_check("bad.yaml"), r"bad\.yaml:4: invalid YAML \(expected ',' or ']'",
        {"bad.yaml": "hparams:\n  crossmulti:\n    lr: [1e-5\n  epochs: 2\n"}),
    Bad("config-not-a-mapping", config_check("bad.yaml"), r"bad\.yaml: expected a mapping of config keys, got list",
        {"bad.yaml": "- results\n- raw_root\n"}),
    Bad("config-file-missing", config_check("nowhere.yaml"), r"nowhere\.yaml: file not found"),
    # `make plan`: a misspelled target, and a config file that is not YAML, before Snakemake reads them
    Bad("plan-target-typo", ["plan.py", "--target", "crossmulti_tabel2", "--directory", "{tmp}"],
        r"^error: no target 'crossmulti_tabel2'; did you mean crossmulti_table2", outputs=[".snakemake"]),
    Bad("plan-config-not-yaml", ["plan.py", "--configfile", "{tmp}/bad.yaml", "--directory", "{tmp}"],
        r"bad\.yaml:4: invalid YAML", {"bad.yaml": "hparams:\n  crossmulti:\n    lr: [1e-5\n"}, outputs=[".snakemake"]),
    Bad("config-nan-lr", config_check("bad.yaml"), r"config key hparams\.crossmulti\.lr: nan is not a finite number",
        {"bad.yaml": "hparams: {crossmulti: {lr: .nan}}\n"}),
    Bad("config-inf-threshold", config_check("bad.yaml"), r"config key data\.wikimatrix\.threshold: inf is not a finite",
        {"bad.yaml": "data: {wikimatrix: {threshold: .inf}}\n"}),
    Bad("config-neg-inf-grid", config_check("bad.yaml"),
        r"config key papers\.underspec\.grid\.alpha_2d\.lo: -inf is not a finite",
        {"bad.yaml": "papers: {underspec: {grid: {alpha_2d: {lo: -.inf}}}}\n"}),
    Bad("config-unknown-top-key", config_check("bad.yaml"), r"unknown key\(s\) \['resultz'\].*Did you mean 'results'\?",
        {"bad.yaml": "resultz: out\n"}),
    Bad("config-unknown-hparam", config_check("bad.yaml"), r"hparams\.crossmulti: unknown key.*Did you mean 'dropout'\?",
        {"bad.yaml": "hparams: {crossmulti: {dropot: 0.2}}\n"}),
    Bad("config-hparam-type", config_check("bad.yaml"), r"hparams\.crossmulti\.dropout: 'high' should be of type number",
        {"bad.yaml": "hparams: {crossmulti: {dropout: high}}\n"}),
    Bad("config-hparam-range", config_check("bad.yaml"), r"hparams\.crossmulti\.warmup_ratio: 1\.5 is greater than",
        {"bad.yaml": "hparams: {crossmulti: {warmup_ratio: 1.5}}\n"}),
    Bad("config-task-typo", config_check("bad.yaml"),
        r"papers\.crossmulti\.tasks\[1\]: 'nre' is not allowed; allowed: pos, ner, pawsx, marc",
        {"bad.yaml": "papers: {crossmulti: {tasks: [pos, nre]}}\n"}),
    Bad("config-encoder-typo", config_check("bad.yaml"), r"papers\.crossmulti\.encoder: unknown encoder 'mbrt'.*'mbert'",
        {"bad.yaml": "papers: {crossmulti: {encoder: mbrt}}\n"}),
    Bad("config-source-override-key", config_check("bad.yaml"), r"data\.xnli: unknown key.*Did you mean 'train_source'\?",
        {"bad.yaml": "data: {xnli: {train_sourse: x.parquet}}\n"}),
    Bad("config-source-override-nowhere", config_check("bad.yaml"),
        r"no catalog source delivers nowhere/x\.parquet.*check the config's data block",
        {"bad.yaml": "data: {xnli: {train_source: {en: nowhere/x.parquet}}}\n"}),
    Bad("config-encoder-path-missing", config_check("bad.yaml"),
        r"config key encoders\.local\.path: /nonexistent/enc is not a Hugging Face model directory",
        {"bad.yaml": "encoders: {local: {path: /nonexistent/enc}}\npapers: {crossmulti: {encoder: local}}\n"}),
    Bad("config-world-key", config_check(str(TINY), "bad.yaml"), r"world\.languages\.de\.order: 'XYZ' is not one of SVO, SOV, VSO",
        {"bad.yaml": "world: {languages: {de: {order: XYZ}}}\n"}),
    Bad("config-build-mlm-key", config_check(str(TINY), "bad.yaml"),
        r"encoders\.tiny\.build\.mlm: unknown key\(s\) \['stepz'\].*Did you mean 'steps'\?",
        {"bad.yaml": "encoders: {tiny: {build: {mlm: {stepz: 10}}}}\n"}),
    Bad("config-threads-zero", config_check("bad.yaml"), r"compute\.jobs\.finetune\.threads: 0 is less than the minimum of 1",
        {"bad.yaml": "compute: {jobs: {finetune: {threads: 0}}}\n"}),
    Bad("config-pin-digest", config_check("bad.yaml"), r"download\.pins\.wikimatrix\.sha256\.es: 'abc' does not match",
        {"bad.yaml": "download: {pins: {wikimatrix: {sha256: {es: abc}}}}\n"}),
    Bad("config-languages-not-a-set", config_check("bad.yaml"),
        r"papers\.crossmulti\.languages: \['en', 'de'\] is not a language set's name: languages go through named language sets",
        {"bad.yaml": "papers: {crossmulti: {languages: [en, de]}}\n"}),
    Bad("config-duplicate-seeds", config_check("bad.yaml"), r"papers\.crossmulti\.seeds: \[1, 1\] has non-unique elements",
        {"bad.yaml": "papers: {crossmulti: {seeds: [1, 1]}}\n"}),
]


def snakemake_n(*files: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "all_tables",
            "--directory", "{tmp}", "--configfile", *files]


def zero_shot_n(*config: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "zero_shot",
            "--directory", "{tmp}", f"--configfile={TINY}", *(["--config", *config] if config else [])]


# The same checks through Snakemake itself: the workflow stops before it builds a DAG.
WORKFLOW = [
    Bad("snakemake-zero-shot-no-keys", zero_shot_n(), r"the zero_shot target needs --config keys encoder, task and langs: "
        r"snakemake zero_shot --config encoder=", outputs=["results", "logs"]),
    Bad("snakemake-zero-shot-language", zero_shot_n("encoder=tiny", "task=ner", "langs=de"),
        r"config key langs: unknown language set 'de'.* 'de' is a language: languages go through named language sets",
        outputs=["results", "logs"]),
    Bad("snakemake-nan", snakemake_n(str(TINY), "bad.yaml"), r"hparams\.crossmulti\.lr: nan is not a finite number",
        {"bad.yaml": "hparams: {crossmulti: {lr: .nan}}\n"}, outputs=["results", "logs"]),
    Bad("snakemake-unknown-key", snakemake_n(str(TINY), "bad.yaml"), r"unknown key.*Did you mean 'dropout'\?",
        {"bad.yaml": "hparams: {crossmulti: {dropot: 0.2}}\n"}, outputs=["results", "logs"]),
    Bad("snakemake-source-nowhere", snakemake_n("bad.yaml"), r"no catalog source delivers nowhere/x\.parquet",
        {"bad.yaml": "data: {xnli: {train_source: {en: nowhere/x.parquet}}}\n"}, outputs=["results", "logs"]),
    Bad("snakemake-encoder-path", snakemake_n("bad.yaml"), r"encoders\.local\.path: /nonexistent/enc is not",
        {"bad.yaml": "encoders: {local: {path: /nonexistent/enc}}\npapers: {crossmulti: {encoder: local}}\n"},
        outputs=["results", "logs"]),
]

READERS = [
    # CoNLL-U (UD): file and line
    Bad("conllu-columns", prepare("pos", "x.conllu"), r"raw/x\.conllu:3: expected 10 tab-separated columns, got 7",
        {"raw/x.conllu": conllu_with(3, "1\tI\tI\tPRON\tPRP\t_\t4")}),
    Bad("conllu-id-sequence", prepare("pos", "x.conllu"), r"x\.conllu:7: ID 5 out of sequence",
        {"raw/x.conllu": conllu_with(7, "5\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_")}),
    Bad("conllu-head-range", prepare("parsing", "x.conllu"), r"x\.conllu:3: HEAD 9 out of range",
        {"raw/x.conllu": conllu_with(3, "1\tI\tI\tPRON\tPRP\t_\t9\tnsubj\t_\t_")}),
    Bad("conllu-upos", prepare("pos", "x.conllu"), r"x\.conllu:3: unknown UPOS 'PRONOUN'",
        {"raw/x.conllu": conllu_with(3, "1\tI\tI\tPRONOUN\tPRP\t_\t4\tnsubj\t_\t_")}),
    Bad("conllu-deprel", prepare("parsing", "x.conllu"), r"x\.conllu:3: unknown DEPREL 'subject'",
        {"raw/x.conllu": conllu_with(3, "1\tI\tI\tPRON\tPRP\t_\t4\tsubject\t_\t_")}),
    Bad("conllu-duplicate-sent-id", prepare("pos", "x.conllu"), r"x\.conllu:10: duplicate sent_id 'en-1' \(first at line 1\)",
        {"raw/x.conllu": CONLLU_EN + CONLLU_EN}),
    Bad("conllu-utf8", prepare("pos", "x.conllu"), r"x\.conllu:2: invalid UTF-8",
        {"raw/x.conllu": CONLLU_OK.encode().replace(b"can't", b"can\xff")}),
    Bad("conllu-whitespace-line", prepare("pos", "x.conllu"), r"x\.conllu:9: whitespace-only line",
        {"raw/x.conllu": conllu_with(9, "   ")}),
    Bad("conllu-comment-inside", prepare("pos", "x.conllu"), r"x\.conllu:4: comment line inside a sentence",
        {"raw/x.conllu": conllu_with(4, "# note")}),
    Bad("conllu-mwt-dangling", prepare("pos", "x.conllu"), r"x\.conllu:4: multiword token 2-3 is not followed by its words",
        {"raw/x.conllu": CONLLU_EN.split("2\tca")[0] + "\n"}),
    Bad("conllu-empty-file", prepare("pos", "x.conllu"), r"raw/x\.conllu: empty file", {"raw/x.conllu": ""}),
    Bad("conllu-only-comments", prepare("pos", "x.conllu"), r"raw/x\.conllu: no records for task 'pos', language 'en'",
        {"raw/x.conllu": "# just a comment\n"}),
    # MARC JSON lines: file and line
    Bad("marc-json", prepare("marc", "m.jsonl"), r"m\.jsonl:2: invalid JSON", {"raw/m.jsonl": MARC_LINE + "\n{oops\n"}),
    Bad("marc-missing-key", prepare("marc", "m.jsonl"), r"m\.jsonl:1: missing key 'label'",
        {"raw/m.jsonl": json.dumps({"id": "a", "text": "t"}) + "\n"}),
    Bad("marc-label-range", prepare("marc", "m.jsonl"), r"m\.jsonl:1: label 7 out of range 0\.\.4",
        {"raw/m.jsonl": json.dumps({"id": "a", "text": "t", "label": 7}) + "\n"}),
    Bad("marc-duplicate-id", prepare("marc", "m.jsonl"), r"m\.jsonl:2: duplicate id 'en_1' \(first at line 1\)",
        {"raw/m.jsonl": MARC_LINE + "\n" + MARC_LINE + "\n"}),
    Bad("marc-not-object", prepare("marc", "m.jsonl"), r"m\.jsonl:1: expected a JSON object", {"raw/m.jsonl": "[1, 2]\n"}),
    Bad("marc-empty-file", prepare("marc", "m.jsonl"), r"raw/m\.jsonl: empty file", {"raw/m.jsonl": ""}),
    Bad("marc-blank-lines-only", prepare("marc", "m.jsonl"), r"raw/m\.jsonl: no records for task 'marc'",
        {"raw/m.jsonl": "\n\n"}),
    Bad("marc-unsupported-extension", prepare("marc", "m.jsonl.gz", data={"marc": {"train_source": "m.jsonl.gz"}}),
        r"no reader for a 'gz' file of task 'marc'", {"raw/m.jsonl.gz": gz(MARC_OK)[:20]}),
    # SQuAD JSON: file and the qa id
    Bad("squad-json", prepare("qa", "s.json"), r"s\.json:1: invalid JSON", {"raw/s.json": '{"data": [,]}'}),
    Bad("squad-answer-mismatch", prepare("qa", "s.json"), r"s\.json: qa id '.*': answer .* does not match context",
        {"raw/s.json": squad(lambda d: qa0(d)["answers"][0].update(answer_start=1))}),
    Bad("squad-duplicate-id", prepare("qa", "s.json"), r"s\.json: qa id '.*': duplicate id",
        {"raw/s.json": squad(lambda d: d["data"][0]["paragraphs"][0]["qas"].append(qa0(d)))}),
    Bad("squad-missing-context", prepare("qa", "s.json"), r"s\.json: data\[0\]\.paragraphs\[0\]: missing key 'context'",
        {"raw/s.json": squad(lambda d: d["data"][0]["paragraphs"][0].pop("context"))}),
    # Hub parquet: file and row
    Bad("parquet-not-parquet", prepare("ner", "w.parquet"), r"w\.parquet: not a readable parquet file",
        {"raw/w.parquet": b"PAR1 this is not parquet"}),
    Bad("parquet-truncated", prepare("ner", "w.parquet"), r"w\.parquet: not a readable parquet file",
        {"raw/w.parquet": make_wikiann_parquet("en")[:100]}),
    Bad("wikiann-length-mismatch", prepare("ner", "w.parquet"), r"w\.parquet: row 0: 2 tokens but 1 ner_tags",
        {"raw/w.parquet": parquet("wikiann", tokens=[["a", "b"]], ner_tags=[[0]], langs=[["en", "en"]], spans=[[]])}),
    Bad("wikiann-label-range", prepare("ner", "w.parquet"), r"w\.parquet: row 0: label 9",
        {"raw/w.parquet": parquet("wikiann", tokens=[["a"]], ner_tags=[[9]], langs=[["en"]], spans=[[]])}),
    Bad("pawsx-duplicate-id", prepare("pawsx", "p.parquet"), r"p\.parquet: row 1: duplicate id '7' \(first in row 0\)",
        {"raw/p.parquet": parquet("pawsx", id=[7, 7], sentence1=["a", "b"], sentence2=["c", "d"], label=[0, 1])}),
    Bad("pawsx-null-id", prepare("pawsx", "p.parquet"), r"p\.parquet: row 0: id is null",
        {"raw/p.parquet": parquet("pawsx", id=[None], sentence1=["a"], sentence2=["c"], label=[0])}),
    Bad("xnli-label-range", prepare("xnli", "x.parquet"), r"x\.parquet: row 0: label 3",
        {"raw/x.parquet": parquet("xnli", premise=["a"], hypothesis=["b"], label=[3])}),
    Bad("xnli-empty-parquet", prepare("xnli", "x.parquet"), r"raw/x\.parquet: no records for task 'xnli'",
        {"raw/x.parquet": parquet("xnli", premise=[], hypothesis=[], label=[])}),
    # TSV: file and line
    Bad("xnli-mt-ragged", prepare("xnli", "t.tsv"), r"t\.tsv:2: ",
        {"raw/t.tsv": "premise\thypo\tlabel\na\tb\n"}),
    Bad("xnli-mt-label", prepare("xnli", "t.tsv"), r"t\.tsv:2: .*'maybe'",
        {"raw/t.tsv": "premise\thypo\tlabel\na\tb\tmaybe\n"}),
    Bad("wikimatrix-score", prepare("bitext", "", lang="de", data={}), r"WikiMatrix\.en-de\.tsv\.gz:2: ",
        {"raw/wikimatrix/WikiMatrix.en-de.tsv.gz": gz("1.2\tHello .\tHallo .\nhigh\tYes .\tJa .\n")}),
    Bad("wikimatrix-empty", prepare("bitext", "", lang="de", data={}), r"WikiMatrix\.en-de\.tsv\.gz: empty file",
        {"raw/wikimatrix/WikiMatrix.en-de.tsv.gz": b""}),
    # prepare_task.py's own arguments
    Bad("prepare-unknown-task", prepare("nre", "x"), r"unknown task 'nre'.*Did you mean 'ner'\?"),
    Bad("prepare-unknown-language", prepare("pos", "x.conllu", lang="xx"), r"'xx'", {"raw/x.conllu": CONLLU_OK}),
    Bad("prepare-bad-data-json", ["prepare_task.py", "--task", "pos", "--langs", "en", "--raw-root", "raw",
                                  "--data", "{ud: 1}", "--out", "out"], r"argument --data: invalid JSON"),
    Bad("prepare-override-matches-nothing", prepare("pos", "nothing-*.conllu"),
        r"train_source 'nothing-\*\.conllu' matches no file under"),
]


def truncate(rel: str, keep: int | None = None) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        target = path.parent / rel
        data = target.read_bytes()
        target.write_bytes(data[: keep if keep is not None else len(data) // 2])

    return cut


def flip_byte(rel: str) -> Callable[[Path], None]:
    def flip(path: Path) -> None:
        target = path.parent / rel
        data = bytearray(target.read_bytes())
        data[-3] ^= 0xFF
        target.write_bytes(bytes(data))

    return flip


def evaluate(split: str = "dev", lang: str = "en") -> list[str]:
    return ["evaluate.py", "--model", "{tmp}/model", "--data", "{tmp}/data", "--split", split, "--langs", lang,
            "--out", "{tmp}/out/m.json", "--predictions", "{tmp}/out/p.jsonl", "--threads", "1"]


def finetune(hparams: dict | str, *, encoder: str = "{tmp}/model/encoder", langs: str = "en") -> list[str]:
    """finetune.py's argv: its one job (`hparams` a text: spliced into the job's JSON as it is)."""
    job = {"task": "pos", "encoder": encoder, "data": "{tmp}/data", "train_langs": [langs], "hparams": "HPARAMS",
           "seeds": [1], "outs": ["{tmp}/out"], "checkpoint_dirs": ["{tmp}/ckpt"], "threads": 1}
    text = hparams if isinstance(hparams, str) else json.dumps(hparams)
    return ["finetune.py", "--job", json.dumps(job).replace('"HPARAMS"', text)]


def zero_shot_table() -> list[str]:
    spec = {"encoder": "tiny", "loaded_from": "x", "task": "ner", "langset": "s", "languages": ["en", "de"], "source": "en",
            "recipe": "en.underspec", "hparams": "underspec", "seeds": [1]}
    return ["zero_shot_table.py", "--spec", json.dumps(spec), "--inputs", "e.json", "--out-prefix", "out/t"]


POS_LINE = json.dumps({"id": "s1", "tokens": ["a", "b"], "upos": ["NOUN", "VERB"]})
XNLI_LINE = json.dumps({"id": "x", "text": "a b", "text_pair": "c", "label": "neutral"}) + "\n"
POS_DATA = {"data/en/dev.jsonl": POS_LINE + "\n", "data/en/train.jsonl": POS_LINE + "\n"}
GRID = {"alpha_1d": {"lo": -0.5, "hi": 1.5, "step": 0.5, "extra": []}, "alpha_2d": {"lo": -0.5, "hi": 1.5, "step": 0.5}}

SCRIPTS_CASES = [
    # evaluate.py (a saved model, corrupted in place)
    Bad("evaluate-not-a-model", [*evaluate()[:2], "{tmp}/data", *evaluate()[3:]], r"data: not a saved xlt model",
        {**POS_DATA}, outputs=["out"]),
    Bad("evaluate-head-truncated", evaluate(), r"model/modules\.safetensors: truncated or corrupted safetensors file",
        {**POS_DATA, "model/.cut": truncate("modules.safetensors")}, fixture="model"),
    Bad("evaluate-head-bitflip", evaluate(), r"model/modules\.safetensors: corrupted: sha256 differs",
        {**POS_DATA, "model/.cut": flip_byte("modules.safetensors")}, fixture="model"),
    Bad("evaluate-encoder-truncated", evaluate(),
        r"model/encoder/model\.safetensors: truncated or corrupted safetensors file",
        {**POS_DATA, "model/.cut": truncate("encoder/model.safetensors")}, fixture="model"),
    Bad("evaluate-encoder-header-cut", evaluate(), r"encoder/model\.safetensors: truncated or corrupted safetensors",
        {**POS_DATA, "model/.cut": truncate("encoder/model.safetensors", keep=5)}, fixture="model"),
    Bad("evaluate-meta-json", evaluate(), r"model/xlt_model\.json:1: invalid JSON",
        {**POS_DATA, "model/xlt_model.json": "{"}, fixture="model"),
    Bad("evaluate-missing-split", evaluate(lang="de"), r"data/de/dev\.jsonl: missing; prepared languages in .*: en",
        {**POS_DATA}, fixture="model"),
    Bad("evaluate-bad-record", evaluate(), r"data/en/dev\.jsonl:2: invalid JSON",
        {**POS_DATA, "data/en/dev.jsonl": POS_LINE + "\n{\n"}, fixture="model"),
    # finetune.py
    Bad("finetune-unknown-option", finetune({"learning_rate": 1}), r"hparams: unknown training option\(s\) \['learning_rate'\]",
        {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("finetune-nan-json", finetune('{"lr": NaN}'), r"argument --job: invalid JSON \(NaN is not a finite number\)",
        {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("finetune-stride", finetune({"stride": 40, "max_length": 64}), r"stride=40 must be positive and below max_length/2",
        {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("finetune-missing-language", finetune({}, langs="de"), r"data/de/train\.jsonl: missing",
        {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("finetune-encoder-missing", finetune({}, encoder="{tmp}/no-encoder"), r"cannot load encoder '.*no-encoder'",
        {**POS_DATA}, outputs=["out", "ckpt"]),
    # the job loads the papers' fine-tune extensions: X-Mixup's own check speaks, before any loading
    Bad("finetune-xmixup-tagging-alone", finetune({"extras": [{"name": "xmixup", "layer": 1}]}, encoder="{tmp}/no-encoder"),
        r"xmixup tagging: the target side's labels are a source model's soft labels; none given",
        {**POS_DATA}, outputs=["out", "ckpt"]),
    Bad("finetune-encoder-pickle-only", finetune({}, encoder="{tmp}/model/encoder"),
        r"encoder .*/model/encoder holds only pickled weights \(pytorch_model\.bin\), which can run code when loaded "
        r"and are never read here; convert them once to safetensors: `\.venv/bin/python -m xlt\.engine\.to_safetensors ",
        {**POS_DATA, "model/.cut": lambda p: (p.parent / "encoder/model.safetensors").rename(p.parent / "encoder/pytorch_model.bin")},
        fixture="model", outputs=["out", "ckpt"]),
    # make_table.py, make_world.py, encoder_corpus.py, build_encoder.py
    Bad("table-unknown", ["make_table.py", "--paper", "crossmulti", "--table", "table9", "--spec", "{}", "--inputs", "x.json",
                          "--out-prefix", "out/t"], r"unknown table of paper crossmulti 'table9'; allowed: table1, table2, table3, table4, table5, table6\. "
                          r"Did you mean 'table\d'\?"),
    Bad("zero-shot-table-input-json", zero_shot_table(), r"e\.json:1: invalid JSON", {"e.json": "{"}),
    Bad("zero-shot-table-language", zero_shot_table(), r"e\.json: no scores for language 'de'; has en",
        {"e.json": json.dumps({"task": "ner", "seed": 1, "metrics": {"en": {"span_f1": 1.0}}})}),
    Bad("table-input-json", ["make_table.py", "--paper", "crossmulti", "--table", "table2",
                             "--spec", json.dumps({"metric": {"pos": "f1_macro"}, "source": "en"}),
                             "--inputs", "e.json", "--out-prefix", "out/t"], r"e\.json:1: invalid JSON", {"e.json": "{"}),
    Bad("world-unknown-key", ["make_world.py", "--world", json.dumps({"seed": 1, "languages": {"en": {}}, "sizez": {}}),
                              "--raw-root", "out/raw", "--manifest", "out/m.json"], r"world.*sizez.*unknown key; allowed"),
    Bad("corpus-bad-world", ["encoder_corpus.py", "--world", json.dumps({"seed": 1, "languages": {"en": {"order": "OVS"}}}),
                             "--sentences", "10", "--out", "out/c.txt"], r"world\.languages\.en\.order: 'OVS' is not one of SVO, SOV, VSO"),
    Bad("build-encoder-corpus-missing", ["build_encoder.py", "--corpus", "nowhere.txt", "--build", json.dumps(
        {"vocab_size": 100, "shape": {}, "mlm": {}}), "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"nowhere\.txt: file not found", outputs=["out", "ckpt"]),
    Bad("build-encoder-shape-key", ["build_encoder.py", "--corpus", "c.txt", "--build", json.dumps(
        {"vocab_size": 100, "shape": {"layerz": 2}, "mlm": {}}), "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"encoders\.\*\.build.*layerz", {"c.txt": "a b c\n" * 20}, outputs=["out"]),
    # underspec
    Bad("grid-model-missing", ["paper_job.py", "underspec", "grid", "--bi", "{tmp}/nobi", "--src", "{tmp}/nosrc", "--tgt", "{tmp}/notgt",
                               "--data-dir", "{tmp}/data", "--encoder", "tiny", "--source", "en", "--target", "de",
                               "--grids", "all.1d", "--grid", json.dumps(GRID), "--metric", "accuracy",
                               "--out-dir", "{tmp}/out"],
        r"nobi: not a saved xlt model", {**POS_DATA}),
    Bad("grid-kind", ["paper_job.py", "underspec", "grid", "--bi", "b", "--src", "s", "--tgt", "t", "--data-dir", "d", "--encoder", "tiny",
                      "--source", "en", "--target", "de", "--grids", "all.1d", "all.3d", "--grid", "{}",
                      "--metric", "accuracy", "--out-dir", "out"],
        r"grid 'all\.3d': expected <variant>\.<kind>, variant one of all, encoder, kind one of 1d, 2d"),
    Bad("similarity-not-parallel",
        ["paper_job.py", "dlfa", "similarity", "--models", json.dumps({"pawsx:baseline": "{tmp}/model"}), "--data", "{tmp}/data",
         "--langs", "en", "de", "--source", "en", "--sentences", "1", "--sample-seed", "1", "--model-seed", "1",
         "--max-length", "32", "--out-csv", "{tmp}/out/s.csv", "--out-json", "{tmp}/out/s.json"],
        r"data: the test sets are not parallel \(rows per language: \{'en': 2, 'de': 1\}\)",
        {"data/en/test.jsonl": XNLI_LINE * 2, "data/de/test.jsonl": XNLI_LINE}),
    Bad("similarity-model-missing",
        ["paper_job.py", "dlfa", "similarity", "--models", json.dumps({"pawsx:d1": "{tmp}/nomodel"}), "--data", "{tmp}/data",
         "--langs", "en", "de", "--source", "en", "--sentences", "1", "--sample-seed", "1", "--model-seed", "1",
         "--max-length", "32", "--out-csv", "{tmp}/out/s.csv", "--out-json", "{tmp}/out/s.json"],
        r"nomodel: not a saved xlt model", {"data/en/test.jsonl": XNLI_LINE, "data/de/test.jsonl": XNLI_LINE}),
    # xmixup
    Bad("cka-not-parallel",
        ["paper_job.py", "xmixup", "cka", "--model-dir", "{tmp}/model", "--data-dir", "{tmp}/data", "--langs", "en", "de", "--split", "test", "--out", "{tmp}/out/c.json"],
        r"data/de/test\.jsonl: 1 rows, not parallel to .*data/en/test\.jsonl \(2 rows\)",
        {"data/en/test.jsonl": XNLI_LINE * 2, "data/de/test.jsonl": XNLI_LINE}),
    Bad("cka-model-missing",
        ["paper_job.py", "xmixup", "cka", "--model-dir", "{tmp}/nomodel", "--data-dir", "{tmp}/data", "--langs", "en", "de", "--split", "test", "--out", "{tmp}/out/c.json"],
        r"nomodel: not a saved xlt model", {"data/en/test.jsonl": XNLI_LINE, "data/de/test.jsonl": XNLI_LINE}),
    Bad("centroids-language-missing",
        ["paper_job.py", "xmixup", "centroids", "--model-dir", "{tmp}/model", "--data-dir", "{tmp}/data", "--langs", "en", "de", "--split", "test", "--out", "{tmp}/out/c.json"],
        r"data/de/test\.jsonl: missing \(the centroids need each language's test split\)", {"data/en/test.jsonl": XNLI_LINE}),
    Bad("centroids-model-missing",
        ["paper_job.py", "xmixup", "centroids", "--model-dir", "{tmp}/nomodel", "--data-dir", "{tmp}/data", "--langs", "en", "de", "--split", "test", "--out", "{tmp}/out/c.json"],
        r"nomodel: not a saved xlt model", {"data/en/test.jsonl": XNLI_LINE, "data/de/test.jsonl": XNLI_LINE}),
    Bad("figures-grid-missing", ["make_figure.py", "--paper", "underspec", "--figure", "fig2", "--spec", "{}",
                                 "--inputs", "nowhere.csv", "--out-dir", "out"], r"^error: nowhere\.csv: No such file or directory$"),
    Bad("figure-unknown", ["make_figure.py", "--paper", "underspec", "--figure", "fig99", "--spec", "{}",
                           "--inputs", "g.csv", "--out-dir", "out"], r"unknown figure of paper underspec 'fig99'.*Did you mean"),
    Bad("tables-index-item", ["tables_index.py", "--items", "nowhere.md", "--out", "out/index.md"],
        r"nowhere\.md: not a table or figure"),
    # the claims page (xlt.claims): a table CSV without the columns a claim filters on, a page input not a claims CSV
    Bad("claims-table-column", ["make_claims.py", "--paper", "adjust", "--reflects", "x", "--inputs",
                                "{tmp}/results/tables/adjust/table2.csv", "--out-prefix", "out/adjust"],
        r"table2\.csv: filter on column 'dataset': not in the CSV \(columns: lang, ours_mean\)",
        {"results/tables/adjust/table2.csv": "lang,ours_mean\nes,1.0\n"}),
    Bad("claims-page-input", ["claims_page.py", "--inputs", "{tmp}/t.csv", "--out-md", "out/c.md", "--out-csv", "out/c.csv"],
        r"t\.csv: not a claims CSV \(columns a, b;", {"t.csv": "a,b\n1,2\n"}),
    # crossmulti's analyses
    Bad("crossmulti-probe-key", ["paper_job.py", "crossmulti", "probe", "--model", "{tmp}/model", "--pretrained", "{tmp}/model/encoder",
                                 "--probes", "{}", "--probe", '{"epochs": 1, "lr": 0.1, "batch_size": 8, "max_length": 32, "epoch": 2}',
                                 "--out", "out/p.csv", "--provenance-out", "out/p.json"],
        r"config key papers\.crossmulti\.analysis\.probe: unknown \['epoch'\]; allowed: batch_size, epochs", fixture="model"),
    Bad("crossmulti-probe-model-missing", ["paper_job.py", "crossmulti", "probe", "--model", "{tmp}/nomodel", "--pretrained", "x",
                                           "--probes", "{}", "--probe", '{"epochs": 1, "lr": 0.1, "batch_size": 8, "max_length": 32}',
                                           "--out", "out/p.csv", "--provenance-out", "out/p.json"],
        r"nomodel: not a saved xlt model \(no xlt_model\.json\)"),
    Bad("crossmulti-head-updates-missing", ["paper_job.py", "crossmulti", "head-updates", "--pretrained", "{tmp}/model/encoder",
                                            "--models", "{tmp}/nomodel/pos/en.crossmulti/seed1", "--out", "out/h.csv",
                                            "--provenance-out", "out/h.json"],
        r"cannot load encoder '.*nomodel/pos/en\.crossmulti/seed1/encoder'", fixture="model"),
    Bad("crossmulti-pppl-key", ["paper_job.py", "crossmulti", "pppl", "--task", "pos", "--data-dir", "data", "--langs", "en",
                                "--models", "m", "--pppl", '{"max_len": 64, "batch_size": 8}', "--pretrained", "p",
                                "--out", "out/p.csv", "--provenance-out", "out/p.json"],
        r"--pppl: papers\.crossmulti\.analysis\.pppl takes max_length, batch_size"),
    # the generic runner of a paper's jobs (xlt.papers.job_cli)
    Bad("paper-job-unknown-paper", ["paper_job.py", "xmixpu", "cka"], r"unknown paper with jobs 'xmixpu'; allowed: .*xmixup.*; did you mean 'xmixup'\?"),
    Bad("paper-job-unknown-job", ["paper_job.py", "xmixup", "ckka"], r"unknown job of paper xmixup 'ckka'; allowed: cka, centroids; did you mean 'cka'\?"),
    Bad("paper-job-unknown-option", ["paper_job.py", "xmixup", "cka", "--model-dir", "m", "--data-dir", "d", "--langs", "en",
                                     "--split", "test", "--out", "out/c.json", "--pca-row", "3"],
        r"paper_job\.py xmixup cka: unrecognized arguments: --pca-row 3; allowed: --model-dir, .*--pca-rows, --threads"),
    # the encoder stage's adaptation, the alignment stage
    Bad("adapt-mlm-key", ["adapt_mlm.py", "--encoder", "{tmp}/model/encoder", "--data", "data", "--task", "pos",
                          "--langs", "en", "--mlm", '{"step": 5}', "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"config key adapt\.mlm: .*'step'; allowed: steps", {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("adapt-mlm-missing-language", ["adapt_mlm.py", "--encoder", "{tmp}/model/encoder", "--data", "data", "--task", "pos",
                                       "--langs", "de", "--mlm", "{}", "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"data/de/train\.jsonl: missing", {**POS_DATA}, fixture="model", outputs=["out", "ckpt"]),
    Bad("adjust-key", ["paper_job.py", "adjust", "encoder", "--encoder", "{tmp}/model/encoder", "--pairs", "p.jsonl",
                       "--adjust", '{"word_vector": "avg"}', "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"--adjust: unknown adjustment option\(s\) \['word_vector'\]", {"p.jsonl": '{"src": ["a"], "tgt": ["b"], "links": [[0, 0]]}\n'},
        fixture="model", outputs=["out", "ckpt"]),
    Bad("adjust-pair-line", ["paper_job.py", "adjust", "encoder", "--encoder", "{tmp}/model/encoder", "--pairs", "p.jsonl",
                             "--adjust", "{}", "--out", "out/enc", "--checkpoint-dir", "ckpt"],
        r"p\.jsonl:2: not an aligned pair", {"p.jsonl": '{"src": ["a"], "tgt": ["b"], "links": [[0, 0]]}\n{"src": "a b"}\n'},
        fixture="model", outputs=["out", "ckpt"]),
    Bad("align-bitext-columns", ["align_stage.py", "pool", "--bitext", "b.tsv", "--pool-config",
                                 '{"size": 10, "max_words": 64, "threshold": 1.04}', "--out", "out/p.tsv", "--meta", "out/p.json"],
        r"b\.tsv:2: expected 3 tab-separated columns", {"b.tsv": "1.2\tHello there\tHola\n1.1\tno score\n"}),
    Bad("align-subword-sample-pool", ["align_stage.py", "subword-sample", "--pool", "p.tsv", "--links", "l.pharaoh",
                                      "--align-meta", "a.json", "--word-sample", "w.jsonl", "--size", "1", "--seed", "1",
                                      "--out", "out/s.jsonl", "--meta", "out/s.json"],
        r"w\.jsonl: 1 of its pairs are not in the subword pool p\.tsv \(e\.g\. en-xx-7\)",
        {"p.tsv": "en-xx-1\ta\tb\n", "l.pharaoh": "0-0\n", "a.json": '{"backend": {"name": "hand"}}', "w.jsonl": '{"id": "en-xx-7"}\n'}),
    Bad("align-backend", ["align_stage.py", "links", "--pool", "p.tsv", "--backend", "fastalign", "--raw-dir", "out/raw",
                          "--out", "out/l.pharaoh", "--meta", "out/a.json"], r"unknown alignment backend 'fastalign'"),
]


def download(*args: str) -> list[str]:
    # its own lock file: the repository's may hold real entries (and the run must not add any)
    return ["download.py", "--raw-root", "{tmp}/raw", "--manifest", "{tmp}/out/m.json",
            "--lock", "{tmp}/lock.yaml", *args]  # fmt: skip


DOWNLOADS = [
    Bad("download-unknown-source", download("--source", "wikimatrx"), r"Did you mean 'wikimatrix'\?"),
    Bad("download-json", download("--source", "wikimatrix", "--download", "{pins: }"), r"--download: invalid JSON"),
    Bad("download-nan-json", download("--source", "wikimatrix", "--download", '{"timeout": NaN}'),
        r"--download: invalid JSON \(NaN is not a finite number\)"),
    Bad("download-unknown-key", download("--source", "wikimatrix", "--download", '{"require_pin": true}'),
        r"download\.require_pin: unknown key.*Did you mean 'require_pins'\?"),
    Bad("download-removed-key", download("--source", "wikimatrix", "--download", '{"allow_unpinned": true}'),
        r"download\.allow_unpinned: removed.*download\.require_pins: true"),
    Bad("download-config-not-yaml", download("--source", "wikimatrix", "--config", "c.yaml"), r"c\.yaml:3: invalid YAML",
        {"c.yaml": "download:\n  pins: [\n"}),
    Bad("download-unpinned", download("--source", "wikimatrix", "--langs", "es", "--require-pins"),
        r"refusing to download unpinned files", outputs=["out", "raw", "lock.yaml"]),
    Bad("download-bad-retries", download("--source", "wikimatrix", "--download", '{"retries": 0}'),
        r"download\.retries: must be >= 1"),
]

CORPUS = CONFIG + WORKFLOW + READERS + SCRIPTS_CASES + DOWNLOADS


def test_the_corpus_is_large_and_covers_every_entry_point():
    assert len(CORPUS) >= 60
    assert len({c.id for c in CORPUS}) == len(CORPUS)
    used = {c.argv[0] for c in CORPUS if c.argv[0].endswith(".py")}
    assert used == {p.name for p in SCRIPTS.glob("*.py")}, "a workflow script without a bad-input case"


@pytest.fixture(scope="module")
def saved_model(tiny_encoder, tmp_path_factory) -> Path:
    """A saved pos model (the session's tiny encoder, an untrained head)."""
    from xlt.engine.train_config import TrainConfig
    from xlt.engine.model import ModelSpec, build_model, load_encoder, save_model

    encoder, tokenizer = load_encoder(str(tiny_encoder))
    model = build_model(ModelSpec(task="pos", dropout=0.0), encoder)
    out = tmp_path_factory.mktemp("saved") / "model"
    cfg = TrainConfig(task="pos", encoder=str(tiny_encoder), max_length=32, stride=8)
    save_model(model, tokenizer, out, {"train_config": cfg.to_dict(),
                                       "provenance": {"seed": 1, "code": "test", "data_sha256": {}}})
    return out


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_bad_input_is_refused_with_one_line(case: Bad, tmp_path, request, zygote):
    if case.fixture == "model":
        shutil.copytree(request.getfixturevalue("saved_model"), tmp_path / "model")
    run = run_case(case, tmp_path, zygote)
    assert_refused(run, case.expect, tmp_path, case.outputs)
