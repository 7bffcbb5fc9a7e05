"""Artifacts as data: checklists, evaluation steps, rubrics and specs that methods load by name or path."""
