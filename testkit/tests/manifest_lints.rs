//! This crate's `[lints]` repeat the root workspace's `[workspace.lints]` (see the comment in
//! `Cargo.toml`: a package outside the workspace cannot inherit them): the two must not drift.

use std::collections::BTreeSet;
use std::path::Path;

/// The `name = value` lines of each `[<prefix>.<tool>]` table, as `tool.name = value`,
/// comments and blank lines left out.
fn lints(manifest: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut tool = None;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            tool = header
                .strip_prefix(prefix)
                .and_then(|t| t.strip_prefix('.'))
                .map(str::to_owned);
        } else if let (Some(tool), false) = (&tool, line.is_empty()) {
            let (name, value) = line.split_once('=').expect("a `name = value` line");
            out.insert(format!("{tool}.{} = {}", name.trim(), value.trim()));
        }
    }
    out
}

#[test]
fn the_lints_are_the_workspace_lints() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &Path| std::fs::read_to_string(p).expect("read a manifest");
    let ours = lints(&read(&here.join("Cargo.toml")), "lints");
    let workspace = lints(&read(&here.join("../Cargo.toml")), "workspace.lints");
    assert!(
        !workspace.is_empty(),
        "no [workspace.lints] found in the root manifest"
    );
    assert_eq!(
        ours, workspace,
        "testkit/Cargo.toml's [lints] differ from the root's [workspace.lints]: copy them over"
    );
}
