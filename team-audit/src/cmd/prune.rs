//! `team-audit prune`: remove old segments, only after a checkpoint of them is durable.

use clap::Args;
use serde_json::json;
use team_core::ExitClass;
use team_core::audit::{self, Retention};

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::out::Out;

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("rule").required(true).args(["keep", "before"]))]
pub struct PruneArgs {
    /// Keep the newest N segments (the active file is always kept)
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Remove segments whose last record is older than T: RFC 3339, or a duration ago (30d)
    #[arg(long, value_name = "T")]
    pub before: Option<String>,
    /// The caller written into the checkpoint record
    #[arg(long, default_value = "team-audit prune")]
    pub caller: String,
}

pub fn run(g: &Global, a: PruneArgs) -> Result<i32, AppError> {
    let rule = match (a.keep, a.before.as_deref()) {
        (Some(n), None) => Retention::Keep(n),
        (None, Some(t)) => Retention::Before(crate::cmd::query::time_arg("--before", t)?),
        _ => return Err(AppError::usage("give one of --keep N or --before T")),
    };
    let path = logpath::resolve(g, None, false)?;
    let log = logpath::log_at(g, path.clone());
    let rep = audit::prune(&log, rule, &a.caller).map_err(|e| match e {
        team_core::Error::Refused(m) => AppError::fail(ExitClass::Refused, m)
            .with_hint("run `team-audit verify` to see what is wrong"),
        other => other.into(),
    })?;
    let json_mode = g.common.json;
    let mut out = Out::new(json_mode);
    for r in &rep.removed {
        if json_mode {
            let mut v = serde_json::to_value(r)
                .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))?;
            v["type"] = json!("removed");
            out.json(&v)?;
        } else {
            out.line(&format!(
                "removed {} (seq {}..{}, {} bytes, sha256 {})",
                r.segment, r.first_seq, r.last_seq, r.bytes, r.sha256
            ))?;
        }
    }
    if json_mode {
        out.json(&json!({
            "type": "summary",
            "log": path.display().to_string(),
            "removed": rep.removed.len(),
            "kept": rep.kept,
            "checkpoint_seq": rep.checkpoint_seq,
            "first_seq": rep.first_seq,
        }))?;
    } else {
        match rep.checkpoint_seq {
            Some(cp) => out.line(&format!(
                "ok: {} segment(s) removed, {} kept; checkpoint seq {cp}; the log starts at seq {}",
                rep.removed.len(),
                rep.kept,
                rep.first_seq
            ))?,
            None => out.line(&format!(
                "ok: nothing to remove, {} segment(s) kept",
                rep.kept
            ))?,
        }
    }
    out.flush()?;
    Ok(0)
}
