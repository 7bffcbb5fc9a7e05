"""``assay view``: the interactive viewer, written to one HTML file or served on 127.0.0.1 (``report``: its alias)."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from assay.view.page import Section

RunsArg = Annotated[list[Path], typer.Argument(help="Run directories")]
BootOpt = Annotated[int, typer.Option("--bootstrap", "-b", help="Bootstrap resamples for the intervals (0: none)")]
SeedOpt = Annotated[int, typer.Option(help="Bootstrap seed")]
LevelOpt = Annotated[str | None, typer.Option("--level", "-l", help="sample, system or dataset")]
DatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", "-d", help="Where the texts are when the run's dataset name alone does not load (a spec file)")]
GroupsOpt = Annotated[Path | None, typer.Option(help="JSON/YAML mapping each group to its judge or run names")]


HumanOpt = Annotated[Path | None, typer.Option("--human", help=(
    "Human labels for some samples (as `assay meta --human`): adds the Trust tab, three intervals and forest plots"))]
LabelsOpt = Annotated[int | None, typer.Option("--labels", help=(
    "Simulate K labels on a benchmark (as `assay meta --labels`, drawn with --seed): adds the Trust tab"))]


def _page(runs: list[Path], bootstrap: int, seed: int, level: str | None, groups: Path | None,
          dataset: str | None, trust: dict | None = None) -> str:
    from assay.meta.compare import load_groups
    from assay.view import build_view_data, render_page

    data = build_view_data(runs, bootstrap=bootstrap, seed=seed, level=level,
                           groups=load_groups(groups) if groups else None, dataset=dataset)
    return render_page(data, sections(runs, trust, bootstrap=bootstrap, seed=seed))


def sections(runs: list[Path], trust: dict | None = None, *, bootstrap: int = 1000, seed: int = 0) -> list[Section]:
    """The page's tabs: overview and samples, Pairwise when a run is a pairwise run, Diagnostics when a run keeps
    an ``assay probe`` result, and Trust when labels are given (``trust``: ``assay.view.trust.trust_section``'s
    arguments)."""
    from assay.probe.table import probe_table
    from assay.view.page import DEFAULT_SECTIONS, Section
    from assay.view.pairwise import pairwise_section

    out = list(DEFAULT_SECTIONS)
    if (pairwise := pairwise_section(runs, bootstrap=bootstrap, seed=seed)) is not None:
        out.append(pairwise)
    tables = [{"run": str(run), **probe_table(res)} for run in runs if (res := stored_probe(run)) is not None]
    if tables:
        out.append(Section("diagnostics", "Diagnostics", DIAGNOSTICS_JS, {"tables": tables}))
    if trust:
        from assay.view.trust import trust_section

        out.append(trust_section(runs, **trust))
    return out


def stored_probe(run: Path) -> dict | None:
    """The last ``assay probe`` result a run directory keeps, if any."""
    from assay.probe.run import META_KEY
    from assay.run.store import DB_NAME, RunStore

    if not (Path(run) / DB_NAME).exists():
        return None
    with RunStore(run, readonly=True) as store:
        return store.get_meta(META_KEY)


# One table per probed run: every text goes in as text (app.el/app.table), never as HTML.
DIAGNOSTICS_JS = """AssayView.section('diagnostics', (root, data, app) => {
  for (const t of data.sections.diagnostics.tables) {
    root.appendChild(app.el('div', {class: 'card'}, app.el('h3', {}, t.title), app.el('p', {class: 'muted'}, t.run),
      app.table(t.columns, t.rows), app.el('ul', {}, t.notes.map((n) => app.el('li', {}, n)))));
  }
});"""


def view(
    runs: RunsArg,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write one self-contained HTML file")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 when serving (0: any free port)")] = 8765,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Serve without opening a browser")] = False,
    bootstrap: BootOpt = 1000,
    seed: SeedOpt = 0,
    level: LevelOpt = None,
    groups: GroupsOpt = None,
    dataset: DatasetOpt = None,
    human: HumanOpt = None,
    labels: LabelsOpt = None,
    alpha: Annotated[float, typer.Option(help="Error level of the Trust tab's intervals")] = 0.05,
    id_field: Annotated[str | None, typer.Option("--id", help="--human: the field holding sample ids")] = None,
    match: Annotated[str | None, typer.Option(help="--human: fields naming the sample (as assay import)")] = None,
) -> None:
    """Browse runs: overview, samples with their traces, two runs side by side. -o writes a file; else it serves."""
    from assay.cli.main import console, out
    from assay.errors import ConfigError
    from assay.view.serve import serve

    if human is not None and labels is not None:
        raise ConfigError("--human reads real labels, --labels K simulates them: give one")
    trust = None if human is None and labels is None else {
        "human": human, "labels": labels, "seed": seed, "alpha": alpha, "id_field": id_field, "match": match,
        "dataset": dataset}
    page = _page(runs, bootstrap, seed, level, groups, dataset, trust)
    if output:
        output.write_text(page, encoding="utf-8")
        out.print(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB; opens from disk, no network)")
        return
    server = serve(page.encode("utf-8"), port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    out.print(f"serving {url} (Ctrl-C stops)")
    if not no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.server_close()


def report(
    runs: RunsArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write")] = Path("report.html"),
    groups: GroupsOpt = None,
    level: LevelOpt = None,
    bootstrap: BootOpt = 1000,
    seed: SeedOpt = 0,
    dataset: DatasetOpt = None,
) -> None:
    """The viewer's static export (same as ``assay view RUN... -o FILE``): the former HTML report, retired."""
    from assay.cli.main import out

    output.write_text(_page(runs, bootstrap, seed, level, groups, dataset), encoding="utf-8")
    out.print(f"wrote {output} (the viewer's static export; `assay view` is the same page)")


def register(app: typer.Typer) -> None:
    """Add ``view`` and its alias ``report`` to the ``assay`` command."""
    app.command(name="view")(view)
    app.command(name="report")(report)
