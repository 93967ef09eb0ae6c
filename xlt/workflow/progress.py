"""The time a run has left, from its pace so far: what the progress line adds to Snakemake's
`N of M steps (P%) done`.

    time_left(done=12, total=40, elapsed_s=300)   # 700.0 (s): 28 steps at 25 s a step
    progress_note(12, 40, 300)                    # "~12 min left at this run's pace"

The estimate is the mean time per step so far times the steps left: steps differ (a fine-tune
against a table), so it is a rough guide that firms up as the run goes on.
"""

from __future__ import annotations


def time_left(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the mean pace so far; None before the first step is done."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return elapsed_s / done * (total - done)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min"


def progress_note(done: int, total: int, elapsed_s: float) -> str:
    """`~12 min left at this run's pace` ('' before the first step and once all are done)."""
    left = time_left(done, total, elapsed_s)
    return "" if not left else f"~{_duration(left)} left at this run's pace"
