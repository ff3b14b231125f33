// The board's script, part 3: the leaders table and the load charts. Each chart is an inline SVG built with
// createElementNS (no inline style or handler: the page's strict CSP allows it), coloured by board.css. Plain
// browser JavaScript without a build step, like parts 1 and 2.

/** Functions of board.js: `renderLeaders(snapshot)`, `renderLoad(load)`. */
export const BOARD_JS_CHART = String.raw`
  var SVG_NS = 'http://www.w3.org/2000/svg';
  var CHART = { w: 320, h: 96, left: 28, right: 4, top: 6, bottom: 16 };
  var LOAD_KINDS = [
    { kind: 'lock', title: 'Locks' },
    { kind: 'semaphore', title: 'Semaphore permits' },
    { kind: 'leader', title: 'Leaderships' }
  ];
  // When the instance keeps no samples (historySampleMs: 0), the page keeps what it saw while open.
  var seenSamples = [];

  function svg(tag, attrs) {
    var node = doc.createElementNS(SVG_NS, tag);
    var names = Object.keys(attrs || {});
    for (var i = 0; i < names.length; i++) node.setAttribute(names[i], String(attrs[names[i]]));
    for (var j = 2; j < arguments.length; j++) if (arguments[j] !== null && arguments[j] !== undefined) node.append(arguments[j]);
    return node;
  }

  function leaderRow(l) {
    return el('tr', { 'data-leader': l.name },
      el('th', { scope: 'row', class: 'key' }, l.name),
      el('td', null, l.owner + (l.app ? ' · ' + l.app : '') + ' · ' + l.host + ' pid ' + l.pid),
      el('td', { class: 'num mono' }, String(l.term)),
      el('td', null, new Date(l.since).toLocaleString() + ' (' + duration(l.heldMs) + ')'),
      el('td', { class: 'num' }, duration(l.remainingLeaseMs)),
      el('td', { class: 'num' }, String(l.standbys)));
  }

  /** The leaders of the snapshot: name, holder, term, since; the section is hidden when there is none. */
  function renderLeaders(snapshot) {
    var leaders = snapshot.leaders || [];
    var rows = byId('leader-rows');
    clear(rows);
    for (var i = 0; i < leaders.length; i++) rows.append(leaderRow(leaders[i]));
    byId('leaders-section').hidden = leaders.length === 0;
  }

  /** The samples to draw: the instance's ring (plus the numbers now), or the page's own, within the window. */
  function loadSamples(load) {
    var since = load.now.at - load.windowMs;
    var points;
    if (load.sampleMs > 0) {
      points = load.samples.slice();
      if (!points.length || points[points.length - 1].at < load.now.at) points.push(load.now);
    } else {
      if (!seenSamples.length || seenSamples[seenSamples.length - 1].at < load.now.at) seenSamples.push(load.now);
      while (seenSamples.length && seenSamples[0].at < since) seenSamples.shift();
      points = seenSamples.slice();
    }
    return points.filter(function (p) { return p.at >= since && p.at <= load.now.at; });
  }

  function polyline(points, kind, field, x, y, cls) {
    var coords = [];
    for (var i = 0; i < points.length; i++) {
      // A step line: a count holds until the next sample.
      if (i > 0) coords.push(x(points[i].at).toFixed(1) + ',' + y(points[i - 1][field][kind]).toFixed(1));
      coords.push(x(points[i].at).toFixed(1) + ',' + y(points[i][field][kind]).toFixed(1));
    }
    return svg('polyline', { class: cls, points: coords.join(' ') });
  }

  /** One kind's chart: holds (solid) and waiters (dashed) over the window, a mark at each alarm of that kind. */
  function loadChart(spec, points, load) {
    var kind = spec.kind;
    var end = load.now.at;
    var start = end - load.windowMs;
    var max = 1;
    var peakHolds = 0;
    var peakWaiters = 0;
    for (var i = 0; i < points.length; i++) {
      peakHolds = Math.max(peakHolds, points[i].holds[kind]);
      peakWaiters = Math.max(peakWaiters, points[i].waiters[kind]);
    }
    max = Math.max(max, peakHolds, peakWaiters);
    var width = CHART.w - CHART.left - CHART.right;
    var height = CHART.h - CHART.top - CHART.bottom;
    var x = function (t) { return CHART.left + ((t - start) / load.windowMs) * width; };
    var y = function (v) { return CHART.top + (1 - v / max) * height; };
    var alarms = load.alarms.filter(function (a) { return a.kind === kind && a.at >= start; });
    var holdsNow = load.now.holds[kind];
    var waitersNow = load.now.waiters[kind];
    var label = spec.title + ' of this instance over the last ' + Math.round(load.windowMs / 60000) + ' minutes: ' +
      'holds now ' + holdsNow + ' (peak ' + peakHolds + '), waiters now ' + waitersNow + ' (peak ' + peakWaiters + ')' +
      (alarms.length ? ', ' + alarms.length + ' deadlock alarm' + (alarms.length === 1 ? '' : 's') : '');
    var root = svg('svg', { class: 'chart', viewBox: '0 0 ' + CHART.w + ' ' + CHART.h, role: 'img', 'aria-label': label },
      svg('line', { class: 'axis', x1: CHART.left, y1: y(0), x2: CHART.w - CHART.right, y2: y(0) }),
      svg('line', { class: 'axis', x1: CHART.left, y1: CHART.top, x2: CHART.left, y2: y(0) }),
      svg('text', { x: CHART.left - 3, y: CHART.top + 8, 'text-anchor': 'end' }, String(max)),
      svg('text', { x: CHART.left - 3, y: y(0), 'text-anchor': 'end' }, '0'),
      svg('text', { x: CHART.left, y: CHART.h - 3 }, '−' + Math.round(load.windowMs / 60000) + ' min'),
      svg('text', { x: CHART.w - CHART.right, y: CHART.h - 3, 'text-anchor': 'end' }, 'now'));
    // The marks over the lines, so a line at the same place never hides one.
    root.append(polyline(points, kind, 'holds', x, y, 'holds'), polyline(points, kind, 'waiters', x, y, 'waiters'));
    for (var a = 0; a < alarms.length; a++) {
      var at = x(alarms[a].at).toFixed(1);
      root.append(svg('line', { class: 'alarm-mark', 'data-key': alarms[a].key, x1: at, y1: CHART.top, x2: at, y2: y(0) },
        svg('title', null, 'Deadlock alarm at ' + clock(new Date(alarms[a].at).toISOString()) + ': ' + alarms[a].key +
          (alarms[a].detectedBy === 'holder' ? ' held too long' : ' waited too long'))));
    }
    var caption = el('figcaption', null,
      el('strong', null, spec.title), ' ',
      el('span', { class: 'legend holds', 'data-now': holdsNow }, 'holds ' + holdsNow), ' ',
      el('span', { class: 'legend waiters', 'data-now': waitersNow }, 'waiters ' + waitersNow),
      alarms.length ? el('span', { class: 'legend alarms' }, ' · ' + alarms.length + ' alarm' + (alarms.length === 1 ? '' : 's')) : null);
    return el('figure', { class: 'load-chart', id: 'chart-' + kind, 'data-kind': kind }, root, caption);
  }

  /** The three charts of this instance's holds and waiters per kind. */
  function renderLoad(load) {
    var charts = byId('charts');
    if (!load || !load.now) { byId('load').hidden = true; return; }
    byId('load').hidden = false;
    var points = loadSamples(load);
    clear(charts);
    for (var i = 0; i < LOAD_KINDS.length; i++) charts.append(loadChart(LOAD_KINDS[i], points, load));
    byId('load-note').textContent = load.sampleMs > 0
      ? 'Sampled by the instance that answered, every ' + duration(load.sampleMs) + '; solid: holds, dashed: waiters, red marks: deadlock alarms.'
      : 'Sampled by this page while open (the instance keeps no history); solid: holds, dashed: waiters, red marks: deadlock alarms.';
  }
`;
