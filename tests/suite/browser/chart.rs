//! The served page's chart (`ui/serve/chart.js`) on hand-made states, stateVersion 4 and 5:
//! what it draws where, the compactions it marks, and its bound.

use serde_json::{Value, json};

use super::{f, js, page, s};
use agent_fold_testkit::cdp::Browser;

/// Helpers in a page: `st(seq, pressure, projected, message, extra)` a meter state, and
/// `read(svg)` what a chart's SVG draws, its paths as `[command, x, y]` vertices and every y
/// turned back into tokens by the grid (0 and the top line).
pub(super) const HELPERS: &str = "(() => { \
    window.st = (seq, pressureTokens, projectedTokens, messageTokens, extra = {}) => ({ session: 's', \
      seq, pressureTokens, projectedTokens, messageTokens, capacity: 200000, ...extra }); \
    window.trace = (d) => { const out = []; let x = 0, y = 0; \
      for (const [, c, a, b] of (d || '').matchAll(/([MHVa])(-?[\\d.]+)(?: (-?[\\d.]+))?/g)) { \
        if (c === 'M') { x = +a; y = +b; } else if (c === 'H') x = +a; else if (c === 'V') y = +a; else continue; \
        out.push([c, x, y]); } return out; }; \
    window.read = (svg) => { const q = (s) => svg.querySelector(s); \
      const lines = [...svg.querySelectorAll('.grid line')]; \
      const y0 = +lines[0].getAttribute('y1'), yTop = +lines.at(-1).getAttribute('y1'), top = +svg.dataset.top; \
      const tokens = (y) => Math.round((y0 - y) / (y0 - yTop) * top); \
      const path = (s) => trace(q(s).getAttribute('d')).map(([c, x, y]) => [c, x, tokens(y)]); \
      return { points: +svg.dataset.points, compactions: +svg.dataset.compactions, top, \
        projection: path('.projection path'), readings: path('.readings path'), \
        threshold: path('.threshold path'), dots: (q('.dots path').getAttribute('d').match(/M/g) || []).length, \
        marks: [...svg.querySelectorAll('.compaction')].map((g) => [+g.dataset.seq, \
          +g.querySelector('line').getAttribute('x1')]), \
        labels: [...svg.querySelectorAll('.labels text')].map((t) => t.textContent), \
        name: svg.getAttribute('aria-label'), elements: svg.querySelectorAll('*').length }; }; \
    return true; })()";

fn chart_page() -> Option<Browser> {
    let mut b = page()?;
    js(&mut b, HELPERS);
    Some(b)
}

/// The y (in tokens) a step path holds at `x`: the last vertex at or before it.
pub(super) fn at(path: &Value, x: f64) -> f64 {
    let mut y = None;
    for v in path.as_array().unwrap() {
        if f(&v[1]) <= x + 0.05 {
            y = Some(f(&v[2]));
        }
    }
    y.unwrap_or_else(|| panic!("{path} has nothing at x {x}"))
}

#[test]
fn the_chart_draws_readings_projection_threshold_and_marks_the_compaction() {
    let Some(mut b) = chart_page() else { return };
    // A session in stateVersion 5 records: two readings, growth, a compaction (the surface
    // shrinks, the reading holds), then the next reading.
    let got = js(
        &mut b,
        "(() => { const c = new SessionChart(); document.getElementById('root').replaceChildren(c.svg); \
         const v5 = { compactAtTokens: 167000 }; \
         for (const s of [st(0, null, null, 0, v5), st(2, 1000, 1000, 100, v5), st(3, 1000, 5000, 4100, v5), \
           st(4, 150000, 150000, 60000, v5), st(5, 150000, 160000, 70000, v5), \
           st(6, 150000, 30000, 5000, v5), st(7, 32000, 32000, 5200, v5)]) c.add(s); \
         c.draw(); return read(c.svg); })()",
    );
    assert_eq!(got["points"], 7);
    assert_eq!(got["top"], 200000, "drawn to the window's scale");
    assert_eq!(got["compactions"], 1);
    let marks = got["marks"].as_array().unwrap();
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0][0], 6, "marked at the record the surface shrank in");
    let x6 = f(&marks[0][1]);
    // The projection drops at the mark, from ~160,000 to ~30,000 (a pixel is ~1,100 tokens).
    let projection = &got["projection"];
    let near = |a: f64, b: f64| (a - b).abs() <= 1200.0;
    assert!(near(at(projection, x6 - 0.2), 160000.0), "{projection}");
    assert!(near(at(projection, x6), 30000.0), "{projection}");
    let drop = projection
        .as_array()
        .unwrap()
        .iter()
        .position(|v| v[0] == "V" && (f(&v[1]) - x6).abs() < 0.05)
        .expect("a vertical step at the mark");
    assert!(near(f(&projection[drop - 1][2]), 160000.0));
    // The readings hold through it, and step at the next one.
    let readings = &got["readings"];
    assert!(near(at(readings, x6 - 0.2), 150000.0) && near(at(readings, x6), 150000.0));
    assert!(near(at(readings, 1e9), 32000.0), "{readings}");
    assert_eq!(got["dots"], 3, "a dot at each of three readings");
    // The threshold: flat at 167,000 across the session, and labelled.
    let threshold = got["threshold"].as_array().unwrap();
    assert!(threshold.len() >= 2);
    assert!(threshold.iter().all(|v| near(f(&v[2]), 167000.0)));
    assert!(
        got["labels"]
            .as_array()
            .unwrap()
            .contains(&json!("auto-compacts at ~167K")),
        "{}",
        got["labels"]
    );
    assert_eq!(
        got["name"],
        "The session from seq 0 to 7: 1 compaction, now ~32,000 tokens of 200,000, auto-compacts at ~167,000"
    );

    // The same session in stateVersion 4 records: no threshold, nothing said of one.
    let v4 = js(
        &mut b,
        "(() => { const c = new SessionChart(); for (const s of [st(0, null, null, 0), \
         st(2, 1000, 1000, 100), st(5, 150000, 160000, 70000), st(6, 150000, 30000, 5000)]) c.add(s); \
         c.draw(); return read(c.svg); })()",
    );
    assert_eq!(v4["threshold"], json!([]));
    assert_eq!(v4["compactions"], 1);
    assert!(
        !v4["labels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| s(l).contains("auto-compacts"))
    );
    assert!(!s(&v4["name"]).contains("auto-compacts"));
}

#[test]
fn a_compaction_is_what_the_records_say() {
    let Some(mut b) = chart_page() else { return };
    let marked = |b: &mut Browser, states: &str| {
        js(
            b,
            &format!(
                "(() => {{ const c = new SessionChart(); for (const s of [{states}]) c.add(s); \
                 c.draw(); return read(c.svg).marks.map((m) => m[0]); }})()"
            ),
        )
    };
    // The surface grows, a reading comes in lower (the provider's own doing): no compaction.
    assert_eq!(
        marked(
            &mut b,
            "st(1, 9000, 9000, 100), st(2, 9000, 9500, 600), st(3, 7000, 7000, 900)"
        ),
        json!([])
    );
    // A partial session (no surface figure): the projection falls while the reading holds.
    assert_eq!(
        marked(
            &mut b,
            "st(40, 9000, 9500, null), st(41, 9000, 2000, null), st(42, 3000, 3000, null)"
        ),
        json!([41])
    );
    // The projection falls with a new reading at once, the surface unknown: not claimed.
    assert_eq!(
        marked(&mut b, "st(40, 9000, 9500, null), st(41, 2000, 2000, null)"),
        json!([])
    );
    // The window unknown: scaled to what was seen, with room above.
    let top = js(
        &mut b,
        "(() => { const c = new SessionChart(); c.add(st(1, 1000, 1000, 10, {capacity: null})); \
         c.add(st(2, 1000, 50000, 20, {capacity: null})); c.draw(); return read(c.svg).top; })()",
    );
    assert_eq!(f(&top), 55000.0);
}

#[test]
fn the_chart_keeps_at_most_max_points_and_every_compaction() {
    let Some(mut b) = chart_page() else { return };
    let got = js(
        &mut b,
        "(() => { const c = new SessionChart(); let message = 100; \
         for (let i = 0; i < 2000; i++) { message = i === 1234 || i === 1500 ? 50 : message + 10; \
           c.add(st(i, 1000 + 10 * (i - (i % 5)), 1000 + message, message)); } \
         c.draw(); const r = read(c.svg), pts = c.points; \
         return { max: MAX_POINTS, kept: pts.length, first: pts[0].x, last: pts.at(-1).x, \
           marks: r.marks.map((m) => m[0]), elements: r.elements, \
           drops: r.marks.map(([, x]) => [at(r.projection, x - 0.2), at(r.projection, x)]) }; })()"
            .replace(
                "c.draw(); const r",
                "const at = (p, x) => p.filter((v) => v[1] <= x + 0.05).at(-1)[2]; c.draw(); const r",
            )
            .as_str(),
    );
    let max = got["max"].as_u64().unwrap();
    assert_eq!(max, 512);
    let kept = got["kept"].as_u64().unwrap();
    assert!(kept <= max && kept > max / 4, "{kept} points kept");
    assert_eq!([&got["first"], &got["last"]], [&json!(0), &json!(1999)]);
    let marks: Vec<u64> = got["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(marks.len(), 2, "{got}");
    assert!((1234..1242).contains(&marks[0]) && (1500..1508).contains(&marks[1]));
    for d in got["drops"].as_array().unwrap() {
        assert!(
            f(&d[0]) > f(&d[1]) + 1000.0,
            "the projection still drops at the mark: {d}"
        );
    }
    assert!(
        got["elements"].as_u64().unwrap() < 50,
        "a bounded drawing: {}",
        got["elements"]
    );
    // An older seq than the last point: another run, drawn from its start.
    let again = js(
        &mut b,
        "(() => { const c = new SessionChart(); c.add(st(9, 1, 1, 1)); c.add(st(3, 2, 2, 2)); \
         return c.points.map((p) => p.x); })()",
    );
    assert_eq!(again, json!([3]));
}
