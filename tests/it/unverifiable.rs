//! Unknown is not absent: a worker with no recorded pane is never dropped on a listing that
//! failed, since a pane carrying its tags may exist (a scale-up that crashed after the split).

use std::path::{Path, PathBuf};

use serde_json::Value;
use tests::{Sandbox, assert_code, tmux_at, tmux_bin};

fn tagged_workers(sock: &Path) -> Vec<String> {
    let o = tmux_at(
        sock,
        &["list-panes", "-a", "-F", "#{pane_id} #{@team_worker}"],
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|t| !t.is_empty()))
        .map(str::to_string)
        .collect()
}

/// A `tmux` that fails every `list-panes` and runs the real one for everything else.
fn failing_listing_tmux(dir: &Path) -> PathBuf {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("tmux");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = list-panes ]; then echo 'simulated: listing unreadable' >&2; exit 1; fi\ndone\nexec {} \"$@\"\n",
            tmux_bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn team_json(sb: &Sandbox) -> Value {
    serde_json::from_slice(&std::fs::read(sb.ws.join(".team/teams/demo/team.json")).unwrap())
        .unwrap()
}

#[test]
fn a_failed_listing_never_drops_a_worker_whose_pane_was_not_recorded() {
    let sb = Sandbox::new();
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
    let sock = sb.private_sock();
    // A scale-up that crashes right after the split: worker-1's pane exists, tagged, unrecorded.
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
        tagged_workers(&sock).len(),
        1,
        "the crash left its tagged pane"
    );
    assert!(team_json(&sb)["workers"][0]["pane"].is_null());

    // reconcile while every listing fails.
    let bin = failing_listing_tmux(sb.dir.path());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = sb
        .cmd("team-scale")
        .args(["reconcile", "demo"])
        .env("PATH", &path)
        // The fake stands in for the tmux binary, which only runs with the native client off.
        .env("TEAM_TMUX_NATIVE", "0")
        .output()
        .unwrap();
    let t = team_json(&sb);
    let w = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "worker-1")
        .unwrap_or_else(|| {
            panic!(
                "worker-1's record was dropped; pane left: {:?}",
                tagged_workers(&sock)
            )
        });
    assert_eq!(w["lifecycle"], "removing");
    assert!(
        w["removal_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("unverifiable")),
        "{w}"
    );
    assert_code(&o, 3);
    assert_eq!(
        tagged_workers(&sock).len(),
        1,
        "nothing was killed unproven"
    );

    // With a listing that answers, the pane is found by its tags, killed, and the record dropped.
    assert_code(&sb.run("team-scale", &["reconcile", "demo"]), 0);
    assert!(
        tagged_workers(&sock).is_empty(),
        "{:?}",
        tagged_workers(&sock)
    );
    assert!(team_json(&sb)["workers"].as_array().unwrap().is_empty());
}
