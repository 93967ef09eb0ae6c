"""xlt: zero-shot cross-lingual transfer experiments as a library.

The package knows nothing of Snakemake: the workflow's scripts call into it.
"""

__version__ = "0.1.0"

from xlt.process import cpu_isa as _cpu_isa

_cpu_isa.guard()  # before any bf16 work: a CPU whose AMX traps would kill the process (SIGILL)
