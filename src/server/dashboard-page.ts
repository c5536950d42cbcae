/**
 * The live dashboard: one self-contained page (no build step, no CDN: the machines that run frond
 * often reach no internet). It polls `/v1/stats` once a second and redraws.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>frond dashboard</title>
<style>
  :root { --ink: #1d2430; --muted: #6b7585; --line: #dde2ea; --seg: #2f7de1; --flake: #e1772f; --bad: #c62828; --ok: #2e7d32; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--ink); background: #f6f8fb; }
  header { display: flex; gap: 24px; align-items: baseline; padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  main { padding: 16px 20px; display: grid; gap: 16px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; }
  .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
  .card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
  .card .value { font-size: 22px; font-variant-numeric: tabular-nums; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; }
  section h2 { font-size: 14px; margin: 0 0 8px; }
  svg { width: 100%; height: 180px; display: block; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: right; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th:first-child, td:first-child { text-align: left; }
  .bar { display: inline-block; width: 90px; height: 8px; background: var(--line); border-radius: 4px; vertical-align: middle; margin-right: 6px; }
  .bar > i { display: block; height: 100%; background: var(--seg); border-radius: 4px; }
  .legend span { margin-right: 14px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
  .bad { color: var(--bad); } .ok { color: var(--ok); } .muted { color: var(--muted); }
</style>
</head>
<body>
<header><h1>frond</h1><span id="status" class="muted">connecting…</span><span id="updated" class="muted"></span></header>
<main>
  <div class="cards">
    <div class="card"><div class="label">segment IDs/s</div><div class="value" id="segRate">–</div></div>
    <div class="card"><div class="label">snowflake IDs/s</div><div class="value" id="flakeRate">–</div></div>
    <div class="card"><div class="label">tags in memory</div><div class="value" id="tagCount">–</div></div>
    <div class="card"><div class="label">worker ID</div><div class="value" id="workerId">–</div></div>
    <div class="card"><div class="label">clock</div><div class="value" id="clock">–</div></div>
  </div>
  <section>
    <h2>IDs per second, last 5 minutes</h2>
    <div class="legend"><span><i style="background:var(--seg)"></i>segment</span><span><i style="background:var(--flake)"></i>snowflake</span><span id="peak" class="muted"></span></div>
    <svg id="chart" viewBox="0 0 600 180" preserveAspectRatio="none" aria-label="IDs per second">
      <polyline id="segLine" fill="none" stroke="#2f7de1" stroke-width="2" points=""/>
      <polyline id="flakeLine" fill="none" stroke="#e1772f" stroke-width="2" points=""/>
    </svg>
  </section>
  <section>
    <h2>Segment tags</h2>
    <table>
      <thead><tr><th>tag</th><th>current segment</th><th>used</th><th>next</th><th>step</th><th>IDs/s</th><th>IDs left</th><th>runway</th><th>loads</th><th>last error</th></tr></thead>
      <tbody id="tags"><tr><td colspan="10" class="muted">no tags yet</td></tr></tbody>
    </table>
  </section>
</main>
<script>
const fmt = new Intl.NumberFormat('en');
const $ = (id) => document.getElementById(id);
function esc(s) { return String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';'); }
function runway(s) {
  if (s === null) return '<span class="muted">idle</span>';
  const text = s >= 86400 ? (s / 86400).toFixed(1) + ' d' : s >= 3600 ? (s / 3600).toFixed(1) + ' h' : s >= 60 ? (s / 60).toFixed(1) + ' min' : s.toFixed(1) + ' s';
  return s < 60 ? '<span class="bad">' + text + '</span>' : text;
}
// The x axis is always five minutes (300 one-second points): new points enter on the right.
function line(points, key, max) {
  const offset = 300 - points.length;
  return points.map((p, i) => (((offset + i) / 299) * 600).toFixed(1) + ',' + (175 - (p[key] / max) * 165).toFixed(1)).join(' ');
}
function draw(stats) {
  const last = stats.history[stats.history.length - 1] || { segment: 0, snowflake: 0 };
  $('segRate').textContent = fmt.format(last.segment);
  $('flakeRate').textContent = fmt.format(last.snowflake);
  $('tagCount').textContent = fmt.format(stats.tagCount ?? stats.tags.length);
  const flake = stats.snowflake;
  $('workerId').textContent = flake ? (flake.workerIds || [flake.workerId]).join(', ') : 'off';
  $('clock').innerHTML = !flake ? '<span class="muted">–</span>'
    : flake.clockOffsetMs < 0 ? '<span class="bad">behind ' + fmt.format(-flake.clockOffsetMs) + ' ms</span>'
    : '<span class="ok">ok</span>' + (flake.backwardsEvents ? ' <small class="bad">(' + flake.backwardsEvents + ' steps back)</small>' : '');
  const max = Math.max(1, ...stats.history.map((p) => Math.max(p.segment, p.snowflake)));
  $('segLine').setAttribute('points', line(stats.history, 'segment', max));
  $('flakeLine').setAttribute('points', line(stats.history, 'snowflake', max));
  $('peak').textContent = 'peak ' + fmt.format(max) + '/s';
  const rows = stats.tags.map((t) => {
    const c = t.current; const used = Math.min(1, Math.max(0, t.used));
    const next = t.nextReady ? 'ready [' + fmt.format(t.next.start) + ', ' + fmt.format(t.next.max) + ')' : t.loading ? 'loading…' : '–';
    return '<tr data-tag="' + esc(t.tag) + '"><td>' + esc(t.tag) + '</td><td>[' + fmt.format(c.start) + ', ' + fmt.format(c.max) + ')</td>'
      + '<td><span class="bar"><i style="width:' + (used * 100).toFixed(0) + '%"></i></span>' + (used * 100).toFixed(0) + '%</td>'
      + '<td>' + next + '</td><td>' + fmt.format(t.step) + '</td><td class="rate">' + fmt.format(Math.round(t.rate)) + '</td>'
      + '<td>' + fmt.format(t.left) + '</td><td>' + runway(t.runwaySeconds) + '</td><td>' + t.loads + '</td>'
      + '<td class="bad">' + (t.lastError ? esc(t.lastError.code) : '') + '</td></tr>';
  });
  $('tags').innerHTML = rows.length ? rows.join('') : '<tr><td colspan="10" class="muted">no tags yet</td></tr>';
}
async function poll() {
  try {
    const response = await fetch('/v1/stats', { cache: 'no-store' });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    draw(await response.json());
    $('status').innerHTML = '<span class="ok">live</span>';
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (error) {
    $('status').innerHTML = '<span class="bad">cannot reach the node: ' + esc(error.message) + '</span>';
  }
}
poll();
setInterval(poll, 1000);
</script>
</body>
</html>
`;
