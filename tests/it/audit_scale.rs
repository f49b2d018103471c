//! The audit log at scale (issue 15): a relative log path, rotation into segments, verify over
//! every segment, prune with a checkpoint, and streaming query equal to the whole-file reading.

use super::audit_common::*;

/// A relative `--log` naming a new file in the current directory: the record is written and
/// made durable, and the command exits 0 (it used to exit 74: "fsync directory: open directory
/// ''", because the parent of a bare file name is "", not ".").
#[test]
fn relative_log_path_on_a_new_file_exits_0() {
    let d = tempfile::tempdir().unwrap();
    let mut c = with_log(
        std::path::Path::new("r.jsonl"),
        &["record", "--caller", "me", "--action", "kill-pane"],
    );
    c.current_dir(d.path());
    let o = run(c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(records(&d.path().join("r.jsonl")).len(), 1);
    let mut c = with_log(std::path::Path::new("r.jsonl"), &["verify"]);
    c.current_dir(d.path());
    let o = run(c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Rotation and prune with the same relative name.
    for i in 0..12 {
        let t = format!("%{i}");
        let mut c = with_log(
            std::path::Path::new("r.jsonl"),
            &[
                "--max-size",
                "1K",
                "record",
                "--caller",
                "me",
                "--action",
                "x",
                "--target",
                &t,
            ],
        );
        c.current_dir(d.path());
        let o = run(c);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    assert!(d.path().join("r.jsonl.000001").exists());
    for args in [&["prune", "--keep", "1"][..], &["verify"]] {
        let mut c = with_log(std::path::Path::new("r.jsonl"), args);
        c.current_dir(d.path());
        let o = run(c);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    }
}

fn json_lines(o: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a stdout line is not JSON"))
        .collect()
}

/// `n` records through `record`, each its own process, rotating at `max`.
fn write_rotating(log: &std::path::Path, n: usize, max: &str) {
    for i in 0..n {
        let target = format!("%{i}");
        let team = if i % 2 == 0 { "even" } else { "odd" };
        let o = run(with_log(
            log,
            &[
                "--max-size",
                max,
                "record",
                "--caller",
                "me",
                "--action",
                "kill-pane",
                "--team",
                team,
                "--target",
                &target,
            ],
        ));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

fn segment(log: &std::path::Path, n: u64) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}.{n:06}", log.display()))
}

#[test]
fn writers_rotate_and_verify_walks_the_segments() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    write_rotating(&log, 24, "2K");
    assert!(segment(&log, 1).exists() && segment(&log, 2).exists());
    let o = run(with_log(&log, &["verify", "--json"]));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let sum = json_lines(&o).pop().unwrap();
    assert_eq!(sum["ok"], true);
    assert!(sum["segments"].as_u64().unwrap() >= 2, "{sum}");
    // query reads every segment: all 24 intents, in order.
    let o = run(with_log(&log, &["query", "--stage", "intent", "--json"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rs = json_lines(&o);
    let targets: Vec<String> = rs
        .iter()
        .filter(|r| r["type"] == "record")
        .map(|r| r["targets"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        targets,
        (0..24).map(|i| format!("%{i}")).collect::<Vec<_>>()
    );
    // --last reads from the end: the same as the tail of the whole answer.
    let o = run(with_log(
        &log,
        &["query", "--team", "odd", "--last", "3", "--json"],
    ));
    let last: Vec<String> = json_lines(&o)
        .iter()
        .filter(|r| r["type"] == "record")
        .map(|r| r["targets"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(last, ["%19", "%21", "%23"]);
    // The size also comes from TEAM_AUDIT_MAX_SIZE.
    let log2 = d.path().join("env.jsonl");
    for i in 0..12 {
        let mut c = with_log(
            &log2,
            &[
                "record",
                "--caller",
                "me",
                "--action",
                "x",
                "--target",
                &format!("%{i}"),
            ],
        );
        c.env("TEAM_AUDIT_MAX_SIZE", "1K");
        assert_eq!(code(&run(c)), 0);
    }
    assert!(segment(&log2, 1).exists());
}

#[test]
fn verify_exits_1_on_a_dropped_segment_and_names_it() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    write_rotating(&log, 24, "2K");
    std::fs::remove_file(segment(&log, 2)).unwrap();
    let (c, p) = verify(&log);
    assert_eq!(c, 1);
    let p = p.expect("no problem reported");
    assert_eq!(p["kind"], "missing_segment", "{p}");
}

#[test]
fn prune_checkpoints_then_removes_and_verify_says_where_it_starts() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    write_rotating(&log, 30, "2K");
    let o = run(with_log(
        &log,
        &["--max-size", "1G", "prune", "--keep", "1", "--json"],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = json_lines(&o);
    let removed: Vec<&serde_json::Value> = out.iter().filter(|v| v["type"] == "removed").collect();
    assert!(!removed.is_empty());
    for r in &removed {
        assert_eq!(r["sha256"].as_str().unwrap().len(), 64);
        assert!(!segment(&log, r["number"].as_u64().unwrap()).exists());
    }
    let sum = out.last().unwrap();
    let first_seq = sum["first_seq"].as_u64().unwrap();
    assert!(first_seq > 1);
    let o = run(with_log(&log, &["verify", "--json"]));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let v = json_lines(&o).pop().unwrap();
    assert_eq!(v["first_seq"].as_u64(), Some(first_seq));
    assert_eq!(v["checkpoint_seq"], sum["checkpoint_seq"]);
    let o = run(with_log(&log, &["verify"]));
    assert!(
        stdout(&o).contains(&format!("starts at seq {first_seq}")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_retention_and_size_arguments_are_usage_errors_with_no_effect() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    write_rotating(&log, 12, "1K");
    let before: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    for args in [
        &["prune"][..],
        &["prune", "--keep", "1", "--before", "1d"],
        &["prune", "--before", "yesterday-ish"],
        &["prune", "--keep", "-1"],
        &[
            "--max-size",
            "12X",
            "record",
            "--caller",
            "a",
            "--action",
            "b",
        ],
    ] {
        let o = run(with_log(&log, args));
        assert_eq!(code(&o), 64, "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
    }
    let after: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before.len(), after.len());
    // A broken log is not pruned: exit 1, nothing removed.
    let s1 = segment(&log, 1);
    let text = std::fs::read_to_string(&s1).unwrap();
    std::fs::write(&s1, text.replacen("\"me\"", "\"xx\"", 1)).unwrap();
    let o = run(with_log(&log, &["prune", "--keep", "0"]));
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(s1.exists());
}

/// Eight writers at once, rotating every few KiB: no record is lost or duplicated, the chain
/// verifies across every segment (a writer that waited on the lock of a file renamed under it
/// starts over on the new one).
#[test]
fn concurrent_writers_rotating_keep_one_chain() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let kids: Vec<_> = (0..8)
        .map(|w| {
            let log = log.clone();
            std::thread::spawn(move || {
                let input: String = (0..150)
                    .map(|i| format!("{{\"type\":\"pane\",\"pane_id\":\"%{i}\",\"w\":{w}}}\n"))
                    .collect();
                run_with_input(
                    with_log(&log, &["--max-size", "2K", "pass"]),
                    input.as_bytes(),
                )
            })
        })
        .collect();
    for k in kids {
        let o = k.join().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let o = run(with_log(&log, &["verify", "--json"]));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let sum = json_lines(&o).pop().unwrap();
    assert!(sum["segments"].as_u64().unwrap() >= 5, "{sum}");
    let o = run(with_log(&log, &["query", "--stage", "intent", "--json"]));
    let mut seen: Vec<(u64, String)> = json_lines(&o)
        .iter()
        .filter(|r| r["type"] == "record")
        .map(|r| {
            let t = &r["targets"][0];
            (
                t["w"].as_u64().unwrap(),
                t["pane_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(seen.len(), 8 * 150);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8 * 150, "a record was written twice");
}

/// `team-scale` writes the audit log too, so it rotates it where `team-audit` does: at
/// `TEAM_AUDIT_MAX_SIZE` (it used to ignore it and rotate at the default 256 MiB). A size that
/// is not one is a usage error (64) with no effect.
#[test]
fn team_scale_rotates_the_audit_log_at_team_audit_max_size() {
    let sb = tests::Sandbox::new();
    let bad = sb
        .cmd("team-scale")
        .args(["init", "s3", "--private"])
        .env("TEAM_AUDIT_MAX_SIZE", "ten")
        .output()
        .unwrap();
    tests::assert_code(&bad, 64);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("not a size"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(!sb.ws.join(".team").exists(), "a usage error had an effect");
    let run = |args: &[&str]| {
        sb.cmd("team-scale")
            .args(args)
            .env("TEAM_AUDIT_MAX_SIZE", "2K")
            .output()
            .unwrap()
    };
    tests::assert_code(
        &run(&[
            "init",
            "s3",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
            "--worker-cmd",
            "exec sleep 100000",
        ]),
        0,
    );
    for _ in 0..3 {
        tests::assert_code(&run(&["up", "s3", "1", "--ready-timeout", "0"]), 0);
    }
    tests::assert_code(
        &run(&[
            "down", "s3", "--worker", "worker-3", "--force", "--grace", "2s",
        ]),
        0,
    );
    tests::assert_code(&run(&["shutdown", "s3"]), 0);
    let log = sb.ws.join(".team/audit.jsonl");
    let first = sb.ws.join(".team/audit.jsonl.000001");
    assert!(first.exists(), "no segment: the log never rotated");
    let o = sb
        .cmd("team-audit")
        .args(["--audit-log", log.to_str().unwrap(), "verify"])
        .output()
        .unwrap();
    tests::assert_code(&o, 0);
    let bad = sb
        .cmd("team-reap")
        .args(["--audit-max-size", "5T", "scan"])
        .output()
        .unwrap();
    tests::assert_code(&bad, 64);
}
