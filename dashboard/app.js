// app.js: the escher dashboard (docs/observability.md, "Dashboard").
//
// The page reads the whole state from /api/state and re-reads it whenever the event
// stream (/api/stream, server-sent events fed by the GCS's broadcast) says something
// changed: a resource-log entry, a node or job event, or a node's availability report.
// Reads never overlap: one more is made after the one in flight when events arrive
// meanwhile. Everything is written with textContent (no HTML from the server).
'use strict';

const HISTORY_MAX = 64;         // capacity points kept per ephemeral row
const EVENTS_MAX = 200;         // events listed
const history = new Map();      // "node|name" -> [{t, seq, total}]
let fetching = false, again = false;

function $(id) { return document.getElementById(id); }

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

// A quantity: null is unbounded; byte counts of memory in GiB.
function fmt(v, name) {
  if (v === null || v === undefined) return '\u221e';
  if (name && /memory$/.test(name) && Math.abs(v) >= 1 << 20)
    return (v / (1 << 30)).toFixed(2) + ' GiB';
  if (Number.isInteger(v)) return String(v);
  return String(Math.round(v * 10000) / 10000);
}

function row(cells, numeric) {
  const tr = document.createElement('tr');
  cells.forEach((c, i) => {
    const td = c instanceof Node ? el('td') : el('td', c);
    if (c instanceof Node) td.appendChild(c);
    if (numeric && numeric.includes(i)) td.classList.add('num');
    tr.appendChild(td);
  });
  return tr;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function bar(held, total) {
  const b = el('div', null, 'bar'), f = el('div');
  const pct = total > 0 && held !== null ? Math.min(100, Math.max(0, 100 * held / total)) : 0;
  f.style.width = pct + '%';
  b.appendChild(f);
  return b;
}

function when(ms) {
  return ms ? new Date(ms).toLocaleTimeString() : '';
}

// ------------------------------------------------------------------ overview

function renderOverview(s) {
  const alive = s.nodes.filter(n => n.state === 'alive').length;
  $('n-alive').textContent = alive;
  $('n-other').textContent = s.nodes.length - alive;
  $('n-jobs').textContent = s.jobs.filter(j => j.state === 'running').length;
  $('n-res').textContent = s.resources.length;
  $('n-demand').textContent = s.demand.reduce((a, d) => a + d.count, 0);
  const names = Object.keys(s.totals).sort();
  fill($('totals').tBodies[0], names.map(n => {
    const t = s.totals[n];
    const tr = row([n, fmt(t.total, n), fmt(t.held, n), fmt(t.available, n), t.nodes,
                    bar(t.held, t.total)], [1, 2, 3, 4]);
    tr.dataset.total = n;
    return tr;
  }));
  fill($('demand').tBodies[0], s.demand.map(d => row([
    d.node_id,
    Object.entries(d.shape).map(([k, v]) => k + ': ' + fmt(v, k)).join(', '),
    d.count, d.infeasible ? 'yes' : 'no', d.missing.join(', ')], [2])));
}

// ------------------------------------------------------------------ nodes

function renderNodes(s) {
  const list = $('node-list');
  list.replaceChildren(...s.nodes.map(n => {
    const box = el('div', null, 'node');
    box.dataset.node = n.node_id;
    const h = el('h3');
    h.append(n.node_id + ' ', el('span', n.state, 'state-' + n.state),
             el('span', '  ' + n.address + '  ' + n.hostname + '  applied seq ' + n.applied_seq,
                'muted'));
    box.appendChild(h);
    const labels = Object.entries(n.labels).map(([k, v]) => k + '=' + v).join(', ');
    if (labels) box.appendChild(el('div', 'labels: ' + labels, 'muted'));
    const t = el('table');
    t.appendChild(el('thead')).appendChild(row(['resource', 'total', 'held', 'available', '']));
    const body = t.appendChild(el('tbody'));
    n.resources.forEach(r => {
      const tr = row([r.name + (r.deleted ? ' (deleted)' : '') + (r.pending ? ' (pending)' : ''),
                      fmt(r.total, r.name), fmt(r.held, r.name), fmt(r.available, r.name),
                      bar(r.held, r.total)], [1, 2, 3]);
      tr.dataset.res = n.node_id + '|' + r.name;
      tr.cells[1].classList.add('total');
      tr.cells[2].classList.add('held');
      tr.cells[3].classList.add('available');
      body.appendChild(tr);
    });
    box.appendChild(t);
    return box;
  }));
}

// ------------------------------------------------------------------ ephemeral resources

// Merges the server's last changes of a row with what this page saw since it opened.
function remember(r, now) {
  const key = r.node_id + '|' + r.name;
  let h = history.get(key) || [];
  for (const p of r.history)
    if (!h.some(q => q.seq === p.seq)) h.push({t: p.t_ms, seq: p.seq, total: p.total});
  h.sort((a, b) => a.t - b.t);
  const last = h[h.length - 1];
  if (!last || last.total !== r.total) h.push({t: now, seq: null, total: r.total});
  if (h.length > HISTORY_MAX) h = h.slice(h.length - HISTORY_MAX);
  history.set(key, h);
  return h;
}

// A step plot of the capacity, one step per change (evenly spaced, so a burst of changes
// is as readable as a slow drift; the times are in the tooltip), the last value held to
// the right edge. Unbounded points are drawn at the top.
function spark(h) {
  const W = 140, H = 28, NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  const vals = h.map(p => p.total).filter(v => v !== null);
  const max = Math.max(1, ...vals);
  const x = i => 2 + (W - 8) * i / Math.max(1, h.length);
  const y = v => v === null ? 2 : H - 2 - (H - 4) * v / max;
  const pts = [];
  h.forEach((p, i) => {
    if (i) pts.push(x(i) + ',' + y(h[i - 1].total));
    pts.push(x(i) + ',' + y(p.total));
  });
  if (h.length) pts.push(x(h.length) + ',' + y(h[h.length - 1].total));
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', pts.join(' '));
  svg.appendChild(line);
  if (h.length) {
    const c = document.createElementNS(NS, 'circle');
    c.setAttribute('cx', x(h.length));
    c.setAttribute('cy', y(h[h.length - 1].total));
    c.setAttribute('r', 2.5);
    svg.appendChild(c);
  }
  const title = document.createElementNS(NS, 'title');
  title.textContent = h.map(p => when(p.t) + '  ' + fmt(p.total)).join('\n');
  svg.appendChild(title);
  return svg;
}

function renderResources(s) {
  const now = s.t_ms;
  // A row that is gone takes its plot with it (as on the server).
  const present = new Set(s.resources.map(r => r.node_id + '|' + r.name));
  for (const k of [...history.keys()]) if (!present.has(k)) history.delete(k);
  const rows = s.resources.slice().sort((a, b) =>
    (a.node_id + a.name).localeCompare(b.node_id + b.name));
  fill($('ephemeral').tBodies[0], rows.map(r => {
    const h = remember(r, now);
    const tr = row([r.node_id, r.name, r.namespace, r.owner_job || '(detached)',
                    fmt(r.total), fmt(r.held), fmt(r.available), spark(h)], [4, 5, 6]);
    tr.dataset.eph = r.node_id + '|' + r.name;
    tr.cells[4].classList.add('total');
    return tr;
  }));
}

// ------------------------------------------------------------------ jobs, events

function renderJobs(s) {
  const jobs = s.jobs.slice().sort((a, b) => b.start_ms - a.start_ms);
  fill($('job-table').tBodies[0], jobs.map(j => {
    const link = el('a', j.job_id);
    link.href = '#job/' + j.job_id;
    const tr = row([link, j.namespace, el('span', j.state, 'state-' + j.state),
                    j.entrypoint, when(j.start_ms), when(j.end_ms), j.driver_pid || '']);
    tr.dataset.job = j.job_id;
    tr.cells[3].classList.add('wrap');
    return tr;
  }));
}

// The job opened from the jobs table (#job/<id>): its tasks, asked of every node's raylet
// by the GCS (api/jobs/<id>/tasks), re-read with the state while it is open.
let jobTasksBusy = false;

// #job/<job> or #job/<job>/logs/<task>/<node>: the job, and the task whose output shows.
function openJob() {
  const m = /^#job\/([0-9a-f]+)(?:\/logs\/([0-9a-f]+)\/([0-9a-f]+))?$/.exec(location.hash);
  return m ? {job: m[1], task: m[2], node: m[3]} : null;
}

async function renderTaskLog(o) {
  $('task-log-box').classList.toggle('hidden', !o.task);
  if (!o.task) return;
  const l = await getJSON('api/tasks/' + o.task + '/logs?node=' + o.node);
  $('task-log-title').textContent = 'Output of task ' + o.task +
    (l.truncated ? ' (last 64 KiB)' : '') + (l.found ? '' : ': none on node ' + o.node) +
    (l.error ? ' (' + l.error + ')' : '');
  $('task-log').textContent = l.text;
}

function taskLink(job, k) {
  const a = el('a', k.task_id);
  a.href = '#job/' + job + '/logs/' + k.task_id + '/' + k.node;
  a.title = 'show its output';
  return a;
}

async function renderJobTasks() {
  const o = openJob();
  $('job-view').classList.toggle('hidden', !o);
  if (!o || jobTasksBusy) return;
  const id = o.job;
  jobTasksBusy = true;
  try {
    const t = await getJSON('api/jobs/' + id + '/tasks');
    $('job-view-title').textContent = 'Job ' + id + ': ' + t.total + ' task' +
      (t.total === 1 ? '' : 's') + (t.total > t.tasks.length ? ' (newest ' + t.tasks.length + ' shown)' : '') +
      (t.unreachable.length ? '; no answer from ' + t.unreachable.join(', ') : '');
    fill($('job-tasks').tBodies[0], t.tasks.map(k => row([taskLink(id, k), k.name,
      el('span', k.state, 'state-' + k.state.toLowerCase()), k.node,
      k.attempt + '/' + k.max_retries, when(k.start_ms), when(k.end_ms)])));
    await renderTaskLog(o);
  } catch (err) {
    $('job-view-title').textContent = 'Job ' + id + ': ' + err.message;
  } finally {
    jobTasksBusy = false;
  }
}

window.addEventListener('hashchange', renderJobTasks);

function describe(e) {
  const parts = [when(e.t_ms), '#' + e.seq, e.kind];
  if (e.node) parts.push('node ' + e.node.node_id + ' (' + e.node.state + ')');
  if (e.job_id) parts.push('job ' + e.job_id);
  for (const op of e.ops || [])
    parts.push(op.op + ' ' + op.name + (op.op === 'delete' ? '' : ' ' + fmt(op.value)) +
               ' on ' + op.node_id);
  for (const j of e.jobs) if (j.job_id !== e.job_id) parts.push('job ' + j.job_id + ' ' + j.state);
  for (const k of e.kvs) parts.push((k.deleted ? 'delete ' : 'put ') + k.ns + '/' + k.key);
  return parts.join('  ');
}

function addEvent(e, flash) {
  const list = $('event-list');
  const li = el('li', describe(e), flash ? 'flash' : null);
  li.dataset.seq = e.seq;
  list.insertBefore(li, list.firstChild);
  while (list.children.length > EVENTS_MAX) list.removeChild(list.lastChild);
}

// ------------------------------------------------------------------ reading

async function getJSON(path) {
  const r = await fetch(path, {credentials: 'same-origin', cache: 'no-store'});
  if (r.status === 401) {
    $('auth').classList.remove('hidden');
    throw new Error('401');
  }
  if (!r.ok) throw new Error(path + ': ' + r.status);
  return r.json();
}

async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    const s = await getJSON('api/state');
    $('seq').textContent = 'seq ' + s.seq;
    renderOverview(s);
    renderNodes(s);
    renderResources(s);
    renderJobs(s);
    renderJobTasks();
    window.escherState = s;   // for tests and the console
  } catch (err) {
    console.log('refresh: ' + err.message);
  } finally {
    fetching = false;
    if (again) { again = false; refresh(); }
  }
}

async function loadEvents() {
  try {
    const evs = await getJSON('api/events');
    $('event-list').replaceChildren();
    evs.forEach(e => addEvent(e, false));
  } catch (err) {
    console.log('events: ' + err.message);
  }
}

function connect() {
  const es = new EventSource('api/stream');
  const live = $('live');
  es.addEventListener('hello', () => {
    live.textContent = 'live';
    live.className = 'badge on';
    loadEvents();
    refresh();
  });
  es.addEventListener('event', m => {
    addEvent(JSON.parse(m.data), true);
    refresh();
  });
  es.addEventListener('load', () => refresh());
  es.onerror = () => {
    live.textContent = 'reconnecting';
    live.className = 'badge off';
    refresh();   // shows the 401 notice when the cookie is missing
    // The browser retries a dropped stream by itself, but not one that was refused.
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
  };
}

connect();
