//! What a meter draws and says for given records: ring, header, `~used / capacity`, bar, rows,
//! the compaction's ticks and line (stateVersion 4 and 5 records), locales, theming, forced
//! colours.

use serde_json::{Value, json};

use super::{f, js, meter, meter_with, page, s};
use agent_fold_testkit::cdp::Browser;

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
    assert_eq!(p["tag"], "BUTTON", "the ring is a <button>");
    assert_eq!(p["type"], "button", "which submits no form");
    assert_eq!(p["expanded"], "false");
    assert_eq!(p["controls"], true, "aria-controls names the panel");
    assert_eq!(
        [f(&p["ring"][0]), f(&p["ring"][1])],
        [14.0, 14.0],
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

    // Inside a form, a click on the ring opens the panel and submits nothing.
    let submitted = js(
        &mut b,
        "(() => { const form = document.createElement('form'); let submits = 0; \
         form.addEventListener('submit', (e) => { e.preventDefault(); submits++; }); \
         document.getElementById('root').replaceChildren(form); const m = mk({}, form); \
         m.shadowRoot.querySelector('.ring').click(); return [submits, m.open]; })()",
    );
    assert_eq!(submitted, json!([0, true]));
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

/// An open meter with `attrs` fed `records`: its probe.
fn open(b: &mut Browser, attrs: Value, records: &str) -> Value {
    let mut attrs = attrs;
    attrs["open"] = json!("");
    meter_with(b, attrs, records)
}

/// An open meter fed one record with `fields` (a JS object's members): its probe.
fn bar(b: &mut Browser, fields: &str) -> Value {
    open(b, json!({}), &format!("[rec({{{fields}}})]"))
}

#[test]
fn bar_splits_the_occupancy_and_renders_no_empty_segment() {
    let Some(mut b) = page() else { return };
    let p = bar(
        &mut b,
        "contextOccupancy: 0.5, systemTokens: 100, toolsTokens: 300, messageTokens: 600",
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
        .map(|s| f(&s["px"]))
        .sum();
    let width = f(&p["bar"]["width"]);
    assert!(
        (total - width / 2.0).abs() < 1.0,
        "segments {total}px of a {width}px bar"
    );
    assert_eq!(
        p["segments"][2]["colour"], "rgb(139, 92, 246)",
        "messages are purple"
    );

    // Occupancy 0: no segment at all, whatever the shares.
    let zero = bar(&mut b, "contextOccupancy: 0");
    assert_eq!(zero["segments"], json!([]));
    // An empty category has no segment, not a sliver.
    let no_tools = bar(&mut b, "toolsTokens: 0");
    let cats = agent_fold_testkit::strings_of(&no_tools["segments"], "category");
    assert_eq!(cats, ["system", "messages"]);
    // Over capacity: the bar is full, not longer.
    let over = bar(
        &mut b,
        "contextOccupancy: 1.3, systemTokens: 1, toolsTokens: 1, messageTokens: 2",
    );
    let widths = agent_fold_testkit::strings_of(&over["segments"], "width");
    assert_eq!(widths, ["25%", "25%", "50%"]);
    // Unknown occupancy: nothing drawn.
    let unknown = bar(&mut b, "contextOccupancy: null");
    assert_eq!(unknown["segments"], json!([]));
    // A partial session's null share: one neutral segment for the whole occupancy.
    let partial = bar(
        &mut b,
        "partial: true, contextOccupancy: 0.26, messageTokens: null",
    );
    assert_eq!(
        partial["segments"],
        json!([{"category": "unknown", "width": "26%", "colour": "rgb(156, 163, 175)",
                "px": partial["segments"][0]["px"]}])
    );
    // The same meter fed again: the segments follow (the last record wins, nothing stays).
    let again = js(
        &mut b,
        "(() => { m.update(rec({seq: 200, contextOccupancy: 0.1})); return probe(m).segments; })()",
    );
    let cats = agent_fold_testkit::strings_of(&again, "category");
    assert_eq!(cats, ["system", "tools", "messages"]);
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
        // A session seen from its start whose log carries no system prompt or tool list (an
        // agent's own log): its panel says so, in every locale, never ~0.
        (
            "en",
            "[rec({systemTokens: null, toolsTokens: null, messageTokens: 75000})]",
            json!([
                ["System prompt", "not in this log"],
                ["Tools", "not in this log"],
                ["Messages", "~75,000"]
            ]),
            false,
        ),
        (
            "zh-CN",
            "[rec({systemTokens: null, toolsTokens: 512})]",
            json!([
                ["系统提示词", "日志中没有"],
                ["工具", "~512"],
                ["对话", "~64"]
            ]),
            false,
        ),
        (
            "zh-TW",
            "[rec({systemTokens: null, toolsTokens: null})]",
            json!([
                ["系統提示詞", "日誌中沒有"],
                ["工具", "日誌中沒有"],
                ["對話", "~64"]
            ]),
            false,
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

/// Where the ticks are on screen: the ring tick's angle (degrees clockwise from the top, from
/// its drawn box's centre around the ring's) and the bar tick's share of the bar.
fn ticks_on_screen(b: &mut Browser) -> Value {
    js(
        b,
        "(() => { const r = m.shadowRoot, q = (s) => r.querySelector(s); \
         const c = q('.ring').getBoundingClientRect(), t = q('.ring-tick').getBoundingClientRect(); \
         const dx = t.x + t.width / 2 - (c.x + c.width / 2), dy = t.y + t.height / 2 - (c.y + c.height / 2); \
         const bar = q('.bar').getBoundingClientRect(), bt = q('.bar-tick').getBoundingClientRect(); \
         return [(Math.atan2(dx, -dy) * 180 / Math.PI + 360) % 360, \
                 (bt.x + bt.width / 2 - bar.x) / bar.width]; })()",
    )
}

#[test]
fn the_compaction_tick_and_line_show_only_where_the_record_says() {
    let Some(mut b) = page() else { return };
    // A stateVersion 5 record: 167,000 of a 200,000 window is 83.5%, 300.6° round the ring.
    let v5 = "rec5({capacity: 200000, projectedTokens: 127000, contextOccupancy: 0.635, \
              untilCompactTokens: 40000})";
    let en = open(&mut b, json!({"lang": "en"}), &format!("[{v5}]"));
    assert_eq!(en["ringTick"], "rotate(300.6 7 7)");
    assert_eq!(en["barTick"], "83.5%");
    assert_eq!(en["compact"], "Auto-compacts at ~167K · ~40K to go");
    let [angle, share] = [0, 1].map(|i| f(&ticks_on_screen(&mut b)[i]));
    assert!(
        (angle - 300.6).abs() < 8.0,
        "the ring tick drawn at {angle}°"
    );
    assert!(
        (share - 0.835).abs() < 0.02,
        "the bar tick drawn at {share}"
    );
    for (lang, line) in [
        ("zh-CN", "约 16.7万 时自动压缩 · 还剩约 4万"),
        ("zh-TW", "約 16.7萬 時自動壓縮 · 還剩約 4萬"),
    ] {
        let p = open(&mut b, json!({ "lang": lang }), &format!("[{v5}]"));
        assert_eq!(p["compact"], line, "{lang}");
        assert_eq!(p["barTick"], "83.5%", "{lang}");
    }

    let case = |b: &mut Browser, fields: &str| {
        let p = open(b, json!({"lang": "en"}), &format!("[rec5({fields})]"));
        [
            p["ringTick"].clone(),
            p["barTick"].clone(),
            p["compact"].clone(),
        ]
    };
    let tick = |share: &str| json!(format!("rotate({share} 7 7)"));
    // Reached: due now, never "~0 to go".
    assert_eq!(
        case(&mut b, "{capacity: 200000, untilCompactTokens: 0}"),
        [
            tick("300.6"),
            json!("83.5%"),
            json!("Auto-compacts at ~167K · due now")
        ]
    );
    // The threshold known, the projection not: where, and not how far.
    assert_eq!(
        case(
            &mut b,
            "{capacity: 200000, projectedTokens: null, untilCompactTokens: null}"
        ),
        [
            tick("300.6"),
            json!("83.5%"),
            json!("Auto-compacts at ~167K")
        ]
    );
    // The window unknown: nowhere to put a tick, but the line still says it.
    assert_eq!(
        case(&mut b, "{capacity: null, contextOccupancy: null}"),
        [
            Value::Null,
            Value::Null,
            json!("Auto-compacts at ~167K · ~167K to go")
        ]
    );
    // Beyond the window: no tick inside it.
    assert_eq!(
        case(&mut b, "{capacity: 100000}")[..2],
        [Value::Null, Value::Null]
    );
    // Unknown, or not a number: nothing drawn, nothing said.
    for fields in [
        "{compactAtTokens: null, untilCompactTokens: null}",
        "{compactAtTokens: '167000'}",
    ] {
        assert_eq!(
            case(&mut b, fields),
            [Value::Null, Value::Null, Value::Null],
            "{fields}"
        );
    }
    // A stateVersion 4 record has no threshold: nothing, and none left from a v5 one before it.
    let v4 = open(&mut b, json!({"lang": "en"}), "[rec()]");
    assert_eq!(
        [&v4["ringTick"], &v4["barTick"], &v4["compact"]],
        [&Value::Null; 3]
    );
    let after = js(
        &mut b,
        "(() => { m.update(rec5({seq: 200, capacity: 200000})); const a = probe(m); \
         m.update(rec({seq: 201})); const b = probe(m); \
         return [a.ringTick, a.compact, b.ringTick, b.barTick, b.compact]; })()",
    );
    assert_eq!(
        after,
        json!([
            "rotate(300.6 7 7)",
            "Auto-compacts at ~167K · ~167K to go",
            null,
            null,
            null
        ])
    );
}

#[test]
fn locales_are_pluggable_and_zh_tw_reads_traditional() {
    let Some(mut b) = page() else { return };
    assert_eq!(
        js(&mut b, "ContextMeter.locales"),
        json!(["en", "zh-CN", "zh-TW"])
    );
    // Each tag finds its table by language and script: Hong Kong reads Traditional, Singapore
    // Simplified, a bare zh Simplified, British English English.
    for (lang, label) in [
        ("zh-TW", "上下文佔用未知"),
        ("zh-HK", "上下文佔用未知"),
        ("zh-Hant", "上下文佔用未知"),
        ("zh-SG", "上下文占用未知"),
        ("zh", "上下文占用未知"),
        ("en-GB", "Context use unknown"),
        ("not a tag!", "Context use unknown"),
    ] {
        assert_eq!(meter(&mut b, lang, "[]")["label"], label, "{lang}");
    }
    let tw = meter(
        &mut b,
        "zh-TW",
        "[rec({partial: true, messageTokens: null})]",
    );
    assert_eq!(
        tw["rows"],
        json!([["系統提示詞", "~180"], ["工具", "~2,310"], ["對話", "未知"]])
    );

    // A meter already on the page speaks a locale added after it.
    meter(&mut b, "fr", "[rec({contextOccupancy: 0.5})]");
    let added = js(
        &mut b,
        "(() => { ContextMeter.addLocale('fr', { 'context.aria': '{percent} du contexte utilisé', \
         'context.tools': 'Outils' }); const p = probe(m); \
         return [p.label, p.head, p.rows[1][0], p.rows[0][0], ContextMeter.locales]; })()",
    );
    assert_eq!(
        added,
        json!([
            "50\u{a0}% du contexte utilisé",
            ["50\u{a0}%", " du contexte utilisé"],
            "Outils",
            "System prompt",
            ["en", "zh-CN", "zh-TW", "fr"]
        ]),
        "French figures (a no-break space before %) and words; a key left out reads en"
    );
    // Overriding a few strings of a locale keeps the others.
    let zh = js(
        &mut b,
        "(() => { ContextMeter.addLocale('zh-CN', { 'context.tools': '工具定义' }); \
         const p = probe(mk({lang: 'zh-CN'})); return [p.rows[1][0], p.rows[0][0]]; })()",
    );
    assert_eq!(zh, json!(["工具定义", "系统提示词"]));

    // Refusals: a TypeError naming what is wrong, and nothing changed.
    let refused = js(
        &mut b,
        "(() => { const out = []; for (const [tag, strings] of [\
           ['', {}], [42, {}], ['de', null], ['de', ['x']], ['de', {'context.nope': 'x'}], \
           ['de', {'context.tools': 7}], ['de', {'context.aria': 'Kontext benutzt'}], \
           ['de', {'context.compactAt': 'bei ~{at}'}]]) { \
           try { ContextMeter.addLocale(tag, strings); out.push('accepted'); } \
           catch (e) { out.push(`${e.name}: ${e.message}`); } } \
         return [out, ContextMeter.locales]; })()",
    );
    let messages: Vec<&str> = refused[0].as_array().unwrap().iter().map(s).collect();
    for (got, want) in messages.iter().zip([
        r#"TypeError: ContextMeter.addLocale("", …): "" is not a language tag such as "fr" or "pt-BR""#,
        r#"TypeError: ContextMeter.addLocale(42, …): 42 is not a language tag"#,
        r#"TypeError: ContextMeter.addLocale("de", …): the strings must be an object keyed by context.aria, "#,
        r#"TypeError: ContextMeter.addLocale("de", …): the strings must be an object"#,
        r#"TypeError: ContextMeter.addLocale("de", …): there is no string "context.nope"; the keys are context.aria"#,
        r#"TypeError: ContextMeter.addLocale("de", …): context.tools must be a string, not number"#,
        r#"TypeError: ContextMeter.addLocale("de", …): context.aria must keep {percent} (en: "{percent} of context used")"#,
        r#"TypeError: ContextMeter.addLocale("de", …): context.compactAt must keep {left}"#,
    ]) {
        assert!(got.starts_with(want), "{got}\n  wanted {want}…");
    }
    assert_eq!(messages.len(), 8);
    assert_eq!(refused[1], json!(["en", "zh-CN", "zh-TW", "fr"]));
}

#[test]
fn css_custom_properties_theme_colours_and_sizes() {
    let Some(mut b) = page() else { return };
    meter_with(
        &mut b,
        json!({"open": "", "style": "--context-meter-ring: rgb(1, 2, 3); \
               --context-meter-messages: rgb(4, 5, 6); --context-meter-ring-size: 22px; \
               --context-meter-bar-height: 6px; --context-meter-panel-width: 300px; \
               --context-meter-tick: rgb(7, 8, 9); --context-meter-panel-bg: rgb(10, 11, 12)"}),
        "[rec5({contextOccupancy: 0.5, capacity: 200000})]",
    );
    let themed = js(
        &mut b,
        "(() => { const r = m.shadowRoot, q = (s) => r.querySelector(s), cs = (s) => getComputedStyle(q(s)); \
         const ring = q('.ring').getBoundingClientRect(); \
         return [cs('.arc').stroke, cs('.segment.messages').backgroundColor, cs('.row.messages .swatch').backgroundColor, \
                 [ring.width, ring.height], q('.bar').getBoundingClientRect().height, q('.panel').offsetWidth, \
                 cs('.ring-tick').stroke, cs('.bar-tick').backgroundColor, cs('.panel').backgroundColor]; })()",
    );
    assert_eq!(
        themed,
        json!([
            "rgb(1, 2, 3)",
            "rgb(4, 5, 6)",
            "rgb(4, 5, 6)",
            [22, 22],
            6,
            300,
            "rgb(7, 8, 9)",
            "rgb(7, 8, 9)",
            "rgb(10, 11, 12)"
        ])
    );
}

#[test]
fn forced_colors_keep_the_bar_the_ring_and_the_ticks_visible() {
    let Some(mut b) = page() else { return };
    b.call(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "forced-colors", "value": "active"}]}),
    )
    .unwrap();
    assert_eq!(
        js(&mut b, "matchMedia('(forced-colors: active)').matches"),
        true
    );
    let colours = "(() => { const r = m.shadowRoot, q = (s) => r.querySelector(s), cs = (s) => getComputedStyle(q(s)); \
         return { bar: cs('.bar').backgroundColor, segments: [...r.querySelectorAll('.segment:not([hidden])')] \
           .map((s) => getComputedStyle(s).backgroundColor), arc: cs('.arc').stroke, \
           panel: cs('.panel').backgroundColor, tick: cs('.bar-tick').backgroundColor, \
           ringTick: cs('.ring-tick').stroke }; })()";
    open(
        &mut b,
        json!({}),
        "[rec5({contextOccupancy: 0.5, capacity: 200000, systemTokens: 1, toolsTokens: 1, messageTokens: 2})]",
    );
    let c = js(&mut b, colours);
    let segments = c["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 3);
    for seg in segments {
        assert_ne!(seg, &c["bar"], "a segment stands out from the bar: {c}");
        assert_ne!(seg, &c["panel"], "and from the panel: {c}");
    }
    assert_ne!(
        c["tick"], segments[0],
        "the tick stands out from the segments"
    );
    assert_ne!(c["tick"], c["panel"]);
    assert_ne!(c["arc"], c["panel"], "the ring is drawn: {c}");
    assert_ne!(
        c["ringTick"], c["arc"],
        "the ring's tick stands out from the arc"
    );
    let warned = js(
        &mut b,
        &format!(
            "(() => {{ m.update({{type: 'context/error', session: 's-42', seq: 119, error: 'x'}}); \
             return {colours}; }})()"
        ),
    );
    assert_ne!(
        warned["arc"], c["arc"],
        "the warning still shows on the ring"
    );
}
