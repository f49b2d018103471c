//! `down` without a listing (`teardown::Seen::Guarded`): when every target runs under its live
//! supervisor, `down` proves each pane only by the guard of its own `kill-pane`, in one tmux
//! call. Each test is an attack on that shortcut: a pane that changed after `up` recorded it
//! must survive, as it does when a listing proves it first.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::*;

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn panes(sock: &Path) -> Vec<String> {
    let o = tmux_at(sock, &["list-panes", "-a", "-F", "#{pane_id}"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// `init t --private` with `cmd` for every worker, `up t 2`, and each worker's pane id once its
/// supervisor runs (its pane's first process is named `team-supervise`).
fn team(sb: &Sandbox, cmd: &str) -> Vec<(String, String)> {
    let o = sb.run(
        "team-scale",
        &["init", "t", "--private", "--worker-cmd", cmd],
    );
    assert_code(&o, 0);
    let o = sb.run("team-scale", &["up", "t", "2", "--json"]);
    assert_code(&o, 0);
    let ws: Vec<(String, String)> = json_lines(&o.stdout)
        .into_iter()
        .filter(|l| l["type"] == "worker")
        .map(|l| {
            (
                l["worker"].as_str().unwrap().to_string(),
                l["pane_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(ws.len(), 2);
    let sock = sb.private_sock();
    for (_, p) in &ws {
        wait_for("the supervisor", Duration::from_secs(10), || {
            let o = tmux_at(&sock, &["display-message", "-p", "-t", p, "#{pane_pid}"]);
            let pid = String::from_utf8_lossy(&o.stdout).trim().to_string();
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "team-supervise")
        });
    }
    ws
}

fn summary(o: &std::process::Output) -> Value {
    json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary: {}", String::from_utf8_lossy(&o.stdout)))
}

/// The shortcut is taken: one tmux call removes a supervised worker, and it is gone.
#[test]
fn down_of_a_supervised_worker_is_one_tmux_call() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let o = sb.run("team-scale", &["down", "t", "1", "--force", "--json"]);
    assert_code(&o, 0);
    assert_eq!(
        summary(&o)["tmux_invocations"],
        1,
        "{:?}",
        json_lines(&o.stdout)
    );
    let left = panes(&sb.private_sock());
    assert!(!left.contains(&ws[1].1), "worker-2's pane is gone");
    assert!(left.contains(&ws[0].1), "worker-1's pane stays");
}

/// A worker pane whose tag was changed after `up` (someone re-tagged it) is not killed, though
/// no listing looked at it before the kill: the guard refuses, and the confirming listing says
/// why. The worker stays `removing` with the reason.
#[test]
fn a_retagged_worker_pane_is_not_killed() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let (name, pane) = &ws[1];
    let o = tmux_at(
        &sock,
        &[
            "set-option",
            "-p",
            "-t",
            pane,
            "@team_incarnation",
            "someone-else",
        ],
    );
    assert!(o.status.success());
    let o = sb.run(
        "team-scale",
        &["down", "t", "--worker", name, "--force", "--json"],
    );
    assert_code(&o, 3);
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(
        all.contains("incarnation"),
        "the reason names the tag: {all}"
    );
    assert!(panes(&sock).contains(pane), "a re-tagged pane was killed");
}

/// The recycled pane id: the server dies and a new one on the same socket has a pane with the
/// worker's recorded id. The worker ignores hangups, so its supervisor lives on and `down`
/// takes the shortcut; the guard's server identity refuses the kill, and the new server's pane
/// survives.
#[test]
fn a_recycled_pane_id_on_a_new_server_is_not_killed() {
    let sb = Sandbox::new();
    let ws = team(&sb, "trap '' HUP; exec sleep 100000");
    let sock = sb.private_sock();
    let (name, pane) = &ws[1];
    let _ = tmux_at(&sock, &["kill-server"]);
    wait_for("the old server to go", Duration::from_secs(5), || {
        !tmux_at(&sock, &["list-sessions"]).status.success()
    });
    let o = tmux_at(&sock, &["new-session", "-d", "-s", "other", "sleep 100001"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for _ in 0..8 {
        if panes(&sock).contains(pane) {
            break;
        }
        assert!(
            tmux_at(&sock, &["new-window", "-d", "sleep 100001"])
                .status
                .success()
        );
    }
    assert!(
        panes(&sock).contains(pane),
        "the recorded pane id exists again"
    );
    let o = sb.run(
        "team-scale",
        &["down", "t", "--worker", name, "--force", "--json"],
    );
    assert_ne!(o.status.code(), Some(0));
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(all.contains("server_changed"), "{all}");
    assert!(
        panes(&sock).contains(pane),
        "a recycled pane id on a new server was killed"
    );
    kill_server(&sock);
}
