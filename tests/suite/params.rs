//! The params have one table, `agent_fold_core::PARAMS` (contract §4): `Smart.toml`'s
//! `[[params]]`, the contract's §4 table and every host tool's `--help` say exactly what it says.
//! A param added to the table and left undocumented anywhere fails here, with the text to put
//! there.

use std::path::Path;

use agent_fold_core::{Config, PARAMS, Param, ParamError};

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A TOML basic string's value on a `key = "…"` line (Smart.toml's strings have no escapes:
/// the test fails on one rather than misread it).
fn toml_string(line: &str, key: &str) -> Option<String> {
    let rest = line
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?
        .trim();
    let inner = rest.strip_prefix('"')?.strip_suffix('"')?;
    assert!(!inner.contains('\\'), "Smart.toml: an escape in {line:?}");
    Some(inner.to_owned())
}

/// `Smart.toml`'s `[[params]]`: (name, description), in file order.
fn smart_toml_params() -> Vec<(String, String)> {
    let text = repo_file("Smart.toml");
    let mut out = Vec::new();
    for block in text.split("[[params]]").skip(1) {
        let name = block.lines().find_map(|l| toml_string(l, "name"));
        let description = block.lines().find_map(|l| toml_string(l, "description"));
        out.push((
            name.expect("a [[params]] block with a name"),
            description.expect("a [[params]] block with a description"),
        ));
    }
    out
}

fn smart_toml_block(p: &Param) -> String {
    format!(
        "[[params]]\nname = \"{}\"\ndescription = \"{}\"\noptional = true\n",
        p.name,
        p.describe()
    )
}

fn contract_row(p: &Param) -> String {
    format!(
        "| `{}` | {} | {} | {} |",
        p.name,
        p.values,
        p.default_shown(),
        p.doc
    )
}

#[test]
fn smart_toml_documents_every_param_as_the_table_does() {
    let want: Vec<(String, String)> = PARAMS
        .iter()
        .map(|p| (p.name.to_owned(), p.describe()))
        .collect();
    let got = smart_toml_params();
    let blocks: String = PARAMS
        .iter()
        .map(smart_toml_block)
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        got, want,
        "Smart.toml's [[params]] drifted from PARAMS (core/src/config.rs); they should read:\n\n{blocks}"
    );
}

#[test]
fn the_contract_table_is_the_params_table() {
    let contract = repo_file("docs/contract.md");
    let section = contract
        .split("\n## 4. ")
        .nth(1)
        .expect("docs/contract.md has a §4");
    let rows: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with("| param |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let want: Vec<String> = PARAMS.iter().map(contract_row).collect();
    assert_eq!(
        rows,
        want,
        "docs/contract.md §4's table drifted from PARAMS (core/src/config.rs); its rows should read:\n\n{}",
        want.join("\n")
    );
}

#[test]
fn every_host_tool_help_lists_every_param() {
    for sub in ["run", "relay", "serve", "statusline", "accuracy"] {
        let out = crate::harness::command()
            .args([sub, "--help"])
            .output()
            .expect("run agent-fold");
        assert!(out.status.success(), "agent-fold {sub} --help failed");
        let help = String::from_utf8(out.stdout).expect("UTF-8 help");
        assert!(
            help.contains("-e, --param <KEY=VALUE>"),
            "agent-fold {sub} takes -e/--param:\n{help}"
        );
        for p in PARAMS {
            assert!(
                help.contains(&format!("  {}\n", p.name)) && help.contains(&p.describe()),
                "agent-fold {sub} --help does not document param {}:\n{help}",
                p.name
            );
        }
    }
}

#[test]
fn every_param_in_the_table_is_one_init_takes_and_its_default_parses() {
    for p in PARAMS {
        if !p.default.is_empty() {
            Config::from_params([(p.name, p.default)])
                .unwrap_or_else(|e| panic!("the default of {}: {e}", p.name));
        }
    }
    // Every row is a param `init` reads: a value of it is taken or refused as a bad value,
    // never left unhandled.
    for p in PARAMS {
        let read = std::panic::catch_unwind(|| Config::from_params([(p.name, "\u{1}")]));
        match read {
            Ok(Ok(_)) | Ok(Err(ParamError::BadValue { .. })) => {}
            Ok(Err(e)) => panic!("PARAMS lists {}, which init refuses: {e}", p.name),
            Err(_) => panic!("PARAMS lists {}, which init does not read", p.name),
        }
    }
    let err = Config::from_params([("no_such_param", "1")]).expect_err("an unknown param");
    for p in PARAMS {
        assert!(
            err.to_string().contains(p.name),
            "the refusal names every param: {err}"
        );
    }
}
