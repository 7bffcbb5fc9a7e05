"""Meta-evaluation: how far a judge can be trusted, as the papers measure it (pure functions over score tables)."""
