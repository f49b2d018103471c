//! `hook`: a table of Claude Code PreToolUse payloads, their decisions and their records.

use super::audit_common::*;
use serde_json::{Value, json};

fn bash(cmd: &str, cwd: &str) -> String {
    json!({
        "session_id": "sess-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": cmd},
        "cwd": cwd,
    })
    .to_string()
}

struct Case {
    name: &'static str,
    payload: String,
    args: &'static [&'static str],
    code: i32,
    /// (action, targets) of each record, in order.
    records: Vec<(&'static str, Value)>,
}

#[test]
fn hook_decisions_and_records() {
    let cwd = "/nonexistent-workspace";
    let cases = vec![
        Case {
            name: "plain kill, unguarded: allowed and recorded",
            payload: bash("tmux kill-pane -t %3", cwd),
            args: &[],
            code: 0,
            records: vec![("kill-pane", json!(["%3"]))],
        },
        Case {
            name: "chained with -L and -S",
            payload: bash("cd /x && tmux -L a kill-window -t @1; tmux -S /tmp/s kill-session -t 'my team' || true", cwd),
            args: &[],
            code: 0,
            records: vec![("kill-window", json!(["@1"])), ("kill-session", json!(["my team"]))],
        },
        Case {
            name: "inside sh -c",
            payload: bash("sh -c 'tmux kill-pane -t \"%7\"'", cwd),
            args: &[],
            code: 0,
            records: vec![("kill-pane", json!(["%7"]))],
        },
        Case {
            name: "tmux command sequence and respawn -k",
            payload: bash("tmux kill-pane -t %1 \\; respawn-pane -k -t %2", cwd),
            args: &[],
            code: 0,
            records: vec![("kill-pane", json!(["%1"])), ("respawn-pane -k", json!(["%2"]))],
        },
        Case {
            name: "mentions only: echo",
            payload: bash("echo \"tmux kill-pane\"", cwd),
            args: &["--guard"],
            code: 0,
            records: vec![],
        },
        Case {
            name: "mentions only: grep",
            payload: bash("grep -rn kill-pane src/ | head", cwd),
            args: &["--guard"],
            code: 0,
            records: vec![],
        },
        Case {
            name: "not a destructive tmux command",
            payload: bash("tmux list-panes -a -F '#{pane_id}'", cwd),
            args: &["--guard"],
            code: 0,
            records: vec![],
        },
        Case {
            name: "another tool",
            payload: json!({"tool_name": "Write", "tool_input": {"content": "tmux kill-server"}, "cwd": cwd}).to_string(),
            args: &["--guard", "--fail-closed"],
            code: 0,
            records: vec![],
        },
        Case {
            name: "guard: kill-server always denied",
            payload: bash("tmux kill-server", cwd),
            args: &["--guard"],
            code: 2,
            records: vec![("kill-server", json!([]))],
        },
        Case {
            name: "guard: unproven pane denied",
            payload: bash("tmux kill-pane -t %3", cwd),
            args: &["--guard"],
            code: 2,
            records: vec![("kill-pane", json!(["%3"]))],
        },
        Case {
            name: "malformed payload: allowed, recorded",
            payload: "{not json".into(),
            args: &["--guard"],
            code: 0,
            records: vec![("hook.malformed", json!([]))],
        },
        Case {
            name: "malformed payload, fail closed: denied",
            payload: "{not json".into(),
            args: &["--fail-closed"],
            code: 2,
            records: vec![("hook.malformed", json!([]))],
        },
        Case {
            name: "Bash payload without a command, fail closed",
            payload: json!({"tool_name": "Bash", "tool_input": {}, "cwd": cwd}).to_string(),
            args: &["--fail-closed"],
            code: 2,
            records: vec![("hook.malformed", json!([]))],
        },
    ];
    for case in cases {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("audit.jsonl");
        let mut args = vec!["hook"];
        args.extend_from_slice(case.args);
        let o = run_with_input(with_log(&log, &args), case.payload.as_bytes());
        assert_eq!(code(&o), case.code, "{}: {}", case.name, stderr(&o));
        assert!(o.stdout.is_empty(), "{}: stdout {}", case.name, stdout(&o));
        let rs = if log.exists() { records(&log) } else { vec![] };
        let got: Vec<(String, Value)> = rs
            .iter()
            .map(|r| {
                (
                    r["action"].as_str().unwrap().to_string(),
                    r["targets"].clone(),
                )
            })
            .collect();
        let want: Vec<(String, Value)> = case
            .records
            .iter()
            .map(|(a, t)| (a.to_string(), t.clone()))
            .collect();
        assert_eq!(got, want, "{}", case.name);
        for r in &rs {
            assert_eq!(r["stage"], "intent", "{}", case.name);
            if r["action"] != "hook.malformed" {
                assert_eq!(r["caller"], "hook:sess-1", "{}", case.name);
                assert_eq!(r["workspace"], cwd, "{}", case.name);
            }
        }
        if case.code == 2 {
            assert!(
                stderr(&o).contains("denied"),
                "{}: {}",
                case.name,
                stderr(&o)
            );
            if case.args.contains(&"--guard") {
                assert!(rs.iter().all(|r| r["outcome"] == "denied"), "{}", case.name);
            }
        }
        assert_eq!(
            verify(&log).0,
            if rs.is_empty() { 66 } else { 0 },
            "{}",
            case.name
        );
    }
}

#[test]
fn the_log_defaults_to_the_payload_cwd() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let o = run_with_input(
        {
            let mut c = cmd();
            c.arg("hook").current_dir(d.path());
            c
        },
        bash("tmux -S /tmp/x kill-pane -t %9", ws.to_str().unwrap()).as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rs = records(&ws.join(".team/audit.jsonl"));
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["endpoint"], "/tmp/x");
    assert_eq!(rs[0]["argv"], json!(["tmux", "kill-pane", "-t", "%9"]));
    assert!(
        !d.path().join(".team").exists(),
        "wrote into the process cwd"
    );
}

#[test]
fn guard_denies_a_kill_it_cannot_record() {
    let d = tempfile::tempdir().unwrap();
    let blocker = d.path().join("file");
    std::fs::write(&blocker, b"").unwrap();
    let log = blocker.join("audit.jsonl");
    // Unguarded: allowed with a warning.
    let o = run_with_input(
        with_log(&log, &["hook"]),
        bash("tmux kill-pane -t %1", "/w").as_bytes(),
    );
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains("cannot record"), "{}", stderr(&o));
    // Fail closed: denied.
    let o = run_with_input(
        with_log(&log, &["hook", "--fail-closed"]),
        bash("tmux kill-pane -t %1", "/w").as_bytes(),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot record"), "{}", stderr(&o));
}
