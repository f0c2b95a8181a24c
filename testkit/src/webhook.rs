//! A webhook receiver on loopback for the alert tests and the board bench: plain HTTP/1.1 on
//! std, each POST's JSON body kept; optionally the first answered 500 (the sender must try
//! again), the rest 200; [`Receiver::set_down`] makes it a receiver that is down (each
//! connection closed unanswered) until it is set up again. [`Receiver::alertmanager`] stands in for Prometheus Alertmanager's v2
//! API: `POST /api/v2/alerts` only, each body held to the `postableAlert` schema (a 400 and the
//! reason kept, as Alertmanager refuses, for anything else).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Vec<Value>>>,
    /// POSTs answered 200.
    posts: Arc<Mutex<usize>>,
    /// Why requests were refused (400), in order.
    refused: Arc<Mutex<Vec<String>>>,
    /// While set, connections are closed unanswered: a receiver that is down.
    down: Arc<std::sync::atomic::AtomicBool>,
    /// Connections closed unanswered while down.
    turned_away: Arc<std::sync::atomic::AtomicUsize>,
}

/// What a body must be to be taken: `Err(why)` is answered 400.
type Check = fn(&str, &Value) -> Result<(), String>;

/// Prometheus Alertmanager v2's `postableAlerts`: a JSON array of objects with `labels` (at
/// least one; names `[a-zA-Z_][a-zA-Z0-9_]*`, string values) and optionally `annotations`
/// (string values), `startsAt` and `endsAt` (RFC 3339; the end not before the start) and
/// `generatorURL` (a URI); no other field.
pub fn check_v2_alerts(path: &str, body: &Value) -> Result<(), String> {
    if path != "/api/v2/alerts" {
        return Err(format!("POST {path}: not the v2 alerts endpoint"));
    }
    let alerts = body.as_array().ok_or("the body is not a JSON array")?;
    for (i, a) in alerts.iter().enumerate() {
        let o = a.as_object().ok_or(format!("alert {i} is not an object"))?;
        for key in o.keys() {
            if ![
                "labels",
                "annotations",
                "startsAt",
                "endsAt",
                "generatorURL",
            ]
            .contains(&&**key)
            {
                return Err(format!("alert {i}: unknown field {key:?}"));
            }
        }
        let labels = o["labels"]
            .as_object()
            .ok_or(format!("alert {i}: no labels"))?;
        if labels.is_empty() {
            return Err(format!("alert {i}: at least one label pair required"));
        }
        for (name, map) in [
            ("labels", Some(labels)),
            (
                "annotations",
                o.get("annotations").map(|v| v.as_object()).unwrap_or(None),
            ),
        ] {
            for (k, v) in map.into_iter().flatten() {
                let ok = k.chars().enumerate().all(|(j, c)| {
                    c == '_' || c.is_ascii_alphabetic() || (j > 0 && c.is_ascii_digit())
                });
                if name == "labels" && (!ok || k.is_empty()) {
                    return Err(format!("alert {i}: invalid label name {k:?}"));
                }
                if !v.is_string() {
                    return Err(format!("alert {i}: {name}.{k} is not a string"));
                }
            }
        }
        if o.get("annotations").is_some_and(|v| !v.is_object()) {
            return Err(format!("alert {i}: annotations is not an object"));
        }
        let time = |key: &str| -> Result<Option<i64>, String> {
            match o.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => strict_rfc3339(s)
                    .map(Some)
                    .ok_or(format!("alert {i}: {key} {s:?} is not RFC 3339")),
                Some(v) => Err(format!("alert {i}: {key} is {v}, not a string")),
            }
        };
        if let (Some(start), Some(end)) = (time("startsAt")?, time("endsAt")?)
            && end < start
        {
            return Err(format!("alert {i}: start time must be before end time"));
        }
        if let Some(u) = o.get("generatorURL") {
            let u = u
                .as_str()
                .ok_or(format!("alert {i}: generatorURL is not a string"))?;
            if !(u.starts_with("http://") || u.starts_with("https://")) || u.contains(' ') {
                return Err(format!("alert {i}: generatorURL {u:?} is not a URI"));
            }
        }
    }
    Ok(())
}

/// Nanoseconds since 1970 of a stamp as Go's `time.RFC3339Nano` reads it:
/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±hh:mm)`, nothing else.
fn strict_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let mut rest = &s[19.min(s.len())..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let zone = rest == "Z"
        || (rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':');
    if !(shape && zone) {
        return None;
    }
    agent_fold_core::time::parse(s)
}

impl Receiver {
    /// Listens on a free loopback port; `fail_first`: the first POST is answered 500.
    pub fn start(fail_first: bool) -> std::io::Result<Receiver> {
        Receiver::listen(fail_first, None)
    }

    /// An Alertmanager stand-in: bodies held to [`check_v2_alerts`].
    pub fn alertmanager() -> std::io::Result<Receiver> {
        Receiver::listen(false, Some(check_v2_alerts))
    }

    fn listen(fail_first: bool, check: Option<Check>) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&got);
        let posts = Arc::new(Mutex::new(0));
        let count = Arc::clone(&posts);
        let refused = Arc::new(Mutex::new(Vec::new()));
        let refusals = Arc::clone(&refused);
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let is_down = Arc::clone(&down);
        let turned_away = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let turn_away = Arc::clone(&turned_away);
        std::thread::spawn(move || {
            for (i, conn) in listener.incoming().enumerate() {
                let Ok(mut conn) = conn else { continue };
                if is_down.load(std::sync::atomic::Ordering::SeqCst) {
                    turn_away.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _ = conn.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let Ok(clone) = conn.try_clone() else {
                    continue;
                };
                let mut r = BufReader::new(clone);
                let mut len = 0;
                let mut path = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if path.is_empty() {
                        path = line.split(' ').nth(1).unwrap_or("?").to_owned();
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    continue;
                }
                let parsed = serde_json::from_slice::<Value>(&body);
                let checked = match (&parsed, check) {
                    (Err(e), Some(_)) => Err(format!("not JSON: {e}")),
                    (Ok(v), Some(check)) => check(&path, v),
                    _ => Ok(()),
                };
                let refuse = fail_first && i == 0;
                let status = match checked {
                    Err(why) => {
                        refusals.lock().unwrap().push(why);
                        "400 Bad Request"
                    }
                    Ok(()) if refuse => "500 Internal Server Error",
                    Ok(()) => {
                        *count.lock().unwrap() += 1;
                        // One notice, or several in an array (as they waited): kept one by one.
                        match parsed {
                            Ok(Value::Array(notices)) => keep.lock().unwrap().extend(notices),
                            Ok(v) => keep.lock().unwrap().push(v),
                            Err(_) => {}
                        }
                        "200 OK"
                    }
                };
                let _ = conn.write_all(
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        Ok(Receiver {
            port,
            got,
            posts,
            refused,
            down,
            turned_away,
        })
    }

    /// Down (every connection closed unanswered, as a receiver that is not there) or up.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    /// Connections closed unanswered while down: the sender's attempts then.
    pub fn turned_away(&self) -> usize {
        self.turned_away.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why requests were refused (400), in order.
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }

    /// How many POSTs were answered 200 (a POST may carry several notices).
    pub fn posts(&self) -> usize {
        *self.posts.lock().unwrap()
    }

    /// Every notice received (and answered 200), in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.got.lock().unwrap().clone()
    }

    /// Per rule, the alerts received per session (notices of `status` `firing`).
    pub fn alerts(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.notices("firing")
    }

    /// Per rule, the notices of `status` received per session.
    pub fn notices(&self, status: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for a in self.bodies().into_iter().filter(|a| a["status"] == status) {
            let (Some(rule), Some(session)) = (a["rule"].as_str(), a["session"].as_str()) else {
                continue;
            };
            *out.entry(rule.to_owned())
                .or_default()
                .entry(session.to_owned())
                .or_default() += 1;
        }
        out
    }
}
