//! Every directory of state made under the state root (`teams/<t>`, `workers/`, `tasks/`,
//! `locks/`, `runtime/`) is made durable: the `mkdirat` is followed by an fsync of its parent.
//! A worker's own directory (`workers/<w>`) is runtime, made without an fsync
//! (`fsutil::Sync::Never`: its path is recorded durably first, and a machine crash takes its
//! pane with it). Observed with strace on the real binaries (only the main thread, which does
//! all state I/O).

use std::path::Path;
use std::process::Command;

use tests::{Sandbox, assert_code, bin};

fn traced(sb: &Sandbox, trace: &Path, args: &[&str]) {
    let mut c = sb.command("strace");
    c.args(["-qq", "-e", "trace=mkdir,mkdirat,fsync", "-o"])
        .arg(trace)
        .arg(bin("team-scale"))
        .args(args);
    let o = c.output().unwrap();
    assert_code(&o, 0);
}

/// (name, fd) of each successful `mkdirat(fd, "name", ...)`, checked to be followed at once by
/// `fsync(fd) = 0`; a worker's directory (`worker-<n>`) is listed as `runtime:<name>`,
/// without that check.
fn created_durably(trace: &str) -> Vec<String> {
    let lines: Vec<&str> = trace.lines().collect();
    let mut names = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        assert!(
            !(l.starts_with("mkdir(") && l.contains(".team")),
            "a state directory made by path: {l}"
        );
        let Some(rest) = l.strip_prefix("mkdirat(") else {
            continue;
        };
        if !l.trim_end().ends_with("= 0") {
            continue;
        }
        let (fd, rest) = rest.split_once(", \"").unwrap();
        let name = rest.split('"').next().unwrap().to_string();
        if name.starts_with("worker-") {
            names.push(format!("runtime:{name}"));
            continue;
        }
        let next = lines.get(i + 1).copied().unwrap_or("");
        assert!(
            next.starts_with(&format!("fsync({fd})")) && next.trim_end().ends_with("= 0"),
            "mkdirat of {name:?} not followed by an fsync of its parent: {l} / {next}"
        );
        names.push(name);
    }
    names
}

#[test]
fn state_directories_are_created_durably() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: state_directories_are_created_durably not run");
        return;
    }
    let sb = Sandbox::new();
    let trace = sb.dir.path().join("trace");
    traced(
        &sb,
        &trace,
        &[
            "init",
            "demo",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ],
    );
    let mut names = created_durably(&std::fs::read_to_string(&trace).unwrap());
    let tasks = sb.dir.path().join("tasks.json");
    std::fs::write(&tasks, r#"[{"subject":"a","description":""}]"#).unwrap();
    traced(
        &sb,
        &trace,
        &[
            "up",
            "demo",
            "1",
            "--ready-timeout",
            "0",
            "--tasks",
            &tasks.display().to_string(),
        ],
    );
    names.extend(created_durably(&std::fs::read_to_string(&trace).unwrap()));
    for want in [
        ".team",
        "locks",
        "teams",
        "demo",
        "tasks",
        "workers",
        "runtime:worker-1",
        "runtime",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} not made durably: {names:?}"
        );
    }
}
