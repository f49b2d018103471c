//! `team-audit hook`: a PreToolUse / PostToolUse hook for an agent's shell tool.
//!
//! Reads the payload on stdin (`hook_event_name`, `tool_name`, `tool_input.command` and
//! `tool_input.cmd` (each checked; commands over 256 KiB denied in `--guard`), `cwd`,
//! `session_id`, `tool_use_id`).
//!
//! **PreToolUse** (also Gemini CLI's `BeforeTool`; a payload without `hook_event_name` is taken
//! as PreToolUse) finds everything in the command line that may reach tmux
//! ([`crate::shell::analyze`]) and decides:
//! - Without `--guard`: allow. The destructive tmux commands it sees are recorded as intents.
//! - With `--guard`: allow only read-only tmux commands and form (b) kills whose every target
//!   is proven a member of a live team on the named socket ([`crate::oracle`]); deny
//!   everything else that reaches tmux. Kills and denials are recorded as intents (outcome
//!   `allowed` / `denied` / `asked`). A kill whose intent cannot be written is denied.
//! - A denial prints Claude Code's JSON decision on stdout
//!   (`hookSpecificOutput.permissionDecision: "deny"` with the reason), the reason on stderr,
//!   and exits 2. With `--ask` it asks the human instead (`"ask"`, exit 0) where the host has
//!   an "ask" (Claude Code); on Gemini CLI and Codex it denies. An allowed call
//!   prints nothing and exits 0: the host's own permission rules still apply (`"allow"` would
//!   skip them).
//!
//! **PostToolUse** (also `PostToolUseFailure`, Gemini's `AfterTool`) writes the outcome
//! (`complete` / `failed`) of the intents PreToolUse recorded for the same `tool_use_id`, and
//! never a new intent.
//!
//! Directories are never created from the payload: the default log
//! `<cwd>/.team/audit.jsonl` is used only when `<cwd>/.team` exists. A `cwd` that is missing,
//! relative or not an existing directory is a denial in `--guard`; otherwise the call is
//! allowed and recorded only to a log named by `--log` / `TEAM_AUDIT_LOG` / the state dir, or
//! not recorded, with a note on stderr.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};
use team_core::audit::{Entry, Stage};
use team_core::paths::StateRoot;

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::oracle::MembershipOracle;
use crate::shell::{Check, Finding, analyze};

/// Claude Code's (and Gemini CLI's, and Codex's) "block this tool call" exit status.
pub const DENY: i32 = 2;
/// Largest payload read.
const MAX_PAYLOAD: u64 = 8 << 20;
/// Largest command line checked: a longer one is denied in `--guard` (checking stays
/// near-linear up to it).
const MAX_COMMAND: usize = 256 << 10;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Allow only read-only tmux commands and `tmux -S <team socket> kill-pane -t %N` whose
    /// targets are proven live team members; deny everything else that reaches tmux
    #[arg(long)]
    pub guard: bool,
    /// With --guard: ask the human (permissionDecision "ask", exit 0) instead of denying, where
    /// the host can ask (Claude Code); elsewhere deny
    #[arg(long, requires = "guard")]
    pub ask: bool,
    /// Deny when the payload is malformed or the record cannot be written
    #[arg(long)]
    pub fail_closed: bool,
}

/// A word as a shell would need it written: quoted when it holds anything but plain
/// characters.
fn shell_quote(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./%=:,+@^".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The guard's decision for one finding: `Err(reason)` denies.
pub fn decide(f: &Finding, workspace: &Path, oracle: &dyn MembershipOracle) -> Result<(), String> {
    let quoted: Vec<String> = f.argv.iter().map(|w| shell_quote(w)).collect();
    // `shell` and `tmux` findings hold the whole command (its first word included); the
    // others hold one tmux command of a tmux invocation.
    let what = if f.argv.is_empty() {
        String::new()
    } else if matches!(f.action.as_str(), "shell" | "tmux" | "tmux -C") {
        format!("`{}`: ", quoted.join(" "))
    } else {
        format!("`tmux {}`: ", quoted.join(" "))
    };
    match &f.check {
        Check::ReadOnly => Ok(()),
        Check::Deny(why) => Err(format!("{what}{why}")),
        Check::NeedsProof => {
            if let crate::oracle::Server::Socket(p) = &f.server
                && let Err(why) = oracle.check_socket(p)
            {
                return Err(format!("{what}-S {}: {why}", p.display()));
            }
            for t in &f.targets {
                match oracle.is_proven_member(workspace, &f.server, t) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(format!(
                            "{what}{t} is not proven to be an active worker's pane of a live \
                             team in {} on that socket; use `team-scale down` or `team-reap`, \
                             which prove what they kill",
                            workspace.display()
                        ));
                    }
                    Err(e) => {
                        return Err(format!("{what}{t}: membership could not be checked: {e}"));
                    }
                }
            }
            Ok(())
        }
    }
}

/// Which hook event a payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Pre,
    Post { ok: bool },
    Other,
}

/// The event, from `hook_event_name` with case and surrounding whitespace ignored (missing:
/// PreToolUse; not a string: unknown).
fn event(payload: &Value) -> (Event, String) {
    let name = match payload.get("hook_event_name") {
        None => "PreToolUse".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let ev = match name.trim().to_ascii_lowercase().as_str() {
        "pretooluse" | "beforetool" => Event::Pre,
        "posttooluse" | "aftertool" => Event::Post {
            ok: tool_succeeded(payload.get("tool_response")),
        },
        "posttoolusefailure" => Event::Post { ok: false },
        _ => Event::Other,
    };
    (ev, name)
}

/// The shell commands of a payload: every command-bearing key of `tool_input` (`command`
/// and `cmd`; a host runs one of them, and which one is not the guard's to guess), each a
/// string or an argv array (Codex) quoted back into one line. `None`: no command field;
/// `Err`: a command field that is not a string or an array of strings.
fn command_of(payload: &Value) -> Option<Result<Vec<String>, String>> {
    let input = payload.get("tool_input")?;
    let fields: Vec<(&str, &Value)> = ["command", "cmd"]
        .iter()
        .filter_map(|k| input.get(*k).map(|v| (*k, v)))
        .collect();
    if fields.is_empty() {
        return None;
    }
    Some(
        fields
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map(shell_quote))
                    .collect::<Option<Vec<_>>>()
                    .map(|w| w.join(" "))
                    .ok_or_else(|| format!("tool_input.{k} is an array with a non-string element")),
                other => Err(format!(
                    "tool_input.{k} is not a string but {}",
                    match other {
                        Value::Null => "null",
                        Value::Bool(_) => "a boolean",
                        Value::Number(_) => "a number",
                        _ => "an object",
                    }
                )),
            })
            .collect(),
    )
}

/// What a tool response says about success: interrupted, an error flag or a non-zero exit
/// code mean failure.
fn tool_succeeded(r: Option<&Value>) -> bool {
    let Some(r) = r.and_then(Value::as_object) else {
        return true;
    };
    let flag = |k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
    let code = |k: &str| r.get(k).and_then(Value::as_i64).unwrap_or(0);
    !(flag("interrupted")
        || flag("is_error")
        || flag("isError")
        || code("exit_code") != 0
        || code("exitCode") != 0)
}

/// Tool names that are shell tools (any case): a payload for one without a command is
/// malformed. Any payload *with* a command is checked whatever its tool name.
fn is_shell_tool(name: Option<&str>) -> bool {
    name.is_some_and(|n| {
        matches!(
            n.trim().to_ascii_lowercase().as_str(),
            "bash"
                | "run_shell_command"
                | "shell"
                | "local_shell"
                | "exec_command"
                | "shell_command"
                | "container.exec"
                | "unified_exec"
        )
    })
}

/// Whether the host reading the decision honours `"ask"`: Claude Code does; Gemini CLI
/// (`BeforeTool`) and Codex (whose payloads carry `turn_id`) block only on exit 2.
fn host_can_ask(payload: &Value, event_name: &str) -> bool {
    event_name.trim().eq_ignore_ascii_case("PreToolUse") && payload.get("turn_id").is_none()
}

/// The payload's `cwd`, if it is an absolute path to an existing directory.
fn payload_cwd(payload: &Value) -> Result<PathBuf, String> {
    match payload.get("cwd").and_then(Value::as_str) {
        None => Err("the payload has no cwd".into()),
        Some(c) if !Path::new(c).is_absolute() => {
            Err(format!("the payload's cwd {c:?} is not an absolute path"))
        }
        Some(c) if !Path::new(c).is_dir() => Err(format!(
            "the payload's cwd {c} is not an existing directory"
        )),
        Some(c) => Ok(PathBuf::from(c)),
    }
}

/// The audit log to write, never creating a directory from the payload: `--log` /
/// `TEAM_AUDIT_LOG`, else an absolute state dir (made if missing), else an existing state root
/// of the workspace. `Ok(None)`: nowhere to record.
fn log_for(g: &Global, workspace: Option<&Path>) -> Result<Option<PathBuf>, String> {
    if let Some(p) = &g.log {
        return Ok(Some(p.clone()));
    }
    if let Some(sd) = &g.state_dir
        && sd.is_absolute()
    {
        let root = StateRoot::resolve(sd, Some(sd)).map_err(|e| e.to_string())?;
        root.ensure().map_err(|e| e.to_string())?;
        return Ok(Some(root.audit_log()));
    }
    let Some(ws) = workspace else { return Ok(None) };
    let root = StateRoot::resolve(ws, g.state_dir.as_deref()).map_err(|e| e.to_string())?;
    if !root.audit_log().parent().is_some_and(Path::is_dir) {
        return Ok(None);
    }
    Ok(Some(root.audit_log()))
}

fn say_denied(reasons: &[String]) {
    for r in reasons {
        team_cli::say_line!("team-audit: denied: {r}");
    }
}

/// Prints the decision JSON and returns the exit code.
fn decision(event_name: &str, ask: bool, reasons: &[String]) -> i32 {
    let reason = reasons.join("; ");
    let out = json!({
        "hookSpecificOutput": {
            "hookEventName": event_name,
            "permissionDecision": if ask { "ask" } else { "deny" },
            "permissionDecisionReason": reason,
        }
    });
    println!("{out}");
    if ask {
        for r in reasons {
            team_cli::say_line!("team-audit: asking: {r}");
        }
        0
    } else {
        say_denied(reasons);
        DENY
    }
}

fn malformed(g: &Global, a: &HookArgs, ws: Option<&Path>, why: String) -> i32 {
    let entry = Entry {
        caller: "hook:unknown".into(),
        action: "hook.malformed".into(),
        reason: Some(why.clone()),
        outcome: Some(
            if a.fail_closed || a.guard {
                "denied"
            } else {
                "allowed"
            }
            .into(),
        ),
        ..Entry::default()
    };
    match log_for(g, ws) {
        Ok(Some(p)) => {
            if let Err(e) = logpath::log_at(g, p).append(Stage::Intent, None, &entry) {
                team_cli::say_line!(
                    "team-audit: warning: cannot record the malformed payload: {e}"
                );
            }
        }
        Ok(None) => {
            team_cli::say_line!("team-audit: note: malformed payload not recorded: no audit log")
        }
        Err(e) => {
            team_cli::say_line!("team-audit: warning: cannot record the malformed payload: {e}")
        }
    }
    if a.guard || a.fail_closed {
        let mode = if a.guard { "--guard" } else { "--fail-closed" };
        decision(
            "PreToolUse",
            false,
            &[format!("{why} ({mode} fails closed)")],
        )
    } else {
        team_cli::say_line!("team-audit: warning: {why}; allowed");
        0
    }
}

pub fn run(g: &Global, a: HookArgs, oracle: &dyn MembershipOracle) -> Result<i32, AppError> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut raw)
        .map_err(|e| team_core::Error::io("read", "stdin", e))?;
    if raw.len() as u64 > MAX_PAYLOAD {
        return Ok(malformed(
            g,
            &a,
            None,
            format!("hook payload is larger than {MAX_PAYLOAD} bytes"),
        ));
    }
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
    let (ev, event_name) = event(&payload);
    let cwd = payload_cwd(&payload);
    let workspace: Option<PathBuf> = g.workspace.clone().or_else(|| cwd.clone().ok());
    // `--ask` only where the host has an "ask" decision.
    let ask = a.ask && host_can_ask(&payload, &event_name);
    let ask_note = if a.ask && !ask {
        " (--ask: this host has no \"ask\" decision, so the call is denied)"
    } else {
        ""
    };
    let command = command_of(&payload);
    let tool_name = payload.get("tool_name").and_then(Value::as_str);
    if command.is_none() && !is_shell_tool(tool_name) {
        // Not a shell tool and no command: nothing the guard reads.
        return Ok(0);
    }
    if ev == Event::Other && a.guard {
        return Ok(decision(
            &event_name,
            false,
            &[format!(
                "unknown hook event {event_name:?}: --guard decides only PreToolUse / BeforeTool"
            )],
        ));
    }
    let session = payload
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let tool_use_id = payload
        .get("tool_use_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    match ev {
        Event::Other => {
            team_cli::say_line!("team-audit: note: hook event {event_name:?} ignored");
            return Ok(0);
        }
        Event::Post { ok } => {
            return Ok(post(g, workspace.as_deref(), &session, tool_use_id, ok));
        }
        Event::Pre => {}
    }
    let commands = match command {
        Some(Ok(c)) => c,
        Some(Err(why)) => return Ok(malformed(g, &a, workspace.as_deref(), why)),
        None => {
            return Ok(malformed(
                g,
                &a,
                workspace.as_deref(),
                "shell tool payload without tool_input.command".into(),
            ));
        }
    };
    if let Some(big) = commands.iter().find(|c| c.len() > MAX_COMMAND) {
        let why = format!(
            "the command is {} bytes, more than the {MAX_COMMAND} the guard checks",
            big.len()
        );
        if a.guard {
            return Ok(decision(&event_name, ask, &[format!("{why}{ask_note}")]));
        }
        team_cli::say_line!("team-audit: note: not checked or recorded: {why}");
        return Ok(0);
    }
    if a.guard
        && let Err(why) = &cwd
        && g.workspace.is_none()
    {
        let reasons = vec![format!(
            "{why}: the guard cannot tell which workspace's teams to check{ask_note}"
        )];
        return Ok(decision(&event_name, ask, &reasons));
    }
    let tmux_bin = oracle.tmux_bin();
    let (sources, findings): (Vec<usize>, Vec<Finding>) = commands
        .iter()
        .enumerate()
        .flat_map(|(k, c)| {
            analyze(c, tmux_bin.as_deref())
                .into_iter()
                .map(move |f| (k, f))
        })
        .unzip();
    if findings.is_empty() {
        return Ok(0);
    }
    let ws_display = workspace
        .as_ref()
        .map(|w| w.display().to_string())
        .unwrap_or_default();
    let decisions: Vec<Result<(), String>> = findings
        .iter()
        .map(|f| match (&workspace, a.guard) {
            (_, false) => Ok(()),
            (Some(ws), true) => decide(f, ws, oracle),
            (None, true) => Err("no workspace".into()),
        })
        .collect();
    let denied_word = if ask { "asked" } else { "denied" };
    let items: Vec<_> = findings
        .iter()
        .zip(&decisions)
        .zip(&sources)
        .filter(|((f, d), _)| {
            f.destroying || f.check == Check::NeedsProof || (a.guard && d.is_err())
        })
        .map(|((f, d), k)| {
            let command = commands[*k].as_str();
            let (outcome, reason) = match (a.guard, d) {
                (false, _) => (None, "seen by hook (not guarded)".to_string()),
                (true, Ok(())) => (Some("allowed".to_string()), "proven by guard".into()),
                (true, Err(why)) => (Some(denied_word.to_string()), why.clone()),
            };
            let argv = if f.action == "shell" {
                f.argv.clone()
            } else {
                std::iter::once("tmux".to_string())
                    .chain(f.argv.iter().cloned())
                    .collect()
            };
            let entry = Entry {
                caller: format!("hook:{session}"),
                action: f.action.clone(),
                argv,
                endpoint: f.server.endpoint(),
                targets: f.targets.iter().map(|t| json!(t)).collect(),
                workspace: workspace.as_ref().map(|_| ws_display.clone()),
                reason: Some(reason),
                outcome,
                owner_evidence: Some(json!({
                    "command": command,
                    "tool_use_id": tool_use_id,
                    "hook_event_name": event_name,
                })),
                ..Entry::default()
            };
            (Stage::Intent, None, entry)
        })
        .collect();
    let mut denials: Vec<String> = decisions.iter().filter_map(|d| d.clone().err()).collect();
    if !items.is_empty() {
        let recorded = match log_for(g, workspace.as_deref()) {
            Ok(Some(p)) => logpath::log_at(g, p)
                .append_batch(&items)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Ok(None) => Err(
                "no audit log: the payload's cwd has no .team directory and no --log, \
                 TEAM_AUDIT_LOG or state dir is set"
                    .into(),
            ),
            Err(e) => Err(e),
        };
        if let Err(e) = recorded {
            let allows_a_kill = findings
                .iter()
                .zip(&decisions)
                .any(|(f, d)| f.check == Check::NeedsProof && d.is_ok());
            if a.guard && allows_a_kill || a.fail_closed {
                denials.push(format!("cannot record the kill in the audit log: {e}"));
            } else {
                team_cli::say_line!("team-audit: note: not recorded: {e}");
            }
        }
    }
    if denials.is_empty() {
        Ok(0)
    } else {
        if !ask_note.is_empty() {
            denials.push(ask_note.trim().to_string());
        }
        Ok(decision(&event_name, ask, &denials))
    }
}

/// PostToolUse: the outcome of every intent PreToolUse recorded for this tool call.
fn post(
    g: &Global,
    workspace: Option<&Path>,
    session: &str,
    tool_use_id: Option<String>,
    ok: bool,
) -> i32 {
    let Some(id) = tool_use_id else {
        team_cli::say_line!("team-audit: note: PostToolUse without tool_use_id: nothing to pair");
        return 0;
    };
    let path = match log_for(g, workspace) {
        Ok(Some(p)) if p.exists() => p,
        Ok(_) => return 0,
        Err(e) => {
            team_cli::say_line!("team-audit: warning: cannot read the audit log: {e}");
            return 0;
        }
    };
    let caller = format!("hook:{session}");
    // This session's latest records only, read from the end of the log (across rotated
    // segments): the intent was written just before the tool ran.
    let mut records = Vec::new();
    let filter = team_core::audit::Filter {
        caller: Some(caller.clone()),
        ..Default::default()
    };
    if let Err(e) = team_core::audit::query(&path, &filter, Some(POST_LOOKBACK), |r| {
        records.push(r.clone());
        Ok(())
    }) {
        team_cli::say_line!("team-audit: warning: cannot read the audit log: {e}");
        return 0;
    }
    let done: std::collections::HashSet<_> = records
        .iter()
        .filter(|r| matches!(r.stage, Stage::Complete | Stage::Failed))
        .map(|r| r.audit_id)
        .collect();
    let items: Vec<_> = records
        .iter()
        .filter(|r| {
            r.stage == Stage::Intent
                && r.caller == caller
                && r.outcome.as_deref() != Some("denied")
                && !done.contains(&r.audit_id)
                && r.owner_evidence
                    .as_ref()
                    .and_then(|e| e.get("tool_use_id"))
                    .and_then(Value::as_str)
                    == Some(id.as_str())
        })
        .map(|r| {
            let entry = Entry {
                caller: r.caller.clone(),
                action: r.action.clone(),
                op: r.op.clone(),
                argv: r.argv.clone(),
                endpoint: r.endpoint.clone(),
                targets: r.targets.clone(),
                workspace: r.workspace.clone(),
                team: r.team.clone(),
                generation: r.generation,
                owner_evidence: Some(json!({"tool_use_id": id})),
                reason: Some(if ok {
                    "the tool call finished".into()
                } else {
                    "the tool call failed or was interrupted".into()
                }),
                outcome: Some(if ok { "ok" } else { "failed" }.into()),
            };
            let stage = if ok { Stage::Complete } else { Stage::Failed };
            (stage, Some(r.audit_id), entry)
        })
        .collect();
    if items.is_empty() {
        return 0;
    }
    if let Err(e) = logpath::log_at(g, path).append_batch(&items) {
        team_cli::say_line!("team-audit: warning: cannot record the outcome: {e}");
    }
    0
}

/// How many of a hook session's latest records a `PostToolUse` looks through for its intent.
const POST_LOOKBACK: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Server, Unwired};
    use proptest::prelude::*;

    /// Proves `%1` and `%2` on `/team/sock` only.
    struct Members;
    impl MembershipOracle for Members {
        fn is_proven_member(&self, _: &Path, s: &Server, t: &str) -> team_core::Result<bool> {
            Ok(*s == Server::Socket("/team/sock".into()) && (t == "%1" || t == "%2"))
        }
        fn check_socket(&self, _: &Path) -> Result<(), String> {
            Ok(())
        }
    }
    struct Broken;
    impl MembershipOracle for Broken {
        fn is_proven_member(&self, _: &Path, _: &Server, _: &str) -> team_core::Result<bool> {
            Err(team_core::Error::Internal("tmux gone".into()))
        }
        fn check_socket(&self, _: &Path) -> Result<(), String> {
            Ok(())
        }
    }

    fn allowed(src: &str, o: &dyn MembershipOracle) -> Result<(), String> {
        let ws = Path::new("/w");
        for f in analyze(src, Some(Path::new("/usr/bin/tmux"))) {
            decide(&f, ws, o)?;
        }
        Ok(())
    }

    #[test]
    fn guard_allows_only_proven_members() {
        let m = &Members;
        assert_eq!(allowed("tmux -S /team/sock kill-pane -t %1", m), Ok(()));
        assert_eq!(
            allowed("tmux -S /team/sock kill-pane -t %1 \\; kill-pane -t %2", m),
            Ok(())
        );
        for src in [
            "tmux -S /team/sock kill-pane -t %3",
            "tmux -S /team/sock kill-pane -t %1 -t %3",
            "tmux -S /team/sock kill-pane",
            "tmux -S /team/sock kill-pane -a -t %1",
            "tmux -S /team/sock kill-window -t %1",
            "tmux -S /team/sock kill-window -t %1 -t %2",
            "tmux -S /team/sock kill-session -t %1",
            "tmux -S /team/sock kill-server",
            "tmux -S /other kill-pane -t %1",
            "tmux kill-pane -t %1",
        ] {
            assert!(allowed(src, m).is_err(), "{src} allowed");
        }
        let e = allowed("tmux -S /team/sock kill-pane -t %1", &Broken).unwrap_err();
        assert!(e.contains("could not be checked"), "{e}");
        let e = allowed("tmux -S /team/sock kill-pane -t %1", &Unwired).unwrap_err();
        assert!(e.contains("not proven"), "{e}");
    }

    /// The generator's pieces: how a line can reach a destroying verb.
    fn wrappers() -> impl Strategy<Value = (String, bool)> {
        // (prefix, keeps form (b)): a kill must be the whole line, so no prefix keeps it.
        prop_oneof![
            Just((String::new(), true)),
            Just(("command ".into(), false)),
            Just(("exec ".into(), false)),
            Just(("nohup ".into(), false)),
            Just(("timeout 5 ".into(), false)),
            Just(("nice -n 5 ".into(), false)),
            Just(("setsid ".into(), false)),
            Just(("stdbuf -oL ".into(), false)),
            Just(("env ".into(), false)),
            Just(("env -u TMUX ".into(), false)),
            Just(("env -i ".into(), false)),
            Just(("sudo ".into(), false)),
            Just(("TMUX=/tmp/x,1,0 ".into(), false)),
            Just(("TMUX_TMPDIR=/tmp ".into(), false)),
            Just(("A=1 ".into(), false)),
            Just(("xargs ".into(), false)),
            Just(("strace -f ".into(), false)),
            Just(("unset TMUX; ".into(), false)),
            Just(("export TMUX=/x,1,0; ".into(), false)),
            Just(("cd /tmp && ".into(), false)),
            Just(("echo go | ".into(), false)),
            Just(("true && ".into(), false)),
        ]
    }

    fn tmux_words() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("tmux".to_string()),
            Just("/usr/bin/tmux".to_string()),
            Just("\\tmux".to_string()),
            Just("'tmux'".to_string()),
            Just("t\"mu\"x".to_string()),
        ]
    }

    /// (global options, keeps form (b))
    fn globals() -> impl Strategy<Value = (String, bool)> {
        prop_oneof![
            8 => Just(("-S /team/sock".to_string(), true)),
            2 => Just(("-S /team/sock -f /dev/null".to_string(), true)),
            2 => Just(("-S/team/sock".to_string(), true)),
            1 => Just(("-S /team/../team/sock".to_string(), false)),
            1 => Just(("-S team/sock".to_string(), false)),
            1 => Just(("-L team".to_string(), false)),
            1 => Just(("-S /team/sock -L team".to_string(), false)),
            1 => Just(("-L team -S /team/sock".to_string(), false)),
            1 => Just((String::new(), false)),
            1 => Just(("-S /team/sock -C".to_string(), false)),
            1 => Just(("-S /team/sock -f x.conf".to_string(), false)),
            1 => Just(("-S /other/sock".to_string(), false)),
        ]
    }

    /// Any name tmux resolves to a destroying command (full, alias, unique prefix), with
    /// arguments; (text, is a form-(b) kill with proven targets).
    fn verbs() -> impl Strategy<Value = (String, bool)> {
        let kill_names = prop_oneof![
            Just("kill-pane"),
            Just("killp"),
            Just("kill-p"),
            Just("kill-pa"),
            Just("kill-pan")
        ];
        let respawn_names = prop_oneof![
            Just("respawn-pane"),
            Just("respawnp"),
            Just("respawn-p"),
            Just("respawn-pa")
        ];
        let other = prop_oneof![
            Just("kill-server"),
            Just("kill-ser"),
            Just("kill-session"),
            Just("kill-ses"),
            Just("kill-s"),
            Just("kill-window"),
            Just("killw"),
            Just("kill-w"),
            Just("kill"),
            Just("unlink-window -k"),
            Just("unlinkw -k"),
            Just("move-window -k"),
            Just("movew -k"),
            Just("link-window -k"),
            Just("new-window -k"),
            Just("neww 'tmux kill-server'"),
            Just("split-window 'tmux kill-server'"),
            Just("splitw"),
            Just("respawn-window -k"),
            Just("respawnw -k"),
            Just("swap-pane"),
            Just("break-pane"),
            Just("join-pane"),
            Just("source-file x"),
            Just("source x"),
            Just("run-shell 'tmux kill-server'"),
            Just("run 'true'"),
            Just("if-shell true 'kill-server'"),
            Just("if true kill-server"),
            Just("set-hook -g after-new-window kill-server"),
            Just("command-prompt"),
            Just("confirm-before kill-server"),
            Just("confirm kill-server"),
            Just("send-keys -t %1 exit Enter"),
        ];
        let target = prop_oneof![
            4 => Just(("-t %1", true)),
            2 => Just(("-t%2", true)),
            2 => Just(("-t %1 -t %2", true)),
            1 => Just(("-t %3", false)),
            1 => Just(("-t %1 -t %3", false)),
            1 => Just(("", false)),
            1 => Just(("-a -t %1", false)),
            1 => Just(("-t demo", false)),
            1 => Just(("-t %1.0", false)),
            1 => Just(("-t '%1' -f '#{pane_active}'", false)),
        ];
        prop_oneof![
            4 => (kill_names, target.clone()).prop_map(|(v, (t, ok))| (format!("{v} {t}"), ok)),
            2 => (respawn_names.clone(), target.clone())
                .prop_map(|(v, (t, ok))| (format!("{v} -k {t}"), ok)),
            1 => (respawn_names, target.clone()).prop_map(|(v, (t, _))| (format!("{v} {t}"), false)),
            3 => (other, target).prop_map(|(v, (t, _))| (format!("{v} {t}"), false)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// No line with a destroying verb passes unless it is exactly form (b): a top-level
        /// `tmux -S <team socket>` with no environment change, only proven `-t %N`.
        #[test]
        fn destroying_verbs_pass_only_in_form_b(
            (wrap, wrap_ok) in wrappers(),
            tmux in tmux_words(),
            (glob, glob_ok) in globals(),
            before in proptest::option::of(prop_oneof![Just("list-panes -a"), Just("display -p x")]),
            (verb, verb_ok) in verbs(),
            nest in prop_oneof![4 => Just(0usize), 1 => 1usize..5],
        ) {
            let seq = match before {
                Some(b) => format!("{b} \\; {verb}"),
                None => verb.clone(),
            };
            let cmd = format!("{tmux} {glob} {seq}");
            let (nested, nest_ok) = match nest {
                0 => (cmd.clone(), true),
                1 => (format!("sh -c '{}'", cmd.replace('\'', "'\\''")), false),
                2 => (format!("eval \"{}\"", cmd.replace('"', "\\\"")), false),
                3 => (format!("echo $({cmd})"), false),
                _ => (format!("find . -exec {cmd} \\;"), false),
            };
            let line = format!("{wrap}{nested}");
            let form_b = wrap_ok && glob_ok && verb_ok && nest_ok;
            let got = allowed(&line, &Members);
            prop_assert_eq!(got.is_ok(), form_b, "{} -> {:?}", line, got);
        }
    }
}
