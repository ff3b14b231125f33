// The board's script, part 2: refresh, filter, detail view and force release. Served as board.js with part 1
// (board-render.ts) in one function scope. URLs relative to the page only, resolved without the credentials of the
// page's address: the page works behind a proxy that adds or strips a path prefix. Polls about once per `refreshMs`
// (the server shares one snapshot per interval among all viewers), and not at all while the tab is hidden or paused.
import { BOARD_JS_CHART } from './board-chart.js';
import { BOARD_JS_RENDER } from './board-render.js';

const BOARD_JS_MAIN = String.raw`
  var state = {
    filter: '', view: null, paused: false, selected: null, releaseScope: null,
    timer: null, inFlight: false, lastGood: null, lastView: null, refreshMs: 1000,
  };
  var REQUEST_TIMEOUT_MS = 10000;

  // A path relative to the page, resolved without the user name and password of the page's address (opened as
  // http://user:password@host/…, a relative fetch would carry them, and fetch refuses such a URL). The page's own
  // path stays the base, so a prefix a proxy added is kept.
  function pageUrl(path) {
    return new URL(path, location.origin + location.pathname).href;
  }

  function getJson(path, init) {
    var url = pageUrl(path);
    var controller = new AbortController();
    var timer = setTimeout(function () { controller.abort(); }, REQUEST_TIMEOUT_MS);
    var options = Object.assign(
      { cache: 'no-store', credentials: 'same-origin', signal: controller.signal, headers: { Accept: 'application/json' } },
      init || {}
    );
    return fetch(url, options).then(function (res) {
      return res.text().then(function (body) {
        var data = null;
        try { data = body ? JSON.parse(body) : null; } catch { data = null; }
        return { status: res.status, ok: res.ok, data: data };
      });
    }).finally(function () { clearTimeout(timer); });
  }

  function showError(message) {
    var box = byId('error');
    if (!message) { box.hidden = true; clear(box); return; }
    clear(box);
    box.append(message);
    if (state.lastGood) box.append(el('span', { class: 'muted' }, ' The table shows the last data read, at ' + clock(state.lastGood) + '.'));
    box.hidden = false;
  }

  /** The holds in doubt of the view, as 'key owner' strings (this instance's now, the others' at their last sample). */
  function doubtOf(view) {
    var out = {};
    var list = view.inDoubt || [];
    for (var i = 0; i < list.length; i++) out[list[i].key + ' ' + list[i].owner] = true;
    return out;
  }

  function render(view) {
    var snapshot = view.snapshot;
    // The keys as the application names them: the prefix's hash-tag brace is the library's business.
    byId('prefix').textContent = snapshot.keyPrefix;
    var filtered = byId('prefix-filter');
    filtered.textContent = '';
    if (snapshot.filter) filtered.append(' whose key starts with ', el('code', {}, snapshot.filter));
    byId('instance').textContent =
      'Answered by ' + view.instance.host + ' pid ' + view.instance.pid + (view.instance.app ? ' (' + view.instance.app + ')' : '');
    var rows = byId('rows');
    // The rows are redrawn: a key that has the keyboard focus keeps it (on its new row).
    var active = doc.activeElement;
    var focusRow = active && rows.contains(active) ? active.closest('tr') : null;
    var focusOn = focusRow && { kind: focusRow.getAttribute('data-kind'), key: focusRow.getAttribute('data-key') };
    clear(rows);
    var alarms = 0;
    for (var i = 0; i < snapshot.entries.length; i++) {
      var entry = snapshot.entries[i];
      if (entry.alarms.heldTooLong || entry.alarms.waitedTooLong) alarms++;
      var selected = state.selected && state.selected.kind === entry.kind && state.selected.key === entry.key;
      var row = entryRow(entry, view, selected, openDetail, doubtOf(view));
      rows.append(row);
      if (focusOn && focusOn.kind === entry.kind && focusOn.key === entry.key) row.querySelector('button').focus();
    }
    byId('empty').hidden = snapshot.entries.length > 0 || !!snapshot.error;
    byId('empty').textContent = snapshot.filter ? 'Nothing held under this prefix.' : 'Nothing is held.';
    var summary = byId('summary');
    clear(summary);
    summary.append(snapshot.entries.length + ' held' + (snapshot.filter ? ' under this prefix' : '') + '.');
    if (alarms) summary.append(' ', el('span', { class: 'warn' }, alarms + ' flagged by the deadlock alarm.'));
    if (snapshot.more > 0) summary.append(' ', el('span', { class: 'warn' }, (snapshot.cut ? 'At least ' : '') + snapshot.more + ' more, narrow the filter.'));
    if (snapshot.cut === 'max-keys') summary.append(' ', el('span', { class: 'muted' }, 'The scan stopped there: the locks shown are the first it met.'));
    if (snapshot.cut === 'time-budget' && !snapshot.error)
      summary.append(' ', el('span', { class: 'warn' }, 'The scan stopped at its time budget: some keys may be missing; narrow the filter.'));
    for (var f = 0; f < snapshot.failures.length; f++) {
      var failure = snapshot.failures[f];
      summary.append(' ', el('span', { class: 'warn' }, 'Master ' + failure.master + ' could not be scanned: ' + failure.error + '.'));
    }
    renderLeaders(snapshot);
    renderLoad(view.fleet);
    var events = byId('events');
    clear(events);
    for (var k = 0; k < view.events.length; k++) events.append(eventItem(view.events[k]));
    if (!view.events.length) events.append(el('li', { class: 'muted' }, 'No event yet.'));
  }

  function refresh() {
    clearTimeout(state.timer);
    state.timer = null;
    if (state.inFlight) return;
    state.inFlight = true;
    getJson('api/view?filter=' + encodeURIComponent(state.filter)).then(function (res) {
      if (res.status === 401 || res.status === 403) {
        showError('Not authorised to read the lock board (HTTP ' + res.status + '): sign in again or ask for access.');
        return;
      }
      if (!res.data || !res.data.snapshot) {
        showError('The lock board did not answer (HTTP ' + res.status + ').');
        return;
      }
      state.view = res.data;
      state.refreshMs = res.data.refreshMs || state.refreshMs;
      if (res.data.snapshot.error) {
        var error = res.data.snapshot.error;
        showError(/^Redis cannot be reached/.test(error) ? error : 'Redis cannot be read: ' + error);
        byId('locks').classList.add('stale');
        // The last table read, its holders marked with what this instance knows now (holds in doubt), and the charts.
        if (state.lastView) render(Object.assign({}, state.lastView, { fleet: res.data.fleet, inDoubt: res.data.inDoubt || [] }));
      } else {
        state.lastView = res.data;
        state.lastGood = res.data.snapshot.takenAt;
        showError(null);
        byId('locks').classList.remove('stale');
        render(res.data);
      }
      byId('status').textContent = 'Updated ' + clock(res.data.snapshot.takenAt) + (state.paused ? ' (paused)' : '');
      if (state.selected) return loadDetail();
    }).catch(function (err) {
      var why = err && err.name === 'AbortError' ? 'no answer within ' + REQUEST_TIMEOUT_MS / 1000 + ' s' : String(err && err.message || err);
      showError('The lock board cannot be reached: ' + why + '.');
    }).finally(function () {
      state.inFlight = false;
      schedule();
    });
  }

  function schedule() {
    clearTimeout(state.timer);
    state.timer = null;
    if (state.paused || doc.hidden) return;
    state.timer = setTimeout(refresh, state.refreshMs);
  }

  function openDetail(kind, key) {
    state.selected = { kind: kind, key: key };
    byId('action-result').textContent = '';
    byId('detail').hidden = false;
    loadDetail().then(function () { byId('detail-title').focus(); });
  }

  function closeDetail() {
    var key = state.selected && state.selected.key;
    state.selected = null;
    byId('detail').hidden = true;
    var rows = byId('rows').querySelectorAll('tr');
    for (var i = 0; i < rows.length; i++) {
      rows[i].classList.remove('selected');
      if (rows[i].getAttribute('data-key') === key) rows[i].querySelector('button').focus();
    }
  }

  function loadDetail() {
    var sel = state.selected;
    byId('detail-title').textContent = sel.kind + ' ' + sel.key;
    return getJson('api/detail?kind=' + encodeURIComponent(sel.kind) + '&key=' + encodeURIComponent(sel.key)).then(function (res) {
      if (state.selected !== sel) return;
      var summary = byId('detail-summary');
      var rows = byId('detail-rows');
      clear(rows);
      var entry = res.data && res.data.entry;
      var release = byId('release');
      release.hidden = !(state.view && state.view.allowForceRelease && entry);
      if (!res.ok) { summary.textContent = 'Could not read it: ' + (res.data && res.data.error || 'HTTP ' + res.status); return; }
      if (!entry) { summary.textContent = 'Not held now.'; return; }
      summary.textContent = 'Mode ' + entry.mode + ', fencing token ' + entry.fencingToken + ', waiting ' + waitingText(entry) + '.';
      release.textContent = entry.kind === 'semaphore' ? 'Force release every permit' : 'Force release';
      for (var i = 0; i < entry.holders.length; i++) {
        var row = holderRow(entry.holders[i]);
        // A semaphore's holders can be freed one by one (by owner id: the board never sees a token).
        if (entry.kind === 'semaphore' && !release.hidden) {
          var one = el('button', { type: 'button', class: 'release-one', 'data-owner': entry.holders[i].owner }, 'Release this permit');
          one.addEventListener('click', askRelease.bind(null, entry.holders[i].owner));
          row.children[1].append(' ', one);
        }
        rows.append(row);
      }
    }).catch(function () { byId('detail-summary').textContent = 'Could not read it: the lock board cannot be reached.'; });
  }

  function askRelease(owner) {
    var sel = state.selected;
    if (!sel) return;
    state.releaseScope = typeof owner === 'string' ? owner : null;
    var dialog = byId('confirm');
    byId('confirm-text').textContent = state.releaseScope
      ? 'Free the permit of ' + state.releaseScope + ' on semaphore "' + sel.key + '" now? ' +
        'Its holder finds out at its next renewal; work it still does is no longer protected.'
      : 'Free ' + sel.kind + ' "' + sel.key + '" now, whoever holds it? Its holders find out at their next renewal; work they still do is no longer protected.';
    dialog.returnValue = '';
    dialog.showModal();
    byId('confirm-cancel').focus();
  }

  function release() {
    var sel = state.selected;
    byId('confirm').close('release');
    if (!sel) return;
    var result = byId('action-result');
    result.textContent = 'Releasing…';
    getJson('api/force-release', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Lock-Board': 'force-release' },
      body: JSON.stringify(state.releaseScope ? { kind: sel.kind, key: sel.key, scope: state.releaseScope } : { kind: sel.kind, key: sel.key })
    }).then(function (res) {
      if (res.ok) result.textContent = res.data.released ? 'Released "' + sel.key + '".' : '"' + sel.key + '" was not held.';
      else result.textContent = 'Refused (HTTP ' + res.status + '): ' + (res.data && res.data.error || 'no reason given');
      refresh();
    }).catch(function (err) { result.textContent = 'Failed: ' + String(err && err.message || err); });
  }

  function start() {
    var params = new URLSearchParams(location.search);
    state.filter = params.get('filter') || '';
    var input = byId('filter');
    input.value = state.filter;
    var debounce = null;
    input.addEventListener('input', function () {
      clearTimeout(debounce);
      debounce = setTimeout(function () {
        state.filter = input.value;
        var query = state.filter ? '?filter=' + encodeURIComponent(state.filter) : location.pathname.split('/').pop();
        history.replaceState(null, '', query);
        refresh();
      }, 250);
    });
    byId('pause').addEventListener('click', function () {
      state.paused = !state.paused;
      this.setAttribute('aria-pressed', String(state.paused));
      this.textContent = state.paused ? 'Resume' : 'Pause';
      if (state.paused) schedule(); else refresh();
    });
    byId('fleet-pick').addEventListener('change', pickInstance);
    byId('detail-close').addEventListener('click', closeDetail);
    byId('release').addEventListener('click', function () { askRelease(null); });
    byId('confirm-cancel').addEventListener('click', function () { byId('confirm').close('cancel'); });
    byId('confirm-release').addEventListener('click', release);
    doc.addEventListener('visibilitychange', function () { if (!doc.hidden) refresh(); });
    refresh();
  }

  if (doc.readyState === 'loading') doc.addEventListener('DOMContentLoaded', start);
  else start();
`;

/** `board.js` of the board: the three parts in one function scope. */
export const BOARD_JS = `'use strict';\n(function () {\n${BOARD_JS_RENDER}\n${BOARD_JS_CHART}\n${BOARD_JS_MAIN}\n})();\n`;
