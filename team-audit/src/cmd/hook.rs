//! `team-audit hook`: a Claude Code PreToolUse hook for the Bash tool.
//!
//! Reads the payload (`tool_name`, `tool_input.command`, `cwd`, `session_id`) on stdin, finds
//! destructive tmux commands in the shell command, and records each as an intent (one group
//! commit) with caller `hook:<session_id>`. Exit 0 allows the tool call; exit 2 denies it, with
//! the reason on stderr (which Claude Code shows the agent).
//!
//! - Without `--guard`: always allow. If the record cannot be written, say so on stderr and
//!   allow anyway (unless `--fail-closed`).
//! - With `--guard`: `kill-server` is always denied; any other kill is denied unless every one
//!   of its targets is proven a member of a live team in the payload's workspace (see
//!   [`crate::oracle`]: the state oracle proves it from team state and a fresh listing). A kill
//!   whose record cannot be written is denied too.
//! - A payload that is not JSON (or a Bash payload without a command) is recorded as
//!   `hook.malformed` and allowed, unless `--fail-closed`, which denies it.
//! - Tools other than Bash are allowed and not recorded.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};
use team_core::audit::{AuditLog, Entry, Stage};

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::oracle::MembershipOracle;
use crate::shell::{Kill, find_kills};

/// Claude Code's "block this tool call" exit status.
pub const DENY: i32 = 2;
/// Largest payload read.
const MAX_PAYLOAD: u64 = 8 << 20;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Deny kill-server always, and any kill whose targets are not proven live team members
    #[arg(long)]
    pub guard: bool,
    /// Deny when the payload is malformed or the record cannot be written
    #[arg(long)]
    pub fail_closed: bool,
}

fn deny(reasons: &[String]) -> i32 {
    for r in reasons {
        eprintln!("team-audit: denied: {r}");
    }
    DENY
}

/// The guard's decision for one kill: `Err(reason)` denies.
pub fn decide(k: &Kill, workspace: &Path, oracle: &dyn MembershipOracle) -> Result<(), String> {
    let what = format!("`tmux {}`", k.argv.join(" "));
    if k.command == "kill-server" {
        return Err(format!(
            "{what}: kill-server ends every session on the server and is never allowed"
        ));
    }
    if k.all_others {
        return Err(format!(
            "{what}: -a acts on every other target, which cannot all be proven team members"
        ));
    }
    if k.targets.is_empty() {
        return Err(format!(
            "{what}: no -t target; the current pane cannot be proven a team member"
        ));
    }
    for t in &k.targets {
        match oracle.is_proven_member(workspace, &k.server, t) {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "{what}: {t} is not proven to be a member of a live team in {}; \
                     use `team-scale down` or `team-reap`, which prove what they kill",
                    workspace.display()
                ));
            }
            Err(e) => {
                return Err(format!("{what}: {t}: membership could not be checked: {e}"));
            }
        }
    }
    Ok(())
}

fn malformed(g: &Global, a: &HookArgs, cwd: Option<&Path>, why: String) -> i32 {
    let entry = Entry {
        caller: "hook:unknown".into(),
        action: "hook.malformed".into(),
        reason: Some(why.clone()),
        outcome: Some(if a.fail_closed { "denied" } else { "allowed" }.into()),
        ..Entry::default()
    };
    let recorded = logpath::resolve(g, cwd, true)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            AuditLog::new(p)
                .append(Stage::Intent, None, &entry)
                .map_err(|e| e.to_string())
        });
    if let Err(e) = recorded {
        eprintln!("team-audit: warning: cannot record the malformed payload: {e}");
    }
    if a.fail_closed {
        deny(&[format!("{why} (--fail-closed)")])
    } else {
        eprintln!("team-audit: warning: {why}; allowed");
        0
    }
}

pub fn run(g: &Global, a: HookArgs, oracle: &dyn MembershipOracle) -> Result<i32, AppError> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_PAYLOAD)
        .read_to_end(&mut raw)
        .map_err(|e| team_core::Error::io("read", "stdin", e))?;
    let payload: Value = match serde_json::from_slice(&raw) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return Ok(malformed(
                g,
                &a,
                None,
                "hook payload is not a JSON object".into(),
            ));
        }
        Err(e) => {
            return Ok(malformed(
                g,
                &a,
                None,
                format!("hook payload is not JSON: {e}"),
            ));
        }
    };
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| Path::new(c).is_absolute())
        .map(PathBuf::from);
    if payload.get("tool_name").and_then(Value::as_str) != Some("Bash") {
        return Ok(0);
    }
    let Some(command) = payload
        .pointer("/tool_input/command")
        .and_then(Value::as_str)
    else {
        return Ok(malformed(
            g,
            &a,
            cwd.as_deref(),
            "Bash hook payload without tool_input.command".into(),
        ));
    };
    let kills = find_kills(command);
    if kills.is_empty() {
        return Ok(0);
    }
    let session = payload
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let workspace = logpath::workspace(g, cwd.as_deref())?;
    let decisions: Vec<Result<(), String>> = kills
        .iter()
        .map(|k| {
            if a.guard {
                decide(k, &workspace, oracle)
            } else {
                Ok(())
            }
        })
        .collect();
    let items: Vec<_> = kills
        .iter()
        .zip(&decisions)
        .map(|(k, d)| {
            let (outcome, reason) = match (a.guard, d) {
                (false, _) => (None, "seen by hook (not guarded)".to_string()),
                (true, Ok(())) => (Some("allowed".to_string()), "proven by guard".into()),
                (true, Err(why)) => (Some("denied".to_string()), why.clone()),
            };
            let mut argv = vec!["tmux".to_string()];
            argv.extend(k.argv.iter().cloned());
            let entry = Entry {
                caller: format!("hook:{session}"),
                action: k.command.to_string(),
                argv,
                endpoint: k.server.endpoint(),
                targets: if k.all_others {
                    k.targets.iter().map(|t| json!({"all_except": t})).collect()
                } else {
                    k.targets.iter().map(|t| json!(t)).collect()
                },
                workspace: Some(workspace.display().to_string()),
                reason: Some(reason),
                outcome,
                owner_evidence: Some(json!({"command": command})),
                ..Entry::default()
            };
            (Stage::Intent, None, entry)
        })
        .collect();
    let recorded = logpath::resolve(g, Some(&workspace), true)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            AuditLog::new(p)
                .append_batch(&items)
                .map_err(|e| e.to_string())
        });
    let denials: Vec<String> = decisions.into_iter().filter_map(Result::err).collect();
    if let Err(e) = recorded {
        if a.guard || a.fail_closed {
            let mut reasons = denials;
            reasons.push(format!("cannot record the kill in the audit log: {e}"));
            return Ok(deny(&reasons));
        }
        eprintln!("team-audit: warning: cannot record the kill in the audit log: {e}");
    }
    if denials.is_empty() {
        Ok(0)
    } else {
        Ok(deny(&denials))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Server, Unwired};

    struct Members(&'static [&'static str]);
    impl MembershipOracle for Members {
        fn is_proven_member(&self, _: &Path, _: &Server, t: &str) -> team_core::Result<bool> {
            Ok(self.0.contains(&t))
        }
    }
    struct Broken;
    impl MembershipOracle for Broken {
        fn is_proven_member(&self, _: &Path, _: &Server, _: &str) -> team_core::Result<bool> {
            Err(team_core::Error::Internal("tmux gone".into()))
        }
    }

    fn one(src: &str) -> Kill {
        let mut k = find_kills(src);
        assert_eq!(k.len(), 1, "{src}");
        k.remove(0)
    }

    #[test]
    fn guard_allows_only_proven_members() {
        let ws = Path::new("/w");
        let m = Members(&["%1", "%2"]);
        assert_eq!(decide(&one("tmux kill-pane -t %1"), ws, &m), Ok(()));
        assert_eq!(decide(&one("tmux kill-window -t %1 -t %2"), ws, &m), Ok(()));
        for src in [
            "tmux kill-pane -t %3",
            "tmux kill-pane -t %1 -t %3",
            "tmux kill-pane",
            "tmux kill-pane -a -t %1",
            "tmux kill-server",
        ] {
            assert!(decide(&one(src), ws, &m).is_err(), "{src} allowed");
        }
        let e = decide(&one("tmux kill-pane -t %1"), ws, &Broken).unwrap_err();
        assert!(e.contains("could not be checked"), "{e}");
        let e = decide(&one("tmux kill-pane -t %1"), ws, &Unwired).unwrap_err();
        assert!(e.contains("not proven"), "{e}");
    }
}
