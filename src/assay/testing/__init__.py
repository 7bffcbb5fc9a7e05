"""Loopback servers for tests and benchmarks: a scripted OpenAI-compatible endpoint with faults, delays and echoes."""

from assay.testing.servers import *  # noqa: F403  (the public names of the loopback servers)
