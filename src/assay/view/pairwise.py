"""The viewer's Pairwise tab: each pairwise run's win-rate matrix as a heat map, Bradley-Terry strengths with their
intervals, and the order figures (the pair page itself is the trace renderer ``pairwise`` in ``static/view.js``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.view.page import Section

# Every text goes in as text (app.el / app.table); the plots get the systems as category labels.
PAIRWISE_JS = """AssayView.section('pairwise', (root, data, app) => {
  const f = app.fmt;
  for (const run of data.sections.pairwise.runs) {
    for (const [dim, rep] of Object.entries(run.report)) {
      const systems = Object.keys(rep.systems).sort((a, b) => (rep.systems[b].bt ?? 0) - (rep.systems[a].bt ?? 0));
      const heat = app.el('div', {class: 'pairwise-heat'});
      const bt = app.el('div', {class: 'pairwise-bt'});
      const z = systems.map((r) => systems.map((c) => (r === c ? null : rep.matrix[r][c] ?? null)));
      requestAnimationFrame(() => {
        Plotly.newPlot(heat, [{type: 'heatmap', x: systems, y: systems, z, zmin: 0, zmax: 1, colorscale: 'RdBu',
          hovertemplate: '%{y} vs %{x}: %{z:.3f}<extra></extra>', colorbar: {title: {text: 'win rate'}}}],
          {height: 120 + 28 * systems.length, margin: {t: 30, l: 80, r: 10, b: 60},
           title: {text: 'win rate of the row system against the column system', font: {size: 12}},
           xaxis: {type: 'category'}, yaxis: {type: 'category', autorange: 'reversed'}}, {displayModeBar: false});
        const s = systems.map((k) => rep.systems[k]);
        Plotly.newPlot(bt, [{type: 'scatter', mode: 'markers', y: systems, x: s.map((v) => v.bt),
          error_x: {type: 'data', symmetric: false, array: s.map((v) => (v.bt_high ?? v.bt) - v.bt),
                    arrayminus: s.map((v) => v.bt - (v.bt_low ?? v.bt))},
          hovertemplate: '%{y}: %{x:.3f}<extra></extra>'}],
          {height: 120 + 24 * systems.length, margin: {t: 30, l: 80, r: 10, b: 40},
           title: {text: 'Bradley-Terry strength (log scale, 95% interval over inputs)', font: {size: 12}},
           yaxis: {type: 'category', autorange: 'reversed'}}, {displayModeBar: false});
      });
      const rows = systems.map((k) => { const v = rep.systems[k];
        return [k, `${f(v.win_rate)} [${f(v.low)}, ${f(v.high)}]`, `${f(v.bt)} [${f(v.bt_low)}, ${f(v.bt_high)}]`,
                f(v.lc_win_rate), String(v.games)]; });
      const h = rep.human_agreement;
      const counted = rep.inconsistent === 'tie' ? 'ties' : 'dropped';
      const people = h ? `accuracy ${f(h.accuracy)}, kappa ${f(h.kappa)}, ${h.n_pairs} pairs` : null;
      root.appendChild(app.el('div', {class: 'card pairwise', 'data-run': run.label, 'data-dim': dim},
        app.el('h3', {}, `${run.label}: ${dim}`),
        app.kv([['pairs read in both orders', rep.n_pairs], ['consistency', rep.consistency],
                ['position bias (inconsistent pairs leaning first)', rep.position_bias],
                ['first-position win rate', rep.first_position_win_rate], ['tie rate', rep.tie_rate],
                ['inconsistent pairs', `${rep.n_inconsistent} (counted as ${counted})`],
                ['agreement with people', people]]),
        app.table(['system', 'win rate [95% CI]', 'Bradley-Terry [95% CI]', 'LC win rate', 'games'], rows),
        heat, bt));
    }
  }
});"""


def pairwise_section(runs: list[Path], *, bootstrap: int = 1000, seed: int = 0) -> Section | None:
    """The Pairwise tab when any of ``runs`` is a pairwise run (None otherwise)."""
    from assay.meta.pairwise_run import is_pairwise, run_report

    reports: list[dict[str, Any]] = [{"label": Path(r).name, "run": str(r),
                                      "report": run_report(r, n_boot=bootstrap, seed=seed)}
                                     for r in runs if is_pairwise(r)]
    return Section("pairwise", "Pairwise", PAIRWISE_JS, {"runs": reports}) if reports else None
