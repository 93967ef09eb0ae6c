"""xlt: zero-shot cross-lingual transfer experiments as a library.

The package knows nothing of Snakemake: the workflow's scripts call into it.
"""

__version__ = "0.1.0"
