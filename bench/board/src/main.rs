//! The fleet board under a platform's load: `agent-fold serve` fed a fleet of live sessions at a
//! steady rate for minutes, watched in headless Chromium, its alerts received by a webhook on
//! loopback. It prints what `docs/bench.md` ("The fleet board") quotes:
//!
//! - the server's RSS and CPU over the run (sampled from /proc every 5 s);
//! - the time from a record read to the board's row showing it (the page's own measure:
//!   `agentFold.latency`, from the row's `readAt` to the frame after it was drawn), p50 / p99;
//! - the board's first render with every session, and every frame of a scroll from the first row
//!   to the last;
//! - every alert the webhook received against the crossings in what was fed, counted apart
//!   (`agent_fold_testkit::alerts`);
//! - a page opened at the end drawing a session's whole chart.
//!
//! `--collect TRANSCRIPT` measures the OTLP receiver instead (`collect.rs`).
//!
//! The load: the corpus generator (`agent_fold::corpus`, keyed) with `--sessions` sessions live
//! at once, run through the module natively (`emit=pressure`), each pressure record restamped
//! with the time it is fed (a live fleet's records are stamped now). `--via stdin` feeds
//! `serve -`; `--via relay --topic T` produces the frames to topic T of the local cluster, and
//! `agent-fold relay` and `serve --topic T-pressure` carry them (a `fluvio` on PATH that reaches
//! a cluster).

mod collect;
mod feed;
mod page;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

use agent_fold_testkit::alerts::Rule;
use agent_fold_testkit::webhook::Receiver;

/// The fleet board under load.
#[derive(Parser, Debug)]
struct Args {
    /// The agent-fold binary to serve with (a release build)
    #[arg(long, default_value = "target/release/agent-fold")]
    bin: PathBuf,
    /// Sessions live at once
    #[arg(long, default_value_t = 10_000)]
    sessions: usize,
    /// Pressure records a second into the server (stdin), or frames a second (relay)
    #[arg(long, default_value_t = 2_000)]
    rate: u64,
    /// How long to feed, in seconds
    #[arg(long, default_value_t = 600)]
    secs: u64,
    /// The corpus seed
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Records written as fast as they go before the timed run (a board that has been up for
    /// hours: its histories at their bound)
    #[arg(long, default_value_t = 0)]
    warm: u64,
    /// stdin (`serve -`) or relay (a live cluster: produce, relay, `serve --topic`)
    #[arg(long, default_value = "stdin")]
    via: String,
    /// With --via relay: the event topic to make and fill, the run's pid added (both topics are
    /// deleted at the end)
    #[arg(long, default_value = "af-board-bench")]
    topic: String,
    /// Instead: the OTLP receiver's rate, on this transcript's derived events
    #[arg(long, value_name = "TRANSCRIPT")]
    collect: Option<PathBuf>,
    /// With --collect: requests to send, and senders at once
    #[arg(long, default_value_t = 400)]
    requests: usize,
    #[arg(long, default_value_t = 4)]
    clients: usize,
}

/// The alert rules the run sets and counts.
const RULES: [&str; 2] = ["until<20000", "occupancy>0.8"];

/// A process of ours, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `agent-fold serve` with the rules and the webhook; its URL.
fn serve(args: &Args, source: &[&str], hook: u16) -> Result<(Proc, String)> {
    let mut cmd = Command::new(&args.bin);
    cmd.arg("serve").args(source);
    for r in RULES {
        cmd.args(["--alert", r]);
    }
    cmd.args(["--alert-webhook", &format!("http://127.0.0.1:{hook}/hook")])
        .args(["--max-connections", "64"])
        .stdin(if source == ["-"] {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", args.bin.display()))?;
    let out = child.stdout.take().expect("piped");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    if !line.starts_with("http://") {
        bail!("serve printed no URL");
    }
    Ok((Proc(child), line.trim().to_owned()))
}

/// RSS (bytes) and CPU time (seconds, user + system) of a process, from /proc.
fn usage(pid: u32) -> Option<(u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?
        * 1024;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((rss, ticks / hz))
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

/// The server's `records_read_total`, from its `/metrics` (Prometheus text).
fn read_total(url: &str) -> Option<u64> {
    use std::io::{Read, Write};
    let host = url.strip_prefix("http://")?.trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("agent_fold_serve_records_read_total "))?
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v as u64)
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.via == "relay" {
        args.topic = format!("{}-{}", args.topic, std::process::id());
    }
    if let Some(t) = &args.collect {
        return collect::run(&args.bin, t, args.requests, args.clients);
    }
    let rules: Vec<Rule> = RULES.iter().map(|r| Rule::parse(r).unwrap()).collect();
    let hook = Receiver::start(false)?;
    let (server, url, relay) = match args.via.as_str() {
        "stdin" => {
            let (p, u) = serve(&args, &["-"], hook.port)?;
            (p, u, None)
        }
        "relay" => {
            let to = format!("{}-pressure", args.topic);
            feed::topic(&args.topic)?;
            let relay = Proc(
                Command::new(&args.bin)
                    .args(["relay", "--topic", &args.topic, "-e"])
                    .arg(format!("max_sessions={}", feed::max_sessions(&args)))
                    .arg("--wasm")
                    .arg(agent_fold::module::default_wasm_path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            );
            // The relay makes the sibling topic; serve waits for it.
            std::thread::sleep(Duration::from_secs(5));
            let (p, u) = serve(&args, &["--topic", &to], hook.port)?;
            (p, u, Some(relay))
        }
        other => bail!("--via {other:?}: stdin or relay"),
    };
    let mut server = server;
    let pid = server.0.id();
    println!(
        "board bench: {} sessions, {} records/s for {} s via {} at {url}",
        args.sessions, args.rate, args.secs, args.via
    );

    let feeder = feed::Feeder::start(&args, &rules, server.0.stdin.take())?;
    if args.warm > 0 {
        let t = Instant::now();
        feeder.wait_warm();
        println!(
            "warm-up: {} records written in {:.0} s (RSS then {:.1} MB)",
            args.warm,
            t.elapsed().as_secs_f64(),
            usage(pid).map_or(0.0, |u| u.0 as f64 / 1e6)
        );
    }
    let started = Instant::now();
    let cpu0 = usage(pid).map_or(0.0, |u| u.1);
    let mut samples: Vec<(f64, u64, f64)> = Vec::new();
    let mut browser = page::BrowserPage::open(&url)?;
    let mut first_render = None;
    let mut scroll = None;
    let deadline = started + Duration::from_secs(args.secs);
    while Instant::now() < deadline {
        if let Some((rss, cpu)) = usage(pid) {
            samples.push((started.elapsed().as_secs_f64(), rss, cpu - cpu0));
        }
        // After a minute, every session live: a fresh page's first render, then a scroll to the
        // last row; the page then stays on the board's first rows, measuring its latency.
        if first_render.is_none() && started.elapsed() > Duration::from_secs(60.min(args.secs / 2))
        {
            first_render = Some(page::BrowserPage::first_render(&url)?);
            scroll = Some(browser.scroll_frames()?);
            browser.reset_latency()?;
        }
        std::thread::sleep(Duration::from_secs(5));
    }
    let fed = feeder.stop()?;
    let fed_secs = started.elapsed().as_secs_f64();
    // Until the server has read every record (a relay behind catches up), then the webhook's
    // last deliveries.
    let caught_up = Instant::now();
    while caught_up.elapsed() < Duration::from_secs(300)
        && read_total(&url).is_some_and(|n| n < fed.pressure)
    {
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "caught up {:.0} s after the feed stopped: {} of {} pressure records read",
        caught_up.elapsed().as_secs_f64(),
        read_total(&url).unwrap_or(0),
        fed.pressure
    );
    std::thread::sleep(Duration::from_secs(5));
    let latency = browser.latency()?;
    let late = page::BrowserPage::late_chart(&url)?;
    let got = hook.alerts();
    let rows = browser.rows()?;
    drop(browser);
    drop(server);
    if relay.is_some() {
        drop(relay);
        feed::delete_topics(&args.topic);
    }

    // The report.
    println!(
        "\nfed {} {} ({:.0}/s), {} pressure records in all ({:.0}/s), {} sessions, {} rows on the board",
        fed.records,
        if args.via == "relay" {
            "frames"
        } else {
            "pressure records"
        },
        fed.records as f64 / fed_secs,
        fed.pressure,
        fed.pressure as f64 / fed_secs,
        fed.sessions,
        rows
    );
    println!("\n| time | server RSS | CPU since the line before |");
    println!("|---:|---:|---:|");
    let mut last: Option<&(f64, u64, f64)> = None;
    for t in [30.0, 60.0, 120.0, 240.0, 360.0, 480.0, 600.0, 900.0] {
        let Some(s) = samples.iter().rev().find(|s| s.0 <= t) else {
            continue;
        };
        if last.is_some_and(|l| l.0 >= s.0) {
            continue;
        }
        let cpu = last.map_or(s.2 / s.0.max(1.0), |l| (s.2 - l.2) / (s.0 - l.0).max(1.0));
        println!(
            "| {:.0} s | {:.1} MB | {:.0}% of a core |",
            s.0,
            s.1 as f64 / 1e6,
            cpu * 100.0
        );
        last = Some(s);
    }
    let peak = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let after_warm: Vec<u64> = samples
        .iter()
        .filter(|s| s.0 >= 60.0)
        .map(|s| s.1)
        .collect();
    let (lo, hi) = (
        after_warm.iter().min().copied().unwrap_or(0),
        after_warm.iter().max().copied().unwrap_or(0),
    );
    println!(
        "\nRSS peak {:.1} MB; after the first minute {:.1}–{:.1} MB",
        peak as f64 / 1e6,
        lo as f64 / 1e6,
        hi as f64 / 1e6
    );
    let cpu = samples.last().map_or(0.0, |s| s.2 / s.0.max(1.0));
    println!("CPU over the run: {:.0}% of one core", cpu * 100.0);
    let mut l = latency.clone();
    println!(
        "record read → row shown ({} samples): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        l.len(),
        percentile(&mut l, 0.5),
        percentile(&mut l, 0.99),
        l.last().copied().unwrap_or(f64::NAN)
    );
    if let Some(ms) = first_render {
        println!("first render of the whole board: {ms:.0} ms");
    }
    if let Some(mut frames) = scroll {
        let n = frames.len();
        println!(
            "scroll to the last row: {n} frames, p99 {:.1} ms, max {:.1} ms",
            percentile(&mut frames, 0.99),
            frames.last().copied().unwrap_or(f64::NAN)
        );
    }
    println!(
        "late page: the chart of {} drew {} of the server's {} points",
        late.session, late.drawn, late.points
    );
    println!("\n| rule | crossings fed | alerts received | sessions with a count that differs |");
    println!("|---|---:|---:|---:|");
    for r in &rules {
        let want = fed.crossings.get(&r.text).cloned().unwrap_or_default();
        let have = got.get(&r.text).cloned().unwrap_or_default();
        let total = |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>();
        let differ = want
            .keys()
            .chain(have.keys())
            .filter(|k| want.get(*k) != have.get(*k))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        println!(
            "| `{}` | {} | {} | {differ} |",
            r.text,
            total(&want),
            total(&have)
        );
    }
    Ok(())
}
