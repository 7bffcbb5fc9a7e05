"""GER-Eval's rubric lifecycle around the ``gereval`` method: generation, statistics, consistency and transfer."""
