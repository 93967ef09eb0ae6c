"""Errors that say what to do (issue 53, item 5): "rerun" only where a rerun can get past the
failure; otherwise the cause and the fix, in one line. A pickle-only encoder is refused by the
config check with the command that converts it; corrupt weights name what rebuilds them; a bad
data line names the file and line to mend; an older run's log is never quoted as this run's;
a config file that is not YAML names its file and line on every path (`make <target>`, `make
tables`, `snakemake --configfile` itself); a value of the user's file is blamed on that file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_bad_config import refused, tiny_sources  # noqa: F401  (tiny_sources: a fixture)
from tests.test_bad_inputs import TINY, Bad, _env, assert_refused, config_check, run_case
from xlt.errors import XltError
from xlt.io import TO_SAFETENSORS, pickle_only
from xlt.process.cli import FIX_FIRST, RERUN, STOPPED, FailedJob, failed_jobs, failure_lines, next_step

# ---- rerun, or mend first ---------------------------------------------------------------------

TRANSIENT = [
    None,  # killed without a word: out of memory, a time limit, an interrupt
    "stopped by signal 15 at step 77; checkpoint saved in results/checkpoints/x, rerun to resume",
    "could not download https://x/y (the connection to x timed out (no route, or a firewall drops it)); download it "
    "by hand and save it as resources/manual/y, then run again",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
]
LASTING = [
    "results/raw/ud/en.conllu:3: expected 10 tab-separated columns, got 7",
    "config key encoders.mine.path: /m holds only pickled weights (pytorch_model.bin), ...",
    "encoder resources/raw/encoders/mbert: no such directory; fetch its snapshot first where there is network "
    "(a login node): `snakemake --cores 1 prefetch` with this run's --configfile",
    "results/models/x/modules.safetensors: corrupted: sha256 differs from the one recorded when it was saved; a rerun "
    "keeps it: rebuild the model with `rm -r results/models/x` and the same command again",
]


@pytest.mark.parametrize("error", TRANSIENT)
def test_a_transient_failure_ends_with_rerun(error):
    job = FailedJob("finetune", error=error)
    assert job.transient
    assert next_step([job], "make tables") == RERUN.replace("the same command", "the same command (make tables)")


@pytest.mark.parametrize("error", LASTING)
def test_a_failure_a_rerun_cannot_mend_says_to_mend_first(error):
    jobs = [FailedJob("finetune", error=TRANSIENT[1]), FailedJob("prepare_task", error=error)]
    assert not jobs[1].transient
    assert next_step(jobs) == FIX_FIRST and "Rerun the same command to finish" not in next_step(jobs)


def test_a_bad_data_line_names_the_file_and_line_to_mend():
    line = FailedJob("prepare_task", logs=["logs/p.log"], error=LASTING[0]).line()
    assert line == ("error: rule prepare_task: results/raw/ud/en.conllu:3: expected 10 tab-separated columns, got 7; "
                    "mend line 3 of results/raw/ud/en.conllu (or, if downloaded, remove it to fetch it again), then rerun "
                    "(log: logs/p.log)")
    # a message that already says what to do gets nothing more
    said = "x.yaml:2: invalid YAML (...); fix it"
    assert FailedJob("r", error=said).line() == f"error: rule r: {said}"


def _snakemake_log(root: Path, job_log: Path) -> Path:
    log = root / "run.log"
    log.write_text(f"Error in rule prepare_task:\n    jobid: 3\n    log: {job_log} (check log file(s) for error details)\n")
    return log


def test_an_older_runs_log_is_not_quoted_as_this_runs_error(tmp_path):
    """The job failed before writing its log (killed at start): its log is the last run's."""
    job_log = tmp_path / "p.log"
    job_log.write_text("error: results/raw/ud/en.conllu:3: expected 10 tab-separated columns, got 7\n")
    old = time.time() - 3600
    os.utime(job_log, (old, old))
    log = _snakemake_log(tmp_path, job_log)
    [job] = failed_jobs(log, since=time.time() - 60)
    assert job.error is None and STOPPED in job.line() and "en.conllu" not in job.line()
    assert failure_lines(log, since=time.time() - 60)[-1] == RERUN
    # without a start (or a log written since): this run's error, and mend first
    assert failed_jobs(log)[0].error.startswith("results/raw/ud/en.conllu:3:")
    assert failure_lines(log, since=old - 10)[-1] == FIX_FIRST


def test_make_tables_summary_ends_with_mend_first_after_a_lasting_failure(tmp_path, monkeypatch, capsys):
    from tests.test_runsummary import _run_log
    from xlt.workflow.runsummary import main

    monkeypatch.chdir(tmp_path)
    Path("logs").mkdir()
    Path("logs/ft.log").write_text("error: results/raw/ud/en.conllu:3: expected 10 tab-separated columns, got 7\n")
    _run_log(tmp_path, "results/tables/x/table1.md", "logs/ft.log")
    main(["--since", str(time.time() - 5), "--rc", "1", "--command", "make tables", str(TINY)])
    err = capsys.readouterr().err.splitlines()
    assert "mend line 3 of results/raw/ud/en.conllu" in err[1]
    assert err[-1] == FIX_FIRST.replace("the same command", "the same command (make tables)")


# ---- a pickle-only encoder --------------------------------------------------------------------


def _pickled_encoder(root: Path) -> Path:
    import torch

    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"model_type": "bert"}))
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    torch.save({"embeddings.weight": w, "decoder.weight": w}, root / "pytorch_model.bin")  # tied: one storage
    return root


def test_a_pickle_only_encoder_is_refused_by_the_config_check_naming_the_key_and_the_command(tmp_path, tiny_sources):
    enc = _pickled_encoder(tmp_path / "mine")
    line = refused(tiny_sources, {"encoders": {"mine": {"path": str(enc)}}})
    assert line == (f"bad.yaml: config key encoders.mine.path: {enc} holds only pickled weights (pytorch_model.bin), "
                    "which can run code when loaded and are never read here; convert them once to safetensors: "
                    f"`{TO_SAFETENSORS} {enc}`")


def test_a_pickle_only_zero_shot_encoder_directory_is_refused_too(tmp_path):
    from xlt.workflow.config import load_configs
    from xlt.zeroshot import resolve_encoder

    enc = _pickled_encoder(tmp_path / "mine")
    with pytest.raises(XltError, match=rf"^config key encoder: {re.escape(str(enc))} holds only pickled weights .*"
                                       rf"`{re.escape(TO_SAFETENSORS)} {re.escape(str(enc))}`$"):
        resolve_encoder(load_configs([TINY]), str(enc))


def test_the_job_refuses_it_with_the_same_command(tmp_path):
    from xlt.engine.model import load_encoder_weights

    enc = _pickled_encoder(tmp_path / "mine")
    with pytest.raises(XltError, match=rf"^encoder {re.escape(str(enc))} holds only pickled weights .*to_safetensors"):
        load_encoder_weights(str(enc))


def test_the_command_converts_it_and_the_check_then_passes(tmp_path):
    from safetensors.torch import load_file

    enc = _pickled_encoder(tmp_path / "mine")
    run = subprocess.run([sys.executable, "-m", "xlt.engine.to_safetensors", str(enc)], capture_output=True, text=True,
                         timeout=120, env=_env(), cwd=REPO)
    assert run.returncode == 0, run.stderr
    state = load_file(enc / "model.safetensors")
    assert state["decoder.weight"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert pickle_only(enc) is None


def test_converting_a_directory_without_a_pickle_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "xlt.engine.to_safetensors", str(tmp_path)], capture_output=True,
                         text=True, timeout=120, env=_env(), cwd=REPO)
    assert run.returncode == 1 and run.stderr.strip() == f"error: {tmp_path}: no pickled weights (pytorch_model*.bin) to convert"


# ---- corrupt weights --------------------------------------------------------------------------


def test_a_corrupt_model_names_the_directory_to_rebuild(tmp_path):
    import torch
    from safetensors.torch import save_file

    from xlt.engine.model import load_model

    model = tmp_path / "results" / "models" / "m"
    model.mkdir(parents=True)
    save_file({"w": torch.zeros(2)}, model / "modules.safetensors")
    (model / "xlt_model.json").write_text(json.dumps({"weights_sha256": {"modules.safetensors": "0" * 64}}))
    with pytest.raises(XltError) as e:
        load_model(model)
    assert str(e.value) == (f"{model}/modules.safetensors: corrupted: sha256 differs from the one recorded when it was "
                            f"saved; a rerun keeps it: rebuild the model with `rm -r {model}` and the same command again "
                            f"(or `--forcerun {model}` on a snakemake command)")


# ---- config files: every path names the file and line, the user's file its values ------------

BAD_YAML = "hparams:\n  crossmulti: {lr: [1e-5}\n"
NOT_YAML = r"^error: invalid configuration: .*bad\.yaml:2: invalid YAML \(expected ',' or '\]', but got '\}'\)$"


@pytest.mark.parametrize("argv", [
    ["make", "-s", "--no-print-directory", "xmixup_table1", "PRESET={tmp}/bad.yaml"],
    ["make", "-s", "--no-print-directory", "tables", "PRESET={tmp}/bad.yaml"],
], ids=["make-target", "make-tables"])
def test_invalid_yaml_through_make_names_the_file_and_line(tmp_path, argv):
    (tmp_path / "bad.yaml").write_text(BAD_YAML)
    run = subprocess.run([a.replace("{tmp}", str(tmp_path)) for a in argv], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env=_env())
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode != 0 and len(errors) == 1 and re.match(NOT_YAML, errors[0]), run.stderr[-2000:]
    assert "Snakemake" not in run.stdout + run.stderr


def test_invalid_yaml_given_to_the_venvs_snakemake_names_the_file_and_line(tmp_path):
    """Snakemake reads --configfile files before any workflow code: the venv's entry point
    (`make install`, xlt/process/snakemake_cli.py) reads them first."""
    script = REPO / ".venv" / "bin" / "snakemake"
    assert "xlt.process.snakemake_cli" in script.read_text(), "make install writes the venv's snakemake"
    case = Bad("snakemake-direct", [str(script), "--snakefile", str(REPO / "Snakefile"), "-n", "all_tables",
                                    "--directory", "{tmp}", "--configfile", str(TINY), "{tmp}/bad.yaml"],
               NOT_YAML, {"bad.yaml": BAD_YAML}, outputs=[".snakemake"])
    assert_refused(run_case(case, tmp_path), case.expect, tmp_path, case.outputs)


def test_a_bad_language_in_the_users_file_is_blamed_on_that_file(tiny_sources):
    """The language set the user's file redefines, not the paper's config that names the set."""
    line = refused(tiny_sources, {"language_sets": {"crossmulti": ["en", "xx"]}})
    assert re.fullmatch(r"bad\.yaml: config key papers\.crossmulti\.languages: task pos has no data for \['xx'\] "
                        r"\(in language_sets\.crossmulti\); its source offers: en, .*", line), line
    # the user's file names another set for a paper: still the user's file
    line = refused(tiny_sources, {"papers": {"dlfa": {"languages": {"pawsx": "xtreme_xnli"}}}})
    assert line.startswith("bad.yaml: config key papers.dlfa.languages.pawsx: task pawsx has no data for"), line


def test_a_json_nan_is_refused_as_not_finite_naming_the_key(tmp_path):
    """JSON's NaN (Snakemake reads JSON first) reaches the check as a string: same refusal."""
    case = Bad("json-nan", config_check(str(TINY), "bad.json"),
               r"^error: invalid configuration: bad\.json: config key data\.wikimatrix\.threshold: 'NaN' should be of "
               r"type number; it is not a finite number; allowed: a finite number",
               {"bad.json": '{"data": {"wikimatrix": {"threshold": NaN}}}'})
    assert_refused(run_case(case, tmp_path), case.expect, tmp_path, case.outputs)


def test_a_hub_encoder_without_safetensors_is_refused_at_the_fetch_with_what_to_do(server, hf_online, tmp_path,
                                                                                  tiny_model_files):
    """Its repo holds pytorch_model.bin only: the snapshot is refused, naming the two ways out."""
    from xlt.sources.encoders import fetch_encoder

    server.hub_repo("org/pickled", {k: v for k, v in tiny_model_files.items() if k != "model.safetensors"}, model=True)
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(tmp_path / "hf-cache"), "lock": str(tmp_path / "lock.yaml")}
    with pytest.raises(XltError) as e:
        fetch_encoder("mine", "org/pickled", tmp_path / "enc", cfg=cfg)
    assert re.fullmatch(r"encoder mine \(Hub model org/pickled\) has no model\.safetensors at [0-9a-f]{40}, and "
                        r"pickled weights are never read here: pin a revision that has it \(encoders\.mine\.revision\), or download the "
                        rf"model, convert it once \(`{re.escape(TO_SAFETENSORS)} <its directory>`\) and give that "
                        r"directory as encoders\.mine\.path", str(e.value)), str(e.value)
    assert not FailedJob("download_encoder", error=str(e.value)).transient
    assert not (tmp_path / "enc").exists()


from tests.sources.conftest import hf_online, server  # noqa: E402,F401  (fixtures of the fetch tests)
from tests.sources.test_encoders import tiny_model_files  # noqa: E402,F401
