//! `team-audit pass`: a pipeline filter. Each JSON line of stdin that asks for an action is
//! recorded as an intent, and every line is only then written, byte for byte, to stdout
//! (reports such as owned panes and summaries pass through unrecorded; see `entry_for`).
//!
//! Group commit: a reader thread hands lines over as they arrive; a batch is whatever has
//! arrived by the time the previous batch is durable (no line waits for more input), recorded
//! with one lock and one fdatasync, and released only after that. A line that is not JSON
//! stops the flow (exit 65): the lines before it are recorded and forwarded, it and later ones
//! are not. A batch that cannot be recorded stops the flow (exit 74) with nothing of it
//! forwarded. Blank lines carry nothing to audit: they are forwarded without a record.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`team-audit pass`** group-commits: a batch is whatever arrived while the previous batch was
//!   being made durable, so no line waits for more input, and a line is forwarded only after its
//!   batch's `fdatasync`.
//!
//! - **`team-audit pass` records only lines that ask for an action**: a line with a `verdict` is
//!   recorded only for `orphan` or `debt`; `summary`, `server`, `session` and `error` lines are
//!   never recorded; every line is still forwarded. A pane line is recorded as `kill-pane`, a
//!   process line as `signal`. With `--json` it ends its output with a `summary`.

use std::io::{self, BufRead, Read};
use std::sync::mpsc;

use clap::Args;
use serde_json::Value;
use team_core::ExitClass;
use team_core::audit::{Entry, Stage};

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::out::Out;

/// Longest line accepted (bytes, without the newline).
const MAX_LINE: usize = 1 << 20;
/// Most lines in one group commit.
const MAX_BATCH: usize = 4096;

#[derive(Debug, Args)]
pub struct PassArgs {
    /// The caller written into each record
    #[arg(long, default_value = "pipeline")]
    pub caller: String,
}

enum Msg {
    Line(Vec<u8>),
    TooLong,
    Err(io::Error),
}

fn reader(tx: mpsc::SyncSender<Msg>) {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    loop {
        let mut buf = Vec::new();
        let r = input
            .by_ref()
            .take(MAX_LINE as u64 + 2)
            .read_until(b'\n', &mut buf);
        let msg = match r {
            Ok(0) => return,
            Ok(_) if buf.len() > MAX_LINE + 1 => Msg::TooLong,
            Ok(_) => Msg::Line(buf),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Msg::Err(e),
        };
        let stop = !matches!(msg, Msg::Line(_));
        if tx.send(msg).is_err() || stop {
            return;
        }
    }
}

/// The record for a line that asks for an action, or `None` for one that does not: a
/// `summary`, `server`, `session` or `error` line, or a reaper candidate whose verdict is not
/// `orphan` or `debt` (owned, busy, unverifiable panes are only reported, never acted on).
/// A reaper's pane line is the tmux verb `kill-pane`; a process line is `signal`.
fn entry_for(caller: &str, v: Value) -> Option<Entry> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let ty = s("type");
    if matches!(
        ty.as_deref(),
        Some("summary" | "server" | "session" | "error")
    ) {
        return None;
    }
    if let Some(verdict) = s("verdict")
        && !matches!(verdict.as_str(), "orphan" | "debt")
    {
        return None;
    }
    let verb = match ty.as_deref() {
        Some("pane") => Some("kill-pane".to_string()),
        Some("process") => Some("signal".to_string()),
        _ => None,
    };
    Some(Entry {
        caller: caller.to_string(),
        action: s("action")
            .filter(|_| verb.is_none())
            .or(verb)
            .or_else(|| ty.clone())
            .unwrap_or_else(|| "pipeline".into()),
        endpoint: s("endpoint").or_else(|| s("socket")),
        team: s("team"),
        generation: v.get("generation").and_then(Value::as_u64),
        targets: vec![v],
        ..Entry::default()
    })
}

pub fn run(g: &Global, a: PassArgs) -> Result<i32, AppError> {
    let log = logpath::log_at(g, logpath::resolve(g, None, true)?);
    let (tx, rx) = mpsc::sync_channel::<Msg>(MAX_BATCH);
    std::thread::spawn(move || reader(tx));
    let mut out = Out::new(g.common.json);
    let mut line_no = 0u64;
    let mut recorded = 0u64;
    let mut stop: Option<AppError> = None;
    while stop.is_none() {
        let Ok(first) = rx.recv() else { break };
        let mut msgs = vec![first];
        while msgs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(m) => msgs.push(m),
                Err(_) => break,
            }
        }
        let mut lines: Vec<Vec<u8>> = Vec::with_capacity(msgs.len());
        let mut items = Vec::with_capacity(msgs.len());
        for m in msgs {
            line_no += 1;
            let line = match m {
                Msg::Line(l) => l,
                Msg::TooLong => {
                    stop = Some(AppError::fail(
                        ExitClass::DataErr,
                        format!("line {line_no} is longer than {MAX_LINE} bytes"),
                    ));
                    break;
                }
                Msg::Err(e) => {
                    stop = Some(team_core::Error::io("read", "stdin", e).into());
                    break;
                }
            };
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            if body.iter().all(u8::is_ascii_whitespace) {
                lines.push(line);
                continue;
            }
            match serde_json::from_slice::<Value>(body) {
                Ok(v) => {
                    if let Some(e) = entry_for(&a.caller, v) {
                        items.push((Stage::Intent, None, e));
                        recorded += 1;
                    }
                    lines.push(line);
                }
                Err(e) => {
                    stop = Some(
                        AppError::fail(
                            ExitClass::DataErr,
                            format!("line {line_no} is not JSON: {e}"),
                        )
                        .with_hint("the lines before it were recorded and forwarded; it and the rest were not"),
                    );
                    break;
                }
            }
        }
        if !items.is_empty()
            && let Err(e) = log.append_batch(&items)
        {
            return Err(no_forward(e));
        }
        for l in &lines {
            out.bytes(l)?;
        }
        out.flush()?;
    }
    // With --json, a summary closes the stream (readers such as `team-reap kill --from -`
    // skip summary lines).
    out.record(
        &serde_json::json!({"type": "summary", "lines": line_no, "recorded": recorded,
        "ok": stop.is_none()}),
    )?;
    out.flush()?;
    match stop {
        Some(e) => Err(e),
        None => Ok(0),
    }
}

/// The error for a batch that could not be recorded: nothing of it went out.
fn no_forward(e: team_core::Error) -> AppError {
    AppError::Fail {
        class: ExitClass::IoErr,
        msg: format!("cannot record: {e}"),
        hint: Some("nothing unrecorded was forwarded; the flow stops here".into()),
    }
}
