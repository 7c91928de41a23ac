// The dashboard page: fetches data from /api/*, inlines the server's SVG charts, and
// refreshes what changed when /api/events says a run's files changed (no reload).
"use strict";

const state = {
  runs: [],            // from /api/runs
  selected: new Set(), // ids shown in the charts
  focus: null,         // id shown in the details tabs
  tab: "model",
  galleryImage: 0,
  histParam: null,
};

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const q = (params) => new URLSearchParams(params).toString();

async function getJson(url) {
  const r = await fetch(url, { cache: "no-store" });
  const body = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

async function refreshRuns() {
  const data = await getJson("/api/runs");
  $("#logdir").textContent = data.logdir;
  const known = new Set(state.runs.map((r) => r.id));
  state.runs = data.runs;
  for (const r of data.runs) if (!known.has(r.id)) state.selected.add(r.id); // new runs start shown
  if (!state.focus || !data.runs.some((r) => r.id === state.focus)) state.focus = data.runs.length ? data.runs[0].id : null;
  const list = $("#runs");
  list.innerHTML = "";
  for (const r of data.runs) {
    const li = document.createElement("li");
    li.dataset.run = r.id;
    const meta = `${r.kind}, ${r.epochs} epoch${r.epochs === 1 ? "" : "s"}${r.last_step != null ? `, step ${r.last_step}` : ""}`;
    li.innerHTML = `<label><input type="checkbox" ${state.selected.has(r.id) ? "checked" : ""}><span class="swatch" style="background:${r.color}"></span>${esc(r.id)}</label>` +
      `<span class="meta">${esc(meta)}</span>` + r.errors.map((e) => `<span class="error">${esc(e)}</span>`).join("");
    li.querySelector("input").addEventListener("change", (ev) => {
      if (ev.target.checked) state.selected.add(r.id); else state.selected.delete(r.id);
      refreshCharts();
    });
    list.appendChild(li);
  }
  if (!data.runs.length) list.innerHTML = `<li class="note">no runs yet: train with --out ${esc(data.logdir)}/NAME</li>`;
  const focus = $("#focus");
  focus.innerHTML = data.runs.map((r) => `<option ${r.id === state.focus ? "selected" : ""}>${esc(r.id)}</option>`).join("");
}

async function refreshChart(div) {
  const runs = state.runs.map((r) => r.id).filter((id) => state.selected.has(id));
  const params = { metric: div.dataset.metric, x: $("#xaxis").value, smooth: $("#smooth").value, runs: runs.join(",") };
  try {
    const data = await getJson(`/api/chart?${q(params)}`);
    div.innerHTML = data.svg + data.errors.map((e) => `<div class="errors">${esc(e)}</div>`).join("");
    div.dataset.series = JSON.stringify(data.series);
  } catch (e) {
    div.innerHTML = `<div class="errors">${esc(e.message)}</div>`;
  }
}

function refreshCharts() {
  return Promise.all([...document.querySelectorAll(".chart")].map(refreshChart));
}

const fmt = (n) => (n == null ? "" : Number(n).toLocaleString("en-US"));
const flops = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} G` : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : `${n}`);

async function showModel(el, run) {
  const doc = await getJson(`/api/model?${q({ run })}`);
  if (!doc) { el.innerHTML = `<p class="note">no model.json (written when a run starts with a test set)</p>`; return; }
  const rows = doc.rows.map((r) => `<tr><td class="mono">${esc(r.name ?? "")}</td><td>${esc(r.type)}</td><td class="mono">[${r.output_shape.join(", ")}]</td>` +
    `<td>${fmt(r.parameters)}</td><td>${flops(r.flops)}</td><td>${r.forward_ms.toFixed(3)}</td><td>${r.backward_ms.toFixed(3)}</td><td>${esc(r.bound)}</td></tr>`).join("");
  el.innerHTML = `<p>${fmt(doc.total.parameters)} parameters, ${flops(doc.total.flops)}FLOPs per forward pass of input [${doc.input_shape.join(", ")}] on ${esc(doc.device)} (from the profiler).</p>` +
    `<table><thead><tr><th>layer</th><th>ops</th><th>output shape</th><th>parameters</th><th>FLOPs</th><th>forward ms</th><th>backward ms</th><th>bound</th></tr></thead><tbody>${rows}</tbody></table>`;
}

async function showHistograms(el, run) {
  const first = await getJson(`/api/histograms?${q({ run })}`);
  if (!first.parameters.length) {
    el.innerHTML = `<p class="note">no histograms: train with --log-histograms N to log every parameter's values and gradients every N steps</p>`;
    return;
  }
  if (!first.parameters.includes(state.histParam)) state.histParam = first.parameters[0];
  const data = await getJson(`/api/histograms?${q({ run, param: state.histParam })}`);
  el.innerHTML = `<label>Parameter <select id="hist-param">${data.parameters.map((p) => `<option ${p === state.histParam ? "selected" : ""}>${esc(p)}</option>`).join("")}</select></label>` +
    (data.error ? `<div class="errors">${esc(data.error)}</div>` : "") +
    `<div class="grid"><div class="panel">${data.weight_svg}</div><div class="panel">${data.grad_svg}</div></div>` +
    `<div class="grid"><div class="panel">${data.grad_norms_svg}</div></div>`;
  $("#hist-param").addEventListener("change", (ev) => { state.histParam = ev.target.value; showDetails(); });
}

function thumb(run, set, i, e, classes, clickable) {
  const ok = e.pred === e.true;
  return `<div class="thumb ${clickable ? "clickable" : ""} ${clickable && i === state.galleryImage ? "chosen" : ""}" data-i="${i}">` +
    `<img alt="test image ${e.index}" src="/api/image.png?${q({ run, set, i, v: Date.now() })}">` +
    `#${e.index}<br>true: ${esc(classes[e.true] ?? e.true)}<br><span class="${ok ? "" : "wrong"}">pred: ${esc(classes[e.pred] ?? e.pred)} (${(100 * e.confidence).toFixed(0)}%)</span></div>`;
}

async function showEval(el, run) {
  let data;
  try { data = await getJson(`/api/eval?${q({ run })}`); } catch (e) { el.innerHTML = `<p class="note">${esc(e.message)}</p>`; return; }
  const mistakes = data.misclassified.map((e, i) => thumb(run, "misclassified", i, e, data.classes, false)).join("");
  const gallery = data.gallery.map((e, i) => thumb(run, "gallery", i, e, data.classes, true)).join("");
  el.innerHTML = `<p>After epoch ${data.epoch} (step ${data.step}), ${fmt(data.samples)} test images.</p>` +
    `<div class="eval-top"><div class="panel">${data.confusion_svg}</div><div><h3>Misclassified (first ${data.misclassified.length})</h3><div class="thumbs">${mistakes}</div></div></div>` +
    `<h3>Feature maps of every convolution (latest checkpoint) for a test image</h3><div class="thumbs" id="gallery">${gallery}</div><div id="maps" class="grid maps"><p class="note">computing…</p></div>`;
  el.querySelectorAll("#gallery .thumb").forEach((t) => t.addEventListener("click", () => { state.galleryImage = Number(t.dataset.i); showDetails(); }));
  try {
    const f = await getJson(`/api/features?${q({ run, i: state.galleryImage })}`);
    $("#maps").innerHTML = f.layers.length ? f.layers.map((l) => `<figure><img alt="${esc(l.layer)}" src="/api/feature.png?${q({ run, i: state.galleryImage, layer: l.index, v: Date.now() })}">` +
      `<figcaption>${esc(l.layer)}: ${l.shape[0]} maps of ${l.shape[1]}×${l.shape[2]}</figcaption></figure>`).join("") : `<p class="note">this model has no convolutions</p>`;
  } catch (e) {
    $("#maps").innerHTML = `<p class="note">${esc(e.message)}</p>`;
  }
}

async function showSamples(el, run) {
  const data = await getJson(`/api/samples?${q({ run })}`);
  el.innerHTML = (data.error ? `<div class="errors">${esc(data.error)}</div>` : "") + (data.samples.length
    ? data.samples.slice().reverse().map((s) => `<h3>step ${s.step} (validation loss ${Number(s.val_loss).toFixed(4)})</h3><pre class="sample">${esc(s.text)}</pre>`).join("")
    : `<p class="note">no sampled text (train-lm writes one per checkpoint)</p>`);
}

async function showDetails() {
  const run = state.focus;
  for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== `tab-${state.tab}`;
  const el = $(`#tab-${state.tab}`);
  if (!run) { el.innerHTML = ""; return; }
  const show = { model: showModel, histograms: showHistograms, eval: showEval, samples: showSamples }[state.tab];
  try { await show(el, run); } catch (e) { el.innerHTML = `<div class="errors">${esc(e.message)}</div>`; }
}

function listen() {
  const live = $("#live");
  const source = new EventSource("/api/events");
  source.onopen = () => { live.textContent = "live"; live.classList.add("on"); };
  source.onerror = () => { live.textContent = "reconnecting…"; live.classList.remove("on"); };
  source.addEventListener("change", async (ev) => {
    const changed = JSON.parse(ev.data).runs;
    await refreshRuns();
    await refreshCharts();
    if (changed.includes(state.focus)) await showDetails();
  });
}

async function main() {
  $("#xaxis").addEventListener("change", refreshCharts);
  $("#smooth").addEventListener("input", () => { $("#smooth-value").textContent = $("#smooth").value; });
  $("#smooth").addEventListener("change", refreshCharts);
  $("#focus").addEventListener("change", (ev) => { state.focus = ev.target.value; state.galleryImage = 0; showDetails(); });
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => {
      document.querySelectorAll("#tabs button").forEach((x) => x.classList.toggle("active", x === b));
      state.tab = b.dataset.tab;
      showDetails();
    });
  }
  await refreshRuns();
  await Promise.all([refreshCharts(), showDetails()]);
  document.body.dataset.ready = "1";
  listen();
}

main();
