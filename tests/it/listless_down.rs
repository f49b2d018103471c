//! `down` without a listing (`teardown::Seen::Guarded`): when every target runs under its live
//! supervisor, `down` proves each pane only by the guard of its own `kill-pane`, in one tmux
//! call. Each test is an attack on that shortcut: a pane that changed after `up` recorded it
//! must survive, as it does when a listing proves it first.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tests::*;

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

/// The worker's main process: the child of its pane's first process (the supervisor).
fn worker_process(sock: &Path, pane: &str) -> Own {
    let o = tmux_at(sock, &["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let sup = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let mut pid = 0;
    wait_for("the worker's process", Duration::from_secs(10), || {
        pid = std::fs::read_to_string(format!("/proc/{sup}/task/{sup}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    Own::now(pid)
}

/// A pane's first process (its supervisor) and that process's children, by pid.
fn pane_processes(sock: &Path, pane: &str) -> Vec<u32> {
    let o = tmux_at(sock, &["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let sup: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let mut v: Vec<u32> = std::fs::read_to_string(format!("/proc/{sup}/task/{sup}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    v.push(sup);
    v
}

/// A worker pane that someone changed after `up` recorded it is left alone, pane *and*
/// processes, though no listing looked at it before the kill: the guard refuses, the
/// confirming listing says why, and the worker stays `removing` with the reason. (The first
/// listing-free `down` stopped the pane's processes before its kill was refused.)
fn changed_pane_is_left_alone(change: &dyn Fn(&Path, &str), reason: &str) {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let (name, pane) = &ws[1];
    let worker = worker_process(&sock, pane);
    change(&sock, pane);
    let o = sb.run(
        "team-scale",
        &[
            "down", "t", "--worker", name, "--force", "--json", "--grace", "1s",
        ],
    );
    assert_code(&o, 3);
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(all.contains(reason), "the reason says {reason}: {all}");
    assert!(
        panes(&sock).contains(pane),
        "a changed pane was killed: {all}"
    );
    assert!(
        alive(worker),
        "a changed pane's process was signalled: {all}"
    );
    kill_server(&sock);
}

#[test]
fn a_retagged_worker_pane_is_left_alone() {
    changed_pane_is_left_alone(
        &|sock, pane| {
            let o = tmux_at(
                sock,
                &["set-option", "-p", "-t", pane, "@team_incarnation", "x"],
            );
            assert!(o.status.success());
        },
        "incarnation",
    );
}

#[test]
fn an_untagged_worker_pane_is_left_alone() {
    changed_pane_is_left_alone(
        &|sock, pane| {
            let o = tmux_at(sock, &["set-option", "-p", "-u", "-t", pane, "@team_owner"]);
            assert!(o.status.success());
        },
        "tag_missing",
    );
}

#[test]
fn a_worker_pane_moved_to_another_session_is_left_alone() {
    changed_pane_is_left_alone(
        &|sock, pane| {
            let o = tmux_at(sock, &["new-session", "-d", "-s", "mine", "sleep 100001"]);
            assert!(o.status.success());
            let o = tmux_at(sock, &["move-pane", "-d", "-s", pane, "-t", "mine:"]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        },
        "moved",
    );
}

#[test]
fn a_worker_pane_broken_out_to_its_own_window_is_left_alone() {
    changed_pane_is_left_alone(
        &|sock, pane| {
            let o = tmux_at(sock, &["break-pane", "-d", "-s", pane]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        },
        "moved",
    );
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
    // Both workers ignore the hangup of the server's end: theirs to end, after the test.
    let mut ours = pane_processes(&sock, &ws[0].1);
    ours.extend(pane_processes(&sock, pane));
    let _cleanup = KillOnDrop::now(ours);
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

/// A hostile record: worker-2's pane pid and start time edited to point at a lookalike
/// supervisor (its name and a copy of worker-2's arguments, but not `team-scale`), which runs
/// a child of its own. `down` must signal nothing of it: the lookalike proves nothing, and the
/// pane does not match the record.
#[test]
fn a_record_pointing_at_a_lookalike_supervisor_signals_nothing() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let (name, pane) = &ws[1];
    let o = tmux_at(&sock, &["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let sup: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let argv = std::fs::read(format!("/proc/{sup}/cmdline")).unwrap();
    let args: Vec<String> = argv
        .split(|b| *b == 0)
        .skip(1)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let pidfile = sb.dir.path().join("fake.pid");
    let mut fake = sb
        .command(env!("CARGO_BIN_EXE_fake-supervisor"))
        .env("FAKE_PIDFILE", &pidfile)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut guard = KillOnDrop::now([fake.id()]);
    let mut child = 0u32;
    wait_for("the lookalike's child", Duration::from_secs(10), || {
        child = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        child != 0
    });
    let child = Own::now(child);
    guard.0.push(child);
    wait_for("the lookalike's name", Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{}/comm", fake.id()))
            .is_ok_and(|c| c.trim() == "team-supervise")
    });
    let start = team_core::process::start_time(fake.id()).unwrap().unwrap();
    let team_json = sb.root().path().join("teams/t/team.json");
    let mut t: Value = serde_json::from_slice(&std::fs::read(&team_json).unwrap()).unwrap();
    for w in t["workers"].as_array_mut().unwrap() {
        if w["name"] == name.as_str() {
            w["pane"]["pane_pid"] = fake.id().into();
            w["pane"]["process_start"] = start.into();
        }
    }
    std::fs::write(&team_json, serde_json::to_vec_pretty(&t).unwrap()).unwrap();
    let o = sb.run(
        "team-scale",
        &[
            "down", "t", "--worker", name, "--force", "--json", "--grace", "1s",
        ],
    );
    let all = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_ne!(o.status.code(), Some(0), "{all}");
    assert!(alive(child), "the lookalike's child was signalled: {all}");
    assert!(panes(&sock).contains(pane), "{all}");
    drop(guard);
    let _ = fake.wait();
    kill_server(&sock);
}

/// The race of the second black-box round: a worker's pane is moved away while the teardown
/// waits out `--grace` for a process that ignores SIGTERM. The old order (signals, grace,
/// SIGKILL, then the kill of the pane) killed the processes of a pane it then kept, as not
/// ours. Every teardown of supervised workers now kills the pane first, with its proof, so the
/// outcome is one of the two consistent ones: pane and processes both gone, or both kept.
/// `shutdown` lists panes first (no shortcut), so this is the listing path.
#[test]
fn a_pane_moved_during_the_grace_is_never_kept_with_its_processes_killed() {
    let sb = Sandbox::new();
    let ws = team(&sb, "trap '' TERM; exec sleep 100000");
    let sock = sb.private_sock();
    let pane = ws[1].1.clone();
    let worker = worker_process(&sock, &pane);
    let _cleanup = KillOnDrop(vec![worker]);
    let run = sb
        .cmd("team-scale")
        .args(["shutdown", "t", "--json", "--grace", "3s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let _ = tmux_at(&sock, &["break-pane", "-d", "-s", &pane]);
    let o = run.wait_with_output().unwrap();
    let all = String::from_utf8_lossy(&o.stdout);
    let kept = panes(&sock).contains(&pane);
    if kept {
        assert!(alive(worker), "pane kept, its process killed: {all}");
    } else {
        wait_for(
            "the worker's process to end",
            Duration::from_secs(5),
            || !alive(worker),
        );
    }
    kill_server(&sock);
}

/// Round 3 of the black-box attacks: the reaper settles a team's debt (a worker left
/// `removing`), and the pane is moved away between the reaper's scan and its kill. The kill is
/// refused and the pane and its processes are left alone; the reaper reported the pane
/// `killed` (it judged by whether the row it had scanned was still there) and exited 0. It
/// must say what the teardown did: not killed, debt left, exit 3. A fail point holds the
/// teardown right before its kills, so the move lands there every time.
#[test]
fn a_debt_pane_moved_before_the_reapers_kill_is_not_reported_killed() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let (name, pane) = &ws[1];
    let worker = worker_process(&sock, pane);
    // worker-2 becomes debt: its owner tag is changed, so `down` refuses it and it stays
    // `removing`; then the tag is put back, so the reaper can prove it again.
    let owner = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &["display-message", "-p", "-t", pane, "#{@team_owner}"],
        )
        .stdout,
    )
    .trim()
    .to_string();
    assert!(
        tmux_at(&sock, &["set-option", "-p", "-t", pane, "@team_owner", "x"])
            .status
            .success()
    );
    let o = sb.run("team-scale", &["down", "t", "--worker", name, "--force"]);
    assert_code(&o, 3);
    assert!(
        tmux_at(
            &sock,
            &["set-option", "-p", "-t", pane, "@team_owner", &owner]
        )
        .status
        .success()
    );
    let o = tmux_at(&sock, &["new-session", "-d", "-s", "mine", "sleep 100001"]);
    assert!(o.status.success());
    let scope = sb.dir.path().display().to_string();
    let run = sb
        .cmd("team-reap")
        .args(["--only-under", &scope, "--json", "--grace", "1s"])
        .env("TEAM_FAILPOINTS", "settle.before_kill=sleep4000")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The move lands between the reaper's proof and its kill: after its pre-kill intent for
    // the pane is in the audit log (written after the proof), during the fail point's pause.
    let log = sb.ws.join(".team/audit.jsonl");
    wait_for(
        "the reaper's intent for the pane",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&log).is_ok_and(|t| {
                t.lines().any(|l| {
                    serde_json::from_str::<Value>(l).is_ok_and(|r| {
                        r["caller"] == "team-reap"
                            && r["stage"] == "intent"
                            && l.contains(&format!("\"{pane}\""))
                    })
                })
            })
        },
    );
    let o = tmux_at(&sock, &["move-pane", "-d", "-s", pane, "-t", "mine:"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run.wait_with_output().unwrap();
    let lines = json_lines(&o.stdout);
    assert!(
        panes(&sock).contains(pane),
        "the moved pane was killed: {lines:?}"
    );
    assert!(
        alive(worker),
        "the moved pane's process was signalled: {lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l["pane_id"] == pane.as_str() && l["action"] == "killed"),
        "a pane the teardown kept is reported killed: {lines:?}"
    );
    assert_eq!(o.status.code(), Some(3), "debt is left: {lines:?}");
    kill_server(&sock);
}

/// Attack: something else answers on the team's socket (the real server moved aside, still
/// running), saying "done" to every command and listing no pane at all, or only lines that are
/// not panes of this call. Such an answer proves nothing: no worker is taken for gone, and no
/// process of a live pane is signalled, by `down`, `reconcile` or `shutdown`.
#[test]
fn an_empty_answer_on_the_socket_proves_no_pane_gone() {
    for out in [&b""[..], b"x\n", b"%1\t123\t$0\n"] {
        let sb = Sandbox::new();
        let ws = team(&sb, "exec sleep 100000");
        let sock = sb.private_sock();
        let procs: Vec<Own> = pane_processes(&sock, &ws[1].1)
            .into_iter()
            .map(Own::now)
            .collect();
        let aside = sb.dir.path().join("real-server");
        std::fs::rename(&sock, &aside).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        impostor_tmux(&sock, stop.clone(), out);
        let down = sb.run(
            "team-scale",
            &[
                "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
            ],
        );
        let reconcile = sb.run("team-scale", &["reconcile", "t", "--grace", "1s"]);
        let shutdown = sb.run("team-scale", &["shutdown", "t", "--grace", "1s"]);
        let alive_after: Vec<Own> = procs.iter().copied().filter(|p| alive(*p)).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        let _ = std::fs::remove_file(&sock);
        std::fs::rename(&aside, &sock).unwrap();
        assert_eq!(
            alive_after,
            procs,
            "answer {out:?}: worker-2's processes were signalled\ndown: {}{}\nreconcile: {}{}\nshutdown: {}{}",
            String::from_utf8_lossy(&down.stdout),
            String::from_utf8_lossy(&down.stderr),
            String::from_utf8_lossy(&reconcile.stdout),
            String::from_utf8_lossy(&reconcile.stderr),
            String::from_utf8_lossy(&shutdown.stdout),
            String::from_utf8_lossy(&shutdown.stderr)
        );
        assert!(
            panes(&sock).contains(&ws[1].1),
            "answer {out:?}: worker-2's pane is still there"
        );
        assert_ne!(
            down.status.code(),
            Some(0),
            "answer {out:?}: down removed nothing"
        );
    }
}

/// Every process below `pid` (its subtree), by pid.
fn descendants(pid: u32) -> Vec<u32> {
    let t = team_core::proctree::Tree::subtree(pid).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| *p != pid && t.node(*p).is_some())
        .collect()
}

/// Kills, on drop, every process below each supervisor given (by pid, a few rounds, since the
/// forkers start new ones until they are gone themselves).
struct ForkersDown(Vec<u32>);

impl Drop for ForkersDown {
    fn drop(&mut self) {
        for _ in 0..20 {
            let mut left = Vec::new();
            for &s in &self.0 {
                left.extend(
                    descendants(s)
                        .into_iter()
                        .map(Own::now)
                        .filter(|p| alive(*p)),
                );
            }
            if left.is_empty() {
                return;
            }
            drop(KillOnDrop(left));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Attack: a worker that keeps starting detached processes that ignore SIGTERM and SIGHUP,
/// one every 0.2 s, so new ones appear during `--grace`. `down` must not call the worker
/// removed while any of them runs: it stops the late ones too, or reports cleanup debt.
#[test]
fn processes_started_during_the_grace_are_stopped_too() {
    let sb = Sandbox::new();
    let ws = team(
        &sb,
        "trap '' TERM HUP; while :; do setsid sh -c 'exec sleep 7111' & sleep 0.2; done",
    );
    let sock = sb.private_sock();
    let sup = pane_processes(&sock, &ws[1].1).pop().unwrap();
    // Both workers run the forker and ignore the hangup of their pane: whatever happens
    // below, every process of both ends with the test (by pid, our own descendants).
    let _reap = ForkersDown(vec![pane_processes(&sock, &ws[0].1).pop().unwrap(), sup]);
    wait_for("a detached child", Duration::from_secs(10), || {
        descendants(sup).len() >= 3
    });
    let o = sb.run(
        "team-scale",
        &[
            "down", "t", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    // Give a supervisor with nothing left time to exit.
    let mut left = Vec::new();
    for _ in 0..40 {
        left = descendants(sup)
            .into_iter()
            .map(Own::now)
            .filter(|p| alive(*p))
            .collect();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Our own leftovers, by pid, whatever the outcome.
    let _g = KillOnDrop(left.clone());
    if o.status.code() == Some(0) {
        assert_eq!(
            left,
            Vec::<Own>::new(),
            "down said worker-2 was removed while processes of it still run: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    } else {
        assert_eq!(
            o.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A worker whose process has exited (its pane kept, dead, by remain-on-exit) does no work and
/// can no longer report: `down` without `--force` takes it at once, named or counted, instead
/// of waiting for its drain and exiting 75.
#[test]
fn down_takes_a_worker_whose_process_exited_without_a_drain() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let o = sb.run("team-scale", &["up", "t", "1", "--json"]);
    assert_code(&o, 0);
    let third = json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "worker")
        .and_then(|l| l["pane_id"].as_str().map(String::from))
        .unwrap();
    // Our own workers' processes end (by pid): worker-2's and worker-3's.
    for pane in [&ws[1].1, &third] {
        let pid = worker_process(&sock, pane);
        pid.signal(rustix::process::Signal::TERM);
        wait_for(
            "the worker's process to end",
            Duration::from_secs(10),
            || !alive(pid),
        );
    }
    // Named.
    let t0 = std::time::Instant::now();
    let o = sb.run(
        "team-scale",
        &["down", "t", "--worker", "worker-2", "--drain-timeout", "5s"],
    );
    assert_code(&o, 0);
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "it waited for a drain"
    );
    // Counted: worker-1 never reported (busy), worker-3 exited, so worker-3 goes.
    let t0 = std::time::Instant::now();
    let o = sb.run(
        "team-scale",
        &["down", "t", "1", "--drain-timeout", "5s", "--json"],
    );
    assert_code(&o, 0);
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "it waited for a drain"
    );
    let o = sb.run("team-scale", &["status", "t", "--json"]);
    let left: Vec<String> = json_lines(&o.stdout)
        .into_iter()
        .filter(|l| l["type"] == "worker")
        .map(|l| l["worker"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, ["worker-1"]);
    kill_server(&sock);
}

/// Attack: a `status.json` in a busy worker's directory that reports `idle` for another worker,
/// or for another incarnation (copied from elsewhere, or carried by a cloned `.team/`). It is
/// no report of this worker's: a `down` without `--force` still waits for it and removes
/// nothing, and `status` shows no report for it.
#[test]
fn a_report_naming_another_worker_or_incarnation_does_not_make_a_worker_idle() {
    let sb = Sandbox::new();
    let ws = team(&sb, "exec sleep 100000");
    let sock = sb.private_sock();
    let name = &ws[1].0;
    let t: Value =
        serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/t/team.json")).unwrap())
            .unwrap();
    let own_inc = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name.as_str())
        .unwrap()["incarnation"]
        .as_str()
        .unwrap()
        .to_string();
    let path = sb
        .ws
        .join(format!(".team/teams/t/workers/{name}/status.json"));
    for (worker, inc) in [
        (ws[0].0.as_str(), own_inc.as_str()),
        (name.as_str(), "00000000-0000-4000-8000-000000000000"),
    ] {
        std::fs::write(
            &path,
            format!(
                r#"{{"schema_version":1,"worker":"{worker}","incarnation":"{inc}","state":"idle","note":"forged","updated_at":"2026-12-01T20:19:34.689Z","before_drain":null}}"#
            ),
        )
        .unwrap();
        let o = sb.run("team-scale", &["status", "t", "--json"]);
        assert_code(&o, 0);
        let row = json_lines(&o.stdout)
            .into_iter()
            .find(|l| l["type"] == "worker" && l["worker"] == name.as_str())
            .unwrap();
        assert_eq!(row["status"], Value::Null, "a forged report shown: {row}");
        let o = sb.run(
            "team-scale",
            &["down", "t", "--worker", name, "--drain-timeout", "1s"],
        );
        assert_code(&o, 75);
        let o = sb.run("team-scale", &["status", "t", "--json"]);
        let left = json_lines(&o.stdout)
            .into_iter()
            .filter(|l| l["type"] == "worker")
            .count();
        assert_eq!(left, 2, "a worker was removed on a forged report");
    }
    kill_server(&sock);
}
