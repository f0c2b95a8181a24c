//! The frames view (contract §2) on named cases. Each case runs through both the native
//! `Processor` and the built `.wasm` in fluvio-smartengine; the two must agree byte for byte,
//! keys too. Each case asserts what the contract says by hand (`brief`: id, Δ delta, from, ×frames),
//! checks the §5 accounting identity and the order of what passes, then snapshots the whole
//! exchange as text, one record a line.

use crate::common::frames::*;
use crate::common::*;

/// Snapshots `text` as `snapshots/<name>.snap`, with `desc` as its description.
macro_rules! snap {
    ($name:expr, $desc:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            description => $desc,
            omit_expression => true,
        }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

/// Runs a case natively and in the engine; checks each answer's accounting and order.
fn case(params: Params, history: Option<&[Rec]>, pages: &[Vec<Rec>]) -> (Vec<Both>, String) {
    let answers = run_both(params, history, pages);
    let counter_type = param(params, "counter_type", "thinking/tokens");
    for (page, answer) in pages.iter().zip(&answers) {
        if let Ok(out) = answer {
            check_accounting(params, page, out);
            check_in_order(page, out, counter_type);
        }
    }
    let text = render_case(params, history, pages, &answers);
    (answers, text)
}

/// One page through the module: its briefs as the contract says them, then its snapshot.
fn one_page(name: &str, desc: &str, params: Params, page: Vec<Rec>, expect: &[&str]) {
    let (answers, text) = case(params, None, &[page]);
    assert_eq!(briefs(ok(&answers[0])), expect, "{name}");
    snap!(name, desc, text);
}

fn ok(answer: &Both) -> &[Rec] {
    answer.as_ref().expect("the invocation succeeds")
}

/// A `thinking/tokens` counter: `delta` is raw JSON; `stamp` None = unstamped.
fn c(id: &str, delta: &str, stamp: Option<&str>) -> String {
    match stamp {
        Some(t) => format!(
            r#"{{"type":"thinking/tokens","id":"{id}","timestamp":"{t}","estimated_tokens_delta":{delta}}}"#
        ),
        None => {
            format!(r#"{{"type":"thinking/tokens","id":"{id}","estimated_tokens_delta":{delta}}}"#)
        }
    }
}

fn user(id: &str) -> String {
    format!(r#"{{"type":"user/message","id":"{id}"}}"#)
}

fn tool(id: &str) -> String {
    format!(r#"{{"type":"tool/result","id":"{id}"}}"#)
}

/// Values keyed by `key`.
fn keyed(key: &str, values: &[String]) -> Vec<Rec> {
    values.iter().map(|v| rec(Some(key), v)).collect()
}

/// contract §2's worked example: `user/message s1 | c(5,t1) | c(7,t2) | c(3,t3) | tool/result |
/// c(4,t5) | c(2,—) | c(1,t7)`.
fn worked_example() -> Vec<String> {
    vec![
        user("s1"),
        c("c1", "5", Some("t1")),
        c("c2", "7", Some("t2")),
        c("c3", "3", Some("t3")),
        tool("r4"),
        c("c5", "4", Some("t5")),
        c("c6", "2", None),
        c("c7", "1", Some("t7")),
    ]
}

#[test]
fn spec_worked_example() {
    let page = keyed("s", &worked_example());
    let (answers, text) = case(&[], None, std::slice::from_ref(&page));
    let out = ok(&answers[0]);
    // contract §2: user/message s1 | c(15, id of 3rd, t3, folded_from t1, folded_frames 3) |
    // tool/result | c(4,t5) | c(2,—) | c(1,t7).
    assert_eq!(
        render(out),
        render(&[
            page[0].clone(),
            rec(
                Some("s"),
                r#"{"type":"thinking/tokens","id":"c3","timestamp":"t3","estimated_tokens_delta":15,"folded_from":"t1","folded_frames":3}"#
            ),
            page[4].clone(),
            page[5].clone(),
            page[6].clone(),
            page[7].clone(),
        ])
    );
    snap!(
        "frames__spec_worked_example",
        "contract §2 worked example: c1..c3 fold into c3 (Δ15, from t1, ×3); c(4,t5) is a part of one; c(2,—) is unstamped and ends the part, so c(1,t7) is served as itself",
        text
    );
}

#[test]
fn spec_page_opening_mid_run() {
    let page = keyed("s", &worked_example()[2..]);
    let (answers, text) = case(&[], None, std::slice::from_ref(&page));
    // The run's start is not in the page: c(7,t2) and c(3,t3) are served as themselves, and
    // nothing after them folds either (a part of one, then an unstamped counter).
    assert_eq!(ok(&answers[0]), &page[..]);
    snap!(
        "frames__spec_page_opening_mid_run",
        "contract §2: a page that opens at c(7,t2) serves c(7,t2) and c(3,t3) as themselves; output = input",
        text
    );
}

#[test]
fn unstamped_and_bad_counters_end_the_foldable_part() {
    let big = "9007199254740992"; // 2^53: still valid
    let page = keyed(
        "s",
        &[
            user("u0"),
            // negative delta ends the part after a1 a2
            c("a1", "1", Some("ta1")),
            c("a2", "2", Some("ta2")),
            c("a3", "-1", Some("ta3")),
            c("a4", "4", Some("ta4")),
            tool("r1"),
            // float delta
            c("b1", "5", Some("tb1")),
            c("b2", "1.5", Some("tb2")),
            c("b3", "6", Some("tb3")),
            c("b4", "7", Some("tb4")),
            tool("r2"),
            // string delta
            c("d1", "1", Some("td1")),
            c("d2", "2", Some("td2")),
            c("d3", "\"7\"", Some("td3")),
            tool("r3"),
            // delta past 2^53 first: the whole block is served as itself
            c("e1", "9007199254740993", Some("te1")),
            c("e2", "1", Some("te2")),
            c("e3", "1", Some("te3")),
            tool("r4"),
            // 2^53 + 0 fits; + 1 would carry the sum past 2^53
            c("f1", big, Some("tf1")),
            c("f2", "0", Some("tf2")),
            c("f3", "1", Some("tf3")),
            c("f4", "1", Some("tf4")),
            tool("r5"),
            // no delta at all
            c("g1", "1", Some("tg1")),
            r#"{"type":"thinking/tokens","id":"g2","timestamp":"tg2"}"#.into(),
            c("g3", "3", Some("tg3")),
            tool("r6"),
            // folded_frames 0, then a string folded_frames
            c("h1", "1", Some("th1")),
            r#"{"type":"thinking/tokens","id":"h2","timestamp":"th2","estimated_tokens_delta":2,"folded_frames":0}"#.into(),
            c("h3", "3", Some("th3")),
            tool("r7"),
            c("k1", "1", Some("tk1")),
            r#"{"type":"thinking/tokens","id":"k2","timestamp":"tk2","estimated_tokens_delta":2,"folded_frames":"2","folded_from":"tk0"}"#.into(),
            tool("r8"),
            // folded_from that is not a string
            c("i1", "1", Some("ti1")),
            r#"{"type":"thinking/tokens","id":"i2","timestamp":"ti2","estimated_tokens_delta":2,"folded_frames":2,"folded_from":null}"#.into(),
            c("i3", "3", Some("ti3")),
            tool("r9"),
            // unstamped first, then a stamp that is not a string
            c("j1", "1", None),
            c("j2", "2", Some("tj2")),
            c("j3", "3", Some("tj3")),
            tool("r10"),
            r#"{"type":"thinking/tokens","id":"m1","timestamp":5,"estimated_tokens_delta":1}"#.into(),
            c("m2", "2", Some("tm2")),
            tool("r11"),
            // after all that, a clean run still folds (closed by the page's end)
            c("l1", "1", Some("tl1")),
            c("l2", "2", Some("tl2")),
        ],
    );
    let (answers, text) = case(&[], None, std::slice::from_ref(&page));
    let expected = [
        "u0",
        "a2 Δ3 from ta1 ×2",
        "a3 Δ-1",
        "a4 Δ4",
        "r1",
        "b1 Δ5",
        "b2 Δ1.5",
        "b3 Δ6",
        "b4 Δ7",
        "r2",
        "d2 Δ3 from td1 ×2",
        "d3 Δ7",
        "r3",
        "e1 Δ9007199254740993",
        "e2 Δ1",
        "e3 Δ1",
        "r4",
        "f2 Δ9007199254740992 from tf1 ×2",
        "f3 Δ1",
        "f4 Δ1",
        "r5",
        "g1 Δ1",
        "g2",
        "g3 Δ3",
        "r6",
        "h1 Δ1",
        "h2 Δ2 ×0",
        "h3 Δ3",
        "r7",
        "k1 Δ1",
        "k2 Δ2 from tk0 ×2",
        "r8",
        "i1 Δ1",
        "i2 Δ2 from null ×2",
        "i3 Δ3",
        "r9",
        "j1 Δ1",
        "j2 Δ2",
        "j3 Δ3",
        "r10",
        "m1 Δ1",
        "m2 Δ2",
        "r11",
        "l2 Δ3 from tl1 ×2",
    ];
    assert_eq!(briefs(ok(&answers[0])), expected);
    snap!(
        "frames__bad_counters",
        "contract §2: a counter that is unstamped, has a delta that is no integer in 0..=2^53, a bad folded_frames/folded_from, or would carry the sum past 2^53 ends the foldable part; it and the rest of its block pass as themselves",
        text
    );
}

/// A sub-agent frame of session `s`: `extras.parent_tool_use_id` is a string.
fn sub(id: &str, counter: bool) -> String {
    if counter {
        format!(
            r#"{{"type":"thinking/tokens","id":"{id}","timestamp":"t{id}","estimated_tokens_delta":10,"extras":{{"parent_tool_use_id":"toolu_1"}}}}"#
        )
    } else {
        format!(
            r#"{{"type":"assistant/message","id":"{id}","extras":{{"parent_tool_use_id":"toolu_1"}}}}"#
        )
    }
}

fn subagent_page() -> Vec<Rec> {
    keyed(
        "s",
        &[
            user("u0"),
            c("c1", "1", Some("t1")),
            sub("x1", true),
            c("c2", "2", Some("t2")),
            sub("x2", false),
            c("c3", "3", Some("t3")),
            tool("r1"),
            sub("x3", true),
            c("c4", "4", Some("t4")),
            // a null or non-string parent_tool_use_id is a main frame
            r#"{"type":"thinking/tokens","id":"c5","timestamp":"t5","estimated_tokens_delta":5,"extras":{"parent_tool_use_id":null}}"#.into(),
            r#"{"type":"thinking/tokens","id":"c6","timestamp":"t6","estimated_tokens_delta":6,"extras":{"parent_tool_use_id":7}}"#.into(),
            sub("x4", true),
        ],
    )
}

#[test]
fn subagents_drop() {
    one_page(
        "frames__subagents_drop",
        "contract §2 subagents=drop: sub-agent frames (x*) are removed before the fold, so c1 c2 c3 and c4 c5 c6 are runs; a null or numeric parent_tool_use_id is main",
        &[("subagents", "drop")],
        subagent_page(),
        &["u0", "c3 Δ6 from t1 ×3", "r1", "c6 Δ15 from t4 ×3"],
    );
}

#[test]
fn subagents_keep() {
    // In place, never folded, and neither extend nor break a main run: x1 (a sub-agent
    // counter) and x2 stand inside the run c1 c2 c3, which still folds into c3.
    one_page(
        "frames__subagents_keep",
        "contract §2 subagents=keep: sub-agent frames pass unchanged in place; the sub-agent counter x1 in the middle of the main run c1 c2 c3 neither breaks nor joins it",
        &[("subagents", "keep")],
        subagent_page(),
        &[
            "u0",
            "x1 Δ10",
            "x2",
            "c3 Δ6 from t1 ×3",
            "r1",
            "x3 Δ10",
            "c6 Δ15 from t4 ×3",
            "x4 Δ10",
        ],
    );
}

#[test]
fn sessions_interleaved() {
    let cz = |id: &str, extra: &str, d: u32| {
        format!(
            r#"{{"type":"thinking/tokens","id":"{id}"{extra},"timestamp":"t{id}","estimated_tokens_delta":{d}}}"#
        )
    };
    let page = vec![
        rec(Some("A"), &user("a0")),
        rec(
            None,
            r#"{"type":"user/message","id":"b0","session_id":"B"}"#,
        ),
        rec(Some("A"), &cz("a1", "", 1)),
        rec(None, &cz("b1", r#","session_id":"B""#, 10)),
        rec(None, &user("z0")),
        // the key wins over session_id
        rec(Some("A"), &cz("a2", r#","session_id":"B""#, 2)),
        // the key "B" is the session named "B" by session_id above
        rec(Some("B"), &cz("b2", "", 20)),
        rec(None, &cz("z1", "", 100)),
        // a session_id that is not a string counts as none
        rec(None, &cz("z2", r#","session_id":7"#, 200)),
        rec(None, r#"{"type":"tool/result","id":"b3","session_id":"B"}"#),
        rec(Some("A"), &cz("a3", "", 3)),
        // the empty key is the empty session
        rec(Some(""), &tool("z3")),
        rec(None, &cz("z4", "", 1000)),
    ];
    let (answers, text) = case(&[], None, std::slice::from_ref(&page));
    let out = ok(&answers[0]);
    assert_eq!(
        briefs(out),
        [
            "a0",
            "b0",
            "z0",
            "b2 Δ30 from tb1 ×2",
            "z2 Δ300 from tz1 ×2",
            "b3",
            "a3 Δ6 from ta1 ×3",
            "z3",
            "z4 Δ1000"
        ]
    );
    // A folded frame keeps its newest counter's key.
    let keys: Vec<Option<&[u8]>> = out.iter().map(|r| r.key.as_deref()).collect();
    assert_eq!(
        keys,
        [
            Some(&b"A"[..]),
            None,
            None,
            Some(b"B"),
            None,
            None,
            Some(b"A"),
            Some(b""),
            None
        ]
    );
    snap!(
        "frames__sessions_interleaved",
        "contract §1: the session is the key, else session_id (a string), else \"\"; runs of A (a1 a2 a3), B (b1 b2) and \"\" (z1 z2) fold independently, each at its newest counter with its key",
        text
    );
}

fn malformed_page() -> Vec<Rec> {
    vec![
        rec(Some("s"), &user("u0")),
        rec(Some("s"), &c("c1", "1", Some("t1"))),
        rec(None, "[1,2]"),
        rec(Some("s"), &c("c2", "2", Some("t2"))),
        rec(Some("s"), "not json"),
        rec(Some("s"), &c("c3", "3", Some("t3"))),
        rec(Some("s"), &c("c4", "4", Some("t4"))),
        rec(Some("s"), &tool("r1")),
    ]
}

#[test]
fn malformed_pass() {
    // Emitted unchanged and a main non-counter of its session: the keyed `not json` breaks
    // s's run; the unkeyed `[1,2]` belongs to session "" and does not.
    one_page(
        "frames__malformed_pass",
        "contract §2 malformed=pass: records that are no JSON object pass unchanged as main non-counters of their session (key, else \"\")",
        &[("malformed", "pass")],
        malformed_page(),
        &[
            "u0",
            "[1,2]",
            "c2 Δ3 from t1 ×2",
            "not json",
            "c4 Δ7 from t3 ×2",
            "r1",
        ],
    );
}

#[test]
fn malformed_drop() {
    // Dropped before the fold: c1..c4 are one run.
    one_page(
        "frames__malformed_drop",
        "contract §2 malformed=drop: the two malformed records are removed before the fold, so c1..c4 fold into c4 (Δ10, ×4)",
        &[("malformed", "drop")],
        malformed_page(),
        &["u0", "c4 Δ10 from t1 ×4", "r1"],
    );
}

#[test]
fn malformed_fail() {
    let pages = vec![
        keyed("q", &[tool("q0")]),
        malformed_page(),
        keyed(
            "s",
            &[
                c("c5", "5", Some("t5")),
                c("c6", "6", Some("t6")),
                tool("r2"),
            ],
        ),
    ];
    let (answers, text) = case(&[("malformed", "fail")], None, &pages);
    assert_eq!(ok(&answers[0]), &pages[0][..]);
    // The second invocation starts at offset 1; its first bad record is its third: offset 3.
    let (native, engine) = answers[1]
        .as_ref()
        .expect_err("malformed=fail refuses the batch");
    assert!(native.contains("offset 3"), "{native}");
    assert!(engine.contains("Offset: 3"), "{engine}");
    assert!(engine.contains("not a JSON object"), "{engine}");
    // Nothing of the failed invocation stayed: s is unknown, so the leading counters of the
    // next page are served as themselves (had u0 been remembered, c5 c6 would fold).
    assert_eq!(ok(&answers[2]), &pages[2][..]);
    snap!(
        "frames__malformed_fail",
        "contract §2 malformed=fail: the invocation errors naming the offset (3 = base 1 + index 2) in both the library and the engine; no state changes, so the next page's leading counters do not fold",
        text
    );
}

#[test]
fn folding_again_is_idempotent_and_associative() {
    let f1 = r#"{"type":"thinking/tokens","id":"c3","timestamp":"t3","estimated_tokens_delta":6,"folded_from":"t1","folded_frames":3}"#;
    let f2 = r#"{"type":"thinking/tokens","id":"c5","timestamp":"t5","estimated_tokens_delta":9,"folded_from":"t4","folded_frames":2}"#;
    let f15 = r#"{"type":"thinking/tokens","id":"c5","timestamp":"t5","estimated_tokens_delta":15,"folded_from":"t1","folded_frames":5}"#;
    let cs = |n: usize| -> Vec<String> {
        (1..=n)
            .map(|i| c(&format!("c{i}"), &i.to_string(), Some(&format!("t{i}"))))
            .collect()
    };
    let with = |first: &str, mid: Vec<String>, last: &str| -> Vec<String> {
        let mut v = vec![user(first)];
        v.extend(mid);
        v.push(tool(last));
        v
    };
    // Folding once: session a folds c1..c3, session w folds c1..c5 at once.
    let once_pages = vec![
        keyed("a", &with("u0", cs(3), "r1")),
        keyed("w", &with("u0", cs(5), "r1")),
    ];
    let (once, once_text) = case(&[], None, &once_pages);
    let folded_a = ok(&once[0]).to_vec();
    assert_eq!(
        render(&folded_a),
        render(&keyed("a", &with("u0", vec![f1.into()], "r1")))
    );
    assert_eq!(
        render(ok(&once[1])),
        render(&keyed("w", &with("u0", vec![f15.into()], "r1")))
    );

    // Folding again: the folded page changes nothing; a folded frame folds with new counters
    // (b), with an older plain counter as the newest (d), and with another folded frame (e),
    // summing folded_frames and keeping the oldest folded_from.
    let c4c5: Vec<String> = cs(5).split_off(3);
    let again_pages = vec![
        folded_a.clone(),
        keyed("b", &with("u0", [vec![f1.into()], c4c5].concat(), "r1")),
        keyed(
            "d",
            &with("u0", vec![c("c0", "10", Some("t0")), f1.into()], "r1"),
        ),
        keyed("e", &with("u0", vec![f1.into(), f2.into()], "r1")),
    ];
    let (again, again_text) = case(&[], None, &again_pages);
    assert_eq!(
        ok(&again[0]),
        &folded_a[..],
        "folding a folded page changes nothing"
    );
    assert_eq!(
        render(ok(&again[1])),
        render(&keyed("b", &with("u0", vec![f15.into()], "r1")))
    );
    assert_eq!(
        render(ok(&again[2])),
        render(&keyed(
            "d",
            &with(
                "u0",
                vec![r#"{"type":"thinking/tokens","id":"c3","timestamp":"t3","estimated_tokens_delta":16,"folded_from":"t0","folded_frames":4}"#.into()],
                "r1"
            )
        ))
    );
    assert_eq!(
        render(ok(&again[3])),
        render(&keyed("e", &with("u0", vec![f15.into()], "r1")))
    );
    snap!(
        "frames__fold_once",
        "Fold once: a's c1..c3 → c3 (Δ6, from t1, ×3); w's c1..c5 → c5 (Δ15, from t1, ×5)",
        once_text
    );
    snap!(
        "frames__fold_again",
        "Fold again (contract §6.3, associativity): a's folded page is unchanged; b = fold(c1..c3)+c4+c5, e = fold(c1..c3)+fold(c4,c5) both give w's bytes (Δ15, from t1, ×5); d folds c0 with the folded c3 in place (Δ16, from t0, ×4)",
        again_text
    );
}

#[test]
fn field_order_of_a_folded_frame() {
    let page = vec![
        rec(Some("s"), &user("u0")),
        // (a) the newest has none of folded_from/folded_frames: appended in that order
        rec(Some("s"), &c("a1", "1", Some("ta1"))),
        rec(
            Some("s"),
            r#"{"type":"thinking/tokens","id":"a2","timestamp":"ta2","estimated_tokens_delta":2,"z":true}"#,
        ),
        rec(Some("s"), &tool("r1")),
        // (b) folded_frames first, no folded_from: replaced in place, folded_from appended
        rec(Some("s"), &c("b1", "1", Some("tb1"))),
        rec(
            Some("s"),
            r#"{"folded_frames":1,"type":"thinking/tokens","id":"b2","estimated_tokens_delta":2,"timestamp":"tb2"}"#,
        ),
        rec(Some("s"), &tool("r2")),
        // (c) folded_from only: replaced in place, folded_frames appended
        rec(Some("s"), &c("c1", "1", Some("tc1"))),
        rec(
            Some("s"),
            r#"{"type":"thinking/tokens","folded_from":"tc0","id":"c2","timestamp":"tc2","estimated_tokens_delta":2}"#,
        ),
        rec(Some("s"), &tool("r3")),
        // (d) all three, in reverse order: all replaced in place
        rec(Some("s"), &c("d1", "1", Some("td1"))),
        rec(
            Some("s"),
            r#"{"folded_frames":2,"folded_from":"td0","estimated_tokens_delta":5,"type":"thinking/tokens","id":"d2","timestamp":"td2"}"#,
        ),
        rec(Some("s"), &tool("r4")),
        // (e) spaces, a nested folded_frames (not the frame's), bytes after the brace; an
        // escaped oldest stamp is carried as its JSON text
        rec(
            Some("s"),
            r#"{"type":"thinking/tokens","id":"e1","timestamp":"te\u0031","estimated_tokens_delta":1}"#,
        ),
        rec(
            Some("s"),
            r#"{ "type": "thinking/tokens", "id": "e2", "timestamp": "te2", "estimated_tokens_delta": 2, "meta": {"folded_frames": 9} } "#,
        ),
        rec(Some("s"), &tool("r5")),
    ];
    let (answers, text) = case(&[], None, std::slice::from_ref(&page));
    let out = ok(&answers[0]);
    let expected = [
        &page[0].value[..],
        br#"{"type":"thinking/tokens","id":"a2","timestamp":"ta2","estimated_tokens_delta":3,"z":true,"folded_from":"ta1","folded_frames":2}"#,
        &page[3].value,
        br#"{"folded_frames":2,"type":"thinking/tokens","id":"b2","estimated_tokens_delta":3,"timestamp":"tb2","folded_from":"tb1"}"#,
        &page[6].value,
        br#"{"type":"thinking/tokens","folded_from":"tc1","id":"c2","timestamp":"tc2","estimated_tokens_delta":3,"folded_frames":2}"#,
        &page[9].value,
        br#"{"folded_frames":3,"folded_from":"td1","estimated_tokens_delta":6,"type":"thinking/tokens","id":"d2","timestamp":"td2"}"#,
        &page[12].value,
        br#"{ "type": "thinking/tokens", "id": "e2", "timestamp": "te2", "estimated_tokens_delta": 3, "meta": {"folded_frames": 9} ,"folded_from":"te\u0031","folded_frames":2} "#,
        &page[15].value,
    ];
    let got: Vec<String> = out
        .iter()
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
        .collect();
    let want: Vec<String> = expected
        .iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert_eq!(got, want);
    for r in out {
        let v: serde_json::Value = serde_json::from_slice(&r.value).expect("valid JSON out");
        if v["id"] == "e2" {
            assert_eq!(v["folded_from"], "te1");
            assert_eq!(v["meta"]["folded_frames"], 9);
        }
    }
    snap!(
        "frames__field_order",
        "contract §2: estimated_tokens_delta, folded_from, folded_frames are replaced in place where the newest counter has them, else appended in that order; every other byte of the newest counter is kept",
        text
    );
}

#[test]
fn streaming_memory_across_invocations() {
    let s = |values: &[String]| keyed("s", values);
    let pages = vec![
        s(&[user("u0")]),
        // 1: leading counters after a non-counter of an earlier invocation fold
        s(&[
            c("c1", "1", Some("t1")),
            c("c2", "2", Some("t2")),
            tool("r1"),
        ]),
        // 2: never hold back: a lone counter is served at once
        s(&[c("c3", "3", Some("t3"))]),
        // 3: after a counter: served as themselves
        s(&[
            c("c4", "4", Some("t4")),
            c("c5", "5", Some("t5")),
            tool("r2"),
        ]),
        // 4: a sub-agent frame (dropped) after a non-counter is invisible
        s(&[user("u1"), sub("x1", true)]),
        s(&[
            c("c6", "6", Some("t6")),
            c("c7", "7", Some("t7")),
            tool("r3"),
        ]),
        // 6: an unstamped counter is a counter too
        s(&[user("u2"), c("c8", "8", None)]),
        s(&[
            c("c9", "9", Some("t9")),
            c("c10", "10", Some("t10")),
            tool("r4"),
        ]),
        // 8: a malformed record (pass) is a main non-counter
        vec![rec(Some("s"), "not json")],
        // 9: a run cut by the page's end folds what the page holds...
        s(&[c("c11", "11", Some("t11")), c("c12", "12", Some("t12"))]),
        // 10: ...and the rest of it is served as itself
        s(&[c("c13", "13", Some("t13")), tool("r5")]),
        // 11: memory is per session: t was never seen
        keyed(
            "t",
            &[
                c("c1", "1", Some("t1")),
                c("c2", "2", Some("t2")),
                tool("r1"),
            ],
        ),
    ];
    let (answers, text) = case(&[], None, &pages);
    let got: Vec<Vec<String>> = answers.iter().map(|a| briefs(ok(a))).collect();
    let want: Vec<Vec<&str>> = vec![
        vec!["u0"],
        vec!["c2 Δ3 from t1 ×2", "r1"],
        vec!["c3 Δ3"],
        vec!["c4 Δ4", "c5 Δ5", "r2"],
        vec!["u1"],
        vec!["c7 Δ13 from t6 ×2", "r3"],
        vec!["u2", "c8 Δ8"],
        vec!["c9 Δ9", "c10 Δ10", "r4"],
        vec!["not json"],
        vec!["c12 Δ23 from t11 ×2"],
        vec!["c13 Δ13", "r5"],
        vec!["c1 Δ1", "c2 Δ2", "r1"],
    ];
    assert_eq!(got, want);
    snap!(
        "frames__streaming_memory",
        "contract §2: per session the module remembers whether the last main frame of an earlier invocation was a non-counter: then the next page's leading counters fold; after a counter (folded, lone or bad) they do not",
        text
    );
}

#[test]
fn look_back_then_process() {
    let history = vec![
        rec(Some("a"), &user("a0")),
        rec(Some("b"), &user("b0")),
        rec(Some("b"), &c("b1", "1", Some("tb1"))),
        rec(Some("d"), &user("d0")),
        rec(Some("d"), &sub("d1", true)),
        rec(Some("e"), "not json"),
    ];
    let mut page = Vec::new();
    for s in ["a", "b", "c", "d", "e"] {
        page.push(rec(
            Some(s),
            &c(&format!("{s}2"), "2", Some(&format!("t{s}2"))),
        ));
        page.push(rec(
            Some(s),
            &c(&format!("{s}3"), "3", Some(&format!("t{s}3"))),
        ));
        page.push(rec(Some(s), &tool(&format!("{s}r"))));
    }
    let (answers, text) = case(&[], Some(&history), std::slice::from_ref(&page));
    assert_eq!(
        briefs(ok(&answers[0])),
        [
            "a3 Δ5 from ta2 ×2",
            "ar",
            "b2 Δ2",
            "b3 Δ3",
            "br",
            "c2 Δ2",
            "c3 Δ3",
            "cr",
            "d3 Δ5 from td2 ×2",
            "dr",
            "e3 Δ5 from te2 ×2",
            "er"
        ]
    );
    // Without the history nothing folds: every session's counters lead the page.
    let fresh = native_pages(&mut processor(&[], None), std::slice::from_ref(&page));
    assert_eq!(fresh[0].as_ref().unwrap(), &page);
    snap!(
        "frames__look_back",
        "contract §4 look_back: history ending in a non-counter (a; d, whose last main frame is d0 since the sub-agent d1 is dropped; e, a malformed record under pass) lets the first page's leading counters fold; after a counter (b) or with no history (c) they do not",
        text
    );
}

#[test]
fn counter_type_param() {
    let p = |id: &str, d: u32| {
        format!(
            r#"{{"type":"progress/tick","id":"{id}","timestamp":"t{id}","estimated_tokens_delta":{d}}}"#
        )
    };
    let page = keyed(
        "s",
        &[
            user("u0"),
            p("p1", 1),
            p("p2", 2),
            c("h1", "5", Some("th1")),
            c("h2", "6", Some("th2")),
            p("p3", 3),
            p("p4", 4),
            tool("r1"),
        ],
    );
    let params: Params = &[("counter_type", "progress/tick")];
    let (answers, text) = case(params, None, std::slice::from_ref(&page));
    // thinking/tokens frames are now non-counters: they pass and break the progress runs.
    assert_eq!(
        briefs(ok(&answers[0])),
        [
            "u0",
            "p2 Δ3 from tp1 ×2",
            "h1 Δ5",
            "h2 Δ6",
            "p4 Δ7 from tp3 ×2",
            "r1"
        ]
    );
    snap!(
        "frames__counter_type",
        "contract §1 counter_type=progress/tick: progress/tick runs fold; thinking/tokens frames are non-counters and pass unchanged",
        text
    );
}
