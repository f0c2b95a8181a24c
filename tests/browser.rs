//! `ui/context-meter.js` in a real headless Chromium, driven over the DevTools Protocol: what
//! the ring, header, bar and rows show for given records, real clicks and keys on the ring,
//! the warning state, live updates, and a screenshot of `ui/demo.html`; and the page that
//! `agent-fold serve` serves, live ([`served`]).
//!
//! Each test launches its own browser. Without one (no $AGENT_FOLD_CHROMIUM, /usr/bin/chromium
//! or `chromium` on PATH) each prints `skipped: <reason>` and passes.

#[path = "browser/cdp.rs"]
mod cdp;
#[path = "serve/harness.rs"]
mod harness;
#[path = "browser/served.rs"]
mod served;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::OnceLock;

use cdp::Browser;
use serde_json::{Value, json};

const UI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ui");

/// The test page: the element's script, and helpers to make meters, records and a summary of
/// what a meter's shadow DOM shows. Tall, so that Space scrolling the page would show.
const TEST_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>context-meter tests</title></head>
<body style="margin:0; padding:320px 0 0 320px; min-height:3000px">
<div id="root"></div>
<script src="/context-meter.js"></script>
<script>
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
window.probe = (m) => {
  const r = m.shadowRoot, q = (s) => r.querySelector(s);
  const ring = q('.ring'), arc = q('.arc'), panel = q('.panel'), head = q('.head'), fig = q('.figure');
  const box = ring.getBoundingClientRect();
  return {
    label: ring.getAttribute('aria-label'), role: ring.getAttribute('role'),
    tabindex: ring.getAttribute('tabindex'), expanded: ring.getAttribute('aria-expanded'),
    controls: r.getElementById(ring.getAttribute('aria-controls')) === panel,
    ring: [box.width, box.height], dash: arc.getAttribute('stroke-dasharray'),
    stroke: getComputedStyle(arc).stroke,
    open: m.open && !panel.hidden && getComputedStyle(panel).display !== 'none',
    // The header as it reads: its visible pieces in order, and which one is the figure.
    head: [...head.children].filter((e) => !e.hidden && e.textContent !== '').map((e) => e.textContent),
    figure: fig.hidden ? null : fig.textContent, figureTag: fig.tagName,
    figureWeight: getComputedStyle(fig).fontWeight, headWeight: getComputedStyle(q('.before')).fontWeight,
    used: q('.used').textContent,
    bar: q('.bar').getBoundingClientRect().toJSON(),
    segments: [...q('.bar').children].map((s) => ({ category: s.dataset.category, width: s.style.width,
      colour: getComputedStyle(s).backgroundColor, px: s.getBoundingClientRect().width })),
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
</script>
</body></html>
"#;

/// A tiny HTTP server on 127.0.0.1:0 for the test page and `ui/` (read fresh per request).
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
    let (status, kind, body) = match path {
        "/test.html" => ("200 OK", "text/html", TEST_PAGE.as_bytes().to_vec()),
        "/context-meter.js" | "/demo.html" => match std::fs::read(format!("{UI}{path}")) {
            Ok(body) if path.ends_with(".js") => ("200 OK", "text/javascript", body),
            Ok(body) => ("200 OK", "text/html", body),
            Err(_) => ("404 Not Found", "text/plain", b"missing".to_vec()),
        },
        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// A browser, or `None` (after printing why) when there is no Chromium.
fn chromium() -> Option<Browser> {
    match cdp::find_chromium() {
        Ok(exe) => Some(Browser::launch(&exe).expect("Chromium starts and answers CDP")),
        Err(reason) => {
            println!("skipped: {reason}");
            None
        }
    }
}

/// A browser on the test page, or `None` (after printing why) when there is no Chromium.
fn page() -> Option<Browser> {
    let mut b = chromium()?;
    b.goto(&format!("http://127.0.0.1:{}/test.html", server()))
        .expect("the test page loads");
    b.wait_for("customElements.get('context-meter') !== undefined")
        .expect("the script defines <context-meter>");
    b.eval("document.getElementById('root').replaceChildren()")
        .unwrap();
    Some(b)
}

/// Evaluates JS and unwraps: a failure here is the test failing, with the expression shown.
fn js(b: &mut Browser, expr: &str) -> Value {
    b.eval(expr).unwrap_or_else(|e| panic!("{e:#}"))
}

/// One new meter with `attrs`, fed `records` (a JS array expression), probed.
/// A meter in language `lang` fed `records` (a JS array expression): its probe.
fn meter(b: &mut Browser, lang: &str, records: &str) -> Value {
    meter_with(b, json!({ "lang": lang }), records)
}

/// A meter with the attributes `attrs` fed `records`: its probe.
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

#[test]
fn ring_fill_and_name_follow_occupancy() {
    let Some(mut b) = page() else { return };
    for (occ, dash, label) in [
        ("0", "0 100", "0% of context used"),
        ("0.04", "4 100", "4% of context used"),
        ("0.5", "50 100", "50% of context used"),
        ("1", "100 0", "100% of context used"),
        // The drawing clamps; the sentence keeps the record's figure.
        ("1.7", "100 0", "170% of context used"),
        ("null", "0 100", "Context use unknown"),
    ] {
        let p = meter(&mut b, "en", &format!("[rec({{contextOccupancy: {occ}}})]"));
        assert_eq!(p["dash"], dash, "arc for occupancy {occ}");
        assert_eq!(p["label"], label, "aria name for occupancy {occ}");
    }
    let p = meter(&mut b, "zh-CN", "[rec({contextOccupancy: 0.04})]");
    assert_eq!(p["label"], "上下文已使用 4%");
    assert_eq!(p["role"], "button");
    assert_eq!(p["tabindex"], "0");
    assert_eq!(p["expanded"], "false");
    assert_eq!(p["controls"], true, "aria-controls names the panel");
    assert_eq!(
        [p["ring"][0].as_f64(), p["ring"][1].as_f64()],
        [Some(14.0), Some(14.0)],
        "a 14px ring"
    );

    // What a screen reader gets: the accessibility tree's button and its computed name.
    let tree = b.call("Accessibility.getFullAXTree", json!({})).unwrap();
    let buttons: Vec<&str> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"]["value"] == "button" && n["ignored"] != true)
        .map(|n| s(&n["name"]["value"]))
        .collect();
    assert_eq!(buttons, ["上下文已使用 4%"]);
}

#[test]
fn header_is_one_sentence_split_at_the_figure() {
    let Some(mut b) = page() else { return };
    let en = meter(&mut b, "en", "[rec({contextOccupancy: 0.04})]");
    assert_eq!(
        en["head"],
        json!(["4%", " of context used"]),
        "en: figure first"
    );
    let zh = meter(&mut b, "zh-CN", "[rec({contextOccupancy: 0.04})]");
    assert_eq!(
        zh["head"],
        json!(["上下文已使用 ", "4%"]),
        "zh-CN: figure after"
    );
    for p in [&en, &zh] {
        assert_eq!(p["figure"], "4%");
        assert_eq!(p["figureTag"], "STRONG");
        assert_ne!(
            p["figureWeight"], p["headWeight"],
            "the figure keeps its own weight"
        );
        assert!(s(&p["figureWeight"]).parse::<u32>().unwrap() >= 600);
    }

    // The locale also comes from the nearest ancestor's lang, then from navigator.language.
    let from_ancestor = js(
        &mut b,
        "(() => { const d = document.createElement('div'); d.lang = 'zh-CN'; \
         document.getElementById('root').replaceChildren(d); const m = mk({}, d); \
         m.update(rec({contextOccupancy: 0.5})); return probe(m).head; })()",
    );
    assert_eq!(from_ancestor, json!(["上下文已使用 ", "50%"]));
    // Emulation.setLocaleOverride leaves navigator.language alone; the Accept-Language does not.
    let agent = js(&mut b, "navigator.userAgent");
    b.call(
        "Emulation.setUserAgentOverride",
        json!({"userAgent": agent, "acceptLanguage": "zh-CN"}),
    )
    .unwrap();
    let from_navigator = js(
        &mut b,
        "(() => { document.documentElement.removeAttribute('lang'); \
         const p = probe(mk()); document.documentElement.lang = 'en'; \
         return [navigator.language, p.label]; })()",
    );
    assert_eq!(from_navigator, json!(["zh-CN", "上下文占用未知"]));
    let other = meter(&mut b, "fr", "[rec({contextOccupancy: 0.04})]");
    assert_eq!(other["label"], "4% of context used", "unknown locale: en");

    // ~used / capacity: the projection, else the bare sample; capacity may be unknown.
    let used = |b: &mut Browser, lang: &str, fields: &str| {
        meter(b, lang, &format!("[rec({fields})]"))["used"].clone()
    };
    assert_eq!(used(&mut b, "en", "{}"), "~244 / 100,000");
    assert_eq!(
        used(&mut b, "en", "{projectedTokens: null}"),
        "~4,227 / 100,000"
    );
    assert_eq!(
        used(&mut b, "en", "{capacity: null, contextOccupancy: null}"),
        "~244 / capacity unknown"
    );
    assert_eq!(used(&mut b, "zh-CN", "{capacity: null}"), "~244 / 容量未知");
    let unknown = meter(&mut b, "en", "[rec({contextOccupancy: null})]");
    assert_eq!(unknown["head"], json!(["Context use unknown"]));
    assert_eq!(unknown["figure"], Value::Null);
}

#[test]
fn bar_splits_the_occupancy_and_renders_no_empty_segment() {
    let Some(mut b) = page() else { return };
    let open = |b: &mut Browser, attrs: Value, records: &str| {
        let mut attrs = attrs;
        attrs["open"] = json!("");
        meter_with(b, attrs, records)
    };
    let p = open(
        &mut b,
        json!({}),
        "[rec({contextOccupancy: 0.5, systemTokens: 100, toolsTokens: 300, messageTokens: 600})]",
    );
    let cats = agent_fold_testkit::strings_of(&p["segments"], "category");
    assert_eq!(cats, ["system", "tools", "messages"]);
    let widths = agent_fold_testkit::strings_of(&p["segments"], "width");
    assert_eq!(widths, ["5%", "15%", "30%"]);
    // On screen: 4px tall, the segments together half the bar.
    assert_eq!(p["bar"]["height"], 4.0);
    let total: f64 = p["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["px"].as_f64().unwrap())
        .sum();
    let bar = p["bar"]["width"].as_f64().unwrap();
    assert!(
        (total - bar / 2.0).abs() < 1.0,
        "segments {total}px of a {bar}px bar"
    );
    assert_eq!(
        p["segments"][2]["colour"], "rgb(139, 92, 246)",
        "messages are purple"
    );

    // Occupancy 0: no segment at all, whatever the shares.
    let zero = open(&mut b, json!({}), "[rec({contextOccupancy: 0})]");
    assert_eq!(zero["segments"], json!([]));
    // An empty category has no segment, not a sliver.
    let no_tools = open(&mut b, json!({}), "[rec({toolsTokens: 0})]");
    let cats = agent_fold_testkit::strings_of(&no_tools["segments"], "category");
    assert_eq!(cats, ["system", "messages"]);
    // Over capacity: the bar is full, not longer.
    let over = open(
        &mut b,
        json!({}),
        "[rec({contextOccupancy: 1.3, systemTokens: 1, toolsTokens: 1, messageTokens: 2})]",
    );
    assert_eq!(
        over["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["width"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["25%", "25%", "50%"]
    );
    // Unknown occupancy: nothing drawn.
    let unknown = open(&mut b, json!({}), "[rec({contextOccupancy: null})]");
    assert_eq!(unknown["segments"], json!([]));
    // A partial session's null share: one neutral segment for the whole occupancy.
    let partial = open(
        &mut b,
        json!({}),
        "[rec({partial: true, contextOccupancy: 0.26, messageTokens: null})]",
    );
    assert_eq!(
        partial["segments"],
        json!([{"category": "unknown", "width": "26%", "colour": "rgb(156, 163, 175)",
                "px": partial["segments"][0]["px"]}])
    );
}

#[test]
fn rows_are_raw_estimates_and_nulls_read_unknown() {
    let Some(mut b) = page() else { return };
    // Raw record figures, ~ on each, not scaled to pressureTokens; nulls read unknown, and a
    // partial session says why.
    let cases = [
        (
            "en",
            "[rec({messageTokens: 123456})]",
            json!([
                ["System prompt", "~180"],
                ["Tools", "~2,310"],
                ["Messages", "~123,456"]
            ]),
            false,
        ),
        (
            "en",
            "[rec({partial: true, systemTokens: null, toolsTokens: 0, messageTokens: null})]",
            json!([
                ["System prompt", "unknown"],
                ["Tools", "~0"],
                ["Messages", "unknown"]
            ]),
            true,
        ),
        (
            "zh-CN",
            "[rec({partial: true, messageTokens: null})]",
            json!([["系统提示词", "~180"], ["工具", "~2,310"], ["对话", "未知"]]),
            true,
        ),
    ];
    for (lang, records, rows, note) in cases {
        let p = meter(&mut b, lang, records);
        assert_eq!(p["rows"], rows, "{records}");
        assert_eq!(p["partialNote"], note, "{records}");
    }
    // A figure that is missing, or not a number, is unknown too, never 0.
    let odd = meter(
        &mut b,
        "en",
        "[(() => { const r = rec({toolsTokens: '12'}); delete r.systemTokens; return r; })()]",
    );
    assert_eq!(odd["rows"][0][1], "unknown");
    assert_eq!(odd["rows"][1][1], "unknown");
    // Before any record: no figures at all.
    let empty = meter(&mut b, "en", "[]");
    assert_eq!(empty["used"], "No reading yet");
    assert_eq!(empty["label"], "Context use unknown");
    assert_eq!(empty["rows"][2][1], "unknown");
}

#[test]
fn panel_opens_with_click_enter_space_and_closes_with_escape() {
    let Some(mut b) = page() else { return };
    meter_with(&mut b, json!({"session": "s-42"}), "[rec()]");
    js(
        &mut b,
        "window.toggles = 0; m.addEventListener('toggle', () => toggles++); \
         window.outerEscapes = 0; document.addEventListener('keydown', \
         (e) => { if (e.key === 'Escape') outerEscapes++; })",
    );
    let state = |b: &mut Browser| {
        js(
            b,
            "(() => { const p = probe(m); return [p.open, p.expanded, \
             document.activeElement === m && m.shadowRoot.activeElement === \
             m.shadowRoot.querySelector('.ring'), scrollY]; })()",
        )
    };
    let at = js(&mut b, "ringAt(m)");
    let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());

    b.click(x, y).unwrap();
    assert_eq!(state(&mut b), json!([true, "true", true, 0]), "click opens");
    b.click(x, y).unwrap();
    assert_eq!(state(&mut b)[0], false, "a second click closes");
    b.click(x, y).unwrap();
    b.click(5.0, 5.0).unwrap();
    assert_eq!(state(&mut b)[0], false, "a click outside closes");

    // Keyboard only: Tab reaches the ring, with a visible focus outline.
    js(&mut b, "document.activeElement.blur()");
    b.press("Tab").unwrap();
    assert_eq!(
        state(&mut b),
        json!([false, "false", true, 0]),
        "Tab focuses the ring"
    );
    let outline = js(
        &mut b,
        "getComputedStyle(m.shadowRoot.querySelector('.ring')).outlineStyle",
    );
    assert_eq!(outline, "solid", "focus-visible outline");
    b.press("Enter").unwrap();
    assert_eq!(state(&mut b), json!([true, "true", true, 0]), "Enter opens");
    b.press("Enter").unwrap();
    assert_eq!(state(&mut b)[0], false, "Enter closes");
    b.press(" ").unwrap();
    assert_eq!(
        state(&mut b),
        json!([true, "true", true, 0]),
        "Space opens, without scrolling the page"
    );
    // Escape from inside the panel: closes it and focus goes back to the ring.
    js(
        &mut b,
        "(() => { const p = m.shadowRoot.querySelector('.panel'); p.tabIndex = -1; p.focus(); })()",
    );
    assert_eq!(state(&mut b)[2], false, "focus moved into the panel");
    b.press("Escape").unwrap();
    assert_eq!(
        state(&mut b),
        json!([false, "false", true, 0]),
        "Escape closes and refocuses the ring"
    );
    assert_eq!(
        js(&mut b, "outerEscapes"),
        0,
        "the meter's Escape stays with the meter"
    );
    b.press("Escape").unwrap();
    assert_eq!(
        js(&mut b, "outerEscapes"),
        1,
        "with the panel closed, Escape is the page's"
    );
    // open, close, open, close (outside), open, close, open, close (Escape)
    assert_eq!(js(&mut b, "toggles"), 8);
}

#[test]
fn error_warns_keeps_the_last_figures_and_records_update_live() {
    let Some(mut b) = page() else { return };
    let good = meter_with(
        &mut b,
        json!({"session": "s-42", "lang": "en", "open": ""}),
        "[rec({contextOccupancy: 0.04})]",
    );
    assert_eq!(good["warning"], false);
    assert_eq!(good["error"], Value::Null);
    let err = "replacement span 12..40 is not in the surface: the log is corrupt";
    let warned = js(
        &mut b,
        &format!(
            "(() => {{ m.update({{type: 'context/error', session: 's-42', seq: 119, error: {}, \
             stateVersion: 4}}); return probe(m); }})()",
            json!(err)
        ),
    );
    assert_eq!(warned["error"], err, "the panel shows the error");
    assert_eq!(warned["warning"], true);
    assert_eq!(
        warned["label"],
        "4% of context used. Warning: the context figures could not be updated"
    );
    assert_ne!(warned["stroke"], good["stroke"], "the ring looks different");
    assert_eq!(warned["stroke"], "rgb(220, 38, 38)");
    for kept in ["dash", "head", "used", "rows", "segments"] {
        assert_eq!(warned[kept], good[kept], "{kept} stays as it was");
    }

    // The next pressure record clears the warning and shows at once.
    let live = js(
        &mut b,
        "(() => { m.update(rec({seq: 120, contextOccupancy: 0.5, projectedTokens: 50000, \
         messageTokens: 47510})); return probe(m); })()",
    );
    assert_eq!(live["warning"], false);
    assert_eq!(live["error"], Value::Null);
    assert_eq!(live["dash"], "50 100");
    assert_eq!(live["label"], "50% of context used");
    assert_eq!(live["used"], "~50,000 / 100,000");
    assert_eq!(live["rows"][2][1], "~47,510");

    // Ignored and counted: another type, another session, an older seq, not a record.
    let after = js(
        &mut b,
        "(() => { const applied = [m.update({type: 'frame', session: 's-42', seq: 121}), \
         m.update(rec({session: 's-43', seq: 121, contextOccupancy: 0.9})), \
         m.update(rec({seq: 100, contextOccupancy: 0.9})), m.update(null), \
         m.update('{\"type\":\"context/pressure\"}')]; \
         return [applied, probe(m), m.state]; })()",
    );
    assert_eq!(after[0], json!([false, false, false, false, false]));
    assert_eq!(after[1]["ignored"], 5);
    assert_eq!(
        after[1]["dash"], "50 100",
        "nothing ignored reached the ring"
    );
    assert_eq!(after[2]["seq"], 120);
    assert_eq!(after[2]["projectedTokens"], 50000);

    // Without a session attribute, the meter keeps to the first record's session.
    let unbound = meter_with(
        &mut b,
        json!({}),
        "[rec({session: 'a', contextOccupancy: 0.1}), rec({session: 'b', contextOccupancy: 0.9})]",
    );
    assert_eq!(unbound["dash"], "10 100");
    assert_eq!(unbound["ignored"], 1);
    // A different session attribute is a different meter: the figures go.
    let moved = js(
        &mut b,
        "(() => { m.setAttribute('session', 'c'); return [probe(m).label, m.state]; })()",
    );
    assert_eq!(moved, json!(["Context use unknown", null]));
}

#[test]
fn demo_page_renders() {
    let Some(mut b) = page() else { return };
    // From file:// first: the classic script needs no server.
    let file = format!("file://{UI}/demo.html");
    b.goto(&file).unwrap();
    let labels = js(
        &mut b,
        "[...document.querySelectorAll('context-meter')].map((m) => \
         m.shadowRoot.querySelector('.ring').getAttribute('aria-label'))",
    );
    assert_eq!(labels[0], "4% of context used", "file:// demo, en meter");
    assert_eq!(labels[1], "上下文已使用 17%", "file:// demo, zh-CN meter");
    assert!(
        s(&labels[3]).contains("Warning"),
        "the error meter warns: {}",
        labels[3]
    );

    b.viewport(1000, 1000, 2.0).unwrap();
    b.goto(&format!("http://127.0.0.1:{}/demo.html", server()))
        .unwrap();
    let open = js(
        &mut b,
        "[...document.querySelectorAll('context-meter')].filter((m) => m.open).length",
    );
    assert_eq!(open, 4, "the demo opens four panels");
    let png = b.screenshot().unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(png.len() > 10_000, "a PNG of a page, not of nothing");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("context-meter-demo.png");
    std::fs::write(&out, &png).unwrap();
    println!("screenshot: {}", out.display());
}
