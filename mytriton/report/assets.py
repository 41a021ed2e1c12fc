"""The report page's style sheet and script: constants, the same on every page.

The script is the page's only one; its SHA-256 is in the page's Content
Security Policy (``SCRIPT_HASH``), which allows no other script, no event
handler attribute and no network: whatever a kernel file or an IR text holds
is text on the page, and would stay inert even if it were not escaped.
"""
from __future__ import annotations

import base64
import hashlib

# The highlight of the selected Python line's lines: a colour the tests look for in screenshots.
HIGHLIGHT_RGB = (255, 226, 122)
CURRENT_RGB = (255, 179, 71)

CSS = """
:root { --hl: rgb%s; --cur: rgb%s; --fg: #1d2330; --muted: #667085; --line: #e4e7ec; }
* { box-sizing: border-box; }
html, body { height: 100%%; }
body { margin: 0; display: flex; flex-direction: column; font: 14px/1.4 system-ui, sans-serif;
       color: var(--fg); background: #f7f8fa; }
header { flex: none; padding: 8px 16px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { font-size: 17px; margin: 0 0 4px; }
h2 { font-size: 14px; margin: 0; }
code, pre { font: 12.5px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; }
dl.options { display: flex; flex-wrap: wrap; gap: 2px 18px; margin: 4px 0; }
dl.options div { white-space: nowrap; }
dl.options div.wide { flex-basis: 100%%; white-space: normal; }
dl.options dt { display: inline; color: var(--muted); margin-right: 6px; }
dl.options dd { display: inline; margin: 0; }
nav.toggles { margin: 4px 0; }
nav.toggles label { margin-right: 12px; white-space: nowrap; }
header p.note { margin: 2px 0 0; }
section.panel, details.panel { flex: none; margin: 6px 16px 0; padding: 6px 12px; background: #fff;
                               border: 1px solid var(--line); max-height: 18vh; overflow: auto; }
details.panel[open] { max-height: 45vh; }
details.panel summary { font-weight: 600; cursor: pointer; }
section.panel ul { margin: 4px 0; padding-left: 20px; }
.note { color: var(--muted); font-style: italic; margin: 4px 0; }
.body .note { padding: 0 8px; }
#columns { flex: 1 1 auto; min-height: 320px; display: flex; gap: 8px; padding: 8px 16px;
           overflow-x: auto; overflow-y: hidden; }
.col { flex: 0 0 auto; width: 62ch; display: flex; flex-direction: column; background: #fff;
       border: 1px solid var(--line); resize: horizontal; overflow: hidden; }
.col.source { position: sticky; left: 0; z-index: 2; box-shadow: 2px 0 4px rgba(0,0,0,.08); }
.col[hidden] { display: none; }
.col h2 { flex: none; padding: 6px 8px; border-bottom: 1px solid var(--line); background: #f0f2f5;
          white-space: nowrap; overflow: hidden; }
.col h2 small { color: var(--muted); font-weight: normal; margin-left: 6px; }
.col h2 .hits { float: right; color: var(--muted); font-weight: normal; }
.body { position: relative; flex: 1 1 auto; min-height: 0; overflow: auto; }
.body pre { margin: 0; padding: 4px 0; counter-reset: ln; min-width: max-content; }
.ln { display: block; padding: 0 8px 0 0; white-space: pre; cursor: pointer; }
.ln:hover { background: #f2f4f7; }
.stage .ln::before { counter-increment: ln; content: counter(ln); display: inline-block; width: 5ch;
                     margin-right: 1ch; text-align: right; color: #98a2b3; }
.stage .ln:not([data-l]) { cursor: default; color: #475467; }
.source .ln a.n { display: inline-block; width: 5ch; margin-right: 1ch; text-align: right; color: #98a2b3;
                  text-decoration: none; }
.source .ln.has { box-shadow: inset 3px 0 0 #84adff; }
.ln.hl { background: var(--hl); }
.ln.cur { background: var(--cur); }
.remark { display: block; white-space: pre-wrap; margin: 2px 8px 4px 6ch; padding: 2px 6px;
          background: #ecfdf3; border-left: 3px solid #12b76a; color: #05603a; font-size: 12px; }
.remark.missed { background: #fffaeb; border-color: #f79009; color: #93370d; }
figure { display: inline-block; margin: 6px; vertical-align: top; }
figure img { max-width: 100%%; background: #fff; border: 1px solid var(--line); }
""" % (HIGHLIGHT_RGB, CURRENT_RGB)

JS = """
(function () {
  'use strict';
  var byLine = new Map();
  document.querySelectorAll('.stage .ln[data-l]').forEach(function (el) {
    el.getAttribute('data-l').split(' ').forEach(function (n) {
      var list = byLine.get(n);
      if (!list) { list = []; byLine.set(n, list); }
      list.push(el);
    });
  });
  document.querySelectorAll('.source .ln').forEach(function (el) {
    if (byLine.has(el.getAttribute('data-line'))) { el.classList.add('has'); }
  });
  var marked = [];
  function mark(el, cls) { el.classList.add(cls); marked.push(el); }
  function bodyOf(el) { return el.closest('.body'); }
  function show(el) {
    var body = bodyOf(el);
    if (!body) { return; }
    var top = el.offsetTop;
    if (top < body.scrollTop || top > body.scrollTop + body.clientHeight - el.offsetHeight) {
      body.scrollTop = Math.max(0, top - body.clientHeight / 3);
    }
  }
  function select(n, clicked) {
    marked.forEach(function (el) { el.classList.remove('hl', 'cur'); });
    marked = [];
    var key = String(n);
    var src = document.querySelector('.source .ln[data-line="' + key + '"]');
    var lines = byLine.get(key) || [];
    if (src) { mark(src, 'hl'); if (!clicked) { show(src); } }
    var first = new Map();
    lines.forEach(function (el) {
      mark(el, 'hl');
      var body = bodyOf(el);
      if (!first.has(body)) { first.set(body, el); }
    });
    first.forEach(function (el) { if (!clicked || bodyOf(clicked) !== bodyOf(el)) { show(el); } });
    if (clicked) { mark(clicked, 'cur'); }
    document.querySelectorAll('.col').forEach(function (col) {
      var hits = col.querySelector('.hits');
      if (hits) {
        var count = col.querySelectorAll('.ln.hl').length;
        hits.textContent = count ? 'line ' + key + ': ' + count : '';
        col.setAttribute('data-hits', String(count));
      }
    });
    document.body.setAttribute('data-selected', key);
  }
  function fromHash() {
    var m = /^#L([0-9]+)$/.exec(location.hash);
    if (m) { select(m[1], null); }
  }
  function remember(n) {
    try { history.replaceState(null, '', '#L' + n); } catch (e) { /* a file: URL may refuse */ }
  }
  document.addEventListener('click', function (event) {
    var target = event.target;
    if (!(target instanceof Element)) { return; }
    var line = target.closest('.ln');
    if (!line) { return; }
    if (line.hasAttribute('data-line')) {
      event.preventDefault();
      var n = line.getAttribute('data-line');
      select(n, null);
      remember(n);
    } else if (line.hasAttribute('data-l')) {
      var primary = line.getAttribute('data-l').split(' ')[0];
      select(primary, line);
      remember(primary);
    }
  });
  document.querySelectorAll('nav.toggles input[data-stage]').forEach(function (box) {
    box.addEventListener('change', function () {
      var col = document.getElementById('col-' + box.getAttribute('data-stage'));
      if (col) { col.hidden = !box.checked; }
    });
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
  document.body.setAttribute('data-ready', '1');
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()

CONTENT_SECURITY_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                           f"script-src '{SCRIPT_HASH}'; base-uri 'none'; form-action 'none'")
