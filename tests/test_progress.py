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
