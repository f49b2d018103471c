//! Unit tests of the audit log: the chain, torn tails, group commit, concurrent writers.

use std::cell::Cell;
use std::fs;
use std::io::Write;

use proptest::prelude::*;

use super::canonical::{ZERO_HASH, compute_hash, parse_line};
use super::head::{HEAD_WINDOW, read_head};
use super::verify::verify_bytes;
use super::*;

fn entry(n: usize) -> Entry {
    Entry {
        caller: "test".into(),
        action: "kill-pane".into(),
        argv: vec![
            "tmux".into(),
            "kill-pane".into(),
            "-t".into(),
            format!("%{n}"),
        ],
        targets: vec![serde_json::json!({"pane_id": format!("%{n}"), "pane_pid": n})],
        team: Some("demo".into()),
        ..Entry::default()
    }
}

fn log_in(d: &tempfile::TempDir) -> AuditLog {
    AuditLog::new(d.path().join("sub/dir/audit.jsonl"))
}

fn records(path: &Path) -> Vec<Record> {
    read_records(path).unwrap().records
}

#[test]
fn chain_links_and_seq_have_no_gaps() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    let id = log.intent(&entry(1)).unwrap();
    log.outcome(id, true, &entry(1)).unwrap();
    let batch: Vec<_> = (2..5).map(|n| (Stage::Intent, None, entry(n))).collect();
    let got = log.append_batch(&batch).unwrap();
    assert_eq!(got.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
    let rs = records(log.path());
    assert_eq!(rs.len(), 5);
    assert_eq!(rs[0].prev, ZERO_HASH);
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1);
        assert_eq!(r.hash, compute_hash(r));
        assert_eq!(r.caller_pid, std::process::id());
        if i > 0 {
            assert_eq!(r.prev, rs[i - 1].hash);
        }
    }
    assert_eq!(rs[1].audit_id, id);
    assert_eq!(rs[1].stage, Stage::Complete);
    assert_eq!(rs[1].outcome.as_deref(), Some("ok"));
    let rep = verify(log.path()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert_eq!((rep.records, rep.last_seq), (5, 5));
    assert_eq!(rep.head, rs[4].hash);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(log.path().parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

#[test]
fn outcome_needs_an_id_and_segment_is_reserved() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    let e = log.append(Stage::Complete, None, &entry(1)).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    let e = log.append(Stage::Segment, None, &entry(1)).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    assert!(!log.path().exists(), "a refused append created the log");
}

/// The unsynced path takes outcomes naming their intent and nothing else: an intent (which
/// must be durable before its effect) or an outcome without its intent's id is refused, and
/// writes nothing.
#[test]
fn only_outcomes_naming_their_intent_skip_the_sync() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    for (stage, id) in [
        (Stage::Intent, None),
        (Stage::Intent, Some(uuid::Uuid::new_v4())),
        (Stage::Complete, None),
        (Stage::Segment, Some(uuid::Uuid::new_v4())),
    ] {
        let e = log.append_outcomes(&[(stage, id, entry(1))]).unwrap_err();
        assert!(matches!(e, Error::Internal(_)), "{stage:?}: {e}");
    }
    assert!(!log.path().exists(), "a refused append created the log");
    let i = log.append(Stage::Intent, None, &entry(1)).unwrap();
    let out = log
        .append_outcomes(&[
            (Stage::Complete, Some(i.audit_id), entry(2)),
            (Stage::Failed, Some(i.audit_id), entry(3)),
        ])
        .unwrap();
    assert_eq!(out.len(), 2);
    let recs = records(log.path());
    assert_eq!(recs.len(), 3);
    assert_eq!(
        recs[2].prev, recs[1].hash,
        "the outcomes continue the chain"
    );
    assert!(verify(log.path()).unwrap().ok());
}

#[test]
fn head_is_read_from_the_end_past_a_large_prefix() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    // Records large enough that the log is many windows long.
    let mut big = entry(0);
    big.reason = Some("x".repeat(20_000));
    for _ in 0..10 {
        log.append(Stage::Intent, None, &big).unwrap();
    }
    let f = fs::File::open(log.path()).unwrap();
    let size = f.metadata().unwrap().len();
    assert!(size > 3 * HEAD_WINDOW);
    let head = read_head(&f, size).unwrap();
    let rs = records(log.path());
    assert_eq!(head.seq, 10);
    assert_eq!(head.hash, rs[9].hash);
    assert_eq!(head.damage, None);
    // A record longer than the first window: the window grows until it holds one.
    big.reason = Some("y".repeat(3 * HEAD_WINDOW as usize));
    log.append(Stage::Intent, None, &big).unwrap();
    log.append(Stage::Intent, None, &big).unwrap();
    let f = fs::File::open(log.path()).unwrap();
    let head = read_head(&f, f.metadata().unwrap().len()).unwrap();
    assert_eq!(head.seq, 12);
    assert!(verify(log.path()).unwrap().ok());
}

#[test]
fn torn_tail_fails_verify_until_a_segment_acknowledges_it() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    for n in 0..3 {
        log.intent(&entry(n)).unwrap();
    }
    let good_len = fs::metadata(log.path()).unwrap().len();
    // A crashed writer's partial line.
    fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .unwrap()
        .write_all(br#"{"v":1,"seq":4,"ts":"20"#)
        .unwrap();
    let rep = verify(log.path()).unwrap();
    let p = rep.problem.expect("torn tail not reported");
    assert_eq!(
        (p.kind, p.seq, p.offset),
        (ProblemKind::TornLine, 4, good_len)
    );

    let r = log.append(Stage::Intent, None, &entry(9)).unwrap();
    assert_eq!(r.seq, 5, "the segment record takes seq 4");
    let rs = records(log.path());
    let seg = &rs[3];
    assert_eq!(seg.stage, Stage::Segment);
    assert_eq!(seg.seq, 4);
    assert_eq!(seg.prev, rs[2].hash, "the chain runs on across the damage");
    assert_eq!(seg.segment_damage(), Some((good_len, 23)));
    let rep = verify(log.path()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.warnings.len(), 1);
    assert_eq!(rep.warnings[0].kind, ProblemKind::TornLine);
    assert_eq!(rep.last_seq, 5);

    // Removing the damaged bytes afterwards breaks the acknowledgement.
    let bytes = fs::read(log.path()).unwrap();
    let mut cut = bytes[..good_len as usize].to_vec();
    cut.extend_from_slice(&bytes[good_len as usize + 24..]);
    let p = verify_bytes(&cut)
        .problem
        .expect("bad segment not reported");
    assert_eq!((p.kind, p.seq), (ProblemKind::BadSegment, 4));
}

#[test]
fn garbage_whole_lines_and_a_garbage_only_file_are_damage_too() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    log.intent(&entry(1)).unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .unwrap()
        .write_all(b"not json\n{\"also\": 1}\n")
        .unwrap();
    let p = verify(log.path()).unwrap().problem.unwrap();
    assert_eq!((p.kind, p.seq, p.line), (ProblemKind::TornLine, 2, 2));
    log.intent(&entry(2)).unwrap();
    let rep = verify(log.path()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.last_seq, 3);

    let log2 = AuditLog::new(d.path().join("garbage.jsonl"));
    fs::write(log2.path(), b"\x00\x01garbage").unwrap();
    let r = log2.intent(&entry(1)).unwrap();
    let rs = records(log2.path());
    assert_eq!(rs.len(), 2);
    assert_eq!(rs[0].segment_damage(), Some((0, 9)));
    assert_eq!(rs[0].prev, ZERO_HASH);
    assert_eq!(rs[1].audit_id, r);
    assert!(verify(log2.path()).unwrap().ok());
}

#[test]
fn tampering_is_found_at_the_right_seq() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    for n in 0..6 {
        log.intent(&entry(n)).unwrap();
    }
    let bytes = fs::read(log.path()).unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let join = |ls: &[&[u8]]| ls.concat();
    let check = |b: &[u8], kind, seq| {
        let p = verify_bytes(b).problem.expect("tampering not found");
        assert_eq!((p.kind, p.seq), (kind, seq), "{p:?}");
    };
    // Edited field.
    let edited = String::from_utf8(lines[2].to_vec())
        .unwrap()
        .replace("\"demo\"", "\"evil\"");
    let mut ls = lines.clone();
    ls[2] = edited.as_bytes();
    check(&join(&ls), ProblemKind::EditedField, 3);
    // Deleted line.
    let mut ls = lines.clone();
    ls.remove(3);
    check(&join(&ls), ProblemKind::Gap, 4);
    // Swapped lines.
    let mut ls = lines.clone();
    ls.swap(1, 4);
    check(&join(&ls), ProblemKind::Reorder, 2);
    // Duplicated line.
    let mut ls = lines.clone();
    ls.push(lines[5]);
    check(&join(&ls), ProblemKind::Reorder, 7);
    // Whitespace edit.
    let spaced = String::from_utf8(lines[1].to_vec())
        .unwrap()
        .replacen(',', ", ", 1);
    let mut ls = lines.clone();
    ls[1] = spaced.as_bytes();
    check(&join(&ls), ProblemKind::Noncanonical, 2);
    // Forged record with a recomputed hash but a wrong prev.
    let mut forged = parse_line(lines[5].strip_suffix(b"\n").unwrap()).unwrap();
    forged.seq = 7;
    forged.prev = "ab".repeat(32);
    forged.hash = compute_hash(&forged);
    let fl = canonical::render_line(&forged);
    let mut ls = lines.clone();
    ls.push(&fl);
    check(&join(&ls), ProblemKind::BadPrev, 7);
}

#[test]
fn guarded_runs_the_effect_only_after_a_durable_intent() {
    let d = tempfile::tempdir().unwrap();
    // A log whose parent is a file cannot be created.
    fs::write(d.path().join("file"), b"").unwrap();
    let bad = AuditLog::new(d.path().join("file/audit.jsonl"));
    let ran = Cell::new(false);
    let r = guarded(&bad, &entry(1), || {
        ran.set(true);
        Ok(())
    });
    assert!(matches!(r, Err(Error::Audit { .. })), "{r:?}");
    assert!(!ran.get(), "the effect ran without a durable intent");

    let good = log_in(&d);
    let v = guarded(&good, &entry(1), || Ok(7)).unwrap();
    assert_eq!(v, 7);
    let e = guarded(&good, &entry(2), || -> Result<()> {
        Err(Error::Refused("no".into()))
    })
    .unwrap_err();
    assert!(matches!(e, Error::Refused(_)));
    let rs = records(good.path());
    let stages: Vec<_> = rs.iter().map(|r| r.stage).collect();
    assert_eq!(
        stages,
        [Stage::Intent, Stage::Complete, Stage::Intent, Stage::Failed]
    );
    assert_eq!(rs[0].audit_id, rs[1].audit_id);
    assert_eq!(rs[3].outcome.as_deref(), Some("no"));
}

#[test]
fn filter_matches_fields_and_targets() {
    let d = tempfile::tempdir().unwrap();
    let log = log_in(&d);
    log.intent(&entry(3)).unwrap();
    let mut other = entry(4);
    other.team = Some("other".into());
    other.targets = vec!["plain".into()];
    log.intent(&other).unwrap();
    let rs = records(log.path());
    let count = |f: &Filter| rs.iter().filter(|r| f.matches(r)).count();
    assert_eq!(count(&Filter::default()), 2);
    let f = Filter {
        target: Some("%3".into()),
        ..Filter::default()
    };
    assert_eq!(count(&f), 1);
    let f = Filter {
        target: Some("plain".into()),
        team: Some("other".into()),
        ..Filter::default()
    };
    assert_eq!(count(&f), 1);
    let f = Filter {
        stage: Some(Stage::Complete),
        ..Filter::default()
    };
    assert_eq!(count(&f), 0);
    let f = Filter {
        until: Some(std::time::SystemTime::UNIX_EPOCH),
        ..Filter::default()
    };
    assert_eq!(count(&f), 0);
    let f = Filter {
        since: Some(std::time::SystemTime::UNIX_EPOCH),
        ..Filter::default()
    };
    assert_eq!(count(&f), 2);
}

fn arb_entry() -> impl Strategy<Value = Entry> {
    (
        "\\PC{0,20}",
        ".{0,20}",
        proptest::collection::vec(any::<String>(), 0..4),
        proptest::option::of(any::<String>()),
        proptest::collection::vec(any::<String>(), 0..3),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<String>()),
    )
        .prop_map(
            |(caller, action, argv, team, ts, generation, reason)| Entry {
                caller,
                action,
                argv,
                targets: ts
                    .into_iter()
                    .map(|t| serde_json::json!({ t.clone(): t, "n": 1.5, "z": [null] }))
                    .collect(),
                team,
                generation,
                reason,
                owner_evidence: Some(serde_json::json!({"b": "\u{0}\u{7f}", "a": -1})),
                ..Entry::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn every_appended_record_verifies(entries in proptest::collection::vec(arb_entry(), 1..6)) {
        let d = tempfile::tempdir().unwrap();
        let log = log_in(&d);
        let (first, rest) = entries.split_first().unwrap();
        log.intent(first).unwrap();
        let batch: Vec<_> = rest.iter().map(|e| (Stage::Intent, None, e.clone())).collect();
        log.append_batch(&batch).unwrap();
        let rep = verify(log.path()).unwrap();
        prop_assert!(rep.ok(), "{:?}", rep.problem);
        prop_assert_eq!(rep.last_seq, entries.len() as u64);
        let rs = records(log.path());
        for (r, e) in rs.iter().zip(&entries) {
            prop_assert_eq!(&r.caller, &e.caller);
            prop_assert_eq!(&r.argv, &e.argv);
            prop_assert_eq!(&r.reason, &e.reason);
        }
    }

    #[test]
    fn verify_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = verify_bytes(&bytes);
    }
}

/// Attack (black-box round 9): the default log is a state root's own file, so swapping
/// `.team` for a symlink (to a directory holding an `audit.jsonl` of the attacker's or a
/// victim's) between two writes must not send a record there, nor rotate or create a file
/// there. A log the user placed elsewhere keeps the user's choice of directory.
#[test]
fn a_state_roots_own_log_is_never_written_through_a_symlinked_root() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    let root = ws.join(".team");
    fs::create_dir(&ws).unwrap();
    crate::fsutil::state_create_dir(&root, &root).unwrap();
    let log = AuditLog::new(root.join("audit.jsonl"))
        .within(&root)
        .with_max_size(2048);
    log.intent(&entry(1)).unwrap();
    let victim = d.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("audit.jsonl"), b"VICTIM\n").unwrap();
    fs::rename(&root, ws.join(".team-real")).unwrap();
    for target in [victim.clone(), std::path::PathBuf::from("../victim")] {
        std::os::unix::fs::symlink(&target, &root).unwrap();
        for n in 0..20 {
            let e = log.intent(&entry(n)).unwrap_err();
            assert_eq!(e.class().code(), 65, "{e}");
        }
        fs::remove_file(&root).unwrap();
    }
    assert_eq!(fs::read(victim.join("audit.jsonl")).unwrap(), b"VICTIM\n");
    assert_eq!(
        fs::read_dir(&victim).unwrap().count(),
        1,
        "nothing created there"
    );
    // Back in place, the log goes on (and rotates in its own directory).
    fs::rename(ws.join(".team-real"), &root).unwrap();
    for n in 0..20 {
        log.intent(&entry(n)).unwrap();
    }
    assert!(
        fs::read_dir(&root).unwrap().count() > 2,
        "segments next to the log"
    );
    // A log elsewhere: its directory may be a symlink (the user's choice).
    let real = d.path().join("logs-real");
    fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, d.path().join("logs")).unwrap();
    AuditLog::new(d.path().join("logs/audit.jsonl"))
        .within(&root)
        .intent(&entry(1))
        .unwrap();
    assert!(real.join("audit.jsonl").exists());
}
