"""Running and storing judgments: run directories written by assay (here so far: the jury of several runs)."""
