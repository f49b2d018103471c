//! `pass`: forwarded lines are byte-identical, in order, and each has its record first.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use super::audit_common::*;
use serde_json::Value;

#[test]
fn forwards_lines_byte_identical_and_records_each() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    // Odd spacing, unicode, key order, a blank line, and a last line without a newline.
    let input = "{\"type\":\"candidate\",  \"pane_id\":\"%1\", \"team\":\"t\"}\n\
                 {\"z\":1,\"a\":\"\u{e9}\\u00e9\"}\n\
                 \n\
                 [1,2]\n\
                 {\"action\":\"kill-pane\",\"endpoint\":\"/s\",\"generation\":4}";
    let o = run_with_input(
        with_log(&log, &["pass", "--caller", "reaper"]),
        input.as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(o.stdout, input.as_bytes());
    let rs = records(&log);
    assert_eq!(rs.len(), 4, "blank lines are not recorded");
    let actions: Vec<&str> = rs.iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["candidate", "pipeline", "pipeline", "kill-pane"]);
    assert!(
        rs.iter()
            .all(|r| r["caller"] == "reaper" && r["stage"] == "intent")
    );
    assert_eq!(rs[0]["targets"][0]["pane_id"], "%1");
    assert_eq!(rs[0]["team"], "t");
    assert_eq!(rs[1]["targets"][0]["a"], "\u{e9}\u{e9}");
    assert_eq!(rs[3]["endpoint"], "/s");
    assert_eq!(rs[3]["generation"], 4);
    assert_eq!(verify(&log).0, 0);
}

#[test]
fn each_line_is_durable_before_it_is_forwarded() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let mut child = with_log(&log, &["pass"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut si = child.stdin.take().unwrap();
    let mut so = BufReader::new(child.stdout.take().unwrap());
    for i in 1..=5 {
        // One line at a time: it must come out without waiting for more input, and its
        // record must already be in the log when it does.
        writeln!(si, "{{\"pane_id\":\"%{i}\"}}").unwrap();
        si.flush().unwrap();
        let mut line = String::new();
        so.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["pane_id"], format!("%{i}"));
        let rs = records(&log);
        assert_eq!(rs.len(), i);
        assert_eq!(rs[i - 1]["targets"][0]["pane_id"], format!("%{i}"));
    }
    drop(si);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_non_json_line_stops_the_flow_with_65_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let input = "{\"n\":1}\n{\"n\":2}\nnot json\n{\"n\":4}\n";
    let o = run_with_input(with_log(&log, &["pass"]), input.as_bytes());
    assert_eq!(code(&o), 65, "{}", stderr(&o));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\"n\":1}\n{\"n\":2}\n");
    assert_eq!(records(&log).len(), 2);
}

#[test]
fn an_unwritable_log_exits_74_and_forwards_nothing() {
    let d = tempfile::tempdir().unwrap();
    let blocker = d.path().join("file");
    std::fs::write(&blocker, b"").unwrap();
    let log = blocker.join("audit.jsonl");
    let o = run_with_input(with_log(&log, &["pass"]), b"{\"n\":1}\n{\"n\":2}\n");
    assert_eq!(code(&o), 74, "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "forwarded unrecorded lines: {}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("cannot record"), "{}", stderr(&o));
}

#[test]
fn a_closed_stdout_exits_quietly() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let mut child = with_log(&log, &["pass"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut si = child.stdin.take().unwrap();
    let _ = si.write_all(b"{\"n\":1}\n");
    drop(si);
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0);
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}
