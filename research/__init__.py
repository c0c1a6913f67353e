"""Research code beside the `advisor` package, not installed with it: what only `scripts/`, `tests/` and
`notebooks/` use (run from the repo root: `python -m scripts.NAME`, pytest, notebooks with the root as cwd).

- `research.public`: the public benchmark table cleaned into the measurement schema (`scripts/clean_public.py`).
- `research.logcheck`: engine start-up logs replayed through the memory model, and the budget constants' fit
  (`scripts/memory_logs.py`).
- `research.aic_data`: aiconfigurator's measured comm table, and the profiles scored against it
  (`scripts/comm_accuracy.py`).
- `research.splits`: held-out errors of the pooled fits under the splits a user's question implies (a model
  or a GPU the fit never saw), stored in the shipped calibrations (`scripts/refit_calibrations.py`).
- `research.catalog_build`: catalog entries built from config files and `advisor/catalog/facts.toml`
  (`scripts/build_catalog.py`).
"""
