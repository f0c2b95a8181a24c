//! Small helpers the host's tests share.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

/// The string member `field` of each element of the array `list`.
pub fn strings_of<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("expected an array, got {list}"));
    items
        .iter()
        .map(|x| {
            x[field]
                .as_str()
                .unwrap_or_else(|| panic!("no string `{field}` in {x}"))
        })
        .collect()
}

/// Appends `bytes` to the file at `path`, creating it, and flushes them.
pub fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    f.write_all(bytes).unwrap();
    f.flush().unwrap();
}
