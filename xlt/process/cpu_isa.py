"""Keep oneDNN off AMX where the CPU advertises AMX tiles but executing them traps.

Some virtual machines report `amx_tile` / `amx_bf16` in CPUID (and /proc/cpuinfo) while the
hypervisor does not let a guest use the tiles: oneDNN then picks its AMX kernels for every bf16
matrix product and the process dies of SIGILL at the first `ldtilecfg` (seen on this project's
2-core machines: `make tables` stopped in the tiny encoder's MLM, the first bf16 step). Which
ISA oneDNN uses is fixed the first time it creates a kernel, from `ONEDNN_MAX_CPU_ISA`, so the
check has to run before any bf16 work: `import xlt` runs it (`guard()`).

It costs one short child process (~2 s: torch's import and one bf16 product) per process tree,
and only on CPUs that advertise AMX: the verdict is put into the environment, which every job,
test and worker started afterwards inherits. A user's own `ONEDNN_MAX_CPU_ISA` (or oneDNN's
older `DNNL_MAX_CPU_ISA`) is never overridden.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys

VERDICT = "XLT_AMX"  # "ok" or "traps": set once a process tree has probed
ISA_VARS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
BELOW_AMX = "AVX512_CORE_BF16"  # oneDNN's ISA just under AVX512_CORE_AMX: AVX512-BF16 kernels

# A bf16 product big enough for oneDNN's brgemm (AMX) kernels, plain and under autocast as
# training runs it; an 8x8 product does not reach them.
PROBE = """
import torch
a, b = torch.randn(64, 128), torch.randn(128, 128)
(a.bfloat16() @ b.bfloat16()).sum().item()
with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.nn.functional.linear(a, b).sum().item()
"""


def advertises_amx(cpuinfo: str = "/proc/cpuinfo") -> bool:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return "amx_tile" in line.split()
    except OSError:
        return False
    return False


def probe() -> int:
    """The exit status of a child process that runs a bf16 product: 0 (it works), minus the
    signal that killed it, or 1 (no torch, a timeout)."""
    env = {k: v for k, v in os.environ.items() if k not in ISA_VARS}
    try:
        return subprocess.run([sys.executable, "-c", PROBE], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 1


def guard(environ=os.environ, cpuinfo: str = "/proc/cpuinfo", run_probe=probe) -> str | None:
    """Probe once per process tree; where AMX traps, cap oneDNN below AMX (a note on stderr).
    Returns the verdict, or None where nothing was probed."""
    if environ.get(VERDICT) or any(v in environ for v in ISA_VARS) or not advertises_amx(cpuinfo):
        return environ.get(VERDICT)
    rc = run_probe()
    if rc == -signal.SIGILL:
        environ[ISA_VARS[0]] = BELOW_AMX
        environ[VERDICT] = "traps"
        print(f"xlt: this CPU advertises AMX but its tile instructions trap (SIGILL); bf16 matrix "
              f"products use oneDNN's {BELOW_AMX} kernels instead ({ISA_VARS[0]}={BELOW_AMX})",
              file=sys.stderr)
    elif rc == 0:
        environ[VERDICT] = "ok"
    # another failure (no torch yet, a timeout): say nothing and leave oneDNN's choice alone
    return environ.get(VERDICT)


def amx_allowed(environ=os.environ) -> bool:
    """Whether oneDNN may use AMX in this process: not found to trap, and not capped below it
    (`ONEDNN_MAX_CPU_ISA=AVX2`, say). Whether the CPU has AMX at all is torch's to say."""
    if environ.get(VERDICT) == "traps":
        return False
    cap = next((environ[v] for v in ISA_VARS if v in environ), "ALL").upper()
    return cap == "ALL" or "AMX" in cap
