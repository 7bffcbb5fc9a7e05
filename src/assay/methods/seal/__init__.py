"""SEAL: one folder for the method, its prompts, parsing, aggregation and build steps."""

from assay.methods.seal.method import Seal

__all__ = ["Seal"]
