//! A copied or moved workspace carries the original team's state (its panes, its owner id):
//! no command acts on it from the copy, and the reaper does not judge the original's panes by
//! state that names another workspace.

use std::path::Path;
use std::process::{Command, Output};

use tests::{Sandbox, assert_code, json_lines};

/// `team-scale args...` run in `dir` (the sandbox's environment otherwise).
fn scale_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    sb.cmd("team-scale")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Every pane id on the original team's server.
fn panes(sb: &Sandbox) -> Vec<String> {
    let o = tests::tmux_at(
        &sb.private_sock(),
        &["list-panes", "-a", "-F", "#{pane_id}"],
    );
    assert!(o.status.success(), "the original server is gone");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A private team with a leader and `workers` workers; returns its panes.
fn setup(workers: &str) -> (Sandbox, Vec<String>) {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "cc",
                "--private",
                "--leader-cmd",
                "exec sleep 100000",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    if workers != "0" {
        assert_code(
            &sb.run("team-scale", &["up", "cc", workers, "--ready-timeout", "0"]),
            0,
        );
    }
    let before = panes(&sb);
    assert_eq!(
        before.len(),
        1 + workers.parse::<usize>().unwrap(),
        "{before:?}"
    );
    (sb, before)
}

#[test]
fn a_copied_workspace_cannot_act_on_the_original_team() {
    // The attack as found: a team with only its leader (no worker's resource paths, which
    // would betray the copy), copied with `cp -a`; `shutdown` in the copy killed the leader.
    let (sb, before) = setup("0");
    let copy = sb.dir.path().join("wscopy");
    let st = Command::new("cp")
        .arg("-a")
        .arg(&sb.ws)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(st.success());
    let copy = copy.canonicalize().unwrap();
    let team_json = copy.join(".team/teams/cc/team.json");
    let state_before = std::fs::read(&team_json).unwrap();
    let inc = uuid::Uuid::new_v4().to_string();
    let who = ["cc", "--worker", "worker-1", "--incarnation", inc.as_str()];

    for args in [
        vec!["shutdown", "cc", "--grace", "1s"],
        vec!["down", "cc", "--force", "--grace", "1s"],
        vec![
            "down", "cc", "--worker", "worker-1", "--force", "--grace", "1s",
        ],
        vec!["up", "cc", "1", "--ready-timeout", "0"],
        vec!["reconcile", "cc"],
        vec!["policy", "cc", "--residue", "report"],
        vec!["status", "cc"],
        vec![
            "init",
            "cc",
            "--private",
            "--leader-cmd",
            "exec sleep 100001",
        ],
        [&["worker-status", "--state", "idle"][..], &who].concat(),
        [&["task", "claim", "1"][..], &who].concat(),
    ] {
        let o = scale_in(&sb, &copy, &args);
        assert_code(&o, 65);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("copied or moved")
                && err.contains(&sb.ws.display().to_string())
                && err.contains(&copy.display().to_string()),
            "{args:?}: the error names both workspaces: {err}"
        );
        assert_eq!(panes(&sb), before, "{args:?} touched the original team");
    }
    assert_eq!(
        std::fs::read(&team_json).unwrap(),
        state_before,
        "the copy's state is unchanged"
    );
    // `list` says so for the team, and exits 65.
    let o = scale_in(&sb, &copy, &["list"]);
    assert_code(&o, 65);
    assert!(String::from_utf8_lossy(&o.stdout).contains("copied or moved"));

    // The original workspace still works.
    assert_code(&sb.run("team-scale", &["status", "cc"]), 0);
}

#[test]
fn the_reaper_does_not_judge_panes_by_state_naming_another_workspace() {
    let (sb, before) = setup("1");
    // State of another workspace's team (another owner id) lands in this workspace, as a
    // restored backup or a `cp -a other/.team .team` would put it.
    let path = sb.ws.join(".team/teams/cc/team.json");
    let mut t: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    t["workspace"] = "/elsewhere/ws".into();
    t["owner_id"] = uuid::Uuid::new_v4().to_string().into();
    std::fs::write(&path, serde_json::to_vec_pretty(&t).unwrap()).unwrap();

    let o = sb
        .cmd("team-reap")
        .args(["run", "--json", "--socket"])
        .arg(sb.private_sock())
        .output()
        .unwrap();
    let lines = json_lines(&o.stdout);
    let verdicts: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "pane").collect();
    assert_eq!(verdicts.len(), 2, "{lines:?}");
    for v in verdicts {
        assert_eq!(v["verdict"], "unverifiable", "{v}");
        assert!(
            v["reason"].as_str().unwrap().contains("/elsewhere/ws"),
            "{v}"
        );
    }
    assert_eq!(
        panes(&sb),
        before,
        "the reaper killed what it could not prove"
    );
}
