"""Small files in the real formats of each source, made by the tests.

A UD tarball of CoNLL-U files (multiword tokens, empty nodes), the XNLI-MT zip of TSVs, a
WikiMatrix .tsv.gz, Hub parquet with the Hub's columns, MARC jsonl, SQuAD JSON.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


CONLLU_EN = """# sent_id = en-1
# text = I can't go.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\tcan\tAUX\tMD\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

"""
CONLLU_DE = """# sent_id = de-1
# text = Er schläft.
1\tEr\ter\tPRON\tPPER\t_\t2\tnsubj\t_\t_
2\tschläft\tschlafen\tVERB\tVVFIN\t_\t0\troot\t_\tSpaceAfter=No
2.1\tgut\tgut\tADV\tADV\t_\t_\t_\t2:advmod\t_
3\t.\t.\tPUNCT\t$.\t_\t2\tpunct\t_\t_

"""


def _tar_add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tf.addfile(info, io.BytesIO(data))


def make_ud_tgz(version: str = "2.5", extra: dict[str, bytes] | None = None) -> bytes:
    """A miniature `ud-treebanks-v<version>.tgz` laid out like the LINDAT release."""
    top = f"ud-treebanks-v{version}"
    files = {
        f"{top}/UD_English-EWT/en_ewt-ud-train.conllu": CONLLU_EN.encode(),
        f"{top}/UD_English-EWT/en_ewt-ud-test.conllu": CONLLU_EN.encode(),
        f"{top}/UD_English-EWT/LICENSE.txt": b"CC BY-SA 4.0\n",
        f"{top}/UD_English-GUM/en_gum-ud-dev.conllu": CONLLU_EN.encode(),
        f"{top}/UD_German-GSD/de_gsd-ud-train.conllu": CONLLU_DE.encode(),
        **(extra or {}),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            _tar_add(tf, name, data)
    return buf.getvalue()


def make_tgz(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            _tar_add(tf, name, data)
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)
    return buf.getvalue()


XNLI_MT_HEADER = "premise\thypo\tlabel\n"


def make_xnli_mt_zip(langs=("de", "es"), extra: dict[str, bytes] | None = None) -> bytes:
    """A miniature XNLI-MT-1.0.zip: translate-train and translate-test TSVs."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for lang in langs:
            zf.writestr(
                f"XNLI-MT-1.0/multinli/multinli.train.{lang}.tsv",
                XNLI_MT_HEADER + f"p-{lang}\th-{lang}\tcontradictory\np2\th2\tentailment\n",
            )
            zf.writestr(
                f"XNLI-MT-1.0/xnli/xnli.test.{lang}.tsv",
                XNLI_MT_HEADER + f"t-{lang}\th\tneutral\n",
            )
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


def make_wikimatrix_gz(lang: str = "es") -> bytes:
    rows = [
        f"1.2\tThe cat sleeps.\tEl gato duerme ({lang}).",
        "1.05\tGood morning.\tBuenos días.",
        "1.01\tBelow threshold.\tDebajo.",
    ]
    return gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0)


def make_wikiann_parquet(lang: str = "en", n: int = 3) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "tokens": pa.array(
                [["John", "Smith", "lives", "in", "Paris"]] * n, pa.list_(pa.string())
            ),
            "ner_tags": pa.array([[1, 2, 0, 0, 5]] * n, pa.list_(pa.int64())),
            "langs": pa.array([[lang] * 5] * n, pa.list_(pa.string())),
            "spans": pa.array([["PER: John Smith", "LOC: Paris"]] * n, pa.list_(pa.string())),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def make_squad_parquet() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    answers = pa.array(
        [{"text": ["Paris"], "answer_start": [0]}],
        pa.struct([("text", pa.list_(pa.string())), ("answer_start", pa.list_(pa.int32()))]),
    )
    table = pa.table(
        {
            "id": ["q1"],
            "title": ["France"],
            "context": ["Paris is the capital of France."],
            "question": ["What is the capital of France?"],
            "answers": answers,
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def make_marc_jsonl(lang: str = "de") -> bytes:
    rows = [
        {"id": f"{lang}_0000001", "text": "Great\n\nWorks well.", "label": 4},
        {"id": f"{lang}_0000002", "text": "Bad\n\nBroke at once.", "label": 0},
    ]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def make_squad_json(version: str = "1.1") -> bytes:
    ctx = "Paris is the capital of France."
    data = {
        "version": version,
        "data": [
            {
                "title": "France",
                "paragraphs": [
                    {
                        "context": ctx,
                        "qas": [
                            {
                                "id": "q1",
                                "question": "What is the capital of France?",
                                "answers": [{"text": "Paris", "answer_start": ctx.index("Paris")}],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(data).encode()
