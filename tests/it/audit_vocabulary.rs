//! One audit vocabulary: tmux verbs for tmux actions (`kill-pane`), `signal` for processes,
//! the operation in `op`; `query` finds the tools' kills by the verb the hook uses too, and
//! prints readable targets and the team; `pass` records only lines that ask for an action.

use std::io::Write;
use std::process::Stdio;

use tests::{Sandbox, assert_audit_pairs, assert_code, json_lines};

fn team_with_two_workers(sb: &Sandbox) {
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
}

#[test]
fn the_tools_kills_are_kill_pane_with_their_operation() {
    let sb = Sandbox::new();
    team_with_two_workers(&sb);
    assert_code(
        &sb.run("team-scale", &["down", "demo", "--force", "--grace", "1s"]),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["shutdown", "demo", "--grace", "1s"]),
        0,
    );
    let log = sb.ws.join(".team/audit.jsonl");
    assert!(assert_audit_pairs(&log) >= 3);

    let o = sb.run("team-audit", &["query", "--action", "kill-pane", "--json"]);
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    let intents: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "record" && l["stage"] == "intent")
        .collect();
    // worker-2 by down, worker-1 and the leader by shutdown.
    assert_eq!(intents.len(), 3, "{lines:#?}");
    let ops: Vec<&str> = intents.iter().map(|l| l["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["scale_down", "shutdown", "shutdown"], "{lines:#?}");
    // The frames of the operations are `operation` records with the same op.
    let o = sb.run(
        "team-audit",
        &[
            "query",
            "--op",
            "scale_down",
            "--action",
            "operation",
            "--json",
        ],
    );
    let frames = json_lines(&o.stdout);
    assert_eq!(
        frames.iter().filter(|l| l["type"] == "record").count(),
        2,
        "intent and outcome: {frames:#?}"
    );
    // No record uses the old words.
    let text = std::fs::read_to_string(&log).unwrap();
    for old in ["tmux.kill-pane", "teardown_worker", "terminate-process"] {
        assert!(!text.contains(old), "{old} in the log");
    }

    // The table: a TEAM column, readable targets, --limit.
    let o = sb.run(
        "team-audit",
        &[
            "query",
            "--action",
            "kill-pane",
            "--stage",
            "intent",
            "--limit",
            "1",
        ],
    );
    assert_code(&o, 0);
    let table = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[0].contains("TEAM") && rows[0].contains("TARGETS"),
        "{table}"
    );
    assert!(rows[1].contains(" demo "), "{table}");
    assert!(!rows[1].contains('{'), "no JSON blobs: {table}");
    let first = &intents[0];
    let pane = first["targets"][0]["pane_id"].as_str().unwrap();
    let o = sb.run(
        "team-audit",
        &[
            "query",
            "--action",
            "kill-pane",
            "--op",
            "scale_down",
            "--stage",
            "intent",
        ],
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{pane} (worker-2)")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn pass_records_only_lines_that_ask_for_an_action() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("audit.jsonl");
    let input = concat!(
        r#"{"type":"server","endpoint":"/s","status":"dead"}"#,
        "\n",
        r#"{"type":"pane","endpoint":"/s","pane_id":"%1","verdict":"owned"}"#,
        "\n",
        r#"{"type":"pane","endpoint":"/s","pane_id":"%2","verdict":"orphan","worker":"worker-2"}"#,
        "\n",
        r#"{"type":"process","pid":7,"start_time":9,"verdict":"orphan"}"#,
        "\n",
        r#"{"type":"pane","endpoint":"/s","pane_id":"%3","verdict":"busy"}"#,
        "\n",
        r#"{"type":"session","session_id":"$1","verdict":"orphan"}"#,
        "\n",
        r#"{"type":"summary","panes":3}"#,
        "\n",
    );
    let mut child = sb
        .cmd("team-audit")
        .args(["pass", "--json", "--audit-log", log.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0);
    // Every line is forwarded as it came, then the summary.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with(input), "{out}");
    let summary = json_lines(out[input.len()..].as_bytes());
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0]["type"], "summary");
    assert_eq!(summary[0]["recorded"], 2);
    // Only the orphan pane (kill-pane) and the orphan process (signal) were recorded.
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(&str, &str)> = recs
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap(),
                r["targets"][0]["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("kill-pane", "orphan"), ("signal", "orphan")]);
}

#[test]
fn query_follow_shows_records_as_they_are_appended() {
    use std::io::{BufRead, BufReader};
    let sb = Sandbox::new();
    let log = sb.dir.path().join("audit.jsonl");
    let log = log.to_str().unwrap();
    let record = |caller: &str| {
        let o = sb.run(
            "team-audit",
            &[
                "record",
                "--caller",
                caller,
                "--action",
                "kill-pane",
                "--audit-log",
                log,
            ],
        );
        assert_code(&o, 0);
    };
    record("first");
    let mut child = sb
        .cmd("team-audit")
        .args([
            "query",
            "--follow",
            "--json",
            "--caller",
            "second",
            "--audit-log",
            log,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Nothing matches yet; a record appended now is shown without restarting the query.
    record("other");
    record("second");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(lines.next().map(|l| l.unwrap()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10));
    // Ours, by its pid (the child of this test).
    child.kill().unwrap();
    child.wait().unwrap();
    let line = got.expect("a line within 10 s").expect("a line");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["type"], "record");
    assert_eq!(v["caller"], "second");
    assert_eq!(v["seq"], 3);
}
