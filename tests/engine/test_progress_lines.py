"""What a training job says while it runs: one plain line per epoch (step, loss, the dev score
model selection read, seconds) in its log and nothing else there (no progress bar's `\r`
redraws in a file), a console line now and then when asked, and on a terminal a progress bar
whose line is ended before anything else is written (an error starts a line of its own)."""

from __future__ import annotations

import io
import re
import sys

import pytest
import torch

from xlt.engine.loop import Loop
from xlt.engine.objectives import Objective, Term
from xlt.engine.runtime import Checkpointer, Dist, Preempted, build_optimizer, build_scheduler
from xlt.engine.streams import Stream


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(8, 2)

    def forward(self, batch):
        return self.emb(batch["input_ids"]).mean(dim=(1, 2))


def _loop(tmp_path, **kw) -> Loop:
    torch.manual_seed(0)
    model = Toy()
    features = [{"input_ids": [1 + i % 5, 2, 3]} for i in range(8)]
    stream = Stream("toy", features, batch_size=2, seed=1, pad_id=0, pad_values={"input_ids": None})
    opt = build_optimizer(model, 1e-2, 0.0, device=torch.device("cpu"))
    term = Term("toy", "toy", 1.0, lambda m, batch, step: (m(batch) ** 2).mean())

    def select(state, epoch):
        state["history"].append({"epoch": epoch + 1, "step": state["global_step"], "dev": {}, "accuracy": 50.0 + epoch})

    return Loop(model=model, raw_model=model, optimizer=opt, scheduler=build_scheduler(opt, 8, 0.0), streams={"toy": stream},
                primary="toy", objective=Objective([term]), device=torch.device("cpu"), dist=Dist(),
                checkpointer=Checkpointer(tmp_path / "ck"), epochs=2, on_epoch_end=select, desc="toy seed1",
                checkpoint_minutes=None, **kw)


class Terminal(io.StringIO):
    """stderr as a terminal shows it (where the progress bar is drawn)."""

    def isatty(self):
        return True


def test_a_job_log_holds_one_plain_line_per_epoch_and_no_bar(tmp_path, capsys):
    _loop(tmp_path, progress=True).run()  # capsys: stderr is not a terminal, as in a job's log file
    err = capsys.readouterr().err
    assert "\r" not in err and "%|" not in err
    lines = err.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"toy seed1: epoch 1/2, step 4, loss \d+\.\d{4}, dev accuracy 50, \d+\.\d s", lines[0])
    assert lines[1].startswith("toy seed1: epoch 2/2, step 8, ") and "dev accuracy 51" in lines[1]


def test_on_a_terminal_the_bar_is_drawn_and_each_epoch_line_stands_on_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    _loop(tmp_path, progress=True).run()
    err = sys.stderr.getvalue()
    assert "8/8" in err and "step" in err  # the bar
    lines = [x for x in re.split(r"[\r\n]", err) if x.startswith("toy seed1: epoch")]
    assert [x[:23] for x in lines] == ["toy seed1: epoch 1/2, s", "toy seed1: epoch 2/2, s"]
    assert err.endswith("\n")  # the bar's line is closed


def test_a_stopped_job_leaves_no_unfinished_bar_line_for_its_error(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    with pytest.raises(Preempted, match="rerun to resume"):
        _loop(tmp_path, progress=True, stop_after_steps=3).run()
    err = sys.stderr.getvalue()
    assert "%|" in err and err.endswith("\n")  # `error: stopped by …` printed next starts at a line's beginning


def test_a_heartbeat_goes_to_the_console(tmp_path, capsys):
    _loop(tmp_path, progress=False, heartbeat_s=1e-9).run()
    out = capsys.readouterr().out.splitlines()
    assert out and all(re.fullmatch(r"toy seed1: step \d+/8 \(\d+%\), loss \d+\.\d{4}, \d+ s", x) for x in out)


def test_each_epoch_gives_its_line_s_values_as_scalars_and_they_reach_an_event_file(tmp_path):
    from xlt.engine.tensorboard import scalar_writer

    seen = []
    _loop(tmp_path, progress=False, scalars=lambda step, values: seen.append((step, values))).run()
    assert [step for step, _ in seen] == [4, 8]
    assert [v["dev/accuracy"] for _, v in seen] == [50.0, 51.0]
    assert all(set(v) == {"train/loss", "dev/accuracy", "train/seconds"} for _, v in seen)

    write = scalar_writer(tmp_path / "tb")
    for step, values in seen:
        write(step, values)
    events = list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert len(events) == 1
    data = events[0].read_bytes()
    assert b"dev/accuracy" in data and b"train/loss" in data
    assert scalar_writer(None) is None
