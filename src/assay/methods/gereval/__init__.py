"""GER-Eval: one folder for the method, its prompts, parsing, aggregation and build steps."""

from assay.methods.gereval.method import GerEval

__all__ = ["GerEval"]
