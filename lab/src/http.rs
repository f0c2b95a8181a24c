//! The stand-ins' HTTP/1.1 on std: a thread per connection, a request read whole (its body by
//! `Content-Length` or chunked), and an answer that is JSON or a Server-Sent Events stream in
//! chunks. Enough for the four agents' HTTP clients (Bun's, undici's, reqwest's), nothing more:
//! the lab's servers listen on loopback for one run each.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most bytes of one request body: the agents send their whole context each time.
const MAX_BODY: usize = 256 << 20;

/// One request as read off the connection.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What a handler answers.
pub enum Answer {
    /// A status and a JSON body.
    Json(u16, Vec<u8>),
    /// `200` and a Server-Sent Events stream: each item written as it stands (the handler
    /// formats `event:`/`data:` lines), one chunk each.
    Events(Vec<String>),
}

/// A listening stand-in; it stops accepting when dropped.
pub struct Server {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serves `handle` on a free loopback port.
    pub fn start<H>(handle: H) -> std::io::Result<Server>
    where
        H: Fn(&Request) -> Answer + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let handle = Arc::new(handle);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let handle = Arc::clone(&handle);
                std::thread::spawn(move || serve(conn, &*handle));
            }
        });
        Ok(Server { port, stop })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(conn: TcpStream, handle: &(dyn Fn(&Request) -> Answer + Send + Sync)) {
    let Ok(read) = conn.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut writer = conn;
    while let Some(req) = read_request(&mut reader) {
        let answer = match req {
            Ok(req) => handle(&req),
            Err(why) => {
                eprintln!("lab: a request that does not read: {why}");
                Answer::Json(400, why.into_bytes())
            }
        };
        if write_answer(&mut writer, answer).is_err() {
            return;
        }
    }
}

/// The next request, `None` at the end of the connection, `Err` for one that does not read.
fn read_request(r: &mut impl BufRead) -> Option<Result<Request, String>> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Some(Err(format!("not a request line: {line:?}")));
    };
    let (method, target) = (method.to_owned(), target.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    let body = if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        match read_chunked(r) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        }
    } else {
        let len: usize = get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if len > MAX_BODY {
            return Some(Err(format!("a body of {len} bytes")));
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).ok()?;
        body
    };
    Some(Ok(Request {
        method,
        target,
        headers,
        body,
    }))
}

fn read_chunked(r: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size).map_err(|e| e.to_string())?;
        let hex = size.trim().split(';').next().unwrap_or("");
        let n = usize::from_str_radix(hex, 16).map_err(|_| format!("chunk size {size:?}"))?;
        if body.len() + n > MAX_BODY {
            return Err("a chunked body over the bound".into());
        }
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            // The trailer's end (no trailers are sent by the agents).
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

fn write_answer(w: &mut TcpStream, answer: Answer) -> std::io::Result<()> {
    match answer {
        Answer::Json(status, body) => {
            let reason = if status == 200 { "OK" } else { "Error" };
            write!(
                w,
                "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )?;
            w.write_all(&body)?;
        }
        Answer::Events(events) => {
            w.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
            )?;
            for e in events {
                write!(w, "{:x}\r\n", e.len())?;
                w.write_all(e.as_bytes())?;
                w.write_all(b"\r\n")?;
                w.flush()?;
            }
            w.write_all(b"0\r\n\r\n")?;
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_by_length_or_in_chunks() {
        let raw = b"POST /v1/x?beta=true HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}POST /y HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        let mut r = BufReader::new(&raw[..]);
        let a = read_request(&mut r).unwrap().unwrap();
        assert_eq!((a.path(), &a.body[..]), ("/v1/x", &b"{}"[..]));
        assert_eq!(a.header("host"), Some("h"));
        let b = read_request(&mut r).unwrap().unwrap();
        assert_eq!(b.body, b"abcde");
        assert!(read_request(&mut r).is_none());
        let mut bad =
            BufReader::new(&b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..]);
        assert!(read_request(&mut bad).unwrap().is_err());
    }
}
