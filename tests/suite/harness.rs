//! `agent-fold serve` started as the binary it is, and talked to over plain HTTP: the URL it
//! prints, GET requests, and a Server-Sent Events reader. Shared by the suite's `serve`,
//! `browser`, `statusline` and `collect` modules.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use agent_fold::module::{Build, Module};
use agent_fold::record::Rec;
use agent_fold_core::View;
use serde_json::{Value, json};

/// How long anything may take before the test fails instead of hanging.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// The binary under test: $AGENT_FOLD_BIN (e.g. a release build), else cargo's build of it.
pub(crate) fn binary() -> std::path::PathBuf {
    std::env::var_os("AGENT_FOLD_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_agent-fold").into())
}

/// The binary to run, the agents' homes (whose settings move compaction points, docs/serve.md)
/// an empty directory: what it reads is the test's, never this machine's. A test's own `env`
/// set after stands over these.
pub(crate) fn command() -> Command {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("no-agent-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    });
    let mut c = Command::new(binary());
    c.env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("XDG_CONFIG_HOME", home.join(".config"));
    // The Fluvio profile stays this machine's (the live-cluster tests reach its cluster through
    // it): under the scratch HOME the client would find none.
    let fluvio = std::env::var_os("FLV_PROFILE_PATH")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".fluvio/config"))
        });
    if let Some(profile) = fluvio.filter(|p| p.is_file()) {
        c.env("FLV_PROFILE_PATH", profile);
    }
    c
}

/// Makes a FIFO at `path`.
pub(crate) fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path it is given, which lives until the call ends.
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "{}", path.display());
}

/// Runs the binary with `args` and `stdin`; `None` when it has not ended within `within`
/// (then it is killed): a run that hangs fails its test instead of holding the suite.
pub(crate) fn agent_fold_within<S: AsRef<OsStr>>(
    args: &[S],
    stdin: &[u8],
    within: Duration,
) -> Option<Output> {
    let mut child = command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent-fold binary runs");
    let mut input = child.stdin.take().expect("piped");
    let bytes = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let deadline = Instant::now() + within;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(child.wait_with_output().expect("its output"))
}

/// `agent-fold ARGS` run to its end with `stdin` as its input (none: no input), its stdout and
/// stderr caught.
pub(crate) fn agent_fold<S: AsRef<OsStr>>(args: &[S], stdin: Option<&[u8]>) -> Output {
    let input = match stdin {
        Some(_) => Stdio::piped(),
        None => Stdio::null(),
    };
    let mut child = command()
        .args(args)
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent-fold binary runs");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(bytes)
            .expect("stdin takes the input");
    }
    child.wait_with_output().expect("agent-fold finishes")
}

/// `out`, having checked that the command succeeded (its stderr in the failure).
pub(crate) fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "agent-fold failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A running server; killed when dropped.
pub(crate) struct Server {
    /// What it printed on stdout, line by line.
    printed: Arc<Mutex<Vec<String>>>,
    child: Child,
    pub url: String,
    pub port: u16,
    stderr: Arc<Mutex<String>>,
}

/// `agent-fold serve ARGS…` run to its end: its exit code and stderr (for refused flags).
pub(crate) fn refused(args: &[&str]) -> (i32, String) {
    let out = command()
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run agent-fold");
    assert!(
        out.stdout.is_empty(),
        "no URL is printed when the server does not start: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Server {
    /// `agent-fold serve ARGS…` with stdin closed.
    pub(crate) fn start(args: &[&str]) -> Server {
        Server::start_with(args, &[], Stdio::null())
    }

    /// With extra environment variables and the given stdin.
    pub(crate) fn start_with(args: &[&str], env: &[(&str, &str)], stdin: Stdio) -> Server {
        let mut child = command()
            .arg("serve")
            .args(args)
            .envs(env.iter().copied())
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agent-fold serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let keep = Arc::clone(&stderr);
        let err = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                keep.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let out = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        let printed = Arc::new(Mutex::new(Vec::new()));
        let keep_out = Arc::clone(&printed);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                keep_out.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let url = match rx.recv_timeout(TIMEOUT) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "agent-fold serve printed no URL; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|r| r.strip_suffix('/'))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the first line is the URL, got {url:?}"));
        Server {
            child,
            url,
            port,
            stderr,
            printed,
        }
    }

    /// The OTLP endpoint's port (`serve --otlp` prints its URL on the second line).
    pub(crate) fn otlp_port(&self) -> u16 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(line) = self.printed.lock().unwrap().get(1) {
                return line
                    .strip_prefix("http://127.0.0.1:")
                    .and_then(|r| r.strip_suffix("/v1/logs"))
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| panic!("the second line is the OTLP URL, got {line:?}"));
            }
            assert!(Instant::now() < deadline, "no OTLP URL printed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(crate) fn stdin(&mut self) -> &mut ChildStdin {
        self.child
            .stdin
            .as_mut()
            .expect("started with a piped stdin")
    }

    /// Closes the server's stdin.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory, in bytes (`VmRSS` of /proc).
    pub(crate) fn rss(&self) -> u64 {
        self.proc_status("VmRSS:")
    }

    /// The most resident memory the server ever had (its high-water mark).
    pub(crate) fn peak_rss(&self) -> u64 {
        self.proc_status("VmHWM:")
    }

    fn proc_status(&self, field: &str) -> u64 {
        proc_status(self.pid(), field)
    }

    /// Sends a signal and waits (60 s at most) for the exit code.
    pub(crate) fn stop(&mut self, signal: i32) -> Option<i32> {
        // SAFETY: kill sends a signal to the child this harness started and still owns.
        assert_eq!(unsafe { libc::kill(self.pid() as i32, signal) }, 0);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A raw request (its text as given, CRLFs and all): the whole response as text.
    pub(crate) fn raw(&self, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the server");
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// `GET /metrics`, parsed as the Prometheus text format.
    pub(crate) fn metrics(&self) -> prometheus_parse::Scrape {
        let r = self.get("/metrics");
        assert_eq!(r.status, 200);
        assert!(
            r.header("content-type")
                .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")),
            "{:?}",
            r.headers
        );
        let text = String::from_utf8(r.body).unwrap();
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .expect("Prometheus text")
    }

    /// Scrapes `/metrics` until `ok` holds of it, else fails saying `what`.
    pub(crate) fn wait_metrics(
        &self,
        what: &str,
        ok: impl Fn(&prometheus_parse::Scrape) -> bool,
    ) -> prometheus_parse::Scrape {
        self.poll_until(what, Self::metrics, ok, |_| String::new())
    }

    /// Reads with `read` every 25 ms until `ok` holds of what it read, else fails saying
    /// `what`, the last reading as `shown` gives it, and the server's stderr.
    fn poll_until<T>(
        &self,
        what: &str,
        read: impl Fn(&Self) -> T,
        ok: impl Fn(&T) -> bool,
        shown: impl Fn(&T) -> String,
    ) -> T {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let v = read(self);
            if ok(&v) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "waited {TIMEOUT:?} for {what}; {}stderr: {}",
                shown(&v),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Whether the process still runs.
    pub(crate) fn alive(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    fn connect(&self, path: &str, headers: &[(&str, &str)]) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the server");
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", self.port);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        s
    }

    /// A GET: status, headers (names lowercased) and the whole body.
    pub(crate) fn get(&self, path: &str) -> Response {
        let s = self.connect(path, &[("Connection", "close")]);
        response(s, false)
    }

    /// `GET /state` as JSON.
    pub(crate) fn state(&self) -> Value {
        let r = self.get("/state");
        assert_eq!(r.status, 200);
        serde_json::from_slice(&r.body).expect("/state is JSON")
    }

    /// Polls `/state` until `ok` holds of it, else fails saying `what` and the last state.
    /// The server's stderr once `ok` holds of it (a reader thread collects it: what the
    /// server wrote reaches it a moment later).
    pub(crate) fn wait_stderr(&self, what: &str, ok: impl Fn(&String) -> bool) -> String {
        self.poll_until(what, Self::stderr, ok, |_| String::new())
    }

    pub(crate) fn wait_state(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        self.poll_until(what, Self::state, ok, |s| format!("state: {s:#}\n"))
    }

    /// An SSE connection to `path` (`/events…`), with a `Last-Event-ID` when given.
    pub(crate) fn events_at(&self, path: &str, last: Option<&str>) -> Events {
        let mut headers = vec![("Accept", "text/event-stream")];
        if let Some(id) = last {
            headers.push(("Last-Event-ID", id));
        }
        let mut r = BufReader::new(self.connect(path, &headers));
        let (status, headers) = head(&mut r);
        assert_eq!(status, 200, "/events answers 200");
        let kind = headers.iter().find(|(k, _)| k == "content-type");
        assert_eq!(kind.map(|(_, v)| v.as_str()), Some("text/event-stream"));
        let body: Box<dyn Read + Send> = if headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
        {
            Box::new(Chunked::new(r))
        } else {
            Box::new(r)
        };
        Events {
            lines: BufReader::new(body),
        }
    }

    pub(crate) fn events(&self, last: Option<&str>) -> Events {
        self.events_at("/events", last)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The status line and headers of a response.
fn head(r: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).expect("a status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line, got {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("a header line");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    (status, headers)
}

/// A POST to `127.0.0.1:port` with the given headers and body: status, headers, whole body.
pub(crate) fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // A refusal may come before the whole body is sent: a broken pipe is then no failure.
    let _ = s.write_all(body);
    response(s, true)
}

/// The response read from `s`: status, headers (names lowercased) and the whole body, chunked
/// or not. `cut_short`: the server may close while the request is still being sent (a
/// refusal), so a plain body ending in a reset is what it sent, no failure.
fn response(s: TcpStream, cut_short: bool) -> Response {
    let mut r = BufReader::new(s);
    let (status, headers) = head(&mut r);
    let mut body = Vec::new();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
    {
        Chunked::new(r).read_to_end(&mut body).unwrap();
    } else {
        let read = r.read_to_end(&mut body);
        if !cut_short {
            read.unwrap();
        }
    }
    Response {
        status,
        headers,
        body,
    }
}

/// A chunked HTTP/1.1 body, unwrapped.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            self.inner.read_line(&mut size)?;
            if size.trim().is_empty() {
                // The CRLF after the previous chunk.
                size.clear();
                self.inner.read_line(&mut size)?;
            }
            let hex = size.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(hex, 16).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("chunk size {size:?}"),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let n = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..n])?;
        self.left -= n;
        Ok(n)
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub id: Option<String>,
    pub kind: String,
    pub data: String,
    pub retry: Option<u64>,
}

impl SseEvent {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is JSON ({e}): {}", self.data))
    }

    /// The event's number (the part of its id before the run).
    pub(crate) fn n(&self) -> u64 {
        let id = self.id.as_deref().expect("a numbered event");
        id.split_once('-')
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("an id <n>-<run>, got {id}"))
    }
}

/// An open `/events` stream.
pub(crate) struct Events {
    lines: BufReader<Box<dyn Read + Send>>,
}

impl Events {
    /// The next event (comments skipped); fails after [`TIMEOUT`] without one, keep-alive
    /// comments or not.
    pub(crate) fn next(&mut self) -> SseEvent {
        let deadline = Instant::now() + TIMEOUT;
        let mut e = SseEvent {
            id: None,
            kind: "message".to_owned(),
            data: String::new(),
            retry: None,
        };
        let mut any = false;
        loop {
            let mut line = String::new();
            let n = self
                .lines
                .read_line(&mut line)
                .unwrap_or_else(|err| panic!("reading /events: {err}"));
            assert!(n > 0, "/events ended");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if any {
                    return e;
                }
                continue;
            }
            if line.starts_with(':') {
                assert!(
                    Instant::now() < deadline,
                    "no event on /events for {TIMEOUT:?}"
                );
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            any = true;
            match field {
                "id" => e.id = Some(value.to_owned()),
                "event" => e.kind = value.to_owned(),
                "data" => {
                    if !e.data.is_empty() {
                        e.data.push('\n');
                    }
                    e.data.push_str(value);
                }
                "retry" => e.retry = value.parse().ok(),
                _ => {}
            }
        }
    }

    /// The next event of `kind`, those of other kinds skipped.
    pub(crate) fn next_of(&mut self, kind: &str) -> SseEvent {
        loop {
            let e = self.next();
            if e.kind == kind {
                return e;
            }
        }
    }

    /// The board's events (`board` and `delta`) until one carries a row of session `id` that
    /// `ok` holds of: that row, and the event.
    pub(crate) fn next_row(&mut self, id: &str, ok: impl Fn(&Value) -> bool) -> (Value, SseEvent) {
        loop {
            let e = self.next();
            if let Some(row) = row_of(&e.json()["rows"], id).filter(|r| ok(r)) {
                return (row.clone(), e);
            }
        }
    }

    /// The board's events until one carries a status that `ok` holds of: that status.
    pub(crate) fn next_status(&mut self, ok: impl Fn(&Value) -> bool) -> Value {
        loop {
            let e = self.next();
            let v = e.json();
            if !v["status"].is_null() && ok(&v["status"]) {
                return v["status"].clone();
            }
        }
    }
}

/// The row of session `id` among `rows` (a board's, a delta's, `/state`'s `sessions`).
pub(crate) fn row_of<'a>(rows: &'a Value, id: &str) -> Option<&'a Value> {
    rows.as_array()?.iter().find(|r| r["session"] == id)
}

/// A `kB` figure of /proc/PID/status (`VmRSS:`, `VmHWM:`), in bytes.
pub(crate) fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/PID/status"));
    kb * 1024
}

/// A directory of one test's own under the target's tmp, removed with everything in it when
/// dropped (a failed test's stays until the next run of its name).
pub(crate) struct Scratch(std::path::PathBuf);

/// A fresh [`Scratch`] named for `name`, unique in this run.
pub(crate) fn scratch(name: &str) -> Scratch {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

// Not every test crate that includes the harness appends to a log.
#[allow(unused_imports)]
pub(crate) use agent_fold_testkit::append;

/// An agent-fold frame of `session` as a log line: `type` `kind`, `extra`'s members added.
pub(crate) fn frame(session: &str, seq: u64, kind: &str, extra: Value) -> String {
    let mut v = json!({"type": kind, "session_id": session, "id": format!("{session}-{seq}"),
                       "seq": seq, "timestamp": format!("2026-11-29T10:00:{seq:02}Z")});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string() + "\n"
}

/// The module's last pressure record over `records` in one invocation, with `params`.
pub(crate) fn last_pressure(records: &[Rec], params: &[(&str, &str)]) -> Value {
    let mut config = agent_fold_core::Config::from_params(params.iter().copied()).unwrap();
    config.view = View::Pressure;
    let mut m = Module::new(&Build::Native, &config, None).unwrap();
    let out = m.process(records, 0).unwrap();
    serde_json::from_slice(&out.last().expect("a pressure record").value).unwrap()
}

/// The real Claude Code session's directory (its transcript is the `.jsonl` beside it), when
/// ../shared is there (under CI=true its absence fails the test: [`crate::common::shared`]).
pub(crate) fn real_session() -> Option<std::path::PathBuf> {
    crate::common::real_data("claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")?;
    crate::common::real_data("claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04")
}

/// The OTLP receiver's counters under `prefix` (`agent_fold_collect`, `agent_fold_serve`): `written`
/// events written to the sink, `answered` requests answered 200.
pub(crate) fn assert_otlp_counted(
    scrape: &prometheus_parse::Scrape,
    prefix: &str,
    written: usize,
    answered: usize,
) {
    let events = format!("{prefix}_otlp_events_written_total");
    assert_eq!(sample(scrape, &events, &[]), written as f64, "{events}");
    let requests = format!("{prefix}_otlp_requests_total");
    assert_eq!(
        sample(scrape, &requests, &[("status", "200")]),
        answered as f64,
        "{requests}"
    );
}

/// A sample's value in a scrape: the first of `name` whose labels include `labels`.
pub(crate) fn sample(
    scrape: &prometheus_parse::Scrape,
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => panic!("{name}: not a counter or gauge"),
        })
        .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
}

pub(crate) use agent_fold_testkit::protobuf::empty_records;
