//! team-reap against real tmux on private sockets. `TMUX_TMPDIR` points into each test's temp
//! dir, so discovery sees only the servers the test started; every server is killed on drop.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use team_core::model::*;
use team_core::paths::{StateRoot, TeamName, WorkerName, tmux_socket_dir};
use team_core::store::Store;
use uuid::Uuid;

const FMT: &str = "#{pane_id}\t#{pane_pid}\t#{session_id}\t#{window_id}\t#{pid}\t#{start_time}";

struct Fx {
    tmp: tempfile::TempDir,
    sockdir: PathBuf,
}

impl Drop for Fx {
    fn drop(&mut self) {
        if let Ok(rd) = std::fs::read_dir(&self.sockdir) {
            for e in rd.flatten() {
                let _ = Command::new("tmux")
                    .arg("-S")
                    .arg(e.path())
                    .arg("kill-server")
                    .env_remove("TMUX")
                    .env_remove("TMUX_PANE")
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

struct TeamFx {
    name: String,
    ws: PathBuf,
    sock: PathBuf,
    owner: Uuid,
    leader: String,
}

impl TeamFx {
    fn store(&self) -> Store {
        Store::new(
            StateRoot::resolve(&self.ws, None).unwrap(),
            TeamName::new(&self.name).unwrap(),
            Duration::from_secs(5),
        )
    }
    fn audit(&self) -> PathBuf {
        self.ws.join(".team/audit.jsonl")
    }
    /// Records the team as stopped (its panes left running): what the reaper's `team_stopped`
    /// judges.
    fn stop(&self) {
        self.store()
            .transact("test", |t, _| {
                t.state = TeamState::Stopped;
                Ok(())
            })
            .unwrap();
    }
}

fn inc_of(line: &str) -> PaneIncarnation {
    let f: Vec<&str> = line.trim().split('\t').collect();
    PaneIncarnation {
        pane_id: f[0].into(),
        pane_pid: f[1].parse().unwrap(),
        session_id: f[2].into(),
        window_id: f[3].into(),
        server_pid: f[4].parse().unwrap(),
        server_start: f[5].parse().unwrap(),
        process_start: None,
    }
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let sockdir = tmux_socket_dir(&tmp.path().join("tt"));
        std::fs::create_dir_all(&sockdir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sockdir, std::fs::Permissions::from_mode(0o700)).unwrap();
        Fx { tmp, sockdir }
    }

    fn tmux(&self, sock: &Path, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(sock)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn panes(&self, sock: &Path) -> Vec<String> {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(sock)
            .args(["list-panes", "-a", "-F", "#{pane_id}"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn sessions(&self, sock: &Path) -> Vec<String> {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(sock)
            .args(["list-sessions", "-F", "#{session_name}"])
            .env_remove("TMUX")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A team with a tools-made session and leader, recorded by team_core, on its workspace's
    /// private socket (the only place the tools make a leader).
    fn team(&self, name: &str, sock: &str) -> TeamFx {
        let ws = self.tmp.path().join(format!("ws-{name}-{sock}"));
        std::fs::create_dir_all(&ws).unwrap();
        let sock = team_core::paths::private_endpoint(&self.tmp.path().join("tt"), &ws);
        self.team_at(name, &ws, &sock)
    }

    fn team_at(&self, name: &str, ws: &Path, sock: &Path) -> TeamFx {
        let owner = Uuid::new_v4();
        let o = owner.to_string();
        let w = ws.to_str().unwrap();
        let mut args = vec![
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "200",
            "-y",
            "50",
            "-P",
            "-F",
            FMT,
        ];
        let envs = [
            format!("TEAM_OWNER={o}"),
            format!("TEAM_NAME={name}"),
            "TEAM_ROLE=leader".into(),
        ];
        for e in &envs {
            args.push("-e");
            args.push(e);
        }
        args.push("sleep 100000");
        let line = self.tmux(sock, &args);
        let inc = inc_of(&line);
        for (k, v) in [
            ("@team_owner", o.as_str()),
            ("@team_session_owner", &o),
            ("@team_workspace", w),
            ("@team_name", name),
        ] {
            self.tmux(sock, &["set-option", "-t", &inc.session_id, k, v]);
        }
        for (k, v) in [
            ("@team_owner", o.as_str()),
            ("@team_role", "leader"),
            ("@team_workspace", w),
            ("@team_name", name),
        ] {
            self.tmux(sock, &["set-option", "-p", "-t", &inc.pane_id, k, v]);
        }
        let t = TeamFx {
            name: name.into(),
            ws: ws.to_path_buf(),
            sock: sock.to_path_buf(),
            owner,
            leader: inc.pane_id.clone(),
        };
        let team = Team {
            schema_version: SCHEMA_VERSION,
            name: TeamName::new(name).unwrap(),
            owner_id: owner,
            generation: 1,
            created_at: "2026-01-01T00:00:00Z".into(),
            workspace: ws.to_path_buf(),
            state: TeamState::Active,
            endpoint: sock.to_path_buf(),
            private_server: true,
            session: SessionRecord {
                id: inc.session_id.clone(),
                name: name.into(),
                created_by_tools: true,
            },
            leader: Leader {
                pane: inc,
                created_by_tools: true,
            },
            protected: vec![],
            settings: Settings {
                max_workers: 8,
                worker_cmd: "sh".into(),
                worktree: WorktreeMode::Off,
                ready_pattern: None,
                trigger: None,
                scaling: true,
                residue: Default::default(),
                reassign: Default::default(),
                agent: None,
            },
            next_worker_index: 1,
            next_task_id: 1,
            workers: vec![],
        };
        t.store().create(&team).unwrap();
        t
    }

    /// A worker pane split in the team's session, tagged, and (unless `lifecycle` is None)
    /// recorded. `cmd` runs in it below a supervisor. Returns (pane id, worker name).
    fn worker(
        &self,
        t: &TeamFx,
        lifecycle: Option<Lifecycle>,
        op: Option<Uuid>,
        cmd: &str,
    ) -> (String, String) {
        let (_, w) = t
            .store()
            .transact("test", |team, _| {
                let n = team.next_worker_index;
                team.next_worker_index += 1;
                Ok(WorkerName::for_index(n))
            })
            .unwrap();
        let incarn = Uuid::new_v4();
        let o = t.owner.to_string();
        let mut args = vec![
            "split-window".to_string(),
            "-t".into(),
            t.leader.clone(),
            "-P".into(),
            "-F".into(),
            FMT.into(),
        ];
        // Its startup script runs `cmd`; the pane carries its digest, as `up` gives it.
        let body = format!("#!/bin/sh\n{cmd}\n");
        for e in [
            format!("TEAM_OWNER={o}"),
            format!("TEAM_WORKER={w}"),
            format!("TEAM_NAME={}", t.name),
            format!("TEAM_WORKSPACE={}", t.ws.display()),
            format!(
                "{}={}",
                team_core::supervisor::SCRIPT_DIGEST_VAR,
                team_core::supervisor::script_digest(body.as_bytes())
            ),
        ] {
            args.push("-e".into());
            args.push(e);
        }
        // As `up` starts every worker: its supervisor first (the reaper proves a worker pane
        // by it), then the command.
        let root = StateRoot::resolve(&t.ws, None).unwrap();
        let sup = team_core::supervisor::SupervisorArgs {
            op,
            team: TeamName::new(&t.name).unwrap(),
            worker: w.clone(),
            owner: t.owner,
            incarnation: incarn,
            state_root: root.path().to_path_buf(),
            workspace: t.ws.clone(),
        };
        // In the workspace, as `up` starts it (the reaper checks where a supervisor works).
        args.extend(["-c".into(), t.ws.display().to_string()]);
        args.push(tests::bin("team-scale").display().to_string());
        args.extend(sup.to_argv());
        // Its startup script runs `cmd`, at the path `up` gives it.
        let script = root.runtime_script(&sup.team, &w);
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, &body).unwrap();
        args.extend(["/bin/sh".into(), script.display().to_string()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let inc = inc_of(&self.tmux(&t.sock, &argv));
        let mut tags = vec![
            ("@team_owner", o.clone()),
            ("@team_worker", w.to_string()),
            ("@team_incarnation", incarn.to_string()),
            ("@team_workspace", t.ws.display().to_string()),
            ("@team_name", t.name.clone()),
        ];
        if let Some(op) = op {
            tags.push(("@team_op", op.to_string()));
        }
        for (k, v) in &tags {
            self.tmux(&t.sock, &["set-option", "-p", "-t", &inc.pane_id, k, v]);
        }
        if let Some(lc) = lifecycle {
            let wn = w.clone();
            let pane = inc.clone();
            t.store()
                .transact("test", move |team, _| {
                    team.workers.push(Worker {
                        index: wn.as_str()[7..].parse().unwrap(),
                        name: wn,
                        role: None,
                        lifecycle: lc,
                        incarnation: incarn,
                        op_id: op.unwrap_or_else(Uuid::new_v4),
                        pane: Some(pane),
                        resources: Resources::default(),
                        removal_reasons: vec![],
                        created_at: "2026-01-01T00:00:00Z".into(),
                    });
                    Ok(())
                })
                .unwrap();
        }
        (inc.pane_id, w.to_string())
    }

    fn untagged(&self, t: &TeamFx) -> String {
        self.tmux(
            &t.sock,
            &[
                "split-window",
                "-t",
                &t.leader,
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 100000",
            ],
        )
        .trim()
        .to_string()
    }

    fn reap_cmd(&self, args: &[&str]) -> Command {
        let mut c = tests::hermetic(tests::bin("team-reap"));
        // Tests run side by side and the reaper sees every process of the user: act only on
        // this test's teams.
        if !args.contains(&"--only-under") {
            c.arg("--only-under").arg(self.tmp.path());
        }
        c.args(args)
            .arg("--lock-file")
            .arg(self.lock_file())
            .env("TMUX_TMPDIR", self.tmp.path().join("tt"))
            .env("TEAM_TMUX_CONFIG", "/dev/null");
        c
    }

    /// This fixture's reaper lock (the default, /tmp/tmux-<uid>/team-reap.lock, is shared by
    /// every reaper of the user, so tests running side by side each pass their own).
    fn lock_file(&self) -> PathBuf {
        self.tmp.path().join("locks").join("team-reap.lock")
    }

    fn reap(&self, args: &[&str]) -> Output {
        self.reap_cmd(args).output().unwrap()
    }
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn pane<'a>(v: &'a [Value], sock: &Path, id: &str) -> &'a Value {
    v.iter()
        .find(|r| {
            r["type"] == "pane" && r["pane_id"] == id && r["endpoint"] == sock.to_str().unwrap()
        })
        .unwrap_or_else(|| panic!("no record for {id} in {v:#?}"))
}

fn summary(v: &[Value]) -> &Value {
    v.iter().find(|r| r["type"] == "summary").expect("summary")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Every audit_id in the log has exactly one intent and one outcome; returns the kill count.
fn audit_pairs(log: &Path) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut by: HashMap<String, Vec<String>> = HashMap::new();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        by.entry(v["audit_id"].as_str().unwrap().into())
            .or_default()
            .push(v["stage"].as_str().unwrap().into());
    }
    for (id, stages) in &by {
        assert_eq!(stages.len(), 2, "{id}: {stages:?}");
        assert_eq!(stages[0], "intent", "{id}: {stages:?}");
        assert!(
            stages[1] == "complete" || stages[1] == "failed",
            "{id}: {stages:?}"
        );
    }
    by.len()
}

#[test]
fn orphans_of_each_reason_are_killed_and_nothing_else() {
    let fx = Fx::new();
    // not_member, abandoned_op; live member, leader, untagged pane inside the team session.
    let live = fx.team("live", "s1");
    let (member, _) = fx.worker(&live, Some(Lifecycle::Active), None, "sleep 100000");
    let (removed, _) = fx.worker(&live, None, None, "sleep 100000");
    let (abandoned, _) = fx.worker(&live, None, Some(Uuid::new_v4()), "sleep 100000");
    let user = fx.untagged(&live);
    // team_state_gone: the team dir deleted.
    let gone = fx.team("gone", "s2");
    let (gone_w, _) = fx.worker(&gone, Some(Lifecycle::Active), None, "sleep 100000");
    std::fs::remove_dir_all(gone.ws.join(".team/teams/gone")).unwrap();
    // owner_mismatch: re-created under the same name with a new owner id.
    let old = fx.team("again", "s3");
    let (old_w, _) = fx.worker(&old, Some(Lifecycle::Active), None, "sleep 100000");
    let mut t = old.store().load().unwrap();
    t.owner_id = Uuid::new_v4();
    t.state = TeamState::Active;
    std::fs::write(old.ws.join(".team/teams/again/team.json"), t.to_bytes()).unwrap();
    // team_stopped.
    let stopped = fx.team("stopped", "s4");
    let (stopped_w, _) = fx.worker(&stopped, Some(Lifecycle::Active), None, "sleep 100000");
    stopped.stop();

    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(
        code(&o),
        0,
        "{v:#?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for (id, sock, reason) in [
        (&removed, &live.sock, "not_member"),
        (&abandoned, &live.sock, "abandoned_op"),
        (&gone_w, &gone.sock, "team_state_gone"),
        (&old_w, &old.sock, "owner_mismatch"),
        (&stopped_w, &stopped.sock, "team_stopped"),
    ] {
        let r = v
            .iter()
            .find(|r| r["pane_id"] == id.as_str() && r["endpoint"] == sock.to_str().unwrap())
            .unwrap();
        assert_eq!(
            (
                r["verdict"].as_str(),
                r["reason"].as_str(),
                r["action"].as_str()
            ),
            (Some("orphan"), Some(reason), Some("killed")),
            "{r}"
        );
    }
    let left = fx.panes(&live.sock);
    for keep in [&member, &live.leader, &user] {
        assert!(left.contains(keep), "{keep} was killed: {left:?}");
    }
    assert!(
        !left.contains(&removed) && !left.contains(&abandoned),
        "{left:?}"
    );
    assert_eq!(pane(&v, &live.sock, &member)["verdict"], "owned");
    // The stopped team's session went whole, its recorded leader included. The leader of a
    // gone or re-created team has no record naming it: unverifiable, left with its session.
    assert!(fx.sessions(&stopped.sock).is_empty());
    assert!(v.iter().any(|r| r["type"] == "session"
        && r["session_name"] == "stopped"
        && r["action"] == "killed"));
    for t in [&gone, &old] {
        assert_eq!(pane(&v, &t.sock, &t.leader)["verdict"], "unverifiable");
        assert_eq!(fx.panes(&t.sock), vec![t.leader.clone()]);
    }
    // Audit: one intent and one outcome per kill, in each team's log.
    assert_eq!(audit_pairs(&live.audit()), 2);
    assert_eq!(audit_pairs(&gone.audit()), 1);
    assert_eq!(audit_pairs(&old.audit()), 1);
    assert_eq!(audit_pairs(&stopped.audit()), 2);
    // Second run: nothing to do. It names the two leaders it leaves (unverifiable), and
    // says nothing with -q, as from cron.
    // (The emptied server exited; its socket file remains and is reported as dead.)
    let o = fx.reap(&["--no-processes"]);
    assert_eq!(code(&o), 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 2, "{o:?}");
    assert!(
        out.lines()
            .all(|l| l.starts_with("unverifiable") && l.contains("leader")),
        "{o:?}"
    );
    let o = fx.reap(&["--no-processes", "-q"]);
    assert_eq!(code(&o), 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    let o = fx.reap(&["--no-processes"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines().all(|l| l.contains("no server answers")),
        "{err}"
    );
    let o = fx.reap(&["--no-processes", "-q"]);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
}

#[test]
fn busy_and_unverifiable_teams_are_left_alone() {
    let fx = Fx::new();
    let busy = fx.team("busy", "s1");
    let (busy_w, _) = fx.worker(&busy, None, None, "sleep 100000");
    let _lock = team_core::lock::acquire(
        &busy.ws.join(".team/locks/busy.scale.lock"),
        Duration::ZERO,
        &team_core::lock::Holder::me("test"),
    )
    .unwrap();
    let bad = fx.team("bad", "s2");
    let (bad_w, _) = fx.worker(&bad, None, None, "sleep 100000");
    std::fs::write(
        bad.ws.join(".team/teams/bad/team.json"),
        b"{\"schema_version\": 1, garbage",
    )
    .unwrap();

    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(code(&o), 0, "{v:#?}");
    assert_eq!(pane(&v, &busy.sock, &busy_w)["verdict"], "busy");
    assert_eq!(pane(&v, &busy.sock, &busy.leader)["verdict"], "busy");
    assert_eq!(pane(&v, &bad.sock, &bad_w)["verdict"], "unverifiable");
    assert!(fx.panes(&busy.sock).contains(&busy_w));
    assert!(fx.panes(&bad.sock).contains(&bad_w));
    // Human mode reports the unverifiable pane.
    let o = fx.reap(&["--no-processes"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("unverifiable"),
        "{o:?}"
    );
    assert!(!busy.audit().exists() || audit_pairs(&busy.audit()) == 0);
}

#[test]
fn session_with_a_foreign_pane_keeps_it() {
    let fx = Fx::new();
    // A stopped team: its recorded leader and its worker are orphans, and its session would go
    // whole, but for a pane of yours in it.
    let a = fx.team("a", "s1");
    let (wa, _) = fx.worker(&a, Some(Lifecycle::Active), None, "sleep 100000");
    let user = fx.untagged(&a);
    a.stop();
    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(code(&o), 0, "{v:#?}");
    assert_eq!(fx.panes(&a.sock), vec![user.clone()]);
    assert_eq!(fx.sessions(&a.sock), vec!["a".to_string()]);
    let s = v.iter().find(|r| r["type"] == "session").unwrap();
    assert_eq!(s["action"], "skipped", "{s}");
    assert_eq!(pane(&v, &a.sock, &wa)["action"], "killed");
    assert_eq!(pane(&v, &a.sock, &a.leader)["action"], "killed");
    assert_eq!(audit_pairs(&a.audit()), 2);
}

/// With the state root gone, the workspace still exists; the records go to the explicit
/// `--audit-log`. The worker goes; the leader, which no record names any more, stays.
#[test]
fn a_gone_teams_leader_stays_and_its_worker_goes() {
    let fx = Fx::new();
    let a = fx.team("a", "s1");
    let (wa, _) = fx.worker(&a, Some(Lifecycle::Active), None, "sleep 100000");
    std::fs::remove_dir_all(a.ws.join(".team")).unwrap();
    let log = fx.tmp.path().join("audit.jsonl");
    let o = fx.reap(&[
        "--json",
        "--no-processes",
        "--audit-log",
        log.to_str().unwrap(),
    ]);
    let v = json_lines(&o);
    assert_eq!(code(&o), 0, "{v:#?}");
    assert_eq!(fx.panes(&a.sock), vec![a.leader.clone()]);
    assert_eq!(pane(&v, &a.sock, &wa)["action"], "killed");
    assert_eq!(pane(&v, &a.sock, &a.leader)["verdict"], "unverifiable");
    assert_eq!(audit_pairs(&log), 1);
}

#[test]
fn workspace_gone_without_audit_log_kills_nothing() {
    let fx = Fx::new();
    let a = fx.team("a", "s1");
    std::fs::remove_dir_all(&a.ws).unwrap();
    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    // A workspace that is gone may have been moved: its panes are unverifiable, not orphans
    // (and with no audit log to write to, nothing could be killed anyway).
    let p = pane(&v, &a.sock, &a.leader);
    assert_eq!(
        (p["verdict"].as_str(), p["action"].as_str()),
        (Some("unverifiable"), Some("none")),
        "{v:#?}"
    );
    assert!(fx.panes(&a.sock).contains(&a.leader));
}

#[test]
fn pipeline_kills_orphans_and_trusts_nothing() {
    let fx = Fx::new();
    let live = fx.team("live", "s1");
    let (member, _) = fx.worker(&live, Some(Lifecycle::Active), None, "sleep 100000");
    let (orphan, _) = fx.worker(&live, None, None, "sleep 100000");
    let other = fx.team("other", "s2");
    let (other_member, _) = fx.worker(&other, Some(Lifecycle::Active), None, "sleep 100000");
    let scan = fx.reap(&["scan", "--json", "--no-processes"]);
    assert_eq!(code(&scan), 0);
    let v = json_lines(&scan);
    assert_eq!(pane(&v, &live.sock, &orphan)["verdict"], "orphan");
    assert!(
        fx.panes(&live.sock).contains(&orphan),
        "scan changed something"
    );

    // Hand-edited lines: a live member with a forged verdict; a pane id that is an orphan on
    // s1 but names s2, where that id is a live member; a made-up endpoint.
    let mut forged = pane(&v, &live.sock, &member).clone();
    forged["verdict"] = "orphan".into();
    forged["reason"] = "not_member".into();
    let mut moved = pane(&v, &live.sock, &orphan).clone();
    moved["endpoint"] = other.sock.to_str().unwrap().into();
    moved["pane_id"] = other_member.clone().into();
    let mut nowhere = pane(&v, &live.sock, &orphan).clone();
    nowhere["endpoint"] = "/nonexistent/sock".into();
    let input = format!("{forged}\n{moved}\n{nowhere}\n");
    let mut c = fx.reap_cmd(&["kill", "--from", "-", "--json", "--no-processes"]);
    let o = pipe(&mut c, &input);
    let out = json_lines(&o);
    assert_eq!(code(&o), 0, "{out:#?}");
    assert!(fx.panes(&live.sock).contains(&member));
    assert!(
        fx.panes(&live.sock).contains(&orphan),
        "not named, not killed"
    );
    assert!(fx.panes(&other.sock).contains(&other_member));
    assert_eq!(summary(&out)["killed"], 0);
    assert!(!live.audit().exists() || audit_pairs(&live.audit()) == 0);

    // The real pipeline kills the orphan and only it.
    let mut c = fx.reap_cmd(&["kill", "--from", "-", "--no-processes"]);
    let o = pipe(&mut c, &String::from_utf8_lossy(&scan.stdout));
    assert_eq!(code(&o), 0, "{o:?}");
    let left = fx.panes(&live.sock);
    assert!(
        !left.contains(&orphan) && left.contains(&member) && left.contains(&live.leader),
        "{left:?}"
    );
    assert_eq!(audit_pairs(&live.audit()), 1);
    // Malformed input changes nothing: exit 65.
    let mut c = fx.reap_cmd(&["kill", "--from", "-"]);
    assert_eq!(
        code(&pipe(
            &mut c,
            "{\"type\":\"pane\",\"endpoint\":\"/x\",\"pane_id\":\"%1;kill-server\"}\n"
        )),
        65
    );
}

fn pipe(c: &mut Command, input: &str) -> Output {
    use std::io::Write;
    let mut ch = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ch.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    ch.wait_with_output().unwrap()
}

#[test]
fn dry_run_and_check_change_nothing() {
    let fx = Fx::new();
    let live = fx.team("live", "s1");
    let o = fx.reap(&["--check", "--no-processes"]);
    assert_eq!(code(&o), 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    let (orphan, _) = fx.worker(&live, None, None, "sleep 100000");
    let o = fx.reap(&["--check", "--no-processes"]);
    assert_eq!(code(&o), 1, "{o:?}");
    let o = fx.reap(&["--dry-run", "--json", "--no-processes"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        pane(&json_lines(&o), &live.sock, &orphan)["action"],
        "would_kill"
    );
    assert!(fx.panes(&live.sock).contains(&orphan));
    assert!(!live.audit().exists());
    let o = fx.reap(&["--no-processes", "-q"]);
    assert_eq!(code(&o), 0);
    assert!(!fx.panes(&live.sock).contains(&orphan));
}

#[test]
fn a_second_reaper_exits_75_naming_the_holder() {
    let fx = Fx::new();
    let live = fx.team("live", "s1");
    let (orphan, _) = fx.worker(&live, None, None, "sleep 100000");
    let lock = fx.lock_file();
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        lock.parent().unwrap(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let held = team_core::lock::acquire(
        &lock,
        Duration::ZERO,
        &team_core::lock::Holder::me("other reaper"),
    )
    .unwrap();
    let o = fx.reap(&["--no-processes", "-q"]);
    assert_eq!(code(&o), 75);
    // Even with -q: one line on stderr that names the holder; nothing on stdout.
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{o:?}");
    assert!(
        err.contains("other reaper") && err.contains(&std::process::id().to_string()),
        "{o:?}"
    );
    assert!(o.stdout.is_empty(), "{o:?}");
    let o = fx.reap(&["--no-processes", "--json"]);
    assert_eq!(code(&o), 75);
    let v = json_lines(&o);
    let s = summary(&v);
    assert_eq!(s["exit"], 75, "{v:?}");
    assert!(
        s["lock_holder"].as_str().unwrap().contains("other reaper"),
        "{v:?}"
    );
    assert!(fx.panes(&live.sock).contains(&orphan));
    drop(held);
    // Two at once: exactly one does the work; the other is 75 (or finds nothing left).
    let a = fx
        .reap_cmd(&["--no-processes", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let b = fx
        .reap_cmd(&["--no-processes", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let killed: u64 = [&a, &b]
        .iter()
        .filter(|o| code(o) == 0)
        .map(|o| summary(&json_lines(o))["killed"].as_u64().unwrap())
        .sum();
    assert_eq!(killed, 1, "{a:?} {b:?}");
    for o in [&a, &b] {
        if code(o) == 75 {
            assert!(String::from_utf8_lossy(&o.stderr).contains("another reaper holds"));
        } else {
            assert_eq!(code(o), 0, "{o:?}");
        }
    }
    assert_eq!(audit_pairs(&live.audit()), 1);
}

#[test]
fn dead_socket_is_skipped_with_a_warning() {
    let fx = Fx::new();
    let dead = fx.sockdir.join("dead");
    drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
    let live = fx.team("live", "s1");
    let (orphan, _) = fx.worker(&live, None, None, "sleep 100000");
    let o = fx.reap(&["--no-processes"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning") && err.contains("dead"), "{err}");
    assert!(!fx.panes(&live.sock).contains(&orphan));
    // The same stale socket is not reported again, so cron stays silent; -v still shows it.
    let o = fx.reap(&["--no-processes"]);
    assert_eq!(code(&o), 0, "{o:?}");
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    let o = fx.reap(&["--no-processes", "-v"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("dead"), "{o:?}");
}

// The residue of a removed worker is proven by ancestry now (below its pane's supervisor):
// tests/it/ancestry.rs runs that through the real `up`, which starts the supervisor.

#[test]
fn debt_is_settled_through_reconcile() {
    let fx = Fx::new();
    let t = fx.team("debt", "s1");
    let (member, _) = fx.worker(&t, Some(Lifecycle::Active), None, "sleep 100000");
    let (removing, _) = fx.worker(&t, Some(Lifecycle::Removing), None, "sleep 100000");
    let (pending, _) = fx.worker(
        &t,
        Some(Lifecycle::Pending),
        Some(Uuid::new_v4()),
        "sleep 100000",
    );
    let o = fx.reap(&["scan", "--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(pane(&v, &t.sock, &removing)["verdict"], "debt");
    assert_eq!(pane(&v, &t.sock, &pending)["reason"], "abandoned_op");
    assert_eq!(code(&fx.reap(&["--check", "--no-processes"])), 1);
    // What a teardown leaves in the trash (here as a crash would have left it) goes with the
    // settling: the reaper does not leave it for the next `team-scale`.
    let trash = t.ws.join(".team/teams/debt/trash");
    std::fs::create_dir_all(trash.join("0123456789ab-worker-9")).unwrap();
    std::fs::write(trash.join("0123456789ab-worker-9.sh"), "x\n").unwrap();
    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(
        code(&o),
        0,
        "{v:#?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 0, "trash left");
    let left = fx.panes(&t.sock);
    assert!(
        !left.contains(&removing) && !left.contains(&pending),
        "{left:?}"
    );
    assert!(
        left.contains(&member) && left.contains(&t.leader),
        "{left:?}"
    );
    let team = t.store().load().unwrap();
    assert_eq!(team.workers.len(), 1, "{:?}", team.workers);
    assert_eq!(team.workers[0].lifecycle, Lifecycle::Active);
    assert_eq!(summary(&v)["reapable_left"], 0);
}

/// The reaper writes the teams' audit logs too, so it rotates them where `team-audit` does:
/// at `TEAM_AUDIT_MAX_SIZE` (it used to ignore it and rotate at the default 256 MiB).
#[test]
fn the_reaper_rotates_audit_logs_at_team_audit_max_size() {
    let fx = Fx::new();
    let live = fx.team("live", "s1");
    let mut orphans = Vec::new();
    for _ in 0..4 {
        orphans.push(fx.worker(&live, None, None, "sleep 100000").0);
    }
    let o = fx
        .reap_cmd(&["--json", "--no-processes"])
        .env("TEAM_AUDIT_MAX_SIZE", "600")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let panes = fx.panes(&live.sock);
    for p in &orphans {
        assert!(!panes.contains(p), "orphan {p} not killed");
    }
    let log = live.ws.join(".team/audit.jsonl");
    assert!(
        live.ws.join(".team/audit.jsonl.000001").exists(),
        "no segment: the reaper's log never rotated"
    );
    let v = Command::new(tests::bin("team-audit"))
        .args(["--audit-log", log.to_str().unwrap(), "verify"])
        .output()
        .unwrap();
    assert_eq!(code(&v), 0, "{}", String::from_utf8_lossy(&v.stdout));
}

/// Attack: a stopped team's recorded leader pane is moved into a session of yours. Its full
/// identity (session and window included) no longer matches the record: it is not killed
/// there, nor your session with it.
#[test]
fn a_stopped_teams_leader_moved_into_your_session_is_not_killed() {
    let fx = Fx::new();
    let a = fx.team("a", "s1");
    a.stop();
    fx.tmux(
        &a.sock,
        &["new-session", "-d", "-s", "mine", "sleep 100000"],
    );
    fx.tmux(
        &a.sock,
        &["join-pane", "-d", "-s", &a.leader, "-t", "mine:"],
    );
    let o = fx.reap(&["--json", "--no-processes"]);
    let v = json_lines(&o);
    assert_eq!(code(&o), 0, "{v:#?}");
    assert_eq!(pane(&v, &a.sock, &a.leader)["verdict"], "unverifiable");
    assert!(
        fx.panes(&a.sock).contains(&a.leader),
        "the moved leader was killed"
    );
    assert_eq!(fx.sessions(&a.sock), vec!["mine".to_string()]);
}

/// A black-box finding: a window of yours added to a stopped team's session after the scan
/// keeps the session; the run must not report that session killed.
#[test]
fn a_session_that_outlives_its_kills_is_not_reported_killed() {
    let fx = Fx::new();
    let a = fx.team("a", "s1");
    a.stop();
    let child = fx
        .reap_cmd(&["--json", "--no-processes"])
        .env("TEAM_FAILPOINTS", "reap.before_kill=sleep1500")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let mine = fx
        .tmux(
            &a.sock,
            &[
                "new-window",
                "-d",
                "-t",
                "a:",
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 100000",
            ],
        )
        .trim()
        .to_string();
    let o = child.wait_with_output().unwrap();
    let v = json_lines(&o);
    assert_eq!(code(&o), 0, "{v:#?}");
    assert_eq!(pane(&v, &a.sock, &a.leader)["action"], "killed");
    assert_eq!(fx.panes(&a.sock), vec![mine]);
    let s = v.iter().find(|r| r["type"] == "session").unwrap();
    assert_eq!(s["action"], "skipped", "{s}");
    assert_eq!(fx.sessions(&a.sock), vec!["a".to_string()]);
}

/// A scan decides nothing, and its session line says what would keep a session: a stopped
/// team's session whose panes are all reapable orphans is not "kept", and one with a pane of
/// yours in it names that pane only.
#[test]
fn a_scans_session_line_names_only_what_keeps_it() {
    let fx = Fx::new();
    let a = fx.team("a", "s1");
    fx.worker(&a, Some(Lifecycle::Active), None, "sleep 100000");
    a.stop();
    let v = json_lines(&fx.reap(&["scan", "--json", "--no-processes"]));
    let s = v.iter().find(|r| r["type"] == "session").unwrap();
    assert_eq!(s["action"], "none", "{s}");
    assert!(
        !s["reason"].as_str().unwrap_or_default().contains("kept"),
        "{s}"
    );
    let user = fx.untagged(&a);
    let v = json_lines(&fx.reap(&["scan", "--json", "--no-processes"]));
    let s = v.iter().find(|r| r["type"] == "session").unwrap();
    let note = s["reason"].as_str().unwrap_or_default();
    assert!(note.contains(&user), "{s}");
    assert!(!note.contains("orphan"), "{s}");
}
