/* assay view, Trust tab: per run and dimension the three estimates of the mean human rating side by side, and a
   forest plot (the whole run, then each system). Texts enter the DOM as text (app.el), never as HTML. */
AssayView.section("trust", (root, data, app) => {
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const KINDS = [["human_only", "human-only", "#1f77b4"], ["ppi", "PPI++", "#d62728"], ["judge_only", "judge-only", "#7f7f7f"]];
  const cell = (c) => (!c ? "–" : c.low === undefined || c.low === null ? app.fmt(c.estimate) :
    `${app.fmt(c.estimate)} [${app.fmt(c.low)}, ${app.fmt(c.high)}]`);
  function forest(div, dim, row) {
    const names = ["all samples", ...Object.keys(row.systems || {}).filter((s) => !row.systems[s].error)];
    const cells = names.map((n) => (n === "all samples" ? row : row.systems[n]));
    const traces = KINDS.map(([key, label, color], k) => {
      const x = [], y = [], lo = [], hi = [];
      cells.forEach((c, i) => {
        const v = c[key];
        if (!v) return;
        x.push(v.estimate); y.push(i + (k - 1) * 0.22);
        lo.push(v.low === undefined ? 0 : v.estimate - v.low); hi.push(v.high === undefined ? 0 : v.high - v.estimate);
      });
      return {x, y, type: "scatter", mode: "markers", name: label, marker: {color, size: 8, symbol: key === "judge_only" ? "x" : "circle"},
        error_x: {type: "data", symmetric: false, array: hi, arrayminus: lo, visible: key !== "judge_only", color}};
    });
    if (row.all_labels !== undefined) {
      traces.push({x: cells.map((c) => c.all_labels), y: cells.map((_, i) => i), type: "scatter", mode: "markers",
        name: "all labels (truth)", marker: {color: "black", symbol: "line-ns-open", size: 16}});
    }
    Plotly.newPlot(div, traces, {
      margin: {t: 40, l: 110, r: 20, b: 50}, height: 120 + 34 * names.length,
      title: {text: esc(`${dim}: mean human rating, ${Math.round(100 * (1 - data.sections.trust.alpha))}% intervals`), font: {size: 14}},
      yaxis: {tickvals: names.map((_, i) => i), ticktext: names.map(esc), autorange: "reversed", zeroline: false},
      xaxis: {title: {text: "mean human rating"}}, legend: {orientation: "h", y: -0.25}, hovermode: "closest",
    }, {displaylogo: false, responsive: true});
  }
  const sec = data.sections.trust;
  root.appendChild(app.el("h2", {}, "Trust: what humans would say"));
  root.appendChild(app.el("p", {class: "muted"}, "human-only: the labels alone; PPI++: the labels and the judge's scores " +
    "(prediction-powered, valid whatever the judge's bias); judge-only: the judge's mean on the human scale, no valid interval."));
  for (const run of sec.runs) {
    const card = app.el("div", {class: "card trust"}, app.el("h3", {}, run.run), app.el("p", {class: "muted"}, "labels: " + run.labels.source));
    if (run.error) { card.appendChild(app.el("p", {}, run.error)); root.appendChild(card); continue; }
    const dims = Object.keys(run.trust);
    const rows = dims.map((d) => {
      const r = run.trust[d];
      return r.error ? [d, "–", r.error, "–", "–", "–", "–"] :
        [d, `${r.n_labelled} / ${r.n_units}`, cell(r.human_only), cell(r.ppi), r.interval || "normal",
         app.fmt(r.lambda, 2), cell(r.judge_only)];
    });
    card.appendChild(app.table(["dimension", "labelled", "human-only", "PPI++", "interval", "λ", "judge-only"], rows));
    const few = dims.filter((d) => run.trust[d].warning || Object.values(run.trust[d].systems || {}).some((c) => c.warning));
    if (few.length) {
      const first = run.trust[few[0]].warning ||
        Object.values(run.trust[few[0]].systems || {}).find((c) => c.warning).warning;
      card.appendChild(app.el("p", {class: "muted warning"}, `${few.join(", ")}: some estimates rest on fewer than 30 ` +
        `labels (per system, most often). ${first}`));
    }
    for (const d of dims) {
      if (run.trust[d].error) continue;
      const div = app.el("div", {class: "plot forest", "data-dim": d});
      card.appendChild(div);
      requestAnimationFrame(() => forest(div, d, run.trust[d]));
    }
    root.appendChild(card);
  }
});
