//! The core and the host each import one way (README, "For contributors"): among a
//! crate's top-level modules, no module imports one that imports it back, directly or through
//! others; and among its files, no file imports one that imports it back — a module's own
//! `mod`s and the names it hands on from its children (`pub use child::X`) being its face, not
//! imports. Read from the sources, before a file's first `#[cfg(test)]`: every `crate::name`
//! path for the first; for the second every `use` tree and inline `crate::`/`super::` path,
//! each resolved to the deepest module file it names.

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

/// A file's module path: `serve/board/mod.rs` is `serve::board`, `lib.rs` the root.
fn module_of(src: &Path, path: &Path) -> Vec<String> {
    let rel = path
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut m: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if m.last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        m.pop();
    }
    m
}

/// The paths a file's code imports: each `use` tree flattened (`a::{b, c::d}` is `a::b` and
/// `a::c::d`), and every `crate::…` and `super::…` path written inline.
fn use_paths(code: &str) -> Vec<Vec<String>> {
    fn flatten(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        let Some(open) = tree.find('{') else {
            let mut p = prefix.to_vec();
            p.extend(
                tree.split("::")
                    .map(|s| s.split(" as ").next().unwrap_or("").trim().to_string())
                    .filter(|s| !s.is_empty()),
            );
            out.push(p);
            return;
        };
        let mut p = prefix.to_vec();
        p.extend(
            tree[..open]
                .split("::")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    flatten(&p, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        flatten(&p, &inner[start..], out);
    }
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("use ") {
        let boundary = i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let tail = &rest[i + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if boundary {
            flatten(&[], &tail[..end], &mut out);
        }
        rest = &tail[if boundary { end } else { 0 }..];
    }
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            // `super::{…}` opens a use tree, read above.
            if segments.len() > 1 {
                out.push(segments);
            }
        }
    }
    out
}

/// The module file `path` (written in module `from`) names: the deepest of its prefixes that
/// is one; `None` for a path outside the crate (`std::…`, another crate).
fn resolve(
    from: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let (mut base, mut rest) = (from.to_vec(), path);
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &rest[1..],
        Some(first) => {
            let mut child = from.to_vec();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    let mut best = modules.contains(&base).then(|| base.clone());
    for name in rest {
        base.push(name.clone());
        if !modules.contains(&base) {
            break;
        }
        best = Some(base.clone());
    }
    best
}

/// Each file's module and the module files it imports (the root and its own descendants left
/// out: a module's face).
fn file_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut g = Graph::new();
    for path in &files {
        let from = module_of(src, path);
        if from.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let to = g.entry(from.join("::")).or_default();
        for p in use_paths(code) {
            if let Some(m) = resolve(&from, &p, &modules)
                && !m.is_empty()
                && !m.starts_with(&from)
            {
                to.insert(m.join("::"));
            }
        }
    }
    g
}

fn check_files(crate_src: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_src);
    let g = file_graph(&src);
    assert!(g.len() >= 5, "{crate_src}: too few files read: {g:?}");
    let edges: usize = g.values().map(BTreeSet::len).sum();
    assert!(edges >= g.len(), "{crate_src}: too few imports read: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("{crate_src}: files import in a circle: {}", c.join(" → "));
    }
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    for src in [
        "core/src",
        "src",
        "smartmodule/src",
        "testkit/src",
        "lab/src",
    ] {
        check_files(src);
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
    let paths = use_paths("use super::{x::{y, z as w}, v};\nfn f() { crate::a::b(); }");
    let shown: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        shown,
        ["super::x::y", "super::x::z", "super::v", "crate::a::b"]
    );
    let modules: BTreeSet<Vec<String>> = [vec![], vec!["a".into()], vec!["a".into(), "b".into()]]
        .into_iter()
        .collect();
    let from = ["a".to_string(), "b".to_string()];
    let up = resolve(&from, &["super".into(), "f".into()], &modules);
    assert_eq!(up, Some(vec!["a".to_string()]));
    assert_eq!(resolve(&from, &["std".into(), "fs".into()], &modules), None);
}
