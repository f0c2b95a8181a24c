//! The `@agent-fold/context-meter` package (`ui/`) in a real headless Chromium, driven over the
//! DevTools Protocol, and in Node: what the ring, header, bar, ticks and rows show for given
//! records ([`drawing`]); clicks, keys, events, the live region and the panel's placement
//! ([`behaviour`]); the package as packed, imported in Node and in a page ([`package`]); the
//! served page's chart ([`chart`]) and the page `agent-fold serve` serves, live ([`served`]).
//!
//! One Chromium serves the suite, each test in a tab and browser context of its own. Without one (no $AGENT_FOLD_CHROMIUM, /usr/bin/chromium
//! or `chromium` on PATH), or without Node where a test needs it, the test prints
//! `skipped: <reason>` and passes, except with CI=true, where it fails: CI is meant to have them.

mod behaviour;
mod chart;
use crate::common;
mod drawing;
use crate::harness;
mod package;
mod served;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agent_fold_testkit::cdp::{self, Browser};
use serde_json::{Value, json};

const UI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ui");

/// The helpers every test page has: make meters and records, and a summary of what a meter's
/// shadow DOM shows. `rec` is a stateVersion 4 record; `rec5` adds the compaction's figures.
const HELPERS: &str = r#"<script>
window.mk = (attrs = {}, parent = document.getElementById('root')) => {
  const m = document.createElement('context-meter');
  for (const [k, v] of Object.entries(attrs)) m.setAttribute(k, v);
  parent.append(m);
  return m;
};
window.rec = (fields = {}) => ({ type: 'context/pressure', session: 's-42', seq: 118,
  timestamp: '2026-11-29T10:00:05Z', pressureTokens: 4227, projectedTokens: 244, capacity: 100000,
  contextOccupancy: 0.00244, systemTokens: 180, toolsTokens: 2310, messageTokens: 64,
  estimateScale: 1.344, stateVersion: 4, ...fields });
window.rec5 = (fields = {}) => rec({ compactAtTokens: 167000, untilCompactTokens: 166756,
  stateVersion: 5, ...fields });
window.probe = (m) => {
  const r = m.shadowRoot, q = (s) => r.querySelector(s);
  const ring = q('.ring'), arc = q('.arc'), panel = q('.panel'), head = q('.head'), fig = q('.figure');
  const box = ring.getBoundingClientRect();
  const shown = (el) => getComputedStyle(el).display !== 'none';
  const ringTick = q('.ring-tick'), barTick = q('.bar-tick'), compact = q('.compact');
  return {
    label: ring.getAttribute('aria-label'), tag: ring.tagName, type: ring.getAttribute('type'),
    expanded: ring.getAttribute('aria-expanded'),
    controls: r.getElementById(ring.getAttribute('aria-controls')) === panel,
    ring: [box.width, box.height], dash: arc.getAttribute('stroke-dasharray'),
    stroke: getComputedStyle(arc).stroke,
    open: m.open && !panel.hidden && shown(panel),
    // The header as it reads: its visible pieces in order, and which one is the figure.
    head: [...head.children].filter((e) => !e.hidden && e.textContent !== '').map((e) => e.textContent),
    figure: fig.hidden ? null : fig.textContent, figureTag: fig.tagName,
    figureWeight: getComputedStyle(fig).fontWeight, headWeight: getComputedStyle(q('.before')).fontWeight,
    used: q('.used').textContent,
    compact: shown(compact) ? compact.textContent : null,
    ringTick: shown(ringTick) ? ringTick.getAttribute('transform') : null,
    barTick: shown(barTick) ? barTick.style.insetInlineStart : null,
    bar: q('.bar').getBoundingClientRect().toJSON(),
    segments: [...q('.bar').children].filter(shown).map((s) => ({ category: s.dataset.category,
      width: s.style.width, colour: getComputedStyle(s).backgroundColor, px: s.getBoundingClientRect().width })),
    rows: [...r.querySelectorAll('dl .row')].map((row) => [row.querySelector('dt').textContent,
      row.querySelector('dd').textContent]),
    error: q('.error').hidden ? null : q('.error-text').textContent,
    warning: m.hasAttribute('warning'), partialNote: !q('.partial').hidden,
    ignored: m.ignored,
  };
};
// Where the ring is on screen, for real clicks.
window.ringAt = (m) => { const b = m.shadowRoot.querySelector('.ring').getBoundingClientRect();
  return [b.x + b.width / 2, b.y + b.height / 2]; };
</script>"#;

/// The test page: the package imported by its name (an import map says where, as a page that
/// installed it would have), and the served page's chart. Tall, so that Space scrolling the page
/// would show.
const TEST_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>context-meter tests</title>
<script type="importmap">{"imports": {"@agent-fold/context-meter": "/context-meter.js"}}</script>
<script type="module">
import { ContextMeter } from '@agent-fold/context-meter';
import { SessionChart, MAX_POINTS } from '/serve/chart.js';
Object.assign(window, { ContextMeter, SessionChart, MAX_POINTS });
</script></head>
<body style="margin:0; padding:320px 0 0 320px; min-height:3000px">
<div id="root"></div>
HELPERS
</body></html>
"#;

/// A page that loads no meter: tests make elements first and import the module later.
const BARE_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>before the definition</title></head>
<body><div id="root"></div>
HELPERS
</body></html>
"#;

/// A packed package's root, served at `/pkg/` once a test has unpacked one.
static PACKED: OnceLock<PathBuf> = OnceLock::new();

/// A tiny HTTP server on 127.0.0.1:0 for the test pages, `ui/` (read fresh per request) and
/// the packed package under `/pkg/`.
fn server() -> u16 {
    static PORT: OnceLock<u16> = OnceLock::new();
    *PORT.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                std::thread::spawn(move || serve(stream));
            }
        });
        port
    })
}

/// The file a request path names: under `/pkg/` the packed package, else `ui/`; never above.
fn file_for(path: &str) -> Option<PathBuf> {
    let path = path.split('?').next().unwrap_or(path);
    let (root, rest) = match path.strip_prefix("/pkg/") {
        Some(rest) => (PACKED.get()?.clone(), rest),
        None => (PathBuf::from(UI), path.trim_start_matches('/')),
    };
    if rest.split('/').any(|part| part == ".." || part.is_empty()) {
        return None;
    }
    Some(root.join(rest))
}

fn serve(mut stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the socket"));
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    // Headers are read and dropped; the request line is all that routes.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let page = |p: &str| p.replace("HELPERS", HELPERS).into_bytes();
    let found = match path {
        "/test.html" => Some(("text/html", page(TEST_PAGE))),
        "/bare.html" => Some(("text/html", page(BARE_PAGE))),
        _ => file_for(path).and_then(|file| {
            let kind = match file.extension()?.to_str()? {
                "js" | "mjs" => "text/javascript",
                "html" => "text/html",
                "css" => "text/css",
                "json" => "application/json",
                _ => return None,
            };
            Some((kind, std::fs::read(file).ok()?))
        }),
    };
    let (status, kind, body) = match found {
        Some((kind, body)) => ("200 OK", kind, body),
        None => ("404 Not Found", "text/plain", b"not found".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// A browser, or `None` (after [`common::skip`]) when there is no Chromium.
fn chromium() -> Option<Browser> {
    match cdp::find_chromium() {
        Ok(exe) => Some(Browser::launch(&exe).expect("Chromium starts and answers CDP")),
        Err(reason) => {
            common::skip(&reason);
            None
        }
    }
}

/// A browser on `page` (a path of the test server).
fn browser_on(page: &str) -> Option<Browser> {
    let mut b = chromium()?;
    b.goto(&format!("http://127.0.0.1:{}{page}", server()))
        .expect("the test page loads");
    Some(b)
}

/// A browser on the test page, the package imported.
fn page() -> Option<Browser> {
    let mut b = browser_on("/test.html")?;
    b.wait_for("customElements.get('context-meter') !== undefined && !!window.ContextMeter")
        .expect("the module defines <context-meter>");
    Some(b)
}

/// Evaluates JS and unwraps: a failure here is the test failing, with the expression shown.
fn js(b: &mut Browser, expr: &str) -> Value {
    b.eval(expr).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A meter in language `lang` fed `records` (a JS array expression): its probe.
fn meter(b: &mut Browser, lang: &str, records: &str) -> Value {
    meter_with(b, json!({ "lang": lang }), records)
}

/// A meter with the attributes `attrs` fed `records`: its probe. The meter is `window.m`.
fn meter_with(b: &mut Browser, attrs: Value, records: &str) -> Value {
    js(
        b,
        &format!(
            "(() => {{ document.getElementById('root').replaceChildren(); \
             const m = mk({attrs}); for (const r of {records}) m.update(r); window.m = m; \
             return probe(m); }})()"
        ),
    )
}

fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

/// Saves a screenshot to the target's tmp dir, and to docs/ when AGENT_FOLD_DOCS_SHOTS=1.
fn shot(b: &mut Browser, name: &str) {
    let png = b.screenshot().unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&tmp, &png).unwrap();
    println!("screenshot: {}", tmp.display());
    if std::env::var_os("AGENT_FOLD_DOCS_SHOTS").is_some_and(|v| v == "1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs")
            .join(name);
        std::fs::write(&docs, &png).unwrap();
        println!("screenshot: {}", docs.display());
    }
}
