//! The process layer against real processes (Linux only; no tmux needed).
//!
//! Every process a test starts is owned by a [`Kids`] guard that kills and reaps it when the
//! test ends, pass or fail: children by their `Child` handle, detached ones through a pidfd
//! after checking their start time. Nothing here kills by name or by process group.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use team_core::process::{
    ProcId, ProcVerdict, Sig, SignalOutcome, StopOutcome, environ_has, find_by_env, prove,
    scan_team_processes, start_time, terminate,
};

const TEAM_VARS: [&str; 6] = [
    "TEAM_OWNER",
    "TEAM_WORKER",
    "TEAM_NAME",
    "TEAM_STATE_DIR",
    "TEAM_WORKSPACE",
    "TEAM_INCARNATION",
];

/// Processes started by one test, killed and reaped on drop.
#[derive(Default)]
struct Kids {
    children: Vec<Child>,
    detached: Vec<ProcId>,
}

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for id in &self.detached {
            kill_detached(*id);
        }
    }
}

/// Kills a process that is not our child, only if it is still the same incarnation.
fn kill_detached(id: ProcId) {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    let Some(pid) = Pid::from_raw(id.pid as i32) else {
        return;
    };
    let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else {
        return;
    };
    if start_time(id.pid).ok().flatten() == Some(id.start_time) {
        let _ = pidfd_send_signal(&fd, Signal::KILL);
    }
}

/// Right after exec, `/proc/<pid>/environ` can read empty for a moment (the kernel records the
/// new environment's place after the parent of a vfork-style spawn resumes). Wait it out.
fn wait_for_environ(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read(format!("/proc/{pid}/environ")).map_or(0, |e| e.len()) == 0 {
        assert!(Instant::now() < deadline, "environ of {pid} stays empty");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until `pid` runs the program `comm` (after an `exec` in a script).
fn wait_for_comm(pid: u32, comm: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        != comm
    {
        assert!(Instant::now() < deadline, "{pid} never runs {comm}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn owner_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn command(program: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = tests::hermetic(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The test may itself run inside a team pane: never let its own TEAM_* leak into children.
    for var in TEAM_VARS {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd
}

impl Kids {
    /// Spawns a child and returns its id (spawn returns after exec, so its environment and
    /// start time are final).
    fn spawn(&mut self, mut cmd: Command) -> ProcId {
        let child = cmd.spawn().expect("spawn");
        let pid = child.id();
        self.children.push(child);
        wait_for_environ(pid);
        let start_time = start_time(pid).unwrap().expect("child alive");
        ProcId { pid, start_time }
    }

    /// Spawns `sh -c script`; the script must `echo ready` once set up. Waits for that line,
    /// then for the process to run `comm` with its environment readable.
    fn spawn_ready(&mut self, script: &str, comm: &str, env: &[(&str, &str)]) -> ProcId {
        let mut cmd = command("sh", &["-c", script], env);
        cmd.stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn sh");
        let out = child.stdout.take().unwrap();
        let pid = child.id();
        self.children.push(child);
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        wait_for_comm(pid, comm);
        wait_for_environ(pid);
        let start_time = start_time(pid).unwrap().expect("child alive");
        ProcId { pid, start_time }
    }

    fn sleeper(&mut self, env: &[(&str, &str)]) -> ProcId {
        self.spawn(command("sleep", &["30"], env))
    }

    fn child(&mut self, pid: u32) -> &mut Child {
        self.children.iter_mut().find(|c| c.id() == pid).unwrap()
    }

    fn running(&mut self, id: ProcId) -> bool {
        self.child(id.pid).try_wait().unwrap().is_none()
            && start_time(id.pid).unwrap() == Some(id.start_time)
    }
}

#[test]
fn prove_owned_not_owned_and_gone() {
    let mut kids = Kids::default();
    let owner = owner_id();
    let id = kids.sleeper(&[("TEAM_OWNER", &owner), ("TEAM_WORKER", "w1")]);

    let (v, proven) = prove(id.pid, Some(id.start_time), &owner, Some("w1"));
    assert_eq!(v, ProcVerdict::Owned);
    let proven = proven.expect("owned comes with a handle");
    assert_eq!(proven.id, id);
    assert!(proven.is_alive());
    assert!(!proven.wait_exit(Duration::from_millis(50)));
    assert_eq!(proven.reprove(), ProcVerdict::Owned);

    // Without a recorded start time, the observed one is recorded.
    let (v, p2) = prove(id.pid, None, &owner, None);
    assert_eq!(v, ProcVerdict::Owned);
    assert_eq!(p2.unwrap().id, id);

    // Another owner, another worker.
    let (v, p) = prove(id.pid, Some(id.start_time), &owner_id(), Some("w1"));
    assert!(matches!(v, ProcVerdict::NotOwned { .. }), "{v:?}");
    assert!(p.is_none());
    let (v, p) = prove(id.pid, Some(id.start_time), &owner, Some("w2"));
    assert!(matches!(v, ProcVerdict::NotOwned { .. }), "{v:?}");
    assert!(p.is_none());

    // A recorded start time that does not match: another incarnation, never signalled.
    let (v, p) = prove(id.pid, Some(id.start_time + 1), &owner, Some("w1"));
    match &v {
        ProcVerdict::NotOwned { reason } => assert!(reason.contains("start time"), "{reason}"),
        other => panic!("expected not_owned, got {other:?}"),
    }
    assert!(p.is_none());
    assert!(kids.running(id));

    // Kill and reap it: the proof and the old handle both say gone.
    kids.child(id.pid).kill().unwrap();
    assert!(proven.wait_exit(Duration::from_secs(5)));
    assert!(!proven.is_alive());
    assert_eq!(proven.signal(Sig::Term).unwrap(), SignalOutcome::Gone);
    kids.child(id.pid).wait().unwrap();
    let (v, p) = prove(id.pid, Some(id.start_time), &owner, Some("w1"));
    assert!(
        v == ProcVerdict::Gone || matches!(v, ProcVerdict::NotOwned { .. }),
        "pid reused or gone, got {v:?}"
    );
    assert!(p.is_none());
    assert_eq!(proven.reprove(), ProcVerdict::Gone);
}

#[test]
fn a_zombie_is_gone() {
    let mut kids = Kids::default();
    let owner = owner_id();
    let id = kids.sleeper(&[("TEAM_OWNER", &owner)]);
    let (_, proven) = prove(id.pid, Some(id.start_time), &owner, None);
    let proven = proven.unwrap();
    kids.child(id.pid).kill().unwrap();
    // Not reaped: the process is a zombie, its pid still taken.
    assert!(proven.wait_exit(Duration::from_secs(5)));
    assert_eq!(start_time(id.pid).unwrap(), Some(id.start_time));
    let (v, p) = prove(id.pid, Some(id.start_time), &owner, None);
    assert_eq!(v, ProcVerdict::Gone);
    assert!(p.is_none());
    assert_eq!(proven.signal(Sig::Kill).unwrap(), SignalOutcome::Gone);
    assert!(!find_by_env(&owner, None).unwrap().found.contains(&id));
}

#[test]
fn a_process_without_the_owner_is_never_ours() {
    let mut kids = Kids::default();
    let owner = owner_id();
    let plain = kids.sleeper(&[]);
    let ours = kids.sleeper(&[("TEAM_OWNER", &owner)]);

    let (v, p) = prove(plain.pid, Some(plain.start_time), &owner, None);
    match &v {
        ProcVerdict::NotOwned { reason } => assert!(reason.contains("no TEAM_OWNER"), "{reason}"),
        other => panic!("expected not_owned, got {other:?}"),
    }
    assert!(p.is_none());
    assert_eq!(
        environ_has(plain.pid, &[("TEAM_OWNER", &owner)]).unwrap(),
        Some(false)
    );
    assert_eq!(
        environ_has(ours.pid, &[("TEAM_OWNER", &owner)]).unwrap(),
        Some(true)
    );

    let scan = find_by_env(&owner, None).unwrap();
    assert_eq!(scan.found, vec![ours]);
    assert!(
        !scan_team_processes()
            .unwrap()
            .found
            .iter()
            .any(|t| t.id == plain)
    );

    // Stopping everything the scan proves leaves the plain process alone.
    let proven: Vec<_> = scan
        .found
        .iter()
        .filter_map(|id| prove(id.pid, Some(id.start_time), &owner, None).1)
        .collect();
    let out = terminate(proven, Duration::from_secs(10));
    assert_eq!(out, vec![(ours, StopOutcome::ExitedAfterTerm)]);
    assert!(kids.running(plain));
}

#[test]
fn special_pids() {
    let owner = owner_id();
    let (v, p) = prove(std::process::id(), None, &owner, None);
    assert!(matches!(v, ProcVerdict::NotOwned { .. }), "{v:?}");
    assert!(p.is_none());
    let (v, _) = prove(0, None, &owner, None);
    assert!(matches!(v, ProcVerdict::Unverifiable { .. }), "{v:?}");
    // Above the kernel's maximum pid_max (2^22): never a process.
    let (v, _) = prove(i32::MAX as u32, None, &owner, None);
    assert_eq!(v, ProcVerdict::Gone);
    assert_eq!(start_time(i32::MAX as u32).unwrap(), None);
    assert_eq!(environ_has(i32::MAX as u32, &[]).unwrap(), None);
    assert!(!team_core::process::boot_id().unwrap().is_empty());
}

#[test]
fn terminate_returns_as_soon_as_all_exited() {
    let mut kids = Kids::default();
    let owner = owner_id();
    let ids: Vec<_> = (0..3)
        .map(|i| kids.sleeper(&[("TEAM_OWNER", &owner), ("TEAM_WORKER", &format!("w{i}"))]))
        .collect();
    let proven: Vec<_> = ids
        .iter()
        .map(|id| prove(id.pid, Some(id.start_time), &owner, None).1.unwrap())
        .collect();
    let grace = Duration::from_secs(20);
    let t0 = Instant::now();
    let out = terminate(proven, grace);
    let elapsed = t0.elapsed();
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    let expected: Vec<_> = ids
        .iter()
        .map(|id| (*id, StopOutcome::ExitedAfterTerm))
        .collect();
    assert_eq!(out, expected);
    for id in ids {
        let status = kids.child(id.pid).wait().unwrap();
        assert_eq!(status.signal(), Some(15));
    }
}

#[test]
fn terminate_kills_what_ignores_term() {
    let mut kids = Kids::default();
    let owner = owner_id();
    // `exec` keeps one process (same pid and start time) with SIGTERM ignored.
    let stubborn = kids.spawn_ready(
        r#"trap "" TERM; echo ready; exec sleep 30"#,
        "sleep",
        &[("TEAM_OWNER", &owner), ("TEAM_WORKER", "w1")],
    );
    let polite = kids.sleeper(&[("TEAM_OWNER", &owner), ("TEAM_WORKER", "w2")]);
    let proven = vec![
        prove(stubborn.pid, Some(stubborn.start_time), &owner, Some("w1"))
            .1
            .unwrap(),
        prove(polite.pid, Some(polite.start_time), &owner, Some("w2"))
            .1
            .unwrap(),
    ];
    let grace = Duration::from_millis(300);
    let t0 = Instant::now();
    let out = terminate(proven, grace);
    assert!(t0.elapsed() >= grace);
    assert_eq!(
        out,
        vec![
            (stubborn, StopOutcome::Killed),
            (polite, StopOutcome::ExitedAfterTerm)
        ]
    );
    assert_eq!(kids.child(stubborn.pid).wait().unwrap().signal(), Some(9));
    assert_eq!(kids.child(polite.pid).wait().unwrap().signal(), Some(15));
    assert_ne!(start_time(stubborn.pid).unwrap(), Some(stubborn.start_time));
}

#[test]
fn terminate_reproves_before_kill() {
    let mut kids = Kids::default();
    let owner = owner_id();
    // On SIGTERM this process execs (same pid, same start time) with another owner id:
    // the re-proof before SIGKILL must notice and leave it alone.
    let changer = kids.spawn_ready(
        r#"trap 'exec env TEAM_OWNER=someone-else sleep 30' TERM; echo ready; while :; do sleep 0.05; done"#,
        "sh",
        &[("TEAM_OWNER", &owner), ("TEAM_WORKER", "w1")],
    );
    let proven = prove(changer.pid, Some(changer.start_time), &owner, Some("w1"))
        .1
        .unwrap();
    let out = terminate(vec![proven], Duration::from_secs(2));
    assert_eq!(out.len(), 1);
    match &out[0] {
        (id, StopOutcome::NotOwnedAnymore { reason }) => {
            assert_eq!(*id, changer);
            assert!(reason.contains("someone-else"), "{reason}");
        }
        other => panic!("expected not_owned_anymore, got {other:?}"),
    }
    assert!(kids.running(changer));
}

#[test]
fn find_by_env_finds_a_detached_process_and_nothing_else() {
    let mut kids = Kids::default();
    let owner = owner_id();
    let env = [
        ("TEAM_OWNER", owner.as_str()),
        ("TEAM_WORKER", "w1"),
        ("TEAM_NAME", "alpha"),
        ("TEAM_STATE_DIR", "/tmp/st"),
        ("TEAM_WORKSPACE", "/tmp/ws"),
    ];
    // `setsid -f` forks: the sleeper is a new session and not our child. It reports its pid.
    let mut cmd = command(
        "setsid",
        &["-f", "sh", "-c", "echo $$; exec sleep 30"],
        &env,
    );
    cmd.stdout(Stdio::piped());
    let mut setsid = cmd.spawn().expect("spawn setsid");
    let mut line = String::new();
    BufReader::new(setsid.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    setsid.wait().unwrap();
    let pid: u32 = line.trim().parse().expect("a pid");
    wait_for_comm(pid, "sleep");
    wait_for_environ(pid);
    let detached = ProcId {
        pid,
        start_time: start_time(pid).unwrap().expect("detached alive"),
    };
    kids.detached.push(detached);

    let other_worker = kids.sleeper(&[("TEAM_OWNER", &owner), ("TEAM_WORKER", "w2")]);
    let other_team = kids.sleeper(&[("TEAM_OWNER", &owner_id()), ("TEAM_WORKER", "w1")]);
    let plain = kids.sleeper(&[]);

    let scan = find_by_env(&owner, Some("w1")).unwrap();
    assert_eq!(scan.found, vec![detached]);
    let mut all = find_by_env(&owner, None).unwrap().found;
    all.sort_by_key(|id| id.pid);
    let mut want = vec![detached, other_worker];
    want.sort_by_key(|id| id.pid);
    assert_eq!(all, want);

    let team = scan_team_processes().unwrap().found;
    let found = team.iter().find(|t| t.id == detached).expect("in the scan");
    assert_eq!(found.owner, owner);
    assert_eq!(found.worker.as_deref(), Some("w1"));
    assert_eq!(found.team.as_deref(), Some("alpha"));
    assert_eq!(found.state_dir.as_deref(), Some("/tmp/st".as_ref()));
    assert_eq!(found.workspace.as_deref(), Some("/tmp/ws".as_ref()));
    assert!(team.iter().any(|t| t.id == other_team));
    assert!(!team.iter().any(|t| t.id == plain));

    // Stop it through the proof.
    let (v, proven) = prove(detached.pid, Some(detached.start_time), &owner, Some("w1"));
    assert_eq!(v, ProcVerdict::Owned);
    let out = terminate(vec![proven.unwrap()], Duration::from_secs(10));
    assert_eq!(out, vec![(detached, StopOutcome::ExitedAfterTerm)]);
    for id in [other_worker, other_team, plain] {
        assert!(kids.running(id));
    }
}

#[test]
fn an_empty_environment_is_unverifiable_not_absent() {
    let mut kids = Kids::default();
    let owner = owner_id();
    // `env -i` execs sleep with no environment at all: nothing can be proven either way.
    let child = command("env", &["-i", "sleep", "30"], &[])
        .spawn()
        .expect("spawn env -i");
    let pid = child.id();
    kids.children.push(child);
    wait_for_comm(pid, "sleep");
    let id = ProcId {
        pid,
        start_time: start_time(pid).unwrap().unwrap(),
    };
    let (v, p) = prove(id.pid, Some(id.start_time), &owner, None);
    assert!(matches!(v, ProcVerdict::Unverifiable { .. }), "{v:?}");
    assert!(p.is_none());
    let scan = find_by_env(&owner, None).unwrap();
    assert!(scan.found.is_empty());
    assert!(scan.unreadable >= 1);
    assert!(kids.running(id));
}

/// `Tree::subtree` (a supervisor's walk at hangup) finds a process's own children through the
/// kernel's child lists, and nothing above it.
#[test]
fn subtree_holds_the_children_and_not_the_parent() {
    let mut c = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let me = std::process::id();
    let t = team_core::proctree::Tree::subtree(me).unwrap();
    let ok = t.node(c.id()).is_some();
    let parent = t.node(me).map(|n| n.ppid);
    let _ = c.kill();
    let _ = c.wait();
    assert!(ok, "the child is in the subtree");
    assert!(
        parent.is_some_and(|pp| t.node(pp).is_none()),
        "the parent is not"
    );
}

#[test]
fn subtree_of_a_single_threaded_process_holds_its_children_and_grandchildren() {
    // `sh` has one thread: its children are read from its one list, without listing tasks.
    let mut sh = std::process::Command::new("sh")
        .args(["-c", "sleep 30 & sh -c 'sleep 30 & wait' & wait"])
        .spawn()
        .unwrap();
    let root = sh.id();
    let kids = || {
        let t = team_core::proctree::Tree::subtree(root).unwrap();
        let mut sleeps = 0;
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        // Count the `sleep`s reachable from the root in the tree's own nodes.
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            for pid in std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            {
                if let Some(n) = t.node(pid)
                    && n.ppid == p
                {
                    if n.comm == "sleep" {
                        sleeps += 1;
                    }
                    stack.push(pid);
                }
            }
        }
        sleeps
    };
    let mut found = 0;
    for _ in 0..100 {
        found = kids();
        if found == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Only this test's own processes, by pid: the shells and their sleeps.
    let t = team_core::proctree::Tree::subtree(root).unwrap();
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| *p != root && t.node(*p).is_some())
        .collect();
    for p in pids {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(p as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    let _ = sh.kill();
    let _ = sh.wait();
    assert_eq!(
        found, 2,
        "a child and a grandchild sleep are in the subtree"
    );
}
