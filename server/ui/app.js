// SPDX-License-Identifier: Apache-2.0
// kiln's dashboard: fleet, node, versions, events and report pages over kilnd's own API,
// with the session cookie from log-in and its CSRF value on every state-changing request.
'use strict';

const state = {
  session: null,        // {name, role, csrf, expires_at}
  rows: new Map(),      // node name -> row object (from GET /status?form=rows and the stream)
  summary: null,
  columns: null,
  received: 0,          // when the rows were current (ms)
  stream: null,
  inRange: null,        // Set of names the range filter allows, or null
  racks: null,          // name -> rack, from GET /nodes (the rack filter)
  page: 0,
  selected: new Set(),
  renderPending: false,
};
const PAGE = 100;
const HEALTH_ORDER = { critical: 0, warning: 1, unknown: 2, ok: 3 };

// --- small helpers -----------------------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function $(id) { return document.getElementById(id); }

// Element.append writes null as the text "null": optional parts go through this.
function put(parent, ...kids) {
  parent.append(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || ('HTTP ' + status));
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { 'Accept': 'application/json' };
  if (method !== 'GET') {
    headers['X-CSRF-Token'] = state.session ? state.session.csrf : '';
    headers['Content-Type'] = 'application/json';
  }
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text }; }
  if (res.status === 401 && path !== '/api/v1/ui/login') {
    showLogin('Your session ended: log in again.');
    throw new ApiError(res.status, data);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

function isOperator() {
  return state.session && (state.session.role === 'operator' || state.session.role === 'admin');
}

// Ages as the live stream steps them (api_ui_stream.c's age_step): finer would claim a
// precision the pushed rows do not keep.
function age(s) {
  if (s === null || s === undefined) return '–';
  if (s < 120) return '< 2 min';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return Math.floor(s / 3600) + ' h';
  return Math.floor(s / 86400) + ' d';
}

function num(v, unit) { return v === null || v === undefined ? '–' : v + ' ' + unit; }
function when(t) { return t ? new Date(t * 1000).toLocaleString() : '–'; }

// --- log-in ------------------------------------------------------------------------------

function showLogin(msg) {
  stopStream();
  state.session = null;
  $('top').hidden = true;
  $('view').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = msg || '';
  $('token').focus();
}

async function onLogin(ev) {
  ev.preventDefault();
  const input = $('token');
  const token = input.value.trim();
  input.value = '';                 // not kept anywhere in the page
  try {
    state.session = await api('POST', '/api/v1/ui/login', { token });
    start();
  } catch (e) {
    $('login-error').textContent = e.status === 401 ? 'Unknown or revoked token.' : e.message;
  }
}

async function onLogout() {
  try { await api('POST', '/api/v1/ui/logout', {}); } catch (e) { /* ended either way */ }
  showLogin('Logged out.');
}

function start() {
  $('login').hidden = true;
  $('top').hidden = false;
  $('view').hidden = false;
  $('who').textContent = state.session.name + ' (' + state.session.role + ')';
  route();
}

// --- pages -------------------------------------------------------------------------------

function route() {
  if (!state.session) return;
  const h = location.hash.replace(/^#\/?/, '');
  const view = $('view');
  view.replaceChildren();
  if (h.startsWith('node/')) { stopStream(); nodePage(view, decodeURIComponent(h.slice(5))); }
  else if (h === 'versions') { stopStream(); versionsPage(view); }
  else if (h === 'events') { stopStream(); eventsPage(view); }
  else if (h === 'report') { stopStream(); reportPage(view); }
  else fleetPage(view);
}

// A JSON value as nested lists and tables, for the pages whose shape is the API's own.
function render(v) {
  if (v === null || v === undefined) return el('span', { class: 'reasons' }, '–');
  if (Array.isArray(v)) {
    if (v.length === 0) return el('span', { class: 'reasons' }, 'none');
    if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
      const keys = [...new Set(v.flatMap((x) => Object.keys(x)))];
      return el('table', {}, el('thead', {}, el('tr', {}, keys.map((k) => el('th', {}, k)))),
        el('tbody', {}, v.map((x) => el('tr', {}, keys.map((k) => el('td', {}, cell(x[k], k)))))));
    }
    return el('span', {}, v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : x)).join(', '));
  }
  if (typeof v === 'object') {
    return el('dl', { class: 'kv' }, Object.entries(v).flatMap(([k, x]) => [el('dt', {}, k), el('dd', {}, cell(x, k))]));
  }
  return document.createTextNode(String(v));
}
// Unix times (a key like time, since, last_seen, *_at) as the reader's local time.
const TIME_KEY = /(^|_)(time|since|until|last_seen)$|_at$/;
function cell(x, key) {
  if (x !== null && typeof x === 'object') return render(x);
  if (x === null || x === undefined) return '–';
  if (typeof x === 'number' && key && TIME_KEY.test(key) && x > 1e9) return when(x);
  return String(x);
}

function panel(title, ...kids) { return el('section', { class: 'panel' }, el('h2', {}, title), ...kids); }

async function loadInto(box, fn) {
  box.replaceChildren(el('span', { class: 'reasons' }, 'loading…'));
  try { box.replaceChildren(await fn()); } catch (e) { box.replaceChildren(el('span', { class: 'error' }, e.message)); }
}

// --- fleet -------------------------------------------------------------------------------

function rowObject(cols, r) {
  const o = {};
  cols.forEach((c, i) => { o[c] = r[i]; });
  return o;
}

async function loadRows() {
  const data = await api('GET', '/api/v1/status?form=rows');
  performance.mark('kiln-rows-arrived'); // the browser test's 10,000-node measure starts here
  state.columns = data.columns;
  state.rows = new Map();
  for (const r of data.rows) { const o = rowObject(data.columns, r); state.rows.set(o.node, o); }
  state.summary = data.summary;
  state.received = Date.now();
  scheduleRender();
}

function startStream() {
  if (state.stream) return;
  const es = new EventSource('/api/v1/ui/stream');
  state.stream = es;
  es.addEventListener('hello', () => {
    setLive(true);
    // the stream now holds every change after this moment: load what came before
    loadRows().catch((e) => setLive(false, e.message));
  });
  es.addEventListener('rows', (ev) => {
    const d = JSON.parse(ev.data);
    if (!state.columns) return;
    for (const r of d.rows) { const o = rowObject(state.columns, r); state.rows.set(o.node, o); }
    for (const n of d.gone) state.rows.delete(n);
    state.summary = d.summary;
    scheduleRender();
  });
  es.addEventListener('error', () => setLive(false));
}

function stopStream() {
  if (state.stream) { state.stream.close(); state.stream = null; }
}

function setLive(on, why) {
  const l = $('live');
  if (!l) return;
  l.className = 'live ' + (on ? 'on' : 'off');
  l.textContent = on ? 'live' : ('reconnecting' + (why ? ': ' + why : ''));
}

function scheduleRender() {
  if (state.renderPending) return;
  state.renderPending = true;
  requestAnimationFrame(() => { state.renderPending = false; renderFleet(); });
}

function fleetPage(view) {
  const f = (id, node) => { node.id = id; return node; };
  put(view,
    el('div', { class: 'counts', id: 'counts' }),
    el('div', { class: 'filters' },
      f('f-search', el('input', { type: 'search', placeholder: 'search name or reason', 'aria-label': 'search', oninput: () => { state.page = 0; scheduleRender(); } })),
      f('f-range', el('input', { type: 'text', placeholder: 'noderange or @group', 'aria-label': 'noderange', onchange: onRange })),
      f('f-health', el('select', { 'aria-label': 'health', onchange: () => { state.page = 0; scheduleRender(); } },
        ['', 'critical', 'warning', 'unknown', 'ok'].map((h) => el('option', { value: h }, h || 'any health')))),
      f('f-rack', el('select', { 'aria-label': 'rack', onchange: () => { state.page = 0; scheduleRender(); } }, el('option', { value: '' }, 'any rack'))),
      el('span', { id: 'live', class: 'live off' }, 'connecting')),
    isOperator() ? actionBar() : null,
    el('div', { id: 'results', class: 'results' }),
    el('table', { class: 'fleet' },
      el('thead', {}, el('tr', {},
        isOperator() ? el('th', {}, '') : null,
        ['node', 'health', 'power', 'agent seen', 'GPUs', 'driver / CUDA', 'hottest GPU', 'power draw'].map((h) => el('th', {}, h)))),
      el('tbody', { id: 'fleet-body' })),
    el('div', { class: 'pager', id: 'pager' }));
  loadRacks();
  if (state.columns) scheduleRender();
  startStream();
}

async function loadRacks() {
  try {
    const nodes = await api('GET', '/api/v1/nodes');
    state.racks = new Map();
    const racks = new Set();
    for (const n of nodes.nodes || nodes) { if (n.rack) { state.racks.set(n.name, n.rack); racks.add(n.rack); } }
    const sel = $('f-rack');
    if (sel) for (const r of [...racks].sort()) sel.append(el('option', { value: r }, r));
  } catch (e) { /* the rack filter stays empty */ }
}

async function onRange(ev) {
  const v = ev.target.value.trim();
  state.page = 0;
  if (!v) { state.inRange = null; scheduleRender(); return; }
  try {
    const d = await api('GET', '/api/v1/status?form=rows&range=' + encodeURIComponent(v));
    state.inRange = new Set(d.rows.map((r) => r[0]));
    $('results').replaceChildren();
  } catch (e) {
    state.inRange = new Set();
    $('results').replaceChildren(el('span', { class: 'fail' }, e.message));
  }
  scheduleRender();
}

function visibleRows() {
  const q = ($('f-search') || {}).value || '';
  const health = ($('f-health') || {}).value || '';
  const rack = ($('f-rack') || {}).value || '';
  const ql = q.toLowerCase();
  const out = [];
  for (const r of state.rows.values()) {
    if (state.inRange && !state.inRange.has(r.node)) continue;
    if (health && r.health !== health) continue;
    if (rack && (!state.racks || state.racks.get(r.node) !== rack)) continue;
    if (ql && !r.node.toLowerCase().includes(ql) && !(r.reasons || []).some((x) => String(x).toLowerCase().includes(ql))) continue;
    out.push(r);
  }
  // problems first: critical, warning, unknown, then ok; by name within each
  out.sort((a, b) => (HEALTH_ORDER[a.health] ?? 2) - (HEALTH_ORDER[b.health] ?? 2) ||
    (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return out;
}

function renderCounts() {
  const box = $('counts');
  if (!box || !state.summary) return;
  const s = state.summary;
  box.replaceChildren(...['critical', 'warning', 'unknown', 'ok'].map((h) =>
    el('div', { class: 'count ' + h, 'data-health': h }, el('b', {}, s[h] || 0), h)),
  el('div', { class: 'count' }, el('b', {}, s.nodes || 0), 'nodes'),
  el('div', { class: 'count' }, el('b', {}, s.hung || 0), 'hung'),
  el('div', { class: 'count' }, el('b', {}, s.maintenance || 0), 'maintenance'));
}

function fleetRow(r) {
  const op = isOperator();
  const gpus = r.gpus_expected === null || r.gpus_expected === undefined ? '–'
    : (r.gpus_seen === null ? '?' : r.gpus_seen) + ' of ' + r.gpus_expected;
  const reasons = r.reasons && r.reasons.length ? r.reasons.join('; ') : '';
  return el('tr', { 'data-node': r.node, 'data-health': r.health, class: 'h-' + r.health },
    op ? el('td', { class: 'sel' }, el('input', {
      type: 'checkbox', 'aria-label': 'select ' + r.node, checked: state.selected.has(r.node),
      onchange: (e) => { if (e.target.checked) state.selected.add(r.node); else state.selected.delete(r.node); updateActionBar(); },
    })) : null,
    el('td', { class: 'name' }, el('span', { class: 'dot' }), el('a', { href: '#/node/' + encodeURIComponent(r.node) }, r.node)),
    el('td', { 'data-label': 'health' }, r.health, r.maintenance_reason !== null && r.maintenance_reason !== undefined ? ' (maintenance)' : '',
      reasons ? el('div', { class: 'reasons' }, reasons) : null),
    el('td', { 'data-label': 'power' }, r.power, r.bmc && r.bmc !== 'ok' ? ' (bmc ' + r.bmc + ')' : ''),
    el('td', { 'data-label': 'agent seen', class: 'num' }, r.agent_age_s === null ? 'never' : age(r.agent_age_s) + ' ago'),
    el('td', { 'data-label': 'GPUs', class: 'num' }, gpus),
    el('td', { 'data-label': 'driver / CUDA' }, (r.driver || '–') + ' / ' + (r.cuda || '–')),
    el('td', { 'data-label': 'hottest GPU', class: 'num' }, num(r.hottest_gpu_c, '°C')),
    el('td', { 'data-label': 'power draw', class: 'num' }, num(r.power_draw_w, 'W')));
}

// Only one page of rows is in the document at a time: 10,000 nodes stay as quick as 100.
function renderFleet() {
  const body = $('fleet-body');
  if (!body) return;
  renderCounts();
  const rows = visibleRows();
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  if (state.page >= pages) state.page = pages - 1;
  const slice = rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
  body.replaceChildren(...slice.map(fleetRow));
  const pager = $('pager');
  pager.replaceChildren(
    el('button', { type: 'button', disabled: state.page === 0, onclick: () => { state.page--; renderFleet(); } }, '‹ prev'),
    el('span', {}, rows.length ? `${state.page * PAGE + 1}–${state.page * PAGE + slice.length} of ${rows.length}` : 'no node matches'),
    el('button', { type: 'button', disabled: state.page >= pages - 1, onclick: () => { state.page++; renderFleet(); } }, 'next ›'));
  document.body.dataset.rendered = String(state.rows.size);
  performance.mark('kiln-rows-rendered');
}

// --- actions (operator and admin) --------------------------------------------------------

const ACTIONS = [
  { id: 'on', label: 'Power on', path: '/api/v1/power', body: { action: 'on' } },
  { id: 'off', label: 'Power off', path: '/api/v1/power', body: { action: 'off' } },
  { id: 'cycle', label: 'Power cycle', path: '/api/v1/power', body: { action: 'cycle' } },
  { id: 'reset', label: 'Reset', path: '/api/v1/power', body: { action: 'reset' } },
  { id: 'boot', label: 'Boot override', path: '/api/v1/boot', ask: 'device' },
  { id: 'maint-on', label: 'Maintenance on', path: '/api/v1/nodes/maintenance', body: { on: true }, ask: 'reason' },
  { id: 'maint-off', label: 'Maintenance off', path: '/api/v1/nodes/maintenance', body: { on: false } },
  { id: 'reinstall', label: 'Reinstall', path: '/api/v1/reinstall', ask: 'image' },
];

function actionBar() {
  return el('div', { class: 'actions', id: 'actions' },
    el('span', { id: 'sel-count', class: 'reasons' }, 'select nodes to act on'),
    ACTIONS.map((a) => el('button', { type: 'button', 'data-action': a.id, disabled: true, onclick: () => act(a, [...state.selected]) }, a.label)));
}

function updateActionBar() {
  const n = state.selected.size;
  const c = $('sel-count');
  if (c) c.textContent = n ? n + ' selected' : 'select nodes to act on';
  for (const b of document.querySelectorAll('#actions button')) b.disabled = n === 0;
}

// Asks, naming the action and every node, then calls the same endpoint as the CLI.
async function act(a, nodes, resultsBox) {
  if (!nodes.length) return;
  const dlg = $('confirm');
  $('confirm-title').textContent = a.label + ': ' + nodes.length + (nodes.length === 1 ? ' node' : ' nodes');
  $('confirm-text').textContent = 'This will ' + a.label.toLowerCase() + ' the following, now:';
  $('confirm-nodes').textContent = nodes.join(', ');
  const extra = $('confirm-extra');
  extra.replaceChildren();
  let input = null;
  if (a.ask === 'device') input = el('select', { name: 'device' }, ['pxe', 'disk', 'cd', 'bios'].map((d) => el('option', { value: d }, d)));
  if (a.ask === 'reason') input = el('input', { name: 'reason', placeholder: 'reason', required: true });
  if (a.ask === 'image') input = el('input', { name: 'image', placeholder: 'image name', required: true });
  if (input) extra.append(el('label', {}, a.ask + ' ', input));
  const answer = await new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue), { once: true });
    dlg.showModal();
  });
  if (answer !== 'ok') return;
  const body = Object.assign({ range: nodes.join(',') }, a.body || {});
  if (input) body[a.ask] = input.value;
  const box = resultsBox || $('results');
  box.replaceChildren(el('span', { class: 'reasons' }, a.label + ' ' + nodes.join(', ') + '…'));
  try {
    const res = await api('POST', a.path, body);
    const list = Array.isArray(res) ? res : [res];
    box.replaceChildren(el('ul', {}, list.map((r) => el('li', { class: r.error ? 'fail' : 'good', 'data-result-node': r.node || '' },
      (r.node || '') + ': ' + (r.error || [r.action, r.result, r.power, r.status].filter(Boolean).join(' ') || 'ok')))));
  } catch (e) {
    box.replaceChildren(el('span', { class: 'fail' }, a.label + ' refused: ' + e.message));
  }
}

// --- node --------------------------------------------------------------------------------

function nodePage(view, name) {
  const head = el('div', {});
  const status = el('div', {});
  const charts = el('div', { class: 'grid' });
  const gpus = el('div', {});
  const events = el('div', {});
  const consoleBox = el('div', {});
  const audit = el('div', {});
  const results = el('div', { class: 'results' });
  const sensors = el('div', {});
  const q = encodeURIComponent(name);
  put(view, el('h1', {}, name), head,
    isOperator() ? el('div', { class: 'actions' }, ACTIONS.map((a) => el('button', { type: 'button', 'data-action': a.id, onclick: () => act(a, [name], results) }, a.label))) : null,
    results,
    panel('Status', status),
    panel('Sensors now', el('button', { type: 'button', id: 'sensors-read', onclick: () => loadInto(sensors, async () => {
      // a live read: kilnd asks the BMC now (as kiln sensors does) and keeps the answer
      const r = (await api('GET', '/api/v1/sensors?range=' + q))[0] || {};
      return r.error ? el('span', { class: 'fail' }, r.error) : render(r.sensors || []);
    }) }, 'Ask the BMC'), sensors),
    panel('Last day', charts), panel('Versions and GPUs', gpus),
    panel('Events', events), panel('Console', consoleBox), panel('Audit', audit));
  loadInto(status, async () => {
    const d = await api('GET', '/api/v1/status?range=' + q);
    const s = d.nodes[0] || {};
    return render(s);
  });
  loadInto(gpus, async () => {
    const a = (await api('GET', '/api/v1/gpus?range=' + q))[0] || {};
    if (a.error) return el('span', { class: 'reasons' }, a.error);
    const versions = {};
    for (const k of ['nvidia_status', 'driver_version', 'kernel_module_version', 'cuda_driver_version', 'nvml_version', 'cudnn_version', 'cuda_toolkits', 'report_time']) {
      if (k in a) versions[k] = a[k];
    }
    return el('div', {}, render(versions), el('h3', {}, 'GPUs (ECC, Xid)'), render(a.gpus || []),
      a.xid_events && a.xid_events.length ? [el('h3', {}, 'Xid events'), render(a.xid_events)] : null);
  });
  loadInto(events, async () => render(await api('GET', '/api/v1/events?limit=50&range=' + q)));
  loadInto(consoleBox, async () => {
    try {
      const d = await api('GET', '/api/v1/nodes/' + q + '/console/log?lines=20');
      const lines = (d.lines || []).map((l) => (typeof l === 'string' ? l : l.text || l.line || JSON.stringify(l)));
      return el('pre', {}, lines.join('\n') || (d.capture ? 'nothing captured yet' : 'console capture is off'));
    } catch (e) {
      // several kilnd: the console is kept by the node's owner, whose own page shows it
      if (e.status === 421 && e.body && /^https?:\/\//.test(e.body.owner_url || '')) {
        return el('span', { class: 'reasons' }, 'kept by the kilnd instance that owns this node: ',
          el('a', { href: e.body.owner_url + '/' }, e.body.owner_url));
      }
      return el('span', { class: 'reasons' }, e.status === 404 ? 'not captured' : e.message);
    }
  });
  loadInto(audit, async () => {
    const rows = await api('GET', '/api/v1/audit?limit=1000');
    return render(rows.filter((r) => r.target && r.target.split(/[ ,]/).includes(name)).slice(0, 50));
  });
  loadInto(charts, async () => nodeCharts(name));
}

async function nodeCharts(name) {
  const d = await api('GET', '/api/v1/nodes/' + encodeURIComponent(name) + '/history?since=24h');
  const box = el('div', { class: 'grid' });
  const series = [
    ['Inlet temperature (°C)', d.bmc, 'inlet_c'],
    ['Power draw (W)', d.bmc, 'power_w'],
    ['Hottest GPU (°C)', d.agent, 'hottest_c'],
  ];
  for (const [title, rows, key] of series) {
    const pts = (rows || []).filter((r) => r[key] !== null && r[key] !== undefined);
    const canvas = el('canvas', { 'aria-label': title });
    box.append(el('div', {}, el('h3', {}, title), pts.length ? el('div', { class: 'chart' }, canvas) : el('span', { class: 'reasons' }, 'no readings')));
    if (pts.length && window.Chart) {
      // eslint-disable-next-line no-new
      new window.Chart(canvas, {
        type: 'line',
        data: { labels: pts.map((r) => new Date(r.time * 1000).toLocaleTimeString()), datasets: [{ label: title, data: pts.map((r) => r[key]), borderColor: '#4c9be8', pointRadius: 0 }] },
        options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } } },
      });
    }
  }
  return box;
}

// --- versions, events, report ------------------------------------------------------------

function versionsPage(view) {
  const box = el('div', {});
  view.append(el('h1', {}, 'Versions audit'), box);
  loadInto(box, async () => render(await api('GET', '/api/v1/versions/audit')));
}

function eventsPage(view) {
  const box = el('div', {});
  const sev = el('select', { 'aria-label': 'severity' }, ['info', 'warning', 'critical'].map((s) => el('option', { value: s }, s)));
  const since = el('select', { 'aria-label': 'since' }, ['1h', '12h', '24h', '7d'].map((s) => el('option', { value: s }, 'last ' + s)));
  since.value = '24h';
  const load = () => loadInto(box, async () => {
    const rows = await api('GET', `/api/v1/events?severity=${sev.value}&since=${since.value}&limit=500`);
    return render(rows.map((r) => ({ time: when(r.time), node: r.node, severity: r.severity, kind: r.kind, message: r.message })));
  });
  sev.addEventListener('change', load);
  since.addEventListener('change', load);
  view.append(el('h1', {}, 'Events'), el('div', { class: 'filters' }, sev, since), box);
  load();
}

function reportPage(view) {
  const box = el('div', {});
  const since = el('select', { 'aria-label': 'since' }, ['12h', '24h', '7d'].map((s) => el('option', { value: s }, 'last ' + s)));
  const load = () => loadInto(box, async () => render(await api('GET', '/api/v1/report?since=' + since.value)));
  since.addEventListener('change', load);
  view.append(el('h1', {}, 'Overnight report'), el('div', { class: 'filters' }, since), box);
  load();
}

// --- start -------------------------------------------------------------------------------

document.addEventListener('DOMContentLoaded', async () => {
  $('login-form').addEventListener('submit', onLogin);
  $('logout').addEventListener('click', onLogout);
  window.addEventListener('hashchange', route);
  try {
    const res = await fetch('/api/v1/ui/session', { credentials: 'same-origin' });
    const d = res.ok ? await res.json() : null;
    if (d && d.session) { state.session = d.session; start(); return; }
  } catch (e) { /* kilnd unreachable: the log-in form says so on submit */ }
  showLogin('');
});
