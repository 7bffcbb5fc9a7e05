"""The viewer's page: one self-contained HTML file (data, Plotly and the script inline), built from sections."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_SECTIONS", "Section", "plotly_js", "render_page", "script_json", "write_view"]


@dataclass(frozen=True)
class Section:
    """One tab of the page.

    Attributes:
        id: The tab's id (``#tab=<id>`` opens it; its container is ``<section id="sec-<id>">``).
        title: The tab's label.
        script: JavaScript that registers the renderer: ``AssayView.section("<id>", (el, data, app) => ...)``;
            ``data`` is the page's data, with this section's own under ``data.sections[id]``.
        data: JSON-ready data the section needs beyond the runs (e.g. a diagnostics report).
    """

    id: str
    title: str
    script: str
    data: Any = field(default=None)


def _static(name: str) -> str:
    return resources.files("assay.view").joinpath("static", name).read_text(encoding="utf-8")


# The overview and the sample browser; a further section (diagnostics) is appended to this list.
DEFAULT_SECTIONS: tuple[Section, ...] = (
    Section("overview", "Overview", "AssayView.section('overview', AssayView.renderOverview);"),
    Section("samples", "Samples", "AssayView.section('samples', AssayView.renderSamples);"),
)


def plotly_js() -> str:
    """plotly.min.js from the installed ``plotly`` package (MIT; its licence header is kept), for inlining."""
    try:
        js = resources.files("plotly").joinpath("package_data", "plotly.min.js").read_text(encoding="utf-8")
    except ModuleNotFoundError:
        from assay.errors import ConfigError

        raise ConfigError("assay view needs plotly: pip install 'assay[view]' (or pip install plotly)") from None
    return _inline_script(js)


def _inline_script(js: str) -> str:
    if "</script" in js.lower():  # would end the inline <script> early
        raise ValueError("script text contains '</script'; it cannot be inlined")
    return js


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no '<' (so no '</script>'), no U+2028/9."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(data: dict[str, Any], sections: tuple[Section, ...] | list[Section] = DEFAULT_SECTIONS) -> str:
    """The whole page as one string; every text from runs and datasets is placed by the script as text, not HTML."""
    data = {**data, "sections": {s.id: s.data for s in sections},
            "tabs": [{"id": s.id, "title": s.title} for s in sections]}
    containers = "".join(f'<section id="sec-{s.id}" class="tab" hidden></section>' for s in sections)
    scripts = "\n".join(_inline_script(s.script) for s in sections)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>assay view</title>"
        f"<style>{_static('view.css')}</style></head><body>"
        "<header><span class='brand'>assay view</span><nav id='tabs'></nav><span id='runs-summary'></span></header>"
        f"<main>{containers}<section id='sample-panel' hidden></section></main>"
        f"<script type='application/json' id='assay-data'>{script_json(data)}</script>"
        f"<script>{plotly_js()}</script>"
        f"<script>{_inline_script(_static('view.js'))}</script>"
        f"<script>{scripts}\nAssayView.start();</script></body></html>"
    )


def write_view(data: dict[str, Any], output: str | Path,
               sections: tuple[Section, ...] | list[Section] = DEFAULT_SECTIONS) -> Path:
    """Write the page to ``output`` (a self-contained file that opens from disk, no network)."""
    out = Path(output)
    out.write_text(render_page(data, sections), encoding="utf-8")
    return out
