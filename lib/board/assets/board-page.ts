// The board's page. No inline script or style (it must work under a strict Content-Security-Policy), relative URLs
// only (it must work behind a proxy that adds or strips a path prefix), nothing from elsewhere (it works offline).

/** `favicon.svg` of the board: a padlock (the browser asks for an icon; without one its console shows a 404). */
export const BOARD_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">
<path d="M4 7V5a4 4 0 0 1 8 0v2" fill="none" stroke="#57606a" stroke-width="2"/>
<rect x="2" y="7" width="12" height="8" rx="1.5" fill="#0969da"/></svg>
`;

/** `index.html` of the board. */
export const BOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Locks</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="board.css">
<script src="board.js" defer></script>
</head>
<body>
<header class="top">
  <h1>Locks</h1>
  <p id="instance" class="muted"></p>
  <p id="status" class="muted" role="status" aria-live="polite">Loading…</p>
</header>
<main>
  <noscript><p class="banner">The lock board needs JavaScript. The same data is served as JSON at <a href="api/snapshot">api/snapshot</a>.</p></noscript>
  <div id="error" class="banner" role="alert" hidden></div>
  <div class="controls" role="search">
    <label for="filter">Key prefix</label>
    <input id="filter" type="search" autocomplete="off" spellcheck="false" placeholder="e.g. article:">
    <button type="button" id="pause" aria-pressed="false">Pause</button>
  </div>
  <p id="summary" class="summary"></p>
  <section id="load" class="load" aria-labelledby="load-title" hidden>
    <h2 id="load-title">Holds and waiters of the fleet</h2>
    <div class="controls">
      <label for="fleet-pick">Show</label>
      <select id="fleet-pick"><option value="all">All instances</option></select>
    </div>
    <p id="fleet-error" class="warn" role="status" hidden></p>
    <p id="load-note" class="muted"></p>
    <div id="charts" class="charts"></div>
    <details id="fleet" class="fleet">
      <summary>Instances behind the charts</summary>
      <div class="scroll" tabindex="0" aria-labelledby="fleet-caption">
        <table id="fleet-table">
          <caption id="fleet-caption">Instances publishing their samples (numbers at their last sample; alarms over the window)</caption>
          <thead>
            <tr>
              <th scope="col">Instance</th>
              <th scope="col">Holds</th>
              <th scope="col">Waiters</th>
              <th scope="col">In doubt</th>
              <th scope="col">Alarms</th>
              <th scope="col">Last sample</th>
            </tr>
          </thead>
          <tbody id="fleet-rows"></tbody>
        </table>
      </div>
    </details>
  </section>
  <section id="leaders-section" aria-labelledby="leaders-caption" hidden>
    <div class="scroll" tabindex="0" aria-labelledby="leaders-caption">
      <table id="leaders">
        <caption id="leaders-caption">Leaders</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Holder</th>
            <th scope="col">Term</th>
            <th scope="col">Since</th>
            <th scope="col">Lease left</th>
            <th scope="col">Standbys</th>
          </tr>
        </thead>
        <tbody id="leader-rows"></tbody>
      </table>
    </div>
  </section>
  <div class="scroll" tabindex="0" aria-labelledby="locks-caption">
    <table id="locks">
      <caption id="locks-caption">Held locks under <code id="prefix"></code><span id="prefix-filter"></span></caption>
      <thead>
        <tr>
          <th scope="col">Kind</th>
          <th scope="col">Key</th>
          <th scope="col">Mode</th>
          <th scope="col">Holders</th>
          <th scope="col">Held for</th>
          <th scope="col">Lease left</th>
          <th scope="col">Fencing token</th>
          <th scope="col">Waiting</th>
          <th scope="col">Alarms</th>
        </tr>
      </thead>
      <tbody id="rows"></tbody>
    </table>
  </div>
  <p id="empty" class="muted" hidden>Nothing is held.</p>
  <section id="detail" class="detail" aria-labelledby="detail-title" hidden>
    <div class="detail-head">
      <h2 id="detail-title" tabindex="-1"></h2>
      <button type="button" id="detail-close">Close</button>
    </div>
    <p id="detail-summary"></p>
    <div class="scroll" tabindex="0" aria-labelledby="detail-title">
      <table id="detail-holders">
        <caption>Holders</caption>
        <thead>
          <tr>
            <th scope="col">Mode</th>
            <th scope="col">Owner</th>
            <th scope="col">App</th>
            <th scope="col">Host</th>
            <th scope="col">PID</th>
            <th scope="col">Hold count</th>
            <th scope="col">Since</th>
            <th scope="col">Held for</th>
            <th scope="col">Lease left</th>
            <th scope="col">Fencing token</th>
          </tr>
        </thead>
        <tbody id="detail-rows"></tbody>
      </table>
    </div>
    <p id="detail-actions"><button type="button" id="release" class="danger" hidden>Force release…</button></p>
    <p id="action-result" role="status" aria-live="polite"></p>
  </section>
  <section class="events" aria-labelledby="events-title">
    <h2 id="events-title">Recent events</h2>
    <p class="muted">Seen by the instance that answered the last refresh (behind a load balancer, each refresh may reach another).</p>
    <ol id="events"></ol>
  </section>
</main>
<dialog id="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-text">
  <h2 id="confirm-title">Force release?</h2>
  <p id="confirm-text"></p>
  <div class="dialog-buttons">
    <button type="button" id="confirm-cancel">Cancel</button>
    <button type="button" id="confirm-release" class="danger">Force release</button>
  </div>
</dialog>
</body>
</html>
`;
