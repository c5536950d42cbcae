import { createHash } from 'node:crypto';

/**
 * The live dashboard: one self-contained page (no build step, no CDN: the machines that run frond
 * often reach no internet). It polls `/v1/stats` (which carries `/readyz`'s answer too) once a
 * second and redraws. Laid out to fit a 1280×800 window: the cards, the chart and the top of the
 * tag table show at once, and the table scrolls inside its own box.
 */
const SCRIPT = `
const fmt = new Intl.NumberFormat('en');
const fmt1 = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';
function esc(s) { return String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';'); }
function set(id, html, cls) { const el = $(id); el.innerHTML = html; el.className = 'value' + (cls ? ' ' + cls : ''); }
function sub(id, text) { const el = $(id); el.textContent = text; el.title = text; }
// An ID as the digits it is: a string above 2^53 (never made a Number), no thousands separators;
// one click selects it whole, to copy.
function id(v) { return '<span class="id">' + esc(String(v)) + '</span>'; }
function range(r) { return '[' + id(r.start) + ', ' + id(r.max) + ')'; }
// Dates in ISO 8601, UTC, to the second: 2026-12-01T22:14:15Z, the same for every reader.
function iso(ms) { return new Date(ms).toISOString().replace(/\\.\\d{3}Z$/, 'Z'); }
function duration(s) {
  return s >= 86400 ? fmt1.format(s / 86400) + ' d' : s >= 3600 ? fmt1.format(s / 3600) + ' h'
    : s >= 60 ? fmt1.format(s / 60) + ' min' : fmt1.format(s) + ' s';
}
// Time left in the snowflake time bits: days under a year, else years.
function years(s) { return s < 0 ? 'none' : s < 365 * 86400 ? fmt.format(Math.floor(s / 86400)) + ' d' : fmt1.format(s / (365.25 * 86400)) + ' y'; }
function ms(v) { return v >= 100 ? fmt.format(Math.round(v)) : v >= 1 ? v.toFixed(1) : v.toFixed(2); }
function runway(s) {
  if (s === null) return '<span class="muted">idle</span>';
  return s < 60 ? '<span class="bad">' + duration(s) + '</span>' : duration(s);
}
// The y axis: 0 to a round maximum (1, 2 or 5 times a power of ten) in 4 steps of at least 1 ID/s.
function niceMax(max) {
  const raw = Math.max(4, max) / 4;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  return { step, top: step * 4 };
}
function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const key in attrs) node.setAttribute(key, attrs[key]);
  if (text !== undefined) node.textContent = text;
  return node;
}
// The x axis is always five minutes (300 one-second points): new points enter on the right.
function drawChart(history) {
  const svg = $('chart');
  const width = Math.max(200, svg.clientWidth || 600);
  const height = Math.max(100, svg.clientHeight || 150);
  const left = 52, right = 8, top = 18, bottom = 20;
  const plotW = width - left - right, plotH = height - top - bottom;
  svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
  const max = Math.max(0, ...history.map((p) => Math.max(p.segment, p.snowflake)));
  const { step, top: yTop } = niceMax(max);
  const y = (v) => top + plotH - (v / yTop) * plotH;
  const axis = $('yAxis');
  axis.replaceChildren();
  for (let v = 0; v <= yTop; v += step) {
    axis.append(el('line', { x1: left, x2: width - right, y1: y(v), y2: y(v), class: v === 0 ? 'base' : 'grid' }));
    axis.append(el('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end' }, compact.format(v)));
  }
  axis.append(el('text', { x: 4, y: 10, 'text-anchor': 'start', class: 'unit' }, 'IDs/s'));
  const xAxis = $('xAxis');
  xAxis.replaceChildren();
  for (let m = 5; m >= 0; m--) {
    const x = left + ((300 - m * 60) / 300) * plotW;
    xAxis.append(el('text', { x, y: height - 4, 'text-anchor': m === 5 ? 'start' : m === 0 ? 'end' : 'middle' }, m === 0 ? 'now' : '-' + m + ' min'));
  }
  const offset = 300 - history.length;
  const line = (key) => history.map((p, i) => (left + ((offset + i) / 299) * plotW).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' ');
  $('segLine').setAttribute('points', line('segment'));
  $('flakeLine').setAttribute('points', line('snowflake'));
  $('peak').textContent = 'peak ' + fmt.format(max) + '/s';
}
function tagRow(t) {
  const c = t.current;
  const err = t.lastError
    ? '<td class="err bad" title="' + esc(t.lastError.message) + '"><b>' + esc(t.lastError.code) + '</b>: ' + esc(t.lastError.message) + '</td>'
    : '<td class="err"></td>';
  const open = '<tr data-tag="' + esc(t.tag) + '"' + (t.lastError ? ' class="failing"' : '') + '><td>' + esc(t.tag) + '</td>';
  if (!t.initialized) {
    // No segment yet: a tag is loaded on its first request, so this is normal unless it failed.
    const state = t.loading ? 'loading…' : 'not loaded';
    return open + '<td class="state ' + (t.lastError ? 'bad' : 'muted') + '">' + state + '</td>'
      + '<td class="muted">–</td><td class="muted">–</td><td class="muted">–</td><td class="rate">' + fmt.format(Math.round(t.rate)) + '</td>'
      + '<td class="muted">–</td><td class="muted">–</td><td>' + t.loads + '</td>' + err + '</tr>';
  }
  const used = Math.min(1, Math.max(0, t.used));
  const next = t.nextReady ? 'ready ' + range(t.next) : t.loading ? 'loading…' : '–';
  return open + '<td class="state">' + range(c) + '</td>'
    + '<td><span class="bar"><i data-used="' + used + '"></i></span>' + (used * 100).toFixed(0) + '%</td>'
    + '<td>' + next + '</td><td>' + fmt.format(t.step) + '</td><td class="rate">' + fmt.format(Math.round(t.rate)) + '</td>'
    + '<td>' + fmt.format(t.left) + '</td><td>' + runway(t.runwaySeconds) + '</td><td>' + t.loads + '</td>' + err + '</tr>';
}
// One line: the IDs given up for good, by reason (the store's frond_gaps), and what this node handed back.
function gapLine(stats) {
  if (!stats.gaps) return '';
  const parts = Object.entries(stats.gaps).filter(([, g]) => g.ranges > 0)
    .map(([reason, g]) => reason.replace(/_/g, ' ') + ' ' + fmt.format(BigInt(g.ids)) + ' in ' + fmt.format(g.ranges));
  const total = Object.values(stats.gaps).reduce((sum, g) => sum + BigInt(g.ids), 0n);
  return 'IDs given up for good: ' + fmt.format(total) + (parts.length ? ' (' + parts.join(', ') + ')' : '')
    + ' · handed back at clean stops by this node: ' + fmt.format(BigInt(stats.handedBack || '0'))
    + ' · list a tag's with frond tag gaps TAG';
}
function draw(stats) {
  const readiness = stats.readiness || { ready: true, checks: {} };
  const failing = Object.entries(readiness.checks).filter(([, c]) => !c.ok).map(([name, c]) => name + ': ' + c.detail);
  set('ready', readiness.ready ? 'ready' : 'not ready', readiness.ready ? 'ok' : 'bad');
  const warnings = readiness.warnings || [];
  sub('readySub', (failing.length ? failing.join('; ') : 'checks pass: ' + Object.keys(readiness.checks).join(', '))
    + (warnings.length ? '; warning: ' + warnings.join('; ') : ''));
  const store = stats.store;
  // Why the store is unreachable: its last error, less the URL shown just above it.
  const storeError = store && !store.reachable && store.error;
  $('storeError').textContent = storeError
    ? storeError.code + ': ' + (storeError.message.startsWith(store.description + ': ')
      ? storeError.message.slice(store.description.length + 2) : storeError.message)
    : '';
  if (store) {
    // A store that answered with INVALID_CONFIG (a privilege, a table missing) refuses: it is reached.
    const state = store.reachable ? 'reachable' : store.error && store.error.code === 'INVALID_CONFIG' ? 'refuses' : 'unreachable';
    set('store', esc(store.kind) + ' <small>' + state + '</small>', store.reachable ? 'ok' : 'bad');
    sub('storeSub', store.description);
  } else {
    set('store', 'off', 'muted');
    sub('storeSub', 'segment mode is off');
  }
  const last = stats.history[stats.history.length - 1] || { segment: 0, snowflake: 0 };
  set('segRate', fmt.format(last.segment));
  set('flakeRate', fmt.format(last.snowflake));
  const req = stats.requests;
  set('reqRate', fmt1.format(req.perSecond));
  const span = req.windowSeconds ? 'last ' + req.windowSeconds + ' s' : 'from the next second';
  sub('reqSub', span + '; probes, /metrics and this page not counted');
  set('errRate', fmt1.format(req.errorsPerSecond), req.errorsPerSecond > 0 ? 'bad' : '');
  // By code, the most frequent first: TAG_NOT_FOUND 0.4/s, INVALID_TAG 0.1/s.
  const byCode = Object.entries(req.errorsPerSecondByCode).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  sub('errSub', byCode.length
    ? byCode.map(([code, rate]) => code + ' ' + fmt1.format(rate) + '/s').join(', ') + ' (' + span + ')'
    : 'error answers, ' + span);
  const lat = req.latencyMs;
  set('latency', lat ? ms(lat.p50) + ' / ' + ms(lat.p99) + ' <small>ms</small>' : '<span class="muted">–</span>');
  sub('latencySub', lat ? 'p50 / p99; p90 ' + ms(lat.p90) + ' ms' : 'p50 / p99: no requests');
  const total = stats.tagCount === undefined ? stats.tags.length : stats.tagCount;
  const loaded = stats.tags.filter((t) => t.initialized).length;
  const failingTags = stats.tags.filter((t) => t.lastError).length;
  set('tagCount', fmt.format(total), failingTags ? 'bad' : '');
  sub('tagSub', fmt.format(loaded) + ' loaded' + (failingTags ? ', ' + failingTags + ' failing' : ''));
  const flake = stats.snowflake;
  set('workerId', flake ? esc((flake.workerIds || [flake.workerId]).join(', ')) : 'off', flake ? '' : 'muted');
  // The layout the worker IDs and the time are read with; how long its time bits have left.
  const lay = flake && flake.layout;
  sub('workerIdSub', lay ? 'layout ' + lay.bits + (lay.timeUnitMs === 1 ? '' : ' in ' + fmt.format(lay.timeUnitMs) + ' ms units')
    + ', IDs 0–' + fmt.format(lay.maxWorkerId) : 'snowflake mode is off');
  sub('clockSub', lay ? 'time bits until ' + iso(lay.endsAt).slice(0, 10) + ' (' + years(lay.timeLeftSeconds) + ' left)' : '');
  const timeWarning = (readiness.warnings || []).length > 0;
  if (!flake) set('clock', '–', 'muted');
  else if (flake.clockOffsetMs < 0) set('clock', 'behind ' + fmt.format(-flake.clockOffsetMs) + ' ms', 'bad');
  else if (timeWarning) set('clock', 'ok <small class="bad">(time bits run out in ' + years(lay.timeLeftSeconds) + ')</small>', 'ok');
  else set('clock', 'ok' + (flake.backwardsEvents ? ' <small class="bad">(' + flake.backwardsEvents + ' steps back)</small>' : ''), 'ok');
  set('version', esc(stats.version));
  sub('versionSub', 'Node.js ' + stats.nodeVersion);
  set('uptime', duration(stats.uptimeSeconds));
  // The date kept on one line: a break after one of its hyphens would make it hard to read.
  $('uptimeSub').innerHTML = 'since <span class="date">' + iso(stats.startedAt) + '</span>';
  drawChart(stats.history);
  $('gaps').textContent = gapLine(stats);
  const rows = stats.tags.map(tagRow);
  $('tags').innerHTML = rows.length ? rows.join('') : '<tr><td colspan="10" class="muted">no tags yet</td></tr>';
  // Widths set through the DOM, not style attributes, which the page's CSP does not allow.
  for (const bar of document.querySelectorAll('.bar > i')) bar.style.width = (Number(bar.dataset.used) * 100).toFixed(0) + '%';
  $('tagNote').textContent = stats.tagCount !== undefined
    ? 'showing ' + fmt.format(stats.tags.length) + ' of ' + fmt.format(stats.tagCount) + ' tags' : '';
  const status = $('status');
  status.textContent = readiness.ready ? 'live' : 'live · not ready';
  status.className = readiness.ready ? 'ok' : 'bad';
}
async function poll() {
  try {
    const response = await fetch('/v1/stats', { cache: 'no-store' });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    draw(await response.json());
    document.body.classList.remove('stale');
    $('updated').textContent = 'updated ' + iso(Date.now());
  } catch (error) {
    // What is shown is now old: greyed out, so a card still saying "ready" is not believed.
    document.body.classList.add('stale');
    $('status').className = 'bad';
    $('status').textContent = 'cannot reach the node: ' + error.message;
  }
}
poll();
setInterval(poll, 1000);
`;

const STYLE = `
  :root { --ink: #1d2430; --muted: #6b7585; --line: #dde2ea; --seg: #2f7de1; --flake: #e1772f; --bad: #c62828; --ok: #2e7d32; }
  * { box-sizing: border-box; }
  html, body { height: 100%; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--ink); background: #f6f8fb; display: flex; flex-direction: column; }
  header { display: flex; gap: 24px; align-items: baseline; padding: 10px 20px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  main { padding: 12px 20px; display: flex; flex-direction: column; gap: 12px; flex: 1; min-height: 0; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 10px; }
  .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 0; }
  .card.wide { grid-column: span 2; }
  .card .label { color: var(--muted); font-size: 11px; text-transform: uppercase; letter-spacing: .04em; }
  .card .value { font-size: 19px; font-variant-numeric: tabular-nums; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .card .value small { font-size: 12px; }
  .card .sub, .card .reason { color: var(--muted); font-size: 12px; line-height: 1.3; overflow-wrap: anywhere; }
  .card .reason { color: var(--bad); }
  .id { user-select: all; } .date { white-space: nowrap; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
  section h2 { font-size: 14px; margin: 0 0 6px; display: flex; gap: 16px; align-items: baseline; }
  section h2 .muted { font-weight: normal; font-size: 12px; }
  .tagbox { flex: 1; min-height: 120px; display: flex; flex-direction: column; }
  .scroll { overflow: auto; flex: 1; min-height: 0; }
  svg { width: 100%; height: 150px; display: block; }
  svg text { font-size: 11px; fill: var(--muted); }
  svg .grid { stroke: var(--line); } svg .base { stroke: #9aa3b1; }
  svg .seg { fill: none; stroke: var(--seg); stroke-width: 2; } svg .flake { fill: none; stroke: var(--flake); stroke-width: 2; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  thead th { position: sticky; top: 0; background: #fff; }
  th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th:first-child, td:first-child { text-align: left; }
  td.err { text-align: left; white-space: normal; max-width: 420px; overflow-wrap: anywhere; }
  th:last-child { text-align: left; }
  .bar { display: inline-block; width: 80px; height: 8px; background: var(--line); border-radius: 4px; vertical-align: middle; margin-right: 6px; }
  .bar > i { display: block; height: 100%; width: 0; background: var(--seg); border-radius: 4px; }
  .legend span { margin-right: 14px; font-size: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
  .legend .seg { background: var(--seg); } .legend .flake { background: var(--flake); }
  .bad { color: var(--bad); } .ok { color: var(--ok); } .muted { color: var(--muted); }
  body.stale main { opacity: .45; }
`;

/**
 * The cards in order; a wide one spans two columns (the store's whole URL and its error, the error
 * codes). At 1280 px, seven columns: the node's state on the first row, its traffic on the second.
 */
const CARDS: readonly [id: string, label: string, wide?: 'wide'][] = [
  ['store', 'store', 'wide'],
  ['ready', 'readiness'],
  ['workerId', 'worker ID'],
  ['clock', 'snowflake clock'],
  ['version', 'version'],
  ['uptime', 'uptime'],
  ['tagCount', 'tags'],
  ['segRate', 'segment IDs/s'],
  ['flakeRate', 'snowflake IDs/s'],
  ['reqRate', 'requests/s'],
  ['errRate', 'errors/s', 'wide'],
  ['latency', 'request latency'],
];

const SUBS: Record<string, string> = {
  store: 'storeSub',
  ready: 'readySub',
  reqRate: 'reqSub',
  errRate: 'errSub',
  latency: 'latencySub',
  tagCount: 'tagSub',
  version: 'versionSub',
  uptime: 'uptimeSub',
};

const cards = CARDS.map(
  ([id, label, wide]) =>
    `    <div class="card${wide ? ' wide' : ''}" id="${id}Card"><div class="label">${label}</div><div class="value" id="${id}">–</div>` +
    `<div class="sub" id="${SUBS[id] ?? `${id}Sub`}">&nbsp;</div>` +
    `${id === 'store' ? '<div class="reason" id="storeError"></div>' : ''}</div>`,
).join('\n');

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>frond dashboard</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header><h1>frond</h1><span id="status" class="muted">connecting…</span><span id="updated" class="muted"></span></header>
<main>
  <div class="cards">
${cards}
  </div>
  <p id="gaps" class="muted"></p>
  <section>
    <h2>IDs per second, last 5 minutes</h2>
    <div class="legend"><span><i class="seg"></i>segment</span><span><i class="flake"></i>snowflake</span><span id="peak" class="muted"></span></div>
    <svg id="chart" viewBox="0 0 600 150" aria-label="IDs per second">
      <g id="yAxis"></g><g id="xAxis"></g>
      <polyline id="segLine" class="seg" points=""/>
      <polyline id="flakeLine" class="flake" points=""/>
    </svg>
  </section>
  <section class="tagbox">
    <h2>Segment tags <span id="tagNote" class="muted"></span></h2>
    <div class="scroll">
    <table>
      <thead><tr><th>tag</th><th>current segment</th><th>used</th><th>next</th><th>step</th><th>IDs/s</th><th>IDs left</th><th>runway</th><th>loads</th><th>last error</th></tr></thead>
      <tbody id="tags"><tr><td colspan="10" class="muted">no tags yet</td></tr></tbody>
    </table>
    </div>
  </section>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page runs only its own script (by hash) and talks only to its own node: a tag name or an
 * error message that slipped past escaping could not load or run anything. Styles by hash too;
 * the bars' widths are set through the DOM, which a CSP does not restrict.
 */
export const DASHBOARD_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${hash(SCRIPT)}`,
    `style-src ${hash(STYLE)}`,
    "connect-src 'self'",
    // The empty icon: without it the browser asks for /favicon.ico, a 404 counted in errors/s.
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
};
