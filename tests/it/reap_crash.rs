//! team-reap after a real crash, and with an audit log it cannot write.

use tests::{Sandbox, assert_audit_pairs, assert_code, json_lines, tmux_at};

fn tagged_panes(sock: &std::path::Path) -> Vec<String> {
    let o = tmux_at(
        sock,
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{@team_incarnation}#{@team_role}",
        ],
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|t| !t.is_empty()))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

/// Runs `team-reap args` once no pane of this sandbox's team is `busy`: every integration test
/// runs in one binary, and a reaper of another test (or of another run on this machine) that
/// finds this team's processes holds the team's scale lock for a moment, which makes this
/// reaper skip the team for its run (`busy`, as designed). Waits at most 20 s.
fn reap(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let ws = sb.ws.display().to_string();
    let sock = sb.private_sock().display().to_string();
    for _ in 0..80 {
        let probe = sb.run(
            "team-reap",
            &[
                "scan",
                "--json",
                "--no-processes",
                "--socket",
                &sock,
                "--only-under",
                &ws,
            ],
        );
        let busy = json_lines(&probe.stdout)
            .iter()
            .any(|l| l["verdict"] == "busy");
        if !busy {
            let o = sb.run("team-reap", args);
            // Busy in either output mode (JSON lines, or a human line starting with it).
            let out = String::from_utf8_lossy(&o.stdout);
            if !out.contains("\"verdict\":\"busy\"") && !out.lines().any(|l| l.starts_with("busy"))
            {
                return o;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("the team stayed busy for 20 s");
}

#[test]
fn a_crashed_scale_up_leaves_nothing_the_reaper_cannot_settle() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let sock = sb.private_sock();
    let before = tagged_panes(&sock);
    let o = sb
        .cmd("team-scale")
        .args(["up", "demo", "1", "--ready-timeout", "0"])
        .env("TEAM_FAILPOINTS", "up.split=exit")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(137),
        "the fail point ends the process"
    );
    assert_eq!(
        tagged_panes(&sock).len(),
        before.len() + 1,
        "the crash left its new pane"
    );
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    assert_eq!(st.last().unwrap()["pending"], 1);

    // Only this sandbox's teams are acted on and counted: since every integration test runs in
    // one binary, residue processes of other tests' teams run beside this one.
    let o = reap(
        &sb,
        &[
            "--json",
            "--socket",
            &sock.display().to_string(),
            "--only-under",
            &sb.ws.display().to_string(),
        ],
    );
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "pane" && l["verdict"] == "debt"),
        "{lines:?}"
    );
    // The abandoned pane is gone, everything else is as before.
    assert_eq!(tagged_panes(&sock), before);
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    let sum = st.last().unwrap();
    assert_eq!(
        (
            sum["workers"].as_u64(),
            sum["pending"].as_u64(),
            sum["removing"].as_u64()
        ),
        (Some(1), Some(0), Some(0))
    );
    assert!(
        st.iter()
            .filter(|l| l["type"] == "worker")
            .all(|l| l["liveness"] == "live")
    );
    // Nothing left to do: silent, exit 0 (processes of other runs on this machine are not
    // this test's business).
    let o = reap(
        &sb,
        &["--no-processes", "--socket", &sock.display().to_string()],
    );
    assert_code(&o, 0);
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    assert!(assert_audit_pairs(&sb.ws.join(".team/audit.jsonl")) >= 1);
}

#[test]
fn with_an_unwritable_audit_log_team_reap_kills_nothing() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let sock = sb.private_sock();
    let before = tagged_panes(&sock);
    // The team's state is lost, so its panes are orphans; but the audit log cannot be written.
    std::fs::remove_dir_all(sb.ws.join(".team/teams/demo")).unwrap();
    let log = sb.ws.join(".team/audit.jsonl");
    let _ = std::fs::remove_file(&log);
    std::fs::create_dir(&log).unwrap();
    let o = reap(
        &sb,
        &[
            "--socket",
            &sock.display().to_string(),
            "--only-under",
            &sb.ws.display().to_string(),
        ],
    );
    assert_ne!(o.status.code(), Some(0), "{o:?}");
    assert!(!o.stderr.is_empty(), "it says why");
    assert_eq!(
        tagged_panes(&sock),
        before,
        "fail closed: nothing was killed"
    );
    // With a writable log it reaps them, each kill with its intent and outcome.
    std::fs::remove_dir(&log).unwrap();
    let o = reap(
        &sb,
        &[
            "--socket",
            &sock.display().to_string(),
            "--only-under",
            &sb.ws.display().to_string(),
        ],
    );
    assert_code(&o, 0);
    // The worker went; the leader, which no record names any more, is never killed on its
    // tags alone.
    let left = tagged_panes(&sock);
    assert_eq!(
        left.len(),
        1,
        "{left:?}\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(before.contains(&left[0]));
    assert_eq!(assert_audit_pairs(&log), before.len() - 1);
}
