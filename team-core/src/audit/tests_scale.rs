//! Rotation, verify across segments, prune, and streaming query against the whole-file
//! reading it replaced.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;

use super::canonical::{compute_hash, parse_line, render_line};
use super::segments::{list, segment_path};
use super::*;

fn entry(n: usize, team: &str) -> Entry {
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
        team: Some(team.into()),
        ..Entry::default()
    }
}

/// A log rotating at 4 KiB with `n` records appended one by one.
fn rotated(d: &tempfile::TempDir, n: usize) -> AuditLog {
    let log = AuditLog::new(d.path().join("audit.jsonl")).with_max_size(4096);
    for i in 0..n {
        log.intent(&entry(i, if i % 3 == 0 { "a" } else { "b" }))
            .unwrap();
    }
    log
}

fn lines_of(p: &Path) -> Vec<Record> {
    fs::read(p)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| parse_line(l).unwrap())
        .collect()
}

fn problem(log: &AuditLog) -> Problem {
    verify(log.path())
        .unwrap()
        .problem
        .expect("verify found nothing")
}

#[test]
fn rotation_carries_the_chain_and_verify_walks_every_segment() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    let segs = list(log.path()).unwrap();
    assert!(segs.len() >= 3, "only {} segments", segs.len());
    for (i, s) in segs.iter().enumerate() {
        assert_eq!(s.number, i as u64 + 1);
        assert!(fs::metadata(&s.path).unwrap().len() <= 4096 + 1024);
        let rs = lines_of(&s.path);
        assert_eq!(rs.last().unwrap().segment_end(), Some(s.number));
        if i > 0 {
            let prev = lines_of(&segs[i - 1].path);
            let last = prev.last().unwrap();
            // Recorded in both: the new segment's first record names the old one's head.
            assert_eq!(
                rs[0].segment_start(),
                Some((s.number - 1, last.seq, last.hash.as_str()))
            );
            assert_eq!(rs[0].prev, last.hash);
            assert_eq!(rs[0].seq, last.seq + 1);
        }
    }
    let rep = verify(log.path()).unwrap();
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.segments, segs.len() as u64);
    assert_eq!(rep.first_seq, 1);
    // Every caller record is there once, in order, across the segments.
    let mut seen = Vec::new();
    query(log.path(), &Filter::default(), None, |r| {
        if r.stage == Stage::Intent {
            seen.push(r.targets[0]["pane_pid"].as_u64().unwrap());
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, (0..60).collect::<Vec<u64>>());
}

#[test]
fn verify_catches_a_dropped_segment() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    fs::remove_file(segment_path(log.path(), 2)).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::MissingSegment, "{p:?}");
    assert!(p.detail.contains("segment 000002 is missing"), "{p:?}");
}

#[test]
fn verify_catches_the_oldest_segment_dropped_without_a_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    fs::remove_file(segment_path(log.path(), 1)).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::MissingSegment, "{p:?}");
    assert!(p.detail.contains("no checkpoint"), "{p:?}");
}

#[test]
fn verify_catches_a_reordered_segment() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    let (s2, s3) = (segment_path(log.path(), 2), segment_path(log.path(), 3));
    let tmp = d.path().join("x");
    fs::rename(&s2, &tmp).unwrap();
    fs::rename(&s3, &s2).unwrap();
    fs::rename(&tmp, &s3).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::Reorder, "{p:?}");
    assert!(p.file.ends_with(".000002"), "{p:?}");
}

#[test]
fn verify_catches_a_truncated_segment() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    let s2 = segment_path(log.path(), 2);
    let bytes = fs::read(&s2).unwrap();
    // Drop the last whole line (its segment_end): every line left is intact.
    let cut = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    fs::write(&s2, &bytes[..cut]).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::TruncatedSegment, "{p:?}");
    // Cut in the middle of a line: a torn segment.
    fs::write(&s2, &bytes[..cut - 10]).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::TornLine, "{p:?}");
    assert!(p.file.ends_with(".000002"), "{p:?}");
}

#[test]
fn verify_catches_an_edited_record_in_an_old_segment() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    let s1 = segment_path(log.path(), 1);
    let text = fs::read_to_string(&s1).unwrap();
    let edited = text.replacen("\"pane_pid\":1}", "\"pane_pid\":7}", 1);
    assert_ne!(edited, text);
    fs::write(&s1, edited).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::EditedField, "{p:?}");
    assert_eq!(p.seq, 2);
    assert!(p.file.ends_with(".000001"), "{p:?}");
}

fn sha(p: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(fs::read(p).unwrap()))
}

#[test]
fn prune_records_a_checkpoint_first_and_verify_stays_green() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 80);
    let segs = list(log.path()).unwrap();
    let n = segs.len();
    assert!(n >= 4);
    let shas: Vec<String> = segs[..n - 2].iter().map(|s| sha(&s.path)).collect();
    let last_removed = lines_of(&segs[n - 3].path).pop().unwrap();
    let rep = prune(&log, Retention::Keep(2), "tester").unwrap();
    assert_eq!(rep.removed.len(), n - 2);
    assert_eq!(rep.kept, 2);
    // Two kept, plus one more if the checkpoint itself rotated the active file.
    let left = list(log.path()).unwrap();
    assert_eq!(left[0].number, segs[n - 2].number);
    for (r, want) in rep.removed.iter().zip(&shas) {
        assert_eq!(&r.sha256, want);
        assert!(!segment_path(log.path(), r.number).exists());
    }
    assert_eq!(rep.first_seq, last_removed.seq + 1);
    // The checkpoint is after every removed record and names the last removed head.
    let mut cps = Vec::new();
    query(
        log.path(),
        &Filter {
            action: Some(CHECKPOINT_ACTION.into()),
            ..Filter::default()
        },
        None,
        |r| {
            cps.push(r.clone());
            Ok(())
        },
    )
    .unwrap();
    let cp = cps.pop().expect("no checkpoint");
    assert_eq!(Some(cp.seq), rep.checkpoint_seq);
    assert!(
        cp.checkpoint_covers()
            .contains(&(last_removed.seq, last_removed.hash.as_str()))
    );
    let v = verify(log.path()).unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.first_seq, last_removed.seq + 1);
    assert_eq!(v.checkpoint_seq, Some(cp.seq));
    // Writing goes on, and a second prune (of everything) keeps it green too.
    for i in 0..30 {
        log.intent(&entry(100 + i, "c")).unwrap();
    }
    let before = list(log.path()).unwrap();
    let rep = prune(&log, Retention::Keep(0), "tester").unwrap();
    assert_eq!(rep.removed.len(), before.len());
    // At most the segment the checkpoint's own append rotated out is left.
    assert!(list(log.path()).unwrap().len() <= 1);
    let v = verify(log.path()).unwrap();
    assert!(v.ok(), "{v:?}");
    // Without its checkpoint the start is unaccounted for: drop the checkpoint records
    // (re-chaining everything after them, as a forger would).
    let v = verify(log.path()).unwrap();
    assert!(v.first_seq > 1);
    let mut prev = String::new();
    let mut out = Vec::new();
    let mut seq = 0;
    for mut r in lines_of(log.path()) {
        if r.action == CHECKPOINT_ACTION {
            continue;
        }
        if prev.is_empty() {
            seq = r.seq;
        } else {
            r.prev = prev.clone();
            r.seq = seq;
        }
        r.hash = compute_hash(&r);
        prev = r.hash.clone();
        seq += 1;
        out.extend_from_slice(&render_line(&r));
    }
    fs::write(log.path(), out).unwrap();
    let p = problem(&log);
    assert_eq!(p.kind, ProblemKind::MissingSegment, "{p:?}");
}

#[test]
fn prune_before_a_time_and_refusal_on_a_broken_log() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 60);
    let n = list(log.path()).unwrap().len();
    let none = prune(
        &log,
        Retention::Before(SystemTime::now() - Duration::from_secs(3600)),
        "t",
    )
    .unwrap();
    assert!(none.removed.is_empty() && none.checkpoint_seq.is_none());
    let all = prune(
        &log,
        Retention::Before(SystemTime::now() + Duration::from_secs(5)),
        "t",
    )
    .unwrap();
    assert_eq!(all.removed.len(), n);
    assert!(verify(log.path()).unwrap().ok());
    // Broken: nothing is removed.
    let d2 = tempfile::tempdir().unwrap();
    let log = rotated(&d2, 60);
    let s2 = segment_path(log.path(), 2);
    let text = fs::read_to_string(&s2).unwrap();
    fs::write(&s2, text.replacen("kill-pane", "kill-pain", 1)).unwrap();
    let before = list(log.path()).unwrap();
    let e = prune(&log, Retention::Keep(0), "t").unwrap_err();
    assert!(matches!(e, Error::Refused(_)), "{e}");
    assert_eq!(list(log.path()).unwrap(), before);
}

#[test]
fn an_interrupted_rotation_is_completed_by_the_next_writer() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 20);
    let segs = list(log.path()).unwrap();
    // The state a crash between the segment_end and the rename leaves: the newest segment is
    // still the active file.
    for s in &segs[1..] {
        fs::remove_file(&s.path).unwrap();
    }
    fs::rename(&segs[0].path, log.path()).unwrap();
    assert_eq!(lines_of(log.path()).last().unwrap().segment_end(), Some(1));
    log.intent(&entry(999, "z")).unwrap();
    assert_eq!(list(log.path()).unwrap().len(), 1);
    let rs = lines_of(log.path());
    assert_eq!(rs.len(), 2);
    assert!(rs[0].segment_start().is_some());
    assert!(verify(log.path()).unwrap().ok());
}

#[test]
fn a_record_longer_than_the_line_limit_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let log = AuditLog::new(d.path().join("a.jsonl"));
    let mut e = entry(1, "a");
    e.reason = Some("x".repeat(MAX_LINE));
    assert!(matches!(log.intent(&e), Err(Error::Usage(_))));
    assert!(!log.path().exists() || fs::read(log.path()).unwrap().is_empty());
}

// ---- streaming query == the whole-file reading it replaced --------------------------------

/// The old `read_records` + filter: every file read whole, every line parsed.
fn whole_file_query(path: &Path, f: &Filter) -> Vec<Record> {
    let mut files: Vec<PathBuf> = list(path).unwrap().into_iter().map(|s| s.path).collect();
    files.push(path.to_path_buf());
    let mut out = Vec::new();
    for p in files {
        let Ok(bytes) = fs::read(&p) else { continue };
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (line, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            if let Ok(r) = parse_line(line)
                && f.matches(&r)
            {
                out.push(r);
            }
            rest = next;
        }
    }
    out
}

/// A log with chosen times (a second apart, from `t0`), teams, actions and stages, some
/// garbage lines, split into segment files of `per` lines.
fn write_log(dir: &Path, spec: &[(u8, u8, u8, bool)], per: usize) -> (PathBuf, SystemTime) {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut prev = ZERO_HASH.to_string();
    for (i, (team, action, stage, garbage)) in spec.iter().enumerate() {
        if *garbage {
            lines.push(b"{\"v\":1,\"not\":\"a record\"}".to_vec());
        }
        let mut r = Record::build(
            i as u64 + 1,
            [Stage::Intent, Stage::Complete, Stage::Failed][*stage as usize % 3],
            uuid::Uuid::new_v4(),
            &Entry {
                caller: "p".into(),
                action: ["kill-pane", "kill-session", "respawn"][*action as usize % 3].into(),
                team: (*team % 4 != 0).then(|| format!("t{}", team % 4)),
                targets: vec![serde_json::json!({"team": "t1", "pane_id": format!("%{i}")})],
                ..Entry::default()
            },
            prev.clone(),
        );
        r.ts = humantime::format_rfc3339_millis(t0 + Duration::from_secs(i as u64)).to_string();
        r.hash = compute_hash(&r);
        prev = r.hash.clone();
        lines.push(render_line(&r).strip_suffix(b"\n").unwrap().to_vec());
    }
    let path = dir.join("q.jsonl");
    let chunks: Vec<_> = lines.chunks(per.max(1)).collect();
    for (k, c) in chunks.iter().enumerate() {
        let p = if k + 1 == chunks.len() {
            path.clone()
        } else {
            segment_path(&path, k as u64 + 1)
        };
        let mut bytes = c.join(&b"\n"[..]);
        bytes.push(b'\n');
        fs::write(p, bytes).unwrap();
    }
    if chunks.is_empty() {
        fs::write(&path, b"").unwrap();
    }
    (path, t0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn streaming_query_equals_the_whole_file_reading(
        spec in proptest::collection::vec((0u8..8, 0u8..3, 0u8..3, proptest::bool::weighted(0.1)), 0..80),
        per in 1usize..40,
        team in proptest::option::of(0u8..4),
        action in proptest::option::of(0u8..3),
        stage in proptest::option::of(0u8..3),
        since in proptest::option::of(0u64..90),
        until in proptest::option::of(0u64..90),
        last in proptest::option::of(0usize..30),
    ) {
        let d = tempfile::tempdir().unwrap();
        let (path, t0) = write_log(d.path(), &spec, per);
        let f = Filter {
            team: team.map(|t| format!("t{t}")),
            action: action.map(|a| ["kill-pane", "kill-session", "respawn"][a as usize].into()),
            stage: stage.map(|s| [Stage::Intent, Stage::Complete, Stage::Failed][s as usize]),
            since: since.map(|s| t0 + Duration::from_secs(s)),
            until: until.map(|s| t0 + Duration::from_secs(s)),
            ..Filter::default()
        };
        let mut want = whole_file_query(&path, &f);
        if let Some(n) = last {
            want.drain(..want.len().saturating_sub(n));
        }
        let mut got = Vec::new();
        let st = query(&path, &f, last, |r| { got.push(r.clone()); Ok(()) }).unwrap();
        prop_assert_eq!(st.matched, got.len() as u64);
        prop_assert_eq!(got, want);
    }
}

/// The parallel walk (files of 4 MiB and more) finds exactly what the sequential one does.
#[test]
fn parallel_and_sequential_walks_agree_on_a_large_log() {
    let d = tempfile::tempdir().unwrap();
    let log = AuditLog::new(d.path().join("big.jsonl")).with_max_size(0);
    let batch: Vec<_> = (0..2000)
        .map(|i| {
            let mut e = entry(i, "t");
            e.reason = Some("r".repeat(1000));
            (Stage::Intent, None, e)
        })
        .collect();
    for _ in 0..3 {
        log.append_batch(&batch).unwrap();
    }
    assert!(fs::metadata(log.path()).unwrap().len() >= 4 << 20);
    let both = || {
        let a = verify(log.path()).unwrap();
        let b = super::verify::verify_sequential(log.path()).unwrap();
        assert_eq!(a, b);
        a
    };
    let ok = both();
    assert!(ok.ok() && ok.records == 6000, "{ok:?}");
    let text = fs::read_to_string(log.path()).unwrap();
    // An edit deep in the file, a dropped line, a swapped pair, a torn tail.
    let lines: Vec<&str> = text.lines().collect();
    let edit = text.replacen("\"pane_pid\":1500}", "\"pane_pid\":1501}", 1);
    let mut dropped = lines.clone();
    dropped.remove(4321);
    let mut swapped = lines.clone();
    swapped.swap(3000, 3001);
    let torn = &text[..text.len() - 10];
    for (bytes, kind) in [
        (edit, ProblemKind::EditedField),
        (dropped.join("\n") + "\n", ProblemKind::Gap),
        (swapped.join("\n") + "\n", ProblemKind::Reorder),
        (torn.to_string(), ProblemKind::TornLine),
    ] {
        fs::write(log.path(), bytes).unwrap();
        let r = both();
        assert_eq!(r.problem.as_ref().map(|p| p.kind), Some(kind), "{r:?}");
    }
}

/// Black-box round 10: an active file that started without continuing the newest segment
/// (its writer listed the segments through a `.team` swapped for a symlink, and saw none)
/// numbered itself segment 1 at its rotation, found segment 1 there, and every later writer
/// failed (exit 74) for good. The log must go on, and `verify` still reports the break.
#[test]
fn an_active_file_that_lost_its_chain_never_blocks_the_next_rotation() {
    let d = tempfile::tempdir().unwrap();
    let log = rotated(&d, 40);
    let segs = segments::list(log.path()).unwrap();
    assert!(!segs.is_empty(), "rotated at least once");
    // The writer that saw no segment: they are out of sight while the active file starts.
    let aside = d.path().join("aside");
    fs::create_dir(&aside).unwrap();
    fs::remove_file(log.path()).unwrap();
    for s in &segs {
        fs::rename(&s.path, aside.join(s.path.file_name().unwrap())).unwrap();
    }
    log.intent(&entry(1000, "a")).unwrap();
    for s in &segs {
        fs::rename(aside.join(s.path.file_name().unwrap()), &s.path).unwrap();
    }
    for i in 0..80 {
        log.intent(&entry(2000 + i, "a")).unwrap();
    }
    let after = segments::list(log.path()).unwrap();
    assert!(
        after.len() > segs.len(),
        "it rotated past the segments that were there"
    );
    assert!(
        !verify(log.path()).unwrap().ok(),
        "the lost chain is still reported"
    );
}
