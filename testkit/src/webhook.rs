//! A webhook receiver on loopback for the alert tests and the board bench: plain HTTP/1.1 on
//! std, each POST's JSON body kept; optionally the first answered 500 (the sender must try
//! again), the rest 200.

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
}

impl Receiver {
    /// Listens on a free loopback port; `fail_first`: the first POST is answered 500.
    pub fn start(fail_first: bool) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&got);
        let posts = Arc::new(Mutex::new(0));
        let count = Arc::clone(&posts);
        std::thread::spawn(move || {
            for (i, conn) in listener.incoming().enumerate() {
                let Ok(mut conn) = conn else { continue };
                let Ok(clone) = conn.try_clone() else {
                    continue;
                };
                let mut r = BufReader::new(clone);
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
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
                let refuse = fail_first && i == 0;
                // One notice, or several in an array (as they waited): kept one by one.
                if !refuse {
                    *count.lock().unwrap() += 1;
                }
                if !refuse && let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    match v {
                        Value::Array(notices) => keep.lock().unwrap().extend(notices),
                        v => keep.lock().unwrap().push(v),
                    }
                }
                let status = if refuse {
                    "500 Internal Server Error"
                } else {
                    "200 OK"
                };
                let _ = conn.write_all(
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        Ok(Receiver { port, got, posts })
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
