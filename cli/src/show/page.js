'use strict';
// The timeline page of `jrpc show --html`: draws the trace embedded in #trace-data (paired by
// jrpc: spans are requests from sending to answer, messages are every event in order).
(function () {
  const data = JSON.parse(document.getElementById('trace-data').textContent);
  const LANE = 24;
  const AXIS = 22;
  const PAD = 28;
  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function formatLatency(seconds) {
    const ms = seconds * 1000;
    if (ms < 10) return ms.toFixed(2) + 'ms';
    if (ms < 1000) return ms.toFixed(1) + 'ms';
    return seconds.toFixed(2) + 's';
  }

  function formatTime(t) {
    return t.toFixed(3) + ' s';
  }

  function arrow(from) {
    return from === 'client' ? 'C→S' : from === 'server' ? 'S→C' : '';
  }

  function pretty(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (e) {
      return text;
    }
  }

  // ----- the header -----
  const about = $('about');
  const errors = data.spans.filter((s) => s.status === 'error').length;
  if (data.command) about.append(el('code', '', data.command.join(' ')), ' · ');
  const facts = [`${data.messages.length} messages, ${data.spans.length} requests, ${errors} errors, ${formatTime(data.duration)}`];
  if (data.started) facts.push(`started ${data.started}`);
  if (data.tool) facts.push(data.tool);
  about.append(facts.join(' · '));

  // ----- lanes: requests as spans (stacked when they overlap), the rest as ticks -----
  const tickKinds = ['notification', 'unparsed', 'stderr', 'note', 'exit'];
  const lanes = [
    { title: 'client → server', what: 'requests', spans: data.spans.filter((s) => s.from === 'client') },
    {
      title: 'client → server',
      what: 'notifications',
      ticks: data.messages.filter((m) => m.from === 'client' && tickKinds.includes(m.kind)),
    },
    { title: 'server → client', what: 'requests', spans: data.spans.filter((s) => s.from === 'server') },
    {
      title: 'server → client',
      what: 'notifications, stderr',
      ticks: data.messages.filter((m) => m.from !== 'client' && tickKinds.includes(m.kind)),
    },
  ];
  for (const lane of lanes) {
    if (!lane.spans) {
      lane.rows = 1;
      continue;
    }
    const ends = [];
    const ordered = lane.spans.slice().sort((a, b) => a.start - b.start);
    for (const span of ordered) {
      const end = span.end === null ? data.duration : span.end;
      let row = ends.findIndex((e) => e <= span.start);
      if (row < 0) {
        row = ends.length;
        ends.push(end);
      } else {
        ends[row] = end;
      }
      span.row = row;
    }
    lane.rows = Math.max(1, ends.length);
  }

  const labels = $('labels');
  for (const lane of lanes) {
    const label = el('div', 'label');
    label.style.height = lane.rows * LANE + 'px';
    label.append(el('b', '', lane.title), ' ' + lane.what);
    labels.append(label);
  }

  // ----- drawing -----
  const scroller = $('scroller');
  const canvas = $('canvas');
  let zoom = 1;
  let selected = null; // { span } or { message }

  function fitScale() {
    const width = Math.max(200, scroller.clientWidth - 2 * PAD);
    return data.duration > 0 ? width / data.duration : 1000;
  }

  function axisStep(scale) {
    const target = 110 / scale; // seconds per ~110 px
    const steps = [1, 2, 5];
    for (let p = -6; p <= 5; p++) {
      for (const s of steps) {
        const step = s * Math.pow(10, p);
        if (step >= target) return step;
      }
    }
    return 1e5;
  }

  function axisLabel(t, step) {
    if (step < 0.001) return (t * 1e3).toFixed(step < 1e-5 ? 3 : 2) + ' ms';
    if (step < 1) return (t * 1e3).toFixed(0) + ' ms';
    return t.toFixed(step < 10 ? 0 : 0) + ' s';
  }

  function draw() {
    const scale = fitScale() * zoom;
    const x = (t) => PAD + t * scale;
    const width = Math.max(scroller.clientWidth, x(data.duration) + PAD);
    const height = AXIS + lanes.reduce((sum, lane) => sum + lane.rows * LANE, 0);
    canvas.replaceChildren();
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
    labels.style.height = height + 'px';

    const axis = el('div', 'axis');
    const step = axisStep(scale);
    for (let t = 0; t <= data.duration + step / 2; t += step) {
      const label = el('span', '', axisLabel(t, step));
      label.style.left = x(t) + 'px';
      axis.append(label);
      const grid = el('div', 'gridline');
      grid.style.left = x(t) + 'px';
      canvas.append(grid);
    }
    canvas.append(axis);

    let top = AXIS;
    for (const lane of lanes) {
      const row = el('div', 'lane');
      row.style.top = top + 'px';
      row.style.height = lane.rows * LANE + 'px';
      canvas.append(row);
      if (lane.spans) {
        for (const span of lane.spans) {
          const end = span.end === null ? data.duration : span.end;
          const node = el('div', `span ${span.status} ${span.from}`);
          const w = Math.max(2, (end - span.start) * scale);
          node.style.left = x(span.start) + 'px';
          node.style.width = w + 'px';
          node.style.top = span.row * LANE + 'px';
          node.dataset.method = span.method;
          node.dataset.id = span.id;
          node.dataset.from = span.from;
          node.dataset.status = span.status;
          if (w > 36) node.textContent = span.method;
          const took = span.end === null ? 'no answer' : formatLatency(span.end - span.start);
          node.title = `#${span.id} ${span.method} — ${took}${span.status === 'ok' ? '' : ', ' + span.status}`;
          node.addEventListener('click', () => select({ span }));
          span.node = node;
          row.append(node);
        }
      } else {
        for (const message of lane.ticks) {
          const node = el('div', `tick ${message.kind}`);
          node.style.left = x(message.t) + 'px';
          node.dataset.method = message.method || '';
          node.dataset.kind = message.kind;
          node.title = (message.method || message.kind) + (message.note ? ` — ${message.note}` : '');
          node.addEventListener('click', () => select({ message }));
          message.node = node;
          row.append(node);
        }
      }
      top += lane.rows * LANE;
    }
    applyFilter();
    highlight();
  }

  // ----- the message list -----
  const tbody = document.querySelector('#list tbody');
  data.messages.forEach((message, index) => {
    const span = message.span === null ? null : data.spans[message.span];
    const cancelled = message.kind === 'error' && span && span.status === 'cancelled';
    const kind = cancelled ? 'cancelled' : message.kind === 'error' ? 'ERROR' : message.kind;
    const row = el('tr', cancelled ? 'cancelled' : message.kind);
    row.dataset.index = index;
    const cells = [
      [formatTime(message.t), 'num'],
      [arrow(message.from), ''],
      [kind, 'kind'],
      [message.id === null ? '' : '#' + message.id, ''],
      [message.method || (message.note ? message.note : message.text.slice(0, 60)), ''],
      [message.latency === null ? '' : formatLatency(message.latency), 'num'],
      [message.size ? message.size + ' B' : '', 'num'],
    ];
    for (const [text, className] of cells) row.append(el('td', className, text));
    row.addEventListener('click', () => select(span ? { span } : { message }));
    message.row = row;
    tbody.append(row);
  });

  // ----- selection and the detail panel -----
  function block(title, text) {
    const wrap = document.createDocumentFragment();
    wrap.append(el('h3', '', title), el('pre', 'json', pretty(text)));
    return wrap;
  }

  function select(what) {
    selected = what;
    const detail = $('detail');
    detail.replaceChildren();
    if (what.span) {
      const span = what.span;
      const request = data.messages[span.request];
      const answer = span.answer === null ? null : data.messages[span.answer];
      detail.append(el('h2', '', `#${span.id} ${span.method}`));
      const took = answer ? `answered after ${formatLatency(span.end - span.start)}` : 'never answered';
      const status = answer && answer.error ? ` · ${answer.error}` : span.status === 'cancelled' ? ' · cancelled' : '';
      detail.append(el('div', 'meta', `${arrow(span.from)} · sent at ${formatTime(span.start)} · ${took}${status}`));
      detail.append(block(`request (${request.size} bytes)`, request.text));
      if (answer) detail.append(block(`answer at ${formatTime(answer.t)} (${answer.size} bytes)`, answer.text));
    } else {
      const message = what.message;
      detail.append(el('h2', '', message.method || message.kind));
      const note = message.note ? ` · ${message.note}` : '';
      detail.append(el('div', 'meta', `${arrow(message.from)} ${message.kind} at ${formatTime(message.t)}${note}`));
      detail.append(block(`${message.kind} (${message.size} bytes)`, message.text));
    }
    highlight();
  }

  function highlight() {
    for (const node of document.querySelectorAll('.selected')) node.classList.remove('selected');
    if (!selected) return;
    const nodes = [];
    if (selected.span) {
      nodes.push(selected.span.node, data.messages[selected.span.request].row);
      if (selected.span.answer !== null) nodes.push(data.messages[selected.span.answer].row);
    } else {
      nodes.push(selected.message.node, selected.message.row);
    }
    for (const node of nodes) if (node) node.classList.add('selected');
  }

  // ----- the filter -----
  const filterBox = $('filter');
  const inText = $('filter-text');

  function globToRegExp(glob) {
    const escaped = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    return new RegExp('^' + escaped + '$', 'i');
  }

  function matcher() {
    const query = filterBox.value.trim();
    if (!query) return null;
    const lower = query.toLowerCase();
    const glob = /[*?]/.test(query) ? globToRegExp(query) : null;
    const byMethod = (method) => !!method && (glob ? glob.test(method) : method.toLowerCase().includes(lower));
    const byText = (text) => inText.checked && !!text && text.toLowerCase().includes(lower);
    return { byMethod, byText };
  }

  function applyFilter() {
    const match = matcher();
    let shown = 0;
    for (const span of data.spans) {
      const request = data.messages[span.request];
      const answer = span.answer === null ? null : data.messages[span.answer];
      const ok = !match || match.byMethod(span.method) || match.byText(request.text) || (answer && match.byText(answer.text));
      if (span.node) span.node.classList.toggle('hidden', !ok);
      span.visible = ok;
      if (ok) shown++;
    }
    data.messages.forEach((message) => {
      let ok;
      if (message.span !== null) ok = data.spans[message.span].visible;
      else ok = !match || match.byMethod(message.method) || match.byText(message.text);
      if (message.node) message.node.classList.toggle('hidden', !ok);
      message.row.classList.toggle('hidden', !ok);
    });
    $('count').textContent = match ? `${shown} of ${data.spans.length} requests` : `${data.spans.length} requests`;
  }

  filterBox.addEventListener('input', applyFilter);
  inText.addEventListener('change', applyFilter);

  // ----- zoom -----
  function setZoom(next, anchor) {
    const before = zoom;
    zoom = Math.min(1e6, Math.max(1, next));
    const pointer = anchor === undefined ? scroller.clientWidth / 2 : anchor;
    const t = (scroller.scrollLeft + pointer - PAD) / (fitScale() * before);
    draw();
    scroller.scrollLeft = PAD + t * fitScale() * zoom - pointer;
  }
  $('zoom-in').addEventListener('click', () => setZoom(zoom * 2));
  $('zoom-out').addEventListener('click', () => setZoom(zoom / 2));
  $('zoom-fit').addEventListener('click', () => setZoom(1));
  scroller.addEventListener(
    'wheel',
    (event) => {
      if (!event.ctrlKey) return;
      event.preventDefault();
      const rect = scroller.getBoundingClientRect();
      setZoom(zoom * (event.deltaY < 0 ? 1.25 : 0.8), event.clientX - rect.left);
    },
    { passive: false },
  );
  window.addEventListener('resize', draw);

  draw();
})();
