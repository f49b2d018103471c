//! `down`, `shutdown`, `reconcile`, `worker-status` against real tmux on private sockets.
//!
//! Workers are made by a test helper (a proven new-window on the team's own server plus an
//! `active` record), so these tests do not depend on `team-scale up`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use team_core::model::{
    Lifecycle, Resources, SCHEMA_VERSION, Task, TaskStatus, Team, Worker, WorktreeRecord,
};
use team_core::paths::{StateRoot, TeamName, WorkerName};
use team_core::store::Store;
use team_core::tmux::txn::{NewPane, parse_new_pane};
use team_core::tmux::{Guard, Listing, Tmux, Txn, TxnOutcome};

/// team-scale, built once by the harness.
fn bin() -> PathBuf {
    tests::bin("team-scale")
}

struct Env {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    tt: PathBuf,
    endpoint: std::cell::OnceCell<PathBuf>,
}

impl Drop for Env {
    fn drop(&mut self) {
        let uid = rustix_uid();
        let dir = self.tt.join(format!("tmux-{uid}"));
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                let _ = Command::new("tmux")
                    .arg("-S")
                    .arg(e.path())
                    .arg("kill-server")
                    .env_remove("TMUX")
                    .env_remove("TMUX_PANE")
                    .output();
            }
        }
    }
}

fn rustix_uid() -> u32 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

fn team() -> TeamName {
    TeamName::new("t").unwrap()
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let tt = dir.path().join("tt");
        std::fs::create_dir_all(&tt).unwrap();
        Env {
            _dir: dir,
            ws,
            tt,
            endpoint: Default::default(),
        }
    }

    fn cmd(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
        let mut c = tests::hermetic(bin());
        c.args(args)
            .current_dir(&self.ws)
            .env("TMUX_TMPDIR", &self.tt)
            .env("TEAM_TMUX_CONFIG", "/dev/null");
        for (k, v) in extra_env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.cmd(args, &[]);
        assert!(
            o.status.success(),
            "{args:?}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    fn init(&self) -> Team {
        self.ok(&[
            "init",
            "t",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
        ]);
        self.store().load().unwrap()
    }

    fn root(&self) -> StateRoot {
        StateRoot::resolve(&self.ws, None).unwrap()
    }

    fn store(&self) -> Store {
        Store::new(self.root(), team(), Duration::from_secs(10))
    }

    fn tmux(&self) -> Tmux {
        let ep = self
            .endpoint
            .get_or_init(|| self.store().load().unwrap().endpoint);
        Tmux::new("tmux", ep).with_config(Some("/dev/null".into()))
    }

    /// A worker in a new window of the team's session, recorded `active`, started as `up`
    /// starts one: its pane's first process is the worker's supervisor, which runs the
    /// worker's startup script (here: `command`) with the digest it was written with.
    fn add_worker(&self, command: &str, worktree: bool) -> Worker {
        let store = self.store();
        let t = store.load().unwrap();
        let idx = t.next_worker_index;
        let name = WorkerName::for_index(idx);
        let inc = uuid::Uuid::new_v4();
        let op = uuid::Uuid::new_v4();
        let o = t.owner_id.to_string();
        let g = Guard::session(
            &t.session.id,
            t.leader.pane.server_pid,
            t.leader.pane.server_start,
            &o,
        )
        .unwrap();
        let root = self.root();
        let wdir = root.worker_dir(&team(), &name);
        std::fs::create_dir_all(&wdir).unwrap();
        std::fs::write(wdir.join("inbox.md"), "work\n").unwrap();
        let script = root.runtime_script(&team(), &name);
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        let text = format!(
            "exec 9<&-\nexport TEAM_OWNER='{o}'\nexport TEAM_WORKER='{name}'\nexport TEAM_NAME='t'\nexport TEAM_INCARNATION='{inc}'\n{command}\n"
        );
        std::fs::write(&script, &text).unwrap();
        let sup = team_core::supervisor::SupervisorArgs {
            op: Some(op),
            team: team(),
            worker: name.clone(),
            owner: t.owner_id,
            incarnation: inc,
            state_root: root.path().to_path_buf(),
            workspace: self.ws.clone(),
        };
        let mut argv = vec![bin().display().to_string()];
        argv.extend(sup.to_argv());
        argv.extend(["/bin/sh".into(), script.display().to_string()]);
        let p = NewPane {
            argv,
            start_dir: Some(self.ws.display().to_string()),
            env: vec![(
                team_core::supervisor::SCRIPT_DIGEST_VAR.into(),
                team_core::supervisor::script_digest(text.as_bytes()),
            )],
            tags: vec![
                ("@team_owner".into(), o.clone()),
                ("@team_worker".into(), name.to_string()),
                ("@team_incarnation".into(), inc.to_string()),
                ("@team_name".into(), "t".into()),
            ],
            horizontal: false,
            ..Default::default()
        };
        let out = self
            .tmux()
            .run_txns(&[Txn::new_window(g, &p).unwrap()])
            .unwrap();
        let TxnOutcome::Done(lines) = &out[0] else {
            panic!("{out:?}")
        };
        let mut pane = parse_new_pane(lines).unwrap();
        pane.process_start = team_core::process::start_time(pane.pane_pid).unwrap();
        let wt = worktree.then(|| {
            let path = root.worktree(&team(), &name);
            let branch = format!("team/t/w/{name}");
            // As `up` makes it: the branch first, with the reflog entry that proves it the
            // tools' own, then the worktree on it.
            let made = team_core::ops::resources::branch_made_message("t", name.as_str(), &inc);
            team_core::ops::resources::make_branch(&self.ws, &branch, &made).unwrap();
            git(
                &self.ws,
                &["worktree", "add", "-q", path.to_str().unwrap(), &branch],
            );
            WorktreeRecord {
                path,
                branch: Some(branch),
                branch_created: true,
            }
        });
        let w = Worker {
            name: name.clone(),
            index: idx,
            role: None,
            lifecycle: Lifecycle::Active,
            incarnation: inc,
            op_id: op,
            pane: Some(pane),
            resources: Resources {
                worker_dir: Some(wdir),
                script: Some(script),
                worktree: wt,
            },
            removal_reasons: vec![],
            created_at: "now".into(),
        };
        let w2 = w.clone();
        store
            .transact("test-add", move |t, _| {
                t.workers.push(w2);
                t.next_worker_index = idx + 1;
                // The branch mode `up` would have made that branch in.
                if worktree {
                    t.settings.worktree = team_core::model::WorktreeMode::Branch("team/t/w".into());
                }
                Ok(())
            })
            .unwrap();
        w
    }

    fn set_status(&self, w: &str, state: &str) {
        self.ok(&["worker-status", "t", "--worker", w, "--state", state]);
    }

    fn add_task(&self, owner: Option<&str>, status: TaskStatus) -> u64 {
        let store = self.store();
        let owner = owner.map(|o| WorkerName::new(o).unwrap());
        store
            .transact("test-task", |t, ch| {
                let id = t.next_task_id;
                t.next_task_id += 1;
                ch.put_task(&Task {
                    schema_version: SCHEMA_VERSION,
                    id,
                    subject: format!("task {id}"),
                    description: String::new(),
                    status,
                    owner,
                    role: None,
                    blocked_by: vec![],
                    claim: None,
                    version: 1,
                    created_at: "now".into(),
                });
                Ok(id)
            })
            .unwrap()
            .1
    }

    fn edit_team(&self, f: impl FnOnce(&mut serde_json::Value)) {
        let p = self.root().team_json(&team());
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }

    fn panes(&self) -> Vec<String> {
        match self.tmux().list() {
            Listing::Panes(s) => s.rows.iter().map(|r| r.pane_id.clone()).collect(),
            _ => vec![],
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// Whether the process `pid` with start time `start` still runs (a zombie does not).
fn alive(pid: u32, start: Option<u64>) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let rest = s.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f[0] == "Z" {
        return false;
    }
    start.is_none_or(|st| f[19].parse::<u64>().unwrap() == st)
}

fn names(t: &Team) -> Vec<String> {
    t.workers.iter().map(|w| w.name.to_string()).collect()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

const SLEEPER: &str = "exec sleep 100000";

#[test]
fn idle_selection_named_force_refusals_and_tasks() {
    let e = Env::new();
    e.init();
    let w1 = e.add_worker(SLEEPER, false);
    let _w2 = e.add_worker(SLEEPER, false);
    let w3 = e.add_worker(SLEEPER, false);
    let w4 = e.add_worker(SLEEPER, false);
    e.set_status("worker-4", "busy");
    e.set_status("worker-2", "busy");
    e.set_status("worker-1", "idle");
    e.set_status("worker-3", "idle");
    let t_busy = e.add_task(Some("worker-3"), TaskStatus::InProgress);
    let t_done = e.add_task(Some("worker-3"), TaskStatus::Completed);
    let t_other = e.add_task(Some("worker-1"), TaskStatus::InProgress);
    let before = e.store().tasks().unwrap().len();

    // Not enough idle: 2 idle (1 and 3), 3 asked.
    let o = e.cmd(&["down", "t", "3"], &[]);
    assert_eq!(code(&o), 1, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("2 of 4"), "{}", text(&o.stderr));
    assert_eq!(e.store().load().unwrap().workers.len(), 4);

    // Highest idle first: worker-3, not the busy worker-4.
    let out = e.ok(&["down", "t", "1", "--grace", "1s"]);
    assert!(out.contains("removed worker-3"), "{out}");
    let t = e.store().load().unwrap();
    assert_eq!(names(&t), ["worker-1", "worker-2", "worker-4"]);
    assert!(!e.panes().contains(&w3.pane.as_ref().unwrap().pane_id));
    assert!(!alive(
        w3.pane.as_ref().unwrap().pane_pid,
        w3.pane.as_ref().unwrap().process_start
    ));
    assert!(!w3.resources.worker_dir.as_ref().unwrap().exists());
    let tasks = e.store().tasks().unwrap();
    assert_eq!(tasks.len(), before, "no task lost or duplicated");
    let tb = tasks.iter().find(|t| t.id == t_busy).unwrap();
    assert_eq!(
        (tb.status, tb.owner.clone(), tb.version),
        (TaskStatus::Pending, None, 2)
    );
    let td = tasks.iter().find(|t| t.id == t_done).unwrap();
    assert_eq!((td.status, td.version), (TaskStatus::Completed, 1));
    assert_eq!(
        tasks.iter().find(|t| t.id == t_other).unwrap().status,
        TaskStatus::InProgress
    );

    // A late report of the removed incarnation is refused.
    let o = e.cmd(
        &["worker-status", "--state", "idle"],
        &[
            ("TEAM_NAME", "t"),
            ("TEAM_WORKER", "worker-3"),
            ("TEAM_INCARNATION", &w3.incarnation.to_string()),
        ],
    );
    assert_eq!(code(&o), 1);
    // A wrong incarnation for a live worker too.
    let o = e.cmd(
        &[
            "worker-status",
            "t",
            "--worker",
            "worker-1",
            "--state",
            "idle",
            "--incarnation",
            &w4.incarnation.to_string(),
        ],
        &[],
    );
    assert_eq!(code(&o), 1);

    // Named busy worker with --force (no drain wait).
    let t0 = Instant::now();
    let out = e.ok(&[
        "down", "t", "--worker", "worker-4", "--force", "--grace", "1s",
    ]);
    assert!(out.contains("removed worker-4"), "{out}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    // --force fills up with busy ones: worker-1 idle, worker-2 busy; 1 asked -> worker-1.
    // Removing every worker is refused.
    let o = e.cmd(&["down", "t", "2", "--force"], &[]);
    assert_eq!(code(&o), 1);
    assert!(text(&o.stderr).contains("shutdown"), "{}", text(&o.stderr));
    let t = e.store().load().unwrap();
    assert_eq!(names(&t), ["worker-1", "worker-2"]);
    assert!(e.panes().contains(&w1.pane.as_ref().unwrap().pane_id));
    // Usage errors.
    assert_eq!(code(&e.cmd(&["down", "t", "0"], &[])), 64);
    assert_eq!(
        code(&e.cmd(&["down", "t", "1", "--worker", "worker-1"], &[])),
        64
    );
    assert_eq!(code(&e.cmd(&["down", "t", "--worker", "worker-9"], &[])), 1);
}

#[test]
fn drain_ends_early_on_idle_and_times_out_otherwise() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    e.set_status("worker-3", "busy");
    e.set_status("worker-2", "busy");
    // A timeout removes nothing and exits 75, drain mark undone; --force removes it.
    let t0 = Instant::now();
    let o = e.cmd(
        &[
            "down",
            "t",
            "--worker",
            "worker-3",
            "--drain-timeout",
            "1s",
            "--grace",
            "1s",
        ],
        &[],
    );
    assert!(t0.elapsed() >= Duration::from_secs(1));
    assert_eq!(code(&o), 75, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("did not report idle"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        names(&e.store().load().unwrap()),
        ["worker-1", "worker-2", "worker-3"]
    );
    let s = e
        .store()
        .status(&WorkerName::new("worker-3").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(s.state, team_core::model::WorkState::Busy);
    e.ok(&[
        "down", "t", "--worker", "worker-3", "--force", "--grace", "1s",
    ]);
    // Ends early when the worker reports idle.
    let mut child = tests::hermetic(bin())
        .args([
            "down",
            "t",
            "--worker",
            "worker-2",
            "--drain-timeout",
            "20s",
            "--grace",
            "1s",
        ])
        .current_dir(&e.ws)
        .env("TMUX_TMPDIR", &e.tt)
        .env("TEAM_TMUX_CONFIG", "/dev/null")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // Wait for the drain mark, then report idle.
    loop {
        if let Some(s) = e
            .store()
            .status(&WorkerName::new("worker-2").unwrap())
            .unwrap()
            && s.state == team_core::model::WorkState::Draining
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    e.set_status("worker-2", "idle");
    let st = child.wait().unwrap();
    assert!(st.success());
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(names(&e.store().load().unwrap()), ["worker-1"]);
}

#[test]
fn leader_pane_in_a_record_is_refused_and_nothing_is_killed() {
    let e = Env::new();
    let t = e.init();
    e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let leader = t.leader.pane.clone();
    e.edit_team(|v| {
        v["workers"][1]["lifecycle"] = "removing".into();
        v["workers"][1]["pane"]["pane_id"] = leader.pane_id.clone().into();
    });
    for args in [
        &["down", "t", "1"][..],
        &["reconcile", "t"],
        &["shutdown", "t"],
    ] {
        let o = e.cmd(args, &[]);
        assert_eq!(code(&o), 65, "{args:?} {}", text(&o.stderr));
    }
    let panes = e.panes();
    assert!(panes.contains(&leader.pane_id));
    assert!(panes.contains(&w2.pane.as_ref().unwrap().pane_id));
    assert!(alive(leader.pane_pid, leader.process_start));
}

#[test]
fn hostile_records_are_refused_whole_with_no_effect() {
    let e = Env::new();
    e.init();
    let w1 = e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let outside = e.ws.join("precious");
    std::fs::create_dir_all(&outside).unwrap();
    let root = e.root();
    let w1dir = w1.resources.worker_dir.clone().unwrap();
    type Edit<'a> = Box<dyn Fn(&mut serde_json::Value) + 'a>;
    let cases: Vec<Edit> = vec![
        Box::new(|v| v["workers"][1]["resources"]["worker_dir"] = outside.to_str().unwrap().into()),
        Box::new(|v| {
            v["workers"][1]["resources"]["worker_dir"] = format!(
                "{}/workers/../../../precious",
                root.team_dir(&team()).display()
            )
            .into()
        }),
        // A pane id of an active member.
        Box::new(|v| {
            v["workers"][1]["pane"]["pane_id"] = w1.pane.as_ref().unwrap().pane_id.clone().into()
        }),
        Box::new(|v| v["schema_version"] = 99.into()),
    ];
    let orig = std::fs::read(root.team_json(&team())).unwrap();
    for (i, c) in cases.iter().enumerate() {
        std::fs::write(root.team_json(&team()), &orig).unwrap();
        e.edit_team(|v| {
            v["workers"][1]["lifecycle"] = "removing".into();
            c(v)
        });
        let o = e.cmd(&["reconcile", "t"], &[]);
        assert_eq!(code(&o), 65, "case {i}: {}", text(&o.stderr));
        let o = e.cmd(&["down", "t", "1"], &[]);
        assert_eq!(code(&o), 65, "case {i}: {}", text(&o.stderr));
    }
    // Malformed JSON.
    std::fs::write(root.team_json(&team()), b"{\"schema_version\":1,").unwrap();
    assert_eq!(code(&e.cmd(&["reconcile", "t"], &[])), 65);
    // A symlinked parent: the worker dir's parent replaced by a symlink to elsewhere.
    std::fs::write(root.team_json(&team()), &orig).unwrap();
    e.edit_team(|v| v["workers"][1]["lifecycle"] = "removing".into());
    let workers = root.team_dir(&team()).join("workers");
    let moved = e.ws.join("moved-workers");
    std::fs::rename(&workers, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &workers).unwrap();
    let o = e.cmd(&["reconcile", "t"], &[]);
    assert_eq!(code(&o), 65, "{}", text(&o.stderr));
    // No effect anywhere.
    assert!(outside.exists());
    assert!(moved.join(w1dir.file_name().unwrap()).exists());
    assert!(moved.join("worker-2").exists());
    let panes = e.panes();
    for w in [&w1, &w2] {
        assert!(panes.contains(&w.pane.as_ref().unwrap().pane_id));
    }
}

/// Attack: an edited (or cloned) record points a removing worker's directory and startup script
/// at another worker's, inside the state root, so that cleaning it up would delete a live
/// worker's files. A worker's resources are only ever the paths derived from its own name:
/// anything else is refused whole, with no effect.
#[test]
fn a_record_pointing_at_another_workers_files_is_refused() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let w3 = e.add_worker(SLEEPER, false);
    let w2dir = w2.resources.worker_dir.clone().unwrap();
    let w2script = w2.resources.script.clone().unwrap();
    e.edit_team(|v| {
        v["workers"][2]["lifecycle"] = "removing".into();
        v["workers"][2]["resources"]["worker_dir"] = w2dir.to_str().unwrap().into();
        v["workers"][2]["resources"]["script"] = w2script.to_str().unwrap().into();
    });
    for args in [
        &["reconcile", "t"][..],
        &["down", "t", "1"],
        &["shutdown", "t"],
    ] {
        let o = e.cmd(args, &[]);
        assert_eq!(code(&o), 65, "{args:?}: {}", text(&o.stderr));
    }
    assert!(
        w2dir.join("inbox.md").exists(),
        "worker-2's directory is intact"
    );
    assert!(w2script.exists(), "worker-2's startup script is intact");
    let panes = e.panes();
    for w in [&w2, &w3] {
        assert!(panes.contains(&w.pane.as_ref().unwrap().pane_id));
    }
}

#[test]
fn respawned_pane_is_not_killed_and_stays_removing() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let pid = w2.pane.as_ref().unwrap().pane_id.clone();
    let o = e
        .tmux()
        .run(&["respawn-pane", "-k", "-t", &pid, "exec sleep 100001"])
        .unwrap();
    assert!(o.success, "{}", o.stderr);
    let o = e.cmd(
        &[
            "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
        &[],
    );
    assert_eq!(code(&o), 3, "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(
        text(&o.stdout).contains("pane_pid_changed"),
        "{}",
        text(&o.stdout)
    );
    assert!(e.panes().contains(&pid));
    let t = e.store().load().unwrap();
    let w = t.worker(&w2.name).unwrap();
    assert_eq!(w.lifecycle, Lifecycle::Removing);
    assert!(
        w.removal_reasons
            .iter()
            .any(|r| r.contains("pane_pid_changed"))
    );
    // reconcile agrees, and leaves it alone.
    let o = e.cmd(&["reconcile", "t"], &[]);
    assert_eq!(code(&o), 3);
    assert!(e.panes().contains(&pid));
}

#[test]
fn recycled_pane_id_after_server_restart_is_not_killed() {
    let e = Env::new();
    let t = e.init();
    e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let tm = e.tmux();
    let _ = tm.run(&["kill-server"]);
    // A new server on the same socket, with panes until the worker's %N exists again.
    let want = w2.pane.as_ref().unwrap().pane_id.clone();
    let t0 = Instant::now();
    loop {
        let o = tm
            .run(&["new-session", "-d", "-s", "other", "sleep 100000"])
            .unwrap();
        if o.success {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{}", o.stderr);
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..5 {
        if e.panes().contains(&want) {
            break;
        }
        tm.run(&["new-window", "-d", "sleep 100000"]).unwrap();
    }
    assert!(e.panes().contains(&want));
    for args in [
        &["down", "t", "--worker", "worker-2", "--force"][..],
        &["reconcile", "t"],
        &["shutdown", "t"],
    ] {
        let o = e.cmd(args, &[]);
        assert_ne!(code(&o), 0, "{args:?}");
        let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert!(all.contains("server_changed"), "{args:?}: {all}");
        assert!(e.panes().contains(&want), "{args:?} killed a recycled pane");
        assert!(e.panes().contains(&t.leader.pane.pane_id));
    }
    let t = e.store().load().unwrap();
    assert!(t.worker(&w2.name).is_some(), "worker forgotten");
}

#[test]
fn processes_sigterm_ignoring_detached_child_and_unrelated_pid() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    let pidfile = e.ws.join("detached.pid");
    let w2 = e.add_worker(
        &format!(
            "trap '' TERM; setsid sh -c 'echo $$ > {}; exec sleep 100002' & exec sleep 100003",
            pidfile.display()
        ),
        false,
    );
    let t0 = Instant::now();
    while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    let dpid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dstart = team_core::process::start_time(dpid).unwrap();
    let p = w2.pane.clone().unwrap();
    assert!(alive(dpid, dstart) && alive(p.pane_pid, p.process_start));
    let t0 = Instant::now();
    let out = e.ok(&[
        "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
    ]);
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "SIGTERM-ignoring worker needs the grace"
    );
    assert!(out.contains("removed worker-2"), "{out}");
    assert!(
        !alive(p.pane_pid, p.process_start),
        "SIGTERM-ignoring pane process survived"
    );
    assert!(!alive(dpid, dstart), "setsid-detached child survived");

    // An unrelated live process whose pid the state points to is never signalled.
    let mut unrelated = Command::new("sleep").arg("100004").spawn().unwrap();
    let upid = unrelated.id();
    let ustart = team_core::process::start_time(upid).unwrap();
    e.add_worker(SLEEPER, false);
    e.edit_team(|v| {
        let w = &mut v["workers"][1];
        w["pane"]["pane_pid"] = upid.into();
        w["pane"]["process_start"] = ustart.into();
    });
    let o = e.cmd(
        &[
            "down", "t", "--worker", "worker-3", "--force", "--grace", "1s",
        ],
        &[],
    );
    assert_eq!(code(&o), 3, "{}", text(&o.stdout));
    std::thread::sleep(Duration::from_millis(200));
    assert!(alive(upid, ustart), "an unrelated process was signalled");
    assert!(unrelated.try_wait().unwrap().is_none());
    let _ = unrelated.kill();
    let _ = unrelated.wait();
}

#[test]
fn worktree_work_is_saved_on_the_reported_branch() {
    let e = Env::new();
    git(&e.ws, &["init", "-q", "-b", "main"]);
    std::fs::write(e.ws.join("a.txt"), "base\n").unwrap();
    git(&e.ws, &["add", "a.txt"]);
    git(&e.ws, &["commit", "-q", "-m", "base"]);
    e.init();
    e.add_worker(SLEEPER, false);
    let w = e.add_worker(SLEEPER, true);
    let wt = w.resources.worktree.clone().unwrap();
    std::fs::write(wt.path.join("b.txt"), "committed\n").unwrap();
    git(&wt.path, &["add", "b.txt"]);
    git(&wt.path, &["commit", "-q", "-m", "unmerged"]);
    let unmerged = git(&wt.path, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(wt.path.join("a.txt"), "edited\n").unwrap();
    std::fs::write(wt.path.join("new.txt"), "untracked\n").unwrap();
    let out = e.ok(&[
        "down", "t", "--worker", "worker-2", "--force", "--json", "--grace", "1s",
    ]);
    let rec: serde_json::Value = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "worker")
        .unwrap();
    let branch = rec["saved_branch"]
        .as_str()
        .expect("a saved branch")
        .to_string();
    assert!(branch.starts_with("team/t/saved/worker-2-"), "{branch}");
    assert!(!wt.path.exists(), "worktree dir still there");
    assert_eq!(
        git(&e.ws, &["show", &format!("{branch}:a.txt")]),
        "edited\n"
    );
    assert_eq!(
        git(&e.ws, &["show", &format!("{branch}:new.txt")]),
        "untracked\n"
    );
    assert_eq!(
        git(&e.ws, &["show", &format!("{branch}:b.txt")]),
        "committed\n"
    );
    git(&e.ws, &["merge-base", "--is-ancestor", &unmerged, &branch]);
    // The tools' branch was deleted, since the saved branch reaches its commits.
    assert_eq!(rec["branch_deleted"], "team/t/w/worker-2");
}

#[test]
fn unwritable_audit_log_kills_nothing() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    let w2 = e.add_worker(SLEEPER, false);
    let log = e.root().audit_log();
    let _ = std::fs::remove_file(&log);
    std::fs::create_dir_all(&log).unwrap();
    let o = e.cmd(&["down", "t", "1", "--force"], &[]);
    assert!(
        [73, 74].contains(&code(&o)),
        "{} {}",
        code(&o),
        text(&o.stderr)
    );
    assert!(e.panes().contains(&w2.pane.as_ref().unwrap().pane_id));
    assert!(alive(
        w2.pane.as_ref().unwrap().pane_pid,
        w2.pane.as_ref().unwrap().process_start
    ));
    assert_eq!(
        e.store()
            .load()
            .unwrap()
            .worker(&w2.name)
            .unwrap()
            .lifecycle,
        Lifecycle::Active
    );
}

#[test]
fn foreign_panes_survive_and_shutdown_leaves_no_server() {
    let e = Env::new();
    let t = e.init();
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    let tm = e.tmux();
    // A foreign untagged pane, and one tagged by another team, in a second session.
    let o = tm
        .run(&[
            "new-session",
            "-d",
            "-s",
            "foreign",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 100000",
        ])
        .unwrap();
    let foreign = o.stdout.trim().to_string();
    let o = tm
        .run(&[
            "new-window",
            "-d",
            "-t",
            "foreign:",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 100000",
        ])
        .unwrap();
    let other = o.stdout.trim().to_string();
    tm.run(&[
        "set-option",
        "-p",
        "-t",
        &other,
        "@team_owner",
        "someone-else",
    ])
    .unwrap();
    tm.run(&["set-option", "-p", "-t", &other, "@team_incarnation", "x"])
        .unwrap();
    e.set_status("worker-2", "idle");
    e.ok(&["down", "t", "1", "--grace", "1s"]);
    e.ok(&["reconcile", "t"]);
    let panes = e.panes();
    assert!(
        panes.contains(&foreign) && panes.contains(&other),
        "{panes:?} {foreign} {other}"
    );
    e.ok(&["shutdown", "t", "--grace", "1s"]);
    let panes = e.panes();
    assert!(
        panes.contains(&foreign) && panes.contains(&other),
        "{panes:?}"
    );
    assert!(!panes.contains(&t.leader.pane.pane_id));
    let _ = tm.run(&["kill-session", "-t", "foreign"]);
    // Idempotent.
    assert!(e.ok(&["shutdown", "t"]).contains("already stopped"));

    // A team alone on its private server leaves no server.
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    e.ok(&["shutdown", "t", "--grace", "1s"]);
    let tm = e.tmux();
    let t0 = Instant::now();
    while tm.server_answers() {
        assert!(t0.elapsed() < Duration::from_secs(5), "server left behind");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        e.store().load().unwrap().state,
        team_core::model::TeamState::Stopped
    );
}

#[test]
fn crash_at_every_step_then_reconcile_converges() {
    for fp in [
        "down.drained",
        "down.committed",
        "down.stopped",
        "down.killed",
        "down.resources",
        "settle.before_drop",
    ] {
        let e = Env::new();
        e.init();
        e.add_worker(SLEEPER, false);
        let w2 = e.add_worker(SLEEPER, false);
        e.set_status("worker-2", "busy");
        e.add_task(Some("worker-2"), TaskStatus::InProgress);
        e.add_task(Some("worker-1"), TaskStatus::Completed);
        let o = e.cmd(
            &[
                "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
            ],
            &[("TEAM_FAILPOINTS", &format!("{fp}=exit"))],
        );
        assert_eq!(code(&o), 137, "{fp}: {}", text(&o.stderr));
        let o = e.cmd(&["reconcile", "t", "--grace", "1s"], &[]);
        assert_eq!(code(&o), 0, "{fp}: {}{}", text(&o.stdout), text(&o.stderr));
        let t = e.store().load().unwrap();
        let tasks = e.store().tasks().unwrap();
        assert_eq!(tasks.len(), 2, "{fp}");
        let pane = w2.pane.as_ref().unwrap();
        if fp == "down.drained" {
            // Never committed: the worker stays, its drain undone.
            assert_eq!(names(&t), ["worker-1", "worker-2"], "{fp}");
            let s = e.store().status(&w2.name).unwrap().unwrap();
            assert_eq!(s.state, team_core::model::WorkState::Busy, "{fp}");
            assert!(e.panes().contains(&pane.pane_id));
        } else {
            assert_eq!(names(&t), ["worker-1"], "{fp}");
            assert!(!e.panes().contains(&pane.pane_id), "{fp}: orphan pane");
            assert!(!alive(pane.pane_pid, pane.process_start), "{fp}");
            assert!(
                tasks.iter().all(|t| t.owner.as_ref() != Some(&w2.name)),
                "{fp}"
            );
            assert!(!w2.resources.worker_dir.as_ref().unwrap().exists(), "{fp}");
        }
        let gen_before = t.generation;
        let o = e.cmd(&["reconcile", "t", "--json"], &[]);
        assert_eq!(code(&o), 0, "{fp}");
        assert!(
            text(&o.stdout).contains("\"changed\":false"),
            "{fp}: {}",
            text(&o.stdout)
        );
        assert_eq!(
            e.store().load().unwrap().generation,
            gen_before,
            "{fp}: second reconcile changed state"
        );
    }
}

/// Attack: a worker reports idle, then claims a task (as an agent does when it starts work).
/// `down` without `--force` must take it for busy: it removes an idle worker that holds no
/// task instead, and the claimed task stays the worker's, in progress.
#[test]
fn a_worker_that_claimed_a_task_after_reporting_idle_is_busy() {
    let e = Env::new();
    e.init();
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    e.add_worker(SLEEPER, false);
    e.set_status("worker-1", "idle");
    e.set_status("worker-2", "idle");
    let id = e.add_task(Some("worker-2"), TaskStatus::Pending);
    e.ok(&[
        "task",
        "claim",
        &id.to_string(),
        "t",
        "--worker",
        "worker-2",
    ]);
    let o = e.cmd(&["down", "t", "1", "--grace", "1s"], &[]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let t = e.store().load().unwrap();
    assert_eq!(
        names(&t),
        ["worker-2", "worker-3"],
        "the worker holding a task stays"
    );
    let task = e
        .store()
        .tasks()
        .unwrap()
        .into_iter()
        .find(|t| t.id == id)
        .unwrap();
    assert_eq!(task.status, TaskStatus::InProgress);
    // Named, without --force: it is drained, not taken, while it holds the task.
    let o = e.cmd(
        &["down", "t", "--worker", "worker-2", "--drain-timeout", "1s"],
        &[],
    );
    assert_eq!(code(&o), 75, "{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(names(&e.store().load().unwrap()), ["worker-2", "worker-3"]);
}
