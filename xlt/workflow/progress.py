"""The time a run has left: what the progress line adds to Snakemake's `N of M steps (P%) done`.

Jobs differ by a factor of a hundred (the tiny encoder's pretraining against a table), so the
time left is not the mean time per step times the steps left: a run that has done its cheap
jobs first would promise minutes with the encoder still to build. Each job is priced instead,
in seconds of a reference machine (`job_seconds`: a per-rule table measured on the tiny
preset, a fine-tune by its task and its epochs × training languages), and the price is scaled
by how this machine did on the jobs it finished (`Pace`):

    pace = Pace({1: 90.0, 2: 4.0, 3: 4.0}, cores=2)   # job id -> expected seconds
    pace.started(1, now=0.0); pace.finished(1, now=180.0)   # this machine: 2x the reference
    pace.left(now=180.0)                                     # 8.0 (s): two 4-s jobs at 2x, one a core
    pace.note(now=180.0)                                     # "~8 s left at this run's pace"

Left = the larger of the work left spread over the cores and the longest single job left (one
job runs on one core whatever the others do); a running job counts what it has not yet spent
(a tenth of its price once it has spent more: a job still runs, so the note never says nothing left).
Without prices (no DAG to read) it falls back to the mean time per step (`time_left`).
"""

from __future__ import annotations

# Seconds one job of a rule takes on the reference (a 2-core AMD EPYC VM, fp32, two jobs at once,
# the tiny preset): world, encoder, NER fine-tunes, evaluations and tables as `make first`'s
# Snakemake logs timed them (2026-12-08, docs/developing.md "The first result"), the other rules
# from the per-rule job-seconds of `make tables` in docs/developing.md. Only their ratios
# matter: the pace rescales them to the machine at hand.
RULE_SECONDS: dict[str, float] = {
    "world": 25.0,
    "encoder_corpus": 4.0,
    "build_encoder": 100.0,  # WordPiece + 800 MLM steps: the longest job of a tiny run
    "prepare_task": 3.0,
    "adapt_mlm": 15.0,
    "adjust_encoder": 3.0,
    "evaluate": 2.0,
    "evaluate_on": 1.5,
    "underspec_grid": 15.0,
    "underspec_grid_2d": 15.0,
    "crossmulti_pppl": 10.0,
    "crossmulti_probe_model": 4.0,
    "crossmulti_probe_vanilla": 4.0,
    "xmixup_cka": 4.0,
    "xmixup_centroids": 4.0,
    "paper_table": 1.5,
    "paper_figure": 3.0,
}
DEFAULT_SECONDS = 2.0  # any other rule: a short CPU job (alignment samples, L2, claims, an index)
# A fine-tune: seconds per epoch over one language's training set (its priority, epochs ×
# training languages: xlt.dag.targets.finetune_priority), by task; ~3 s of steps for a NER
# fine-tune of 4 epochs, ~10 for XNLI's (docs/developing.md), QA's 4000 questions ~4x XNLI's.
EPOCH_SECONDS: dict[str, float] = {"ner": 1.0, "pos": 1.2, "parsing": 1.5, "xnli": 3.0, "pawsx": 3.0,
                                   "marc": 3.0, "qa": 12.0}
FINETUNE_OVERHEAD_S = 1.5  # loading the encoder and data, saving the model
OVERRUN = 0.1  # a running job past its price: this share of it is still counted as left
MAX_PRIORITY = 10_000  # a fine-tune's own priority is epochs × languages; above: not its own


def job_seconds(rule: str, wildcards: dict | None = None, priority: int = 0) -> float:
    """A job's expected seconds on the reference machine. A fine-tune: its task's seconds per
    epoch × `priority` (epochs × training languages) plus its overhead. (A target's job, which
    runs nothing, is priced 0 by the caller: `prices`.)"""
    if rule == "finetune":
        task = str((wildcards or {}).get("task", "")).split(".")[0]
        # `--prioritize` raises a job's priority to Snakemake's highest: then 4 epochs on one language
        epochs_x_langs = int(priority or 0) if 0 < int(priority or 0) < MAX_PRIORITY else 4
        return FINETUNE_OVERHEAD_S + EPOCH_SECONDS.get(task, 3.0) * epochs_x_langs
    return RULE_SECONDS.get(rule, DEFAULT_SECONDS)


def prices(jobs) -> dict[int, float]:
    """Job id -> expected seconds of Snakemake jobs (`dag.needrun_jobs()`): a rule without a
    command (all_tables, crossmulti_table2, zero_shot: targets) costs nothing."""
    return {j.jobid: 0.0 if j.rule.norun else job_seconds(j.rule.name, dict(j.wildcards.items()), j.priority)
            for j in jobs}


def time_left(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the mean pace per step so far (the fallback without prices); None
    before the first step is done."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return elapsed_s / done * (total - done)


class Pace:
    """The time left of a run whose jobs are priced (`job_seconds`), from how long this machine
    took for the jobs it finished. Feed it `started` / `finished` as the jobs go."""

    def __init__(self, expected: dict[int, float], cores: int = 1, threads: dict[int, int] | None = None):
        self.expected = dict(expected)
        self.cores = max(1, int(cores))
        self.threads = {j: min(max(1, int(t)), self.cores) for j, t in (threads or {}).items()}  # cores a job holds
        self.start: dict[int, float] = {}
        self.done: dict[int, float] = {}  # job id -> seconds it took

    def started(self, jobid: int, now: float) -> None:
        self.start.setdefault(jobid, now)

    def finished(self, jobid: int, now: float) -> None:
        if jobid not in self.done:
            self.done[jobid] = now - self.start.get(jobid, now)

    def speed(self) -> float | None:
        """This machine's seconds per reference second over the finished jobs it timed (None: none yet)."""
        timed = [(took, self.expected[j]) for j, took in self.done.items() if j in self.start and self.expected.get(j)]
        ref = sum(e for _, e in timed)
        return sum(t for t, _ in timed) / ref if ref > 0 else None

    def left(self, now: float) -> float | None:
        """Seconds left: the work left (core-seconds) spread over the cores, at least the longest job left."""
        speed = self.speed()
        if speed is None:
            return None
        rest, work = [], 0.0
        for j, e in self.expected.items():
            if j in self.done:
                continue
            # a running job counts what it has not yet spent; one past its price, a tenth of it still
            r = max(e * speed - (now - self.start[j] if j in self.start else 0.0), e * speed * OVERRUN)
            rest.append(r)
            work += r * self.threads.get(j, 1)  # core-seconds: a 2-thread job holds both cores of two
        return max(work / self.cores, max(rest, default=0.0))

    def note(self, now: float) -> str:
        """`~2 min left at this run's pace`; '' before a job is timed and once every job is done
        (jobs that run nothing, targets, left: `~1 s`)."""
        left = self.left(now)
        if left is not None and not left and len(self.done) < len(self.expected):
            left = 1.0
        return "" if not left else f"~{_duration(left)} left at this run's pace"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min"


def progress_note(done: int, total: int, elapsed_s: float) -> str:
    """`~12 min left at this run's pace` by the mean time per step ('' before the first step
    and once all are done): the fallback where the jobs are not priced."""
    left = time_left(done, total, elapsed_s)
    return "" if not left else f"~{_duration(left)} left at this run's pace"
