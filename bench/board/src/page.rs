//! The board as a person sees it, in headless Chromium: its own measures (`window.agentFold`),
//! a scroll from the first row to the last, a page opened late.

use agent_fold_testkit::cdp::{Browser, find_chromium};
use anyhow::{Result, anyhow};
use serde_json::Value;

pub(crate) struct BrowserPage(Browser);

/// What a page opened late drew of a session's chart.
pub(crate) struct Late {
    pub session: String,
    pub drawn: u64,
    pub points: u64,
}

fn launch() -> Result<Browser> {
    let exe = find_chromium().map_err(|e| anyhow!(e))?;
    Browser::launch(&exe)
}

impl BrowserPage {
    /// The board, once its first message came.
    pub(crate) fn open(url: &str) -> Result<BrowserPage> {
        let mut b = launch()?;
        b.viewport(1440, 900, 1.0)?;
        b.goto(url)?;
        b.wait_for("window.agentFold && agentFold.events > 0")?;
        Ok(BrowserPage(b))
    }

    /// A fresh page's first render of the whole board: ms from navigation start.
    pub(crate) fn first_render(url: &str) -> Result<f64> {
        let mut p = BrowserPage::open(url)?;
        p.0.wait_for("agentFold.firstRender != null")?;
        p.0.eval("agentFold.firstRender")?
            .as_f64()
            .ok_or_else(|| anyhow!("no first render"))
    }

    /// Every frame's length (ms) of a scroll from the first row to the last, 2,400 px a frame.
    pub(crate) fn scroll_frames(&mut self) -> Result<Vec<f64>> {
        let v = self.0.eval(
            "(async () => { const b = document.getElementById('board'); b.scrollTop = 0; \
             const frame = () => new Promise((r) => requestAnimationFrame(r)); await frame(); \
             const out = []; let last = performance.now(); \
             while (b.scrollTop + b.clientHeight < b.scrollHeight - 2) { \
               b.scrollTop += 2400; await frame(); const t = performance.now(); out.push(t - last); last = t; } \
             b.scrollTop = 0; await frame(); return out; })()",
        )?;
        Ok(numbers(&v))
    }

    pub(crate) fn reset_latency(&mut self) -> Result<()> {
        self.0.eval("agentFold.latency.length = 0")?;
        Ok(())
    }

    /// The page's samples of record read → row shown, ms.
    pub(crate) fn latency(&mut self) -> Result<Vec<f64>> {
        Ok(numbers(&self.0.eval("agentFold.latency")?))
    }

    pub(crate) fn rows(&mut self) -> Result<u64> {
        Ok(self.0.eval("agentFold.rows")?.as_u64().unwrap_or(0))
    }

    /// A page opened now on the board's top session: its chart drawn, against the server's
    /// history of it.
    pub(crate) fn late_chart(url: &str) -> Result<Late> {
        let mut p = BrowserPage::open(url)?;
        let top = p.0.eval(
            "(async () => (await (await fetch('/api/sessions?limit=1')).json()).sessions[0].session)()",
        )?;
        let id = top
            .as_str()
            .ok_or_else(|| anyhow!("no session"))?
            .to_owned();
        let points = p.0.eval(&format!(
            "(async () => (await (await fetch('/api/sessions/' + encodeURIComponent({id:?}))).json()).history.points.length)()"
        ))?;
        p.0.goto(&format!("{url}#session={}", urlencode(&id)))?;
        p.0.wait_for("!!document.querySelector('#detail svg.chart') && +document.querySelector('#detail svg.chart').dataset.points > 0")?;
        let drawn =
            p.0.eval("+document.querySelector('#detail svg.chart').dataset.points")?;
        Ok(Late {
            session: id,
            drawn: drawn.as_u64().unwrap_or(0),
            points: points.as_u64().unwrap_or(0),
        })
    }
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
