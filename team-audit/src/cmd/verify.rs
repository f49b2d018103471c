//! `team-audit verify`: walk the chain; exit 1 at the first problem.

use clap::Args;
use serde_json::json;
use team_core::ExitClass;
use team_core::audit::{self, Problem};

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::out::Out;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// An anchor saved from an earlier run (`SEQ:HASH`, as `verify` prints its last seq and
    /// head): the log must still hold that record with that hash. The chain alone cannot show
    /// records cut from its end, or a whole chain rewritten by someone who can write the file;
    /// an anchor kept where the log's writers cannot change it can. Repeatable.
    #[arg(long, value_name = "SEQ:HASH")]
    pub expect: Vec<String>,
}

/// An anchor: a record's `seq` and `hash`.
fn parse_anchor(s: &str) -> Result<(u64, String), AppError> {
    let bad = || {
        AppError::usage(format!(
            "--expect {s:?} is not SEQ:HASH (a record number and its 64-hex-digit hash, as \
             `team-audit verify` prints them)"
        ))
    };
    let (seq, hash) = s.trim().split_once(':').ok_or_else(bad)?;
    let seq: u64 = seq.parse().map_err(|_| bad())?;
    let hash = hash.to_ascii_lowercase();
    if seq == 0 || hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    Ok((seq, hash))
}

/// Why `anchor` does not hold in the log at `path` (whose walk ended at `last_seq`), if it
/// does not. The record is read back from the end of the log.
fn anchor_broken(
    path: &std::path::Path,
    rep: &audit::VerifyReport,
    (seq, hash): &(u64, String),
) -> Result<Option<String>, AppError> {
    if *seq > rep.last_seq {
        return Ok(Some(format!(
            "the log ends at seq {}, before the anchored seq {seq}: records were cut from its end",
            rep.last_seq
        )));
    }
    if *seq < rep.first_seq {
        return Ok(Some(format!(
            "the anchored seq {seq} is before the first record kept (seq {}): it was pruned, \
             or the log was replaced; save a newer anchor after a prune",
            rep.first_seq
        )));
    }
    let back = usize::try_from(rep.last_seq - seq + 1).unwrap_or(usize::MAX);
    let mut found: Option<String> = None;
    audit::query(path, &audit::Filter::default(), Some(back), |r| {
        if r.seq == *seq && found.is_none() {
            found = Some(r.hash.clone());
        }
        Ok(())
    })?;
    Ok(match found {
        Some(h) if h == *hash => None,
        Some(h) => Some(format!(
            "seq {seq} has hash {h}, not the anchored {hash}: the chain was rewritten from there \
             on (or earlier)"
        )),
        None => Some(format!("no record with seq {seq} is left in the log")),
    })
}

fn human(p: &Problem) -> String {
    let file = if p.file.is_empty() {
        String::new()
    } else {
        format!(" in {}", p.file)
    };
    if p.line == 0 && p.file.is_empty() {
        return format!("seq {} ({}): {}", p.seq, p.kind.as_str(), p.detail);
    }
    format!(
        "seq {} ({}){file} at line {}, offset {}: {}",
        p.seq,
        p.kind.as_str(),
        p.line,
        p.offset,
        p.detail
    )
}

pub fn run(g: &Global, a: VerifyArgs) -> Result<i32, AppError> {
    let anchors = a
        .expect
        .iter()
        .map(|s| parse_anchor(s))
        .collect::<Result<Vec<_>, _>>()?;
    let path = logpath::resolve(g, None, false)?;
    let mut rep = audit::verify(&path)?;
    if rep.problem.is_none() {
        for an in &anchors {
            if let Some(why) = anchor_broken(&path, &rep, an)? {
                rep.problem = Some(Problem::anchor(an.0, why));
                break;
            }
        }
    }
    let mut out = Out::new(g.common.json);
    if g.common.json {
        for w in &rep.warnings {
            let mut v = serde_json::to_value(w)
                .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))?;
            v["type"] = json!("warning");
            out.json(&v)?;
        }
        if let Some(p) = &rep.problem {
            let mut v = serde_json::to_value(p)
                .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))?;
            v["type"] = json!("problem");
            out.json(&v)?;
        }
        out.json(&json!({
            "type": "summary",
            "ok": rep.ok(),
            "log": path.display().to_string(),
            "records": rep.records,
            "last_seq": rep.last_seq,
            "head": rep.head,
            "warnings": rep.warnings.len(),
            "segments": rep.segments,
            "first_seq": rep.first_seq,
            "checkpoint_seq": rep.checkpoint_seq,
        }))?;
    } else {
        for w in &rep.warnings {
            out.line(&format!("warning: {}", human(w)))?;
        }
        match &rep.problem {
            Some(p) => out.line(&format!("BROKEN at {}", human(p)))?,
            None => {
                let mut l = format!(
                    "ok: {} records, last seq {}, head {}",
                    rep.records, rep.last_seq, rep.head
                );
                if rep.segments > 0 {
                    l.push_str(&format!(
                        ", {} segment file(s) before the active one",
                        rep.segments
                    ));
                }
                if let Some(cp) = rep.checkpoint_seq {
                    l.push_str(&format!(
                        "; starts at seq {} (earlier segments removed, checkpoint seq {cp})",
                        rep.first_seq
                    ));
                }
                out.line(&l)?
            }
        }
    }
    out.flush()?;
    match rep.problem {
        None => Ok(0),
        Some(p) => Err(AppError::fail(
            ExitClass::Refused,
            format!(
                "audit log {} is broken at seq {}: {}",
                path.display(),
                p.seq,
                p.kind.as_str()
            ),
        )
        .with_hint(if p.kind == audit::ProblemKind::Anchor {
            format!(
                "the log's own chain verifies up to seq {}; the anchor is what does not match",
                rep.last_seq
            )
        } else {
            format!(
                "records up to seq {} verify; inspect line {} by hand",
                rep.last_seq, p.line
            )
        })),
    }
}
