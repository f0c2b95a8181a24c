//! `agent-fold statusline`, fed the JSON Claude Code's statusline documentation shows, over the
//! shared real transcripts cut at every compaction: each call prints one line and exits 0; a
//! call that resumes from its cache shows what a cold read of the same transcript shows, which
//! is what the library says of it; whatever goes wrong, one short line, exit 0, the reason on
//! stderr.

use crate::common;
use crate::harness;

use std::io::Write;
use std::path::{Path, PathBuf};

use agent_fold_core::{Emit, Processor, RecordIn};
use serde_json::{Value, json};

/// A Claude Code transcript written for this repository.
const EXCERPT: &str = "adapt/claude-code/5e551011-0000-4000-8000-000000000001.jsonl";

struct StatusOutput {
    stdout: String,
    stderr: String,
}

/// The payload as Claude Code's statusline docs show it (`current_usage` null: right after
/// `/compact`, before the next request).
fn payload(transcript: &Path, window: u64) -> String {
    json!({
        "hook_event_name": "Status",
        "session_id": session_of(transcript),
        "transcript_path": transcript,
        "cwd": "/home/user/project",
        "model": {"id": "claude-opus-4-5", "display_name": "Opus"},
        "workspace": {"current_dir": "/home/user/project", "project_dir": "/home/user/project"},
        "version": "2.1.45",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.01234, "total_duration_ms": 45000, "total_api_duration_ms": 2300,
                 "total_lines_added": 156, "total_lines_removed": 23},
        "context_window": {"total_input_tokens": 15234, "total_output_tokens": 4521,
                           "context_window_size": window, "used_percentage": 8,
                           "remaining_percentage": 92, "current_usage": null},
        "exceeds_200k_tokens": false
    })
    .to_string()
}

/// The session id a transcript's name carries.
fn session_of(transcript: &Path) -> String {
    transcript
        .file_stem()
        .map(|s| s.to_string_lossy().chars().take(36).collect())
        .unwrap_or_default()
}

fn statusline(args: &[&str], stdin: &str) -> StatusOutput {
    let out = harness::agent_fold(&[&["statusline"], args].concat(), Some(stdin.as_bytes()));
    assert!(out.status.success(), "a status line always exits 0");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout:?}");
    assert!(stdout.ends_with('\n'));
    StatusOutput {
        stdout: stdout.trim_end().to_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The repository's Claude Code excerpt, copied into `dir` as a transcript of its own.
fn excerpt(dir: &Path) -> PathBuf {
    let t = dir.join(Path::new(EXCERPT).file_name().unwrap());
    std::fs::copy(common::data(EXCERPT), &t).unwrap();
    t
}

/// `--cache-dir`'s value: a cache in `dir`.
fn cache(dir: &Path) -> String {
    dir.join("cache").to_string_lossy().into_owned()
}

/// What the library says the session shows after `text`: its latest `context/pressure` record.
fn expected(text: &[u8], session: &str, window: u64) -> Option<Value> {
    let cap = window.to_string();
    let mut p = Processor::from_params([
        ("emit", "pressure"),
        ("input", "claude-code"),
        ("capacity", cap.as_str()),
    ])
    .unwrap();
    let lines: Vec<&[u8]> = agent_fold::testing::jsonl::lines(text).collect();
    let recs: Vec<RecordIn> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| RecordIn::new(None, l).at(i as i64))
        .collect();
    let mut latest = None;
    for e in p.process(&recs).unwrap() {
        let Emit::New { value, .. } = e else { continue };
        let v: Value = serde_json::from_slice(&value).unwrap();
        if v["type"] == "context/pressure" && v["session"] == session {
            latest = Some(v);
        }
    }
    latest
}

fn json_of(out: &StatusOutput) -> Option<Value> {
    let v: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    (!v.is_null()).then_some(v)
}

/// The line numbers (0-based) of a transcript's compaction boundaries.
fn boundaries(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(r#""subtype":"compact_boundary""#))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn the_documented_payload_gives_one_line() {
    let s = harness::scratch("documented");
    let t = excerpt(&s);
    let out = statusline(&["--cache-dir", &cache(&s)], &payload(&t, 200_000));
    let want = expected(&std::fs::read(&t).unwrap(), &session_of(&t), 200_000).expect("a record");
    // The default line, from the record the library gives for the same transcript.
    let used = want["projectedTokens"].as_u64().unwrap();
    let percent = format!("{:.0}%", want["contextOccupancy"].as_f64().unwrap() * 100.0);
    assert!(
        out.stdout.contains(&percent),
        "{} lacks {percent}",
        out.stdout
    );
    assert!(out.stdout.contains("/200k"), "{}", out.stdout);
    assert!(
        out.stdout.contains("to compact"),
        "Claude Code's default threshold: {}",
        out.stdout
    );
    assert_eq!(want["compactAtTokens"], 167_000);
    assert_eq!(
        want["untilCompactTokens"].as_u64(),
        Some(167_000 - used),
        "{want}"
    );
    let json = statusline(
        &["--json", "--cache-dir", &cache(&s)],
        &payload(&t, 200_000),
    );
    assert_eq!(json_of(&json), Some(want));
    let fmt = statusline(
        &[
            "--format",
            "{model}: {used_tokens}/{window_tokens} ({mark}{percent}%)",
            "--cache-dir",
            &cache(&s),
        ],
        &payload(&t, 200_000),
    );
    assert!(
        fmt.stdout.starts_with(&format!("Opus: {used}/200000 (")),
        "{}",
        fmt.stdout
    );
}

/// Each real transcript, written as Claude Code writes it — cut just before each compaction,
/// just after its summary, at its first reading after — read by calls that resume from the
/// cache: each equals a cold read and the library's own figures there.
#[test]
fn real_transcripts_cut_at_every_compaction() {
    let names = [
        "6113e919-67d3-417b-b525-c63700228d19.jsonl",
        "bf5915c6-75c2-4612-ab44-c094d5efe7ed.jsonl",
        "6c0a282a-886f-458d-a426-93d95104b4a6.jsonl",
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    ];
    let mut checked = 0;
    for name in names {
        let Some(src) = common::real_data(&format!("claude-code/{name}")) else {
            return;
        };
        let text = std::fs::read_to_string(&src).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut cuts: Vec<usize> = Vec::new();
        for b in boundaries(&text) {
            cuts.extend([b, b + 2, (b + 40).min(lines.len())]);
        }
        cuts.push(lines.len());
        cuts.sort_unstable();
        cuts.dedup();
        let s = harness::scratch(&name[..8]);
        let t = s.join(name);
        let mut file = std::fs::File::create(&t).unwrap();
        let mut written = 0;
        for cut in cuts {
            for l in &lines[written..cut] {
                writeln!(file, "{l}").unwrap();
            }
            // A half-written line at the end is left for the next call.
            if cut < lines.len() {
                write!(file, "{}", &lines[cut][..lines[cut].len() / 2]).unwrap();
            }
            file.flush().unwrap();
            written = cut;
            let warm = statusline(
                &["--json", "--cache-dir", &cache(&s)],
                &payload(&t, 200_000),
            );
            let cold_dir = s.join(format!("cold-{cut}"));
            let cold = statusline(
                &["--json", "--cache-dir", cold_dir.to_str().unwrap()],
                &payload(&t, 200_000),
            );
            let so_far: String = lines[..cut].iter().map(|l| format!("{l}\n")).collect();
            let want = expected(so_far.as_bytes(), &session_of(&t), 200_000);
            assert_eq!(json_of(&warm), want, "{name} cut at line {cut}, resumed");
            assert_eq!(json_of(&cold), want, "{name} cut at line {cut}, cold");
            // The half line is written whole before the next cut.
            if cut < lines.len() {
                write!(file, "{}", &lines[cut][lines[cut].len() / 2..]).unwrap();
                writeln!(file).unwrap();
                written = cut + 1;
            }
            checked += 1;
        }
        let line = statusline(&["--cache-dir", &cache(&s)], &payload(&t, 200_000));
        assert!(line.stdout.contains("/200k"), "{name}: {}", line.stdout);
        // `{compactions}`: one per boundary the transcript wrote.
        let count = statusline(
            &["--format", "{compactions}", "--cache-dir", &cache(&s)],
            &payload(&t, 200_000),
        );
        assert_eq!(
            count.stdout,
            boundaries(&text).len().to_string(),
            "{name}: {}",
            count.stderr
        );
    }
    assert!(checked >= 20, "{checked} cuts checked");
}

#[test]
fn whatever_goes_wrong_is_one_short_line_and_a_reason() {
    let s = harness::scratch("wrong");
    let cache = cache(&s);
    let bad = |stdin: &str, args: &[&str], why: &str| {
        let mut all = vec!["--cache-dir", cache.as_str()];
        all.extend(args);
        let out = statusline(&all, stdin);
        assert!(out.stdout.chars().count() <= 40, "short: {}", out.stdout);
        assert!(
            out.stderr.contains(why),
            "stderr says {why:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    };
    bad("not json", &[], "stdin is not JSON");
    bad("[1,2]", &[], "stdin is not a JSON object");
    bad(r#"{"session_id":"x"}"#, &[], "no transcript_path");
    bad(
        &payload(&s.join("missing.jsonl"), 200_000),
        &[],
        "cannot open the transcript",
    );
    bad(&payload(&s, 200_000), &[], "not a regular file");
    bad(
        &payload(Path::new("/dev/zero"), 200_000),
        &[],
        "not a regular file",
    );
    bad(
        &payload(&s.join("x.jsonl"), 200_000),
        &["--format", "{nope}"],
        "{nope}",
    );
    // A transcript of garbage is read (its lines are no frames): no reading yet.
    let g = s.join("garbage.jsonl");
    std::fs::write(&g, b"\xff\xfe not json\n{\"type\":\"user\"\n").unwrap();
    let out = statusline(&["--cache-dir", &cache], &payload(&g, 200_000));
    assert_eq!(out.stdout, "ctx: no reading yet");
}

#[test]
fn a_corrupt_or_stale_cache_is_read_anew() {
    let s = harness::scratch("cache");
    let src = common::data(EXCERPT);
    let t = excerpt(&s);
    let args = ["--json", "--cache-dir", &cache(&s)];
    let first = json_of(&statusline(&args, &payload(&t, 200_000)));
    assert!(first.is_some());
    // Garbage in every cache file: ignored, the transcript read again.
    for e in std::fs::read_dir(s.join("cache")).unwrap() {
        std::fs::write(e.unwrap().path(), b"{\"version\":1,").unwrap();
    }
    assert_eq!(json_of(&statusline(&args, &payload(&t, 200_000))), first);
    // The transcript replaced by a shorter one (another session under the same path).
    let text = std::fs::read_to_string(&src).unwrap();
    let half: String = text.lines().take(6).map(|l| format!("{l}\n")).collect();
    std::fs::remove_file(&t).unwrap();
    std::fs::write(&t, &half).unwrap();
    let want = expected(half.as_bytes(), &session_of(&t), 200_000);
    assert_eq!(json_of(&statusline(&args, &payload(&t, 200_000))), want);
    // Another window is another capacity: the figures follow it.
    let wide = json_of(&statusline(&args, &payload(&t, 1_000_000))).expect("a record");
    assert_eq!(wide["capacity"], 1_000_000);
}

/// The newest Claude Code format (2.1.232): its lines carry `session_id` (the process's first
/// transcript, after `/clear`) beside `sessionId` (this transcript's, the id the payload sends),
/// and an advisor's turn writes its usage summed. Cut at any line, the status line shows the
/// last reading the request itself made: the last own iteration where there are iterations.
#[test]
fn the_newest_transcript_shows_its_last_own_reading_at_any_line() {
    let name = "da81b1d5-eb50-45b5-b9c2-a57df460d77b.jsonl";
    let Some(src) = common::real_data(&format!("claude-code/{name}")) else {
        return;
    };
    let text = std::fs::read_to_string(&src).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The last own reading after each line, read from the raw lines with serde.
    let mut last = Vec::with_capacity(lines.len());
    let mut reading = None;
    for l in &lines {
        let v: Value = serde_json::from_str(l).unwrap();
        if let Some(u) = v
            .pointer("/message/usage")
            .filter(|_| v["type"] == "assistant")
        {
            let own = u["iterations"].as_array().and_then(|its| {
                its.iter()
                    .rev()
                    .find(|i| matches!(i["type"].as_str(), Some("message" | "fallback_message")))
            });
            let u = own.unwrap_or(u);
            let n: u64 = [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ]
            .iter()
            .map(|k| u[k].as_u64().unwrap_or(0))
            .sum();
            if n > 0 {
                reading = Some(n);
            }
        }
        last.push(reading);
    }
    let s = harness::scratch("da81b1d5");
    let t = s.join(name);
    let mut cuts: Vec<usize> = (1..lines.len()).step_by(97).collect();
    cuts.extend([23, 356, 357, 358, 406, 430, 494, 702, 703, 875, lines.len()]);
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        std::fs::write(
            &t,
            lines[..cut]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
        )
        .unwrap();
        let out = statusline(
            &["--json", "--cache-dir", &cache(&s)],
            &payload(&t, 200_000),
        );
        let shown = json_of(&out).and_then(|v| v["pressureTokens"].as_u64());
        assert_eq!(shown, last[cut - 1], "cut after line {cut}: {}", out.stdout);
        let plain = statusline(&["--cache-dir", &cache(&s)], &payload(&t, 200_000));
        if last[cut - 1].is_some() {
            assert!(
                !plain.stdout.contains("no reading"),
                "cut after line {cut}: {}",
                plain.stdout
            );
        }
    }
}

/// Issue 55: a FIFO named as the transcript hung the status line for ever (the file was opened
/// before it was looked at), and a status line must never hang the agent's screen. Now it is
/// refused before it is opened: one short line, the reason on stderr, at once.
#[test]
fn a_fifo_as_the_transcript_is_refused_at_once() {
    let s = harness::scratch("fifo");
    let fifo = s.join("fifo.jsonl");
    harness::mkfifo(&fifo);
    let cache = cache(&s);
    let out = harness::agent_fold_within(
        &["statusline", "--cache-dir", cache.as_str()],
        payload(&fifo, 200_000).as_bytes(),
        std::time::Duration::from_secs(20),
    )
    .expect("the status line answers");
    assert!(out.status.success(), "a status line always exits 0");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
}

/// The project's own Claude Code settings move the point the line counts down to (docs/
/// statusline.md): `autoCompactWindow` 100,000 compacts at 67,000; a user's `-e compact_at`
/// stands over it; `DISABLE_AUTO_COMPACT` leaves no point.
#[test]
fn the_project_s_settings_move_the_compaction_point() {
    let s = harness::scratch("settings");
    let t = excerpt(&s);
    let project = s.join("project");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let with_cwd = |window: u64| {
        let mut p: Value = serde_json::from_str(&payload(&t, window)).unwrap();
        p["workspace"]["current_dir"] = json!(project);
        p["cwd"] = json!(project);
        p.to_string()
    };
    let dir = cache(&s);
    let at = |extra: &[&str]| {
        let args = [
            &[
                "--format",
                "{compact_at_tokens}",
                "--cache-dir",
                dir.as_str(),
            ],
            extra,
        ]
        .concat();
        statusline(&args, &with_cwd(200_000)).stdout
    };
    assert_eq!(at(&[]), "167000", "no settings: the default reserve");
    let settings = project.join(".claude/settings.json");
    std::fs::write(&settings, r#"{"autoCompactWindow": 100000}"#).unwrap();
    assert_eq!(at(&[]), "67000");
    assert_eq!(
        at(&["-e", "compact_at=120000"]),
        "120000",
        "the user's param wins"
    );
    std::fs::write(
        project.join(".claude/settings.local.json"),
        r#"{"env": {"DISABLE_AUTO_COMPACT": "1"}}"#,
    )
    .unwrap();
    assert_eq!(at(&[]), "", "no automatic compaction: no point");
}
