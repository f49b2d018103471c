//! `team-scale up` against real tmux on private sockets.
//!
//! Every test has its own temp dir with TMUX_TMPDIR inside it, so the team's private socket
//! lands there; TMUX/TMUX_PANE are removed from every child; every server under
//! `<tmp>/tt/tmux-<uid>/` is killed with `kill-server -S <socket>` when the fixture drops
//! (also on panic). Fail-point tests need `--features failpoints`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// team-scale, built once by the harness.
fn bin() -> PathBuf {
    tests::bin("team-scale")
}

struct Fx {
    dir: tempfile::TempDir,
    ws: PathBuf,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

#[derive(Debug, Clone)]
struct Pane {
    id: String,
    window: String,
    owner: String,
    worker: String,
    incarnation: String,
    op: String,
    start: String,
}

impl Drop for Fx {
    fn drop(&mut self) {
        for s in self.sockets() {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(&s)
                .arg("kill-server")
                .env_remove("TMUX")
                .env_remove("TMUX_PANE")
                .output();
        }
    }
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(dir.path().join("tt")).unwrap();
        let ws = ws.canonicalize().unwrap();
        Fx { dir, ws }
    }

    fn sockets(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(self.dir.path().join("tt")) {
            for d in rd.flatten() {
                if let Ok(rd2) = std::fs::read_dir(d.path()) {
                    out.extend(rd2.flatten().map(|e| e.path()));
                }
            }
        }
        out
    }

    fn cmd(&self, args: &[&str], envs: &[(&str, &str)]) -> Command {
        let mut c = tests::hermetic(bin());
        c.arg("--workspace").arg(&self.ws).args(args);
        c.env("TMUX_TMPDIR", self.dir.path().join("tt"))
            .env("TEAM_TMUX_CONFIG", "/dev/null");
        for (k, v) in envs {
            c.env(k, v);
        }
        c
    }

    fn run_with(&self, args: &[&str], envs: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut c = self.cmd(args, envs);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut i = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            i.write_all(s.as_bytes()).unwrap();
        }
        drop(i);
        let o = child.wait_with_output().unwrap();
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[], None)
    }

    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "{args:?}: {}\n{}", r.stdout, r.stderr);
        r
    }

    fn init(&self, extra: &[&str]) {
        let mut a = vec![
            "init",
            "demo",
            "--private",
            "--worker-cmd",
            "echo I am $TEAM_WORKER/$TEAM_ROLE; exec cat",
        ];
        a.extend_from_slice(extra);
        self.ok(&a);
    }

    fn state(&self) -> PathBuf {
        self.ws.join(".team")
    }

    fn team_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.state().join("teams/demo/team.json")).unwrap())
            .unwrap()
    }

    fn tmux(&self, args: &[&str]) -> String {
        let socks = self.sockets();
        assert_eq!(socks.len(), 1, "{socks:?}");
        let o = Command::new("tmux")
            .arg("-S")
            .arg(&socks[0])
            .args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into()
    }

    fn panes(&self) -> Vec<Pane> {
        let f = "#{pane_id}\t#{window_id}\t#{@team_owner}\t#{@team_worker}\t#{@team_incarnation}\t#{@team_op}\t#{pane_start_command}";
        self.tmux(&["list-panes", "-a", "-F", f])
            .lines()
            .map(|l| {
                let p: Vec<&str> = l.split('\t').collect();
                Pane {
                    id: p[0].into(),
                    window: p[1].into(),
                    owner: p[2].into(),
                    worker: p[3].into(),
                    incarnation: p[4].into(),
                    op: p[5].into(),
                    start: p[6].into(),
                }
            })
            .collect()
    }

    /// Panes carrying a worker incarnation tag.
    fn worker_panes(&self) -> Vec<Pane> {
        self.panes()
            .into_iter()
            .filter(|p| !p.incarnation.is_empty())
            .collect()
    }

    /// Every file under the state dir except lock files (their content names the last holder).
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().to_string();
                if rel.starts_with("locks") {
                    continue;
                }
                if p.is_dir() {
                    out.insert(format!("{rel}/"), Vec::new());
                    walk(base, &p, out);
                } else {
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.state(), &self.state(), &mut out);
        out
    }

    fn workers(&self) -> Vec<Value> {
        self.team_json()["workers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn status(&self) -> Vec<Value> {
        self.ok(&["status", "demo", "--json"])
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every worker pane on the server is an active member's recorded pane, with matching tags.
fn assert_membership_matches(fx: &Fx) {
    let t = fx.team_json();
    let owner = t["owner_id"].as_str().unwrap().to_string();
    let ws = t["workers"].as_array().unwrap();
    for w in ws {
        assert_eq!(w["lifecycle"], "active", "{w}");
    }
    let panes = fx.worker_panes();
    assert_eq!(panes.len(), ws.len(), "{panes:?} vs {ws:?}");
    for p in panes {
        let w = ws
            .iter()
            .find(|w| w["pane"]["pane_id"] == p.id.as_str())
            .unwrap_or_else(|| panic!("tagged pane {p:?} is not a member's"));
        assert_eq!(w["name"], p.worker.as_str());
        assert_eq!(w["incarnation"], p.incarnation.as_str());
        assert_eq!(p.owner, owner);
    }
}

fn wait_for_text(fx: &Fx, pane: &str, text: &str) -> String {
    let mut screen = String::new();
    for _ in 0..100 {
        screen = fx.tmux(&["capture-pane", "-p", "-J", "-t", pane]);
        if screen.contains(text) {
            return screen;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{text:?} never appeared in {pane}: {screen}");
}

#[test]
fn up_one_then_three_makes_tagged_live_members() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "8", "--ready-pattern", "I am"]);
    // Into a team with no members yet: splits from the leader.
    let r = fx.ok(&["up", "demo", "--json"]);
    let lines = json_lines(&r.stdout);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "worker");
    assert_eq!(lines[0]["worker"], "worker-1");
    assert_eq!(lines[0]["ready"], "ready");
    assert_eq!(lines[1]["type"], "summary");
    let r = fx.ok(&["up", "demo", "3", "--json"]);
    let lines = json_lines(&r.stdout);
    let names: Vec<&str> = lines[..3]
        .iter()
        .map(|l| l["worker"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["worker-2", "worker-3", "worker-4"]);
    let summary = &lines[3];
    // Three for the panes; delivery reads every new pane in one capture per 100 ms round and
    // types into all of them in one batch, so its cost does not grow with N.
    assert!(
        summary["tmux_invocations"].as_u64().unwrap() <= 3 * 3 + 25,
        "{summary}"
    );

    assert_membership_matches(&fx);
    let status = fx.status();
    let workers: Vec<&Value> = status.iter().filter(|l| l["type"] == "worker").collect();
    assert_eq!(workers.len(), 4);
    for w in &workers {
        assert_eq!(w["liveness"], "live", "{w}");
        assert_eq!(w["lifecycle"], "active");
    }
    // The op id is in each pane's start command and tag; the runtime exports the identity.
    let t = fx.team_json();
    for (w, p) in t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(fx.worker_panes())
    {
        let _ = p;
        let pane = fx
            .worker_panes()
            .into_iter()
            .find(|p| w["pane"]["pane_id"] == p.id.as_str())
            .unwrap();
        let op = w["op_id"].as_str().unwrap();
        assert_eq!(pane.op, op);
        assert!(pane.start.contains(&format!("--op {op}")), "{}", pane.start);
        let name = w["name"].as_str().unwrap();
        wait_for_text(&fx, &pane.id, &format!("I am {name}/worker"));
        // The trigger named the inbox.
        wait_for_text(&fx, &pane.id, "inbox.md");
        let script = fx.state().join(format!("teams/demo/runtime/{name}.sh"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let s = std::fs::read_to_string(&script).unwrap();
        for var in [
            "TEAM_NAME",
            "TEAM_WORKER",
            "TEAM_ROLE",
            "TEAM_OWNER",
            "TEAM_INCARNATION",
            "TEAM_STATE_DIR",
            "TEAM_WORKSPACE",
            "TEAM_INBOX",
        ] {
            assert!(
                s.contains(&format!("export {var}=")),
                "{var} missing from {s}"
            );
        }
    }
    assert_eq!(t["next_worker_index"], 5);
}

#[test]
fn tasks_from_file_and_stdin_land_with_owners_and_inboxes() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "8"]);
    let file = fx.dir.path().join("tasks.json");
    std::fs::write(
        &file,
        r#"[{"subject":"write the parser","description":"in src/parse.rs","owner":"new:1"},
            {"subject":"review","owner":"worker-2","blocked_by":["new:1"]},
            {"subject":"anyone"}]"#,
    )
    .unwrap();
    fx.ok(&[
        "up",
        "demo",
        "2",
        "--tasks",
        file.to_str().unwrap(),
        "--ready-timeout",
        "0",
    ]);
    let tasks_dir = fx.state().join("teams/demo/tasks");
    let read = |id: u64| -> Value {
        serde_json::from_slice(&std::fs::read(tasks_dir.join(format!("{id}.json"))).unwrap())
            .unwrap()
    };
    assert_eq!(read(1)["owner"], "worker-1");
    assert_eq!(read(2)["owner"], "worker-2");
    assert_eq!(read(2)["blocked_by"], serde_json::json!([1]));
    assert!(read(3)["owner"].is_null());
    let inbox = |w: &str| {
        std::fs::read_to_string(fx.state().join(format!("teams/demo/workers/{w}/inbox.md")))
            .unwrap()
    };
    assert!(inbox("worker-1").contains("#1: write the parser"));
    assert!(inbox("worker-1").contains("in src/parse.rs"));
    assert!(
        !inbox("worker-1").contains("#2: review\n  (blocked") || inbox("worker-1").contains("Open")
    );
    assert!(inbox("worker-2").contains("#2: review"));
    assert!(
        inbox("worker-2").contains("#3: anyone"),
        "open tasks are listed"
    );

    // From stdin, owned by an existing member and by the new worker.
    let r = fx.run_with(
        &["up", "demo", "1", "--tasks", "-", "--ready-timeout", "0", "--json"],
        &[],
        Some(r#"[{"subject":"more","owner":"worker-1"},{"subject":"mine","owner":"worker-3","blocked_by":[1]}]"#),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(read(4)["owner"], "worker-1");
    assert_eq!(read(5)["owner"], "worker-3");
    assert_eq!(read(5)["blocked_by"], serde_json::json!([1]));
    assert!(inbox("worker-3").contains("#5: mine"));
    assert_membership_matches(&fx);
}

#[test]
fn capacity_refusal_changes_nothing() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "2"]);
    fx.ok(&["up", "demo", "1", "--ready-timeout", "0"]);
    let before = fx.files();
    let panes_before = fx.panes().len();
    let r = fx.run(&["up", "demo", "2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("max_workers 2"), "{}", r.stderr);
    assert!(r.stderr.contains("1 members"), "{}", r.stderr);
    assert_eq!(fx.files(), before);
    assert_eq!(fx.panes().len(), panes_before);
}

#[test]
fn bad_task_input_exits_65_with_no_effect() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "4"]);
    fx.ok(&["up", "demo", "1", "--ready-timeout", "0"]);
    let before = fx.files();
    let panes_before = fx.panes().len();
    for (input, field) in [
        ("[{\"subject\": ", "not valid JSON"),
        (r#"[{"subject":"a","owner":"worker-9"}]"#, "tasks[0].owner"),
        (
            r#"[{"subject":"a"},{"subject":"b","blocked_by":[42]}]"#,
            "tasks[1].blocked_by",
        ),
        (
            r#"[{"subject":"a","blocked_by":["new:5"]}]"#,
            "tasks[0].blocked_by",
        ),
        (r#"[{"subject":"a","owner":"new:3"}]"#, "tasks[0].owner"),
        (r#"[{"subjekt":"a"}]"#, "subjekt"),
    ] {
        let r = fx.run_with(&["up", "demo", "2", "--tasks", "-"], &[], Some(input));
        assert_eq!(r.code, 65, "{input}: {}", r.stderr);
        assert!(r.stderr.contains(field), "{input}: {}", r.stderr);
        assert_eq!(fx.files(), before, "{input}");
        assert_eq!(fx.panes().len(), panes_before);
    }
    let r = fx.run(&["up", "demo", "0"]);
    assert_eq!(r.code, 64);
    let r = fx.run(&["up", "demo", "1", "--role", "Bad Role"]);
    assert_eq!(r.code, 64);
    assert_eq!(fx.files(), before);
}

/// team.json without the fields a rolled-back op may move.
fn stable(mut t: Value) -> Value {
    for k in ["generation", "next_worker_index", "next_task_id"] {
        t.as_object_mut().unwrap().remove(k);
    }
    t
}

fn assert_clean_rollback(fx: &Fx, before: &Value, before_panes: usize, what: &str) {
    let after = fx.team_json();
    assert_eq!(stable(after.clone()), stable(before.clone()), "{what}");
    assert!(
        after["next_worker_index"].as_u64() > before["next_worker_index"].as_u64(),
        "{what}: the index is never rewound"
    );
    assert_eq!(fx.panes().len(), before_panes, "{what}: {:?}", fx.panes());
    assert_membership_matches(fx);
    let tasks = fx.state().join("teams/demo/tasks");
    let n = std::fs::read_dir(&tasks).map(|r| r.count()).unwrap_or(0);
    assert_eq!(n, 0, "{what}: tasks left");
    let names: Vec<String> = after["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    for sub in ["teams/demo/workers", "teams/demo/runtime", "worktrees/demo"] {
        if let Ok(rd) = std::fs::read_dir(fx.state().join(sub)) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().replace(".sh", "");
                assert!(names.contains(&n), "{what}: {sub}/{n} left behind");
            }
        }
    }
}

#[test]
fn fail_points_roll_back_cleanly() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "8", "--ready-pattern", "I am"]);
    fx.ok(&["up", "demo", "1"]);
    let tasks = r#"[{"subject":"a","owner":"new:1"},{"subject":"b","owner":"worker-1"}]"#;
    for point in [
        "up.reserved",
        "up.prepared",
        "up.split",
        "up.tagged",
        "up.ready",
        "up.triggered",
        "up.commit",
    ] {
        let before = fx.team_json();
        let before_panes = fx.panes().len();
        let spec = format!("{point}=error");
        let r = fx.run_with(
            &["up", "demo", "3", "--tasks", "-"],
            &[("TEAM_FAILPOINTS", &spec)],
            Some(tasks),
        );
        assert_eq!(r.code, 70, "{point}: {}", r.stderr);
        assert!(r.stderr.contains(point), "{point}: {}", r.stderr);
        assert_clean_rollback(&fx, &before, before_panes, point);
    }
    // Still works afterwards, with fresh indices.
    let r = fx.ok(&["up", "demo", "1", "--json"]);
    assert_eq!(json_lines(&r.stdout)[0]["worker"], "worker-23");
}

#[test]
fn crash_points_are_cleaned_by_reconcile() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "8"]);
    fx.ok(&["up", "demo", "1", "--ready-timeout", "0"]);
    for point in [
        "up.reserved",
        "up.prepared",
        "up.split",
        "up.tagged",
        "up.ready",
        "up.triggered",
        "up.commit",
    ] {
        let before = fx.team_json();
        let before_panes = fx.panes().len();
        let spec = format!("{point}=exit");
        let r = fx.run_with(
            &["up", "demo", "2", "--ready-timeout", "0"],
            &[("TEAM_FAILPOINTS", &spec)],
            None,
        );
        assert_eq!(r.code, 137, "{point}: {}", r.stderr);
        let pending = fx
            .workers()
            .iter()
            .filter(|w| w["lifecycle"] == "pending")
            .count();
        assert_eq!(
            pending, 2,
            "{point}: the crash left its reservations recorded"
        );
        let r = fx.ok(&["reconcile", "demo", "--json"]);
        let summary = json_lines(&r.stdout).pop().unwrap();
        assert_eq!(
            summary["remaining"],
            serde_json::json!([]),
            "{point}: {}",
            r.stdout
        );
        assert_clean_rollback(&fx, &before, before_panes, point);
        // Idempotent.
        fx.ok(&["reconcile", "demo"]);
    }
    // A crash after the commit leaves members, nothing to reconcile.
    let r = fx.run_with(
        &["up", "demo", "1", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.committed=exit")],
        None,
    );
    assert_eq!(r.code, 137);
    fx.ok(&["reconcile", "demo"]);
    assert_eq!(fx.workers().len(), 2);
    assert_membership_matches(&fx);
}

#[test]
fn next_up_settles_abandoned_reservations_first() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "3"]);
    let r = fx.run_with(
        &["up", "demo", "3", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.tagged=exit")],
        None,
    );
    assert_eq!(r.code, 137);
    assert_eq!(fx.worker_panes().len(), 3);
    // Capacity counts only live reservations: the abandoned ones are torn down first.
    let r = fx.run_with(
        &["up", "demo", "3", "--ready-timeout", "0", "--json"],
        &[],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let summary = json_lines(&r.stdout).pop().unwrap();
    assert_eq!(summary["settled"].as_array().unwrap().len(), 3);
    assert_membership_matches(&fx);
    assert_eq!(fx.worker_panes().len(), 3);
}

fn edit_team(fx: &Fx, f: impl FnOnce(&mut Value)) {
    let p = fx.state().join("teams/demo/team.json");
    let mut t = fx.team_json();
    f(&mut t);
    std::fs::write(&p, serde_json::to_vec_pretty(&t).unwrap()).unwrap();
}

#[test]
fn unprovable_source_is_refused_before_anything_is_made() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "8"]);
    // The leader's recorded pane pid no longer matches (a recycled pane would look so).
    edit_team(&fx, |t| {
        let pid = t["leader"]["pane"]["pane_pid"].as_u64().unwrap();
        t["leader"]["pane"]["pane_pid"] = (pid + 100_000).into();
    });
    let before = fx.files();
    let r = fx.run(&["up", "demo", "2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("pane_pid_changed"), "{}", r.stderr);
    assert_eq!(fx.files(), before);
    assert_eq!(fx.panes().len(), 1);

    // With members, the source is the last member that is proven live: worker-2's pid
    // changed, so up splits from worker-1 instead, leaves worker-2's pane alone and says so.
    let fx = Fx::new();
    fx.init(&["--max-workers", "8"]);
    fx.ok(&["up", "demo", "2", "--ready-timeout", "0"]);
    edit_team(&fx, |t| {
        let w = &mut t["workers"][1]["pane"];
        let pid = w["pane_pid"].as_u64().unwrap();
        w["pane_pid"] = (pid + 100_000).into();
    });
    let r = fx.run(&["up", "demo", "1", "--ready-timeout", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("split from the member worker-1 instead of worker-2"),
        "{}",
        r.stderr
    );
    assert_eq!(fx.panes().len(), 4);
}

#[test]
fn up_8_into_a_small_session_opens_windows() {
    let fx = Fx::new();
    // 80x24 holds 4 workers of at least 20x5 beside the leader, 12 in a window of their own.
    fx.init(&["--max-workers", "18", "--size", "80x24"]);
    let r = fx.ok(&["up", "demo", "8", "--ready-timeout", "0", "--json"]);
    let lines = json_lines(&r.stdout);
    assert_eq!(lines.len(), 9);
    assert_eq!(
        lines[..8]
            .iter()
            .filter(|l| l["new_window"] == true)
            .count(),
        4,
        "{}",
        r.stdout
    );
    assert_membership_matches(&fx);
    let r = fx.ok(&["up", "demo", "10", "--ready-timeout", "0", "--json"]);
    let lines = json_lines(&r.stdout);
    assert!(
        lines[..10].iter().any(|l| l["new_window"] == true),
        "the full window continued in a new one: {}",
        r.stdout
    );
    let mut windows: Vec<String> = fx.panes().into_iter().map(|p| p.window).collect();
    windows.sort();
    windows.dedup();
    assert!(windows.len() >= 2, "{windows:?}");
    assert_membership_matches(&fx);
    for w in fx.status().iter().filter(|l| l["type"] == "worker") {
        assert_eq!(w["liveness"], "live", "{w}");
    }
}

#[test]
fn concurrent_ups_respect_max_workers() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "4"]);
    let children: Vec<_> = (0..8)
        .map(|_| {
            fx.cmd(&["up", "demo", "1", "--ready-timeout", "0"], &[])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes = Vec::new();
    for c in children {
        let o = c.wait_with_output().unwrap();
        codes.push(o.status.code().unwrap());
    }
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 4, "{codes:?}");
    assert!(codes.iter().all(|c| [0, 1, 75].contains(c)), "{codes:?}");
    assert_eq!(fx.workers().len(), 4);
    assert_membership_matches(&fx);
    for w in fx.status().iter().filter(|l| l["type"] == "worker") {
        assert_eq!(w["liveness"], "live", "{w}");
    }
}

#[test]
fn scaling_can_be_switched_off_per_team_and_by_environment() {
    let fx = Fx::new();
    fx.init(&["--max-workers", "4", "--no-scaling"]);
    let r = fx.run(&["up", "demo"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("policy demo --scaling on"),
        "{}",
        r.stderr
    );
    fx.ok(&["policy", "demo", "--scaling", "on"]);
    let before = fx.files();
    let r = fx.run_with(&["up", "demo"], &[("TEAM_SCALING", "0")], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("TEAM_SCALING"), "{}", r.stderr);
    assert_eq!(fx.files(), before);
    assert_eq!(fx.panes().len(), 1);
    fx.ok(&["up", "demo", "--ready-timeout", "0"]);
    fx.ok(&["policy", "demo", "--scaling", "off"]);
    assert_eq!(fx.run(&["up", "demo"]).code, 1);
    assert_eq!(fx.workers().len(), 1);
    // down is switched off the same ways; shutdown and reconcile still work.
    fx.ok(&["policy", "demo", "--scaling", "on"]);
    fx.ok(&["up", "demo", "--ready-timeout", "0"]);
    let before = fx.files();
    let r = fx.run_with(&["down", "demo", "1"], &[("TEAM_SCALING", "0")], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("TEAM_SCALING"), "{}", r.stderr);
    assert_eq!(fx.files(), before, "a refused down changes nothing");
    fx.ok(&["policy", "demo", "--scaling", "off"]);
    let r = fx.run(&["down", "demo", "1"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("policy demo --scaling on"),
        "{}",
        r.stderr
    );
    assert_eq!(fx.workers().len(), 2);
    let r = fx.run_with(&["reconcile", "demo"], &[("TEAM_SCALING", "0")], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = fx.run_with(
        &["shutdown", "demo", "--grace", "1s"],
        &[("TEAM_SCALING", "0")],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(fx.workers().is_empty());
}

fn git(ws: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(ws)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into()
}

fn git_repo(fx: &Fx) {
    git(&fx.ws, &["init", "-q", "-b", "main"]);
    std::fs::write(fx.ws.join("README"), "x\n").unwrap();
    git(&fx.ws, &["add", "README"]);
    git(&fx.ws, &["commit", "-q", "-m", "one"]);
}

#[test]
fn worktrees_detached_and_branch_modes() {
    let fx = Fx::new();
    git_repo(&fx);
    fx.init(&["--max-workers", "4", "--worktree", "detached"]);
    let r = fx.ok(&["up", "demo", "2", "--ready-timeout", "0", "--json"]);
    let l = json_lines(&r.stdout);
    let wt = PathBuf::from(l[0]["worktree"].as_str().unwrap());
    assert!(wt.join("README").exists());
    assert!(l[0]["branch"].is_null());
    let list = git(&fx.ws, &["worktree", "list"]);
    assert!(
        list.contains("worktrees/demo/worker-1") && list.contains("detached"),
        "{list}"
    );
    // The worker runs inside its worktree.
    let pid = l[0]["pane_pid"].as_u64().unwrap();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd, wt.canonicalize().unwrap());

    let fx = Fx::new();
    git_repo(&fx);
    fx.init(&["--max-workers", "4", "--worktree", "branch:agents"]);
    let r = fx.ok(&["up", "demo", "2", "--ready-timeout", "0", "--json"]);
    let l = json_lines(&r.stdout);
    assert_eq!(l[1]["branch"], "agents/worker-2");
    let branches = git(&fx.ws, &["branch", "--list", "agents/*"]);
    assert!(branches.contains("agents/worker-1") && branches.contains("agents/worker-2"));
    assert_eq!(
        fx.workers()[0]["resources"]["worktree"]["branch_created"],
        true
    );
}

#[test]
fn rollback_removes_created_worktrees_and_branches_only() {
    let fx = Fx::new();
    git_repo(&fx);
    git(&fx.ws, &["branch", "keep-me"]);
    fx.init(&["--max-workers", "4", "--worktree", "branch:agents"]);
    let before = fx.team_json();
    let r = fx.run_with(
        &["up", "demo", "2", "--ready-timeout", "0"],
        &[("TEAM_FAILPOINTS", "up.triggered=error")],
        None,
    );
    assert_eq!(r.code, 70, "{}", r.stderr);
    assert_clean_rollback(&fx, &before, 1, "branch mode");
    let branches = git(&fx.ws, &["branch", "--list"]);
    assert!(!branches.contains("agents/"), "{branches}");
    assert!(branches.contains("keep-me"));
    let list = git(&fx.ws, &["worktree", "list"]);
    assert_eq!(list.lines().count(), 1, "{list}");
}
