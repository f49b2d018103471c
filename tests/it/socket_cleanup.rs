//! `shutdown` removes the private socket file once its server is gone (issue 15), and never a
//! socket another team's server still answers on, or one a server is being started on.

use std::os::unix::fs::FileTypeExt;

use tests::{Sandbox, assert_code, json_lines, tmux_at};

fn init(sb: &Sandbox, team: &str) {
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                team,
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
}

fn shutdown(sb: &Sandbox, team: &str) -> serde_json::Value {
    let o = sb.run("team-scale", &["shutdown", team, "--grace", "1s", "--json"]);
    assert_code(&o, 0);
    json_lines(&o.stdout).pop().unwrap()
}

fn is_socket(p: &std::path::Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

#[test]
fn shutdown_of_the_last_team_removes_the_socket_file() {
    let sb = Sandbox::new();
    init(&sb, "a");
    assert_code(
        &sb.run("team-scale", &["up", "a", "1", "--ready-timeout", "0"]),
        0,
    );
    let sock = sb.private_sock();
    assert!(is_socket(&sock));
    let sum = shutdown(&sb, "a");
    assert_eq!(sum["socket"], "removed", "{sum}");
    assert!(!sock.exists(), "{} was left behind", sock.display());
    // A later init starts a new server on the same path as usual.
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "a",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    assert!(is_socket(&sock));
    assert_eq!(shutdown(&sb, "a")["socket"], "removed");
}

#[test]
fn a_socket_another_team_still_uses_is_kept() {
    // Teams of one workspace share the private socket: shutting one down must not cut the
    // other off its server.
    let sb = Sandbox::new();
    init(&sb, "a");
    init(&sb, "b");
    let sock = sb.private_sock();
    let sum = shutdown(&sb, "a");
    assert_eq!(sum["socket"], "kept", "{sum}");
    assert!(is_socket(&sock));
    let o = sb.run("team-scale", &["up", "b", "1", "--ready-timeout", "0"]);
    assert_code(&o, 0);
    assert!(tmux_at(&sock, &["list-sessions"]).status.success());
    assert_eq!(shutdown(&sb, "b")["socket"], "removed");
    assert!(!sock.exists());
}

#[test]
fn a_socket_a_server_is_being_started_on_is_kept() {
    // tmux starts a server on a path while holding an exclusive flock on `<path>.lock`; a
    // socket whose start lock is held may be replaced by a live server at any instant.
    let sb = Sandbox::new();
    init(&sb, "a");
    let sock = sb.private_sock();
    let lock_path = std::path::PathBuf::from(format!("{}.lock", sock.display()));
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .unwrap();
    lock.lock().unwrap();
    let sum = shutdown(&sb, "a");
    assert_eq!(sum["socket"], "kept", "{sum}");
    assert!(is_socket(&sock), "removed under a held start lock");
    drop(lock);
    // Once the lock is free, a later shutdown of the same team (already stopped) changes
    // nothing, and a new team on the path works.
    init(&sb, "b");
    assert_eq!(shutdown(&sb, "b")["socket"], "removed");
    assert!(!sock.exists());
}
