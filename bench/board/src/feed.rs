//! The load: a fleet's pressure records, made from the corpus generator by the module natively,
//! fed at a steady rate and stamped as they go; what was fed, counted for the alerts it should
//! raise.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agent_fold::corpus::{Corpus, CorpusConfig};
use agent_fold::record::Rec;
use agent_fold_core::{Emit, Processor, RecordIn};
use agent_fold_testkit::alerts::{Crossings, Rule};
use anyhow::{Context, Result, bail};

use crate::Args;

/// What was fed.
pub(crate) struct Fed {
    /// Records written: pressure records to stdin, frames to a topic.
    pub records: u64,
    /// Pressure records the server should read: those written, or those the relay makes.
    pub pressure: u64,
    pub sessions: usize,
    /// Per rule, the crossings per session in what was fed.
    pub crossings: BTreeMap<String, BTreeMap<String, u64>>,
}

pub(crate) struct Feeder {
    stop: Arc<AtomicBool>,
    warmed: Arc<AtomicBool>,
    handle: JoinHandle<Result<Fed>>,
}

/// Now, as RFC 3339.
fn now() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    agent_fold_core::time::format(ns)
}

/// `value` with its top-level `"timestamp":"…"` set to `stamp` (a frame's or a record's).
fn restamp(value: &[u8], stamp: &str) -> Vec<u8> {
    let key = b"\"timestamp\":\"";
    let Some(at) = value.windows(key.len()).position(|w| w == key) else {
        return value.to_vec();
    };
    let start = at + key.len();
    let Some(len) = value[start..].iter().position(|&b| b == b'"') else {
        return value.to_vec();
    };
    let mut out = Vec::with_capacity(value.len() + 16);
    out.extend_from_slice(&value[..start]);
    out.extend_from_slice(stamp.as_bytes());
    out.extend_from_slice(&value[start + len..]);
    out
}

/// The module's `max_sessions`, here and in the relay: room for the live sessions and those
/// that ended recently, so that none comes back partial (contract §4).
pub(crate) fn max_sessions(args: &Args) -> usize {
    args.sessions * 4
}

/// Frames of the corpus and the pressure records the module makes of them, a batch at a time.
struct Source {
    corpus: Corpus,
    module: Processor,
}

impl Source {
    fn new(args: &Args) -> Result<Source> {
        let cap = max_sessions(args).to_string();
        Ok(Source {
            corpus: Corpus::new(CorpusConfig {
                seed: args.seed,
                active_sessions: args.sessions,
                keyed: true,
                fleet: true,
                small: false,
            }),
            module: Processor::from_params([("emit", "pressure"), ("max_sessions", cap.as_str())])?,
        })
    }

    /// The next thousand frames, each with the pressure records the module makes of it.
    fn next(&mut self) -> Result<Vec<(Rec, Vec<Vec<u8>>)>> {
        // `fluvio produce` reads lines of text and ends at one that is not UTF-8 (the corpus
        // has a few malformed records that are not): both paths leave them out, so that the
        // relay's records and the crossings counted here come from the same frames.
        let frames: Vec<Rec> = self
            .corpus
            .by_ref()
            .take(1000)
            .filter(|r| std::str::from_utf8(&r.value).is_ok())
            .collect();
        let ins: Vec<RecordIn> = frames
            .iter()
            .map(|r| RecordIn::new(r.key.as_deref(), &r.value))
            .collect();
        let out = self
            .module
            .process(&ins)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut made: Vec<Vec<Vec<u8>>> = vec![Vec::new(); frames.len()];
        for e in out {
            if let Emit::New { at, value, .. } = e {
                made[at].push(value);
            }
        }
        Ok(frames.into_iter().zip(made).collect())
    }
}

/// The figures a rule reads of a record.
#[derive(serde::Deserialize)]
struct Figures {
    #[serde(rename = "type")]
    kind: String,
    session: Option<String>,
    #[serde(rename = "untilCompactTokens")]
    until: Option<u64>,
    #[serde(rename = "contextOccupancy")]
    occupancy: Option<f64>,
    #[serde(rename = "projectedTokens")]
    projected: Option<u64>,
    #[serde(rename = "pressureTokens")]
    pressure: Option<u64>,
}

/// `fluvio ARGS` against the local cluster.
fn fluvio(args: &[&str]) -> Result<std::process::Output> {
    std::process::Command::new("fluvio")
        .args(args)
        .output()
        .context("running fluvio (on PATH, reaching a cluster)")
}

/// Makes the event topic of a relay run (a name of its own: the local SC can stall for a
/// minute creating a topic right after one of the same name was deleted).
pub(crate) fn topic(name: &str) -> Result<()> {
    let out = fluvio(&["topic", "create", name])?;
    if !out.status.success() {
        bail!(
            "fluvio topic create {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Deletes a relay run's topics.
pub(crate) fn delete_topics(name: &str) {
    for t in [name.to_owned(), format!("{name}-pressure")] {
        let _ = fluvio(&["topic", "delete", &t]);
    }
}

impl Feeder {
    /// Feeds `serve -` through `stdin` (pressure records), or the event topic (frames) when
    /// there is no stdin, at `args.rate` a second until stopped.
    pub(crate) fn start(args: &Args, rules: &[Rule], stdin: Option<ChildStdin>) -> Result<Feeder> {
        let mut source = Source::new(args)?;
        let stop = Arc::new(AtomicBool::new(false));
        let warmed = Arc::new(AtomicBool::new(false));
        let (halt, ready) = (Arc::clone(&stop), Arc::clone(&warmed));
        let (rate, topic, warm) = (args.rate, args.topic.clone(), args.warm);
        let rules = rules.to_vec();
        let handle = std::thread::spawn(move || -> Result<Fed> {
            let mut crossings = Crossings::new(rules);
            let mut sessions = BTreeSet::new();
            let mut sink = Sink::open(stdin, &topic)?;
            let mut started = Instant::now();
            let mut sent = 0u64;
            let mut pressure = 0u64;
            // What goes next: a pressure record (stdin) or a frame with the records the
            // module makes of it (a topic: the relay makes them), counted as it is sent.
            let mut queue: std::vec::IntoIter<(Option<Rec>, Vec<Vec<u8>>)> = Vec::new().into_iter();
            while !halt.load(Ordering::Relaxed) {
                // The warm-up: `warm` records as fast as they go; then the rate: what is due
                // by now, in steps of 10 ms.
                let due = if sent < warm {
                    warm
                } else {
                    if !ready.swap(true, Ordering::Relaxed) {
                        started = Instant::now();
                    }
                    warm + (started.elapsed().as_secs_f64() * rate as f64) as u64
                };
                if sent >= due {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                let stamp = now();
                while sent < due {
                    let Some((frame, records)) = queue.next() else {
                        let batch = source.next()?;
                        queue = match &sink {
                            Sink::Stdin(_) => batch
                                .into_iter()
                                .flat_map(|(_, r)| r)
                                .map(|r| (None, vec![r]))
                                .collect::<Vec<_>>(),
                            Sink::Topic(..) => {
                                batch.into_iter().map(|(f, r)| (Some(f), r)).collect()
                            }
                        }
                        .into_iter();
                        continue;
                    };
                    for r in &records {
                        observe(&mut crossings, &mut sessions, r);
                    }
                    pressure += records.len() as u64;
                    match frame {
                        Some(f) => sink.frame(&f, &stamp)?,
                        None => sink.record(&restamp(&records[0], &stamp))?,
                    }
                    sent += 1;
                }
                sink.flush()?;
            }
            sink.finish()?;
            Ok(Fed {
                records: sent,
                pressure,
                sessions: sessions.len(),
                crossings: crossings.counts(),
            })
        });
        Ok(Feeder {
            stop,
            warmed,
            handle,
        })
    }

    /// Waits until the warm-up's records are written (at once without one).
    pub(crate) fn wait_warm(&self) {
        while !self.warmed.load(Ordering::Relaxed) && !self.handle.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn stop(self) -> Result<Fed> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the feeder thread")
    }
}

fn observe(crossings: &mut Crossings, sessions: &mut BTreeSet<String>, record: &[u8]) {
    let Ok(f) = serde_json::from_slice::<Figures>(record) else {
        return;
    };
    let Some(s) = f.session.filter(|_| f.kind == "context/pressure") else {
        return;
    };
    crossings.observe(
        &s,
        f.until,
        f.occupancy,
        f.projected.or(f.pressure),
        f.pressure,
    );
    sessions.insert(s);
}

/// What `fluvio produce` says.
const PRODUCE_LOG: &str = "/tmp/board-bench-produce.log";

/// Where the load goes: the server's stdin, or the event topic through `fluvio produce`.
enum Sink {
    Stdin(std::io::BufWriter<ChildStdin>),
    Topic(std::process::Child, std::io::BufWriter<ChildStdin>),
}

impl Sink {
    fn open(stdin: Option<ChildStdin>, topic: &str) -> Result<Sink> {
        Ok(match stdin {
            Some(s) => Sink::Stdin(std::io::BufWriter::new(s)),
            None => {
                // Keyed with a separator JSON cannot hold (README, "The chat stream").
                let mut child = std::process::Command::new("fluvio")
                    .args(["produce", topic, "--key-separator", "\u{1f}"])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::fs::File::create(PRODUCE_LOG)?)
                    .spawn()
                    .context("running fluvio produce")?;
                let w = std::io::BufWriter::new(child.stdin.take().expect("piped"));
                Sink::Topic(child, w)
            }
        })
    }

    fn record(&mut self, value: &[u8]) -> Result<()> {
        let Sink::Stdin(w) = self else {
            unreachable!("records go to stdin")
        };
        w.write_all(value)?;
        w.write_all(b"\n")?;
        Ok(())
    }

    fn frame(&mut self, f: &Rec, stamp: &str) -> Result<()> {
        let Sink::Topic(_, w) = self else {
            unreachable!("frames go to a topic")
        };
        let mut line = f.key.clone().unwrap_or_default();
        line.push(0x1f);
        line.extend_from_slice(&restamp(&f.value, stamp));
        line.push(b'\n');
        w.write_all(&line).with_context(|| {
            let said = std::fs::read_to_string(PRODUCE_LOG).unwrap_or_default();
            format!("fluvio produce ended: {}", said.trim())
        })
    }

    fn flush(&mut self) -> Result<()> {
        match self {
            Sink::Stdin(w) | Sink::Topic(_, w) => w.flush()?,
        }
        Ok(())
    }

    /// Everything written; a `fluvio produce` waited for, so that every frame is in the topic.
    fn finish(self) -> Result<()> {
        match self {
            Sink::Stdin(mut w) => w.flush()?,
            Sink::Topic(mut child, mut w) => {
                w.flush()?;
                drop(w);
                child.wait()?;
            }
        }
        Ok(())
    }
}
