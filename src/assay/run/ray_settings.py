"""What a run asks of Ray, read before Ray or the executor is imported: where the units run and with what resources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.errors import ConfigError

#: What ``--executor ray`` says when Ray is not installed.
INSTALL_HINT = ('the ray executor needs Ray, an optional extra: pip install -e ".[ray]" '
                '(from a checkout) or pip install "assay[ray]"')


@dataclass(frozen=True)
class ExecutorSpec:
    """Where the units run: ``local`` (the asyncio executor) or ``ray`` with an optional cluster address.

    Attributes:
        kind: ``local`` or ``ray``.
        address: For ``ray``: None (start a local Ray instance), ``auto`` (join the cluster this machine belongs
            to) or ``ray://HOST:PORT`` (Ray client).
    """

    kind: str
    address: str | None = None

    def label(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"


def parse_executor(spec: str) -> ExecutorSpec:
    """Read ``local``, ``ray``, ``ray:auto`` or ``ray:ray://host:10001``.

    Raises:
        ConfigError: Any other spelling, with the accepted forms.
    """
    kind, sep, address = spec.strip().partition(":")
    if kind == "local" and not sep:
        return ExecutorSpec("local")
    if kind == "ray" and (not sep or address):
        return ExecutorSpec("ray", address or None)
    raise ConfigError(f"unknown executor {spec!r}: give local, ray, ray:auto or ray:ray://HOST:PORT")


@dataclass(frozen=True)
class RaySettings:
    """How a run uses a Ray cluster.

    Attributes:
        address: See :attr:`ExecutorSpec.address`.
        workers: Judge actors (each with its own judge instance); None: as many as the cluster's CPUs (and GPUs)
            fit, and for a shared endpoint no more than its bound on calls in flight (:func:`resolve_workers`).
        cpus: CPUs each actor reserves (an embedded judge: match its ``n_threads``).
        gpus: GPUs each actor reserves (fractions share a GPU).
    """

    address: str | None = None
    workers: int | None = None
    cpus: float = 1.0
    gpus: float = 0.0

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers must be at least 1, not {self.workers}")
        if self.cpus < 0 or self.gpus < 0:
            raise ConfigError("--worker-cpus and --worker-gpus cannot be negative")


def ray_settings_for(spec: ExecutorSpec, workers: int | None, cpus: float | None,
                     gpus: float | None) -> RaySettings | None:
    """The Ray settings of a run, or None for the local executor, which refuses Ray's options rather than
    ignoring them.

    Raises:
        ConfigError: ``--workers``, ``--worker-cpus`` or ``--worker-gpus`` given with the local executor.
    """
    if spec.kind == "ray":
        return RaySettings(spec.address, workers, 1.0 if cpus is None else cpus, 0.0 if gpus is None else gpus)
    given = [flag for flag, value in (("--workers", workers), ("--worker-cpus", cpus), ("--worker-gpus", gpus))
             if value is not None]
    if given:
        raise ConfigError(f"{', '.join(given)} set the ray executor's workers: add --executor ray (or ray:auto, "
                          "ray:ray://HOST:PORT), or leave them out for the local executor")
    return None


def import_ray() -> Any:
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc
    return ray
