//! How a meter behaves: real clicks and keys on its ring, warnings and live updates, the
//! records it refuses, its events, its one live region, where its panel goes, and what an
//! update costs (no formats made, no rows rebuilt).

use serde_json::{Value, json};

use super::{browser_on, f, js, meter_with, page};
use agent_fold_testkit::cdp::Browser;

#[test]
fn panel_opens_with_click_enter_space_and_closes_with_escape() {
    let Some(mut b) = page() else { return };
    meter_with(&mut b, json!({"session": "s-42"}), "[rec()]");
    js(
        &mut b,
        "window.opens = []; window.toggles = 0; \
         m.addEventListener('openchange', (e) => opens.push(e instanceof CustomEvent && e.detail.open)); \
         m.addEventListener('toggle', () => toggles++); \
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
    let (x, y) = (f(&at[0]), f(&at[1]));

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
    for (key, want, why) in [
        ("Enter", json!([true, "true", true, 0]), "Enter opens"),
        ("Enter", json!([false, "false", true, 0]), "Enter closes"),
        (
            " ",
            json!([true, "true", true, 0]),
            "Space opens, without scrolling the page",
        ),
    ] {
        b.press(key).unwrap();
        assert_eq!(state(&mut b), want, "{why}");
    }
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
    // open, close, open, close (outside), open, close, open, close (Escape); no plain `toggle`.
    assert_eq!(
        js(&mut b, "opens"),
        json!([true, false, true, false, true, false, true, false])
    );
    assert_eq!(js(&mut b, "toggles"), 0);
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

    // The record property is update(): applied, refused, and what it reads back.
    let prop = js(
        &mut b,
        "(() => { const r = rec({seq: 130, contextOccupancy: 0.25}); m.record = r; \
         const applied = m.record === r; m.record = rec({seq: 1}); m.record = null; \
         return [applied, m.record === r, probe(m).label, m.ignored]; })()",
    );
    assert_eq!(prop, json!([true, true, "25% of context used", 6]));

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
        "(() => { m.session = 'c'; return [probe(m).label, m.state, m.getAttribute('session')]; })()",
    );
    assert_eq!(moved, json!(["Context use unknown", null, "c"]));
}

#[test]
fn regression_issue21_a_first_record_without_a_session_binds_nothing() {
    let Some(mut b) = page() else { return };
    let p = meter_with(
        &mut b,
        json!({}),
        "[{type: 'context/pressure', seq: 1, contextOccupancy: 0.9}, \
          rec({session: undefined, contextOccupancy: 0.8}), rec({session: 42, contextOccupancy: 0.7}), \
          {type: 'context/error', error: 'x'}]",
    );
    assert_eq!(
        p["ignored"], 4,
        "no session: nothing to check, nothing applied"
    );
    assert_eq!(p["label"], "Context use unknown");
    let then = js(
        &mut b,
        "(() => { const applied = [m.update(rec({session: 'a', contextOccupancy: 0.1})), \
         m.update(rec({session: 'b', seq: 200, contextOccupancy: 0.9})), \
         m.update(rec({session: undefined, seq: 201, contextOccupancy: 0.9}))]; \
         return [applied, probe(m).dash, m.state.session]; })()",
    );
    assert_eq!(
        then,
        json!([[true, false, false], "10 100", "a"]),
        "the first session named binds the meter; no other gets in"
    );
}

#[test]
fn regression_issue21_properties_set_before_the_definition_are_kept() {
    let Some(mut b) = browser_on("/bare.html") else {
        return;
    };
    let got = js(
        &mut b,
        "(async () => { const m = document.createElement('context-meter'); \
         document.getElementById('root').append(m); const first = rec({contextOccupancy: 0.5}); \
         m.session = 's-42'; m.record = first; m.open = true; \
         const later = document.createElement('context-meter'); later.record = rec({contextOccupancy: 0.3}); \
         await import('/context-meter.js'); await customElements.whenDefined('context-meter'); \
         document.getElementById('root').append(later); \
         const own = ['session', 'record', 'open'].filter((p) => Object.hasOwn(m, p)); \
         const p = probe(m); const before = [own, m.getAttribute('session'), m.hasAttribute('open'), \
           p.open, p.label, m.record === first, probe(later).label]; \
         m.record = rec({seq: 200, contextOccupancy: 0.25}); m.open = false; \
         return [before, probe(m).label, probe(m).open]; })()",
    );
    assert_eq!(
        got,
        json!([
            [
                [],
                "s-42",
                true,
                true,
                "50% of context used",
                true,
                "30% of context used"
            ],
            "25% of context used",
            false
        ]),
        "the values reach the element, and its accessors are no longer hidden"
    );
}

#[test]
fn change_and_warning_events_say_what_changed() {
    let Some(mut b) = page() else { return };
    let events = js(
        &mut b,
        "(() => { const m = mk({session: 's-42'}), seen = []; for (const type of ['change', 'warning', 'openchange']) \
           m.addEventListener(type, (e) => seen.push([type, e instanceof CustomEvent, e.bubbles, \
             type === 'change' ? e.detail.state && [e.detail.state.seq, e.detail.state.projectedTokens] \
             : type === 'warning' ? e.detail.error : e.detail.open])); \
         const step = (what) => { seen.push(what); }; \
         step('first'); m.update(rec()); \
         step('same again'); m.update(rec()); \
         step('new figures'); m.update(rec({seq: 119, projectedTokens: 300})); \
         step('error'); m.update({type: 'context/error', session: 's-42', seq: 120, error: 'bad span'}); \
         step('same error'); m.update({type: 'context/error', session: 's-42', seq: 121, error: 'bad span'}); \
         step('cleared'); m.update(rec({seq: 122, projectedTokens: 300})); \
         step('other session'); m.update(rec({session: 's-1', seq: 123})); \
         step('reset'); m.reset(); \
         step('open'); m.open = true; \
         return seen; })()",
    );
    assert_eq!(
        events,
        json!([
            "first",
            ["change", true, false, [118, 244]],
            "same again",
            "new figures",
            ["change", true, false, [119, 300]],
            "error",
            ["warning", true, false, "bad span"],
            "same error",
            "cleared",
            ["change", true, false, [122, 300]],
            ["warning", true, false, null],
            "other session",
            "reset",
            ["change", true, false, null],
            "open",
            ["openchange", true, false, true]
        ])
    );
}

#[test]
fn one_polite_live_region_speaks_changes_at_most_once_an_interval() {
    let Some(mut b) = page() else { return };
    meter_with(&mut b, json!({"session": "s-42"}), "[rec()]");
    let regions = js(
        &mut b,
        "(() => { ContextMeter.announceInterval = 600; window.said = []; \
         window.live = m.shadowRoot.querySelector('[aria-live]'); \
         new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes) \
           if (n.textContent) said.push(n.textContent); }).observe(live, {childList: true}); \
         window.burst = (from, n) => { for (let i = 0; i < n; i++) \
           m.update(rec({seq: from + i, contextOccupancy: (from + i) / 1000})); }; \
         return [...m.shadowRoot.querySelectorAll('[aria-live]')].map((e) => e.getAttribute('aria-live')); })()",
    );
    assert_eq!(regions, json!(["polite"]), "one live region, polite");
    let settle = "new Promise((r) => setTimeout(() => r(said), 0))";
    // Closed: the figures change and nothing is said.
    js(&mut b, "burst(100, 20)");
    assert_eq!(js(&mut b, settle), json!([]), "closed: silent");
    // Opened: what it opens with is not announced.
    js(&mut b, "m.open = true");
    assert_eq!(js(&mut b, settle), json!([]), "opening: silent");
    // A burst of twenty: the first change at once, the last after the interval, once.
    js(&mut b, "burst(200, 20)");
    assert_eq!(js(&mut b, settle), json!(["20% of context used"]));
    let later = js(
        &mut b,
        "new Promise((r) => setTimeout(() => r(said), 1000))",
    );
    assert_eq!(
        later,
        json!(["20% of context used", "22% of context used"]),
        "the burst's end, said once"
    );
    // The same words again: nothing new to say.
    js(&mut b, "m.update(rec({seq: 300, contextOccupancy: 0.22}))");
    let same = js(
        &mut b,
        "new Promise((r) => setTimeout(() => r(said.length), 800))",
    );
    assert_eq!(same, 2);
    // Closing stops a pending announcement.
    js(&mut b, "burst(400, 1); burst(500, 1); m.open = false");
    let closed = js(
        &mut b,
        "new Promise((r) => setTimeout(() => r([said, live.textContent]), 800))",
    );
    assert_eq!(
        closed,
        json!([
            [
                "20% of context used",
                "22% of context used",
                "40% of context used"
            ],
            ""
        ])
    );
}

/// Where a meter's open panel is, against its ring and the viewport, and whether a point
/// inside each of its corners shows the panel (not something drawn over or clipped).
const PLACE: &str = "(() => { const r = m.shadowRoot, ring = r.querySelector('.ring').getBoundingClientRect(); \
     const panel = r.querySelector('.panel'), p = panel.getBoundingClientRect(); \
     const hits = [[p.left + 3, p.top + 3], [p.right - 3, p.top + 3], [p.left + 3, p.bottom - 3], \
       [p.right - 3, p.bottom - 3]].map(([x, y]) => document.elementFromPoint(x, y) === m \
       && m.shadowRoot.elementFromPoint(x, y)?.closest('.panel') === panel); \
     return { side: panel.dataset.side, ring: ring.toJSON(), panel: p.toJSON(), hits, \
       view: [document.documentElement.clientWidth, document.documentElement.clientHeight] }; })()";

/// A meter inside `container` (an element's style), at `ring` (its left and top), opened.
fn placed(b: &mut Browser, container: &str, dir: &str) -> Value {
    js(
        b,
        &format!(
            "(() => {{ const box = document.createElement('div'); box.dir = {dir:?}; \
             box.style.cssText = {container:?}; document.getElementById('root').replaceChildren(box); \
             window.m = mk({{}}, box); m.update(rec({{contextOccupancy: 0.4}})); m.open = true; \
             return true; }})()"
        ),
    );
    js(b, PLACE)
}

#[test]
fn the_panel_opens_where_it_fits_and_no_ancestor_clips_it() {
    let Some(mut b) = page() else { return };
    let inside = |p: &Value| {
        let [vw, vh] = [f(&p["view"][0]), f(&p["view"][1])];
        let q = &p["panel"];
        f(&q["left"]) >= 8.0
            && f(&q["top"]) >= 8.0
            && f(&q["right"]) <= vw - 8.0
            && f(&q["bottom"]) <= vh - 8.0
    };
    // Low in a composer (the common place): above the ring, its end edge on the ring's.
    let low = placed(
        &mut b,
        "position: fixed; left: 500px; top: 700px; overflow: hidden; width: 40px; height: 20px",
        "ltr",
    );
    assert_eq!(low["side"], "top", "{low}");
    assert!(f(&low["panel"]["bottom"]) <= f(&low["ring"]["top"]));
    assert!((f(&low["panel"]["right"]) - f(&low["ring"]["right"])).abs() < 1.0);
    assert!(inside(&low), "{low}");
    assert_eq!(low["hits"], json!([true, true, true, true]), "{low}");
    // At the top, in an overflow: hidden, transformed box 20px tall: below, whole, on top.
    let high = placed(
        &mut b,
        "position: fixed; left: 500px; top: 10px; overflow: hidden; width: 40px; height: 20px; \
         transform: translateZ(0); contain: paint",
        "ltr",
    );
    assert_eq!(high["side"], "bottom", "{high}");
    assert!(f(&high["panel"]["top"]) >= f(&high["ring"]["bottom"]));
    assert!(inside(&high), "{high}");
    assert_eq!(
        high["hits"],
        json!([true, true, true, true]),
        "not clipped by its ancestor: {high}"
    );
    // At the left edge: kept inside the viewport.
    let edge = placed(&mut b, "position: fixed; left: 0; top: 700px", "ltr");
    assert!(inside(&edge), "{edge}");
    // Right to left: its start edge on the ring's.
    let rtl = placed(&mut b, "position: fixed; left: 500px; top: 700px", "rtl");
    assert!((f(&rtl["panel"]["left"]) - f(&rtl["ring"]["left"])).abs() < 1.0);
    // The page scrolls: the panel goes with the ring.
    let before = placed(&mut b, "position: absolute; left: 500px; top: 600px", "ltr");
    let after = js(
        &mut b,
        &format!(
            "new Promise((r) => {{ scrollTo(0, 100); requestAnimationFrame(() => \
             requestAnimationFrame(() => r({PLACE}))); }})"
        ),
    );
    let moved = f(&before["panel"]["top"]) - f(&after["panel"]["top"]);
    assert!((moved - 100.0).abs() < 1.0, "moved {moved}px: {after}");
    assert!(inside(&after), "{after}");
}

#[test]
fn updates_make_no_formats_and_rebuild_no_rows() {
    let Some(mut b) = page() else { return };
    meter_with(
        &mut b,
        json!({"lang": "en", "open": ""}),
        "[rec5({capacity: 200000})]",
    );
    let got = js(
        &mut b,
        "(async () => { const r = m.shadowRoot, kids = (s) => [...r.querySelector(s).children]; \
         const rows = kids('dl'), segments = kids('.bar'); \
         const Real = Intl.NumberFormat; let made = 0; \
         Intl.NumberFormat = new Proxy(Real, { construct(t, a) { made++; return new t(...a); } }); \
         const churn = []; new MutationObserver((ms) => { for (const x of ms) for (const n of \
           [...x.addedNodes, ...x.removedNodes]) if (n.nodeType === 1) churn.push(n.nodeName); }) \
           .observe(r, { childList: true, subtree: true }); \
         for (let i = 0; i < 50; i++) m.update(rec5({ seq: 200 + i, capacity: 200000, \
           contextOccupancy: i / 100, messageTokens: 64 + i * 1000, untilCompactTokens: 1000 * i })); \
         const en = made; \
         const tw = mk({ lang: 'zh-TW' }); for (let i = 0; i < 50; i++) tw.update(rec({ seq: 200 + i })); \
         await Promise.resolve(); Intl.NumberFormat = Real; \
         return [en, made, churn, rows.every((row, i) => row === kids('dl')[i]), \
           segments.every((s, i) => s === kids('.bar')[i]), probe(m).rows[2][1], probe(m).compact]; })()",
    );
    assert_eq!(
        got,
        json!([
            0,
            3,
            [],
            true,
            true,
            "~49,064",
            "Auto-compacts at ~167K · ~49K to go"
        ]),
        "50 updates made no format (a new locale made its three once) and no element"
    );
}
