"""Artifacts as data: checklists, evaluation steps, rubrics and specs, with a schema, a hash and provenance."""
