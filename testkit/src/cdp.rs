//! A small Chrome DevTools Protocol client: one headless Chromium for the whole suite, driven
//! over its DevTools pipe (`--remote-debugging-pipe`: JSON messages ended by a NUL byte, commands
//! on its fd 3, replies and events on its fd 4), a tab of its own for each test. One reader
//! thread hands each reply to the command that waits for it; events are dropped.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

/// The flags Chromium is known to run with here (.library/env/machines/rust.md): without the
/// background-networking ones it dials Google's hosts through a closed network at every start.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1024,768",
];

/// How long one command (or a launch) may take before the test fails instead of hanging.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The browser to drive: $AGENT_FOLD_CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH.
/// `Err` carries the reason to print when there is none. A set but wrong variable is a
/// misconfiguration, not a missing browser, so it panics rather than skipping.
pub fn find_chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("AGENT_FOLD_CHROMIUM") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "AGENT_FOLD_CHROMIUM={} is not a file",
            path.display()
        );
        return Ok(path);
    }
    let usr = Path::new("/usr/bin/chromium");
    if usr.is_file() {
        return Ok(usr.to_path_buf());
    }
    on_path("chromium").ok_or_else(|| {
        "no Chromium: set AGENT_FOLD_CHROMIUM, or install Debian's chromium (/usr/bin/chromium)"
            .to_string()
    })
}

/// `program` in a directory of `PATH`, if there is one.
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The commands waiting for their reply, by id; `None` once the browser is gone.
type Waiting = Arc<Mutex<Option<HashMap<u64, mpsc::Sender<Value>>>>>;

/// The one headless Chromium of the suite: started by the first test that asks for a page,
/// shared by every later one (each in a browser context of its own), taken down when the test
/// binary exits.
struct Process {
    /// Its fd 3: where commands go, one writer at a time.
    commands: Mutex<File>,
    waiting: Waiting,
    next_id: AtomicU64,
    /// The tail of its stderr, to explain a browser that went away.
    tail: Arc<Mutex<Vec<String>>>,
}

/// The process id and profile directory to clean up at exit.
static RUNNING: Mutex<Option<(u32, PathBuf)>> = Mutex::new(None);

extern "C" fn stop_chromium() {
    if let Ok(mut running) = RUNNING.lock()
        && let Some((pid, profile)) = running.take()
    {
        // SAFETY: kill(2) on a process id this binary spawned; no memory is touched.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(profile);
    }
}

/// A pipe, both ends closed on exec (the child gets its end by `dup2`, which clears the flag)
/// and numbered 10 or above, so that putting the child's ends at 3 and 4 overwrites neither.
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe2: {}", std::io::Error::last_os_error());
    }
    let high = |fd: i32| -> Result<OwnedFd> {
        // SAFETY: `fd` was just opened here; F_DUPFD_CLOEXEC returns a new descriptor that
        // nothing else owns, and the old one is closed once, here.
        unsafe {
            let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            libc::close(fd);
            if moved < 0 {
                bail!("fcntl: {}", std::io::Error::last_os_error());
            }
            Ok(OwnedFd::from_raw_fd(moved))
        }
    };
    Ok((high(fds[0])?, high(fds[1])?))
}

impl Process {
    /// The shared process, started on first use; `Err` when it cannot start (every later
    /// caller gets the same answer rather than a second launch).
    fn shared(exe: &Path) -> Result<&'static Process> {
        static SHARED: OnceLock<Result<Process, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| Process::start(exe).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow!("{e}"))
    }

    fn start(exe: &Path) -> Result<Process> {
        let profile =
            std::env::temp_dir().join(format!("agent-fold-chromium-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile)?;
        let (commands_in, commands_out) = pipe()?;
        let (replies_in, replies_out) = pipe()?;
        let (child_in, child_out) = (commands_in.as_raw_fd(), replies_out.as_raw_fd());
        let mut cmd = Command::new(exe);
        cmd.args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: between fork and exec only dup2, async-signal-safe, on descriptors this
        // process holds open until the spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(child_in, 3) < 0 || libc::dup2(child_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        drop((commands_in, replies_out));
        *RUNNING.lock().unwrap() = Some((child.id(), profile));
        // SAFETY: registers a plain `extern "C"` function; it runs once, at exit.
        unsafe {
            libc::atexit(stop_chromium);
        }

        // Its stderr is drained to the end so that its chatter never fills the pipe and
        // stalls it; the tail explains a browser that did not answer.
        let stderr = child.stderr.take().expect("stderr is piped");
        let tail = Arc::new(Mutex::new(Vec::<String>::new()));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut tail = keep.lock().unwrap();
                tail.push(line);
                if tail.len() > 20 {
                    tail.remove(0);
                }
            }
        });
        let waiting: Waiting = Arc::new(Mutex::new(Some(HashMap::new())));
        let routes = Arc::clone(&waiting);
        std::thread::spawn(move || {
            let mut replies = BufReader::new(File::from(replies_in));
            let mut message = Vec::new();
            while replies.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                message.pop_if(|b| *b == 0);
                if let Ok(reply) = serde_json::from_slice::<Value>(&message)
                    && let Some(id) = reply.get("id").and_then(Value::as_u64)
                    && let Some(to) = routes.lock().unwrap().as_mut().and_then(|w| w.remove(&id))
                {
                    let _ = to.send(reply);
                }
                message.clear();
            }
            // The browser is gone: every command waiting learns it at once.
            routes.lock().unwrap().take();
        });
        let process = Process {
            commands: Mutex::new(File::from(commands_out)),
            waiting,
            next_id: AtomicU64::new(1),
            tail,
        };
        process
            .send("Browser.getVersion", json!({}), None)
            .context("Chromium does not answer on its DevTools pipe")?;
        Ok(process)
    }

    /// Sends a command (to a page's session, or to the browser) and waits for its reply.
    fn send(&self, method: &str, params: Value, session: Option<&str>) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = mpsc::channel();
        match self.waiting.lock().unwrap().as_mut() {
            Some(w) => w.insert(id, tx),
            None => bail!(
                "{method}: Chromium is gone; its stderr ended:\n{}",
                self.tail()
            ),
        };
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.commands
            .lock()
            .unwrap()
            .write_all(&bytes)
            .with_context(|| format!("{method}: writing to Chromium's DevTools pipe"))?;
        let reply = rx.recv_timeout(TIMEOUT).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => anyhow!("{method}: no reply within {TIMEOUT:?}"),
            mpsc::RecvTimeoutError::Disconnected => {
                anyhow!(
                    "{method}: Chromium went away; its stderr ended:\n{}",
                    self.tail()
                )
            }
        })?;
        if let Some(err) = reply.get("error") {
            bail!("{method}: {err}");
        }
        Ok(reply["result"].clone())
    }

    fn tail(&self) -> String {
        self.tail.lock().unwrap().join("\n")
    }
}

/// One test's page: a tab in a browser context of its own (cookies, storage and cache apart
/// from every other test's) of the shared Chromium, over a DevTools connection of its own, so
/// tests running at once never wait on each other's commands.
pub struct Browser {
    process: &'static Process,
    session: String,
    context: Value,
}

impl Browser {
    pub fn launch(exe: &Path) -> Result<Browser> {
        let process = Process::shared(exe)?;
        let context = process.send("Target.createBrowserContext", json!({}), None)?;
        let mut browser = Browser {
            process,
            session: String::new(),
            context: context["browserContextId"].clone(),
        };
        let target = browser.browser_call(
            "Target.createTarget",
            json!({"url": "about:blank", "browserContextId": browser.context,
                   "width": 1024, "height": 768}),
        )?;
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        )?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("no sessionId in {attached}"))?
            .to_string();
        // Tabs of one browser share its focus: each page is told it has it, as a page alone in
        // a window would (focus rings, :focus-visible and key events read it).
        browser.call(
            "Emulation.setFocusEmulationEnabled",
            json!({"enabled": true}),
        )?;
        Ok(browser)
    }

    /// A command to the browser itself (Target.*, Browser.*).
    pub fn browser_call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.process.send(method, params, None)
    }

    /// A command to the page (Page.*, Runtime.*, Input.*, ...).
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.process.send(method, params, Some(&self.session))
    }

    /// Navigates and waits for the load event to have run.
    pub fn goto(&mut self, url: &str) -> Result<()> {
        let nav = self.call("Page.navigate", json!({"url": url}))?;
        if let Some(err) = nav.get("errorText") {
            bail!("navigating to {url}: {err}");
        }
        self.wait_for(&format!(
            "location.href === {} && document.readyState === 'complete'",
            json!(url)
        ))
    }

    /// Evaluates `expr` in the page (promises awaited) and returns its JSON value; a thrown
    /// exception is an error carrying its description.
    pub fn eval(&mut self, expr: &str) -> Result<Value> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            let what = ex["exception"]["description"]
                .as_str()
                .or(ex["text"].as_str())
                .unwrap_or("exception");
            bail!("evaluating {expr}: {what}");
        }
        Ok(r["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// Polls `expr` until it is true.
    pub fn wait_for(&mut self, expr: &str) -> Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval(expr)? != json!(true) {
            if Instant::now() > deadline {
                bail!("still false after {TIMEOUT:?}: {expr}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// A real left click (move, press, release) at viewport coordinates.
    pub fn click(&mut self, x: f64, y: f64) -> Result<()> {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        )?;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1}),
            )?;
        }
        Ok(())
    }

    /// A real key press (down, up) of one of the keys the tests use.
    pub fn press(&mut self, key: &str) -> Result<()> {
        let (code, vk, text) = match key {
            "Enter" => ("Enter", 13, "\r"),
            " " => ("Space", 32, " "),
            "Escape" => ("Escape", 27, ""),
            "Tab" => ("Tab", 9, ""),
            other => bail!("no key table entry for {other:?}"),
        };
        // A key that types text goes down as keyDown (which also makes keypress); others raw.
        let down = if text.is_empty() {
            json!({"type": "rawKeyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk})
        } else {
            json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "text": text})
        };
        self.call("Input.dispatchKeyEvent", down)?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        )?;
        Ok(())
    }

    /// The viewport's size and pixel ratio (a 14px ring is easier to see at 2x).
    pub fn viewport(&mut self, width: u32, height: u32, scale: f64) -> Result<()> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": false}),
        )?;
        Ok(())
    }

    /// A PNG of the viewport.
    pub fn screenshot(&mut self) -> Result<Vec<u8>> {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}))?;
        let data = shot["data"]
            .as_str()
            .ok_or_else(|| anyhow!("no screenshot data"))?;
        base64(data)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The context goes with its tab; the shared browser stays for the next test.
        let context = self.context.clone();
        let _ = self.browser_call(
            "Target.disposeBrowserContext",
            json!({"browserContextId": context}),
        );
    }
}

/// Standard base64 (with padding), as CDP sends binary data.
fn base64(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for b in text.bytes().filter(|&b| b != b'=') {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => bail!("not base64: byte {b}"),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_decodes() {
        assert_eq!(super::base64("aGk=").unwrap(), b"hi");
        assert_eq!(super::base64("iVBORw0KGgo=").unwrap(), b"\x89PNG\r\n\x1a\n");
    }
}
