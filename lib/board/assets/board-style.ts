// The board's style sheet, served as board.css (no inline style: the page works under a strict CSP).

/** `board.css` of the board. */
export const BOARD_CSS = `:root {
  color-scheme: light dark;
  --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --line: #d0d7de; --head: #f6f8fa;
  --alarm-bg: #fff1e5; --alarm-line: #bc4c00; --error-bg: #ffebe9; --error-line: #cf222e; --focus: #0969da;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --line: #30363d; --head: #161b22;
    --alarm-bg: #3d2200; --alarm-line: #f0883e; --error-bg: #490202; --error-line: #ff7b72; --focus: #58a6ff;
  }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header.top, main { padding: 0 1.25rem; max-width: 120rem; margin: 0 auto; }
header.top { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 1.25rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.4rem; margin: 0.8rem 0; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 0.4rem; }
.muted { color: var(--muted); margin: 0.3rem 0; }
code, .key, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
.banner { margin: 0.8rem 0; padding: 0.6rem 0.8rem; border-left: 4px solid var(--error-line); background: var(--error-bg); font-weight: 600; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin: 0.9rem 0 0.3rem; }
.controls input { font: inherit; padding: 0.3rem 0.5rem; min-width: 16rem; max-width: 100%;
  border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
button { font: inherit; padding: 0.25rem 0.7rem; border: 1px solid var(--line); border-radius: 4px;
  background: var(--head); color: var(--fg); cursor: pointer; }
button.link { border: 0; background: none; padding: 0; color: var(--focus); text-decoration: underline; text-align: left; }
button.danger { border-color: var(--error-line); color: var(--error-line); font-weight: 600; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.summary { margin: 0.4rem 0 0.6rem; }
.summary .warn { color: var(--alarm-line); font-weight: 600; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { text-align: left; vertical-align: top; padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td .key { word-break: break-all; }
tr.alarm td { background: var(--alarm-bg); }
tr.alarm td:first-child { box-shadow: inset 4px 0 0 var(--alarm-line); }
tr.selected > * { border-top: 2px solid var(--focus); border-bottom: 2px solid var(--focus); }
tbody th { font-weight: normal; }
.badge { display: inline-block; margin: 0 0.3rem 0.2rem 0; padding: 0 0.4rem; border: 1px solid var(--alarm-line);
  border-radius: 3px; color: var(--alarm-line); font-size: 0.85em; font-weight: 600; white-space: nowrap; }
ul.holders { list-style: none; margin: 0; padding: 0; }
ul.holders li + li { margin-top: 0.2rem; }
.detail { margin: 1rem 0; padding: 0.2rem 1rem 0.6rem; border: 1px solid var(--line); border-radius: 6px; }
.detail-head { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: 0.5rem; }
.detail-head h2 { word-break: break-all; }
ol#events { list-style: none; margin: 0; padding: 0; font-size: 0.93em; }
ol#events li { padding: 0.2rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ol#events .type { font-weight: 600; }
ol#events .type.lost, ol#events .type.force-released, ol#events .type.timeout, ol#events .type.held-too-long,
  ol#events .type.waited-too-long { color: var(--alarm-line); }
dialog { max-width: min(36rem, 92vw); border: 1px solid var(--line); border-radius: 6px; color: var(--fg); background: var(--bg); }
dialog::backdrop { background: rgba(0, 0, 0, 0.45); }
#confirm-text { word-break: break-all; }
.dialog-buttons { display: flex; justify-content: flex-end; gap: 0.6rem; }
.stale { opacity: 0.55; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(17rem, 1fr)); gap: 0.5rem 1rem; }
.load-chart { margin: 0; }
.load-chart svg { display: block; width: 100%; height: auto; max-height: 9rem; }
.load-chart figcaption { font-size: 0.9em; }
.chart .axis { stroke: var(--line); stroke-width: 1; }
.chart text { fill: var(--muted); font-size: 9px; }
.chart polyline { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
.chart polyline.holds { stroke: var(--focus); }
.chart polyline.waiters { stroke: var(--alarm-line); stroke-dasharray: 4 3; }
.chart polyline.in-doubt { stroke: var(--muted); stroke-dasharray: 1 2; stroke-width: 2; }
.chart .strip { stroke: var(--line); stroke-width: 0.5; }
.chart .alarm-mark { fill: var(--error-line); }
.chart .alarm-mark.wait { fill: var(--alarm-line); }
.legend.in-doubt { color: var(--muted); font-weight: 600; }
.badge.doubt { border-color: var(--muted); color: var(--muted); }
.fleet summary { cursor: pointer; margin: 0.4rem 0; }
.controls select { font: inherit; padding: 0.2rem 0.4rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
p.warn { color: var(--alarm-line); font-weight: 600; }
.legend.holds { color: var(--focus); font-weight: 600; }
.legend.waiters { color: var(--alarm-line); font-weight: 600; }
.legend.alarms { color: var(--error-line); font-weight: 600; }
`;
