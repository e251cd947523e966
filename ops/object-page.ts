/**
 * The object view's page and its script, served as they are (no build step). The script polls the JSON
 * routes under /api/objects every few seconds and draws what they answer with DOM text nodes only —
 * object names, messages and errors are never parsed as HTML.
 */

export const REFRESH_MS = 3_000;

export const OBJECTS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Ripple objects (read-only)</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f6f9; }
  header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 20px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  header a { color: #9cc3ff; }
  main { padding: 10px 20px; }
  section { background: #fff; border-radius: 6px; padding: 8px 14px 12px; margin-bottom: 14px; box-shadow: 0 1px 2px #0002; }
  h2 { font-size: 15px; margin: 6px 0; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #e3e6eb; }
  th { font-weight: 600; color: #556; }
  .phase { font-weight: 600; padding: 1px 6px; border-radius: 3px; background: #e3e6eb; }
  .good { background: #d4f2dc; color: #14532d; } .bad { background: #fde0e0; color: #8a1212; } .warn { background: #fff0cf; color: #7a4d00; }
  .muted { color: #778; } .err { color: #8a1212; white-space: pre-wrap; } .cond { margin: 1px 0; }
  .groups { margin-top: 4px; font-size: 13px; }
  button { margin-top: 6px; }
</style>
</head>
<body>
<header><h1>Ripple objects (read-only)</h1><a href="/ui">queues</a><span id="scope" class="muted"></span><span id="updated" class="muted"></span></header>
<main>
<section id="failures"><h2>Failed reconciles</h2><div class="body"></div></section>
<section id="modelservings"><h2>ModelServings</h2><div class="body"></div></section>
<section id="variantautoscalings"><h2>VariantAutoscalings</h2><div class="body"></div></section>
<section id="pods"><h2>Pods in a PodOpsLifecycle operation</h2><div class="body"></div></section>
</main>
<script src="/objects/app.js"></script>
</body>
</html>
`;

export const OBJECTS_SCRIPT = `'use strict';
(() => {
  const REFRESH_MS = ${REFRESH_MS};
  const namespace = new URLSearchParams(location.search).get('namespace');
  // The continue token each section shows (undefined: its first page).
  const cont = { modelservings: undefined, variantautoscalings: undefined, pods: undefined };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) e.setAttribute(k, v);
    for (const c of children.flat(Infinity)) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  const phaseClass = (p) => (/^(Ready|Running|True)$/.test(p || '') ? 'phase good' : /^(Failed|NotAvailable|False)$/.test(p || '') ? 'phase bad' : /^(Degraded|Deleting|Creating|Starting|Progressing)$/.test(p || '') ? 'phase warn' : 'phase');
  const badge = (p) => el('span', { class: phaseClass(p) }, p || 'none yet');
  const time = (ms) => (ms ? new Date(ms).toLocaleTimeString() : '');
  const ago = (iso) => { const s = Math.round((Date.now() - Date.parse(iso)) / 1000); return isNaN(s) ? '' : s < 120 ? s + ' s ago' : Math.round(s / 60) + ' min ago'; };
  const cond = (c) => el('div', { class: 'cond' }, el('span', { class: phaseClass(c.status) }, c.type + '=' + c.status), ' ', c.reason || '', c.message ? ': ' : '', c.message ? el('span', { class: c.status === 'False' ? 'err' : '' }, c.message) : undefined);
  const table = (head, rows, empty) => (rows.length ? el('table', {}, el('tr', {}, head.map((h) => el('th', {}, h))), rows) : el('p', { class: 'muted' }, empty));

  async function get(path, token) {
    const u = new URL(path, location.origin);
    if (namespace && path !== '/api/objects/failures') u.searchParams.set('namespace', namespace);
    if (token) u.searchParams.set('continue', token);
    const r = await fetch(u);
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
    return body;
  }

  function pager(kind, page) {
    const out = [];
    if (cont[kind]) out.push(el('button', { 'data-action': 'first' }, 'first page'));
    if (page.continue) {
      const b = el('button', { 'data-action': 'next' }, 'next page');
      b.addEventListener('click', () => { cont[kind] = page.continue; refresh(); });
      out.push(b);
    }
    for (const b of out) if (b.dataset.action === 'first') b.addEventListener('click', () => { cont[kind] = undefined; refresh(); });
    if (page.missing) out.push(el('p', { class: 'muted' }, page.missing));
    return out;
  }

  const render = {
    failures(body) {
      const rows = body.functions.flatMap((f) =>
        f.failed.map((x) => el('tr', { 'data-key': f.function + ' ' + x.key },
          el('td', {}, f.function), el('td', {}, x.key), el('td', { class: 'err' }, x.error),
          el('td', {}, x.attempt > 0 ? String(x.attempt) : 'not retried'),
          el('td', {}, x.nextRetry === 'now' ? 'now' : x.nextRetry ? time(x.nextRetry) : '-'), el('td', {}, time(x.failedAt)))));
      return [table(['function', 'key', 'error', 'attempt', 'next retry', 'failed at'], rows, 'No failed reconciles.')];
    },
    modelservings(page) {
      const rows = page.items.map((m) => el('tr', { 'data-key': m.namespace + '/' + m.name },
        el('td', {}, m.namespace + '/' + m.name, m.deleting ? el('div', { class: 'muted' }, 'deleting') : undefined),
        el('td', {}, badge(m.phase)),
        el('td', {}, m.ready ? cond(m.ready) : ''),
        el('td', {}, (m.replicas.available ?? 0) + '/' + (m.replicas.desired ?? '?') + ' available', el('div', { class: 'muted' }, (m.replicas.updated ?? 0) + ' updated')),
        el('td', {}, el('div', {}, 'current ' + (m.revisions.current || '-')), el('div', {}, 'update ' + (m.revisions.update || '-'))),
        el('td', {}, m.conditions.map(cond),
          m.groups ? el('div', { class: 'groups' }, m.groups.map((g) => el('div', { 'data-group': g.name }, g.name + ' ', badge(g.state), ': ',
            g.roles.map((r, i) => [i ? ', ' : '', r.role + '/' + r.id + ' ', badge(r.state)])))) : el('div', { class: 'muted' }, 'no role status stored yet'))));
      return [table(['ModelServing', 'phase', 'Ready', 'replicas', 'revisions', 'conditions, ServingGroups and roles'], rows, 'No ModelServings.'), pager('modelservings', page)];
    },
    variantautoscalings(page) {
      const rows = page.items.map((v) => el('tr', { 'data-key': v.namespace + '/' + v.name },
        el('td', {}, v.namespace + '/' + v.name), el('td', {}, badge(v.phase)),
        el('td', {}, v.target || '', el('div', { class: 'muted' }, v.modelID || '')),
        el('td', {}, v.decision
          ? [el('div', {}, 'desired ' + v.decision.desiredReplicas + ' (current ' + v.decision.currentReplicas + '), ' + v.decision.action),
             el('div', {}, v.decision.source + (v.decision.reason ? ': ' + v.decision.reason : '')),
             el('div', { class: 'muted' }, 'decided ' + new Date(v.decision.decidedAt).toLocaleTimeString() + ' (' + ago(v.decision.decidedAt) + ')')]
          : el('span', { class: 'muted' }, 'no decision yet')),
        el('td', {}, v.conditions.map(cond))));
      return [table(['VariantAutoscaling', 'phase', 'target', 'last decision', 'conditions'], rows, 'No VariantAutoscalings.'), pager('variantautoscalings', page)];
    },
    pods(page) {
      const rows = page.items.map((p) => el('tr', { 'data-key': p.namespace + '/' + p.name },
        el('td', {}, p.namespace + '/' + p.name, p.deleting ? el('div', { class: 'muted' }, 'deleting') : undefined),
        el('td', {}, badge(p.phase), el('div', { class: 'muted' }, 'pod ' + (p.podPhase || '?'))),
        el('td', {}, p.operations.map((o) => el('div', {}, o.id + ': ' + (o.type || '?') + ' (' + o.stage + (o.operating ? ', operating' : '') + ')'))),
        el('td', {}, p.finalizers.map((f) => el('div', {}, f)))));
      return [table(['Pod', 'lifecycle phase', 'operations', 'held by finalizers'], rows, 'No Pods in an operation.'), pager('pods', page)];
    },
  };

  async function show(kind, path) {
    const body = document.querySelector('#' + kind + ' .body');
    try {
      const answer = await get(path, cont[kind]);
      body.replaceChildren(...render[kind](answer).flat());
    } catch (err) {
      if (cont[kind] && /continue/.test(String(err.message))) cont[kind] = undefined; // an expired page: back to the first
      body.replaceChildren(el('p', { class: 'err' }, 'could not read: ' + err.message));
    }
  }

  let timer;
  async function refresh() {
    clearTimeout(timer);
    await Promise.all([show('failures', '/api/objects/failures'), show('modelservings', '/api/objects/modelservings'), show('variantautoscalings', '/api/objects/variantautoscalings'), show('pods', '/api/objects/pods')]);
    document.getElementById('scope').textContent = namespace ? 'namespace ' + namespace : 'all namespaces';
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString() + ', every ' + REFRESH_MS / 1000 + ' s';
    timer = setTimeout(refresh, REFRESH_MS);
  }
  refresh();
})();
`;
