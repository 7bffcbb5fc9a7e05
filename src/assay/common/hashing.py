"""Content hashing shared by methods, builds, the API and the viewer: one place for the digest and its length."""

from __future__ import annotations

import hashlib


def content_hash(text: str) -> str:
    """A short, stable hash of an artifact's text.

    Kept out of ``assay.methods`` so that the API, the viewer and the build steps can hash without importing
    the method layer.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
