//! The page `agent-fold serve` serves, in headless Chromium: the server binary started on
//! 127.0.0.1:0 (its printed URL read), the board's rows ranked by how close each session is to
//! compacting, a row opened (a real click) to its detail — the meter, figures, chart and folded
//! frames — live updates from a followed log, the status line (skipped records, a vanished log),
//! `?lang=`; a real Claude Code session replayed in steps: the ring drops at the compaction,
//! before the provider's next reading, and the chart marks it with the projection's drop;
//! stateVersion 5 records on stdin: sorting, filtering, the threshold drawn, a page opened late
//! drawing a session's whole chart, a session the server forgets leaving the board. Screenshots
//! go to the target's tmp dir, and to docs/ when AGENT_FOLD_DOCS_SHOTS=1.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::chart::{HELPERS as CHART, at as held};
use super::harness::{Server, append, frame, last_pressure, real_session, scratch};
use super::{chromium, f, js, s as text, shot};
use crate::records::pressure_line;
use agent_fold_testkit::cdp::Browser;

/// Opens the server's page (with `query`) and waits for its first event (the board).
fn open(b: &mut Browser, s: &Server, query: &str) {
    b.goto(&format!("{}{query}", s.url))
        .expect("the page loads");
    b.wait_for("window.agentFold && agentFold.events > 0")
        .expect("the page gets the board");
}

/// The meter of a session, as a JS expression: the detail's, while it is that session's.
fn meter(id: &str) -> String {
    format!(
        "(agentFold.open === {} ? document.querySelector('#detail context-meter') : null)",
        json!(id)
    )
}

/// The board row of a session, as a JS expression (null when it is not drawn).
fn row(id: &str) -> String {
    format!(
        "document.querySelector('#board .row[data-session=\"' + CSS.escape({}) + '\"]')",
        json!(id)
    )
}

/// Opens a session's detail with a real click on its row, as a person would.
fn click_row(b: &mut Browser, id: &str) {
    b.wait_for(&format!("!!{}", row(id)))
        .unwrap_or_else(|e| panic!("{id}'s row is never drawn: {e:#}"));
    let at = js(
        b,
        &format!(
            "(() => {{ const r = {}.getBoundingClientRect(); return [r.x + r.width / 3, r.y + r.height / 2]; }})()",
            row(id)
        ),
    );
    b.click(f(&at[0]), f(&at[1])).unwrap();
    b.wait_for(&format!("agentFold.open === {}", json!(id)))
        .unwrap_or_else(|e| panic!("a click on {id}'s row opens it: {e:#}"));
}

/// What a session's detail shows: ring name and dash, the meter's state, figures, frames.
fn shown(b: &mut Browser, id: &str) -> Value {
    js(
        b,
        &format!(
            "(() => {{ const m = {}; if (!m) return null; const sec = m.closest('section'); \
             const r = m.shadowRoot; return {{ label: r.querySelector('.ring').getAttribute('aria-label'), \
             dash: r.querySelector('.arc').getAttribute('stroke-dasharray'), state: m.state, \
             figures: sec.querySelector('.figures').textContent, \
             frames: [...sec.querySelectorAll('.frames li')].map((li) => li.textContent), \
             chart: {{ points: +sec.querySelector('svg.chart').dataset.points, \
               lastSeq: sec.querySelector('svg.chart').dataset.lastSeq }} }}; }})()",
            meter(id)
        ),
    )
}

/// What the session's chart draws (chart.rs's `read`), once it has drawn `seq`.
fn chart(b: &mut Browser, id: &str, seq: u64) -> Value {
    js(b, CHART);
    let svg = format!(
        "{}.closest('section').querySelector('svg.chart')",
        meter(id)
    );
    b.wait_for(&format!("{svg}.dataset.lastSeq === '{seq}'"))
        .unwrap_or_else(|e| panic!("{id}'s chart never drew seq {seq}: {e:#}"));
    js(b, &format!("read({svg})"))
}

/// Waits until the session's meter shows `seq`; returns how long since `t`.
fn until_seq(b: &mut Browser, id: &str, seq: u64, t: Instant) -> Duration {
    b.wait_for(&format!(
        "(() => {{ const m = {}; return !!m && !!m.state && m.state.seq === {seq}; }})()",
        meter(id)
    ))
    .unwrap_or_else(|e| panic!("{id} never showed seq {seq}: {e:#}"));
    t.elapsed()
}

/// Waits until the session's row on the board shows `seq` (its rank, its figures).
fn until_row(b: &mut Browser, id: &str, seq: u64) {
    b.wait_for(&format!(
        "(() => {{ const r = {}; return !!r && r.entry && r.entry.row.seq === {seq}; }})()",
        row(id)
    ))
    .unwrap_or_else(|e| panic!("{id}'s row never showed seq {seq}: {e:#}"));
}

/// The sessions the board draws, in rank order, as a JS expression.
const ORDER: &str = "[...document.querySelectorAll('#board .row[data-session]')].filter((r) => r.isConnected && r.entry) \
     .sort((a, b) => a.getAttribute('aria-rowindex') - b.getAttribute('aria-rowindex')) \
     .map((r) => r.dataset.session)";

/// The sessions the board draws, in rank order.
fn sessions(b: &mut Browser) -> Vec<String> {
    js(b, ORDER)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| text(s).to_owned())
        .collect()
}

/// Waits until the board draws `want` first, in that order: the board re-ranks and paints in
/// its next animation frame, after the data (and the detail's meter) has moved. Panics, `why`
/// and the order drawn, when it never does.
fn until_order(b: &mut Browser, want: &[&str], why: &str) {
    let expr = format!(
        "JSON.stringify(({ORDER}).slice(0, {})) === {}",
        want.len(),
        json!(json!(want).to_string())
    );
    if let Err(e) = b.wait_for(&expr) {
        let drawn = sessions(b);
        panic!("{why}: the board draws {drawn:?}, never {want:?} first ({e:#})");
    }
}

#[test]
fn served_page_shows_each_session_and_follows_the_log_live() {
    let Some(mut b) = chromium() else { return };
    let dir = scratch("browser-live");
    let log = dir.join("agent.jsonl");
    let header = json!({"system": "be brief", "tools": [{"name": "bash"}], "context_window": 1000});
    append(
        &log,
        (frame("s-1", 0, "request/header", header.clone())
            + &frame("s-1", 1, "user/message", json!({"message": "hello"}))
            + &frame(
                "s-1",
                2,
                "assistant/message",
                json!({"message": "hi", "usage": {"input_tokens": 200}}),
            )
            + &frame("s-2", 0, "request/header", header)
            + &frame(
                "s-2",
                1,
                "assistant/message",
                json!({"message": "yo", "usage": {"input_tokens": 600}}),
            ))
            .as_bytes(),
    );
    let s = Server::start(&[log.to_str().unwrap()]);
    let t = Instant::now();
    open(&mut b, &s, "");
    // The frames are stamped days ago: idle sessions, shown once the toggle asks for them.
    b.wait_for("agentFold.rows === 2").unwrap();
    assert_eq!(js(&mut b, "agentFold.shown"), 0, "no live session");
    let at = js(
        &mut b,
        "(() => { const r = document.getElementById('show-idle').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()",
    );
    b.click(f(&at[0]), f(&at[1])).unwrap();
    b.wait_for("agentFold.shown === 2").unwrap();
    until_row(&mut b, "s-2", 1);
    println!("page loaded with its rows in {:?}", t.elapsed());
    until_order(
        &mut b,
        &["s-2", "s-1"],
        "one row per session, the fullest first (no threshold known)",
    );
    assert_eq!(sessions(&mut b).len(), 2, "one row per session");
    assert_eq!(
        js(&mut b, "agentFold.open"),
        Value::Null,
        "two sessions: none opened by itself"
    );
    click_row(&mut b, "s-1");
    until_seq(&mut b, "s-1", 2, t);
    let one = shown(&mut b, "s-1");
    assert_eq!(one["state"]["pressureTokens"], 200);
    assert_eq!(
        one["label"],
        format!(
            "{}% of context used",
            (one["state"]["contextOccupancy"].as_f64().unwrap() * 100.0).round()
        )
    );
    assert!(
        text(&one["figures"]).contains("of 1,000 tokens"),
        "{}",
        one["figures"]
    );
    assert!(
        js(&mut b, "document.getElementById('message').textContent")
            .as_str()
            .unwrap()
            .starts_with("following")
    );

    // A new reading appended to the log: the ring moves, without a reload.
    let before = one["dash"].clone();
    js(&mut b, "window.marker = 'same page'");
    let t = Instant::now();
    append(
        &log,
        frame(
            "s-1",
            3,
            "assistant/message",
            json!({"message": "more", "usage": {"input_tokens": 700}}),
        )
        .as_bytes(),
    );
    let took = until_seq(&mut b, "s-1", 3, t);
    println!("live update (append -> ring) in {took:?}");
    until_order(
        &mut b,
        &["s-1", "s-2"],
        "s-1 is the fuller now: ranked first",
    );
    assert_eq!(sessions(&mut b).len(), 2, "still one row per session");
    let now = shown(&mut b, "s-1");
    assert_eq!(now["state"]["pressureTokens"], 700);
    assert_eq!(
        chart(&mut b, "s-1", 3)["readings"]
            .as_array()
            .map(|r| r.len() > 1),
        Some(true),
        "the chart follows: {now}"
    );
    assert_ne!(now["dash"], before, "the ring moved");
    assert_eq!(js(&mut b, "window.marker"), "same page");

    // Three thinking counters at once: one folded frame in s-1's list.
    let counters: String = [("t1", 5), ("t2", 7), ("t3", 3)]
        .iter()
        .enumerate()
        .map(|(i, (id, d))| {
            json!({"type": "thinking/tokens", "session_id": "s-1", "id": id,
                   "timestamp": format!("2026-11-29T10:01:0{}Z", i + 1), "estimated_tokens_delta": d})
            .to_string()
                + "\n"
        })
        .collect();
    append(&log, counters.as_bytes());
    b.wait_for(&format!(
        "{}.closest('section').querySelectorAll('.frames li').length === 1",
        meter("s-1")
    ))
    .unwrap();
    let frames = shown(&mut b, "s-1")["frames"].clone();
    assert_eq!(
        frames,
        json!([
            "2026-11-29 10:01:03Z 3 × thinking/tokens folded · ~15 tokens · since 2026-11-29 10:01:01Z"
        ])
    );

    // A bad line is counted in the status line.
    append(&log, b"this is no JSON\n");
    b.wait_for("document.getElementById('skipped').textContent.startsWith('1 skipped')")
        .unwrap();
    b.viewport(880, 900, 2.0).unwrap();
    shot(&mut b, "serve-sessions.png");
    assert_eq!(
        js(&mut b, "document.getElementById('skipped').textContent"),
        "1 skipped (last: line 10: not a JSON object)"
    );

    // The page in Chinese, opened on s-1 (the hash): the meters speak it, the page's own words
    // stay English.
    open(&mut b, &s, "?lang=zh-CN#session=s-1");
    until_seq(&mut b, "s-1", 3, Instant::now());
    let label = shown(&mut b, "s-1")["label"].clone();
    assert!(text(&label).starts_with("上下文已使用 "), "{label}");

    // The log vanishes: the status line says so and the meters keep their figures.
    std::fs::remove_file(&log).unwrap();
    b.wait_for("document.getElementById('status').dataset.state === 'error'")
        .unwrap();
    let message = js(&mut b, "document.getElementById('message').textContent");
    assert!(text(&message).contains("vanished"), "{message}");
    assert_eq!(shown(&mut b, "s-1")["state"]["seq"], 3);
    // It comes back as another log: the page starts again with it.
    append(
        &log,
        frame("s-3", 0, "request/header", json!({"context_window": 10})).as_bytes(),
    );
    // The lone session opens by itself (idle as it is: this page does not show idle rows).
    until_seq(&mut b, "s-3", 0, Instant::now());
    assert_eq!(
        js(&mut b, "agentFold.rows"),
        1,
        "the board started again with the log"
    );
    // The status line follows within a poll of the rows.
    b.wait_for("document.getElementById('status').dataset.state === 'live'")
        .unwrap();
}

/// The module's last pressure record over the first `n` lines, read at once.
fn expected(lines: &[&[u8]], n: usize) -> Value {
    let records: Vec<_> = lines[..n]
        .iter()
        .map(|l| agent_fold::testing::jsonl::line_record(l))
        .collect();
    last_pressure(
        &records,
        &[("input", "claude-code"), ("capacity", "200000")],
    )
}

#[test]
fn a_real_compaction_drops_the_ring_before_the_next_reading() {
    let Some(real) = real_session().map(|dir| dir.with_extension("jsonl")) else {
        return;
    };
    let Some(mut b) = chromium() else { return };
    let text = std::fs::read(&real).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|c| *c == b'\n').collect();
    let boundary = lines
        .iter()
        .position(|l| String::from_utf8_lossy(l).contains(r#""subtype":"compact_boundary""#))
        .expect("the session has a compaction");
    let summary = boundary + 1;
    assert!(String::from_utf8_lossy(lines[summary]).contains("\"isCompactSummary\":true"));
    // The provider's next reading: the first assistant line after the summary with usage.
    let next_reading = (summary + 1..lines.len())
        .find(|&i| {
            let l = String::from_utf8_lossy(lines[i]);
            l.contains("\"type\":\"assistant\"") && l.contains("\"usage\"")
        })
        .unwrap();

    let dir = scratch("browser-compaction");
    let log = dir.join("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl");
    append(&log, b"");
    let s = Server::start(&[
        "--input",
        "claude-code",
        "-e",
        "capacity=200000",
        log.to_str().unwrap(),
    ]);
    b.viewport(880, 540, 2.0).unwrap();
    open(&mut b, &s, "");

    // The session up to the compaction, in four appends: each shows once it is read.
    let id = "ae4a77f8-aedd-4bc1-888f-c94edc91af04";
    let steps = [0, boundary / 4, boundary / 2, boundary * 3 / 4, boundary];
    for w in steps.windows(2) {
        let want = expected(&lines, w[1]);
        let t = Instant::now();
        append(&log, &lines[w[0]..w[1]].concat());
        let took = until_seq(&mut b, id, want["seq"].as_u64().unwrap(), t);
        println!(
            "lines {}..{}: seq {} on the page after {took:?}",
            w[0], w[1], want["seq"]
        );
        assert_eq!(
            shown(&mut b, id)["state"]["projectedTokens"],
            want["projectedTokens"]
        );
    }
    let before = shown(&mut b, id);
    let occupancy = before["state"]["contextOccupancy"].as_f64().unwrap();
    assert!(occupancy > 0.6, "about 71% full before: {occupancy}");
    // The panel open with a real click on the ring, as a person would.
    let at = js(
        &mut b,
        &format!(
            "(() => {{ const r = {}.shadowRoot.querySelector('.ring').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            meter(id)
        ),
    );
    b.click(at[0].as_f64().unwrap(), at[1].as_f64().unwrap())
        .unwrap();
    b.wait_for(&format!("{}.open", meter(id))).unwrap();
    shot(&mut b, "context-meter-before.png");

    // The compaction lands (boundary and summary), and nothing after it yet.
    let want = expected(&lines, summary + 1);
    let t = Instant::now();
    append(&log, &lines[boundary..summary + 1].concat());
    let took = until_seq(&mut b, id, want["seq"].as_u64().unwrap(), t);
    let after = shown(&mut b, id);
    println!(
        "compaction on the page after {took:?}: {} -> {}",
        before["label"], after["label"]
    );
    assert_eq!(after["state"]["projectedTokens"], want["projectedTokens"]);
    assert_eq!(
        after["state"]["pressureTokens"], before["state"]["pressureTokens"],
        "no new provider reading yet"
    );
    let dropped = after["state"]["contextOccupancy"].as_f64().unwrap();
    assert!(
        dropped < occupancy / 2.0,
        "the ring drops at once: {occupancy} -> {dropped}"
    );
    assert_ne!(after["dash"], before["dash"]);
    // The count and the reclaim, in the detail's figures and on the session's row.
    let says = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    assert!(
        !says(&before["figures"]).contains("compacted 1×"),
        "{}",
        before["figures"]
    );
    let figures = says(&after["figures"]);
    assert!(figures.contains("compacted 1× (last "), "{figures}");
    let [was, left] = [
        &want["lastCompactBeforeTokens"],
        &want["lastCompactAfterTokens"],
    ];
    if let (Some(was), Some(left)) = (was.as_u64(), left.as_u64()) {
        let fmt = |n: u64| {
            let s = n.to_string();
            let mut out = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let words = format!("{} → {} tokens", fmt(was), fmt(left));
        assert!(figures.contains(&words), "{figures} lacks {words}");
    }
    // The log's lines are months old: its session is idle, and a row once "show idle" is on.
    js(
        &mut b,
        "(() => { const t = document.getElementById('show-idle'); if (!t.checked) t.click(); return t.checked; })()",
    );
    b.wait_for(&format!("!!{}", row(id))).unwrap();
    let cell = js(
        &mut b,
        &format!(
            "(() => {{ const r = {}; return r && [r.querySelector('.c-comp').textContent, r.querySelector('.c-comp').title]; }})()",
            row(id)
        ),
    );
    assert_eq!(cell[0], "1×", "{cell}");
    assert!(says(&cell[1]).starts_with("last "), "{cell}");
    assert!(
        js(&mut b, &format!("{}.open", meter(id))) == json!(true),
        "the panel stayed open"
    );
    shot(&mut b, "context-meter-after.png");

    // The chart marks the compaction at that record: the projection drops there while the
    // provider's reading holds (a pixel is ~1,200 tokens of the 200,000 window).
    let seq = want["seq"].as_u64().unwrap();
    let drawn = chart(&mut b, id, seq);
    assert_eq!(drawn["compactions"], 1, "{drawn}");
    assert_eq!(drawn["marks"][0][0], seq);
    let x = f(&drawn["marks"][0][1]);
    let near = |a: f64, b: &Value| (a - f(b)).abs() <= 1500.0;
    let [high, low] = [x - 0.2, x].map(|x| held(&drawn["projection"], x));
    assert!(
        near(high, &before["state"]["projectedTokens"]) && near(low, &want["projectedTokens"]),
        "the projection drops at the mark: {high} -> {low}"
    );
    let [was, is] = [x - 0.2, x].map(|x| held(&drawn["readings"], x));
    let reading = &before["state"]["pressureTokens"];
    assert!(
        near(was, reading) && near(is, reading),
        "the reading holds: {was} -> {is}"
    );

    // Up to the provider's next reading, then the rest: the page ends where the module does.
    for (from, to) in [(summary + 1, next_reading), (next_reading, lines.len())] {
        let want = expected(&lines, to);
        let t = Instant::now();
        append(&log, &lines[from..to].concat());
        let took = until_seq(&mut b, id, want["seq"].as_u64().unwrap(), t);
        println!(
            "lines {from}..{to}: seq {} on the page after {took:?}",
            want["seq"]
        );
        assert_eq!(
            shown(&mut b, id)["state"]["projectedTokens"],
            want["projectedTokens"]
        );
    }
    // The whole session on the chart, bounded, its one compaction still marked.
    let last = expected(&lines, lines.len())["seq"].as_u64().unwrap();
    let drawn = chart(&mut b, id, last);
    let points = drawn["points"].as_u64().unwrap();
    assert!(points <= 512, "{points} points");
    assert_eq!(drawn["compactions"], 1);
    js(&mut b, &format!("{}.open = false", meter(id)));
    b.viewport(1100, 420, 2.0).unwrap();
    shot(&mut b, "serve-chart.png");
}

/// A stateVersion 5 pressure record of `session` as a line for stdin, stamped now (a live
/// session): the provider's reading, the projection and the surface's estimate.
fn record(session: &str, seq: u64, [pressure, projected, message]: [u64; 3]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let fields = json!({"timestamp": agent_fold_core::time::format(now),
           "pressureTokens": pressure, "projectedTokens": projected, "capacity": 200000,
           "contextOccupancy": projected as f64 / 200000.0, "systemTokens": 180,
           "toolsTokens": 2310, "messageTokens": message, "estimateScale": 1,
           "compactAtTokens": 167000, "untilCompactTokens": 167000u64.saturating_sub(projected),
           "stateVersion": 5});
    pressure_line(session, seq, fields)
}

/// A reading that is the whole projection.
fn v5(session: &str, seq: u64, tokens: u64) -> String {
    record(session, seq, [tokens, tokens, tokens / 2])
}

#[test]
fn the_board_ranks_sorts_filters_and_a_late_page_draws_the_whole_chart() {
    let Some(mut b) = chromium() else { return };
    let mut s = Server::start_with(&["--alert", "until<20000", "-"], &[], Stdio::piped());
    open(&mut b, &s, "");
    let ids: Vec<String> = (0..30).map(|i| format!("s-{i:02}")).collect();
    let lines: String = ids
        .iter()
        .enumerate()
        .map(|(i, id)| v5(id, 1, 100_000 + 1000 * i as u64))
        .collect();
    s.stdin().write_all(lines.as_bytes()).unwrap();
    b.wait_for("agentFold.rows === 30").unwrap();
    // Ranked closest to the compaction first: the fullest here.
    let want: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    until_order(&mut b, &want, "ranked closest to the compaction first");
    assert_eq!(sessions(&mut b).len(), 30, "one row per session");
    let bands = js(
        &mut b,
        "document.getElementById('counts-bands').textContent",
    );
    assert!(text(&bands).starts_with("Live: 30 sessions"), "{bands}");
    b.viewport(1280, 720, 2.0).unwrap();
    shot(&mut b, "serve-board.png");
    // Sorted by session with a real click on its header, then the other way.
    let header = |b: &mut Browser, name: &str| {
        js(
            b,
            &format!(
                "(() => {{ const h = [...document.querySelectorAll('#board .head [aria-sort]')].find((c) => c.textContent.trim().startsWith({})); \
                 const r = (h.querySelector('button') || h).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
                json!(name)
            ),
        )
    };
    let at = header(&mut b, "Session");
    b.click(f(&at[0]), f(&at[1])).unwrap();
    b.wait_for("agentFold.sort.key === 'session'").unwrap();
    until_order(&mut b, &["s-00", "s-01", "s-02"], "sorted by session");
    b.click(f(&at[0]), f(&at[1])).unwrap();
    b.wait_for("agentFold.sort.key === 'session' && agentFold.sort.order === 'desc'")
        .unwrap();
    until_order(&mut b, &["s-29", "s-28"], "sorted by session, descending");
    let sorted = js(
        &mut b,
        "[...document.querySelectorAll('#board .head [aria-sort]')].filter((c) => c.getAttribute('aria-sort') !== 'none').map((c) => c.getAttribute('aria-sort'))",
    );
    assert_eq!(sorted, json!(["descending"]));
    // Filtered as one types.
    js(
        &mut b,
        "(() => { const i = document.getElementById('filter'); i.value = 's-1'; i.dispatchEvent(new Event('input')); })()",
    );
    b.wait_for("agentFold.shown === 10").unwrap();
    let shown_now = sessions(&mut b);
    assert!(
        shown_now.iter().all(|s| s.starts_with("s-1")),
        "{shown_now:?}"
    );
    js(
        &mut b,
        "(() => { const i = document.getElementById('filter'); i.value = ''; i.dispatchEvent(new Event('input')); })()",
    );
    b.wait_for("agentFold.shown === 30").unwrap();

    // The threshold, where the records put it: ticks on the meter, a line on the chart.
    click_row(&mut b, "s-29");
    until_seq(&mut b, "s-29", 1, Instant::now());
    let one = shown(&mut b, "s-29");
    assert!(
        text(&one["figures"]).contains("auto-compacts at ~167,000 (~38,000 to go)"),
        "{}",
        one["figures"]
    );
    let ticks = js(
        &mut b,
        &format!(
            "(() => {{ const r = {}.shadowRoot; return ['.ring-tick', '.bar-tick'].map((s) => \
             getComputedStyle(r.querySelector(s)).display !== 'none'); }})()",
            meter("s-29")
        ),
    );
    assert_eq!(ticks, json!([true, true]));
    // s-29 goes on to its threshold (its row alerts) and compacts: the drop marked under the
    // threshold line.
    let mut more = String::new();
    for seq in 2..=12 {
        let tokens = 129_000 + 3_000 * seq;
        more += &record("s-29", seq, [tokens - 900, tokens, tokens / 2]);
    }
    more += &record("s-29", 13, [164_100, 26_000, 9_000]);
    for seq in 14..=20 {
        let tokens = 30_000 + 2_000 * seq;
        more += &record("s-29", seq, [tokens, tokens, 9_000 + 1_000 * seq]);
    }
    s.stdin().write_all(more.as_bytes()).unwrap();
    let drawn = chart(&mut b, "s-29", 20);
    let threshold = drawn["threshold"].as_array().unwrap();
    assert!(
        !threshold.is_empty()
            && threshold
                .iter()
                .all(|v| (f(&v[2]) - 167000.0).abs() < 1500.0),
        "{drawn}"
    );
    assert_eq!(drawn["marks"].as_array().unwrap().len(), 1);
    assert_eq!(drawn["marks"][0][0], 13);
    b.viewport(1280, 720, 2.0).unwrap();
    shot(&mut b, "serve-detail.png");

    // A page opened now, on s-29: its whole chart from the server's history, not from now on.
    open(&mut b, &s, "#session=s-29");
    until_seq(&mut b, "s-29", 20, Instant::now());
    let late = chart(&mut b, "s-29", 20);
    assert_eq!(
        late["points"], drawn["points"],
        "every point from seq 1: {late}"
    );
    assert_eq!(late["marks"], drawn["marks"]);
    assert_eq!(late["readings"], drawn["readings"]);
}

/// A board of thousands: the DOM holds the rows in view whatever the count, a scroll to the end
/// draws the last rows, a row past the cap the server keeps leaves the board.
#[test]
fn thousands_of_sessions_are_rows_in_view_and_the_forgotten_leave() {
    let Some(mut b) = chromium() else { return };
    let mut s = Server::start_with(&["--max-sessions", "3000", "-"], &[], Stdio::piped());
    b.viewport(1280, 800, 1.0).unwrap();
    open(&mut b, &s, "");
    let lines: String = (0..3000)
        .map(|i| v5(&format!("o-{i:04}"), 1, 1_000 + i))
        .collect();
    s.stdin().write_all(lines.as_bytes()).unwrap();
    b.wait_for("agentFold.rows === 3000").unwrap();
    let rendered = js(&mut b, "agentFold.rendered").as_u64().unwrap();
    assert!(rendered < 100, "{rendered} row elements for 3,000 rows");
    js(&mut b, "document.getElementById('board').scrollTop = 1e9");
    b.wait_for("[...document.querySelectorAll('#board .row[data-session]')].some((r) => r.dataset.session === 'o-0000')")
        .expect("the last-ranked row is drawn at the end");
    assert!(js(&mut b, "agentFold.rendered").as_u64().unwrap() < 100);
    // One more session: the server forgets the idlest, and the page drops its row.
    s.stdin()
        .write_all(v5("o-3000", 1, 500).as_bytes())
        .unwrap();
    b.wait_for("agentFold.rows === 3000 && !!document.querySelector('#board')")
        .unwrap();
    b.wait_for(&format!("!{}", row("o-0000")))
        .expect("the forgotten session's row goes");
    // A row in view changes: the page measures how long the record took to reach it.
    js(&mut b, "document.getElementById('board').scrollTop = 0");
    s.stdin()
        .write_all(v5("o-2999", 2, 4_000).as_bytes())
        .unwrap();
    b.wait_for("agentFold.latency.length > 0")
        .expect("the page measures record-to-row latency");
}
