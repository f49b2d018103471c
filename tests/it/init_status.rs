//! `team-scale init` and `team-scale status` end to end.

use serde_json::Value;
use tests::{Sandbox, assert_code, json_lines, tmux_at};

fn init(sb: &Sandbox) -> Vec<Value> {
    let o = sb.run(
        "team-scale",
        &["init", "demo", "--private", "--json", "--max-workers", "4"],
    );
    assert_code(&o, 0);
    json_lines(&o.stdout)
}

fn status(sb: &Sandbox) -> Vec<Value> {
    let o = sb.run("team-scale", &["status", "demo", "--json"]);
    assert_code(&o, 0);
    json_lines(&o.stdout)
}

fn snapshot_state(sb: &Sandbox) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![sb.ws.join(".team")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                v.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

#[test]
fn init_private_then_status() {
    let sb = Sandbox::new();
    let lines = init(&sb);
    let sock = sb.private_sock();
    assert!(sock.exists(), "the private socket is in TMUX_TMPDIR");
    assert!(sock.starts_with(&sb.tt));
    assert_eq!(lines[0]["type"], "team");
    assert_eq!(lines.last().unwrap()["type"], "summary");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join(".team/.gitignore")).unwrap(),
        "*\n"
    );

    let st = status(&sb);
    let sum = st.last().unwrap();
    assert_eq!(sum["type"], "summary");
    assert_eq!(sum["team"], "demo");
    assert_eq!(sum["workers"], 0);
    assert_eq!(sum["session_state"], "present");
    assert_eq!(sum["leader_liveness"], "live");
    assert_eq!(sum["endpoint"], sock.display().to_string());
    assert_eq!(sum["owner_id"], lines[0]["owner_id"]);

    // The session and the leader pane carry the tags.
    let o = tmux_at(
        &sock,
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{@team_owner} #{@team_role} #{@team_session_owner} #{@team_name}",
        ],
    );
    let listing = String::from_utf8_lossy(&o.stdout).to_string();
    let owner = lines[0]["owner_id"].as_str().unwrap();
    assert_eq!(listing.trim(), format!("%0 {owner} leader {owner} demo"));
}

#[test]
fn init_of_a_live_team_refuses_and_changes_nothing() {
    let sb = Sandbox::new();
    init(&sb);
    let before = snapshot_state(&sb);
    let o = sb.run("team-scale", &["init", "demo", "--private"]);
    assert_code(&o, 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    // The lock files may be rewritten; everything else is byte for byte the same.
    let strip = |v: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        v.into_iter()
            .filter(|(p, _)| !p.contains("/locks/"))
            .collect()
    };
    assert_eq!(strip(snapshot_state(&sb)), strip(before));
}

#[test]
fn bad_input_is_refused_before_any_effect() {
    let sb = Sandbox::new();
    for (args, code) in [
        (vec!["init", "Bad Name", "--private"], 64),
        (
            vec!["init", "demo", "--private", "--worktree", "branch:../x"],
            64,
        ),
        (vec!["init", "demo", "--private", "--size", "axb"], 64),
        (vec!["init", "demo", "--private", "--size", "10x3"], 64),
        // Prefixes git would refuse as part of a branch name (`up` could never make one).
        (
            vec!["init", "demo", "--private", "--worktree", "branch:a..b"],
            64,
        ),
        (
            vec!["init", "demo", "--private", "--worktree", "branch:x.lock"],
            64,
        ),
        (
            vec![
                "init",
                "demo",
                "--private",
                "--worktree",
                "branch:.hidden/x",
            ],
            64,
        ),
        (
            vec![
                "init",
                "demo",
                "--private",
                "--workspace",
                "/nonexistent/ws",
            ],
            64,
        ),
        (vec!["init", "demo", "--private", "--max-workers", "0"], 2),
        (vec!["status", "nope"], 66),
    ] {
        let o = sb.run("team-scale", &args);
        // clap reports its own usage errors with 2; we map them to 64 in main.
        let code = if code == 2 { 64 } else { code };
        assert_code(&o, code);
        assert!(!o.stderr.is_empty(), "{args:?} said nothing");
    }
    assert!(
        !sb.ws.join(".team/teams").exists(),
        "no team state was made"
    );
    assert!(sb.sockets().is_empty(), "no server was started");
}

#[test]
fn unknown_schema_version_is_refused_with_65() {
    let sb = Sandbox::new();
    init(&sb);
    let p = sb.ws.join(".team/teams/demo/team.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    v["schema_version"] = 2.into();
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = sb.run("team-scale", &["status", "demo"]);
    assert_code(&o, 65);
    assert!(String::from_utf8_lossy(&o.stderr).contains("schema_version"));
}

#[test]
fn a_lost_session_is_reported_and_state_kept_then_followed_when_re_created() {
    let sb = Sandbox::new();
    let lines = init(&sb);
    let owner = lines[0]["owner_id"].as_str().unwrap().to_string();
    let sock = sb.private_sock();
    // Another session keeps the server alive; the team's session goes away.
    assert!(
        tmux_at(&sock, &["new-session", "-d", "-s", "other", "sleep 100000"])
            .status
            .success()
    );
    assert!(
        tmux_at(&sock, &["kill-session", "-t", "=demo"])
            .status
            .success()
    );
    let sum = status(&sb).pop().unwrap();
    assert_eq!(sum["session_state"], "session_missing");
    assert_eq!(sum["leader_liveness"], "missing");
    assert!(
        sb.ws.join(".team/teams/demo/team.json").exists(),
        "state is never deleted for it"
    );
    // A command that needs the session says so, with 69, and creates nothing.
    let o = sb.run("team-scale", &["up", "demo", "1"]);
    assert_code(&o, 69);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("session_missing"),
        "{o:?}"
    );
    assert_eq!(status(&sb).pop().unwrap()["pending"], 0);

    // The tools re-create the session (same owner tag): the team follows it.
    assert!(
        tmux_at(
            &sock,
            &[
                "new-session",
                "-d",
                "-s",
                "demo2",
                "sleep 100000",
                ";",
                "set-option",
                "@team_session_owner",
                &owner
            ]
        )
        .status
        .success()
    );
    let sum = status(&sb).pop().unwrap();
    assert_eq!(sum["session_state"], "present");
    assert_eq!(sum["session"], "demo2");
    let events = std::fs::read_to_string(sb.ws.join(".team/teams/demo/events.jsonl")).unwrap();
    assert!(events.contains("session_rebound"));
}

#[test]
fn list_shows_every_team_and_flags_unreadable_state() {
    let sb = Sandbox::new();
    init(&sb);
    assert_code(
        &sb.run(
            "team-scale",
            &["init", "other", "--private", "--max-workers", "2"],
        ),
        0,
    );
    let o = sb.run("team-scale", &["list", "--json"]);
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    let names: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "team")
        .map(|l| l["team"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["demo", "other"]);
    assert_eq!(lines.last().unwrap()["teams"], 2);
    std::fs::write(sb.ws.join(".team/teams/other/team.json"), b"{oops").unwrap();
    let o = sb.run("team-scale", &["list", "--json"]);
    assert_code(&o, 65);
    let lines = json_lines(&o.stdout);
    assert_eq!(lines[0]["state"], "active");
    assert_eq!(lines[1]["state"], "unreadable");
}

/// The twenty-seventh round: the state dir a pane inherits won over what the command said
/// or where it ran. With a team `demo` in workspace A and another `demo` in workspace B, a
/// command run with A's pane environment and `--workspace B` (or from B's directory) showed,
/// scaled and killed A's workers, `list` in B listed A's teams, and `init demo` in a fresh
/// workspace was refused as A's. Now `--workspace` and a nearer team of that name win, `init`
/// starts a team where it runs, and a worker's reports about itself still reach its own team.
#[test]
fn an_inherited_state_dir_never_wins_over_the_workspace_named_or_nearer() {
    let sb = Sandbox::new();
    let dir = |name: &str| {
        let d = sb.dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    };
    let (wsb, wsc) = (dir("wsb"), dir("wsc"));
    let init = [
        "init",
        "demo",
        "--private",
        "--worker-cmd",
        "exec sleep 100000",
        "--json",
    ];
    assert_code(&sb.run("team-scale", &init), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
    let a_root = sb.ws.join(".team");
    // Commands run with the environment of A's worker-1 pane, in `cwd`.
    let in_pane = |cwd: &std::path::Path, args: &[&str]| {
        sb.cmd("team-scale")
            .current_dir(cwd)
            .env("TEAM_STATE_DIR", &a_root)
            .env("TEAM_NAME", "demo")
            .env("TEAM_WORKER", "worker-1")
            .env("TEAM_WORKSPACE", &sb.ws)
            .args(args)
            .output()
            .unwrap()
    };
    // `init demo` where it runs: B gets its own team, not "already exists" as A's.
    assert_code(&in_pane(&wsb, &init), 0);
    assert!(wsb.join(".team/teams/demo/team.json").exists());
    let members = |o: &std::process::Output| {
        json_lines(&o.stdout)
            .iter()
            .filter(|l| l["type"] == "worker")
            .count()
    };
    // From B's directory, and with `--workspace B` from elsewhere: B's team (no workers),
    // and `up`/`down` change B, never A.
    let o = in_pane(&wsb, &["status", "demo", "--json"]);
    assert_code(&o, 0);
    assert_eq!(members(&o), 0, "status in B showed A's workers");
    let ws_b = wsb.display().to_string();
    let o = in_pane(&wsc, &["--workspace", &ws_b, "status", "demo", "--json"]);
    assert_code(&o, 0);
    assert_eq!(members(&o), 0, "--workspace B showed A's workers");
    assert_code(
        &in_pane(
            &wsc,
            &[
                "--workspace",
                &ws_b,
                "up",
                "demo",
                "2",
                "--ready-timeout",
                "0",
            ],
        ),
        0,
    );
    assert_code(
        &in_pane(&wsb, &["down", "demo", "1", "--force", "--grace", "1s"]),
        0,
    );
    assert_eq!(members(&in_pane(&wsb, &["status", "demo", "--json"])), 1);
    let a = sb.run("team-scale", &["status", "demo", "--json"]);
    assert_eq!(members(&a), 2, "A lost or gained a worker");
    // `list` in B lists B's teams.
    let o = in_pane(&wsb, &["list", "--json"]);
    assert_code(&o, 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&ws_b), "list in B: {text}");
    // A worker's report about itself reaches its own team from anywhere, B's directory
    // included, and the pane's own team is found from a directory that holds no other.
    let w1 = json_lines(&a.stdout)
        .into_iter()
        .find(|l| l["type"] == "worker" && l["worker"] == "worker-1")
        .expect("A's worker-1");
    let inc = w1["incarnation"]
        .as_str()
        .expect("an incarnation")
        .to_string();
    let o = sb
        .cmd("team-scale")
        .current_dir(&wsb)
        .env("TEAM_STATE_DIR", &a_root)
        .env("TEAM_NAME", "demo")
        .env("TEAM_WORKER", "worker-1")
        .env("TEAM_INCARNATION", &inc)
        .args(["worker-status", "--state", "done", "--note", "from B"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let a = sb.run("team-scale", &["status", "demo", "--json"]);
    assert!(
        String::from_utf8_lossy(&a.stdout).contains("from B"),
        "the report did not reach A: {}",
        String::from_utf8_lossy(&a.stdout)
    );
    let o = in_pane(&wsc, &["status", "demo", "--json"]);
    assert_code(&o, 0);
    assert_eq!(members(&o), 2, "from elsewhere, the pane's team is A");
    assert_code(&in_pane(&sb.ws, &["shutdown", "demo", "--grace", "1s"]), 0);
    assert_code(&in_pane(&wsb, &["shutdown", "demo", "--grace", "1s"]), 0);
}

/// Black-box rounds 25 and 26: an agent in a worker's pane started a team of its own (`cd
/// ../b && team-scale init b`). Every pane of a team carries `TEAM_STATE_DIR` (with
/// `TEAM_NAME`), and it was taken as the new team's state dir too: b's state landed in a's
/// `.team`, naming another workspace, so it read as copied state, `shutdown b` exited 65 and
/// b's server had to be ended by hand. An inherited `TEAM_STATE_DIR` now serves only the team
/// `TEAM_NAME` names; a's own commands still find a from anywhere.
#[test]
fn a_team_started_from_another_teams_pane_keeps_its_own_state() {
    let sb = Sandbox::new();
    let init = |team: &str| {
        vec![
            "init".to_string(),
            team.into(),
            "--private".into(),
            "--worker-cmd".into(),
            "exec sleep 100000".into(),
        ]
    };
    let a = init("a");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    assert_code(&sb.run("team-scale", &a), 0);
    let a_root = sb.ws.join(".team");
    let wsb = sb.dir.path().join("wsb");
    std::fs::create_dir_all(&wsb).unwrap();
    let wsb = wsb.canonicalize().unwrap();
    // A command run in a's worker pane, from b's workspace: the pane's environment.
    let in_pane = |args: &[&str]| {
        sb.cmd("team-scale")
            .current_dir(&wsb)
            .env("TEAM_STATE_DIR", &a_root)
            .env("TEAM_NAME", "a")
            .env("TEAM_WORKER", "worker-1")
            .args(args)
            .output()
            .unwrap()
    };
    let b = init("b");
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    assert_code(&in_pane(&b), 0);
    assert!(
        wsb.join(".team/teams/b/team.json").exists(),
        "b's state is in b's workspace"
    );
    assert!(
        !a_root.join("teams/b").exists(),
        "b's state went into a's state dir"
    );
    assert_code(&in_pane(&["up", "b", "1", "--ready-timeout", "0"]), 0);
    let o = in_pane(&["shutdown", "b", "--grace", "2s"]);
    assert_code(&o, 0);
    // a's own commands, from the same pane and directory, still find a.
    let o = in_pane(&["status", "a", "--json"]);
    assert_code(&o, 0);
    assert!(
        json_lines(&o.stdout).iter().any(|l| l["team"] == "a"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_code(
        &sb.run("team-scale", &["shutdown", "a", "--grace", "2s"]),
        0,
    );
}

// The thirtieth black-box round.

/// `init` on a state dir it did not make adopted a `teams/<t>/trash/` holding the user's
/// files, and the first teardown deleted them. A team directory `init` finds with no
/// `team.json` may hold only what an interrupted `init` leaves (its `init.json`, empty
/// `workers/`, `runtime/` and `trash/`); anything else stops it, exit 65, before any effect.
#[test]
fn init_never_adopts_a_team_directory_holding_what_it_did_not_make() {
    let sb = Sandbox::new();
    let state = sb.dir.path().join("state");
    let team = state.join("teams/tt");
    let cases: &[(&str, &str)] = &[
        ("trash/keep/f", "trash"),
        ("trash/g", "trash"),
        ("workers/worker-1/notes", "workers"),
        ("runtime/worker-1.sh", "runtime"),
        ("journal.json", "journal.json"),
    ];
    for (file, named) in cases {
        let _ = std::fs::remove_dir_all(&state);
        let f = team.join(file);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "mine\n").unwrap();
        let before: Vec<_> = walkdir(&state);
        let o = sb.run(
            "team-scale",
            &[
                "--state-dir",
                &state.display().to_string(),
                "init",
                "tt",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(65), "{file}: {err}");
        assert!(
            err.contains(&team.join(named).display().to_string()),
            "{file}: the path is named: {err}"
        );
        assert_eq!(walkdir(&state), before, "{file}: init had an effect");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine\n");
    }
    // What an interrupted init leaves (empty directories, its record) is taken up again.
    let _ = std::fs::remove_dir_all(&state);
    for d in ["workers", "runtime", "trash"] {
        std::fs::create_dir_all(team.join(d)).unwrap();
    }
    let o = sb.run(
        "team-scale",
        &[
            "--state-dir",
            &state.display().to_string(),
            "init",
            "tt",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 0);
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "--state-dir",
                &state.display().to_string(),
                "shutdown",
                "tt",
                "--grace",
                "2s",
            ],
        ),
        0,
    );
}

/// Every path below `dir` with its content (directories as empty content), sorted.
fn walkdir(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                v.push((p.display().to_string(), Vec::new()));
                stack.push(p);
            } else {
                v.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}
