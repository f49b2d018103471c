//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// `team-audit` with the harness's hermetic environment (no ambient log, state dir or tmux).
pub fn cmd() -> Command {
    tests::hermetic(tests::bin("team-audit"))
}

/// `team-audit --log <log> <args...>`.
pub fn with_log(log: &Path, args: &[&str]) -> Command {
    let mut c = cmd();
    c.arg("--log").arg(log).args(args);
    c
}

/// Runs `c` with `stdin` as its input.
pub fn run_with_input(mut c: Command, stdin: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut si = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = si.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("killed by a signal")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The log's lines parsed as JSON.
pub fn records(log: &Path) -> Vec<Value> {
    let bytes = std::fs::read(log).unwrap();
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("a log line is not JSON"))
        .collect()
}

/// `verify --json`: exit code and the problem record, if any.
pub fn verify(log: &Path) -> (i32, Option<Value>) {
    let o = run(with_log(log, &["verify", "--json"]));
    let problem = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "problem");
    (code(&o), problem)
}
