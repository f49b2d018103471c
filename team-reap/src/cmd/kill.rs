//! `team-reap kill --from FILE|-`: kill the named candidates that are still reapable.
//!
//! Nothing in a candidate line is trusted: the endpoint and pane id (or pid and start time)
//! are only lookup keys into a fresh snapshot, which is classified from scratch. Bad input
//! changes nothing: every line is parsed before any effect.

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;

use team_core::Error;
use team_core::model::is_tmux_id;

use crate::cli::{Global, KillArgs};
use crate::ctx::Ctx;
use crate::error::CliResult;

use super::run::{Mode, Selection, run as engine};

pub fn run(ctx: &Ctx, g: &Global, a: KillArgs) -> CliResult<i32> {
    let text = if a.from == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::io("read", "<stdin>", e))?;
        s
    } else {
        std::fs::read_to_string(&a.from).map_err(|e| Error::io("read", &a.from, e))?
    };
    let sel = parse(&text)?;
    engine(ctx, g, Mode::KillFrom(sel))
}

/// Parses candidate lines into lookup keys.
pub fn parse(text: &str) -> Result<Selection, Error> {
    let mut sel = Selection {
        panes: Vec::new(),
        procs: HashSet::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |msg: &str| Error::MalformedInput {
            what: format!("candidate line {}", n + 1),
            msg: msg.to_string(),
        };
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        match v.get("type").and_then(|t| t.as_str()) {
            Some("pane") => {
                let ep = v
                    .get("endpoint")
                    .and_then(|e| e.as_str())
                    .filter(|e| e.starts_with('/'))
                    .ok_or_else(|| bad("a pane line needs an absolute \"endpoint\""))?;
                let id = v
                    .get("pane_id")
                    .and_then(|e| e.as_str())
                    .filter(|p| is_tmux_id(p, '%'))
                    .ok_or_else(|| bad("a pane line needs a \"pane_id\" like %3"))?;
                let key = (PathBuf::from(ep), id.to_string());
                if !sel.panes.contains(&key) {
                    sel.panes.push(key);
                }
            }
            Some("process") => {
                let num = |k: &str| {
                    v.get(k)
                        .and_then(|x| x.as_u64())
                        .ok_or_else(|| bad(&format!("a process line needs a numeric \"{k}\"")))
                };
                let pid = u32::try_from(num("pid")?).map_err(|_| bad("pid out of range"))?;
                sel.procs.insert((pid, num("start_time")?));
            }
            Some("session" | "server" | "summary") => {}
            Some(other) => return Err(bad(&format!("unknown type {other:?}"))),
            None => return Err(bad("no \"type\"")),
        }
    }
    Ok(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_only() {
        let s = parse(concat!(
            r#"{"type":"pane","endpoint":"/s","pane_id":"%1","verdict":"orphan"}"#,
            "\n\n",
            r#"{"type":"process","pid":5,"start_time":9}"#,
            "\n",
            r#"{"type":"summary"}"#
        ))
        .unwrap();
        assert_eq!(s.panes, vec![(PathBuf::from("/s"), "%1".to_string())]);
        assert!(s.procs.contains(&(5, 9)));
        for bad in [
            "not json",
            r#"{"type":"pane","endpoint":"rel","pane_id":"%1"}"#,
            r#"{"type":"pane","endpoint":"/s","pane_id":"%1;kill-server"}"#,
            r#"{"type":"nuke"}"#,
            r#"{"pane_id":"%1"}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Candidate lines are hostile input: any text gives keys or a named error.
        #[test]
        fn parse_never_panics(text in "\\PC{0,300}") {
            let _ = parse(&text);
        }

        #[test]
        fn candidate_shaped_lines_never_panic(s in r#"\{"type":"(pane|process|session|x)"(,"endpoint":"/?[a-z/]{0,6}")?(,"pane_id":"%?[0-9a-z]{0,4}")?(,"pid":-?[0-9]{0,12})?(,"start_time":[0-9]{0,22})?\}"#) {
            let _ = parse(&s);
        }
    }
}
