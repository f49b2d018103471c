//! `record`, `verify`, `query`: round trips, exit codes, and tampering found at the right seq.

use std::fs;

use super::audit_common::*;
use serde_json::Value;

fn make_log(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let log = dir.join("audit.jsonl");
    let input: String = (1..=n)
        .map(|i| format!("{{\"type\":\"candidate\",\"pane_id\":\"%{i}\",\"team\":\"demo\"}}\n"))
        .collect();
    let o = run_with_input(with_log(&log, &["pass"]), input.as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(records(&log).len(), n);
    log
}

#[test]
fn record_prints_the_id_and_the_log_verifies() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("a/b/audit.jsonl");
    let o = run(with_log(
        &log,
        &[
            "record",
            "--caller",
            "me",
            "--action",
            "kill-pane",
            "--target",
            "%3",
            "--team",
            "demo",
            "--reason",
            "test",
            "--",
            "tmux",
            "kill-pane",
            "-t",
            "%3",
        ],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    uuid::Uuid::parse_str(&id).expect("stdout is not an audit_id");
    let o = run(with_log(
        &log,
        &[
            "record",
            "--caller",
            "me",
            "--action",
            "kill-pane",
            "--stage",
            "complete",
            "--audit-id",
            &id,
            "--outcome",
            "killed",
            "--json",
        ],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // `record --json`: the record line, then the summary line.
    let v: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(v["type"], "record");
    assert_eq!(v["seq"], 2);
    assert_eq!(v["audit_id"], id.as_str());
    let rs = records(&log);
    assert_eq!(
        rs[0]["argv"],
        serde_json::json!(["tmux", "kill-pane", "-t", "%3"])
    );
    assert_eq!(rs[0]["stage"], "intent");
    assert_eq!(rs[0]["targets"], serde_json::json!(["%3"]));
    assert_eq!(rs[1]["stage"], "complete");
    assert_eq!(rs[1]["outcome"], "killed");
    assert_eq!(rs[1]["prev"], rs[0]["hash"]);
    let o = run(with_log(&log, &["verify"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ok: 2 records"), "{}", stdout(&o));
}

#[test]
fn usage_errors_and_missing_logs() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");
    let o = run(with_log(
        &log,
        &[
            "record", "--caller", "x", "--action", "y", "--stage", "failed",
        ],
    ));
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("team-audit: error:"), "{}", stderr(&o));
    assert!(!log.exists());
    let o = run(with_log(&log, &["record", "--action", "y"]));
    assert_eq!(code(&o), 64);
    let o = run(with_log(&log, &["verify"]));
    assert_eq!(code(&o), 66, "{}", stderr(&o));
    let o = run(with_log(&log, &["query"]));
    assert_eq!(code(&o), 66);
    assert!(o.stdout.is_empty(), "a header for no log");
    // A log whose directory is not there is no log either (it was an I/O error, 74).
    let nowhere = log.parent().unwrap().join("no-such-dir/audit.jsonl");
    for args in [&["query"][..], &["verify"]] {
        let o = run(with_log(&nowhere, args));
        assert_eq!(code(&o), 66, "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let o = run(with_log(&log, &["query", "--since", "yesterday-ish"]));
    assert_eq!(code(&o), 64);
}

#[test]
fn help_documents_exit_codes_and_examples() {
    let o = run({
        let mut c = cmd();
        c.arg("--help");
        c
    });
    assert_eq!(code(&o), 0);
    let h = stdout(&o);
    for needle in [
        "Exit status:",
        "64  usage error",
        "75  busy",
        "Examples:",
        "team-audit pass",
    ] {
        assert!(h.contains(needle), "--help lacks {needle:?}");
    }
}

#[test]
fn log_path_resolution() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let rec = |c: &mut std::process::Command| {
        c.args(["record", "--caller", "c", "--action", "a"]);
    };
    // Default: <cwd>/.team/audit.jsonl, with the state root's .gitignore.
    let mut c = cmd();
    rec(&mut c);
    c.current_dir(&ws);
    assert_eq!(code(&run(c)), 0);
    assert_eq!(records(&ws.join(".team/audit.jsonl")).len(), 1);
    assert_eq!(fs::read(ws.join(".team/.gitignore")).unwrap(), b"*\n");
    // TEAM_STATE_DIR.
    let sd = d.path().join("state");
    let mut c = cmd();
    rec(&mut c);
    c.current_dir(&ws).env("TEAM_STATE_DIR", &sd);
    assert_eq!(code(&run(c)), 0);
    assert_eq!(records(&sd.join("audit.jsonl")).len(), 1);
    // TEAM_AUDIT_LOG beats TEAM_STATE_DIR; --log beats both.
    let env_log = d.path().join("env.jsonl");
    let flag_log = d.path().join("flag.jsonl");
    let mut c = cmd();
    rec(&mut c);
    c.current_dir(&ws)
        .env("TEAM_STATE_DIR", &sd)
        .env("TEAM_AUDIT_LOG", &env_log);
    assert_eq!(code(&run(c)), 0);
    let mut c = cmd();
    c.arg("--log").arg(&flag_log);
    rec(&mut c);
    c.current_dir(&ws).env("TEAM_AUDIT_LOG", &env_log);
    assert_eq!(code(&run(c)), 0);
    assert_eq!(records(&env_log).len(), 1);
    assert_eq!(records(&flag_log).len(), 1);
    assert_eq!(records(&sd.join("audit.jsonl")).len(), 1);
}

fn lines(log: &std::path::Path) -> Vec<Vec<u8>> {
    fs::read(log)
        .unwrap()
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn assert_problem(log: &std::path::Path, kind: &str, seq: u64) {
    let (c, p) = verify(log);
    assert_eq!(c, 1, "verify passed a tampered log ({kind})");
    let p = p.expect("no problem record");
    assert_eq!(p["kind"], kind, "{p}");
    assert_eq!(p["seq"], seq, "{p}");
}

#[test]
fn tampering_is_detected_at_the_right_seq() {
    let d = tempfile::tempdir().unwrap();
    let log = make_log(d.path(), 8);
    let orig = lines(&log);
    assert_eq!(verify(&log).0, 0);

    // Edit a field.
    let mut ls = orig.clone();
    ls[4] = String::from_utf8(ls[4].clone())
        .unwrap()
        .replace("pipeline", "nobody")
        .into_bytes();
    fs::write(&log, ls.concat()).unwrap();
    assert_problem(&log, "edited_field", 5);

    // Delete a line.
    let mut ls = orig.clone();
    ls.remove(2);
    fs::write(&log, ls.concat()).unwrap();
    assert_problem(&log, "gap", 3);

    // Swap two lines.
    let mut ls = orig.clone();
    ls.swap(5, 6);
    fs::write(&log, ls.concat()).unwrap();
    assert_problem(&log, "reorder", 6);

    // Truncate mid-line.
    let all = orig.concat();
    let cut = all.len() - orig[7].len() / 2;
    fs::write(&log, &all[..cut]).unwrap();
    assert_problem(&log, "torn_line", 8);

    // Append a forged line: a recomputed hash, but the wrong prev.
    fs::write(&log, orig.concat()).unwrap();
    let mut forged: Value = serde_json::from_slice(&orig[7]).unwrap();
    forged["seq"] = 9.into();
    forged["prev"] = "f".repeat(64).into();
    let mut r: team_core::audit::Record = serde_json::from_value(forged).unwrap();
    r.hash = team_core::audit::canonical::compute_hash(&r);
    let mut bytes = orig.concat();
    bytes.extend(team_core::audit::canonical::render_line(&r));
    fs::write(&log, bytes).unwrap();
    assert_problem(&log, "bad_prev", 9);

    // Human output names the seq too.
    let o = run(with_log(&log, &["verify"]));
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("seq 9 (bad_prev)"), "{}", stdout(&o));
    assert!(stderr(&o).contains("broken at seq 9"), "{}", stderr(&o));
}

/// `SEQ:HASH` of the log's last record, as `verify --json` reports it.
fn anchor_of(log: &std::path::Path) -> String {
    let o = run(with_log(log, &["verify", "--json"]));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let s: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    format!("{}:{}", s["last_seq"], s["head"].as_str().unwrap())
}

/// Black-box round 5: a keyless chain cannot show records cut from its end or a chain
/// rewritten whole; each attack below passes a plain `verify`. An anchor saved earlier
/// (`verify --expect SEQ:HASH`) catches each one.
#[test]
fn an_anchor_catches_a_cut_tail_a_laundered_tear_and_a_rewritten_chain() {
    let d = tempfile::tempdir().unwrap();
    let log = make_log(d.path(), 6);
    let orig = lines(&log);
    let anchor = anchor_of(&log);
    let expect = |log: &std::path::Path| {
        let o = run(with_log(log, &["verify", "--expect", &anchor, "--json"]));
        let problem = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|l| l["type"] == "problem");
        (code(&o), problem)
    };
    assert_eq!(expect(&log).0, 0, "the anchor holds on the untouched log");

    // 1. The last two records cut off.
    fs::write(&log, orig[..4].concat()).unwrap();
    assert_eq!(verify(&log).0, 0, "a plain verify cannot see a cut tail");
    let (c, p) = expect(&log);
    assert_eq!(c, 1);
    assert_eq!(p.unwrap()["kind"], "anchor");

    // 2. Cut mid-record, then let the next writer acknowledge the tear: three records gone
    //    behind a "damaged bytes" warning.
    let mut cut = orig[..3].concat();
    cut.extend_from_slice(&orig[3][..50]);
    fs::write(&log, &cut).unwrap();
    let o = run(with_log(
        &log,
        &["record", "--caller", "c", "--action", "a"],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        verify(&log).0,
        0,
        "a plain verify takes the tear for a crash"
    );
    assert_eq!(expect(&log).0, 1);

    // 3. Every record rewritten with a recomputed chain (a field edited in the second).
    let mut prev = "0".repeat(64);
    let mut bytes = Vec::new();
    for (i, l) in orig.iter().enumerate() {
        let mut r: team_core::audit::Record = serde_json::from_slice(l).unwrap();
        if i == 1 {
            r.caller = "someone-else".into();
        }
        r.prev = prev.clone();
        r.hash = team_core::audit::canonical::compute_hash(&r);
        prev = r.hash.clone();
        bytes.extend(team_core::audit::canonical::render_line(&r));
    }
    fs::write(&log, bytes).unwrap();
    assert_eq!(
        verify(&log).0,
        0,
        "a plain verify passes a recomputed chain"
    );
    let (c, p) = expect(&log);
    assert_eq!(c, 1);
    let p = p.unwrap();
    assert_eq!(p["kind"], "anchor");
    assert!(p["detail"].as_str().unwrap().contains("rewritten"), "{p}");

    // Bad input: a clear error, exit 64.
    let o = run(with_log(&log, &["verify", "--expect", "6:nothex"]));
    assert_eq!(code(&o), 64);
    assert!(stderr(&o).contains("SEQ:HASH"), "{}", stderr(&o));
}

#[test]
fn a_torn_tail_fails_verify_until_the_next_record_acknowledges_it() {
    let d = tempfile::tempdir().unwrap();
    let log = make_log(d.path(), 3);
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"v\":1,\"seq\":4,\"ts\":\"2025");
    fs::write(&log, &bytes).unwrap();
    assert_problem(&log, "torn_line", 4);
    let o = run(with_log(
        &log,
        &["record", "--caller", "c", "--action", "a", "--json"],
    ));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // `record --json`: the record line, then the summary line.
    let v: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(v["seq"], 5);
    let o = run(with_log(&log, &["verify", "--json"]));
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let out: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out[0]["type"], "warning");
    assert_eq!(out[0]["kind"], "torn_line");
    assert_eq!(out.last().unwrap()["type"], "summary");
    assert_eq!(out.last().unwrap()["last_seq"], 5);
}

#[test]
fn query_filters_and_ends_json_with_a_summary() {
    let d = tempfile::tempdir().unwrap();
    let log = make_log(d.path(), 4);
    let o = run(with_log(
        &log,
        &[
            "record",
            "--caller",
            "boss",
            "--action",
            "kill-session",
            "--target",
            "s1",
        ],
    ));
    assert_eq!(code(&o), 0);
    let o = run(with_log(&log, &["query", "--json", "--target", "%2"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["type"], "record");
    assert_eq!(out[0]["seq"], 2);
    assert_eq!(
        out[1],
        serde_json::json!({"type":"summary","matched":1,"shown":1,"records":5,"skipped_lines":0})
    );
    let o = run(with_log(
        &log,
        &[
            "query", "--caller", "boss", "--since", "1h", "--stage", "intent",
        ],
    ));
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines().nth(1).unwrap().contains("kill-session"),
        "{text}"
    );
    let o = run(with_log(
        &log,
        &["query", "--json", "--until", "2000-01-01T00:00:00Z"],
    ));
    assert!(stdout(&o).contains("\"matched\":0"), "{}", stdout(&o));
}

/// Black-box round 11: a workspace whose `.team` is a symlink to a directory holding a log
/// (anyone's) made `verify` answer "ok" for this workspace, and `query` read it. Readers of
/// the default log refuse such a root, as its writers do.
#[test]
fn verify_and_query_refuse_a_state_root_reached_through_a_symlink() {
    let sb = tests::Sandbox::new();
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let log = elsewhere.join("audit.jsonl");
    let o = sb.run(
        "team-audit",
        &[
            "--log",
            log.to_str().unwrap(),
            "record",
            "--caller",
            "x",
            "--action",
            "kill-pane",
            "--target",
            "%1",
        ],
    );
    tests::assert_code(&o, 0);
    tests::assert_code(
        &sb.run("team-audit", &["--log", log.to_str().unwrap(), "verify"]),
        0,
    );
    std::os::unix::fs::symlink(&elsewhere, sb.ws.join(".team")).unwrap();
    for args in [&["verify"][..], &["query", "--last", "5"][..]] {
        let o = sb.run("team-audit", args);
        tests::assert_code(&o, 65);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("symlink"),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
