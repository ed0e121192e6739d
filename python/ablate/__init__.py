# Ablate's run files as pandas DataFrames: load_run / load_sweep give one row per run per logged
# step (train and eval metrics side by side, the run's swept keys, seed, arm, status, code id),
# attention() one logged attention tensor, run_scalars() what Ablate records once per run.
# Reads run.h5 with h5py (the schema: docs/results-format.md); needs h5py, numpy and pandas only.
from ._runs import arm_keys, attention, load_run, load_sweep, run_files, run_scalars
from ._spec import flat_spec

__all__ = ["arm_keys", "attention", "flat_spec", "load_run", "load_sweep", "run_files", "run_scalars"]
__version__ = "0.1.0"
