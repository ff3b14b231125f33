// The board's script, part 3: the leaders table, the fleet's load charts and its per-instance breakdown. Each chart is
// an inline SVG built with createElementNS (no inline style or handler: the page's strict CSP allows it), coloured by
// board.css. Plain browser JavaScript without a build step, like parts 1 and 2.

/** Functions of board.js: `renderLeaders(snapshot)`, `renderLoad(fleet)`. */
export const BOARD_JS_CHART = String.raw`
  var SVG_NS = 'http://www.w3.org/2000/svg';
  // The plot, then a strip under its axis for the alarm marks (they never cover a line), then the time labels.
  var CHART = { w: 320, h: 112, left: 28, right: 4, top: 6, plot: 72, strip: 12 };
  var LOAD_KINDS = [
    { kind: 'lock', title: 'Locks' },
    { kind: 'semaphore', title: 'Semaphore permits' },
    { kind: 'leader', title: 'Leaderships' }
  ];
  // When the instance keeps no samples (historySampleMs: 0), the page keeps what it saw while open.
  var seenSamples = [];
  // Which series the charts draw: 'all' (the fleet's total) or one instance's id.
  var fleetPick = 'all';

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

  /** −45 s, −4 min, −15 min: how far back the axis starts. */
  function span(ms) {
    return ms < 90000 ? Math.round(ms / 1000) + ' s' : Math.round(ms / 60000) + ' min';
  }

  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }

  /** The points to draw: the series picked, or (no samples kept) the page's own within the window. */
  function loadPoints(fleet, picked) {
    var series = picked ? picked.series : fleet.total;
    var self = fleet.instances.filter(function (i) { return i.self; })[0];
    if (!self || self.sampleMs > 0 || fleet.instances.length > 1) return series.slice();
    var now = series[series.length - 1];
    if (!seenSamples.length || seenSamples[seenSamples.length - 1].at < now.at) seenSamples.push(now);
    while (seenSamples.length && seenSamples[0].at < now.at - fleet.windowMs) seenSamples.shift();
    return seenSamples.slice();
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

  function peak(points, field, kind) {
    var max = 0;
    for (var i = 0; i < points.length; i++) max = Math.max(max, points[i][field][kind]);
    return max;
  }

  /**
   * One kind's chart: holds (solid), waiters (dashed) and holds in doubt (dotted) over the history there is; under the
   * axis, one mark per interval with deadlock alarms (its count in its title).
   */
  function loadChart(spec, points, fleet, who) {
    var kind = spec.kind;
    var start = points.length ? Math.min(fleet.from, points[0].at) : fleet.from;
    var end = fleet.to;
    var peaks = { holds: peak(points, 'holds', kind), waiters: peak(points, 'waiters', kind), inDoubt: peak(points, 'inDoubt', kind) };
    var max = Math.max(1, peaks.holds, peaks.waiters, peaks.inDoubt);
    var width = CHART.w - CHART.left - CHART.right;
    var base = CHART.top + CHART.plot;
    var x = function (t) { return CHART.left + ((t - start) / Math.max(1, end - start)) * width; };
    var y = function (v) { return CHART.top + (1 - v / max) * CHART.plot; };
    var last = points[points.length - 1] || { holds: {}, waiters: {}, inDoubt: {} };
    var now = { holds: last.holds[kind] || 0, waiters: last.waiters[kind] || 0, inDoubt: last.inDoubt[kind] || 0 };
    var held = 0;
    var waited = 0;
    var marks = [];
    for (var i = 0; i < points.length; i++) {
      var h = points[i].heldAlarms[kind];
      var w = points[i].waitAlarms[kind];
      if (!h && !w) continue;
      held += h;
      waited += w;
      var x0 = i > 0 ? x(points[i - 1].at) : x(points[i].at) - 2;
      var x1 = x(points[i].at);
      var parts = [];
      if (h) parts.push(plural(h, 'hold') + ' kept too long');
      if (w) parts.push(plural(w, 'wait') + ' too long');
      marks.push(svg('rect', {
        class: 'alarm-mark' + (w && !h ? ' wait' : ''), 'data-count': h + w, 'data-held': h, 'data-waited': w,
        x: Math.min(x0, x1 - 2).toFixed(1), y: base + 3, width: Math.max(2, x1 - x0).toFixed(1), height: CHART.strip - 4
      }, svg('title', null, plural(h + w, 'deadlock alarm') + ' by ' + clock(new Date(points[i].at).toISOString()) + ': ' + parts.join(', '))));
    }
    var alarmText = held + waited
      ? plural(held + waited, 'deadlock alarm') + ' (' + plural(held, 'hold') + ' kept too long, ' + plural(waited, 'wait') + ' too long)'
      : 'no deadlock alarm';
    var label = spec.title + ' of ' + who + ' over the last ' + span(end - start) + ': holds now ' + now.holds + ' (peak ' + peaks.holds +
      '), waiters now ' + now.waiters + ' (peak ' + peaks.waiters + '), in doubt now ' + now.inDoubt + ' (peak ' + peaks.inDoubt + '), ' + alarmText;
    var bottom = base + CHART.strip;
    var root = svg('svg', { class: 'chart', viewBox: '0 0 ' + CHART.w + ' ' + CHART.h, role: 'img', 'aria-label': label },
      svg('line', { class: 'axis', x1: CHART.left, y1: base, x2: CHART.w - CHART.right, y2: base }),
      svg('line', { class: 'axis', x1: CHART.left, y1: CHART.top, x2: CHART.left, y2: base }),
      svg('line', { class: 'strip', x1: CHART.left, y1: bottom, x2: CHART.w - CHART.right, y2: bottom }),
      svg('text', { x: CHART.left - 3, y: CHART.top + 8, 'text-anchor': 'end' }, String(max)),
      svg('text', { x: CHART.left - 3, y: base, 'text-anchor': 'end' }, '0'),
      svg('text', { x: CHART.left - 3, y: bottom - 2, 'text-anchor': 'end', class: 'strip-label' }, '!'),
      svg('text', { x: CHART.left, y: CHART.h - 3 }, '−' + span(end - start)),
      svg('text', { x: CHART.w - CHART.right, y: CHART.h - 3, 'text-anchor': 'end' }, 'now'));
    root.append(polyline(points, kind, 'holds', x, y, 'holds'), polyline(points, kind, 'waiters', x, y, 'waiters'),
      polyline(points, kind, 'inDoubt', x, y, 'in-doubt'));
    for (var m = 0; m < marks.length; m++) root.append(marks[m]);
    var caption = el('figcaption', null,
      el('strong', null, spec.title), ' ',
      el('span', { class: 'legend holds', 'data-now': now.holds }, 'holds ' + now.holds), ' ',
      el('span', { class: 'legend waiters', 'data-now': now.waiters }, 'waiters ' + now.waiters), ' ',
      el('span', { class: 'legend in-doubt', 'data-now': now.inDoubt }, 'in doubt ' + now.inDoubt),
      held + waited ? el('span', { class: 'legend alarms', 'data-held': held, 'data-waited': waited }, ' · ' + alarmText) : null);
    return el('figure', { class: 'load-chart', id: 'chart-' + kind, 'data-kind': kind }, root, caption);
  }

  function instanceName(i) {
    return i.host + ' pid ' + i.pid + (i.app ? ' · ' + i.app : '') + (i.self ? ' (answered)' : '');
  }

  function sum(counts) { return counts.lock + counts.semaphore + counts.leader; }

  /** The instances behind the charts: one row each, and the picker of the series drawn. */
  function renderFleetTable(fleet) {
    var rows = byId('fleet-rows');
    clear(rows);
    var pick = byId('fleet-pick');
    var keep = fleetPick;
    clear(pick);
    pick.append(el('option', { value: 'all' }, 'All instances (' + fleet.instances.length + ')'));
    for (var i = 0; i < fleet.instances.length; i++) {
      var inst = fleet.instances[i];
      pick.append(el('option', { value: inst.id }, instanceName(inst)));
      rows.append(el('tr', { 'data-instance': inst.id, class: inst.id === fleetPick ? 'selected' : '' },
        el('th', { scope: 'row' }, instanceName(inst)),
        el('td', { class: 'num' }, String(sum(inst.now.holds))),
        el('td', { class: 'num' }, String(sum(inst.now.waiters))),
        el('td', { class: 'num' }, String(sum(inst.now.inDoubt))),
        el('td', { class: 'num' }, String(sum(inst.now.heldAlarms) + sum(inst.now.waitAlarms))),
        el('td', { class: 'num' }, inst.self ? 'now' : duration(fleet.to - inst.lastAt) + ' ago')));
    }
    pick.value = keep;
  }

  /** The three charts, of the fleet's total or of the instance picked, and the breakdown per instance. */
  function renderLoad(fleet) {
    var charts = byId('charts');
    if (!fleet || !fleet.total || !fleet.total.length) { byId('load').hidden = true; return; }
    byId('load').hidden = false;
    var picked = null;
    for (var i = 0; i < fleet.instances.length; i++) if (fleet.instances[i].id === fleetPick) picked = fleet.instances[i];
    if (!picked) fleetPick = 'all';
    renderFleetTable(fleet);
    var points = loadPoints(fleet, picked);
    var who = picked ? instanceName(picked) : plural(fleet.instances.length, 'instance');
    clear(charts);
    for (var k = 0; k < LOAD_KINDS.length; k++) charts.append(loadChart(LOAD_KINDS[k], points, fleet, who));
    var firstAt = Math.min(fleet.from, points.length ? points[0].at : fleet.from);
    var whose = picked ? instanceName(picked) : 'the fleet';
    byId('load-title').textContent = 'Holds and waiters of ' + whose + ', last ' + span(fleet.to - firstAt);
    var error = byId('fleet-error');
    error.hidden = !fleet.error;
    error.textContent = fleet.error ? 'Only this instance is shown: ' + fleet.error + '.' : '';
    byId('load-note').textContent =
      'Solid: holds, dashed: waiters, dotted: holds in doubt; ' +
      'red marks under the axis: deadlock alarms per interval (hover for the count). ' +
      (fleet.instances.length > 1 || fleet.instances[0].sampleMs > 0
        ? 'Each instance publishes a sample every ' + duration(fleet.stepMs) + '.'
        : 'Sampled by this page while open (the instance keeps no history).');
  }

  function pickInstance() {
    fleetPick = byId('fleet-pick').value || 'all';
    if (state.view) renderLoad(state.view.fleet);
  }
`;
