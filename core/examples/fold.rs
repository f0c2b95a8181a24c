//! The folded frames view of a log through the native library — the code the SmartModule is
//! built from — one record a line on stdout:
//!
//! ```text
//! cargo run -p agent-fold-core --example fold -- LOG [KEY=VALUE …]
//! ```
//!
//! It builds in about a minute on a fresh clone, where Fluvio's engine takes several:
//! `scripts/demo.sh` prints its frames first, then holds the `.wasm`'s frames in the engine to
//! the same bytes. `agent-fold run --native` is the tool that does this with every option.

use std::io::Write;

use agent_fold_core::{Emit, Processor, RecordIn};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: fold LOG [KEY=VALUE …]")?;
    let params = args
        .map(|a| match a.split_once('=') {
            Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
            None => Err(format!("{a:?}: a param is KEY=VALUE")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut module = Processor::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let text = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let records: Vec<RecordIn> = (0..lines.len())
        .map(|i| RecordIn::new(None, lines[i]).at(i as i64))
        .collect();
    let mut out = std::io::stdout().lock();
    for emit in module.process(&records)? {
        let value = match &emit {
            Emit::Pass(i) => lines[*i],
            Emit::Replace(_, v) | Emit::New { value: v, .. } => v,
        };
        out.write_all(value)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
