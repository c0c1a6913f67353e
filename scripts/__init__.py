"""Generators and studies beside the `advisor` package, not installed with it: run each from the repo root as
`python -m scripts.NAME` (usage in its docstring)."""
