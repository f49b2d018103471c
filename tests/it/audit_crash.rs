//! Crashes in the middle of the audit log's rotation and retention (issue 15): a writer killed
//! between its `segment_end` and the rename, and `prune` killed between its checkpoint and the
//! removals. The next command converges, and `verify` passes at every step.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tests::bin;

fn audit(log: &Path, failpoints: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(bin("team-audit"));
    for v in [
        "TMUX",
        "TMUX_PANE",
        "TEAM_AUDIT_LOG",
        "TEAM_STATE_DIR",
        "TEAM_AUDIT_MAX_SIZE",
        "TEAM_FAILPOINTS",
    ] {
        c.env_remove(v);
    }
    if let Some(f) = failpoints {
        c.env("TEAM_FAILPOINTS", f);
    }
    c.arg("--log")
        .arg(log)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn record(log: &Path, failpoints: Option<&str>, i: usize) -> Output {
    let t = format!("%{i}");
    audit(
        log,
        failpoints,
        &[
            "--max-size",
            "1K",
            "record",
            "--caller",
            "t",
            "--action",
            "kill-pane",
            "--target",
            &t,
        ],
    )
}

fn segment(log: &Path, n: u64) -> PathBuf {
    PathBuf::from(format!("{}.{n:06}", log.display()))
}

fn verify_ok(log: &Path) -> serde_json::Value {
    let o = audit(log, None, &["verify", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

fn targets(log: &Path) -> Vec<String> {
    let o = audit(log, None, &["query", "--stage", "intent", "--json"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "record")
        .map(|v| v["targets"][0].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_writer_killed_mid_rotation_is_finished_by_the_next_one() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let mut i = 0;
    // Fill until the next append rotates, then crash in the middle of that rotation.
    while !segment(&log, 1).exists() {
        assert_eq!(record(&log, None, i).status.code(), Some(0));
        i += 1;
    }
    let crashed = loop {
        let before = std::fs::read(&log).unwrap();
        let o = record(&log, Some("audit.rotate=exit"), i);
        if o.status.code() == Some(137) {
            break before;
        }
        assert_eq!(o.status.code(), Some(0));
        i += 1;
    };
    // The crashed record was not written (its caller saw a failure: no effect may follow),
    // the active file is closed but not yet renamed, and the log verifies (with a warning).
    assert!(!targets(&log).contains(&format!("%{i}")));
    assert!(std::fs::read(&log).unwrap().len() > crashed.len());
    let v = verify_ok(&log);
    assert_eq!(v["warnings"], 1, "{v}");
    // The next writer renames it and goes on.
    assert_eq!(record(&log, None, i + 1).status.code(), Some(0));
    assert!(segment(&log, 2).exists());
    let v = verify_ok(&log);
    assert_eq!(v["warnings"], 0, "{v}");
    let mut want: Vec<String> = (0..i).map(|k| format!("%{k}")).collect();
    want.push(format!("%{}", i + 1));
    assert_eq!(targets(&log), want);
}

#[test]
fn prune_killed_after_its_checkpoint_leaves_a_log_that_verifies_and_a_rerun_finishes() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    for i in 0..40 {
        assert_eq!(record(&log, None, i).status.code(), Some(0));
    }
    assert!(segment(&log, 3).exists());
    let o = audit(
        &log,
        Some("audit.prune.after_checkpoint=exit"),
        &["prune", "--keep", "1"],
    );
    assert_eq!(o.status.code(), Some(137));
    // Checkpoint written, nothing removed yet: still a whole chain.
    assert!(segment(&log, 1).exists());
    let v = verify_ok(&log);
    assert_eq!(v["first_seq"], 1, "{v}");
    let o = audit(&log, None, &["prune", "--keep", "1"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!segment(&log, 1).exists());
    let v = verify_ok(&log);
    assert!(v["first_seq"].as_u64().unwrap() > 1, "{v}");
    assert!(v["checkpoint_seq"].is_u64(), "{v}");
    // Every intent written after the new start is still there.
    assert_eq!(targets(&log).last().map(String::as_str), Some("%39"));
}
