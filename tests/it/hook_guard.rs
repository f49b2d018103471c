//! `team-audit hook --guard` against a real team: only proven members may be killed.

use std::io::Write;
use std::process::Stdio;

use tests::{Sandbox, TmuxServer, assert_code, json_lines, tmux_at};

fn hook(sb: &Sandbox, command: &str) -> std::process::Output {
    let payload = serde_json::json!({
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "cwd": sb.ws,
        "session_id": "sess-1",
    });
    let mut c = sb
        .cmd("team-audit")
        .args(["hook", "--guard"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    c.wait_with_output().unwrap()
}

#[test]
fn guard_allows_proven_members_only() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let st = sb.run("team-scale", &["status", "demo", "--json"]);
    let lines = json_lines(&st.stdout);
    let worker = lines.iter().find(|l| l["type"] == "worker").unwrap();
    let pane = worker["pane_id"].as_str().unwrap().to_string();
    let leader = lines.last().unwrap()["leader_pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sock = sb.private_sock();
    let s = sock.display().to_string();
    // An untagged pane on the same server.
    let o = tmux_at(
        &sock,
        &[
            "split-window",
            "-t",
            &leader,
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 100000",
        ],
    );
    let untagged = String::from_utf8_lossy(&o.stdout).trim().to_string();

    assert_code(&hook(&sb, &format!("tmux -S {s} kill-pane -t {pane}")), 0);
    for (cmd, why) in [
        (format!("tmux -S {s} kill-pane -t {leader}"), "the leader"),
        (
            format!("tmux -S {s} kill-pane -t {untagged}"),
            "an untagged pane",
        ),
        (
            format!(
                "echo ok && tmux -S {s} kill-pane -t {pane} ; tmux -S {s} kill-pane -t {untagged}"
            ),
            "a chain with one unproven target",
        ),
        (format!("tmux -S {s} kill-server"), "kill-server"),
        (format!("tmux -S {s} kill-session -t demo"), "a session"),
    ] {
        let o = hook(&sb, &cmd);
        assert_code(&o, 2);
        assert!(!o.stderr.is_empty(), "{why}: the denial says why");
    }
    // The same %N on another server is not the member.
    let other = TmuxServer::start();
    for _ in 0..4 {
        other.tmux(&["split-window", "-t", "base", "sleep 100000"]);
    }
    let o = hook(
        &sb,
        &format!("tmux -S {} kill-pane -t {pane}", other.sock.display()),
    );
    assert_code(&o, 2);
    // Nothing was killed by the hook itself (it only decides and records).
    let panes =
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .to_string();
    assert!(panes.lines().any(|l| l == pane) && panes.lines().any(|l| l == untagged));
    // Every kill the hook saw is recorded as an intent by caller hook:sess-1.
    let q = sb.run(
        "team-audit",
        &["query", "--json", "--caller", "hook:sess-1"],
    );
    let recs: Vec<_> = json_lines(&q.stdout)
        .into_iter()
        .filter(|r| r["type"] != "summary")
        .collect();
    assert!(recs.len() >= 8, "{recs:?}");
}
