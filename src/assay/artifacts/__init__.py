"""Shipped artifacts as data files (checklists, G-Eval criteria and prompts, SEAL's spec, GER-Eval's tasks and
human rubrics); the code that reads them lives with its method under ``assay.methods``."""
