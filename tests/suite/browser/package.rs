//! `ui/` as the package `@agent-fold/context-meter`: what `npm pack` puts in it, the packed
//! package imported by name in Node (no DOM) and in a page, its classic build (generated from
//! the module, loaded from file:// by the demo), its manifest against the element, its types.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{PACKED, UI, chromium, common, js, page, s, server, shot};

/// `program` found on PATH, else `None` after [`common::skip`].
fn tool(program: &str) -> Option<PathBuf> {
    let found = agent_fold_testkit::cdp::on_path(program);
    if found.is_none() {
        common::skip(&format!(
            "no {program} on PATH (Node 20 and npm run the package's tests)"
        ));
    }
    found
}

/// Runs a command to its end; a failure to start or a non-zero exit fails the test.
fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `ui/context-meter.classic.js` made from the module (once per test run), as `npm run build`
/// makes it.
fn classic_built() -> Option<()> {
    static BUILT: OnceLock<()> = OnceLock::new();
    let node = tool("node")?;
    BUILT.get_or_init(|| {
        run(Command::new(node).arg(format!("{UI}/build-classic.mjs")));
    });
    Some(())
}

/// The package as `npm pack` makes it, unpacked where Node and the test server find it by name:
/// `<dir>/node_modules/@agent-fold/context-meter/`, `<dir>` served at `/pkg/`.
fn packed() -> Option<&'static Path> {
    let npm = tool("npm")?;
    let tar = tool("tar")?;
    Some(PACKED.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("context-meter-pack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let scope = dir.join("node_modules/@agent-fold");
        std::fs::create_dir_all(&scope).unwrap();
        let out = run(Command::new(&npm)
            .args(["pack", "--json", "--pack-destination"])
            .arg(&dir)
            .current_dir(UI));
        let listing: Value = serde_json::from_slice(&out.stdout).expect("npm pack --json");
        let tarball = dir.join(s(&listing[0]["filename"]));
        run(Command::new(&tar)
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&scope));
        std::fs::rename(scope.join("package"), scope.join("context-meter")).unwrap();
        dir
    }))
}

#[test]
fn npm_pack_lists_the_module_the_classic_build_the_types_and_the_manifest() {
    let Some(npm) = tool("npm") else { return };
    let out = run(Command::new(npm)
        .args(["pack", "--dry-run", "--json"])
        .current_dir(UI));
    let listing: Value = serde_json::from_slice(&out.stdout).expect("npm pack --json");
    let files: BTreeSet<&str> = listing[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| s(&f["path"]))
        .collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "context-meter.classic.js",
            "context-meter.d.ts",
            "context-meter.js",
            "custom-elements.json",
            "package.json",
        ])
    );
    assert_eq!(listing[0]["name"], "@agent-fold/context-meter");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.to_lowercase().contains("warn"),
        "npm pack is clean: {stderr}"
    );
}

#[test]
fn node_imports_the_packed_package_without_a_dom() {
    let Some(dir) = packed() else { return };
    let Some(node) = tool("node") else { return };
    let check = dir.join("check.mjs");
    std::fs::write(
        &check,
        r#"import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
const m = await import('@agent-fold/context-meter');
const out = { exports: Object.keys(m), kind: typeof m.ContextMeter,
  dom: [typeof document, typeof customElements, typeof HTMLElement], locales: m.ContextMeter.locales };
m.ContextMeter.addLocale('fr', { 'context.tools': 'Outils' });
out.added = m.ContextMeter.locales;
try { m.ContextMeter.addLocale('fr', { 'context.aria': 'sans chiffre' }); } catch (e) { out.refused = e.message; }
const path = (spec) => fileURLToPath(import.meta.resolve(spec));
out.manifest = JSON.parse(readFileSync(path('@agent-fold/context-meter/custom-elements.json'), 'utf8'))
  .modules[0].declarations[0].tagName;
// The classic build as a plain script where there is no DOM: it defines nothing and throws nothing.
vm.runInNewContext(readFileSync(path('@agent-fold/context-meter/classic'), 'utf8'), {});
out.classic = 'ran';
console.log(JSON.stringify(out));
"#,
    )
    .unwrap();
    let out = run(Command::new(node).arg(&check).current_dir(dir));
    let got: Value = serde_json::from_slice(&out.stdout).expect("the check's JSON");
    assert_eq!(
        got,
        json!({
            "exports": ["ContextMeter"], "kind": "function",
            "dom": ["undefined", "undefined", "undefined"],
            "locales": ["en", "zh-CN", "zh-TW"], "added": ["en", "zh-CN", "zh-TW", "fr"],
            "refused": "ContextMeter.addLocale(\"fr\", …): context.aria must keep {percent} (en: \"{percent} of context used\")",
            "manifest": "context-meter", "classic": "ran"
        })
    );
}

#[test]
fn a_page_imports_the_packed_package_by_name_and_its_classic_build() {
    let Some(dir) = packed() else { return };
    let Some(mut b) = chromium() else { return };
    let root = "/pkg/node_modules/@agent-fold/context-meter";
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("node_modules/@agent-fold/context-meter/package.json")).unwrap(),
    )
    .unwrap();
    let entry = s(&manifest["exports"]["."]["default"]).trim_start_matches("./");
    let classic = s(&manifest["exports"]["./classic"]).trim_start_matches("./");
    let feed = "<context-meter id=m lang=en></context-meter><script>window.result = () => { \
                const m = document.getElementById('m'); m.update({type: 'context/pressure', \
                session: 's', seq: 1, contextOccupancy: 0.3}); return [m.constructor.name, \
                m.shadowRoot.querySelector('.ring').getAttribute('aria-label')]; };</script>";
    std::fs::write(
        dir.join("module.html"),
        format!(
            "<!doctype html><script type=importmap>{{\"imports\": {{\"@agent-fold/context-meter\": \
             \"{root}/{entry}\"}}}}</script><script type=module>import {{ ContextMeter }} from \
             '@agent-fold/context-meter'; window.imported = ContextMeter;</script>{feed}"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("classic.html"),
        format!("<!doctype html><script src=\"{root}/{classic}\"></script>{feed}"),
    )
    .unwrap();
    let port = server();
    for page in ["module", "classic"] {
        b.goto(&format!("http://127.0.0.1:{port}/pkg/{page}.html"))
            .unwrap();
        b.wait_for("customElements.get('context-meter') !== undefined")
            .unwrap_or_else(|e| panic!("{page}: {e:#}"));
        assert_eq!(
            js(&mut b, "result()"),
            json!(["ContextMeter", "30% of context used"]),
            "{page}"
        );
    }
    assert_eq!(
        js(
            &mut b,
            "import('/pkg/node_modules/@agent-fold/context-meter/context-meter.js').then(() => 'twice is fine')"
        ),
        "twice is fine",
        "the module after the classic build: the first definition stands"
    );
}

/// Every `var(--context-meter-…, fallback)` in the module: name -> fallback.
fn custom_properties(source: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (at, _) in source.match_indices("var(--context-meter-") {
        let rest = &source[at + 4..];
        let (mut depth, mut end) = (1, 0);
        for (i, c) in rest.char_indices() {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            if depth == 0 {
                end = i;
                break;
            }
        }
        let (name, fallback) = rest[..end]
            .split_once(',')
            .expect("every var() has a fallback");
        let pair = (name.trim().to_owned(), fallback.trim().to_owned());
        if let Some(seen) = out.iter().find(|(n, _)| *n == pair.0) {
            assert_eq!(
                seen.1, pair.1,
                "{}: one fallback wherever it is used",
                pair.0
            );
        } else {
            out.push(pair);
        }
    }
    out
}

#[test]
fn the_manifest_describes_the_element() {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(format!("{UI}/custom-elements.json")).unwrap())
            .unwrap();
    let decl = &manifest["modules"][0]["declarations"][0];
    let names = |key: &str| -> BTreeSet<String> {
        decl[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| s(&v["name"]).to_owned())
            .collect()
    };
    // Its CSS custom properties are the module's, with the module's fallbacks.
    let source = std::fs::read_to_string(format!("{UI}/context-meter.js")).unwrap();
    let used = custom_properties(&source);
    let listed: Vec<(String, String)> = decl["cssProperties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (s(&p["name"]).to_owned(), s(&p["default"]).to_owned()))
        .collect();
    assert_eq!(
        listed.iter().collect::<BTreeSet<_>>(),
        used.iter().collect::<BTreeSet<_>>()
    );

    let Some(mut b) = page() else { return };
    let element = js(
        &mut b,
        "(() => { const m = mk({session: 's-42'}); const fired = new Set(); const send = m.dispatchEvent.bind(m); \
         m.dispatchEvent = (e) => { fired.add(e.type); return send(e); }; \
         m.update(rec()); m.update({type: 'context/error', session: 's-42', seq: 200, error: 'x'}); \
         m.reset(); m.open = true; m.open = false; \
         const proto = Object.getOwnPropertyNames(ContextMeter.prototype); \
         return { attributes: ContextMeter.observedAttributes, fired: [...fired].sort(), \
           parts: [...m.shadowRoot.querySelectorAll('[part]')].map((e) => e.getAttribute('part')).sort(), \
           members: proto.filter((n) => n !== 'constructor' && !n.startsWith('#') && \
             !['connectedCallback', 'disconnectedCallback', 'attributeChangedCallback'].includes(n)).sort(), \
           statics: ['addLocale', 'locales', 'announceInterval'].filter((n) => n in ContextMeter), \
           tag: customElements.get('context-meter') === ContextMeter }; })()",
    );
    let strings = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| s(x).to_owned())
            .collect()
    };
    let mut attributes = strings(&element["attributes"]);
    attributes.insert("warning".into()); // set by the meter for page CSS, not observed
    assert_eq!(names("attributes"), attributes);
    assert_eq!(names("events"), strings(&element["fired"]));
    assert_eq!(names("cssParts"), strings(&element["parts"]));
    let members: BTreeSet<String> = decl["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["static"] != true)
        .map(|m| s(&m["name"]).to_owned())
        .collect();
    assert_eq!(members, strings(&element["members"]));
    assert_eq!(
        element["statics"],
        json!(["addLocale", "locales", "announceInterval"])
    );
    assert_eq!(decl["tagName"], "context-meter");
    assert_eq!(element["tag"], true);
}

#[test]
fn the_types_check() {
    let tsc = Path::new(UI).join("node_modules/.bin/tsc");
    if !tsc.is_file() {
        common::skip("no ui/node_modules/.bin/tsc: run `npm ci` in ui/ for the types' check");
        return;
    }
    let Some(_) = tool("node") else { return };
    run(Command::new(tsc).args(["-p", "types-test"]).current_dir(UI));
}

#[test]
fn the_classic_build_refuses_what_it_cannot_carry() {
    let Some(node) = tool("node") else { return };
    let out = run(Command::new(node)
        .args([
            "--input-type=module",
            "-e",
            &format!(
                "import {{ classic }} from '{UI}/build-classic.mjs'; const out = []; \
                 for (const src of ['export class A {{}}', 'import x from \"y\";', \
                   'export default 1;', 'export {{ A }};', 'const m = import(\"./x.js\");']) \
                   try {{ out.push(classic(src).split('\\n').slice(1).join(' ')); }} \
                   catch (e) {{ out.push(e.message); }} console.log(JSON.stringify(out));"
            ),
        ])
        .current_dir(UI));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!([
            "(() => { 'use strict'; class A {}})(); ",
            "context-meter.js:1: an import: the classic build has no way to load it",
            "context-meter.js:1: only \"export class|function|const|let\" is carried over: export default 1;",
            "context-meter.js:1: only \"export class|function|const|let\" is carried over: export { A };",
            "context-meter.js:1: an import: the classic build has no way to load it"
        ])
    );
}

#[test]
fn the_demo_runs_the_classic_build_from_file_and_renders() {
    let Some(()) = classic_built() else { return };
    let Some(mut b) = chromium() else { return };
    // From file:// first: the classic script needs no server.
    b.goto(&format!("file://{UI}/demo.html")).unwrap();
    b.wait_for("customElements.get('context-meter') !== undefined")
        .unwrap();
    let labels = js(
        &mut b,
        "Object.fromEntries([...document.querySelectorAll('context-meter')].map((m) => \
         [m.id, m.shadowRoot.querySelector('.ring').getAttribute('aria-label')]))",
    );
    assert_eq!(
        labels["en"], "64% of context used",
        "file:// demo, en meter"
    );
    assert_eq!(
        labels["zh"], "上下文已使用 17%",
        "file:// demo, zh-CN meter"
    );
    assert_eq!(
        labels["tw"], "上下文已使用 88%",
        "file:// demo, zh-TW meter"
    );
    assert!(
        s(&labels["error"]).contains("Warning"),
        "the error meter warns: {}",
        labels["error"]
    );

    b.viewport(1000, 1000, 2.0).unwrap();
    b.goto(&format!("http://127.0.0.1:{}/demo.html", server()))
        .unwrap();
    b.wait_for("customElements.get('context-meter') !== undefined")
        .unwrap();
    let open = js(
        &mut b,
        "[...document.querySelectorAll('context-meter')].filter((m) => m.open).map((m) => m.id)",
    );
    assert_eq!(open, json!(["en", "zh", "tw", "error"]), "four panels open");
    let compact = js(
        &mut b,
        "['en', 'zh', 'tw'].map((id) => document.getElementById(id).shadowRoot.querySelector('.compact').textContent)",
    );
    assert_eq!(
        compact,
        json!([
            "Auto-compacts at ~167K · ~39.5K to go",
            "约 16.7万 时自动压缩 · 还剩约 13.3万",
            "約 16.7萬 時自動壓縮 · 即將壓縮"
        ])
    );
    shot(&mut b, "context-meter-demo.png");
}
