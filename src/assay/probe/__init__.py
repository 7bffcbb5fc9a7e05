"""Judge diagnostics (``assay probe``): how far a run's judge can be trusted, from the run and bounded re-asks."""

from __future__ import annotations

from typing import Any

__all__ = ["CHECKS", "probe", "probe_async"]

#: The checks, in the order they are run and shown.
CHECKS = ("length_bias", "scale_use", "preference_gap", "self_consistency", "order_sensitivity", "injection")


def probe(run_dir: Any, **kwargs: Any) -> dict[str, Any]:
    """Probe a run (see :func:`assay.probe.run.probe`); imported lazily so that ``assay.testing`` stays light."""
    from assay.probe.run import probe as _probe

    return _probe(run_dir, **kwargs)


async def probe_async(run_dir: Any, **kwargs: Any) -> dict[str, Any]:
    """The async form of :func:`probe`."""
    from assay.probe.run import probe_async as _probe_async

    return await _probe_async(run_dir, **kwargs)
