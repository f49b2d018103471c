//! Tidy: the layering invariants of ARCHITECTURE.md, checked on the source text (as
//! rust-analyzer's `tidy.rs` does). Each rule lists its exceptions here, by path, and nowhere
//! else; a rule broken once fails the test with the file and line.
//!
//! - Only `team-core/src/tmux/` and `team-core/src/git.rs` start programs in `team-core`
//!   (`Command::new`).
//! - `team-core` never prints (`print!`, `println!`, `eprint!`, `eprintln!`, `dbg!`), never
//!   exits (`process::exit`; exception: `failpoint.rs`, whose `exit` fail point simulates a
//!   crash in test builds), and never reads the environment (`env::var`, `env::var_os`,
//!   `env::vars`, `env::args`).
//! - Every `.rs` file of the workspace starts with a `//!` doc saying what it is for.
//! - The binaries and `team-cli` never write to stderr with `eprint!`/`eprintln!`, which panic
//!   when stderr is closed (`2>&1 | head -1`): `team_cli::say!`/`say_line!` lose the text
//!   instead, never the exit status.
//! - The bench's floor for the reaper's scans (`LISTING_FORMAT` in `xtask/src/bench.rs`) lists
//!   exactly what the tools' snapshot lists.

use std::path::{Path, PathBuf};

use tests::workspace_root;

/// Where `team-core` may start programs.
const COMMAND_ALLOWED: &[&str] = &["team-core/src/tmux/", "team-core/src/git.rs"];
/// Where `team-core` may end the process.
const EXIT_ALLOWED: &[&str] = &["team-core/src/failpoint.rs"];

/// Every `.rs` file under `dir` (relative to the workspace root), sorted; `target/` skipped.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.flatten() {
            let path = e.path();
            let name = e.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&workspace_root().join(dir), &mut out);
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(workspace_root())
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// The code of a line: empty for comment lines (`//`, `///`, `//!`), else the line up to a
/// trailing `//` comment.
fn code(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") {
        return "";
    }
    match t.find("// ") {
        Some(i) => &t[..i],
        None => t,
    }
}

/// The violations of the `team-core` rules in one file's text: `(line, what)`.
fn core_violations(path: &str, text: &str) -> Vec<(usize, String)> {
    let allowed = |list: &[&str]| list.iter().any(|a| path.starts_with(a));
    let mut v = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let c = code(line);
        let mut bad = |what: &str| v.push((n + 1, format!("{what}: {}", line.trim())));
        if c.contains("Command::new") && !allowed(COMMAND_ALLOWED) {
            bad("starts a program outside tmux/ and git.rs");
        }
        if ["print!(", "println!(", "eprint!(", "eprintln!(", "dbg!("]
            .iter()
            .any(|m| c.contains(m))
        {
            bad("prints");
        }
        if c.contains("process::exit") && !allowed(EXIT_ALLOWED) {
            bad("exits");
        }
        if ["env::var(", "env::var_os(", "env::vars", "env::args"]
            .iter()
            .any(|m| c.contains(m))
        {
            bad("reads the environment");
        }
    }
    v
}

/// The lines of a binary's (or `team-cli`'s) text that write to stderr in a way that panics.
fn panicking_stderr(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let c = code(l);
            c.contains("eprintln!(") || c.contains("eprint!(")
        })
        .map(|(n, _)| n + 1)
        .collect()
}

#[test]
fn the_binaries_never_panic_on_a_closed_stderr() {
    let mut problems = Vec::new();
    for dir in [
        "team-core/cli/src",
        "team-scale/src",
        "team-reap/src",
        "team-audit/src",
    ] {
        for f in rust_files(dir) {
            for n in panicking_stderr(&std::fs::read_to_string(&f).unwrap()) {
                problems.push(format!("{}:{n}", rel(&f)));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "eprint!/eprintln! (use team_cli::say!/say_line!):\n{}",
        problems.join("\n")
    );
    assert_eq!(
        panicking_stderr("    eprintln!(\"x\");\n// eprintln!(\"y\")"),
        [1]
    );
}

fn has_module_doc(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with("//!"))
}

#[test]
fn team_core_keeps_its_layering() {
    let mut problems = Vec::new();
    let files = rust_files("team-core/src");
    assert!(files.len() > 20, "found only {} files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let path = rel(&f);
        for (n, what) in core_violations(&path, &text) {
            problems.push(format!("{path}:{n}: {what}"));
        }
    }
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_rust_file_says_what_it_is_for() {
    let mut missing = Vec::new();
    for dir in [
        "team-core",
        "team-scale",
        "team-reap",
        "team-audit",
        "xtask",
        "tests",
    ] {
        for f in rust_files(dir) {
            if !has_module_doc(&std::fs::read_to_string(&f).unwrap()) {
                missing.push(rel(&f));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files without a `//!` doc at the top:\n{}",
        missing.join("\n")
    );
}

/// The rules catch what they are for (and the exceptions are only the listed paths).
#[test]
fn the_rules_catch_one_violation_each() {
    let cases = [
        (
            "team-core/src/ops/up.rs",
            "let c = std::process::Command::new(\"tmux\");",
        ),
        ("team-core/src/view.rs", "    println!(\"x\");"),
        ("team-core/src/view.rs", "eprintln!(\"{e}\");"),
        ("team-core/src/store.rs", "std::process::exit(1);"),
        ("team-core/src/paths.rs", "let t = std::env::var(\"TMUX\");"),
        ("team-core/src/paths.rs", "let t = env::var_os(\"HOME\");"),
    ];
    for (path, line) in cases {
        assert_eq!(core_violations(path, line).len(), 1, "{path}: {line}");
    }
    for (path, line) in [
        ("team-core/src/tmux/mod.rs", "Command::new(&self.bin)"),
        ("team-core/src/git.rs", "Command::new(\"git\")"),
        ("team-core/src/failpoint.rs", "std::process::exit(137);"),
        ("team-core/src/view.rs", "// println!(\"in a comment\")"),
    ] {
        assert!(core_violations(path, line).is_empty(), "{path}: {line}");
    }
    assert!(has_module_doc("\n//! What this is.\nfn f() {}"));
    assert!(!has_module_doc("/// An item doc.\nfn f() {}"));
}

/// The bench's floor for the reaper's scans lists what the tools list: its `LISTING_FORMAT`
/// is the snapshot format (with the nonce `n`), so a field added to one is added to both.
#[test]
fn the_benchs_listing_floor_lists_what_the_tools_list() {
    let src = std::fs::read_to_string(tests::workspace_root().join("xtask/src/bench.rs")).unwrap();
    let line = src
        .lines()
        .find(|l| l.starts_with("const LISTING_FORMAT: &str = \""))
        .expect("LISTING_FORMAT in xtask/src/bench.rs");
    let lit = line
        .trim_start_matches("const LISTING_FORMAT: &str = \"")
        .trim_end_matches("\";")
        .replace("\\t", "\t");
    assert_eq!(lit, team_core::tmux::snapshot::format("n"));
}
