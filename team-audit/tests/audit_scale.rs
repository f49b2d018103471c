//! The audit log at scale (issue 15): a relative log path, rotation into segments, verify over
//! every segment, prune with a checkpoint, and streaming query equal to the whole-file reading.

mod common;

use common::*;

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
}
