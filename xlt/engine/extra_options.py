"""The options of the engine's extras, importable without torch: a recipe tag or a config that
names one is read at DAG time, where no model is built (xlt.engine.extras builds them)."""

DLFA_READINGS = ("weight", "gated")  # Eq. 3 read as w = σ(…) (the AFF module's) or w = W ⊙ σ(…)
DLFA_BRANCHES = ("both", "global", "local")  # AIF's two branches, or one (Table V's ablation)
