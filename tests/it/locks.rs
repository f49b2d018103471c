//! Locks between two real processes.

use std::time::{Duration, Instant};

use team_core::lock::{self, Holder};
use team_core::paths::TeamName;
use tests::{Sandbox, assert_code};

#[test]
fn a_held_scale_lock_makes_another_process_wait_then_exit_75_naming_the_holder() {
    let sb = Sandbox::new();
    let root = sb.root();
    root.ensure().unwrap();
    let team = TeamName::new("demo").unwrap();
    let guard = lock::acquire(
        &root.scale_lock(&team),
        Duration::ZERO,
        &Holder::me("test-holds"),
    )
    .unwrap();
    let t0 = Instant::now();
    let o = sb.run(
        "team-scale",
        &["init", "demo", "--private", "--wait", "300ms"],
    );
    assert_code(&o, 75);
    assert!(t0.elapsed() >= Duration::from_millis(300));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("test-holds") && err.contains(&std::process::id().to_string()),
        "{err}"
    );
    assert!(
        !root.team_json(&team).exists(),
        "a busy init changed nothing"
    );
    assert!(sb.sockets().is_empty(), "a busy init started no server");
    drop(guard);
    let o = sb.run(
        "team-scale",
        &["init", "demo", "--private", "--wait", "300ms"],
    );
    assert_code(&o, 0);
    assert!(
        root.scale_lock(&team).exists(),
        "lock files are never deleted"
    );
}

#[test]
fn a_dead_holder_leaves_no_stale_lock() {
    let sb = Sandbox::new();
    let root = sb.root();
    root.ensure().unwrap();
    let team = TeamName::new("demo").unwrap();
    // A child process takes the lock with flock(1)-like semantics and dies.
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 9>>'{}'; flock 9; exec sleep 30",
            root.scale_lock(&team).display()
        ))
        .spawn()
        .unwrap();
    // `flock(1)` writes no holder record: whether it holds the lock is asked of the kernel.
    let held = || {
        std::fs::File::open(root.scale_lock(&team))
            .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)))
    };
    let t0 = Instant::now();
    while !held() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(held());
    child.kill().unwrap();
    child.wait().unwrap();
    let o = sb.run("team-scale", &["init", "demo", "--private", "--wait", "2s"]);
    assert_code(&o, 0);
}
