"""G-Eval: one folder for the method, its prompts, parsing, aggregation and build steps."""

from assay.methods.geval.method import GEval

__all__ = ["GEval"]
