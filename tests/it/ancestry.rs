//! Processes are a worker's by ancestry, not by environment; tags are pane-scoped; the reaper
//! never races `init`. Each test is an attack that the old code (environment-based process
//! proofs, session-scoped `@team_owner`, "gone" decided before the scale lock) lost.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tests::*;

fn read_pid(path: &Path) -> Own {
    let mut pid = 0;
    wait_for(
        &format!("pid file {}", path.display()),
        Duration::from_secs(10),
        || {
            pid = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            pid != 0
        },
    );
    Own::now(pid)
}

/// `init <team> --private` with `cmd` as every worker's command, then `up <team> <n>`.
fn team_with_workers(sb: &Sandbox, team: &str, cmd: &str, n: u32) {
    let o = sb.run(
        "team-scale",
        &["init", team, "--private", "--worker-cmd", cmd],
    );
    assert_code(&o, 0);
    let o = sb.run("team-scale", &["up", team, &n.to_string()]);
    assert_code(&o, 0);
}

/// `team-reap` scoped to this sandbox: tests run side by side, and a reaper sees every process
/// and server of the user.
fn reap(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let scope = sb.dir.path().display().to_string();
    let mut all = vec!["--only-under", scope.as_str()];
    all.extend_from_slice(args);
    sb.run("team-reap", &all)
}

fn pane_pids(sock: &Path) -> Vec<u32> {
    let o = tmux_at(sock, &["list-panes", "-a", "-F", "#{pane_pid}"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn server_pid(sock: &Path) -> Option<u32> {
    let o = tmux_at(sock, &["display-message", "-p", "#{pid}"]);
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

fn worker_pane_pid(sb: &Sandbox, team: &str, worker: &str) -> u32 {
    let o = sb.run("team-scale", &["status", team, "--json"]);
    assert_code(&o, 0);
    json_lines(&o.stdout)
        .into_iter()
        .find(|r| r["type"] == "worker" && r["worker"] == worker)
        .and_then(|r| r["pane_pid"].as_u64())
        .unwrap_or_else(|| panic!("no pane pid for {worker}")) as u32
}

/// The attack of the review: a worker of team A starts team B (`init b --private`) with A's
/// `TEAM_*` variables in its environment; B's tmux server then runs below A's worker. Removing
/// that worker, and the reaper, must leave B whole: its server, its leader, its processes.
#[test]
fn a_team_started_from_a_worker_survives_that_workers_removal_and_the_reaper() {
    let sb = Sandbox::new();
    let wsb = sb.dir.path().join("wsb");
    std::fs::create_dir_all(&wsb).unwrap();
    let wsb = wsb.canonicalize().unwrap();
    let ts = bin("team-scale");
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then cd {wsb} && env -u TEAM_STATE_DIR {ts} init b --private --leader-cmd 'exec sleep 100004'; fi; exec sleep 100000",
        wsb = wsb.display(),
        ts = ts.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let b_state = wsb.join(".team/teams/b/team.json");
    wait_for("team b", Duration::from_secs(15), || b_state.exists());
    let b_sock = team_core::paths::private_endpoint(&sb.tt, &wsb);
    let b_server = Own::now(server_pid(&b_sock).expect("b's server answers"));
    let b_panes = pane_pids(&b_sock);
    assert_eq!(b_panes.len(), 1, "b has its leader pane");
    // The premise: b's leader inherited a's worker variables (nothing scrubbed them in the
    // worker's own shell), so an environment-based proof would call it a's.
    let env = std::fs::read(format!("/proc/{}/environ", b_panes[0])).unwrap_or_default();
    let env = String::from_utf8_lossy(&env);
    assert!(
        !env.contains("TEAM_WORKER=worker-2"),
        "tmux servers the tools start get a scrubbed environment: {env}"
    );

    // The reaper, in a's workspace, kills nothing of b.
    let o = reap(&sb, &["--json"]);
    let lines = json_lines(&o.stdout);
    for r in &lines {
        let pid = r["pid"].as_u64().unwrap_or(0) as u32;
        assert!(
            !(r["action"] == "killed" && (pid == b_server.pid || b_panes.contains(&pid))),
            "the reaper killed b's {r}"
        );
    }
    assert!(alive(b_server), "b's server survived the reaper");
    assert_eq!(
        pane_pids(&b_sock),
        b_panes,
        "b's leader survived the reaper"
    );

    // Removing worker-2 (b's server runs below its supervisor) leaves b whole.
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        alive(b_server),
        "b's tmux server survived worker-2's removal: {report}"
    );
    assert_eq!(pane_pids(&b_sock), b_panes, "b's leader survived: {report}");
    let o = sb
        .cmd("team-scale")
        .args(["status", "b", "--json"])
        .current_dir(&wsb)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let st = json_lines(&o.stdout);
    assert!(
        st.iter()
            .any(|r| r["type"] == "summary" && r["leader_liveness"] == "live"),
        "{st:?}"
    );
}

/// Attack (nineteenth black-box round): a worker of team A starts team B, whose tmux server is
/// re-parented below the worker's supervisor (a subreaper). In B's leader pane, processes leave
/// the pane (`setsid -f`, `( cmd & )`): they lose B's server as their parent and are
/// re-parented to A's supervisor too. By ancestry alone they read as the worker's, and `down`
/// and the reaper killed them (exit 0). Each names B's server and pane in `TMUX`/`TMUX_PANE`,
/// not the supervisor's: they are never signalled, by `down` or by the reaper.
#[test]
fn processes_that_leave_a_nested_servers_pane_are_not_the_workers() {
    let sb = Sandbox::new();
    let wsb = sb.dir.path().join("wsb");
    std::fs::create_dir_all(&wsb).unwrap();
    let wsb = wsb.canonicalize().unwrap();
    let (p1, p2, p3) = (
        sb.dir.path().join("p1"),
        sb.dir.path().join("p2"),
        sb.dir.path().join("p3"),
    );
    let ts = bin("team-scale");
    // B's leader (in B's server) starts three processes that leave its pane, the third with
    // no environment at all (as `env -i` or a `pipe-pane` job would have), then waits.
    let leader = format!(
        "setsid -f sh -c \"echo \\$\\$ > {p1}; exec sleep 100005\"; (sh -c \"echo \\$\\$ > {p2}; exec sleep 100006\" &); env -i /usr/bin/setsid -f /bin/sh -c \"echo \\$\\$ > {p3}; exec /usr/bin/sleep 100007\"; exec sleep 100004",
        p1 = p1.display(),
        p2 = p2.display(),
        p3 = p3.display()
    );
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then cd {wsb} && env -u TEAM_STATE_DIR {ts} init b --private --leader-cmd '{leader}'; fi; exec sleep 100000",
        wsb = wsb.display(),
        ts = ts.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let (e1, e2, e3) = (read_pid(&p1), read_pid(&p2), read_pid(&p3));
    let _cleanup = KillOnDrop(vec![e1, e2, e3]);
    let sup = worker_pane_pid(&sb, "a", "worker-2");
    let ppid = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                rest.split(' ').nth(1)?.parse::<u32>().ok()
            })
            .unwrap_or(0)
    };
    // The premise: both now hang directly below worker-2's supervisor.
    wait_for("the re-parenting", Duration::from_secs(5), || {
        ppid(e1.pid) == sup && ppid(e2.pid) == sup && ppid(e3.pid) == sup
    });

    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let report = String::from_utf8_lossy(&o.stdout);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(e1) && alive(e2),
        "down signalled what left a pane of b's server: {report}"
    );
    assert!(
        alive(e3),
        "down signalled what left a pane of b's server with no environment: {report}"
    );

    // The reaper sees worker-2's supervisor, still running, with no member behind it.
    let o = reap(&sb, &["--json", "--grace", "1s"]);
    let lines = json_lines(&o.stdout);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(e1) && alive(e2) && alive(e3),
        "the reaper signalled what left a pane of b's server: {lines:?}"
    );
    for r in &lines {
        let pid = r["pid"].as_u64().unwrap_or(0) as u32;
        assert!(
            !((pid == e1.pid || pid == e2.pid || pid == e3.pid) && r["action"] == "killed"),
            "{r}"
        );
    }
}

/// A daemon worker-2 started (detached, listening on a unix socket) serves worker-1: removing
/// worker-2 must leave it running (reported `shared`), and worker-1 keeps working.
#[test]
fn a_shared_daemon_survives_the_removal_of_the_worker_that_started_it() {
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let sock = sb.dir.path().join("d.sock");
    let pidf = sb.dir.path().join("d.pid");
    let beat = sb.dir.path().join("beat");
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then setsid {fd} serve {s} {p} & exec sleep 100000; else exec {fd} client {s} {b}; fi",
        s = sock.display(),
        p = pidf.display(),
        b = beat.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let daemon = read_pid(&pidf);
    let _cleanup = KillOnDrop(vec![daemon]);
    let beats = || -> u64 {
        let s = std::fs::read_to_string(&beat).unwrap_or_default();
        assert_ne!(s, "broken", "worker-1 lost its daemon");
        s.trim().parse().unwrap_or(0)
    };
    wait_for(
        "worker-1 talking to the daemon",
        Duration::from_secs(10),
        || beats() >= 3,
    );
    // The premise: the daemon carries worker-2's variables.
    let env = String::from_utf8_lossy(&std::fs::read(format!("/proc/{daemon}/environ")).unwrap())
        .into_owned();
    assert!(env.contains("TEAM_WORKER=worker-2"), "{env}");

    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(alive(daemon), "the shared daemon was killed: {out}");
    assert!(
        out.contains("shared"),
        "the daemon is reported as shared: {out}"
    );
    // It keeps working: its beat goes on (on a loaded machine, within a few seconds).
    let before = beats();
    wait_for("worker-1 keeps working", Duration::from_secs(10), || {
        beats() > before
    });

    // The reaper does not kill it either (its supervisor lives on, its worker is gone).
    let o = reap(&sb, &["--json"]);
    let lines: Vec<Value> = json_lines(&o.stdout);
    let rec = lines
        .iter()
        .find(|r| r["type"] == "process" && r["pid"] == daemon.pid)
        .unwrap_or_else(|| panic!("the reaper reports the daemon: {lines:?}"));
    assert_eq!(rec["verdict"], "shared", "{rec}");
    assert!(alive(daemon));
    let before = beats();
    std::thread::sleep(Duration::from_millis(300));
    assert!(beats() > before, "worker-1 still works after the reaper");
}

/// Detached children that drop every variable (`setsid env -i`), directly and through a
/// double fork, are still the worker's by ancestry: removing the worker ends them, and only
/// them.
#[test]
fn detached_children_without_environment_are_found_and_ended() {
    let sb = Sandbox::new();
    let p1 = sb.dir.path().join("p1");
    let p2 = sb.dir.path().join("p2");
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then setsid env -i sleep 100001 & echo $! > {a}; (setsid env -i sleep 100002 & echo $! > {b}); fi; exec sleep 100000",
        a = p1.display(),
        b = p2.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let (c1, c2) = (read_pid(&p1), read_pid(&p2));
    let _cleanup = KillOnDrop(vec![c1, c2]);
    wait_for("the children to exec", Duration::from_secs(5), || {
        [c1, c2].iter().all(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with("sleep\0"))
        })
    });
    for p in [c1, c2] {
        let env = std::fs::read(format!("/proc/{p}/environ")).unwrap();
        assert!(env.is_empty(), "env -i: no variables at all");
    }
    let w1 = Own::now(worker_pane_pid(&sb, "a", "worker-1"));
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
    );
    assert_code(&o, 0);
    wait_for(
        "the detached children to end",
        Duration::from_secs(5),
        || !alive(c1) && !alive(c2),
    );
    assert!(alive(w1), "worker-1 untouched");
}

/// `init` holds the scale lock from before its session exists until its state is stored; a
/// reaper running in that window must not take the new leader for an orphan.
#[test]
fn the_reaper_never_kills_a_leader_while_init_runs() {
    let sb = Sandbox::new();
    let mut init = sb
        .cmd("team-scale")
        .args(["init", "t0", "--private"])
        .env("TEAM_FAILPOINTS", "init.session=sleep1500")
        .spawn()
        .unwrap();
    let sock = sb.private_sock();
    wait_for("init's session", Duration::from_secs(10), || {
        tmux_at(&sock, &["has-session", "-t", "=t0"])
            .status
            .success()
    });
    let leader = pane_pids(&sock);
    let o = reap(&sb, &["--json"]);
    let lines = json_lines(&o.stdout);
    assert!(
        !lines.iter().any(|r| r["action"] == "killed"),
        "the reaper killed during init: {lines:?}"
    );
    assert!(
        lines.iter().any(|r| r["verdict"] == "busy"),
        "the leader is busy while init runs: {lines:?}"
    );
    assert!(init.wait().unwrap().success());
    assert_eq!(pane_pids(&sock), leader, "the leader survived");
    // And in a loop, without the widened window.
    for i in 1..6 {
        let team = format!("t{i}");
        let mut init = sb
            .cmd("team-scale")
            .args(["init", &team, "--private"])
            .spawn()
            .unwrap();
        for _ in 0..3 {
            let _ = reap(&sb, &["-q"]);
        }
        assert!(init.wait().unwrap().success());
        let o = sb.run("team-scale", &["status", &team, "--json"]);
        let st = json_lines(&o.stdout);
        assert!(
            st.iter()
                .any(|r| r["type"] == "summary" && r["leader_liveness"] == "live"),
            "leader of {team} survived: {st:?}"
        );
    }
}

/// A user's pane split into a team's session reads no team tag: pane tags are pane-scoped, and
/// the session carries only its own differently named options.
#[test]
fn a_users_pane_in_a_teams_session_reads_no_team_tag() {
    let sb = Sandbox::new();
    // A session of the user's on the same server, made first: options set without a target
    // could land on it.
    let sock = sb.private_sock();
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let o = std::process::Command::new(tmux_bin())
        .arg("-S")
        .arg(&sock)
        .args([
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "zzz",
            "sleep 100000",
        ])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_code(&sb.run("team-scale", &["init", "a", "--private"]), 0);
    let user = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &[
                "split-window",
                "-t",
                "=a:",
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 100000",
            ],
        )
        .stdout,
    )
    .trim()
    .to_string();
    assert!(user.starts_with('%'), "{user}");
    let read = |target: &str, fmt: &str| -> String {
        String::from_utf8_lossy(
            &tmux_at(&sock, &["display-message", "-p", "-t", target, fmt]).stdout,
        )
        .trim()
        .to_string()
    };
    for tag in [
        "@team_owner",
        "@team_name",
        "@team_workspace",
        "@team_role",
        "@team_incarnation",
    ] {
        assert_eq!(
            read(&user, &format!("#{{{tag}}}")),
            "",
            "the user's pane reads {tag}"
        );
        assert_eq!(
            read("=zzz:", &format!("#{{{tag}}}")),
            "",
            "the user's session reads {tag}"
        );
    }
    assert_eq!(read("=zzz:", "#{@team_session_owner}"), "");
    // The leader pane carries its own tags, and the team's session its own option.
    let st = json_lines(&sb.run("team-scale", &["status", "a", "--json"]).stdout);
    let leader = st
        .iter()
        .find_map(|r| r["leader_pane_id"].as_str())
        .expect("leader pane id")
        .to_string();
    let owner = read(&leader, "#{@team_owner}");
    assert_eq!(owner.len(), 36, "leader tagged: {owner:?}");
    assert_eq!(read(&leader, "#{@team_session_owner}"), owner);
    assert_eq!(
        read(&user, "#{@team_session_owner}"),
        owner,
        "the session's own option"
    );
    // The reaper leaves the user's pane alone.
    let _ = reap(&sb, &["-q"]);
    let panes =
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned();
    assert!(panes.lines().any(|l| l == user), "{panes}");
}

/// A worker whose pane was killed by hand and whose record is gone leaves a detached child
/// below its (still running) supervisor: the reaper proves it by ancestry and ends it, and
/// touches nothing of the remaining member.
#[test]
fn the_reaper_ends_the_residue_of_a_worker_that_is_no_longer_a_member() {
    let sb = Sandbox::new();
    let p = sb.dir.path().join("p");
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then setsid sleep 100005 & echo $! > {p}; fi; exec sleep 100000",
        p = p.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let residue = read_pid(&p);
    let _cleanup = KillOnDrop(vec![residue]);
    let w1 = Own::now(worker_pane_pid(&sb, "a", "worker-1"));
    let w2 = Own::now(worker_pane_pid(&sb, "a", "worker-2"));
    let st = json_lines(&sb.run("team-scale", &["status", "a", "--json"]).stdout);
    let pane2 = st
        .iter()
        .find(|r| r["worker"] == "worker-2")
        .and_then(|r| r["pane_id"].as_str())
        .unwrap()
        .to_string();
    tmux_at(&sb.private_sock(), &["kill-pane", "-t", &pane2]);
    let store = team_core::store::Store::new(
        sb.root(),
        team_core::paths::TeamName::new("a").unwrap(),
        Duration::from_secs(5),
    );
    store
        .transact("test", |t, _| {
            t.workers.retain(|w| w.name.as_str() != "worker-2");
            Ok(())
        })
        .unwrap();
    assert!(
        alive(w2),
        "the supervisor outlives its pane while residue lives"
    );
    assert!(alive(residue));
    let o = reap(&sb, &["--json", "--grace", "1s"]);
    let lines = json_lines(&o.stdout);
    let rec = lines
        .iter()
        .find(|r| r["type"] == "process" && r["pid"] == residue.pid)
        .unwrap_or_else(|| {
            let stat =
                |p: u32| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            panic!(
                "{lines:?}\nstderr: {}\nsupervisor: {}\nresidue: {}",
                String::from_utf8_lossy(&o.stderr),
                stat(w2.pid),
                stat(residue.pid)
            )
        });
    assert_eq!(
        (
            rec["verdict"].as_str(),
            rec["reason"].as_str(),
            rec["action"].as_str()
        ),
        (Some("orphan"), Some("not_member"), Some("killed")),
        "{rec}"
    );
    wait_for("the residue to end", Duration::from_secs(3), || {
        !alive(residue)
    });
    wait_for("the supervisor to exit", Duration::from_secs(3), || {
        !alive(w2)
    });
    assert!(alive(w1), "the member is untouched");
    assert!(assert_audit_pairs(&sb.root().audit_log()) >= 1);
}

/// With the residue policy `report`, a worker's detached child is left running and reported.
#[test]
fn residue_policy_report_keeps_detached_children() {
    let sb = Sandbox::new();
    let p = sb.dir.path().join("p");
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then setsid sleep 100006 & echo $! > {p}; fi; exec sleep 100000",
        p = p.display()
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let child = read_pid(&p);
    let _cleanup = KillOnDrop(vec![child]);
    assert_code(
        &sb.run("team-scale", &["policy", "a", "--residue", "report"]),
        0,
    );
    let o = sb.run("team-scale", &["status", "a"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("detached residue: report"));
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("residue_kept"), "{out}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(child), "kept by policy");
}

/// A worker pane killed by hand hangs up like any terminal: the processes still in the pane's
/// session get SIGHUP (the supervisor, which outlives the pane, passes it on), and once they
/// are gone the supervisor exits too.
#[test]
fn a_pane_killed_by_hand_hangs_up_its_processes() {
    let sb = Sandbox::new();
    let p = sb.dir.path().join("p");
    let cmd = format!(
        "sleep 100007 & echo $! > {p}; exec sleep 100000",
        p = p.display()
    );
    team_with_workers(&sb, "a", &cmd, 1);
    let bg = read_pid(&p);
    let _cleanup = KillOnDrop(vec![bg]);
    let sup = Own::now(worker_pane_pid(&sb, "a", "worker-1"));
    let st = json_lines(&sb.run("team-scale", &["status", "a", "--json"]).stdout);
    let pane = st
        .iter()
        .find(|r| r["worker"] == "worker-1")
        .and_then(|r| r["pane_id"].as_str())
        .unwrap()
        .to_string();
    tmux_at(&sb.private_sock(), &["kill-pane", "-t", &pane]);
    wait_for(
        "the background job to hang up",
        Duration::from_secs(5),
        || !alive(bg),
    );
    wait_for("the supervisor to exit", Duration::from_secs(15), || {
        !alive(sup)
    });
    let exit = sb.root().path().join("teams/a/workers/worker-1/exit.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&exit).unwrap()).unwrap();
    assert_eq!(
        v["signal"], 1,
        "the worker's main process ended by SIGHUP: {v}"
    );
}

/// What a shared daemon runs is the daemon's, not the worker's: its children, a renamed
/// tmux's panes, a double-forked listener that never called `setsid`, a UDP server: removing
/// the worker that started them signals none of them.
#[test]
fn what_a_shared_daemon_runs_and_other_servers_survive_the_workers_removal() {
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let d = sb.dir.path();
    let tmux = which_tmux();
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-2 ]; then \
           setsid sh -c 'sleep 100011 & echo $! > {d}/kid; exec {fd} serve {d}/s1 {d}/p1' & \
           ( ( exec {fd} serve {d}/s2 {d}/p2 & ) & ); \
           setsid {fd} udp {d}/p3 & \
           setsid {fd} dgram {d}/dg.sock {d}/p4 & \
           cp {tmux} {d}/mux && {d}/mux -S {d}/m.sock -f /dev/null new-session -d 'sleep 100012'; \
         fi; exec sleep 100000",
        d = d.display(),
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let pids: Vec<Own> = ["kid", "p1", "p2", "p3", "p4"]
        .iter()
        .map(|f| read_pid(&d.join(f)))
        .collect();
    let _cleanup = KillOnDrop(pids.clone());
    let msock = d.join("m.sock");
    struct KillServer(std::path::PathBuf);
    impl Drop for KillServer {
        fn drop(&mut self) {
            kill_server(&self.0);
        }
    }
    let _ms = KillServer(msock.clone());
    wait_for("the renamed tmux", Duration::from_secs(5), || {
        !pane_pids(&msock).is_empty()
    });
    let mux_panes = pane_pids(&msock);
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    std::thread::sleep(Duration::from_millis(300));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    for (what, p) in [
        "a shared daemon's child",
        "the daemon",
        "the double-forked listener",
        "the UDP server",
    ]
    .iter()
    .zip(&pids)
    {
        assert!(alive(*p), "{what} (pid {p}) was killed: {out}");
    }
    assert_eq!(
        pane_pids(&msock),
        mux_panes,
        "the renamed tmux's pane survived: {out}"
    );
}

/// Attack: the worker's only detached process is a double-forked listener that never called
/// `setsid` (an orphan the supervisor adopted, still in the pane's session). Once the worker's
/// main process has ended, that listener is the supervisor's oldest child: a walk that took
/// the oldest child for the worker's main process (instead of the one the supervisor started)
/// saw an attached, non-shared process, and the supervisor's hangup pass and `down` signalled
/// it. Both ways to end the worker are tried: `down`, and the main process exiting first.
#[test]
fn a_double_forked_listener_outlives_the_main_process_it_came_from() {
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let d = sb.dir.path();
    let cmd = format!(
        "( ( exec {fd} serve {d}/s-$TEAM_WORKER {d}/p-$TEAM_WORKER & ) & ); \
         if [ \"$TEAM_WORKER\" = worker-2 ]; then exec sleep 100000; fi; \
         while [ ! -e {d}/go ]; do sleep 0.05; done",
        d = d.display(),
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let (l1, l2) = (
        read_pid(&d.join("p-worker-1")),
        read_pid(&d.join("p-worker-2")),
    );
    let _cleanup = KillOnDrop(vec![l1, l2]);
    // worker-1's main process ends by itself: its pane stays up, the listener stays below
    // the supervisor, and nothing hung up.
    std::fs::write(d.join("go"), "").unwrap();
    let sup1 = Own::now(worker_pane_pid(&sb, "a", "worker-1"));
    wait_for("worker-1's exit record", Duration::from_secs(10), || {
        sb.root()
            .path()
            .join("teams/a/workers/worker-1/exit.json")
            .exists()
    });
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    // The supervisor's second hangup pass runs 200 ms after the first.
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        l2.alive(),
        "worker-2's double-forked listener (pid {l2}) was killed: {out}"
    );
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-1", "--force", "--grace", "1s", "--json",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        l1.alive(),
        "worker-1's double-forked listener (pid {l1}) was killed: {out}"
    );
    assert!(sup1.alive(), "the supervisor stays while its residue lives");
}

/// Our own processes with `needle` (a path in the test's own temp dir) as one of their
/// arguments.
fn procs_with_arg(needle: &str) -> Vec<Own> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == needle.as_bytes()))
        })
        .map(Own::now)
        .filter(|p| p.alive())
        .collect()
}

/// `unshare` arguments that make a pid namespace here (plain, or inside a user namespace),
/// or `None` when this machine allows neither.
fn pid_namespace() -> Option<&'static [&'static str]> {
    for args in [&["-pf"][..], &["-Upfr"][..]] {
        let ok = std::process::Command::new("unshare")
            .args(args)
            .arg("true")
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(args);
        }
    }
    None
}

/// Attack: the worker starts a pid namespace (as agent sandboxes do, `bwrap --unshare-pid`)
/// whose first process holds a shared daemon. That first process is an ordinary attached
/// process of the worker, but ending it makes the kernel kill everything in the namespace:
/// `down` and the supervisor's hangup killed the daemon through it. It is now spared.
#[test]
fn the_first_process_of_a_pid_namespace_holding_a_shared_daemon_is_spared() {
    let Some(unshare) = pid_namespace() else {
        eprintln!("skipped: this machine allows no pid namespace (unshare -pf, -Upfr)");
        return;
    };
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let d = sb.dir.path().display().to_string();
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-1 ]; then \
         unshare {} sh -c 'setsid {fd} serve {d}/ns.sock {d}/p-ns & wait' {d}/nsinit & fi; \
         exec sleep 100000",
        unshare.join(" ")
    );
    team_with_workers(&sb, "a", &cmd, 2);
    wait_for(
        "the daemon in the namespace",
        Duration::from_secs(10),
        || std::path::Path::new(&format!("{d}/p-ns")).exists(),
    );
    let daemon = procs_with_arg(&format!("{d}/ns.sock"));
    let init = procs_with_arg(&format!("{d}/nsinit"));
    let mut all = daemon.clone();
    all.extend(&init);
    let _cleanup = KillOnDrop(all);
    assert_eq!(daemon.len(), 1, "the daemon runs");
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-1", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        daemon[0].alive(),
        "the shared daemon in the pid namespace was killed: {out}"
    );
    assert!(
        out.contains("pid namespace"),
        "the namespace's first process is reported: {out}"
    );
}

/// Attack: listeners the process's own descriptor table does not show: one made in a thread
/// with a descriptor table of its own (`unshare(CLONE_FILES)`), one in a thread with a
/// network namespace of its own, and a vsock listener (no `/proc/net` table shows vsock).
/// Each was taken for ordinary residue and sent SIGTERM.
#[test]
fn listeners_of_a_thread_or_of_a_kind_without_a_table_are_shared() {
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let d = sb.dir.path().display().to_string();
    let vsock = "import socket,os,sys,time\n\
                 try:\n s=socket.socket(socket.AF_VSOCK,socket.SOCK_STREAM); \
                 s.bind((socket.VMADDR_CID_ANY,socket.VMADDR_PORT_ANY)); s.listen()\n\
                 except OSError:\n open(sys.argv[1],'w').write('unsupported'); sys.exit(2)\n\
                 open(sys.argv[1],'w').write(str(os.getpid())); time.sleep(100000)";
    std::fs::write(format!("{d}/vsock.py"), vsock).unwrap();
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-1 ]; then \
         ( ( exec {fd} thread-files {d}/tf.sock {d}/p-tf & ) & ); \
         setsid {fd} thread-net {d}/p-tn & \
         setsid python3 {d}/vsock.py {d}/p-vs & fi; \
         exec sleep 100000"
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let mut daemons = Vec::new();
    for (what, f) in [
        ("a thread's own descriptor table", "p-tf"),
        ("a thread's own network namespace", "p-tn"),
        ("vsock", "p-vs"),
    ] {
        let path = format!("{d}/{f}");
        wait_for(what, Duration::from_secs(10), || {
            std::fs::read_to_string(&path).is_ok_and(|s| !s.is_empty())
        });
        match std::fs::read_to_string(&path)
            .unwrap()
            .trim()
            .parse::<u32>()
        {
            Ok(pid) => daemons.push((what, Own::now(pid))),
            Err(_) => eprintln!("not on this machine: a listener with {what}"),
        }
    }
    let _cleanup = KillOnDrop(daemons.iter().map(|(_, p)| *p).collect());
    assert!(
        daemons
            .iter()
            .any(|(w, _)| *w == "a thread's own descriptor table"),
        "the descriptor-table listener runs everywhere"
    );
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-1", "--force", "--grace", "1s", "--json",
        ],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    std::thread::sleep(Duration::from_millis(600));
    for (what, p) in &daemons {
        assert!(
            p.alive(),
            "the listener with {what} (pid {p}) was killed: {out}"
        );
    }
}

/// Attack: a copy of tmux named so that its server's thread name does not end in `: server`
/// (`tmux-next` becomes `tmux-next:`, cut at the last space; a name of 16 bytes or more
/// becomes its first 15). A process that left one of its panes (`env -i setsid`) was then
/// ended as the worker's residue.
#[test]
fn what_left_a_pane_of_a_tmux_copy_under_any_name_is_not_signalled() {
    let sb = Sandbox::new();
    let fd = env!("CARGO_BIN_EXE_fake-daemon");
    let d = sb.dir.path().display().to_string();
    let tmux = which_tmux();
    let cmd = format!(
        "case $TEAM_WORKER in worker-1) n=tmux-next;; worker-2) n=abcdefghijklmnopq;; *) exec sleep 100000;; esac; \
         cp {tmux} {d}/$n && {d}/$n -S {d}/$n.s -f /dev/null new-session -d \
         \"env -i setsid -f {fd} map {d}/$n.map {d}/p-$n; exec sleep 100023\"; \
         exec sleep 100000"
    );
    team_with_workers(&sb, "a", &cmd, 3);
    let names = ["tmux-next", "abcdefghijklmnopq"];
    let leavers: Vec<Own> = names
        .iter()
        .map(|n| read_pid(std::path::Path::new(&format!("{d}/p-{n}"))))
        .collect();
    let _cleanup = KillOnDrop(leavers.clone());
    struct KillServers(Vec<std::path::PathBuf>);
    impl Drop for KillServers {
        fn drop(&mut self) {
            for s in &self.0 {
                kill_server(s);
            }
        }
    }
    let _servers = KillServers(
        names
            .iter()
            .map(|n| std::path::PathBuf::from(format!("{d}/{n}.s")))
            .collect(),
    );
    // The premise: each left its pane and now hangs below the worker's supervisor.
    for (n, p) in names.iter().zip(&leavers) {
        let sup = worker_pane_pid(
            &sb,
            "a",
            if *n == "tmux-next" {
                "worker-1"
            } else {
                "worker-2"
            },
        );
        wait_for("the re-parenting", Duration::from_secs(5), || {
            std::fs::read_to_string(format!("/proc/{}/stat", p.pid)).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(sup)
            })
        });
    }
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-1", "--worker", "worker-2", "--force", "--grace",
            "1s", "--json",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    std::thread::sleep(Duration::from_millis(600));
    for (n, p) in names.iter().zip(&leavers) {
        assert!(
            p.alive(),
            "what left a pane of the tmux copy {n} (pid {p}) was signalled: {out}"
        );
    }
}

/// Attack: a detached leftover that ignores SIGTERM and answers it by listening on a socket.
/// It was residue when `down` looked, and a shared daemon when the grace ran out: it got the
/// SIGKILL anyway. The re-proof before SIGKILL now judges it again.
#[test]
fn a_leftover_that_starts_serving_during_the_grace_is_not_killed() {
    let sb = Sandbox::new();
    let d = sb.dir.path().display().to_string();
    let script = "import os,signal,socket,sys,time\n\
                  held=[]\n\
                  def on_term(*_):\n s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); held.append(s)\n\
                  signal.signal(signal.SIGTERM,on_term)\n\
                  open(sys.argv[2],'w').write(str(os.getpid()))\n\
                  while True: time.sleep(0.05)\n";
    std::fs::write(format!("{d}/lot.py"), script).unwrap();
    let cmd = format!(
        "if [ \"$TEAM_WORKER\" = worker-1 ]; then setsid python3 {d}/lot.py {d}/lot.s {d}/p-lot & fi; \
         exec sleep 100000"
    );
    team_with_workers(&sb, "a", &cmd, 2);
    let lot = read_pid(std::path::Path::new(&format!("{d}/p-lot")));
    let _cleanup = KillOnDrop(vec![lot]);
    let o = sb.run(
        "team-scale",
        &[
            "down", "a", "--worker", "worker-1", "--force", "--grace", "1s", "--json",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        std::path::Path::new(&format!("{d}/lot.s")).exists(),
        "the premise: it got SIGTERM and listens: {out}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        lot.alive(),
        "the process serving since SIGTERM (pid {lot}) was killed: {out}"
    );
    assert!(out.contains("began serving on a socket"), "{out}");
}

/// A reaper given another team's state dir (as a `TEAM_STATE_DIR` inherited from that team's
/// panes) must not take a team whose own workspace holds its state for gone. A pane split into
/// a team's session carries no `TEAM_*` variable (none is set at session scope).
#[test]
fn an_inherited_state_dir_never_makes_another_team_look_gone() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "x", "--private"]), 0);
    let ws9 = sb.dir.path().join("ws9");
    std::fs::create_dir_all(&ws9).unwrap();
    let in9 = |args: &[&str]| {
        sb.cmd("team-scale")
            .args(args)
            .current_dir(&ws9)
            .output()
            .unwrap()
    };
    assert_code(
        &in9(&["init", "y", "--private", "--worker-cmd", "sleep 100000"]),
        0,
    );
    assert_code(&in9(&["up", "y", "2"]), 0);
    let ysock = team_core::paths::private_endpoint(&sb.tt, &ws9.canonicalize().unwrap());
    let before = pane_pids(&ysock);
    assert_eq!(before.len(), 3);
    let xroot = sb.root().path().display().to_string();
    let scope = sb.dir.path().display().to_string();
    let o = sb
        .cmd("team-reap")
        .env("TEAM_STATE_DIR", &xroot)
        .args(["--only-under", &scope, "--json"])
        .output()
        .unwrap();
    let lines = json_lines(&o.stdout);
    assert!(
        !lines.iter().any(|r| r["action"] == "killed"),
        "a reaper with x's state dir killed: {lines:?}"
    );
    assert_eq!(pane_pids(&ysock), before, "y's panes survived");
    // A user's pane split into x's session: no TEAM_* in its environment.
    let xsock = sb.private_sock();
    let pid: u32 = String::from_utf8_lossy(
        &tmux_at(
            &xsock,
            &[
                "split-window",
                "-t",
                "=x:",
                "-P",
                "-F",
                "#{pane_pid}",
                "sleep 100000",
            ],
        )
        .stdout,
    )
    .trim()
    .parse()
    .unwrap();
    wait_for("the pane's environment", Duration::from_secs(5), || {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|e| !e.is_empty())
    });
    let env = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap())
        .into_owned();
    assert!(!env.contains("TEAM_"), "a user's pane inherits: {env}");
}

/// A symlinked `.team/locks` (a cloned repository can carry one) with the team's state gone
/// is no proof of absence: the reaper leaves the panes alone.
#[test]
fn a_symlinked_locks_dir_is_no_proof_that_a_team_is_gone() {
    let sb = Sandbox::new();
    team_with_workers(&sb, "a", "sleep 100000", 2);
    let sock = sb.private_sock();
    let before = pane_pids(&sock);
    let root = sb.root().path().to_path_buf();
    let elsewhere = sb.dir.path().join("lockdir");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_dir_all(root.join("locks")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("locks")).unwrap();
    std::fs::remove_dir_all(root.join("teams")).unwrap();
    let o = reap(&sb, &["--json"]);
    let lines = json_lines(&o.stdout);
    assert!(
        !lines.iter().any(|r| r["action"] == "killed"),
        "killed through a symlinked locks dir: {lines:?}"
    );
    assert_eq!(pane_pids(&sock), before);
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing made in the target"
    );
}

fn which_tmux() -> String {
    let o = std::process::Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A workspace renamed while its team runs: its state is not where the panes' tags say, but
/// that is no proof the team is gone; the reaper (even with a central audit log, as cron has)
/// leaves its panes alone.
#[test]
fn a_renamed_workspace_is_no_proof_that_its_team_is_gone() {
    let sb = Sandbox::new();
    team_with_workers(&sb, "a", "sleep 100000", 1);
    let sock = sb.private_sock();
    let before = pane_pids(&sock);
    assert_eq!(before.len(), 2);
    let moved = sb.dir.path().join("ws-moved");
    std::fs::rename(&sb.ws, &moved).unwrap();
    let log = sb.dir.path().join("central-audit.jsonl");
    let o = sb
        .command(bin("team-reap"))
        .current_dir(sb.dir.path())
        .args([
            "--only-under",
            &sb.dir.path().display().to_string(),
            "--json",
        ])
        .arg("--audit-log")
        .arg(&log)
        .output()
        .unwrap();
    let lines = json_lines(&o.stdout);
    std::fs::rename(&moved, &sb.ws).unwrap();
    assert!(
        !lines.iter().any(|r| r["action"] == "killed"),
        "the reaper killed a moved team's panes: {lines:?}"
    );
    assert_eq!(pane_pids(&sock), before);
    assert!(
        lines.iter().any(|r| r["verdict"] == "unverifiable"),
        "reported as unverifiable: {lines:?}"
    );
}

/// A lookalike supervisor: a process of the user's that names itself `team-supervise` and
/// copies a supervisor's arguments (naming a team whose state is gone), but does not run
/// `team-scale`. The reaper must not take its child for a gone team's residue. (It did: the
/// comm and the arguments were the whole proof.)
#[test]
fn the_reaper_ignores_a_lookalike_supervisor() {
    let sb = Sandbox::new();
    let ghost = sb.dir.path().join("ghost");
    std::fs::create_dir_all(&ghost).unwrap();
    let pidfile = sb.dir.path().join("fake.pid");
    let root = ghost.join(".team");
    let mut fake = sb
        .command(env!("CARGO_BIN_EXE_fake-supervisor"))
        .env("FAKE_PIDFILE", &pidfile)
        .args(["supervise", "--team", "ghost", "--worker", "worker-1"])
        .args(["--owner", "11111111-2222-4333-8444-555555555555"])
        .args(["--incarnation", "11111111-2222-4333-8444-666666666666"])
        .arg("--root")
        .arg(&root)
        .arg("--ws")
        .arg(&ghost)
        .arg("--")
        .arg("/bin/sh")
        .arg(root.join("teams/ghost/runtime/worker-1.sh"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _early = KillOnDrop::now([fake.id()]);
    let child = read_pid(&pidfile);
    let _cleanup = KillOnDrop(vec![child, Own::now(fake.id())]);
    wait_for("the lookalike's name", Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{}/comm", fake.id()))
            .is_ok_and(|c| c.trim() == "team-supervise")
    });
    let o = reap(&sb, &["--json", "--grace", "1s"]);
    let lines = json_lines(&o.stdout);
    assert!(
        !lines
            .iter()
            .any(|r| r["pid"] == child.pid && r["action"] == "killed"),
        "the lookalike's child was killed: {lines:?}"
    );
    assert!(alive(child), "the lookalike's child survives the reaper");
    let _ = fake.kill();
    let _ = fake.wait();
}

/// The pane id `status` shows for `worker`.
fn worker_pane_id(sb: &Sandbox, team: &str, worker: &str) -> String {
    let st = json_lines(&sb.run("team-scale", &["status", team, "--json"]).stdout);
    st.iter()
        .find(|r| r["type"] == "worker" && r["worker"] == worker)
        .and_then(|r| r["pane_id"].as_str())
        .unwrap_or_else(|| panic!("no pane for {worker}"))
        .to_string()
}

/// Copies every `@team_*` pane option of `from` onto `to` (what anyone with the socket can do).
fn copy_tags(sock: &Path, from: &str, to: &str) {
    let tags = String::from_utf8_lossy(&tmux_at(sock, &["show-options", "-p", "-t", from]).stdout)
        .into_owned();
    for line in tags.lines().filter(|l| l.starts_with("@team_")) {
        let (k, v) = line.split_once(' ').unwrap();
        let v = v.trim_matches('"');
        assert!(
            tmux_at(sock, &["set-option", "-p", "-t", to, k, v])
                .status
                .success()
        );
    }
}

/// Rewrites team `t`'s record of `worker` to name `pane` (running `pid`, started at `start`).
fn forge_worker_pane(sb: &Sandbox, worker: &str, pane: &str, pid: u32, start: Option<u64>) {
    let path = sb.ws.join(".team/teams/t/team.json");
    let mut team: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for w in team["workers"].as_array_mut().unwrap() {
        if w["name"] == worker {
            w["pane"]["pane_id"] = pane.into();
            w["pane"]["pane_pid"] = pid.into();
            if let Some(start) = start {
                w["pane"]["process_start"] = start.into();
            }
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&team).unwrap()).unwrap();
}

/// The `TEAM_*` variables of a worker's main process (the child of its supervisor at `sup`).
fn worker_env(sup: u32) -> Vec<String> {
    let mut child = 0;
    wait_for("the worker's main process", Duration::from_secs(10), || {
        child = std::fs::read_to_string(format!("/proc/{sup}/task/{sup}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        child != 0
    });
    let env = std::fs::read(format!("/proc/{child}/environ")).unwrap();
    env.split(|b| *b == 0)
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .filter(|e| e.starts_with("TEAM_"))
        .collect()
}

/// Attack (thirty-fifth black-box round): a forged `team.json` points a worker's record at a
/// pane of the user's that carries the worker's tags (copied with `set-option -p`) and whose
/// process carries the worker's `TEAM_*` environment (copied from the worker's own). That
/// process is not the worker's supervisor, so it is not the worker's: `down` used to take the
/// pane for one made before supervisors existed, prove its process by environment, send it
/// SIGTERM and kill the pane (and `reconcile` did the same). Nothing of it is touched now: the
/// worker stays `removing`, saying why, and the command exits 3.
#[test]
fn a_users_pane_with_a_workers_tags_and_environment_is_never_killed_through_a_forged_record() {
    let sb = Sandbox::new();
    team_with_workers(&sb, "t", "exec sleep 100000", 2);
    let sock = sb.private_sock();
    let sup = worker_pane_pid(&sb, "t", "worker-2");
    let env = worker_env(sup);
    assert!(env.iter().any(|e| e.starts_with("TEAM_OWNER=")), "{env:?}");
    let wpane = worker_pane_id(&sb, "t", "worker-2");
    // The user's pane, in the worker's window, running `sleep` with the worker's variables.
    let mut args = vec![
        "split-window",
        "-d",
        "-t",
        wpane.as_str(),
        "-P",
        "-F",
        "#{pane_id} #{pane_pid}",
        "env",
    ];
    args.extend(env.iter().map(String::as_str));
    args.extend(["sleep", "100000"]);
    let out = String::from_utf8_lossy(&tmux_at(&sock, &args).stdout).into_owned();
    let (user_pane, user_pid) = out.trim().split_once(' ').expect("new pane");
    let user_pid = Own::now(user_pid.parse().unwrap());
    copy_tags(&sock, &wpane, user_pane);
    wait_for(
        "the user's process runs sleep",
        Duration::from_secs(10),
        || {
            std::fs::read_to_string(format!("/proc/{user_pid}/comm"))
                .is_ok_and(|c| c.trim() == "sleep")
        },
    );
    let start = std::fs::read_to_string(format!("/proc/{user_pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            rest.split_whitespace().nth(19)?.parse::<u64>().ok()
        })
        .expect("start time");
    // The forged record: worker-2's pane is the user's.
    forge_worker_pane(&sb, "worker-2", user_pane, user_pid.pid, Some(start));

    let o = sb.run(
        "team-scale",
        &[
            "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
    );
    let panes =
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned();
    assert!(
        panes.lines().any(|l| l == user_pane),
        "the user's pane {user_pane} was killed: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let state = std::fs::read_to_string(format!("/proc/{user_pid}/stat")).unwrap_or_default();
    let state = state.rsplit_once(')').map(|(_, r)| r.trim().chars().next());
    assert_eq!(state, Some(Some('S')), "the user's sleep was signalled");
    assert_code(&o, 3);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(all.contains("supervisor"), "says why: {all}");
    // The same for reconcile, which settles the `removing` record.
    assert_code(&sb.run("team-scale", &["reconcile", "t"]), 3);
    let panes =
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned();
    assert!(panes.lines().any(|l| l == user_pane), "reconcile killed it");
    assert!(alive(user_pid));
}

/// Attack (thirty-fifth black-box round, the dead form): a forged `team.json` points a worker's
/// record at a dead pane of the user's (`remain-on-exit`) that carries the worker's tags. No
/// process runs in it to prove it by, so only the command tmux started it with can say whose
/// it is: not the worker's supervisor, so the pane (and the screen it keeps) stays.
#[test]
fn a_users_dead_pane_with_a_workers_tags_is_never_killed_through_a_forged_record() {
    let sb = Sandbox::new();
    team_with_workers(&sb, "t", "exec sleep 100000", 2);
    let sock = sb.private_sock();
    let wpane = worker_pane_id(&sb, "t", "worker-2");
    let out = String::from_utf8_lossy(
        &tmux_at(
            &sock,
            &[
                "split-window",
                "-d",
                "-t",
                wpane.as_str(),
                "-P",
                "-F",
                "#{pane_id} #{pane_pid}",
                "sleep 1; echo the users notes",
            ],
        )
        .stdout,
    )
    .into_owned();
    let (user_pane, user_pid) = out.trim().split_once(' ').expect("new pane");
    let user_pid = Own::now(user_pid.parse().unwrap());
    assert!(
        tmux_at(
            &sock,
            &["set-option", "-p", "-t", user_pane, "remain-on-exit", "on"]
        )
        .status
        .success()
    );
    copy_tags(&sock, &wpane, user_pane);
    wait_for("the user's pane is dead", Duration::from_secs(10), || {
        String::from_utf8_lossy(
            &tmux_at(
                &sock,
                &["display-message", "-p", "-t", user_pane, "#{pane_dead}"],
            )
            .stdout,
        )
        .trim()
            == "1"
    });
    forge_worker_pane(&sb, "worker-2", user_pane, user_pid.pid, None);

    let o = sb.run(
        "team-scale",
        &[
            "down", "t", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
    );
    let panes =
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned();
    assert!(
        panes.lines().any(|l| l == user_pane),
        "the user's dead pane {user_pane} was killed: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_code(&o, 3);
    let all = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(all.contains("not provably"), "says why: {all}");
}

/// Attack (thirty-fifth black-box round, the leader): a forged `team.json` names a pane on a
/// tmux server of the user's (its endpoint, session and leader incarnation copied from it) as
/// the team's tools-made leader, with the leader's tags copied onto that pane. `shutdown`
/// killed it, and once the team read as stopped the reaper killed such a pane and its session.
/// The tools make a leader only on the workspace's own private server: a record naming one
/// anywhere else names a pane of someone else's, and it is kept.
#[test]
fn a_forged_leader_record_on_a_users_server_kills_nothing() {
    forged_leader_record_kills_nothing(false);
}

/// The same, with the record's endpoint a symlink elsewhere that bears the name of the
/// workspace's private socket and leads to the user's server: the name alone proves nothing,
/// so every leader kill checks inside tmux that the server is bound at a socket of that name
/// (`#{b:socket_path}`).
#[test]
fn a_forged_leader_record_through_a_socket_alias_kills_nothing() {
    forged_leader_record_kills_nothing(true);
}

fn forged_leader_record_kills_nothing(alias: bool) {
    let sb = Sandbox::new();
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "f",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 0);
    // The user's own server, in the same socket directory.
    let user_sock = sb.private_sock().with_file_name("userserver");
    let out = tmux_at(
        &user_sock,
        &[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "user",
            "-P",
            "-F",
            "#{pane_id} #{pane_pid} #{session_id} #{window_id} #{pid} #{start_time}",
            "exec sleep 100000",
        ],
    );
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!(f.len(), 6, "{line}");
    let user_pid = Own::now(f[1].parse().unwrap());
    let path = sb.ws.join(".team/teams/f/team.json");
    let mut team: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let owner = team["owner_id"].as_str().unwrap().to_string();
    let endpoint = if alias {
        let dir = sb.dir.path().join("elsewhere");
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join(sb.private_sock().file_name().unwrap());
        std::os::unix::fs::symlink(&user_sock, &link).unwrap();
        link
    } else {
        user_sock.clone()
    };
    team["endpoint"] = endpoint.display().to_string().into();
    team["session"]["id"] = f[2].into();
    team["session"]["name"] = "user".into();
    let pane = &mut team["leader"]["pane"];
    pane["pane_id"] = f[0].into();
    pane["pane_pid"] = user_pid.pid.into();
    pane["session_id"] = f[2].into();
    pane["window_id"] = f[3].into();
    pane["server_pid"] = f[4].parse::<u64>().unwrap().into();
    pane["server_start"] = f[5].parse::<u64>().unwrap().into();
    pane["process_start"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_vec_pretty(&team).unwrap()).unwrap();
    let ws = sb.ws.display().to_string();
    for (k, v) in [
        ("@team_owner", owner.as_str()),
        ("@team_role", "leader"),
        ("@team_workspace", ws.as_str()),
        ("@team_name", "f"),
    ] {
        assert!(
            tmux_at(&user_sock, &["set-option", "-p", "-t", f[0], k, v])
                .status
                .success()
        );
    }
    assert!(
        tmux_at(
            &user_sock,
            &["set-option", "-t", f[2], "@team_session_owner", &owner]
        )
        .status
        .success()
    );
    let o = sb.run("team-scale", &["shutdown", "f"]);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let panes = |s: &std::path::Path| {
        String::from_utf8_lossy(&tmux_at(s, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned()
    };
    assert!(
        panes(&user_sock).lines().any(|l| l == f[0]),
        "shutdown killed the user's pane: {out}"
    );
    assert!(
        alias || out.contains("not the private tmux server"),
        "says why: {out}"
    );
    // The team now reads as stopped: the reaper leaves the pane (and its session) alone too.
    let scope = sb.dir.path().display().to_string();
    let o = sb.run(
        "team-reap",
        &["--only-under", scope.as_str(), "run", "--json"],
    );
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        panes(&user_sock).lines().any(|l| l == f[0]),
        "the reaper killed the user's pane: {report}"
    );
    assert!(
        report.contains(f[0]) && (alias || report.contains("not the private tmux server")),
        "the reaper saw it and says why: {report}"
    );
    assert!(alive(user_pid));
    kill_server(&user_sock);
}

/// Attack (thirty-sixth black-box round): the team's private server is killed and a server
/// of the user's started at the same socket, in the same second, with the pids chosen (a pid
/// namespace can) so that its server and its one pane get the recorded pids; ids restart at
/// `$0`/`@0`/`%0`. Every field of the leader's record then matched a pane of the user's but
/// one, the pane process's start time, which nothing checked: `shutdown` killed the pane (and
/// with it the user's server). Here the record's start time is made to differ instead, which
/// is what such a pane shows: `shutdown` and the reaper keep it.
#[test]
fn a_leader_whose_process_is_not_the_recorded_one_is_never_killed() {
    let sb = Sandbox::new();
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "r",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 0);
    let path = sb.ws.join(".team/teams/r/team.json");
    let mut team: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let pane = team["leader"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let pid = Own::now(team["leader"]["pane"]["pane_pid"].as_u64().unwrap() as u32);
    let start = team["leader"]["pane"]["process_start"]
        .as_u64()
        .expect("init records the leader's process start");
    team["leader"]["pane"]["process_start"] = (start + 4).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&team).unwrap()).unwrap();
    let sock = sb.private_sock();
    let o = sb.run("team-scale", &["shutdown", "r"]);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let panes = || {
        String::from_utf8_lossy(&tmux_at(&sock, &["list-panes", "-a", "-F", "#{pane_id}"]).stdout)
            .into_owned()
    };
    assert!(
        panes().lines().any(|l| l == pane),
        "shutdown killed it: {out}"
    );
    assert!(out.contains("pid_reused"), "says why: {out}");
    let scope = sb.dir.path().display().to_string();
    let o = sb.run(
        "team-reap",
        &["--only-under", scope.as_str(), "run", "--json"],
    );
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        panes().lines().any(|l| l == pane),
        "the reaper killed it: {report}"
    );
    assert!(
        report.contains("pid_reused"),
        "the reaper says why: {report}"
    );
    assert!(alive(pid));
    kill_server(&sock);
}

/// Attack (thirty-seventh black-box round): two teams of one workspace share its private
/// server. A forged record of team `b` copying team `a`'s owner id, session and leader made
/// `shutdown b` kill `a`'s live leader: the kill's guard did not check the pane's team name.
#[test]
fn a_record_copying_another_teams_leader_on_the_shared_server_kills_nothing() {
    let sb = Sandbox::new();
    for t in ["a", "b"] {
        let o = sb.run(
            "team-scale",
            &["init", t, "--private", "--worker-cmd", "exec sleep 100000"],
        );
        assert_code(&o, 0);
    }
    let read = |t: &str| -> Value {
        let p = sb.ws.join(format!(".team/teams/{t}/team.json"));
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let a = read("a");
    let mut b = read("b");
    for k in ["session", "leader", "owner_id"] {
        b[k] = a[k].clone();
    }
    let path = sb.ws.join(".team/teams/b/team.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&b).unwrap()).unwrap();
    let pane = a["leader"]["pane"]["pane_id"].as_str().unwrap().to_string();
    let o = sb.run("team-scale", &["shutdown", "b"]);
    let panes = String::from_utf8_lossy(
        &tmux_at(
            &sb.private_sock(),
            &["list-panes", "-a", "-F", "#{pane_id}"],
        )
        .stdout,
    )
    .into_owned();
    assert!(
        panes.lines().any(|l| l == pane),
        "team a's leader was killed by team b's shutdown: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("@team_name"),
        "{o:?}"
    );
}
