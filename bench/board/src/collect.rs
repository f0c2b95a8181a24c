//! `--collect`: the OTLP receiver's rate. A release `agent-fold collect --out FILE` is sent
//! requests as Claude Code's exporter sends them — the events derived from a real transcript
//! (`agent_fold_testkit::otel`), 512 a request, protobuf (and JSON, gzipped), each request's
//! sessions renamed so that no two requests repeat — by `clients` senders at once, each on a
//! connection of its own kept alive; events a second over the wall time, and the time each
//! request took.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use prost::Message;
use serde_json::Value;

use crate::Proc;

/// The derived export of a transcript as requests of 512 events (an exporter's largest batch:
/// a busy session's, or a collector's in front of many).
fn requests(transcript: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(transcript)
        .with_context(|| format!("reading {}", transcript.display()))?;
    let events = agent_fold_testkit::otel::derive(&text);
    let bodies = agent_fold_testkit::otel::export_requests(&events);
    let Some(first) = bodies.first() else {
        return Ok(Vec::new());
    };
    let records: Vec<Value> = bodies
        .iter()
        .flat_map(|b| b["resourceLogs"].as_array().cloned().unwrap_or_default())
        .flat_map(|rl| rl["scopeLogs"].as_array().cloned().unwrap_or_default())
        .flat_map(|sl| sl["logRecords"].as_array().cloned().unwrap_or_default())
        .collect();
    Ok(records
        .chunks(512)
        .map(|chunk| {
            let mut body = first.clone();
            body["resourceLogs"] = serde_json::json!([{
                "resource": first["resourceLogs"][0]["resource"],
                "scopeLogs": [{"scope": first["resourceLogs"][0]["scopeLogs"][0]["scope"],
                               "logRecords": chunk}],
            }]);
            body
        })
        .collect())
}

/// A body with every `session.id` made `session`'s: a request no other repeats.
fn renamed(body: &Value, session: &str) -> Value {
    let mut text = body.to_string();
    if let Some(old) = find_session(body) {
        text = text.replace(&old, session);
    }
    serde_json::from_str(&text).expect("still JSON")
}

fn find_session(body: &Value) -> Option<String> {
    let recs = body
        .pointer("/resourceLogs/0/scopeLogs/0/logRecords")?
        .as_array()?;
    recs.iter().find_map(|r| {
        r["attributes"].as_array()?.iter().find_map(|kv| {
            (kv["key"] == "session.id")
                .then(|| kv["value"]["stringValue"].as_str().map(str::to_owned))?
        })
    })
}

fn events(body: &Value) -> usize {
    body["resourceLogs"]
        .as_array()
        .map(|rl| {
            rl.iter()
                .flat_map(|r| r["scopeLogs"].as_array().into_iter().flatten())
                .map(|s| s["logRecords"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0)
}

/// One POST on a kept-alive connection; its status.
fn post(conn: &mut BufReader<TcpStream>, ctype: &str, gzip: bool, body: &[u8]) -> Result<u16> {
    let mut req = format!(
        "POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n",
        body.len()
    )
    .into_bytes();
    if gzip {
        req.extend_from_slice(b"Content-Encoding: gzip\r\n");
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    // One write: a head and a body apart wait on the peer's delayed ACK (Nagle).
    conn.get_mut().write_all(&req)?;
    let mut line = String::new();
    conn.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("a status line")?;
    let mut len = 0;
    loop {
        let mut h = String::new();
        conn.read_line(&mut h)?;
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse()?;
        }
    }
    let mut rest = vec![0; len];
    conn.read_exact(&mut rest)?;
    Ok(status)
}

/// Sends `total` requests from `clients` senders; prints the rate.
pub(crate) fn run(bin: &Path, transcript: &Path, total: usize, clients: usize) -> Result<()> {
    let bodies = requests(transcript)?;
    if bodies.is_empty() {
        bail!("{} gives no events", transcript.display());
    }
    let out =
        std::env::temp_dir().join(format!("board-bench-collect-{}.jsonl", std::process::id()));
    let mut child = Command::new(bin)
        .args(["collect", "--listen", "127.0.0.1:0", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let err = child.stderr.take().expect("piped");
    let collector = Proc(child);
    let mut line = String::new();
    let mut err = BufReader::new(err);
    err.read_line(&mut line)?;
    // The rest drained, so that the collector's logging never meets a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .context("collect printed no address")?;
    for (label, json, gzip) in [("protobuf", false, false), ("JSON, gzip", true, true)] {
        // The requests, made before the clock starts.
        let made: Vec<(Vec<u8>, usize)> = (0..total)
            .map(|i| {
                let body = renamed(&bodies[i % bodies.len()], &format!("bench-{label}-{i}"));
                let n = events(&body);
                let bytes = if json {
                    body.to_string().into_bytes()
                } else {
                    let req: ExportLogsServiceRequest =
                        serde_json::from_value(body).expect("an OTLP request");
                    req.encode_to_vec()
                };
                let bytes = if gzip {
                    let mut e =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    e.write_all(&bytes).expect("in memory");
                    e.finish().expect("in memory")
                } else {
                    bytes
                };
                (bytes, n)
            })
            .collect();
        let ctype = if json {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        let share: Vec<Vec<(Vec<u8>, usize)>> = (0..clients)
            .map(|c| made.iter().skip(c).step_by(clients).cloned().collect())
            .collect();
        let started = Instant::now();
        let handles: Vec<_> = share
            .into_iter()
            .map(|mine| {
                std::thread::spawn(move || -> Result<(usize, Vec<f64>)> {
                    let s = TcpStream::connect(("127.0.0.1", port))?;
                    s.set_nodelay(true)?;
                    s.set_read_timeout(Some(Duration::from_secs(60)))?;
                    let mut conn = BufReader::new(s);
                    let (mut sent, mut took) = (0, Vec::new());
                    for (bytes, n) in mine {
                        let t = Instant::now();
                        let status = post(&mut conn, ctype, gzip, &bytes)?;
                        took.push(t.elapsed().as_secs_f64() * 1e3);
                        if status != 200 {
                            bail!("answered {status}");
                        }
                        sent += n;
                    }
                    Ok((sent, took))
                })
            })
            .collect();
        let (mut sent, mut took) = (0, Vec::new());
        for h in handles {
            let (n, t) = h.join().expect("a sender")?;
            sent += n;
            took.extend(t);
        }
        let secs = started.elapsed().as_secs_f64();
        took.sort_by(f64::total_cmp);
        let p = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize];
        println!(
            "collect, {label}: {total} requests of up to 512 events from {clients} senders: \
             {sent} events in {secs:.2} s = {:.0} events/s; a request p50 {:.1} ms, p99 {:.1} ms",
            sent as f64 / secs,
            p(0.5),
            p(0.99)
        );
    }
    drop(collector);
    let written = std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
    println!("written: {written} events");
    let _ = std::fs::remove_file(&out);
    Ok(())
}
