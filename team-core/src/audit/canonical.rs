//! The record's canonical bytes, its hash, its line, and parsing a line back.
//!
//! # Canonical bytes
//!
//! The canonical bytes of a record are a compact JSON object (no whitespace anywhere) holding
//! every field except `hash`, in this fixed order:
//!
//! `v, seq, ts, audit_id, stage, caller, caller_pid, action, [op,] argv, endpoint, targets,
//! workspace, team, generation, owner_evidence, reason, outcome, prev`
//!
//! `op` (the operation an action belongs to) was added to format 1 later: it is written only
//! when present, so a record without it has exactly the bytes (and hash) it had before, and
//! old logs still verify. Every other absent optional field is written as `null` (never
//! omitted). Strings use serde_json's
//! escaping (`"`, `\` and control characters escaped, everything else as UTF-8). Objects nested
//! inside `targets` and `owner_evidence` have their keys sorted by their UTF-8 bytes, at every
//! depth, so the bytes do not depend on how a map happened to be ordered in memory.
//!
//! # Hash
//!
//! `hash = hex(SHA-256(prev || canonical))`, where `prev` is the 64 lowercase hex characters of
//! the previous record's `hash` (64 `0`s for the first record) as ASCII bytes, and `canonical`
//! the canonical bytes above (which contain `prev` too, so the chain link is covered twice).
//!
//! # Line
//!
//! A record's line is its canonical bytes with the closing `}` replaced by
//! `,"hash":"<hash>"}`, followed by `\n`. `verify` also checks that a stored line is exactly
//! this rendering, so even whitespace edits are caught (`noncanonical`).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Audit `op` is added to format 1 compatibly**: written (and hashed) only when present,
//!   right after `action`, so records written before it keep their bytes and old logs verify.
//!   Actions are tmux verbs (`kill-pane`), `signal`, or `operation` for the frame of a whole
//!   operation; a worker's teardown intent, which covers its processes and its pane, is
//!   `kill-pane` (`signal` when it has no pane).

use std::io::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Record;

/// The `prev` of the first record of a log.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Writes `v` as compact JSON with object keys sorted at every depth.
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_value(out, &map[k.as_str()]);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::String(s) => write_str(out, s),
        // null, booleans and numbers: serde_json's compact form, as `Value`'s Display.
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// A JSON string with serde_json's escaping (the same bytes as `Value::String`'s Display),
/// written without an intermediate allocation.
fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_opt_str(out: &mut Vec<u8>, s: &Option<String>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// The canonical bytes of `r` (see the module documentation). `r.hash` is ignored.
pub fn canonical_bytes(r: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    let key = |out: &mut Vec<u8>, k: &str, first: bool| {
        if !first {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
    };
    out.push(b'{');
    key(&mut out, "v", true);
    let _ = write!(out, "{}", r.v);
    key(&mut out, "seq", false);
    let _ = write!(out, "{}", r.seq);
    key(&mut out, "ts", false);
    write_str(&mut out, &r.ts);
    key(&mut out, "audit_id", false);
    write_str(
        &mut out,
        r.audit_id
            .hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    );
    key(&mut out, "stage", false);
    write_str(&mut out, r.stage.as_str());
    key(&mut out, "caller", false);
    write_str(&mut out, &r.caller);
    key(&mut out, "caller_pid", false);
    let _ = write!(out, "{}", r.caller_pid);
    key(&mut out, "action", false);
    write_str(&mut out, &r.action);
    if let Some(op) = &r.op {
        key(&mut out, "op", false);
        write_str(&mut out, op);
    }
    key(&mut out, "argv", false);
    out.push(b'[');
    for (i, a) in r.argv.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(&mut out, a);
    }
    out.push(b']');
    key(&mut out, "endpoint", false);
    write_opt_str(&mut out, &r.endpoint);
    key(&mut out, "targets", false);
    out.push(b'[');
    for (i, t) in r.targets.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_value(&mut out, t);
    }
    out.push(b']');
    key(&mut out, "workspace", false);
    write_opt_str(&mut out, &r.workspace);
    key(&mut out, "team", false);
    write_opt_str(&mut out, &r.team);
    key(&mut out, "generation", false);
    match r.generation {
        Some(g) => {
            let _ = write!(out, "{g}");
        }
        None => out.extend_from_slice(b"null"),
    }
    key(&mut out, "owner_evidence", false);
    match &r.owner_evidence {
        Some(v) => write_value(&mut out, v),
        None => out.extend_from_slice(b"null"),
    }
    key(&mut out, "reason", false);
    write_opt_str(&mut out, &r.reason);
    key(&mut out, "outcome", false);
    write_opt_str(&mut out, &r.outcome);
    key(&mut out, "prev", false);
    write_str(&mut out, &r.prev);
    out.push(b'}');
    out
}

/// `hex(SHA-256(prev || canonical))`.
pub fn chain_hash(prev: &str, canonical: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(canonical);
    hex::encode(h.finalize())
}

/// The hash `r` should carry, computed from its content and its `prev`.
pub fn compute_hash(r: &Record) -> String {
    chain_hash(&r.prev, &canonical_bytes(r))
}

/// The full line of `r` (with `r.hash` as stored), ending in `\n`.
pub fn render_line(r: &Record) -> Vec<u8> {
    let mut out = canonical_bytes(r);
    out.pop(); // the closing '}'
    out.extend_from_slice(b",\"hash\":");
    write_str(&mut out, &r.hash);
    out.extend_from_slice(b"}\n");
    out
}

/// Parses one line (without its `\n`) as a record. Never panics, whatever the bytes.
pub fn parse_line(line: &[u8]) -> std::result::Result<Record, String> {
    serde_json::from_slice::<Record>(line).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Stage;
    use proptest::prelude::*;
    use uuid::Uuid;

    fn sample() -> Record {
        Record {
            v: 1,
            seq: 7,
            ts: "2025-01-02T03:04:05.678Z".into(),
            audit_id: Uuid::nil(),
            stage: Stage::Intent,
            caller: "team-reap".into(),
            caller_pid: 42,
            action: "kill-pane".into(),
            op: None,
            argv: vec!["tmux".into(), "kill-pane".into()],
            endpoint: Some("/tmp/s".into()),
            targets: vec![serde_json::json!({"pane_id": "%3", "b": 1, "a": [true, null]})],
            workspace: None,
            team: Some("demo".into()),
            generation: Some(3),
            owner_evidence: None,
            reason: Some("orphan \"x\"\n".into()),
            outcome: None,
            prev: ZERO_HASH.into(),
            hash: String::new(),
        }
    }

    #[test]
    fn canonical_bytes_are_exactly_specified() {
        let r = sample();
        let got = String::from_utf8(canonical_bytes(&r)).unwrap();
        let want = concat!(
            r#"{"v":1,"seq":7,"ts":"2025-01-02T03:04:05.678Z","#,
            r#""audit_id":"00000000-0000-0000-0000-000000000000","stage":"intent","#,
            r#""caller":"team-reap","caller_pid":42,"action":"kill-pane","#,
            r#""argv":["tmux","kill-pane"],"endpoint":"/tmp/s","#,
            r#""targets":[{"a":[true,null],"b":1,"pane_id":"%3"}],"workspace":null,"#,
            r#""team":"demo","generation":3,"owner_evidence":null,"#,
            r#""reason":"orphan \"x\"\n","outcome":null,"#,
            r#""prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
        );
        assert_eq!(got, want);
    }

    /// A record without `op` keeps the bytes above (old logs verify); with it, `op` follows
    /// `action`, is hashed, and survives a round trip.
    #[test]
    fn op_is_hashed_only_when_present() {
        let mut r = sample();
        let without = compute_hash(&r);
        r.op = Some("scale_down".into());
        let got = String::from_utf8(canonical_bytes(&r)).unwrap();
        assert!(
            got.contains(r#""action":"kill-pane","op":"scale_down","argv":"#),
            "{got}"
        );
        assert_ne!(compute_hash(&r), without);
        r.hash = compute_hash(&r);
        let line = render_line(&r);
        assert_eq!(parse_line(&line[..line.len() - 1]).unwrap(), r);
        // A line of the old format (no `op` key) parses with `op: None`, same hash.
        let mut old = sample();
        old.hash = compute_hash(&old);
        let line = render_line(&old);
        assert!(!String::from_utf8_lossy(&line).contains("\"op\""));
        let back = parse_line(&line[..line.len() - 1]).unwrap();
        assert_eq!(back.op, None);
        assert_eq!(compute_hash(&back), without);
    }

    #[test]
    fn hash_covers_prev_and_content() {
        let mut r = sample();
        let h1 = compute_hash(&r);
        assert_eq!(h1.len(), 64);
        // The hash is exactly sha256(prev || canonical).
        let mut h = Sha256::new();
        h.update(ZERO_HASH.as_bytes());
        h.update(canonical_bytes(&r));
        assert_eq!(h1, hex::encode(h.finalize()));
        r.caller = "other".into();
        assert_ne!(compute_hash(&r), h1);
        let mut r2 = sample();
        r2.prev = "1".repeat(64);
        assert_ne!(compute_hash(&r2), h1);
    }

    #[test]
    fn line_round_trips_and_key_order_does_not_matter() {
        let mut r = sample();
        r.hash = compute_hash(&r);
        let line = render_line(&r);
        assert_eq!(line.last(), Some(&b'\n'));
        let back = parse_line(&line[..line.len() - 1]).unwrap();
        assert_eq!(back, r);
        assert_eq!(render_line(&back), line);
        // Same content, keys reordered: same canonical bytes.
        let mut r3 = sample();
        r3.targets = vec![serde_json::json!({"b": 1, "pane_id": "%3", "a": [true, null]})];
        assert_eq!(canonical_bytes(&r3), canonical_bytes(&sample()));
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_line(&bytes);
        }

        #[test]
        fn parsing_mutated_lines_never_panics(pos in 0usize..2000, byte in any::<u8>()) {
            let mut r = sample();
            r.hash = compute_hash(&r);
            let mut line = render_line(&r);
            let i = pos % line.len();
            line[i] = byte;
            if let Ok(back) = parse_line(&line) {
                // Whatever parses either is the same record or no longer hashes the same.
                prop_assert!(back == r || compute_hash(&back) != r.hash || render_line(&back) != render_line(&r));
            }
        }
    }
}
