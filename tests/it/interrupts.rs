//! Ctrl-C during `up` and `down` (issue 13): the step in progress is rolled back (or, once
//! committed, finished), every audit intent gets its outcome, the command says what was left and
//! exits 130; a second Ctrl-C exits at once and leaves what a crash leaves, which `status`
//! explains and `reconcile` settles. Signals go to our own child, by pidfd.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::{Sandbox, assert_audit_pairs, assert_code, json_lines};

fn sigint(child: &Child) {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    // Our own unreaped child: its pid cannot have been reused yet.
    let fd = pidfd_open(Pid::from_child(child), PidfdFlags::empty()).unwrap();
    let _ = pidfd_send_signal(&fd, Signal::INT);
}

fn spawn(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = sb.cmd("team-scale");
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

fn workers(sb: &Sandbox) -> Vec<Value> {
    let o = sb.run("team-scale", &["status", "demo", "--json"]);
    assert_code(&o, 0);
    json_lines(&o.stdout)
        .into_iter()
        .filter(|l| l["type"] == "worker")
        .collect()
}

fn panes(sb: &Sandbox) -> usize {
    let o = tests::tmux_at(
        &sb.private_sock(),
        &["list-panes", "-a", "-F", "#{pane_id}"],
    );
    String::from_utf8_lossy(&o.stdout).lines().count()
}

fn team(worker_cmd: &str) -> Sandbox {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &["init", "demo", "--private", "--worker-cmd", worker_cmd],
        ),
        0,
    );
    sb
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// After any interrupt: `status` reads the state, `reconcile` settles it, no worker is left
/// pending or removing, every live worker has its pane and nothing else does, every intent is
/// paired.
fn settles(sb: &Sandbox) {
    let _ = workers(sb);
    assert_code(&sb.run("team-scale", &["reconcile", "demo"]), 0);
    let ws = workers(sb);
    for w in &ws {
        assert_eq!(w["lifecycle"], "active", "{w}");
        assert_eq!(w["liveness"], "live", "{w}");
    }
    assert_eq!(panes(sb), ws.len() + 1, "panes vs workers {ws:?}");
    assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));
}

#[test]
fn ctrl_c_in_up_rolls_back_and_exits_130() {
    let sb = team("exec sleep 100000");
    // Pinned inside the step: the panes exist, the commit has not happened.
    let child = spawn(
        &sb,
        &["up", "demo", "2", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.tagged=sleep1500")],
    );
    std::thread::sleep(Duration::from_millis(700));
    sigint(&child);
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 130);
    let e = stderr(&o);
    assert!(e.contains("interrupted"), "{e}");
    assert!(e.contains("nothing was left half-done"), "{e}");
    assert!(workers(&sb).is_empty());
    assert_eq!(panes(&sb), 1, "the new panes were killed");
    settles(&sb);
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_reconcile_settles() {
    let sb = team("exec sleep 100000");
    let child = spawn(
        &sb,
        &["up", "demo", "2", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.tagged=sleep5000")],
    );
    std::thread::sleep(Duration::from_millis(700));
    let t0 = Instant::now();
    sigint(&child);
    std::thread::sleep(Duration::from_millis(100));
    sigint(&child);
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 130);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // As after a crash: pending reservations with panes, explained by status.
    let ws = workers(&sb);
    assert_eq!(ws.len(), 2);
    assert!(ws.iter().all(|w| w["lifecycle"] == "pending"), "{ws:?}");
    settles(&sb);
    assert!(workers(&sb).is_empty());
}

#[test]
fn ctrl_c_while_down_waits_for_a_drain_undoes_the_marks() {
    let sb = team("exec sleep 100000");
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
    // worker-2 never reported: busy, so down waits for it to drain.
    let child = spawn(
        &sb,
        &[
            "down",
            "demo",
            "--worker",
            "worker-2",
            "--drain-timeout",
            "20s",
        ],
        &[],
    );
    std::thread::sleep(Duration::from_millis(800));
    let t0 = Instant::now();
    sigint(&child);
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 130);
    assert!(t0.elapsed() < Duration::from_secs(3));
    let ws = workers(&sb);
    assert_eq!(ws.len(), 2);
    let w2 = ws.iter().find(|w| w["worker"] == "worker-2").unwrap();
    assert_eq!(w2["lifecycle"], "active");
    assert_ne!(w2["status"], "draining", "{w2}");
    settles(&sb);
}

/// SIGINT at seeded random moments of `up` (delivery included) and `down --force`.
#[test]
fn ctrl_c_at_random_points_of_up_and_down_leaves_state_reconcile_settles() {
    let mut seed: u64 = 0x5eed_1313;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let sb = team("exec sleep 100000");
    for round in 0..5 {
        let delay = next(1200);
        let (args, env): (Vec<&str>, Vec<(&str, &str)>) = if round % 2 == 0 {
            (vec!["up", "demo", "2", "--ready-timeout", "2s"], vec![])
        } else {
            (
                vec!["down", "demo", "1", "--force", "--grace", "1s"],
                vec![],
            )
        };
        let before = workers(&sb).len();
        if args[0] == "down" && before < 2 {
            continue;
        }
        let child = spawn(&sb, &args, &env);
        std::thread::sleep(Duration::from_millis(delay));
        sigint(&child);
        let o = child.wait_with_output().unwrap();
        let code = o.status.code();
        assert!(
            matches!(code, Some(0 | 1 | 3 | 130)),
            "round {round} ({args:?} after {delay} ms): {code:?} {}",
            stderr(&o)
        );
        if code == Some(130) {
            assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
        }
        settles(&sb);
    }
}
