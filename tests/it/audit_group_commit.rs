//! `down` and `shutdown` write their kills' outcomes with the operation's own outcome: one
//! lock and one write, not waited on (issue 15: each `fdatasync` costs a `down 1` about a
//! millisecond here; the design asks intents to be durable before their effects, outcomes only
//! to be recorded after). What must not change with it: every intent is durable before its
//! effect. Observed with strace on the real binaries (only the main thread, which does all
//! state I/O).

use std::process::Command;

use tests::{Sandbox, assert_audit_pairs, assert_code};

/// The lines of an `strace -y` of `team-scale args`.
fn traced(sb: &Sandbox, args: &[&str]) -> Vec<String> {
    let trace = sb.dir.path().join("trace");
    let o = sb
        .command("strace")
        .args([
            "-qq",
            "-y",
            "-s",
            "65536",
            "-e",
            "trace=fdatasync,sendto,write",
            "-o",
        ])
        .arg(&trace)
        .arg(tests::bin("team-scale"))
        .args(args)
        .output()
        .unwrap();
    assert_code(&o, 0);
    std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// The audit log's records, as (stage, action, audit_id).
fn records(sb: &Sandbox) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(sb.ws.join(".team/audit.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (s("stage"), s("action"), s("audit_id"))
        })
        .collect()
}

#[test]
fn a_down_syncs_its_intents_before_every_kill_and_writes_its_outcomes_once() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: the group commit test not run");
        return;
    }
    let sb = Sandbox::new();
    let init = [
        "init",
        "demo",
        "--private",
        "--worker-cmd",
        "exec sleep 100000",
    ];
    assert_code(&sb.run("team-scale", &init), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "3", "--ready-timeout", "0"]),
        0,
    );
    let before = records(&sb).len();
    let lines = traced(&sb, &["down", "demo", "2", "--force", "--grace", "3s"]);

    // Each fdatasync of the log, and the one message to the server that carries `kill-pane`.
    let log_syncs: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("fdatasync(") && lines[i].contains("audit.jsonl>"))
        .collect();
    assert_eq!(
        log_syncs.len(),
        2,
        "the operation's intent, then the kills' intents (one batch), and nothing for the \
         outcomes: {:#?}",
        lines
            .iter()
            .filter(|l| l.starts_with("fdatasync("))
            .collect::<Vec<_>>()
    );
    let kill = lines
        .iter()
        .position(|l| l.starts_with("sendto(") && l.contains("kill-pane"))
        .expect("no kill-pane sent to the tmux server");
    assert!(
        log_syncs[1] < kill,
        "every intent durable before the kill: syncs at {log_syncs:?}, kill at {kill}"
    );
    // The outcomes: one write to the log after the kill, carrying every `complete` record.
    let writes: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("write(") && lines[i].contains("audit.jsonl>"))
        .collect();
    assert_eq!(writes.len(), 3, "one write per batch: {writes:?}");
    assert!(
        kill < writes[2]
            && lines[writes[2]]
                .matches("\\\"stage\\\":\\\"complete\\\"")
                .count()
                == 3,
        "the outcomes (two kills and the operation) in one write after the kill: {}",
        lines[writes[2]]
    );

    // The log: op intent, one kill intent per worker, then each kill's outcome and the
    // operation's, in that order, each outcome naming its intent.
    let recs = records(&sb);
    let new = &recs[before..];
    let stages: Vec<(&str, &str)> = new
        .iter()
        .map(|(s, a, _)| (s.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        stages,
        [
            ("intent", "operation"),
            ("intent", "kill-pane"),
            ("intent", "kill-pane"),
            ("complete", "kill-pane"),
            ("complete", "kill-pane"),
            ("complete", "operation"),
        ],
        "{new:#?}"
    );
    assert_eq!(
        new[0].2, new[5].2,
        "the operation's outcome names its intent"
    );
    assert_eq!(
        assert_audit_pairs(&sb.ws.join(".team/audit.jsonl")),
        recs.len() / 2
    );
    let v = sb.run("team-audit", &["verify"]);
    assert_code(&v, 0);
}
