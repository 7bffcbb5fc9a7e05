/* assay view: the page's script. Every text from runs and datasets enters the DOM through text nodes
   (el() below never parses HTML), so a judged output holding markup is shown as text. */
"use strict";
const AssayView = (() => {
  const data = JSON.parse(document.getElementById("assay-data").textContent);
  const renderers = {};
  const rendered = {};
  const STATUS = ["scored", "parse_failed", "failed"];
  const J = data.judgments;
  const N = J.r.length;
  const ROW_H = 28;

  // -- small helpers ----------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const text = (i) => (i === null || i === undefined ? null : data.texts[i]);
  const fmt = (x, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? "–" :
    (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : String(x)));
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const escHover = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const clip = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + "…" : s || "");
  function table(columns, rows, cls) {
    return el("table", {class: cls || "grid"},
      el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
  }
  function details(summary, ...body) {
    return el("details", {}, el("summary", {}, summary), ...body);
  }
  const pre = (s, cls) => el("pre", {class: cls || "text"}, s === null || s === undefined ? "" : String(s));
  const openSample = (id) => { location.hash = "sample=" + encodeURIComponent(id); };

  // -- routing: #tab=<id>, #sample=<id> ---------------------------------------------------------
  function parseHash() {
    const h = location.hash.replace(/^#/, "");
    const out = {};
    for (const part of h.split("&")) {
      const i = part.indexOf("=");
      if (i > 0) out[part.slice(0, i)] = decodeURIComponent(part.slice(i + 1));
    }
    return out;
  }
  function showTab(id) {
    document.getElementById("sample-panel").hidden = true;
    for (const t of data.tabs) {
      const sec = document.getElementById("sec-" + t.id);
      sec.hidden = t.id !== id;
      document.getElementById("tab-" + t.id).classList.toggle("active", t.id === id);
    }
    if (!rendered[id] && renderers[id]) {
      rendered[id] = true;
      renderers[id](document.getElementById("sec-" + id), data, api);
    }
  }
  function route() {
    const h = parseHash();
    if (h.sample !== undefined) return showSample(h.sample);
    showTab(h.tab && renderers[h.tab] ? h.tab : data.tabs[0].id);
  }

  // -- indexes built once -------------------------------------------------------------------------
  let bySample = null;
  function judgmentsOf(si) {
    if (!bySample) {
      bySample = new Map();
      for (let k = 0; k < N; k++) {
        const s = J.s[k];
        if (!bySample.has(s)) bySample.set(s, []);
        bySample.get(s).push(k);
      }
    }
    return bySample.get(si) || [];
  }
  const sampleIndex = new Map(data.samples.map((s, i) => [s.id, i]));

  // -- overview -----------------------------------------------------------------------------------
  function statusCounts(ri, di) {
    const c = [0, 0, 0];
    for (let k = 0; k < N; k++) if (J.r[k] === ri && J.d[k] === di) c[J.st[k]]++;
    return c;
  }
  function metaTable(run, ri) {
    const rows = run.meta.rows.map((r) => {
      const di = data.dims.indexOf(r.dimension);
      const c = di >= 0 ? statusCounts(ri, di) : null;
      const ci = r.spearman_ci ? ` [${fmt(r.spearman_ci[0])}, ${fmt(r.spearman_ci[1])}]` : "";
      return [r.dimension, fmt(r.items), fmt(r.scored), pct(r.coverage),
        c ? `${c[1]} parse, ${c[2]} call` : "", fmt(r.paired), fmt(r.spearman) + ci, fmt(r.pearson),
        fmt(r.kendall), r.warning ? el("span", {class: "warn"}, "⚠ " + r.warning) : ""];
    });
    return table(["dimension", "items", "scored", "coverage", "failures", "paired", "spearman [95% CI]", "pearson",
      "kendall", "warning"], rows);
  }
  function agreementTable(rows, title) {
    if (!rows || !rows.length) return null;
    const skip = new Set(["dimension", "group", "raters", "method"]);
    const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((k) => !skip.has(k));
    return el("div", {}, el("h4", {}, title), table(["raters", "dimension", ...keys],
      rows.map((r) => [r.group || r.raters || r.method || "", r.dimension, ...keys.map((k) =>
        (typeof r[k] === "object" && r[k] !== null ? JSON.stringify(r[k]) : fmt(r[k])))])));
  }
  function notesList(notes) {
    if (!notes || !notes.length) return null;
    return el("ul", {class: "notes"}, notes.map((n) => el("li", {},
      typeof n === "string" ? n : `${n.kind}: ${n.message}` + (n.count > 1 ? ` (×${n.count})` : ""))));
  }
  function scatter(container, dim) {
    const di = data.dims.indexOf(dim);
    const traces = data.runs.map((run, ri) => {
      const x = [], y = [], hover = [], ids = [];
      for (let k = 0; k < N; k++) {
        if (J.r[k] !== ri || J.d[k] !== di || J.score[k] === null || J.human[k] === null) continue;
        const s = data.samples[J.s[k]];
        x.push(J.human[k] + (Math.random() - 0.5) * 0.12);
        y.push(J.score[k]);
        ids.push(s.id);
        hover.push(escHover(s.id) + "<br>" + escHover(`score ${fmt(J.score[k])}, human ${fmt(J.human[k])}`) + "<br>" +
          escHover(clip(text(s.out) || "", 120)));
      }
      return {x, y, customdata: ids, text: hover, hoverinfo: "text", mode: "markers", type: "scattergl",
        name: escHover(clip(run.label, 60)), marker: {size: 7, opacity: 0.6}};
    });
    Plotly.newPlot(container, traces, {
      margin: {t: 40, l: 60, r: 20, b: 50}, height: 420, title: {text: escHover(`${dim}: predicted score vs human rating`),
        font: {size: 14}}, xaxis: {title: {text: "human rating (jittered ±0.06)"}},
      yaxis: {title: {text: "predicted score"}}, legend: {orientation: "h", y: -0.2}, hovermode: "closest",
    }, {displaylogo: false, responsive: true});
    container.on("plotly_click", (ev) => { if (ev.points.length) openSample(ev.points[0].customdata); });
  }
  function renderOverview(root) {
    root.appendChild(el("h2", {}, "Overview"));
    root.appendChild(notesList(data.notes) || el("span"));
    data.runs.forEach((run, ri) => {
      const card = el("div", {class: "card run"},
        el("h3", {}, run.label, run.imported ? el("span", {class: "badge"}, "imported") : null),
        el("p", {class: "muted"}, `${run.path} · dataset ${run.dataset || "?"} · level ${run.meta.level || "–"}`,
          run.meta.level_reason ? ` (${run.meta.level_reason})` : ""),
        run.meta.rows.length ? metaTable(run, ri) : el("p", {}, "no judgments"),
        agreementTable(run.meta.human_agreement, "human annotators' agreement (the ceiling)"),
        run.notes.length ? details(`notes on fallbacks (${run.notes.length})`, notesList(run.notes)) : null);
      root.appendChild(card);
    });
    if (data.compare) {
      root.appendChild(el("div", {class: "card"}, el("h3", {}, "agreement between runs"),
        agreementTable(data.compare.agreement, "agreement among the runs' judges"),
        agreementTable(data.compare.human_agreement, "human annotators' agreement, beside it"),
        notesList(data.compare.notes)));
    }
    if (data.dims.length) {
      const plot = el("div", {class: "plot", id: "scatter"});
      const pick = el("select", {id: "scatter-dim", onchange: () => scatter(plot, pick.value)},
        data.dims.map((d) => el("option", {value: d}, d)));
      root.appendChild(el("div", {class: "card"}, el("h3", {}, "predicted vs human (hover a point; click opens it)"),
        el("label", {}, "dimension ", pick), plot));
      scatter(plot, data.dims[0]);
    }
  }

  // -- the sample browser: filters, sorting and a virtual table -----------------------------------
  let searchCache = null;
  function searchText(si) {
    if (!searchCache) searchCache = new Array(data.samples.length);
    if (searchCache[si] === undefined) {
      const s = data.samples[si];
      searchCache[si] = [s.id, s.sys, text(s.out), text(s.src), text(s.ref), text(s.ctx)].join("\n").toLowerCase();
    }
    return searchCache[si];
  }
  const COLS = [
    ["sample", (k) => data.samples[J.s[k]].id],
    ["system", (k) => data.samples[J.s[k]].sys],
    ["dimension", (k) => data.dims[J.d[k]]],
    ["run", (k) => data.runs[J.r[k]].label],
    ["score", (k) => J.score[k]],
    ["human", (k) => J.human[k]],
    ["disagreement", (k) => J.dis[k]],
    ["status", (k) => STATUS[J.st[k]]],
    ["error / output", (k) => J.err[k] || clip(text(data.samples[J.s[k]].out), 200)],
  ];
  // Names are never cut: the sample, system, dimension and run columns are as wide as their longest value, measured
  // in the header's (bold, so wider) font; the rows keep one fixed height for the virtual scroll, and the last column
  // takes the rest of the line, cut with its hover title. A table wider than the page scrolls sideways.
  const NAMES = {0: () => data.samples.map((s) => s.id), 1: () => data.samples.map((s) => s.sys || "–"),
    2: () => data.dims, 3: () => data.runs.map((r) => r.label)};
  const FIXED_CH = {4: 7, 5: 7, 6: 13, 7: 13};  // score, human, disagreement, status
  function fitColumns(head, tbl) {
    const pen = document.createElement("canvas").getContext("2d");
    pen.font = getComputedStyle(head.children[0]).font;
    const pad = 2 * parseFloat(getComputedStyle(head.children[0]).paddingLeft) + 6;
    let total = 0;
    [...head.children].forEach((th, c) => {
      if (!NAMES[c] && FIXED_CH[c] === undefined) return;
      const px = NAMES[c] ? Math.ceil(Math.max(...[COLS[c][0], ...NAMES[c]()].map((v) => pen.measureText(String(v)).width)))
        + pad : FIXED_CH[c] * pen.measureText("0").width + pad;
      th.style.width = px + "px";
      total += px;
    });
    tbl.style.width = `max(100%, ${total}px + 24em)`;
  }
  function renderSamples(root) {
    const state = {dim: "", run: "", status: "", dis: "", q: "", sort: null, desc: false, rows: []};
    const count = el("span", {id: "row-count", class: "muted"});
    const select = (id, label, options, key) => {
      const s = el("select", {id, onchange: () => { state[key] = s.value; refresh(); }},
        options.map(([v, t]) => el("option", {value: v}, t)));
      return el("label", {}, label + " ", s);
    };
    const search = el("input", {id: "search", type: "search", placeholder: "search ids, texts, errors"});
    let timer = null;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => { state.q = search.value.trim().toLowerCase(); refresh(); }, 150);
    });
    const sortSel = el("select", {id: "sort", onchange: () => {
      const [c, d] = sortSel.value.split(":");
      state.sort = c === "" ? null : Number(c);
      state.desc = d === "desc";
      refresh();
    }}, [["", "as stored"], ["6:desc", "largest disagreement first"], ["4:asc", "score ascending"],
      ["4:desc", "score descending"], ["5:desc", "human rating descending"]].map(([v, t]) => el("option", {value: v}, t)));
    root.appendChild(el("div", {class: "filters"},
      select("f-dim", "dimension", [["", "all"], ...data.dims.map((d, i) => [String(i), d])], "dim"),
      select("f-run", "run", [["", "all"], ...data.runs.map((r, i) => [String(i), r.label])], "run"),
      select("f-status", "status", [["", "all"], ["unscored", "failed / unscored"], ["scored", "scored"]], "status"),
      select("f-dis", "disagreement with humans", [["", "any"], ["0.25", "≥ 0.25"], ["0.5", "≥ 0.5"],
        ["0.75", "≥ 0.75"]], "dis"),
      el("label", {}, "sort ", sortSel), search, count));
    const head = el("tr", {}, COLS.map(([name], c) => el("th", {onclick: () => {
      state.desc = state.sort === c ? !state.desc : false;
      state.sort = c;
      refresh();
    }}, name)));
    const body = el("tbody", {});
    const spacer = el("div", {class: "spacer"});
    const tbl = el("table", {class: "grid rows", id: "sample-table"}, el("thead", {}, head), body);
    const viewport = el("div", {class: "viewport", id: "viewport"}, spacer, tbl);
    root.appendChild(viewport);
    fitColumns(head, tbl);  // in the page: its fonts are known
    viewport.addEventListener("scroll", draw);

    function refresh() {
      const d = state.dim === "" ? -1 : Number(state.dim);
      const r = state.run === "" ? -1 : Number(state.run);
      const rows = [];
      for (let k = 0; k < N; k++) {
        if (d >= 0 && J.d[k] !== d) continue;
        if (r >= 0 && J.r[k] !== r) continue;
        if (state.status === "unscored" && J.score[k] !== null) continue;
        if (state.status === "scored" && J.score[k] === null) continue;
        if (state.dis !== "" && !(J.dis[k] !== null && J.dis[k] >= Number(state.dis))) continue;
        if (state.q && !searchText(J.s[k]).includes(state.q) && !(J.err[k] || "").toLowerCase().includes(state.q))
          continue;
        rows.push(k);
      }
      if (state.sort !== null) {
        const get = COLS[state.sort][1];
        const sign = state.desc ? -1 : 1;
        rows.sort((a, b) => {
          const x = get(a), y = get(b);
          if (x === null || x === undefined) return (y === null || y === undefined) ? a - b : 1;
          if (y === null || y === undefined) return -1;
          return x < y ? -sign : x > y ? sign : a - b;  // ties keep the stored order
        });
      }
      state.rows = rows;
      count.textContent = `${rows.length.toLocaleString()} of ${N.toLocaleString()} judgments`;
      spacer.style.height = (rows.length + 1) * ROW_H + "px";
      viewport.scrollTop = 0;
      draw();
    }
    function draw() {
      const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_H) - 5);
      const last = Math.min(state.rows.length, first + Math.ceil(viewport.clientHeight / ROW_H) + 15);
      tbl.style.transform = `translateY(${first * ROW_H}px)`;
      body.replaceChildren(...state.rows.slice(first, last).map((k) => el("tr", {
        class: "st-" + STATUS[J.st[k]], "data-sample": data.samples[J.s[k]].id,
        onclick: () => openSample(data.samples[J.s[k]].id)},
      COLS.map(([, get]) => {
        const v = typeof get(k) === "number" ? fmt(get(k)) : (get(k) ?? "–");
        return el("td", {title: v}, v);  // the whole text on hover where the cell cuts it
      }))));
    }
    refresh();
  }

  // -- one sample: texts, human ratings, traces per run side by side -------------------------------
  const traceRenderers = {
    direct: (tr) => [kv([["answer", tr.answer], ["parse error", tr.parse_error]])],
    geval: renderGeval, checkeval: renderCheckeval, seal: renderSeal, gereval: renderGereval,
    pairwise: renderPairwise,
  };
  function kv(pairs) {
    return table(["", ""], pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
      .map(([k, v]) => [k, v instanceof Node ? v : (typeof v === "object" ? JSON.stringify(v) : fmt(v))]), "kv");
  }
  function bars(labels, values, title) {
    const div = el("div", {class: "bars"});
    requestAnimationFrame(() => Plotly.newPlot(div, [{x: labels.map(String), y: values, type: "bar",
      hovertemplate: "%{x}: %{y:.3f}<extra></extra>"}], {height: 180, margin: {t: 28, l: 40, r: 10, b: 30},
      title: {text: title, font: {size: 12}}, xaxis: {type: "category"}}, {displayModeBar: false}));
    return div;
  }
  // The pair page: A and B side by side, each order's verdict and reasoning, and people's preference.
  function renderPairwise(tr) {
    const pair = tr.pair || {};
    const side = (k) => { const s = pair[k] || {};
      return el("div", {class: "card pair-side", "data-side": k}, el("h4", {}, `${k.toUpperCase()}: ${s.system_id || "–"}`),
        el("p", {class: "muted"}, `${s.id || ""} · ${s.length ?? "–"} characters · human ${fmt(s.human)}`),
        pre(s.output)); };
    const ha = (pair.a || {}).human, hb = (pair.b || {}).human;
    const people = ha === null || ha === undefined || hb === null || hb === undefined ? "not rated" :
      (ha > hb ? `A (${fmt(ha)} vs ${fmt(hb)})` : hb > ha ? `B (${fmt(hb)} vs ${fmt(ha)})` : `none (${fmt(ha)} each)`);
    const orders = Object.entries(tr.orders || {}).map(([key, o]) => [
      key === "ab" ? "A shown first" : "B shown first", fmt(o.verdict), fmt(o.winner),
      o.error ? el("span", {class: "bad"}, o.error) : "", pre(o.answer)]);
    return el("div", {class: "pairwise-trace"},
      el("div", {class: "side two"}, side("a"), side("b")),
      kv([["outcome", tr.outcome === "inconsistent" ? "inconsistent (the verdict flips with the order)" : tr.outcome],
          ["people prefer", people]]),
      table(["order", "verdict (prompt's letter)", "winner (pair's letter)", "error", "answer (reasoning, verdict)"],
        orders));
  }
  function renderGeval(tr, run, dim) {
    const out = [];
    if (run.steps[dim]) out.push(el("h5", {}, "evaluation steps"), pre(run.steps[dim]));
    out.push(kv([["mode", tr.mode], ["answer", tr.answer], ["samples", tr.samples], ["parsed", tr.parsed], ["unparseable", tr.unparseable],
      ["criteria", tr.criteria_source], ["parse errors", tr.parse_errors && Object.keys(tr.parse_errors).length ?
        tr.parse_errors : null], ["fallback", tr.fallback]]));
    const dist = tr.distribution || {};
    const keys = Object.keys(dist).sort((a, b) => Number(a) - Number(b));
    if (keys.length) out.push(bars(keys, keys.map((k) => dist[k]), "rating distribution"));
    else if (Array.isArray(tr.ratings) && tr.ratings.some((x) => x !== null)) {
      const counts = {};
      tr.ratings.filter((x) => x !== null).forEach((x) => { counts[x] = (counts[x] || 0) + 1; });
      const ks = Object.keys(counts).sort((a, b) => Number(a) - Number(b));
      out.push(bars(ks, ks.map((k) => counts[k]), "sampled ratings"));
    }
    if (Array.isArray(tr.answers)) out.push(details(`answers (${tr.answers.length})`,
      el("ol", {}, tr.answers.map((a, i) => el("li", {}, a, tr.ratings && tr.ratings[i] === null ?
        el("span", {class: "bad"}, " (unparseable)") : "")))));
    return out;
  }
  function renderCheckeval(tr) {
    const out = [kv([["score kind", tr.score_kind], ["binary score", tr.binary_score], ["soft score", tr.soft_score],
      ["soft fallback", tr.soft_fallback], ["answered", `${tr.answered} of ${tr.asked}`], ["missing", tr.missing]])];
    const groups = {};
    for (const q of tr.questions || []) (groups[q.sub_dimension] = groups[q.sub_dimension] || []).push(q);
    for (const [sub, qs] of Object.entries(groups)) {
      const sd = (tr.sub_dimensions || {})[sub] || {};
      out.push(el("h5", {}, `${sub} — yes ${fmt(sd.yes)} / answered ${fmt(sd.answered)}`));
      out.push(table(["id", "question", "answer", "P(yes)", "asked in"], qs.map((q) => [q.id, q.text,
        q.answer === null || q.answer === undefined ? el("span", {class: "bad missing"}, "missing") :
          el("span", {class: "answer " + q.answer}, q.answer), fmt(q.p_yes), q.asked_in || ""]), "grid questions"));
    }
    (tr.groups || []).forEach((g, i) => out.push(details(`group ${i + 1}: raw answer`, pre(g.answer),
      notesList(g.notes))));
    (tr.reasks || []).forEach((g, i) => out.push(details(`re-ask ${i + 1}`, pre(JSON.stringify(g, null, 1)))));
    return out;
  }
  function renderSeal(tr) {
    const subs = tr.subdimensions || [];
    const dec = new Map((tr.decisions || []).map((d) => [d.unit, d]));
    const out = [kv([["recipe", tr.recipe], ["unit type", tr.unit_type], ["granularity", tr.granularity],
      ["decisions by", tr.decisions_by], ["reference", tr.reference], ["score range", tr.score_range],
      ["ablations", tr.ablations]])];
    out.push(el("h5", {}, "units and decisions"));
    out.push(table(["unit", "text", ...subs, "unit score"], (tr.units || []).map((u, i) => [u.id, u.text,
      ...subs.map((s) => { const v = (dec.get(u.id) || {})[s];
        return v === undefined || v === null ? el("span", {class: "bad missing"}, "–") :
          el("span", {class: v ? "answer yes" : "answer no"}, String(v)); }),
      fmt((tr.unit_scores || [])[i])]), "grid units"));
    const w = tr.weights || {};
    if (w.values) {
      out.push(el("h5", {}, `sub-dimension weights (${w.source || "?"}${w.renormalised ? ", renormalised" : ""})`));
      out.push(table(subs, [w.values.map((x) => fmt(x))]));
    }
    const us = tr.unit_scores || [];
    if (us.length) out.push(el("p", {class: "aggregation"}, `aggregation: unit score = Σ weight × decision ` +
      `(eq. 6); score = mean of ${us.length} unit score(s) = ${fmt(us.reduce((a, b) => a + b, 0) / us.length)} ` +
      `(eq. 7)` + (tr.score_range ? `, on the range [${tr.score_range.join(", ")}]` : "")));
    (tr.calls || []).forEach((c, i) => out.push(details(`call ${i + 1}: ${c.stage} (${c.purpose || ""})`,
      (c.attempts || []).map((a, j) => el("div", {}, el("p", {class: a.error ? "bad" : "muted"},
        `attempt ${j + 1}` + (a.error ? `: ${a.error}` : "")), pre(a.answer))))));
    if (tr.stage1 && Object.keys(tr.stage1).length) out.push(details("stage 1", pre(JSON.stringify(tr.stage1, null, 1))));
    return out;
  }
  function renderGereval(tr, run) {
    const crit = run.rubric && run.rubric.criteria ? run.rubric.criteria[tr.criterion] : null;
    const out = [kv([["criterion", tr.criterion], ["shots", tr.shots], ["re-asks", tr.reasks], ["label", tr.label]])];
    if (crit) out.push(el("h5", {}, "instruction (the rubric's criterion)"), pre(JSON.stringify(crit, null, 1)));
    if (run.rubric && run.rubric.task) out.push(details("task", pre(run.rubric.task)));
    out.push(el("h5", {}, "reasoning"), pre(tr.reasoning));
    (tr.attempts || []).forEach((a, i) => out.push(details(`attempt ${i + 1}` + (a.error ? ` — ${a.error}` : ""),
      pre(a.answer !== undefined ? a.answer : a.text))));  // old runs: "text"
    if ((tr.demonstrations || []).length) out.push(details("demonstrations", pre(JSON.stringify(tr.demonstrations, null, 1))));
    return out;
  }
  function promptShas(v, acc) {
    if (Array.isArray(v)) v.forEach((x) => promptShas(x, acc));
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) {
      if ((k === "prompt_sha" || k === "prompt_sha256") && typeof x === "string") acc.add(x);
      else promptShas(x, acc);
    }
    return acc;
  }
  function judgmentCard(k) {
    const run = data.runs[J.r[k]];
    const tr = J.tr[k] || {};
    const dim = data.dims[J.d[k]];
    const render = traceRenderers[run.method];
    const prompts = [...promptShas(tr, new Set())].filter((s) => data.prompts[s]);
    return el("div", {class: "card judgment st-" + STATUS[J.st[k]], "data-run": run.label},
      el("div", {class: "jhead"}, el("b", {}, run.label),
        el("span", {class: "score"}, J.score[k] === null ? "no score" : "score " + fmt(J.score[k])),
        el("span", {class: "status"}, STATUS[J.st[k]])),
      J.err[k] ? el("p", {class: "bad"}, J.err[k]) : null,
      render ? render(tr, run, dim) : kv(Object.entries(tr)),
      prompts.map((s) => details(`prompt ${s}`, data.prompts[s].map((m) => el("div", {}, el("b", {}, m.role),
        pre(m.content))))),
      run.notes.length ? details(`notes on fallbacks in this run (${run.notes.length})`, notesList(run.notes)) : null,
      details("raw trace", pre(JSON.stringify(tr, null, 1))));
  }
  function showSample(id) {
    const si = sampleIndex.get(id);
    const panel = document.getElementById("sample-panel");
    for (const t of data.tabs) {
      document.getElementById("sec-" + t.id).hidden = true;
      document.getElementById("tab-" + t.id).classList.remove("active");
    }
    panel.hidden = false;
    panel.replaceChildren();
    panel.appendChild(el("button", {class: "back", onclick: () => history.length > 1 ? history.back() :
      (location.hash = "")}, "← back"));
    if (si === undefined) {
      panel.appendChild(el("p", {class: "bad"}, `no sample ${id} in these runs`));
      return;
    }
    const s = data.samples[si];
    panel.appendChild(el("h2", {}, "sample ", el("code", {}, s.id)));
    panel.appendChild(el("p", {class: "muted"}, `document ${s.doc} · system ${s.sys || "–"}`));
    const isPair = judgmentsOf(si).some((k) => data.runs[J.r[k]].method === "pairwise");
    if (isPair) panel.appendChild(el("p", {class: "muted"},
      "a pair of outputs of one input: both texts are in each judgment below"));
    else if (s.out === undefined) panel.appendChild(el("p", {class: "warn"},
      "the dataset could not be loaded: texts are not shown, only ids (see the overview's notes)"));
    const labels = (data.datasets[s.ds] || {}).labels || {};  // the card's own names ("conversation history")
    for (const [name, key] of [["source", "src"], ["context", "ctx"], ["reference", "ref"], ["output", "out"]]) {
      if (s[key] !== null && s[key] !== undefined) panel.appendChild(el("div", {class: "textblock " + name},
        el("h4", {}, labels[key] || name), pre(text(s[key]), "text " + key)));
    }
    const human = Object.entries(s.human || {});
    panel.appendChild(el("h4", {}, "human ratings"));
    panel.appendChild(human.length ? table(["dimension", "rating"], human.map(([d, v]) => [d, fmt(v)])) :
      el("p", {class: "muted"}, "none"));
    const ks = judgmentsOf(si);
    const runsHere = [...new Set(ks.map((k) => J.r[k]))];
    const chosen = runsHere.slice(0, 2);
    const grid = el("div", {class: "compare"});
    const pickers = [0, 1].map((side) => {
      const sel = el("select", {id: "cmp-" + side, onchange: () => { chosen[side] = Number(sel.value); draw(); }},
        runsHere.map((ri) => el("option", {value: ri}, data.runs[ri].label)));
      sel.value = String(chosen[side] ?? "");
      return sel;
    });
    if (runsHere.length > 1) panel.appendChild(el("div", {class: "filters"}, "compare ", pickers[0], " with ",
      pickers[1]));
    panel.appendChild(grid);
    function draw() {
      const shown = [...new Set(chosen)];
      grid.replaceChildren();
      for (const di of [...new Set(ks.map((k) => J.d[k]))]) {
        grid.appendChild(el("h3", {class: "dim"}, data.dims[di]));
        grid.appendChild(el("div", {class: "side" + (shown.length > 1 ? " two" : "")}, shown.map((ri) => {
          const k = ks.find((x) => J.r[x] === ri && J.d[x] === di);
          return k === undefined ? el("div", {class: "card muted"}, `${data.runs[ri].label}: not judged`) :
            judgmentCard(k);
        })));
      }
    }
    draw();
    window.scrollTo(0, 0);
  }

  // -- public ---------------------------------------------------------------------------------------
  const api = {
    data, el, table, details, pre, fmt, pct, openSample, notesList, kv, agreementTable, renderOverview,
    renderSamples,
    section(id, fn) { renderers[id] = fn; },
    start() {
      const nav = document.getElementById("tabs");
      for (const t of data.tabs) nav.appendChild(el("a", {id: "tab-" + t.id, href: "#tab=" + t.id}, t.title));
      document.getElementById("runs-summary").textContent =
        `${data.runs.length} run(s) · ${N.toLocaleString()} judgments · ${data.samples.length.toLocaleString()} samples`;
      window.addEventListener("hashchange", route);
      route();
    },
  };
  return api;
})();
