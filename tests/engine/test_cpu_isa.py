"""xlt.process.cpu_isa: a CPU that advertises AMX but traps on its tiles must not kill bf16 training."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from xlt.process import cpu_isa


@pytest.fixture
def amx_cpuinfo(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n")
    return str(p)


def test_a_trapping_probe_caps_onednn_below_amx_and_says_so(amx_cpuinfo, monkeypatch, capsys):
    monkeypatch.setattr(cpu_isa, "advertises_amx", lambda cpuinfo: cpuinfo == amx_cpuinfo)
    env = {}
    assert cpu_isa.guard(env, amx_cpuinfo, run_probe=lambda: -signal.SIGILL) == "traps"
    assert env == {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "XLT_AMX": "traps"}
    assert "AMX but its tile instructions trap" in capsys.readouterr().err


def test_a_working_probe_changes_nothing_and_other_failures_are_left_alone(amx_cpuinfo, monkeypatch, capsys):
    monkeypatch.setattr(cpu_isa, "advertises_amx", lambda cpuinfo: True)
    env = {}
    assert cpu_isa.guard(env, amx_cpuinfo, run_probe=lambda: 0) == "ok"
    assert env == {"XLT_AMX": "ok"}
    env = {}
    assert cpu_isa.guard(env, amx_cpuinfo, run_probe=lambda: 1) is None  # no torch, a timeout
    assert env == {} and capsys.readouterr().err == ""


def test_probes_once_per_process_tree_and_never_overrides_the_user(amx_cpuinfo, monkeypatch):
    monkeypatch.setattr(cpu_isa, "advertises_amx", lambda cpuinfo: True)

    def must_not_run():
        raise AssertionError("probed again")

    for env in ({"XLT_AMX": "traps"}, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, {"DNNL_MAX_CPU_ISA": "AVX2"}):
        before = dict(env)
        cpu_isa.guard(env, amx_cpuinfo, run_probe=must_not_run)
        assert env == before


def test_only_cpus_that_advertise_amx_are_probed(tmp_path, amx_cpuinfo):
    plain = tmp_path / "plain"
    plain.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    assert not cpu_isa.advertises_amx(str(plain))
    assert not cpu_isa.advertises_amx(str(tmp_path / "missing"))
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        assert cpu_isa.advertises_amx(amx_cpuinfo)
    assert cpu_isa.guard({}, str(plain), run_probe=lambda: -signal.SIGILL) is None


def test_auto_precision_picks_bf16_only_where_amx_may_run(monkeypatch):
    import torch

    from xlt.engine.runtime import resolve_precision

    cpu = torch.device("cpu")
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    for env, expect in (({}, "bf16"), ({"ONEDNN_MAX_CPU_ISA": "avx512_core_amx"}, "bf16"),
                        ({"ONEDNN_MAX_CPU_ISA": "ALL"}, "bf16"), ({"XLT_AMX": "traps"}, "fp32"),
                        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, "fp32"), ({"DNNL_MAX_CPU_ISA": "AVX2"}, "fp32")):
        for var in (*cpu_isa.ISA_VARS, cpu_isa.VERDICT):
            monkeypatch.delenv(var, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert resolve_precision("auto", cpu) == expect, env
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)  # AVX512-BF16 alone: fp32
    monkeypatch.delenv("DNNL_MAX_CPU_ISA")
    assert resolve_precision("auto", cpu) == "fp32"
    assert resolve_precision("bf16", cpu) == "bf16"  # asked for: given


def test_bf16_products_run_after_importing_xlt_on_this_machine():
    """The real thing: a process that imports xlt, then runs bf16 products of the size that
    reaches oneDNN's AMX kernels, exits cleanly (it died of SIGILL on a VM whose AMX traps)."""
    env = {k: v for k, v in os.environ.items() if k not in (*cpu_isa.ISA_VARS, cpu_isa.VERDICT)}
    done = subprocess.run([sys.executable, "-c", "import xlt\n" + cpu_isa.PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
