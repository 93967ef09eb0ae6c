"""The time left the progress line adds to Snakemake's `N of M steps (P%) done` (xlt.workflow.progress)."""

from __future__ import annotations

from xlt.workflow.progress import progress_note, time_left


def test_time_left_is_the_mean_pace_so_far_times_the_steps_left():
    assert time_left(12, 40, 300.0) == 700.0
    assert time_left(0, 40, 5.0) is None and time_left(40, 40, 900.0) == 0.0


def test_the_note_reads_in_seconds_minutes_or_hours_and_is_empty_before_the_first_step_and_at_the_end():
    assert progress_note(12, 40, 300.0) == "~12 min left at this run's pace"
    assert progress_note(3, 4, 10.0) == "~3 s left at this run's pace"
    assert progress_note(1, 300, 200.0) == "~16 h 37 min left at this run's pace"
    assert progress_note(0, 40, 5.0) == "" and progress_note(40, 40, 900.0) == ""


# Priced jobs (xlt.workflow.progress.Pace): the time left weighs each job by its expected cost.
from types import SimpleNamespace  # noqa: E402

from xlt.workflow.progress import Pace, job_seconds, prices  # noqa: E402


def test_cheap_jobs_done_and_the_encoder_left_is_not_a_minute_away():
    # `make first` on 2 cores: world, corpus and prepare done after 25 s; the encoder (both cores),
    # two NER fine-tunes, two evaluations and the table left. Counting steps said "~58 s"
    # (25 s / 3 steps x 7; the log of 2026-12-07 said "~57 s" there); priced, the encoder dominates.
    pace = Pace({1: 25.0, 2: 10.0, 3: 5.0, 4: 100.0, 5: 5.5, 6: 5.5, 7: 2.0, 8: 2.0, 9: 1.5, 10: 0.0},
                cores=2, threads={4: 2})
    for j, took in ((1, 25.0), (2, 10.0), (3, 5.0)):
        pace.started(j, 0.0)
        pace.finished(j, took)
    assert pace.speed() == 1.0
    assert pace.left(now=25.0) == (100.0 * 2 + 5.5 * 2 + 2.0 * 2 + 1.5) / 2  # 108.25 s
    assert progress_note(3, 10, 25.0) == "~58 s left at this run's pace"
    assert pace.note(25.0) == "~2 min left at this run's pace"


def test_many_cheap_jobs_left_and_one_expensive_one():
    # 34 jobs left, 33 of them 2-second ones and one 300-second grid: counting steps priced
    # each at the mean so far; priced, the long job alone sets the time left
    pace = Pace({**{j: 2.0 for j in range(1, 11)}, **{j: 2.0 for j in range(11, 44)}, 44: 300.0}, cores=2)
    for j in range(1, 11):
        pace.started(j, 0.0)
        pace.finished(j, 2.0)
    assert pace.left(now=10.0) == max((33 * 2.0 + 300.0) / 2, 300.0) == 300.0
    assert progress_note(10, 44, 10.0) == "~34 s left at this run's pace"


def test_one_expensive_job_left_alone_is_the_time_left_whatever_the_cores():
    pace = Pace({1: 2.0, 2: 2.0, 3: 300.0}, cores=8)
    for j in (1, 2):
        pace.started(j, 0.0)
        pace.finished(j, 4.0)  # this machine: 2x the reference
    assert pace.speed() == 2.0
    assert pace.left(now=4.0) == 600.0  # one job runs on one core: 600 s, not 600/8
    pace.started(3, 4.0)
    assert pace.left(now=104.0) == 500.0  # a running job counts what it has not yet spent
    assert pace.left(now=10_000.0) == 60.0  # past its price, still running: a tenth of it, never "nothing left"
    pace.finished(3, 10_000.0)
    assert pace.left(now=10_000.0) == 0.0 and pace.note(10_000.0) == ""
    target = Pace({1: 2.0, 2: 0.0}, cores=2)  # a target (no job of its own) left: a second, not nothing
    target.started(1, 0.0)
    target.finished(1, 2.0)
    assert target.left(2.0) == 0.0 and target.note(2.0) == "~1 s left at this run's pace"


def test_many_cheap_jobs_left_after_an_expensive_one_are_minutes_not_the_encoders_pace():
    pace = Pace({1: 100.0, **{j: 2.0 for j in range(2, 42)}}, cores=2)
    pace.started(1, 0.0)
    pace.finished(1, 100.0)
    assert pace.left(now=100.0) == 40.0  # 40 jobs of 2 s on 2 cores; by count: 100 s x 40
    assert pace.note(100.0) == "~40 s left at this run's pace"


def test_no_timed_job_yet_gives_no_estimate_and_restarts_count_once():
    pace = Pace({1: 10.0, 2: 10.0}, cores=2)
    assert pace.speed() is None and pace.left(0.0) is None and pace.note(0.0) == ""
    pace.finished(1, 5.0)  # finished without a start seen (a quiet log): not timed
    assert pace.speed() is None
    pace.started(2, 0.0)
    pace.started(2, 3.0)  # two log handlers see the same record: the first time counts
    pace.finished(2, 20.0)
    pace.finished(2, 25.0)
    assert pace.speed() == 2.0


def test_a_fine_tune_is_priced_by_its_task_and_epochs_times_languages_and_targets_cost_nothing():
    ner = job_seconds("finetune", {"task": "ner"}, priority=4)
    xnli = job_seconds("finetune", {"task": "xnli.translate_train"}, priority=3 * 6)
    assert ner < job_seconds("build_encoder") / 10 and xnli > 5 * ner
    assert job_seconds("paper_table") < ner and job_seconds("some_new_rule") > 0
    assert job_seconds("finetune", {"task": "ner"}, priority=2**62) == ner  # --prioritize: 4 epochs, one language

    def job(jobid, rule, norun=False, priority=0, **wildcards):
        return SimpleNamespace(jobid=jobid, rule=SimpleNamespace(name=rule, norun=norun), wildcards=wildcards, priority=priority)

    p = prices([job(1, "all_tables", norun=True), job(2, "finetune", priority=4, task="ner"), job(3, "world")])
    assert p == {1: 0.0, 2: ner, 3: job_seconds("world")}
