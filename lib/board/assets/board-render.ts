// The board's script, part 1: formatting and DOM building. Every value reaches the page as a text node
// (`el` appends strings with `append`, never as HTML), so a key such as `<img src=x onerror=alert(1)>` stays text.
// Plain browser JavaScript without a build step: no template literals (this file is one), no `innerHTML`.

/** Helpers of board.js: `el`, `duration`, `clock`, row and list builders. */
export const BOARD_JS_RENDER = String.raw`
  var doc = document;
  function byId(id) { return doc.getElementById(id); }

  /** An element with attributes and children; strings become text nodes. */
  function el(tag, attrs) {
    var node = doc.createElement(tag);
    var names = Object.keys(attrs || {});
    for (var i = 0; i < names.length; i++) {
      var name = names[i];
      var value = attrs[name];
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'text') node.textContent = String(value);
      else node.setAttribute(name, String(value));
    }
    for (var j = 2; j < arguments.length; j++) {
      var child = arguments[j];
      if (child === undefined || child === null) continue;
      node.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  /** 850 ms, 12.3 s, 5 min 3 s, 2 h 5 min, 3 d 4 h. */
  function duration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    var s = Math.floor(ms / 1000);
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }

  function clock(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString();
  }

  function oldest(holders) {
    var max = null;
    for (var i = 0; i < holders.length; i++) if (max === null || holders[i].heldMs > max) max = holders[i].heldMs;
    return max;
  }

  function shortestLease(holders) {
    var min = null;
    for (var i = 0; i < holders.length; i++) if (min === null || holders[i].remainingLeaseMs < min) min = holders[i].remainingLeaseMs;
    return min;
  }

  function holderText(h) {
    var who = h.owner + (h.app ? ' · ' + h.app : '') + ' · ' + h.host + ' pid ' + h.pid;
    var count = h.finished ? ' (finished, kept for holdAtLeastMs)' : h.holdCount > 1 ? ' ×' + h.holdCount : '';
    return (h.mode === 'read' ? 'read: ' : 'write: ') + who + count;
  }

  /** A holder of the table, with its state when it is in doubt (its instance cannot confirm it with Redis now). */
  function holderItem(entry, h, doubt) {
    var inDoubt = doubt && doubt[entry.key + ' ' + h.owner];
    return el('li', { class: inDoubt ? 'in-doubt' : null, 'data-state': inDoubt ? 'in-doubt' : 'held' }, holderText(h),
      inDoubt ? el('span', { class: 'badge doubt', title: 'Its instance cannot reach Redis to confirm the hold: it may be lost' }, 'in doubt') : null);
  }

  function alarmBadges(entry, view) {
    var out = [];
    if (entry.alarms.heldTooLong) out.push(el('span', { class: 'badge', text: 'held > ' + duration(view.snapshot.holdWarningMs) }));
    if (entry.alarms.waitedTooLong) out.push(el('span', { class: 'badge', text: 'waiting > ' + duration(view.snapshot.waitWarningMs) }));
    return out;
  }

  function waitingText(entry) {
    if (!entry.waiting) return '0';
    var parts = entry.waitingWriters + ' writer' + (entry.waitingWriters === 1 ? '' : 's') + ', ' +
      entry.waitingReaders + ' reader' + (entry.waitingReaders === 1 ? '' : 's');
    var age = entry.oldestWaitMs === null ? '' :
      '; oldest ' + duration(entry.oldestWaitMs) + (entry.oldestWaitSource === 'fair-queue' ? ', fair queue' : ', this instance');
    return entry.waiting + ' (' + parts + ')' + age;
  }

  /** One row of the main table; the key is a button that opens the detail view. */
  function entryRow(entry, view, selected, open, doubt) {
    var holders = el('ul', { class: 'holders' });
    for (var i = 0; i < entry.holders.length; i++) holders.append(holderItem(entry, entry.holders[i], doubt));
    var keyButton = el('button', { type: 'button', class: 'link key', 'aria-label': 'Details of ' + entry.kind + ' ' + entry.key }, entry.key);
    keyButton.addEventListener('click', function () { open(entry.kind, entry.key); });
    var alarmed = entry.alarms.heldTooLong || entry.alarms.waitedTooLong;
    var row = el('tr', { class: (alarmed ? 'alarm' : '') + (selected ? ' selected' : ''), 'data-key': entry.key, 'data-kind': entry.kind },
      el('td', null, entry.kind),
      el('th', { scope: 'row' }, keyButton),
      el('td', null, entry.mode),
      el('td', null, holders),
      el('td', { class: 'num' }, duration(oldest(entry.holders))),
      el('td', { class: 'num' }, duration(shortestLease(entry.holders))),
      el('td', { class: 'num mono' }, String(entry.fencingToken)),
      el('td', null, waitingText(entry)));
    var alarms = el('td', null);
    var badges = alarmBadges(entry, view);
    for (var b = 0; b < badges.length; b++) alarms.append(badges[b]);
    row.append(alarms);
    return row;
  }

  function holderRow(h) {
    return el('tr', null,
      el('td', null, h.mode),
      el('td', { class: 'mono' }, h.owner),
      el('td', null, h.app || '–'),
      el('td', null, h.host),
      el('td', { class: 'num' }, String(h.pid)),
      el('td', { class: 'num' }, h.finished ? '0 (finished)' : String(h.holdCount)),
      el('td', null, new Date(h.since).toLocaleString()),
      el('td', { class: 'num' }, duration(h.heldMs)),
      el('td', { class: 'num' }, duration(h.remainingLeaseMs)),
      el('td', { class: 'num mono' }, String(h.fencingToken)));
  }

  function eventItem(e) {
    return el('li', null,
      el('span', { class: 'mono' }, clock(e.at)), ' ',
      el('span', { class: 'type ' + e.type }, e.type), ' ',
      el('span', { class: 'key' }, e.key), ' (' + e.mode + ') by ', el('span', { class: 'mono' }, e.owner || '?'),
      ', ' + e.detail + ' · seen by ' + e.host + ' pid ' + e.pid);
  }
`;
