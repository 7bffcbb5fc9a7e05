"""The package version, in its own module so that ``assay.api`` and friends read it without importing ``assay``."""

__version__ = "0.1.0"
