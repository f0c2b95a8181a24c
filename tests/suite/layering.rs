//! The core and the host each import one way (README, "For contributors"): among a
//! crate's top-level modules, no module imports one that imports it back, directly or through
//! others. Read from the sources: every `crate::name` path before a file's first `#[cfg(test)]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source dir") {
        let path = entry.expect("a dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names `crate::…` paths in `code` start with: `crate::a::b`, `crate::{a, b::c}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for part in inner.split(',') {
                names.insert(ident(part.trim()));
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Each top-level module of the crate at `src` and the top-level modules it imports.
fn graph(src: &Path, roots: &[&str]) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::new();
    for path in files {
        let rel = path.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a component");
        let top = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if roots.contains(&top.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut to = crate_paths(code);
        to.remove(&top);
        g.entry(top).or_default().extend(to);
    }
    g
}

/// A cycle through `g`, if there is one, as the modules on it.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut done, &mut Vec::new()))
}

fn check(crate_src: &str, roots: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_src);
    let g = graph(&src, roots);
    assert!(g.len() >= 5, "{crate_src}: too few modules read: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("{crate_src}: modules import in a circle: {}", c.join(" → "));
    }
}

#[test]
fn the_core_imports_one_way() {
    check("core/src", &["lib"]);
}

#[test]
fn the_host_imports_one_way() {
    check("src", &["lib", "main", "bin"]);
}

#[test]
fn a_circle_is_found() {
    let mut g = Graph::new();
    for (a, b) in [
        ("frame", "json"),
        ("pressure", "frame"),
        ("json", "pressure"),
    ] {
        g.entry(a.to_string()).or_default().insert(b.to_string());
    }
    g.entry("config".into()).or_default();
    let c = cycle(&g).expect("a cycle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    assert_eq!(
        crate_paths("use crate::{a, b::c};\nlet x = crate::d::e();"),
        ["a", "b", "d"].map(String::from).into()
    );
}
