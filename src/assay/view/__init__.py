"""``assay view``: an interactive, self-contained HTML viewer of runs (overview, sample browser, traces, compare)."""

from assay.view.data import build_view_data
from assay.view.page import DEFAULT_SECTIONS, Section, render_page, write_view

__all__ = ["DEFAULT_SECTIONS", "Section", "build_view_data", "render_page", "write_view"]
