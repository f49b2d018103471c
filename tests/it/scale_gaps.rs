//! Safety gaps the other suites left open: an adopted leader at shutdown, another team's pane
//! in our session, `not_owned` processes, an up rollback that meets an unprovable pane, and a
//! recycled pane id for a `pending` worker. All against real tmux on sockets the tests start.
//!
//! Every test has its own temp dir (TMUX_TMPDIR inside it); TMUX/TMUX_PANE are removed from
//! every child except where a test sets them to a server it started itself; every server the
//! test started (its own sockets and every socket under `<tmp>/tt/`) is killed with
//! `kill-server -S <socket>` when the fixture drops, also on panic.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// team-scale, built once by the harness.
fn bin() -> PathBuf {
    tests::bin("team-scale")
}

struct Fx {
    dir: tempfile::TempDir,
    ws: PathBuf,
    tt: PathBuf,
    /// Sockets of servers the test started outside `tt`.
    own: RefCell<Vec<PathBuf>>,
}

impl Drop for Fx {
    fn drop(&mut self) {
        let mut socks = self.own.borrow().clone();
        if let Ok(rd) = std::fs::read_dir(&self.tt) {
            for d in rd.flatten() {
                if let Ok(rd2) = std::fs::read_dir(d.path()) {
                    socks.extend(rd2.flatten().map(|e| e.path()));
                }
            }
        }
        for s in socks {
            let _ = raw_tmux(&s, &["kill-server"]);
        }
    }
}

/// tmux on the socket `sock`, never the caller's server.
fn raw_tmux(sock: &Path, args: &[&str]) -> Output {
    Command::new("tmux")
        .arg("-S")
        .arg(sock)
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn all(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// Whether the process `pid` with start time `start` still runs (a zombie does not).
fn alive(pid: u64, start: u64) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let rest = s.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[0] != "Z" && f[19].parse::<u64>().unwrap() == start
}

fn start_time(pid: u64) -> u64 {
    team_core::process::start_time(pid as u32)
        .unwrap()
        .expect("process runs")
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let tt = dir.path().join("tt");
        std::fs::create_dir_all(&tt).unwrap();
        Fx {
            dir,
            ws,
            tt,
            own: RefCell::new(Vec::new()),
        }
    }

    fn cmd(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        let mut c = tests::hermetic(bin());
        c.arg("--workspace")
            .arg(&self.ws)
            .args(args)
            .current_dir(&self.ws)
            .env("TMUX_TMPDIR", &self.tt)
            .env("TEAM_TMUX_CONFIG", "/dev/null");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.cmd(args, &[]);
        assert_eq!(code(&o), 0, "{args:?}: {}", all(&o));
        text(&o.stdout)
    }

    fn init_private(&self, worker_cmd: &str) {
        self.init_private_with(worker_cmd, &[]);
    }

    fn init_private_with(&self, worker_cmd: &str, extra: &[&str]) {
        let mut a = vec![
            "init",
            "demo",
            "--private",
            "--max-workers",
            "8",
            "--leader-cmd",
            "exec sleep 100000",
            "--worker-cmd",
            worker_cmd,
        ];
        a.extend_from_slice(extra);
        self.ok(&a);
    }

    fn team_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.ws.join(".team/teams/demo/team.json")).unwrap())
            .unwrap()
    }

    fn edit_team(&self, f: impl FnOnce(&mut Value)) {
        let p = self.ws.join(".team/teams/demo/team.json");
        let mut t = self.team_json();
        f(&mut t);
        std::fs::write(&p, serde_json::to_vec_pretty(&t).unwrap()).unwrap();
    }

    fn worker(&self, name: &str) -> Option<Value> {
        self.team_json()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == name)
            .cloned()
    }

    fn endpoint(&self) -> PathBuf {
        PathBuf::from(self.team_json()["endpoint"].as_str().unwrap())
    }

    /// tmux on the team's server.
    fn tmux(&self, args: &[&str]) -> String {
        let o = raw_tmux(&self.endpoint(), args);
        assert!(o.status.success(), "tmux {args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    }

    /// `pane_id -> pane_pid` of every pane on the team's server.
    fn panes(&self) -> Vec<(String, u64)> {
        let o = raw_tmux(
            &self.endpoint(),
            &["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"],
        );
        text(&o.stdout)
            .lines()
            .map(|l| {
                let (a, b) = l.split_once(' ').unwrap();
                (a.to_string(), b.parse().unwrap())
            })
            .collect()
    }

    fn has_pane(&self, id: &str) -> bool {
        self.panes().iter().any(|(p, _)| p == id)
    }

    /// Starts a tmux server of the test's own on `<tmp>/<name>`; returns the socket, the server
    /// pid, and the first pane's id.
    fn own_server(&self, name: &str) -> (PathBuf, u64, String) {
        let sock = self.dir.path().join(name);
        self.own.borrow_mut().push(sock.clone());
        let o = Command::new("tmux")
            .arg("-S")
            .arg(&sock)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "mine",
                "-x",
                "200",
                "-y",
                "50",
            ])
            .args(["-P", "-F", "#{pane_id} #{pid}", "exec sleep 100000"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        let (pane, pid) = out.trim().split_once(' ').unwrap();
        (sock, pid.parse().unwrap(), pane.to_string())
    }
}

fn pane_of(w: &Value) -> (String, u64, u64) {
    let p = &w["pane"];
    (
        p["pane_id"].as_str().unwrap().to_string(),
        p["pane_pid"].as_u64().unwrap(),
        p["process_start"].as_u64().unwrap(),
    )
}

/// Case 1: `shutdown` of a team whose leader pane was adopted leaves that pane exactly as it was.
#[test]
fn shutdown_leaves_an_adopted_leader_untouched() {
    let fx = Fx::new();
    let (sock, server_pid, leader) = fx.own_server("sock");
    let leader_pid: u64 = text(
        &raw_tmux(
            &sock,
            &["display-message", "-p", "-t", &leader, "#{pane_pid}"],
        )
        .stdout,
    )
    .trim()
    .parse()
    .unwrap();
    let leader_start = start_time(leader_pid);
    let tmux_env = format!("{},{server_pid},0", sock.display());
    let o = fx.cmd(
        &[
            "init",
            "demo",
            "--max-workers",
            "4",
            "--worker-cmd",
            "exec cat",
        ],
        &[("TMUX", &tmux_env), ("TMUX_PANE", &leader)],
    );
    assert_eq!(code(&o), 0, "{}", all(&o));
    let t = fx.team_json();
    assert_eq!(t["private_server"], false, "{t}");
    assert_eq!(t["leader"]["created_by_tools"], false);
    assert_eq!(t["leader"]["pane"]["pane_id"], leader.as_str());
    assert_eq!(fx.endpoint(), sock);

    fx.ok(&["up", "demo", "1", "--ready-timeout", "0"]);
    let (wpane, wpid, wstart) = pane_of(&fx.worker("worker-1").unwrap());
    assert!(fx.has_pane(&wpane) && alive(wpid, wstart));

    let o = fx.cmd(&["shutdown", "demo", "--grace", "1s"], &[]);
    // The leader: same pane, same process.
    let panes = fx.panes();
    assert_eq!(panes, vec![(leader.clone(), leader_pid)], "{panes:?}");
    assert!(
        alive(leader_pid, leader_start),
        "the adopted leader's process is gone"
    );
    assert_eq!(code(&o), 0, "{}", all(&o));
    assert!(
        text(&o.stdout).contains("leader pane: adopted"),
        "{}",
        all(&o)
    );
    // The worker: gone, pane and process.
    assert!(!fx.has_pane(&wpane));
    assert!(!alive(wpid, wstart));
    let t = fx.team_json();
    assert_eq!(t["state"], "stopped");
    assert_eq!(t["workers"], serde_json::json!([]));
}

/// Case 2: a pane of another team (same workspace, same team name, same worker name, even the
/// same incarnation and op tags, only another owner), split into our own session, survives
/// `down`, `reconcile` (also when it is the only pane that carries a pane-less removing
/// worker's tags) and `shutdown`.
#[test]
fn another_teams_pane_in_our_session_is_never_killed() {
    let fx = Fx::new();
    fx.init_private("exec cat");
    fx.ok(&["up", "demo", "3", "--ready-timeout", "0"]);
    let t = fx.team_json();
    let leader = t["leader"]["pane"]["pane_id"].as_str().unwrap().to_string();
    let w1 = fx.worker("worker-1").unwrap();
    let w1pane = pane_of(&w1).0;
    let w3pane = pane_of(&fx.worker("worker-3").unwrap()).0;
    let other = uuid::Uuid::new_v4().to_string();
    let foreign = fx
        .tmux(&[
            "split-window",
            "-d",
            "-t",
            &leader,
            "-P",
            "-F",
            "#{pane_id}",
            "exec sleep 100000",
        ])
        .trim()
        .to_string();
    let ws = fx.ws.display().to_string();
    for (k, v) in [
        ("@team_owner", other.as_str()),
        ("@team_worker", "worker-1"),
        ("@team_incarnation", w1["incarnation"].as_str().unwrap()),
        ("@team_op", w1["op_id"].as_str().unwrap()),
        ("@team_name", "demo"),
        ("@team_workspace", ws.as_str()),
    ] {
        fx.tmux(&["set-option", "-p", "-t", &foreign, k, v]);
    }
    let fpid = fx
        .panes()
        .into_iter()
        .find(|(p, _)| *p == foreign)
        .unwrap()
        .1;
    let fstart = start_time(fpid);
    let session = |p: &str| fx.tmux(&["display-message", "-p", "-t", p, "#{session_id}"]);
    assert_eq!(session(&foreign), session(&leader), "not in our session");
    let foreign_intact = |what: &str| {
        assert!(
            fx.panes().contains(&(foreign.clone(), fpid)),
            "{what} killed the other team's pane"
        );
        assert!(
            alive(fpid, fstart),
            "{what} signalled the other team's process"
        );
    };

    // A worker that never reported is busy: worker-3 reports idle first.
    fx.ok(&[
        "worker-status",
        "demo",
        "--worker",
        "worker-3",
        "--state",
        "idle",
    ]);
    fx.ok(&["down", "demo", "1", "--grace", "1s"]);
    assert!(!fx.has_pane(&w3pane), "down removed worker-3");
    foreign_intact("down");

    // worker-1's real pane is killed out of band, and its record loses its pane: the only
    // pane carrying worker-1's name and incarnation is now the other team's.
    fx.tmux(&["kill-pane", "-t", &w1pane]);
    fx.edit_team(|t| {
        let w = &mut t["workers"][0];
        assert_eq!(w["name"], "worker-1");
        w["lifecycle"] = "removing".into();
        w["pane"] = Value::Null;
    });
    let o = fx.cmd(&["reconcile", "demo", "--grace", "1s"], &[]);
    assert_eq!(code(&o), 0, "{}", all(&o));
    assert!(fx.worker("worker-1").is_none());
    foreign_intact("reconcile");

    let o = fx.cmd(&["shutdown", "demo", "--grace", "1s"], &[]);
    assert_eq!(code(&o), 0, "{}", all(&o));
    assert!(
        !fx.has_pane(&leader),
        "shutdown kills the leader the tools made"
    );
    foreign_intact("shutdown");
    assert_eq!(fx.panes().len(), 1, "{:?}", fx.panes());
    assert_eq!(fx.team_json()["state"], "stopped");
}

/// 3a. A worker whose recorded pane process start time is wrong (everything else matches): its
/// process is `not_owned`, never signalled, its pane never killed; the worker stays `removing`
/// with the reason, and every command says so with exit 3.
#[test]
fn wrong_process_start_is_not_owned_and_never_signalled() {
    let fx = Fx::new();
    fx.init_private("exec cat");
    fx.ok(&["up", "demo", "2", "--ready-timeout", "0"]);
    let (pane, pid, start) = pane_of(&fx.worker("worker-2").unwrap());
    assert!(alive(pid, start));
    fx.edit_team(|t| {
        let p = &mut t["workers"][1]["pane"];
        assert_eq!(p["pane_id"], pane.as_str());
        p["process_start"] = (start + 1).into();
    });
    let o = fx.cmd(
        &[
            "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
        &[],
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid, start), "a not_owned process was signalled");
    assert!(
        fx.panes().contains(&(pane.clone(), pid)),
        "its pane was killed"
    );
    assert_eq!(code(&o), 3, "{}", all(&o));
    assert!(all(&o).contains("not_owned"), "{}", all(&o));
    let w = fx.worker("worker-2").unwrap();
    assert_eq!(w["lifecycle"], "removing");
    let reasons = w["removal_reasons"].to_string();
    assert!(reasons.contains("not_owned"), "{reasons}");
    // reconcile and shutdown agree and leave it alone too.
    for args in [
        &["reconcile", "demo", "--grace", "1s"][..],
        &["shutdown", "demo", "--grace", "1s"],
    ] {
        let o = fx.cmd(args, &[]);
        assert_eq!(code(&o), 3, "{args:?}: {}", all(&o));
        assert!(all(&o).contains("not_owned"), "{args:?}: {}", all(&o));
        std::thread::sleep(Duration::from_millis(300));
        assert!(alive(pid, start), "{args:?} signalled a not_owned process");
        assert!(
            fx.panes().contains(&(pane.clone(), pid)),
            "{args:?} killed its pane"
        );
        assert_eq!(fx.worker("worker-2").unwrap()["lifecycle"], "removing");
    }
    // worker-1 was proven and removed by shutdown; the leader stays while a worker remains.
    assert!(fx.worker("worker-1").is_none());
    let leader = fx.team_json()["leader"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fx.has_pane(&leader));
}

/// 3b. An `active` worker whose recorded pane pid (and start time) point at an unrelated live
/// process of the test's is never signalled. Environment proves nothing either way: worker-2's
/// process dropped `TEAM_OWNER` from its environment, yet it runs below worker-2's supervisor,
/// so it is worker-2's and ends with it.
#[test]
fn processes_are_judged_by_ancestry_not_by_their_environment() {
    let fx = Fx::new();
    // worker-2's process drops TEAM_OWNER from its environment; the others keep it.
    fx.init_private(
        r#"if [ "$TEAM_WORKER" = worker-2 ]; then exec env -u TEAM_OWNER sleep 100007; fi; exec cat"#,
    );
    fx.ok(&["up", "demo", "3", "--ready-timeout", "0"]);

    // An unrelated process of the test's, recorded as worker-3's pane process.
    let mut unrelated = Command::new("sleep")
        .arg("100008")
        .env_remove("TEAM_OWNER")
        .env_remove("TEAM_WORKER")
        .spawn()
        .unwrap();
    struct Reap<'a>(&'a mut std::process::Child);
    impl Drop for Reap<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let upid = u64::from(unrelated.id());
    let ustart = start_time(upid);
    let unrelated = Reap(&mut unrelated);
    fx.edit_team(|t| {
        let p = &mut t["workers"][2]["pane"];
        p["pane_pid"] = upid.into();
        p["process_start"] = ustart.into();
    });
    // worker-2's process: the child of its pane's supervisor, without TEAM_OWNER once exec'd.
    let (_p2, sup2, _) = pane_of(&fx.worker("worker-2").unwrap());
    let t0 = Instant::now();
    let child2 = loop {
        let kids = std::fs::read_to_string(format!("/proc/{sup2}/task/{sup2}/children"))
            .unwrap_or_default();
        let found = kids.split_whitespace().find_map(|k| {
            let k: u64 = k.parse().ok()?;
            std::fs::read(format!("/proc/{k}/cmdline"))
                .ok()?
                .starts_with(b"sleep\x00100007")
                .then_some(k)
        });
        if let Some(k) = found {
            break k;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "worker-2 never exec'd"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let start2 = start_time(child2);
    let environ = std::fs::read(format!("/proc/{child2}/environ")).unwrap();
    assert!(
        !environ
            .split(|b| *b == 0)
            .any(|v| v.starts_with(b"TEAM_OWNER="))
    );

    let o = fx.cmd(
        &[
            "down", "demo", "--worker", "worker-3", "--force", "--grace", "1s",
        ],
        &[],
    );
    assert_eq!(code(&o), 3, "worker-3: {}", all(&o));
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(upid, ustart), "an unrelated process was signalled");
    assert_eq!(fx.worker("worker-3").unwrap()["lifecycle"], "removing");
    let r3 = fx.worker("worker-3").unwrap()["removal_reasons"].to_string();
    assert!(r3.contains("pane_pid_changed"), "{r3}");

    let o = fx.cmd(
        &[
            "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
        &[],
    );
    // Exit 3: worker-3's debt is still there (reported as an earlier leftover).
    assert_eq!(code(&o), 3, "worker-2: {}", all(&o));
    assert!(all(&o).contains("removed worker-2"), "{}", all(&o));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !alive(child2, start2),
        "worker-2's process, below its supervisor, was ended"
    );
    assert!(fx.worker("worker-2").is_none());
    for args in [
        &["reconcile", "demo", "--grace", "1s"][..],
        &["shutdown", "demo", "--grace", "1s"],
    ] {
        let o = fx.cmd(args, &[]);
        assert_eq!(code(&o), 3, "{args:?}: {}", all(&o));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            alive(upid, ustart),
            "{args:?} signalled an unrelated process"
        );
    }
    assert!(unrelated.0.try_wait().unwrap().is_none());
}

/// Case 4: An `up` that fails after its panes exist rolls back what it can prove and leaves alone a
/// new pane that no longer proves ours (its worker re-tagged or respawned its own pane on
/// start): exit 3, that pane untouched and its worker `removing` with the reason, the other new
/// panes killed, `next_worker_index` not rewound.
#[test]
fn up_rollback_leaves_an_unprovable_new_pane_alone() {
    let retag = r#"tmux -S "${TMUX%%,*}" set-option -p -t "$TMUX_PANE" @team_incarnation forged"#;
    let respawn = r#"tmux -S "${TMUX%%,*}" respawn-pane -k -t "$TMUX_PANE" 'exec sleep 100009'"#;
    for (what, act, reason) in [
        ("re-tagged", retag, "tag_mismatch"),
        ("respawned", respawn, "pane_pid_changed"),
    ] {
        let fx = Fx::new();
        fx.init_private_with(
            &format!(
                r#"if [ "$TEAM_WORKER" = worker-2 ]; then {act}; fi; echo READY-$TEAM_WORKER; exec cat"#
            ),
            &["--ready-pattern", "READY-"],
        );
        let before = fx.panes();
        let o = fx.cmd(
            &["up", "demo", "3", "--ready-timeout", "2s"],
            // The pause gives worker-2 time to change its pane before the rollback looks at it
            // (the premise of this test); the error comes right after it.
            &[("TEAM_FAILPOINTS", "up.tagged=sleep1500,up.ready=error")],
        );
        assert_eq!(code(&o), 3, "{what}: {}", all(&o));
        assert!(all(&o).contains("up.ready"), "{what}: {}", all(&o));
        assert!(all(&o).contains("worker-2"), "{what}: {}", all(&o));
        let t = fx.team_json();
        assert_eq!(
            t["next_worker_index"], 4,
            "{what}: the index is never rewound"
        );
        let ws = t["workers"].as_array().unwrap();
        assert_eq!(ws.len(), 1, "{what}: {ws:?}");
        let w2 = &ws[0];
        assert_eq!(w2["name"], "worker-2");
        assert_eq!(w2["lifecycle"], "removing");
        let reasons = w2["removal_reasons"].to_string();
        assert!(reasons.contains(reason), "{what}: {reasons}");
        // The unprovable pane is untouched; every other new pane was killed.
        let p2 = w2["pane"]["pane_id"].as_str().unwrap().to_string();
        let panes = fx.panes();
        let (_, pid2) = panes
            .iter()
            .find(|(p, _)| *p == p2)
            .cloned()
            .unwrap_or_else(|| panic!("{what}: the unprovable pane was killed: {panes:?}"));
        let start2 = start_time(pid2);
        let mut expect = before.clone();
        expect.push((p2.clone(), pid2));
        assert_eq!(
            panes, expect,
            "{what}: the other new panes were not rolled back"
        );
        for n in ["worker-1", "worker-3"] {
            assert!(
                !fx.ws.join(".team/teams/demo/workers").join(n).exists(),
                "{what}: {n}'s dir left"
            );
        }
        // reconcile agrees: still unprovable, still recorded, still untouched.
        let o = fx.cmd(&["reconcile", "demo", "--grace", "1s"], &[]);
        assert_eq!(code(&o), 3, "{what}: {}", all(&o));
        std::thread::sleep(Duration::from_millis(200));
        assert!(fx.panes().contains(&(p2.clone(), pid2)), "{what}");
        assert!(alive(pid2, start2), "{what}: its process was signalled");
        assert_eq!(fx.worker("worker-2").unwrap()["lifecycle"], "removing");
    }
}

/// Case 5: `up` crashes right after its split (the reservations are `pending`, with no pane
/// recorded); the tmux server is then restarted and the new server happens to have panes with
/// the same `%N`, carrying the very same tags. `reconcile` must not kill them, must say why and
/// exit non-zero, and must keep the workers recorded.
#[test]
fn reconcile_of_pending_workers_spares_recycled_tagged_panes() {
    let fx = Fx::new();
    let before = crash_then_recycle(&fx);
    for round in 0..2 {
        let o = fx.cmd(&["reconcile", "demo", "--grace", "1s"], &[]);
        assert_ne!(code(&o), 0, "round {round}: {}", all(&o));
        assert!(
            all(&o).contains("server_changed"),
            "round {round}: {}",
            all(&o)
        );
        assert_spared(&fx, &before, &format!("reconcile round {round}"));
        for w in fx.team_json()["workers"].as_array().unwrap() {
            assert_eq!(w["lifecycle"], "removing", "{w}");
            assert!(
                w["removal_reasons"].to_string().contains("server_changed"),
                "{w}"
            );
        }
    }
    // A later up does not kill them either (and cannot split from the old server's leader).
    let o = fx.cmd(&["up", "demo", "1", "--ready-timeout", "0"], &[]);
    assert_ne!(code(&o), 0, "{}", all(&o));
    assert_spared(&fx, &before, "up after reconcile");

    // The same, when the next `up` is what finds the abandoned reservations.
    let fx = Fx::new();
    let before = crash_then_recycle(&fx);
    let o = fx.cmd(&["up", "demo", "1", "--ready-timeout", "0"], &[]);
    assert_ne!(code(&o), 0, "{}", all(&o));
    assert!(all(&o).contains("server_changed"), "{}", all(&o));
    assert_spared(&fx, &before, "up");
    for w in fx.team_json()["workers"].as_array().unwrap() {
        assert_eq!(w["lifecycle"], "removing", "{w}");
        assert!(
            w["removal_reasons"].to_string().contains("server_changed"),
            "{w}"
        );
    }
    let o = fx.cmd(&["reconcile", "demo", "--grace", "1s"], &[]);
    assert_ne!(code(&o), 0, "{}", all(&o));
    assert_spared(&fx, &before, "reconcile after up");
}

/// No pane of `before` was killed or re-spawned, no process signalled, and both reservations
/// are still recorded.
fn assert_spared(fx: &Fx, before: &[(String, u64)], what: &str) {
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(fx.panes(), before, "{what} killed recycled panes");
    for (_, pid) in before {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "{what}: signalled"
        );
    }
    let t = fx.team_json();
    let names: Vec<&str> = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["worker-1", "worker-2"], "{what}: workers forgotten");
}

/// `up 2` crashes at `up.split`; the server is restarted on the same socket with panes of the
/// same `%N` as the crashed op's, carrying its exact tags (and processes with the team's owner
/// id and the workers' names). Returns the new server's panes.
fn crash_then_recycle(fx: &Fx) -> Vec<(String, u64)> {
    fx.init_private("exec cat");
    let o = fx.cmd(
        &["up", "demo", "2", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.split=exit")],
    );
    assert_eq!(code(&o), 137, "{}", all(&o));
    let t = fx.team_json();
    let ws = t["workers"].as_array().unwrap().clone();
    assert_eq!(ws.len(), 2);
    for w in &ws {
        assert_eq!(w["lifecycle"], "pending");
        assert!(w["pane"].is_null(), "the crash came before the record: {w}");
    }
    // The panes the crashed op made, with all their tags.
    let f = "#{pane_id}\t#{@team_owner}\t#{@team_worker}\t#{@team_incarnation}\t#{@team_op}\t#{@team_name}\t#{@team_workspace}";
    let made: Vec<Vec<String>> = fx
        .tmux(&["list-panes", "-a", "-F", f])
        .lines()
        .map(|l| l.split('\t').map(String::from).collect::<Vec<_>>())
        .filter(|r| !r[3].is_empty())
        .collect();
    assert_eq!(made.len(), 2, "{made:?}");

    // Restart the server on the same socket, until the same %N exist again; tag them alike.
    let sock = fx.endpoint();
    let old_pid: u64 = fx
        .tmux(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    let _ = raw_tmux(&sock, &["kill-server"]);
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{old_pid}")).exists()
        || !raw_tmux(
            &sock,
            &[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "other",
                "exec sleep 100000",
            ],
        )
        .status
        .success()
    {
        assert!(t0.elapsed() < Duration::from_secs(5), "no new server");
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..5 {
        if made.iter().all(|r| fx.has_pane(&r[0])) {
            break;
        }
        fx.tmux(&["new-window", "-d", "exec sleep 100000"]);
    }
    for r in &made {
        assert!(fx.has_pane(&r[0]), "{} never recycled", r[0]);
        // Its process even carries the team's owner id and the worker's name, so only the
        // pane's proof (the server changed) can protect it.
        fx.tmux(&[
            "respawn-pane",
            "-k",
            "-t",
            &r[0],
            "-e",
            &format!("TEAM_OWNER={}", r[1]),
            "-e",
            &format!("TEAM_WORKER={}", r[2]),
            "exec sleep 100000",
        ]);
        for (k, v) in [
            "@team_owner",
            "@team_worker",
            "@team_incarnation",
            "@team_op",
            "@team_name",
            "@team_workspace",
        ]
        .iter()
        .zip(&r[1..])
        {
            fx.tmux(&["set-option", "-p", "-t", &r[0], k, v]);
        }
    }
    let before = fx.panes();
    assert!(before.len() >= 3, "{before:?}");
    before
}
