//! Pane tags are claims: attacks on the reaper that tag panes so they read as orphans.
//!
//! Anyone who can reach a tmux socket can set `@team_*` options on any pane. A worker pane's
//! first process is the supervisor `up` started for it, so the reaper kills a worker-tagged pane
//! only when that process proves what the tags say (or when nothing runs in the pane).

use std::path::Path;

use tests::{Sandbox, assert_code, json_lines, tmux_at};

/// `team-reap --json` on this sandbox's private server only.
fn reap(sb: &Sandbox) -> Vec<serde_json::Value> {
    reap_from(sb, &sb.ws)
}

/// [`reap`], run from the directory `cwd`.
fn reap_from(sb: &Sandbox, cwd: &Path) -> Vec<serde_json::Value> {
    let o = sb
        .cmd("team-reap")
        .args([
            "--json",
            "--no-processes",
            "--socket",
            &sb.private_sock().display().to_string(),
            "--only-under",
            &sb.dir.path().display().to_string(),
        ])
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "team-reap: {o:?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    json_lines(&o.stdout)
}

fn panes(sock: &Path) -> Vec<String> {
    let o = tmux_at(sock, &["list-panes", "-a", "-F", "#{pane_id}"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn set_tags(sock: &Path, pane: &str, tags: &[(&str, &str)]) {
    for (k, v) in tags {
        assert_code(&tmux_at(sock, &["set-option", "-p", "-t", pane, k, v]), 0);
    }
}

fn verdict<'a>(lines: &'a [serde_json::Value], pane: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["type"] == "pane" && l["pane_id"] == pane)
        .unwrap_or_else(|| panic!("no line for {pane}: {lines:#?}"))
}

/// `pane` was judged `unverifiable` (for a reason containing `why`) and is still there.
#[track_caller]
fn spared(lines: &[serde_json::Value], sock: &Path, pane: &str, why: &str) {
    let v = verdict(lines, pane);
    assert_eq!(v["verdict"], "unverifiable", "{v}");
    assert!(v["reason"].as_str().unwrap().contains(why), "{v}");
    assert!(
        panes(sock).iter().any(|p| p == pane),
        "{pane} was killed: {v}"
    );
}

/// `init demo --private` ended by `failpoint` (an `exit` fail point: exit 137). Returns the
/// `init.json` it left, as bytes and parsed, and the owner id in it.
fn interrupted_init(sb: &Sandbox, failpoint: &str) -> (Vec<u8>, serde_json::Value, String) {
    let o = sb
        .cmd("team-scale")
        .args([
            "init",
            "demo",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
        ])
        .env("TEAM_FAILPOINTS", failpoint)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(137), "the fail point ends init");
    let raw = std::fs::read(sb.ws.join(".team/teams/demo/init.json")).unwrap();
    let record: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    let owner = record["owner_id"].as_str().unwrap().to_string();
    (raw, record, owner)
}

/// `status` shows the team's worker live again: the team is whole.
#[track_caller]
fn the_team_is_whole(sb: &Sandbox) {
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    assert!(
        st.iter()
            .any(|l| l["type"] == "worker" && l["liveness"] == "live"),
        "{st:#?}"
    );
}

/// A later `init demo --private` (the leader `interrupted_init` gives) succeeds: nothing the
/// interrupted one left stands in its way.
#[track_caller]
fn init_again(sb: &Sandbox) {
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 0);
}

/// A team of one worker on its private server; returns the worker's pane id.
fn team_of_one(sb: &Sandbox) -> String {
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    st.iter()
        .find(|l| l["type"] == "worker")
        .and_then(|l| l["pane_id"].as_str())
        .expect("a worker pane")
        .to_string()
}

/// A new window of yours on `sock` running `sleep`; returns its pane id.
fn window_of_yours(sock: &Path) -> String {
    let o = tmux_at(
        sock,
        &[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep",
            "100000",
        ],
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Tags `pane` as a worker of team `gone`, whose workspace exists with an empty state root:
/// by its tags, the team's state is provably gone.
fn tag_as_a_gone_teams_worker(sb: &Sandbox, sock: &Path, pane: &str) {
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join(".team")).unwrap();
    set_tags(
        sock,
        pane,
        &[
            ("@team_owner", "00000000-0000-4000-8000-00000000dead"),
            ("@team_worker", "worker-9"),
            ("@team_incarnation", "00000000-0000-4000-8000-000000000009"),
            ("@team_op", "00000000-0000-4000-8000-00000000000a"),
            ("@team_workspace", elsewhere.to_str().unwrap()),
            ("@team_name", "gone"),
        ],
    );
}

/// Waits until tmux shows `pane` dead (kept by `remain-on-exit`).
fn wait_dead(sock: &Path, pane: &str) {
    tests::wait_for(
        "the pane to be dead",
        std::time::Duration::from_secs(5),
        || {
            let o = tmux_at(sock, &["display-message", "-p", "-t", pane, "#{pane_dead}"]);
            String::from_utf8_lossy(&o.stdout).trim() == "1"
        },
    );
}

/// Attack: a pane of yours (a shell) in the team's server is tagged by hand as a worker of a
/// team whose state does not exist. The tags alone make it `team_state_gone`; its process is
/// no supervisor, so it is not provably ours and must survive.
#[test]
fn a_hand_tagged_pane_of_yours_is_never_reaped_as_an_orphan() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    let mine = window_of_yours(&sock);
    tag_as_a_gone_teams_worker(&sb, &sock, &mine);
    let lines = reap(&sb);
    spared(&lines, &sock, &mine, "not that worker's supervisor");
}

/// Attack: a live team's worker pane is re-tagged to another owner and to a workspace whose
/// team state does not exist. Its supervisor still works for the live team, so it is not an
/// orphan and must survive, still a member.
#[test]
fn a_live_workers_pane_retagged_as_a_gone_teams_is_never_reaped() {
    let sb = Sandbox::new();
    let pane = team_of_one(&sb);
    let sock = sb.private_sock();
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join(".team")).unwrap();
    set_tags(
        &sock,
        &pane,
        &[
            ("@team_owner", "00000000-0000-4000-8000-00000000dead"),
            ("@team_workspace", elsewhere.to_str().unwrap()),
        ],
    );
    let lines = reap(&sb);
    spared(&lines, &sock, &pane, "owner");
    spared(&lines, &sock, &pane, "workspace");
    // Its tags put back, it is the team's member again and the team is whole.
    let ws = sb.ws.display().to_string();
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    let owner = st
        .iter()
        .find_map(|l| l["owner_id"].as_str())
        .expect("owner")
        .to_string();
    set_tags(
        &sock,
        &pane,
        &[("@team_owner", &owner), ("@team_workspace", &ws)],
    );
    the_team_is_whole(&sb);
}

/// `pane`, a worker of this sandbox's team `demo`, is killed as an orphan once the team's
/// state is deleted.
#[track_caller]
fn removed_once_its_team_is_gone(sb: &Sandbox, sock: &Path, pane: &str) {
    std::fs::remove_dir_all(sb.ws.join(".team/teams/demo")).unwrap();
    let lines = reap(sb);
    let v = verdict(&lines, pane);
    assert_eq!(v["verdict"], "orphan", "{v}");
    assert_eq!(v["action"], "killed", "{v}");
    assert!(!panes(sock).iter().any(|p| p == pane));
}

/// Still reaped: a real worker pane whose team state is gone (its supervisor proves the tags).
#[test]
fn a_real_worker_pane_of_a_gone_team_is_still_reaped() {
    let sb = Sandbox::new();
    let pane = team_of_one(&sb);
    let sock = sb.private_sock();
    removed_once_its_team_is_gone(&sb, &sock, &pane);
}

/// Attack (F1 of a black-box round): a session of your own, its pane tagged as a team's leader
/// and the session given the tools' session options, pointing at a workspace whose team state
/// does not exist. Tags and options are all claims: the pane and its session must survive.
#[test]
fn a_hand_tagged_leader_session_of_yours_is_never_reaped() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    assert_code(
        &tmux_at(&sock, &["new-session", "-d", "-s", "mine", "sleep 200001"]),
        0,
    );
    let mine = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &["display-message", "-p", "-t", "=mine:", "#{pane_id}"],
        )
        .stdout,
    )
    .trim()
    .to_string();
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join(".team")).unwrap();
    let owner = "12345678-0000-4000-8000-000000000000";
    let ws = elsewhere.to_str().unwrap();
    set_tags(
        &sock,
        &mine,
        &[
            ("@team_owner", owner),
            ("@team_name", "nosuch"),
            ("@team_role", "leader"),
            ("@team_workspace", ws),
        ],
    );
    for (k, v) in [
        ("@team_session_owner", owner),
        ("@team_session_name", "nosuch"),
        ("@team_session_workspace", ws),
    ] {
        assert_code(&tmux_at(&sock, &["set-option", "-t", "mine", k, v]), 0);
    }
    let lines = reap(&sb);
    spared(&lines, &sock, &mine, "tagged as a leader");
}

/// Attack (F2): a live worker's pane re-tagged as the leader of a team that does not exist.
/// Its process is a live worker's supervisor, never a leader: it must survive.
#[test]
fn a_live_workers_pane_retagged_as_a_leader_is_never_reaped() {
    let sb = Sandbox::new();
    let pane = team_of_one(&sb);
    let sock = sb.private_sock();
    assert_code(
        &tmux_at(
            &sock,
            &["set-option", "-p", "-u", "-t", &pane, "@team_worker"],
        ),
        0,
    );
    set_tags(
        &sock,
        &pane,
        &[("@team_role", "leader"), ("@team_name", "nosuch")],
    );
    let lines = reap(&sb);
    spared(&lines, &sock, &pane, "tagged as a leader");
}

/// Attack (F3): a live team's leader pane re-tagged to a team that does not exist. No record
/// names it any more; its tags prove nothing: it must survive.
#[test]
fn a_live_leader_retagged_to_a_gone_team_is_never_reaped() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    let leader = st
        .iter()
        .find_map(|l| l["leader_pane_id"].as_str())
        .expect("leader")
        .to_string();
    set_tags(&sock, &leader, &[("@team_name", "nosuch")]);
    let lines = reap(&sb);
    spared(&lines, &sock, &leader, "tagged as a leader");
}

/// An `init` that dies after making its leader pane but before storing `team.json` leaves
/// `init.json` naming that pane: the reaper removes it (and its session) by that record, and
/// the next `init` works. A pane of yours tagged with that init's owner is not named by it.
#[test]
fn an_interrupted_inits_recorded_leader_is_reaped_and_nothing_else() {
    let sb = Sandbox::new();
    let (raw, record, owner) = interrupted_init(&sb, "init.session=exit");
    let sock = sb.private_sock();
    let leader = panes(&sock);
    assert_eq!(leader.len(), 1, "{leader:?}");
    assert_eq!(record["leader"]["pane_id"], leader[0].as_str());
    // A pane of yours, tagged as that init's leader.
    assert_code(
        &tmux_at(&sock, &["new-session", "-d", "-s", "mine", "sleep 200001"]),
        0,
    );
    let mine = panes(&sock).into_iter().find(|p| p != &leader[0]).unwrap();
    let ws = sb.ws.display().to_string();
    set_tags(
        &sock,
        &mine,
        &[
            ("@team_owner", &owner),
            ("@team_name", "demo"),
            ("@team_role", "leader"),
            ("@team_workspace", &ws),
        ],
    );
    // A second `init` before the reap refuses before any effect, and leaves the record.
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 1);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("team-reap run"),
        "{o:?}"
    );
    assert_eq!(
        std::fs::read(sb.ws.join(".team/teams/demo/init.json")).unwrap(),
        raw,
        "the second init changed the record"
    );
    let lines = reap(&sb);
    let v = verdict(&lines, &leader[0]);
    assert_eq!(
        (&v["verdict"], &v["action"]),
        (&"orphan".into(), &"killed".into()),
        "{v}"
    );
    assert_eq!(verdict(&lines, &mine)["verdict"], "unverifiable");
    assert_eq!(panes(&sock), vec![mine.clone()]);
    assert_code(&tmux_at(&sock, &["kill-session", "-t", "mine"]), 0);
    init_again(&sb);
}

/// Attack (a black-box finding): the live team's workspace is moved away and an empty
/// directory made at its old path. Absence there proves nothing about this team: its
/// worker's supervisor works in the moved directory, so its pane is not reaped.
#[test]
fn a_moved_workspace_with_an_empty_one_at_its_old_path_kills_nothing() {
    let sb = Sandbox::new();
    let pane = team_of_one(&sb);
    let sock = sb.private_sock();
    let moved = sb.dir.path().join("moved");
    std::fs::rename(&sb.ws, &moved).unwrap();
    std::fs::create_dir_all(sb.ws.join(".team")).unwrap();
    let lines = reap(&sb);
    spared(&lines, &sock, &pane, "moved");
    // Put back, the team is whole.
    std::fs::remove_dir_all(&sb.ws).unwrap();
    std::fs::rename(&moved, &sb.ws).unwrap();
    the_team_is_whole(&sb);
}

/// A black-box finding: a worker of a lost team left a detached child (no socket) that
/// outlives its pane's hangup. The run that kills the pane also reaps that child, below the
/// supervisor that still holds it, instead of leaving it for the next run with exit 0.
#[test]
fn one_run_reaps_a_lost_workers_pane_and_the_detached_child_it_left() {
    let sb = Sandbox::new();
    let pidfile = sb.dir.path().join("child.pid");
    let cmd = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 100001' & exec sleep 100000",
        pidfile.display()
    );
    assert_code(
        &sb.run(
            "team-scale",
            &["init", "demo", "--private", "--worker-cmd", &cmd],
        ),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    tests::wait_for(
        "the child's pid file",
        std::time::Duration::from_secs(10),
        || std::fs::read_to_string(&pidfile).is_ok_and(|s| s.trim().parse::<u32>().is_ok()),
    );
    let child = tests::Own::now(
        std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap(),
    );
    let _end = tests::KillOnDrop(vec![child]);
    assert!(tests::alive(child));
    std::fs::remove_dir_all(sb.ws.join(".team/teams/demo")).unwrap();
    let o = sb.run(
        "team-reap",
        &[
            "--json",
            "--grace",
            "1s",
            "--socket",
            &sb.private_sock().display().to_string(),
            "--only-under",
            &sb.dir.path().display().to_string(),
        ],
    );
    let lines = json_lines(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "process" && l["pid"] == child.pid && l["action"] == "killed"),
        "{lines:#?}"
    );
    tests::wait_for(
        "the child to end",
        std::time::Duration::from_secs(5),
        || !tests::alive(child),
    );
}

/// An `init` killed after tmux made its session but before it recorded the leader pane
/// (`"leader": null`): the reaper still removes that leader, by the record's private server,
/// owner and session, and only there: a session of the same name on another server, its pane
/// tagged with the same owner, is not named by the record.
#[test]
fn an_init_killed_before_recording_its_leader_leaves_nothing_behind() {
    let sb = Sandbox::new();
    let (_, record, owner) = interrupted_init(&sb, "init.before_record=exit");
    assert!(record["leader"].is_null(), "{record}");
    let sock = sb.private_sock();
    let leader = panes(&sock);
    assert_eq!(leader.len(), 1, "{leader:?}");
    // Another server of yours: a session `demo` whose pane claims to be that init's leader.
    let other = sock.with_file_name("other");
    assert_code(
        &tmux_at(
            &other,
            &[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "demo",
                "sleep 200001",
            ],
        ),
        0,
    );
    let mine = panes(&other);
    let ws = sb.ws.display().to_string();
    set_tags(
        &other,
        &mine[0],
        &[
            ("@team_owner", &owner),
            ("@team_name", "demo"),
            ("@team_role", "leader"),
            ("@team_workspace", &ws),
        ],
    );
    assert_code(
        &tmux_at(
            &other,
            &["set-option", "-t", "demo", "@team_session_owner", &owner],
        ),
        0,
    );
    let o = sb.run(
        "team-reap",
        &[
            "--json",
            "--no-processes",
            "--socket",
            &sock.display().to_string(),
            "--socket",
            &other.display().to_string(),
            "--only-under",
            &sb.dir.path().display().to_string(),
        ],
    );
    let lines = json_lines(&o.stdout);
    let v = lines
        .iter()
        .find(|l| l["pane_id"] == leader[0].as_str() && l["endpoint"] == sock.to_str().unwrap())
        .expect("the leader's line");
    assert_eq!(
        (&v["verdict"], &v["action"]),
        (&"orphan".into(), &"killed".into()),
        "{v}"
    );
    assert!(panes(&sock).is_empty());
    assert_eq!(panes(&other), mine, "the other server's pane was killed");
    assert_code(&tmux_at(&other, &["kill-server"]), 0);
    init_again(&sb);
}

/// Attack (a fourth-round finding): after an init died before recording its leader, a pane of
/// yours put into its session (made the session's head by `swap-pane`) and tagged as that
/// init's leader is never killed; while two panes claim to be the leader, neither is. Untagged
/// again, yours stays and the real leader goes.
#[test]
fn a_pane_of_yours_in_an_interrupted_inits_session_is_never_its_leader() {
    let sb = Sandbox::new();
    let (_, _, owner) = interrupted_init(&sb, "init.before_record=exit");
    let sock = sb.private_sock();
    let leader = panes(&sock).remove(0);
    let mine = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &[
                "split-window",
                "-d",
                "-t",
                &leader,
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 200001",
            ],
        )
        .stdout,
    )
    .trim()
    .to_string();
    assert_code(
        &tmux_at(&sock, &["swap-pane", "-d", "-s", &leader, "-t", &mine]),
        0,
    );
    let ws = sb.ws.display().to_string();
    let claim = [
        ("@team_owner", owner.as_str()),
        ("@team_name", "demo"),
        ("@team_role", "leader"),
        ("@team_workspace", ws.as_str()),
    ];
    set_tags(&sock, &mine, &claim);
    let lines = reap(&sb);
    spared(&lines, &sock, &mine, "tagged as a leader");
    spared(&lines, &sock, &leader, "tagged as a leader");
    for (k, _) in claim {
        assert_code(
            &tmux_at(&sock, &["set-option", "-p", "-u", "-t", &mine, k]),
            0,
        );
    }
    let lines = reap(&sb);
    assert_eq!(verdict(&lines, &leader)["action"], "killed");
    assert_eq!(panes(&sock), vec![mine]);
}

/// Sends SIGCONT to a stopped process when dropped, however the test ends.
struct Resume(tests::Own);

impl Drop for Resume {
    fn drop(&mut self) {
        self.0.signal(rustix::process::Signal::CONT);
    }
}

/// A fourth-round finding: a second `init` that cannot ask the private server (it does not
/// answer) does not take that for "no session": it stops (69) and keeps the interrupted
/// init's record, which the reaper then uses.
#[test]
fn an_init_that_cannot_ask_the_server_keeps_the_interrupted_record() {
    let sb = Sandbox::new();
    let (raw, _, _) = interrupted_init(&sb, "init.before_record=exit");
    let path = sb.ws.join(".team/teams/demo/init.json");
    let sock = sb.private_sock();
    let server: u32 =
        String::from_utf8_lossy(&tmux_at(&sock, &["display-message", "-p", "#{pid}"]).stdout)
            .trim()
            .parse()
            .unwrap();
    let resume = Resume(tests::Own::now(server));
    assert_code(
        &std::process::Command::new("kill")
            .args(["-STOP", &server.to_string()])
            .output()
            .unwrap(),
        0,
    );
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
        ],
    );
    drop(resume);
    assert_code(&o, 69);
    assert_eq!(std::fs::read(&path).unwrap(), raw, "the record was changed");
    let leader = panes(&sock).remove(0);
    let lines = reap(&sb);
    assert_eq!(verdict(&lines, &leader)["action"], "killed");
}

/// A dead pane (kept by `remain-on-exit`) on `sock`, in a new window; returns its id.
fn dead_pane_of_yours(sock: &Path) -> String {
    dead_pane_started_as(sock, &["true"])
}

/// A dead pane on `sock` that tmux started (by `respawn-pane`) with `argv`, which exits.
fn dead_pane_started_as(sock: &Path, argv: &[&str]) -> String {
    let pane = window_of_yours(sock);
    assert_code(
        &tmux_at(
            sock,
            &["set-option", "-p", "-t", &pane, "remain-on-exit", "on"],
        ),
        0,
    );
    let mut respawn = vec!["respawn-pane", "-k", "-t", &pane];
    respawn.extend(argv);
    assert_code(&tmux_at(sock, &respawn), 0);
    wait_dead(sock, &pane);
    pane
}

/// Attack: a dead pane of yours (its screen still worth reading) is tagged by hand as a
/// worker of a team whose state does not exist. Nothing runs in it for a process to prove,
/// and tmux did not start it as that worker's supervisor: it must survive, `unverifiable`.
#[test]
fn a_dead_pane_of_yours_hand_tagged_is_never_reaped() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    let mine = dead_pane_of_yours(&sock);
    tag_as_a_gone_teams_worker(&sb, &sock, &mine);
    let lines = reap(&sb);
    spared(
        &lines,
        &sock,
        &mine,
        "tmux did not start it as that worker's supervisor",
    );
}

/// Still reaped: a real worker's pane, dead (its supervisor ended), of a team whose state is
/// gone: tmux started it as exactly that worker's supervisor.
#[test]
fn a_real_dead_worker_pane_of_a_gone_team_is_still_reaped() {
    let sb = Sandbox::new();
    let pane = team_of_one(&sb);
    let sock = sb.private_sock();
    let pid: i32 = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &["display-message", "-p", "-t", &pane, "#{pane_pid}"],
        )
        .stdout,
    )
    .trim()
    .parse()
    .unwrap();
    // The supervisor this test's sandbox started, by its pid.
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    wait_dead(&sock, &pane);
    removed_once_its_team_is_gone(&sb, &sock, &pane);
}

/// Attack: after an init died before recording its leader, you respawned that leader pane
/// with a program of yours (`respawn-pane -k`). It is still the session's head and still
/// tagged, but it no longer runs what `init` started: it must survive.
#[test]
fn an_interrupted_inits_leader_respawned_with_your_program_is_never_reaped() {
    let sb = Sandbox::new();
    let (_, record, _) = interrupted_init(&sb, "init.before_record=exit");
    assert!(record["leader"].is_null(), "{record}");
    let sock = sb.private_sock();
    let leader = panes(&sock);
    assert_eq!(leader.len(), 1, "{leader:?}");
    assert_code(
        &tmux_at(
            &sock,
            &["respawn-pane", "-k", "-t", &leader[0], "sleep 300003"],
        ),
        0,
    );
    let lines = reap(&sb);
    spared(&lines, &sock, &leader[0], "no record names this pane");
}

/// `up demo <n>` ended by a crash right after its reservation (no pane made): returns the
/// team's owner and its pending workers (name, incarnation, op).
fn abandoned_reservation(sb: &Sandbox, n: &str) -> (String, Vec<(String, String, String)>) {
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    let o = sb
        .cmd("team-scale")
        .args(["up", "demo", n, "--ready-timeout", "0"])
        .env("TEAM_FAILPOINTS", "up.reserved=exit")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(137), "the fail point ends up");
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/demo/team.json")).unwrap())
            .unwrap();
    let pending = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["lifecycle"] == "pending")
        .map(|w| {
            let s = |k: &str| w[k].as_str().unwrap().to_string();
            (s("name"), s("incarnation"), s("op_id"))
        })
        .collect();
    (t["owner_id"].as_str().unwrap().to_string(), pending)
}

fn tag_as(sb: &Sandbox, sock: &Path, pane: &str, owner: &str, w: &(String, String, String)) {
    let ws = sb.ws.display().to_string();
    set_tags(
        sock,
        pane,
        &[
            ("@team_owner", owner),
            ("@team_worker", &w.0),
            ("@team_incarnation", &w.1),
            ("@team_op", &w.2),
            ("@team_workspace", &ws),
            ("@team_name", "demo"),
        ],
    );
}

/// Attack (a fifth-round black-box finding): `up` crashed after reserving two workers, before
/// making their panes. A pane of yours is tagged as one of them, its process given that
/// worker's whole environment; a dead pane of yours is tagged as the other. Settling the
/// abandoned reservation (`reconcile`, then the reaper) used to adopt both by their tags and
/// kill them, signalling your process for its environment. Neither runs (or was started as)
/// that worker's supervisor: both must survive, and the workers stay `removing`, saying why.
#[test]
fn panes_of_yours_tagged_as_an_abandoned_reservation_are_never_killed() {
    let sb = Sandbox::new();
    let (owner, pending) = abandoned_reservation(&sb, "2");
    assert_eq!(pending.len(), 2, "{pending:?}");
    let sock = sb.private_sock();
    let ws = sb.ws.display().to_string();
    let root = sb.ws.join(".team").display().to_string();
    let (w, inc, op) = &pending[0];
    // Its argv run by tmux itself (no shell), so the pane's process carries the environment.
    let vars = [
        format!("TEAM_OWNER={owner}"),
        "TEAM_NAME=demo".into(),
        format!("TEAM_WORKER={w}"),
        format!("TEAM_INCARNATION={inc}"),
        format!("TEAM_OP={op}"),
        format!("TEAM_WORKSPACE={ws}"),
        format!("TEAM_STATE_DIR={root}"),
    ];
    let mut args: Vec<&str> = vec!["new-window", "-d", "-P", "-F", "#{pane_id}", "env"];
    args.extend(vars.iter().map(String::as_str));
    args.extend(["sleep", "300004"]);
    let live = String::from_utf8_lossy(&tmux_at(&sock, &args).stdout)
        .trim()
        .to_string();
    let pid = tests::Own::now(
        String::from_utf8_lossy(
            &tmux_at(
                &sock,
                &["display-message", "-p", "-t", &live, "#{pane_pid}"],
            )
            .stdout,
        )
        .trim()
        .parse()
        .unwrap(),
    );
    tag_as(&sb, &sock, &live, &owner, &pending[0]);
    let dead = dead_pane_of_yours(&sock);
    tag_as(&sb, &sock, &dead, &owner, &pending[1]);

    let o = sb.run("team-scale", &["reconcile", "demo", "--json"]);
    assert_code(&o, 3);
    for p in [&live, &dead] {
        assert!(panes(&sock).contains(p), "{p} was killed: {o:?}");
    }
    assert!(tests::alive(pid), "your process was signalled");
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/demo/team.json")).unwrap())
            .unwrap();
    for w in t["workers"].as_array().unwrap() {
        assert_eq!(w["lifecycle"], "removing", "{w}");
        assert!(
            w["removal_reasons"].to_string().contains("not provably"),
            "{w}"
        );
    }
    let o = sb.run(
        "team-reap",
        &[
            "--socket",
            &sock.display().to_string(),
            "--only-under",
            &sb.dir.path().display().to_string(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 3)), "{o:?}");
    for p in [&live, &dead] {
        assert!(
            panes(&sock).contains(p),
            "{p} was killed by the reaper: {o:?}"
        );
    }
    assert!(
        tests::alive(pid),
        "your process was signalled by the reaper"
    );
    // Reported as what they are (not debt the reaper would settle).
    let lines = reap(&sb);
    spared(&lines, &sock, &live, "supervisor");
    spared(&lines, &sock, &dead, "supervisor");
    // Checked, you let the workers go: the records are dropped, your panes left alone.
    for (w, _, _) in &pending {
        let o = sb.run("team-scale", &["forget", "demo", "--worker", w, "--yes"]);
        assert_code(&o, 0);
    }
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/demo/team.json")).unwrap())
            .unwrap();
    assert_eq!(t["workers"].as_array().unwrap().len(), 0, "{t}");
    for p in [&live, &dead] {
        assert!(panes(&sock).contains(p), "{p} was killed by forget");
    }
    assert!(tests::alive(pid), "your process was signalled by forget");
}

/// Attack (the same round): a pane of yours tagged with the op of an `up` that finished, under
/// an incarnation no worker has. The op's workers are all members, so nothing of it is being
/// settled: the pane is no member, unproven (its process is no supervisor), and the reaper
/// says so instead of reporting it as debt for ever.
#[test]
fn a_pane_tagged_with_a_finished_ops_id_is_not_debt() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/demo/team.json")).unwrap())
            .unwrap();
    let owner = t["owner_id"].as_str().unwrap().to_string();
    let op = t["workers"][0]["op_id"].as_str().unwrap().to_string();
    let sock = sb.private_sock();
    let mine = window_of_yours(&sock);
    let fake = (
        "worker-7".to_string(),
        "00000000-0000-4000-8000-000000000007".to_string(),
        op,
    );
    tag_as(&sb, &sock, &mine, &owner, &fake);
    let lines = reap(&sb);
    spared(&lines, &sock, &mine, "not that worker's supervisor");
}

/// A dead pane of yours, tagged as worker-9 of the gone team (`tag_as_a_gone_teams_worker`),
/// that tmux started in `dir` as `exe` with exactly the supervisor arguments those tags name.
/// `dir` holds a program of yours named `team-scale` that just exits.
fn dead_pane_started_by_yours(sb: &Sandbox, sock: &Path, dir: &Path, exe: &str) -> String {
    let fake = dir.join("team-scale");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let root = sb.dir.path().join("elsewhere/.team");
    let (root, ws, script, dir) = (
        root.display().to_string(),
        sb.dir.path().join("elsewhere").display().to_string(),
        root.join("teams/gone/runtime/worker-9.sh")
            .display()
            .to_string(),
        dir.display().to_string(),
    );
    let mine = dead_pane_started_as(
        sock,
        &[
            "-c",
            &dir,
            exe,
            "supervise",
            "--op",
            "00000000-0000-4000-8000-00000000000a",
            "--team",
            "gone",
            "--worker",
            "worker-9",
            "--owner",
            "00000000-0000-4000-8000-00000000dead",
            "--incarnation",
            "00000000-0000-4000-8000-000000000009",
            "--root",
            &root,
            "--ws",
            &ws,
            "--",
            "/bin/sh",
            &script,
        ],
    );
    tag_as_a_gone_teams_worker(sb, sock, &mine);
    mine
}

/// Attack (a sixth-round black-box finding): a dead pane of yours that tmux started with the
/// supervisor's arguments for exactly what its tags name, word for word, but by a program of
/// yours named `team-scale` (here one that just exits). Only the `team-scale` these tools run
/// starts supervisors: it must survive, `unverifiable`.
#[test]
fn a_dead_pane_started_by_another_team_scale_is_never_reaped() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    let dir = sb.dir.path().join("fake");
    let exe = dir.join("team-scale").display().to_string();
    let mine = dead_pane_started_by_yours(&sb, &sock, &dir, &exe);
    spared(
        &reap(&sb),
        &sock,
        &mine,
        "not the team-scale these tools run",
    );
}

/// Attack (a seventh-round black-box finding): the same pane started as `./team-scale`, which
/// the pane found in its own directory, while the reaper runs where the real `team-scale`
/// is: a relative name says nothing of what the pane ran, so it must survive.
#[test]
fn a_dead_pane_started_by_a_relative_team_scale_is_never_reaped() {
    let sb = Sandbox::new();
    team_of_one(&sb);
    let sock = sb.private_sock();
    let mine = dead_pane_started_by_yours(&sb, &sock, &sb.dir.path().join("fake"), "./team-scale");
    let bins = tests::bin("team-reap").parent().unwrap().to_path_buf();
    spared(
        &reap_from(&sb, &bins),
        &sock,
        &mine,
        "not the team-scale these tools run",
    );
}

/// Attack (a sixth-round black-box finding): `up` crashed after reserving a worker; you start
/// the real `team-scale supervise` by hand with that reservation's exact identity, but for a
/// command of yours (`sleep`), in a pane tagged as the worker. It is not the worker's
/// supervisor (that runs `/bin/sh` and the worker's script): `reconcile` must neither adopt
/// the pane nor stop your command.
#[test]
fn a_supervisor_started_by_hand_for_your_command_is_never_adopted() {
    let sb = Sandbox::new();
    let (owner, pending) = abandoned_reservation(&sb, "1");
    let (w, inc, op) = &pending[0];
    let sock = sb.private_sock();
    let ws = sb.ws.display().to_string();
    let root = sb.ws.join(".team").display().to_string();
    let bin = tests::bin("team-scale").display().to_string();
    let pane = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-c",
                &ws,
                &bin,
                "supervise",
                "--op",
                op,
                "--team",
                "demo",
                "--worker",
                w,
                "--owner",
                &owner,
                "--incarnation",
                inc,
                "--root",
                &root,
                "--ws",
                &ws,
                "--",
                "/bin/sleep",
                "300005",
            ],
        )
        .stdout,
    )
    .trim()
    .to_string();
    tag_as(&sb, &sock, &pane, &owner, &pending[0]);
    let sup: u32 = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &["display-message", "-p", "-t", &pane, "#{pane_pid}"],
        )
        .stdout,
    )
    .trim()
    .parse()
    .unwrap();
    let children =
        || std::fs::read_to_string(format!("/proc/{sup}/task/{sup}/children")).unwrap_or_default();
    tests::wait_for(
        "your command below it",
        std::time::Duration::from_secs(5),
        || !children().trim().is_empty(),
    );
    let mine = tests::Own::now(
        children()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap(),
    );
    let o = sb.run("team-scale", &["reconcile", "demo", "--json"]);
    assert_code(&o, 3);
    assert!(panes(&sock).contains(&pane), "{pane} was killed: {o:?}");
    assert!(tests::alive(mine), "your command was stopped: {o:?}");
}
