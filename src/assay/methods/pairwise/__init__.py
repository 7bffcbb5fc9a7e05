"""Pairwise judging: which of two outputs is better, in both orders, with position bias measured."""

from assay.methods.pairwise.method import Pairwise

__all__ = ["Pairwise"]
