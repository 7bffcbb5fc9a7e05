"""CheckEval: one folder for the method, its prompts, parsing, aggregation and build steps."""

from assay.methods.checkeval.method import CheckEval

__all__ = ["CheckEval"]
