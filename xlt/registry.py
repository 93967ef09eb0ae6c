"""The task registry: each task declared once.

A task names its head, where its label lives in the normalised record, its label set,
its metrics and the languages its real source offers. Everything downstream (training,
evaluation, tables, target lists) reads these entries; nothing else hard-codes a task.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xlt.errors import unknown as _unknown

UPOS = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)  # fmt: skip
WIKIANN_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")
# UD v2 universal dependency relations (subtypes such as nmod:poss are cut to their base).
UD_DEPRELS = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf",
    "compound", "conj", "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl",
    "fixed", "flat", "goeswith", "iobj", "list", "mark", "nmod", "nsubj", "nummod", "obj",
    "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative", "xcomp",
)  # fmt: skip

# XTREME's POS (33, UD v2.5) and NER (40, WikiANN) languages beyond the nine above (dlfa,
# xmixup evaluate on all of them).
XTREME_POS_MORE = (
    "af", "bg", "el", "et", "eu", "fa", "fi", "he", "hu", "id", "it", "ja", "kk", "ko", "mr",
    "nl", "pt", "ta", "te", "th", "tl", "tr", "ur", "yo",
)  # fmt: skip
XTREME_NER_MORE = XTREME_POS_MORE + ("bn", "jv", "ka", "ml", "ms", "my", "sw")

@dataclass(frozen=True)
class Task:
    name: str
    description: str
    head: str  # its kind: a name in xlt.engine.kinds.KINDS (the one list of kinds)
    input: str  # "tokens" | "text" | "text_pair" | "qa"
    label_field: str | None  # field of the normalised record holding the gold label(s)
    labels: tuple[str, ...] | None  # closed label set; index = class id
    metrics: tuple[str, ...]  # computed by xlt.metrics for every evaluation
    source: str  # the real dataset, see docs/data.md and xlt.sources
    languages: tuple[str, ...]  # languages the papers use that the real source offers
    splits: tuple[str, ...] = ("train", "dev", "test")
    extra: dict = field(default_factory=dict)

    @property
    def num_labels(self) -> int:
        return len(self.labels) if self.labels else 0


TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task(
            name="pos",
            description="Universal POS tagging (Universal Dependencies)",
            head="tagging",
            input="tokens",
            label_field="upos",
            labels=UPOS,
            metrics=("accuracy", "f1_macro", "f1_micro", "seqeval_f1"),
            source="ud",
            languages=("en", "de", "es", "fr", "ar", "hi", "ru", "vi", "zh") + XTREME_POS_MORE,
        ),
        Task(
            name="ner",
            description="Named-entity recognition (WikiANN, Rahimi et al. splits)",
            head="tagging",
            input="tokens",
            label_field="tags",
            labels=WIKIANN_TAGS,
            metrics=("span_f1", "span_f1_macro", "accuracy", "token_f1_macro"),
            source="wikiann",
            languages=("en", "de", "es", "fr", "ar", "hi", "ru", "vi", "zh") + XTREME_NER_MORE,
        ),
        Task(
            name="pawsx",
            description="Paraphrase identification (PAWS-X)",
            head="classification",
            input="text_pair",
            label_field="label",
            labels=("0", "1"),
            metrics=("accuracy", "f1_macro"),
            source="paws-x",
            languages=("en", "de", "es", "fr", "ja", "ko", "zh"),
        ),
        Task(
            name="marc",
            description="Sentiment analysis, 1-5 stars (MARC, mteb mirror)",
            head="classification",
            input="text",
            label_field="label",
            labels=("1", "2", "3", "4", "5"),
            metrics=("f1_macro", "accuracy"),
            source="marc",
            languages=("en", "de", "es", "fr", "ja", "zh"),
        ),
        Task(
            name="xnli",
            description="Natural language inference (MultiNLI train, XNLI dev/test)",
            head="classification",
            input="text_pair",
            label_field="label",
            labels=("entailment", "neutral", "contradiction"),
            metrics=("accuracy", "f1_macro"),
            source="xnli",
            languages=(
                "en", "ar", "bg", "de", "el", "es", "fr", "hi", "ru", "sw", "th", "tr",
                "ur", "vi", "zh",
            ),
        ),  # fmt: skip
        Task(
            name="qa",
            description="Extractive QA (SQuAD v1.1 train; XQuAD / MLQA / TyDiQA-GoldP test)",
            head="span_qa",
            input="qa",
            label_field="answers",
            labels=None,
            metrics=("exact_match", "f1"),
            source="squad",
            # XQuAD's and MLQA's (XQuAD's el, th, tr aside), then TyDiQA-GoldP's others
            languages=("en", "ar", "de", "es", "hi", "ru", "vi", "zh", "bn", "fi", "id", "ko", "sw", "te"),
        ),
        Task(
            name="parsing",
            description="Dependency parsing, biaffine (Universal Dependencies), LAS w/o PUNCT, SYM",
            head="biaffine",
            input="tokens",
            label_field="deprel",
            labels=UD_DEPRELS,
            metrics=("las", "uas"),
            source="ud",
            languages=("en", "ar", "de", "es", "fr", "hi", "ru", "vi", "zh"),
        ),
    ]
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise _unknown("task", name, TASKS) from None


def check_language(task: Task | str, lang: str, allowed: tuple[str, ...] | None = None) -> str:
    """Return `lang` if the task (or the given language set) offers it, else fail loudly."""
    task = get_task(task) if isinstance(task, str) else task
    allowed = allowed if allowed is not None else task.languages
    if lang not in allowed:
        raise _unknown(f"language for task {task.name}", lang, allowed)
    return lang
