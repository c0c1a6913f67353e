"""advisor: architecture-aware cost model and model/plan advisor for LLM serving."""

__version__ = "0.1.0"
