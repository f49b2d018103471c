//! Readers (`status`, `list`) take no lock: they never wait for a writer, are never refused as
//! busy, and never see a half-written state.

use std::time::{Duration, Instant};

use team_core::lock::{self, Holder};
use team_core::paths::TeamName;
use tests::{Sandbox, assert_code, json_lines};

fn summary(o: &std::process::Output) -> serde_json::Value {
    json_lines(&o.stdout)
        .into_iter()
        .find(|r| r["type"] == "summary")
        .expect("a summary line")
}

/// A writer holding the state lock (as every read-modify-write does) does not make a reader
/// wait or exit 75, even with `--wait 0s`.
#[test]
fn status_and_list_never_wait_for_a_writer() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    let root = sb.root();
    let team = TeamName::new("demo").unwrap();
    let _state = lock::acquire_in(
        root.path(),
        &root.state_lock(&team),
        Duration::ZERO,
        &Holder::me("test-writer"),
    )
    .unwrap();
    let _scale = lock::acquire_in(
        root.path(),
        &root.scale_lock(&team),
        Duration::ZERO,
        &Holder::me("test-writer"),
    )
    .unwrap();
    let t0 = Instant::now();
    let o = sb.run("team-scale", &["status", "demo", "--json", "--wait", "0s"]);
    assert_code(&o, 0);
    let s = summary(&o);
    assert_eq!(s["leader_liveness"], "live", "{s}");
    assert!(
        s["lock_holder"]["op"] == "test-writer",
        "the holder is shown: {s}"
    );
    let o = sb.run("team-scale", &["list", "--json", "--wait", "0s"]);
    assert_code(&o, 0);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

/// `peek` is a reader too (and one that yields the CPU must never hold a lock a writer waits
/// for): a writer holding the state lock does not make it wait or exit 75.
#[test]
fn peek_never_waits_for_a_writer() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let root = sb.root();
    let team = TeamName::new("demo").unwrap();
    let _state = lock::acquire_in(
        root.path(),
        &root.state_lock(&team),
        Duration::ZERO,
        &Holder::me("test-writer"),
    )
    .unwrap();
    let o = sb.run(
        "team-scale",
        &["peek", "demo", "worker-1", "--json", "--wait", "0s"],
    );
    assert_code(&o, 0);
}

/// A journal on disk (a multi-file change being applied) is shown as an operation in flight;
/// the reader neither waits for it nor replays it: the next writer does.
#[test]
fn a_journal_in_flight_is_reported_not_replayed_by_readers() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    let root = sb.root();
    let team = TeamName::new("demo").unwrap();
    let team_json = root.team_json(&team);
    let before = std::fs::read(&team_json).unwrap();
    // A real journal: a committed change (the generation goes up) whose apply step has not run.
    let mut t: serde_json::Value = serde_json::from_slice(&before).unwrap();
    let gen_before = t["generation"].as_u64().unwrap();
    t["generation"] = (gen_before + 1).into();
    t["settings"]["max_workers"] = 5.into();
    let dir = root.team_dir(&team);
    let j = team_core::journal::Journal::new(
        gen_before,
        vec![team_core::journal::Entry {
            path: "team.json".into(),
            content: Some(serde_json::to_string_pretty(&t).unwrap()),
        }],
    );
    team_core::journal::commit(root.path(), &dir, &j).unwrap();
    let o = sb.run("team-scale", &["status", "demo", "--json", "--wait", "0s"]);
    assert_code(&o, 0);
    let s = summary(&o);
    assert_eq!(s["operation_in_flight"], true, "{s}");
    assert_eq!(
        s["generation"], gen_before,
        "the committed generation on disk: {s}"
    );
    assert_eq!(
        std::fs::read(&team_json).unwrap(),
        before,
        "a reader does not replay"
    );
    // The next writer replays it.
    assert_code(&sb.run("team-scale", &["policy", "demo"]), 0);
    let o = sb.run("team-scale", &["status", "demo", "--json"]);
    let s = summary(&o);
    assert_eq!(
        (
            s["operation_in_flight"].as_bool(),
            s["max_workers"].as_u64()
        ),
        (Some(false), Some(5)),
        "{s}"
    );
}

/// Readers racing a stream of writers always read a whole state (never a torn or empty file).
#[test]
fn readers_racing_writers_always_see_a_whole_state() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let cmd = |on: &str| {
            let mut c = sb.cmd("team-scale");
            c.args(["policy", "demo", "--scaling", on]);
            c
        };
        let mut cmds = [cmd("off"), cmd("on")];
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let o = cmds[(n % 2) as usize].output().unwrap();
                assert!(o.status.success(), "{o:?}");
                n += 1;
            }
            n
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut reads = 0;
    while Instant::now() < deadline {
        let o = sb.run("team-scale", &["status", "demo", "--json", "--wait", "0s"]);
        assert_code(&o, 0);
        let s = summary(&o);
        assert!(s["scaling"].is_boolean(), "{s}");
        reads += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(reads > 5 && writes > 5, "reads {reads}, writes {writes}");
}

/// `SCHED_IDLE`, as `/proc/<pid>/stat` shows a scheduling policy.
const SCHED_IDLE: i32 = 5;

/// The scheduling policy of a running process (`/proc/<pid>/stat`, field 41).
fn policy_of(pid: u32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 1..];
    // Fields from the 3rd on: state is index 0, policy (field 41) index 38.
    after.split_whitespace().nth(38)?.parse().ok()
}

/// Runs `team-scale args` with its output going to a pipe (as an agent's tool call or a
/// script polling the team) while the team's socket answers nothing, so the reader stays in
/// its listing; returns its scheduling policy once it has had time to set it, and ends it.
fn reader_policy(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> i32 {
    let mut c = sb.cmd("team-scale");
    c.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let _end = tests::KillOnDrop::now([child.id()]);
    // The priority is set before anything else is done; give it that moment, and stop early
    // once it shows.
    let t0 = Instant::now();
    let mut policy = policy_of(child.id()).unwrap_or(0);
    while policy == 0 && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
        policy = policy_of(child.id()).unwrap_or(policy);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the reader {args:?} was still reading"
    );
    let _ = child.kill();
    let _ = child.wait();
    policy
}

/// Attack: twenty agents poll `status --json` back to back on a two-core machine, and the
/// leader's `up`/`down` get a tenth of the CPU. A reader whose output goes to a program yields:
/// it runs in `SCHED_IDLE` (`status`, `list`, `task list`, `peek`), unless `TEAM_READERS_YIELD`
/// is off. A command that changes the team keeps its priority. (The readers seen here are those
/// that wait on tmux; `team-scale`'s unit test names every reader.)
#[test]
fn a_reader_writing_to_a_program_yields_the_cpu() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    // The team's socket accepts and never answers: every reader waits in its listing.
    let sock = sb.private_sock();
    let aside = sb.dir.path().join("real-server");
    std::fs::rename(&sock, &aside).unwrap();
    // However the test ends, the real server is back on its socket before the sandbox kills it.
    let _back = PutBack(sock.clone(), aside.clone());
    let silent = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for c in silent.incoming().flatten() {
            keep.lock().unwrap().push(c);
        }
    });
    for args in [
        &["status", "demo", "--json"][..],
        &["status", "demo"],
        &["--json", "status", "demo"],
        &["peek", "demo", "worker-1"],
    ] {
        assert_eq!(reader_policy(&sb, args, &[]), SCHED_IDLE, "{args:?} yields");
    }
    assert_eq!(
        reader_policy(
            &sb,
            &["status", "demo", "--json"],
            &[("TEAM_READERS_YIELD", "off")]
        ),
        0,
        "TEAM_READERS_YIELD=off keeps the priority"
    );
    // A writer keeps its priority (`up` waits in the same listing).
    assert_eq!(
        reader_policy(&sb, &["up", "demo", "1", "--ready-timeout", "0"], &[]),
        0,
        "a writer keeps its priority"
    );
}

/// Moves a server's socket (`.1`) back over its stand-in (`.0`) when dropped.
struct PutBack(std::path::PathBuf, std::path::PathBuf);

impl Drop for PutBack {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::rename(&self.1, &self.0);
    }
}

/// Attack: `status` runs at idle priority and, to say whether a scale operation is in flight,
/// used to take the scale lock shared for an instant. On a busy machine a reader preempted in
/// that instant kept a writer's try-lock failing (and backing off) for as long as it was not
/// scheduled. Here the reader is pinned inside its look at the lock (a fail point); the writer
/// must still get the lock at once (`--wait 0s`).
#[test]
fn a_reader_looking_at_the_scale_lock_never_holds_it() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    let mut reader = sb
        .cmd("team-scale")
        .args(["status", "demo", "--json", "--wait", "0s"])
        .env("TEAM_FAILPOINTS", "lock.probe=sleep4000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The reader reaches its look at the lock well within this.
    std::thread::sleep(Duration::from_millis(1000));
    let o = sb.run(
        "team-scale",
        &["up", "demo", "1", "--ready-timeout", "0", "--wait", "0s"],
    );
    assert!(
        reader.try_wait().unwrap().is_none(),
        "the reader was still pinned while the writer ran (the test proves nothing otherwise)"
    );
    assert_code(&o, 0);
    assert_code(&reader.wait_with_output().unwrap(), 0);
}
