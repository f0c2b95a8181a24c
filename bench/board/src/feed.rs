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
pub struct Fed {
    pub records: u64,
    pub sessions: usize,
    /// Per rule, the crossings per session in what was fed.
    pub crossings: BTreeMap<String, BTreeMap<String, u64>>,
}

pub struct Feeder {
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

/// Frames of the corpus and the pressure records the module makes of them, a batch at a time.
struct Source {
    corpus: Corpus,
    module: Processor,
}

impl Source {
    fn new(args: &Args) -> Result<Source> {
        let cap = (args.sessions * 4).to_string();
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

    /// The next thousand frames, and the pressure records they make.
    fn next(&mut self) -> Result<(Vec<Rec>, Vec<Vec<u8>>)> {
        let frames: Vec<Rec> = self.corpus.by_ref().take(1000).collect();
        let ins: Vec<RecordIn> = frames
            .iter()
            .map(|r| RecordIn::new(r.key.as_deref(), &r.value))
            .collect();
        let out = self
            .module
            .process(&ins)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let records = out
            .into_iter()
            .filter_map(|e| match e {
                Emit::New { value, .. } => Some(value),
                _ => None,
            })
            .collect();
        Ok((frames, records))
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

/// Makes the event topic of a relay run (fresh).
pub fn topic(name: &str) -> Result<()> {
    let run = |args: &[&str]| {
        std::process::Command::new("fluvio")
            .args(args)
            .output()
            .context("running fluvio (on PATH, reaching a cluster)")
    };
    let _ = run(&["topic", "delete", name]);
    let _ = run(&["topic", "delete", &format!("{name}-pressure")]);
    let out = run(&["topic", "create", name])?;
    if !out.status.success() {
        bail!(
            "fluvio topic create {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

impl Feeder {
    /// Feeds `serve -` through `stdin` (pressure records), or the event topic (frames) when
    /// there is no stdin, at `args.rate` a second until stopped.
    pub fn start(args: &Args, rules: &[Rule], stdin: Option<ChildStdin>) -> Result<Feeder> {
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
            let (mut frames, mut records) = (Vec::new().into_iter(), Vec::new().into_iter());
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
                    // Stdin takes pressure records; a topic takes frames (the relay makes
                    // the records), each counted as the module makes them.
                    let next = match &sink {
                        Sink::Stdin(_) => records.next().map(|r| (None, r)),
                        Sink::Topic(..) => frames.next().map(|f: Rec| (Some(f), Vec::new())),
                    };
                    let Some((frame, record)) = next else {
                        let (f, r) = source.next()?;
                        if matches!(sink, Sink::Topic(..)) {
                            for rec in &r {
                                observe(&mut crossings, &mut sessions, rec);
                            }
                        }
                        frames = f.into_iter();
                        records = r.into_iter();
                        continue;
                    };
                    match frame {
                        Some(f) => sink.frame(&f, &stamp)?,
                        None => {
                            observe(&mut crossings, &mut sessions, &record);
                            sink.record(&restamp(&record, &stamp))?;
                        }
                    }
                    sent += 1;
                }
                sink.flush()?;
            }
            sink.finish()?;
            Ok(Fed {
                records: sent,
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
    pub fn wait_warm(&self) {
        while !self.warmed.load(Ordering::Relaxed) && !self.handle.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stop(self) -> Result<Fed> {
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
                    .stderr(std::process::Stdio::null())
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
        w.write_all(f.key.as_deref().unwrap_or_default())?;
        w.write_all("\u{1f}".as_bytes())?;
        w.write_all(&restamp(&f.value, stamp))?;
        w.write_all(b"\n")?;
        Ok(())
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
