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
pub struct VerifyArgs {}

fn human(p: &Problem) -> String {
    let file = if p.file.is_empty() {
        String::new()
    } else {
        format!(" in {}", p.file)
    };
    format!(
        "seq {} ({}){file} at line {}, offset {}: {}",
        p.seq,
        p.kind.as_str(),
        p.line,
        p.offset,
        p.detail
    )
}

pub fn run(g: &Global, _a: VerifyArgs) -> Result<i32, AppError> {
    let path = logpath::resolve(g, None, false)?;
    let rep = audit::verify(&path)?;
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
        .with_hint(format!(
            "records up to seq {} verify; inspect line {} by hand",
            rep.last_seq, p.line
        ))),
    }
}
