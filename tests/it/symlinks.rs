//! A hostile `.team/` (a cloned repository can carry one): symlinks to a user's files, symlinked
//! directories, FIFOs and devices. Every case is refused with exit 65, names the path, and
//! leaves the target byte-for-byte unchanged.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::{Sandbox, assert_code, json_lines};

const PRECIOUS: &[u8] = b"# the user's own file\nexport PATH=$HOME/bin:$PATH\n";

fn init(sb: &Sandbox) {
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
}

/// A file standing in for one in the user's home (`~/notes`, `~/.bashrc`).
fn home_file(sb: &Sandbox, name: &str) -> PathBuf {
    let home = sb.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let p = home.join(name);
    std::fs::write(&p, PRECIOUS).unwrap();
    p
}

/// Replaces `link` with a symlink to `target`.
fn replace_with_symlink(link: &Path, target: &Path) {
    std::fs::remove_file(link).unwrap();
    symlink(target, link).unwrap();
}

/// Runs `c`, killing it (our own child) if it has not ended within `limit`.
fn run_bounded(mut c: Command, limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: stderr {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t0.elapsed();
    (child.wait_with_output().unwrap(), took)
}

#[track_caller]
fn assert_refused_naming(o: &Output, what: &str) {
    assert_code(o, 65);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(what), "stderr does not name {what}: {err}");
}

#[test]
fn a_symlinked_state_lock_never_truncates_its_target() {
    let sb = Sandbox::new();
    init(&sb);
    let notes = home_file(&sb, "notes");
    replace_with_symlink(&sb.ws.join(".team/locks/demo.state.lock"), &notes);
    let o = sb.run("team-scale", &["status", "demo"]);
    assert_eq!(std::fs::read(&notes).unwrap(), PRECIOUS);
    assert_refused_naming(&o, "demo.state.lock");

    // The scale lock too (taken by every membership change).
    let notes2 = home_file(&sb, "notes2");
    std::fs::remove_file(sb.ws.join(".team/locks/demo.state.lock")).unwrap();
    replace_with_symlink(&sb.ws.join(".team/locks/demo.scale.lock"), &notes2);
    let o = sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]);
    assert_eq!(std::fs::read(&notes2).unwrap(), PRECIOUS);
    assert_refused_naming(&o, "demo.scale.lock");
}

#[test]
fn a_symlinked_team_json_is_neither_read_nor_replaced() {
    let sb = Sandbox::new();
    init(&sb);
    let tj = sb.ws.join(".team/teams/demo/team.json");
    // A copy of the real state outside, so a followed link would parse and be rewritten.
    let outside = sb.dir.path().join("team.json");
    std::fs::copy(&tj, &outside).unwrap();
    let before = std::fs::read(&outside).unwrap();
    replace_with_symlink(&tj, &outside);
    for args in [
        &["status", "demo"][..],
        &["up", "demo", "1", "--ready-timeout", "0"][..],
        &["shutdown", "demo"][..],
    ] {
        let o = sb.run("team-scale", args);
        assert_refused_naming(&o, "team.json");
        assert_eq!(std::fs::read(&outside).unwrap(), before, "{args:?}");
    }
    assert!(
        std::fs::symlink_metadata(&tj).unwrap().is_symlink(),
        "the link itself was not replaced either"
    );
}

#[test]
fn symlinked_events_and_audit_logs_are_never_appended_to() {
    let sb = Sandbox::new();
    init(&sb);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
    let down = [
        "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s",
    ];

    // audit.jsonl -> ~/.bashrc: appending a recorded command there would be code execution.
    let bashrc = home_file(&sb, ".bashrc");
    let audit = sb.ws.join(".team/audit.jsonl");
    let audit_bytes = std::fs::read(&audit).ok();
    let _ = std::fs::remove_file(&audit);
    symlink(&bashrc, &audit).unwrap();
    let o = sb.run("team-scale", &down);
    assert_eq!(std::fs::read(&bashrc).unwrap(), PRECIOUS);
    assert_refused_naming(&o, "audit.jsonl");
    // Nothing was done: worker-2 is still a member.
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    assert!(
        st.iter()
            .any(|l| l["type"] == "worker" && l["worker"] == "worker-2"),
        "{st:?}"
    );
    std::fs::remove_file(&audit).unwrap();
    if let Some(b) = audit_bytes {
        std::fs::write(&audit, b).unwrap();
    }

    // events.jsonl -> ~/.profile.
    let profile = home_file(&sb, ".profile");
    let events = sb.ws.join(".team/teams/demo/events.jsonl");
    replace_with_symlink(&events, &profile);
    let o = sb.run("team-scale", &down);
    assert_eq!(std::fs::read(&profile).unwrap(), PRECIOUS);
    assert_refused_naming(&o, "events.jsonl");
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    assert!(
        !st.iter().any(|l| l["type"] == "worker")
            && st.iter().any(|l| l["type"] == "error" && l["code"] == 65),
        "status refuses too: {st:?}"
    );

    // An audit log given by flag is opened the same way.
    std::fs::remove_file(&events).unwrap();
    let flagged = sb.dir.path().join("flagged.jsonl");
    symlink(&bashrc, &flagged).unwrap();
    let o = sb
        .cmd("team-scale")
        .args(down)
        .arg("--audit-log")
        .arg(&flagged)
        .output()
        .unwrap();
    assert_eq!(std::fs::read(&bashrc).unwrap(), PRECIOUS);
    assert_refused_naming(&o, "flagged.jsonl");
}

/// Every file below `dir`, with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.push(p);
            } else {
                v.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    v.sort();
    v
}

#[test]
fn a_symlinked_state_root_or_teams_dir_is_refused() {
    let sb = Sandbox::new();
    init(&sb);
    // `.team` itself is a symlink to a directory elsewhere.
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::rename(sb.ws.join(".team"), &elsewhere).unwrap();
    symlink(&elsewhere, sb.ws.join(".team")).unwrap();
    let before = tree(&elsewhere);
    for args in [&["status", "demo"][..], &["up", "demo", "1"][..]] {
        let o = sb.run("team-scale", args);
        assert_refused_naming(&o, ".team");
        assert_eq!(tree(&elsewhere), before, "{args:?}");
    }
    std::fs::remove_file(sb.ws.join(".team")).unwrap();
    std::fs::rename(&elsewhere, sb.ws.join(".team")).unwrap();

    // `.team/teams` is a symlink.
    let teams = sb.dir.path().join("teams-elsewhere");
    std::fs::rename(sb.ws.join(".team/teams"), &teams).unwrap();
    symlink(&teams, sb.ws.join(".team/teams")).unwrap();
    let before = tree(&teams);
    for args in [&["status", "demo"][..], &["shutdown", "demo"][..]] {
        let o = sb.run("team-scale", args);
        assert_refused_naming(&o, "teams");
        assert_eq!(tree(&teams), before, "{args:?}");
    }
    // A new team's directory is not created through it either.
    let o = sb.run("team-scale", &["init", "other", "--private"]);
    assert_code(&o, 65);
    assert!(!teams.join("other").exists());
}

#[test]
fn team_json_as_dev_zero_or_a_fifo_is_refused_quickly() {
    let sb = Sandbox::new();
    init(&sb);
    let tj = sb.ws.join(".team/teams/demo/team.json");
    std::fs::remove_file(&tj).unwrap();
    symlink("/dev/zero", &tj).unwrap();
    let mut c = sb.cmd("team-scale");
    c.args(["status", "demo"]);
    let (o, took) = run_bounded(c, Duration::from_secs(20));
    assert_refused_naming(&o, "team.json");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    std::fs::remove_file(&tj).unwrap();
    assert!(Command::new("mkfifo").arg(&tj).status().unwrap().success());
    let mut c = sb.cmd("team-scale");
    c.args(["status", "demo"]);
    let (o, took) = run_bounded(c, Duration::from_secs(20));
    assert_refused_naming(&o, "FIFO");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // An oversized team.json (sparse: 17 MiB of nothing) is refused, not read whole.
    std::fs::remove_file(&tj).unwrap();
    std::fs::File::create(&tj)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let o = sb.run("team-scale", &["status", "demo"]);
    assert_refused_naming(&o, "limit");
}

fn up_with_tasks(sb: &Sandbox, tasks: &str) -> Vec<Value> {
    let mut c = sb.cmd("team-scale");
    c.args([
        "up",
        "demo",
        "1",
        "--ready-timeout",
        "0",
        "--tasks",
        "-",
        "--json",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), tasks.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0);
    json_lines(&o.stdout)
}

fn task_files(sb: &Sandbox) -> Vec<(PathBuf, Vec<u8>)> {
    tree(&sb.ws.join(".team/teams/demo/tasks"))
}

#[test]
fn re_init_of_a_stopped_team_never_reuses_a_task_id() {
    let sb = Sandbox::new();
    init(&sb);
    up_with_tasks(
        &sb,
        r#"[{"subject":"a","description":"one"},{"subject":"b","description":"two"}]"#,
    );
    assert_code(&sb.run("team-scale", &["shutdown", "demo"]), 0);
    let old = task_files(&sb);
    assert_eq!(old.len(), 2, "{old:?}");

    init(&sb);
    up_with_tasks(&sb, r#"[{"subject":"c","description":"three"}]"#);
    let now = task_files(&sb);
    for (p, b) in &old {
        let kept = now.iter().find(|(q, _)| q == p).map(|(_, c)| c);
        assert_eq!(kept, Some(b), "{} was overwritten", p.display());
    }
    assert_eq!(now.len(), 3, "{now:?}");
    let third: Value = serde_json::from_slice(
        &std::fs::read(sb.ws.join(".team/teams/demo/tasks/3.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(third["subject"], "c");
}
