//! `hook`: a table of Claude Code PreToolUse payloads, their decisions and their records; the
//! PostToolUse pairing; the payload's cwd never made into a directory.

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

/// The JSON decision a denial (or --ask) prints on stdout.
fn decision(o: &std::process::Output) -> Value {
    serde_json::from_str(stdout(o).trim()).expect("the decision on stdout is JSON")
}

#[test]
fn hook_decisions_and_records() {
    let wsdir = tempfile::tempdir().unwrap();
    let cwd_buf = wsdir.path().canonicalize().unwrap();
    let cwd: &str = cwd_buf.to_str().unwrap();
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
            name: "mentions only: echo, unguarded",
            payload: bash("echo \"tmux kill-pane\"", cwd),
            args: &[],
            code: 0,
            records: vec![],
        },
        Case {
            name: "mentions only: echo, guarded (tmux named as data)",
            payload: bash("echo \"tmux kill-pane\"", cwd),
            args: &["--guard"],
            code: 2,
            records: vec![("shell", json!([]))],
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
            args: &[],
            code: 0,
            records: vec![("hook.malformed", json!([]))],
        },
        Case {
            name: "malformed payload, guarded: denied (--guard fails closed)",
            payload: "{not json".into(),
            args: &["--guard"],
            code: 2,
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
        if case.code == 2 {
            let d = decision(&o);
            assert_eq!(d["hookSpecificOutput"]["hookEventName"], "PreToolUse");
            assert_eq!(d["hookSpecificOutput"]["permissionDecision"], "deny");
            assert!(
                !d["hookSpecificOutput"]["permissionDecisionReason"]
                    .as_str()
                    .unwrap()
                    .is_empty()
            );
        } else {
            assert!(o.stdout.is_empty(), "{}: stdout {}", case.name, stdout(&o));
        }
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
fn the_log_defaults_to_the_payload_cwd_state_root_only_when_it_exists() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let hook_in = |dir: &std::path::Path, payload: String| {
        run_with_input(
            {
                let mut c = cmd();
                c.arg("hook").current_dir(dir);
                c
            },
            payload.as_bytes(),
        )
    };
    // No .team in the workspace: allowed, not recorded, nothing created.
    let o = hook_in(
        d.path(),
        bash("tmux -S /tmp/x kill-pane -t %9", ws.to_str().unwrap()),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("not recorded"), "{}", stderr(&o));
    assert!(
        !ws.join(".team").exists(),
        "made a directory from the payload"
    );
    // A cwd that does not exist is never created, guarded or not.
    let gone = d.path().join("no/such/dir");
    for args in [&["hook"][..], &["hook", "--guard"][..]] {
        let o = run_with_input(
            {
                let mut c = cmd();
                c.args(args).current_dir(d.path());
                c
            },
            bash("tmux -S /tmp/x kill-pane -t %9", gone.to_str().unwrap()).as_bytes(),
        );
        if args.len() == 2 {
            assert_eq!(code(&o), 2, "{}", stderr(&o));
            assert!(
                stderr(&o).contains("not an existing directory"),
                "{}",
                stderr(&o)
            );
        } else {
            assert_eq!(code(&o), 0, "{}", stderr(&o));
        }
        assert!(!d.path().join("no").exists(), "made the payload's cwd");
    }
    // With the workspace's state root present, the record goes there.
    std::fs::create_dir(ws.join(".team")).unwrap();
    let o = hook_in(
        d.path(),
        bash("tmux -S /tmp/x kill-pane -t %9", ws.to_str().unwrap()),
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
    assert!(stderr(&o).contains("not recorded"), "{}", stderr(&o));
    // Fail closed: denied.
    let o = run_with_input(
        with_log(&log, &["hook", "--fail-closed"]),
        bash("tmux kill-pane -t %1", "/w").as_bytes(),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot record"), "{}", stderr(&o));
}

fn event(ev: &str, cmd: &str, cwd: &str, id: &str, response: Value) -> String {
    json!({
        "session_id": "sess-1",
        "hook_event_name": ev,
        "tool_name": "Bash",
        "tool_use_id": id,
        "tool_input": {"command": cmd},
        "tool_response": response,
        "cwd": cwd,
    })
    .to_string()
}

#[test]
fn post_tool_use_pairs_outcomes_and_never_writes_an_intent() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let cwd = d.path().to_str().unwrap();
    let kill = "tmux -S /tmp/x kill-pane -t %4 \\; kill-window -t @1";
    let ok = json!({"stdout": "", "stderr": "", "interrupted": false});
    let o = run_with_input(
        with_log(&log, &["hook"]),
        event("PreToolUse", kill, cwd, "toolu_1", Value::Null).as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let intents = records(&log);
    assert_eq!(intents.len(), 2);
    // A PostToolUse for another call, and a PostToolUse with no intent: nothing written.
    for (cmd, id) in [
        (kill, "toolu_other"),
        ("tmux -S /tmp/x kill-pane -t %5", "toolu_2"),
    ] {
        let o = run_with_input(
            with_log(&log, &["hook", "--guard"]),
            event("PostToolUse", cmd, cwd, id, ok.clone()).as_bytes(),
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(o.stdout.is_empty());
        assert_eq!(
            records(&log).len(),
            2,
            "PostToolUse wrote a record for {id}"
        );
    }
    // The matching PostToolUse: one outcome per intent, same audit_id.
    let o = run_with_input(
        with_log(&log, &["hook", "--guard"]),
        event("PostToolUse", kill, cwd, "toolu_1", ok.clone()).as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rs = records(&log);
    assert_eq!(rs.len(), 4);
    for (i, out) in rs[2..].iter().enumerate() {
        assert_eq!(out["stage"], "complete");
        assert_eq!(out["audit_id"], intents[i]["audit_id"]);
        assert_eq!(out["action"], intents[i]["action"]);
    }
    assert!(rs.iter().filter(|r| r["stage"] == "intent").count() == 2);
    // Repeated: already paired, nothing more.
    let o = run_with_input(
        with_log(&log, &["hook"]),
        event("PostToolUse", kill, cwd, "toolu_1", ok).as_bytes(),
    );
    assert_eq!(code(&o), 0);
    assert_eq!(records(&log).len(), 4);
    // An interrupted call's outcome is `failed`.
    let o = run_with_input(
        with_log(&log, &["hook"]),
        event(
            "PreToolUse",
            "tmux -S /tmp/x kill-server",
            cwd,
            "toolu_3",
            Value::Null,
        )
        .as_bytes(),
    );
    assert_eq!(code(&o), 0);
    let o = run_with_input(
        with_log(&log, &["hook"]),
        event(
            "PostToolUse",
            "tmux -S /tmp/x kill-server",
            cwd,
            "toolu_3",
            json!({"interrupted": true}),
        )
        .as_bytes(),
    );
    assert_eq!(code(&o), 0);
    let rs = records(&log);
    assert_eq!(rs.len(), 6);
    assert_eq!(rs[5]["stage"], "failed");
    assert_eq!(rs[5]["audit_id"], rs[4]["audit_id"]);
    assert_eq!(verify(&log).0, 0);
}

#[test]
fn ask_mode_asks_instead_of_denying() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let o = run_with_input(
        with_log(&log, &["hook", "--guard", "--ask"]),
        bash("tmux kill-server", d.path().to_str().unwrap()).as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let d2 = decision(&o);
    assert_eq!(d2["hookSpecificOutput"]["permissionDecision"], "ask");
    assert!(
        d2["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("kill-server")
    );
    let rs = records(&log);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["outcome"], "asked");
    // --ask without --guard is a usage error.
    let o = run_with_input(with_log(&log, &["hook", "--ask"]), b"{}");
    assert_eq!(code(&o), 64);
}
