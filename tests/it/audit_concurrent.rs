//! Concurrent writers: every record lands whole, once, with seq 1..N and an intact chain.

use std::collections::HashSet;
use std::process::Stdio;

use super::audit_common::*;

#[test]
fn concurrent_pass_and_record_processes_keep_one_chain() {
    const PASSES: usize = 8;
    const LINES: usize = 500;
    const RECORDERS: usize = 8;
    const RECORDS: usize = 20;
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("audit.jsonl");

    let mut handles = Vec::new();
    for p in 0..PASSES {
        let log = log.clone();
        handles.push(std::thread::spawn(move || {
            let input: String = (0..LINES)
                .map(|i| format!("{{\"writer\":\"pass-{p}\",\"i\":{i}}}\n"))
                .collect();
            let o = run_with_input(
                with_log(&log, &["pass", "--caller", &format!("pass-{p}")]),
                input.as_bytes(),
            );
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            assert_eq!(o.stdout, input.as_bytes());
        }));
    }
    for r in 0..RECORDERS {
        let log = log.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..RECORDS {
                let o = with_log(
                    &log,
                    &[
                        "record",
                        "--caller",
                        &format!("rec-{r}"),
                        "--action",
                        "kill-pane",
                        "--target",
                        &format!("{r}/{i}"),
                    ],
                )
                .stdin(Stdio::null())
                .output()
                .unwrap();
                assert_eq!(code(&o), 0, "{}", stderr(&o));
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }

    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'));
    let rs = records(&log);
    let n = PASSES * LINES + RECORDERS * RECORDS;
    assert_eq!(rs.len(), n, "records lost or duplicated");
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(
            r["seq"],
            i as u64 + 1,
            "seq gap or reorder at line {}",
            i + 1
        );
    }
    // Each input line recorded exactly once, and each writer's lines in its own order.
    let mut seen = HashSet::new();
    let mut last = [-1i64; PASSES];
    for r in &rs {
        let t = &r["targets"][0];
        if let Some(w) = t["writer"].as_str() {
            let p: usize = w.trim_start_matches("pass-").parse().unwrap();
            let i = t["i"].as_i64().unwrap();
            assert!(i > last[p], "{w} out of order");
            last[p] = i;
        }
        assert!(seen.insert(t.to_string()), "duplicate {t}");
    }
    let pids: HashSet<u64> = rs
        .iter()
        .map(|r| r["caller_pid"].as_u64().unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        PASSES + RECORDERS * RECORDS,
        "one pid per writer process"
    );
    let (c, p) = verify(&log);
    assert_eq!(c, 0, "{p:?}");
}
