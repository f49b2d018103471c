//! Step 6 of the engine ([`super::run`]): one JSON record per server problem, missing
//! candidate, pane, session and process, a human line for the noteworthy ones, and the
//! counts ([`Tally`]) the outcome is decided on.

use std::collections::HashMap;

use serde_json::json;
use team_core::reap::{
    Action, PaneReport, ProcReport, Server, ServerStatus, SessionReport, Verdict,
};

use crate::cli::Global;
use crate::ctx::Ctx;
use crate::error::{CliResult, warn};
use crate::out::Out;

use super::Plan;

/// What the report counted: the summary's numbers and what the outcome is decided on.
#[derive(Default)]
pub(super) struct Tally {
    /// Tagged panes reported.
    pub panes: u64,
    pub by_verdict: HashMap<Verdict, u64>,
    pub killed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub would_kill: u64,
    pub procs_killed: u64,
    /// Panes and processes the run should act on (orphans it may kill, and debt).
    pub reapable: u64,
    /// Reapable ones still there after the run (failed, skipped, or debt).
    pub reapable_left: u64,
    /// Some effect was refused because its audit intent could not be written.
    pub audit_failed: bool,
}

impl Tally {
    fn count_pane(&mut self, p: &PaneReport, effects: bool) {
        if p.class.verdict != Verdict::Untagged {
            self.panes += 1;
            *self.by_verdict.entry(p.class.verdict).or_default() += 1;
        }
        if p.audit_failed {
            self.audit_failed = true;
        }
        if !p.reapable() {
            return;
        }
        self.reapable += 1;
        if !effects {
            return;
        }
        match p.action {
            Action::Killed => self.killed += 1,
            Action::WouldKill => self.would_kill += 1,
            Action::Failed => {
                self.failed += 1;
                self.reapable_left += 1;
            }
            Action::Skipped => {
                self.skipped += 1;
                self.reapable_left += 1;
            }
            Action::None => {}
        }
    }

    fn count_process(&mut self, r: &ProcReport, effects: bool) {
        if r.reapable() {
            self.reapable += 1;
            match r.action {
                Action::Killed => self.procs_killed += 1,
                Action::None if effects && r.note.is_some() => {}
                Action::None if effects => self.reapable_left += 1,
                Action::Failed | Action::Skipped => self.reapable_left += 1,
                _ => {}
            }
        }
        if r.audit_failed {
            self.audit_failed = true;
        }
    }
}

/// Why a candidate `kill --from` named is not in any fresh snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// Its endpoint was not scanned.
    NotScanned,
    /// Its server could not be listed.
    NotListed,
    /// Its server was listed and the pane is not there.
    Gone,
}

impl Missing {
    fn verdict(self) -> &'static str {
        match self {
            Missing::NotScanned | Missing::NotListed => "unverifiable",
            Missing::Gone => "gone",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Missing::NotScanned => "its endpoint is not among the servers scanned (pass --socket)",
            Missing::NotListed => "its server could not be listed",
            Missing::Gone => "no such pane on the server now",
        }
    }
}

/// The report being written.
pub(super) struct Report<'a> {
    g: &'a Global,
    plan: &'a Plan<'a>,
    out: Out,
    tally: Tally,
}

impl<'a> Report<'a> {
    pub fn new(g: &'a Global, plan: &'a Plan<'a>) -> Report<'a> {
        Report {
            g,
            plan,
            out: Out::new(g.common.json),
            tally: Tally::default(),
        }
    }

    /// The output (for the summary) and the counts.
    pub fn into_parts(self) -> (Out, Tally) {
        (self.out, self.tally)
    }

    fn human(&self) -> bool {
        !self.g.common.json && !self.g.common.quiet
    }

    /// Servers that could not be listed. A dead socket is warned about once (by path, inode
    /// and mtime), so a stale socket file does not make every cron run speak; `-v` and
    /// `--json` always report it.
    pub fn servers(&mut self, ctx: &Ctx, servers: &[Server]) -> CliResult<()> {
        let g = self.g;
        let known_dead = dead_socket_keys_seen(ctx);
        let mut dead_now = Vec::new();
        for s in servers {
            match &s.status {
                ServerStatus::Listed => {}
                ServerStatus::Dead => {
                    self.out.record(
                        &json!({"type": "server", "endpoint": s.endpoint, "status": "dead",
                        "reason": "no server answers on the socket; skipped"}),
                    )?;
                    let key = dead_socket_key(&s.endpoint);
                    let new = !known_dead.contains(&key);
                    dead_now.push(key);
                    if !g.common.json && (new || g.common.verbose > 0) {
                        warn(
                            g.common.quiet,
                            &format!("no server answers on {}; skipped", s.endpoint.display()),
                        );
                    }
                }
                ServerStatus::Failed(e) => {
                    self.out.record(&json!({"type": "server", "endpoint": s.endpoint, "status": "unverifiable", "reason": e}))?;
                    if !g.common.json {
                        warn(
                            g.common.quiet,
                            &format!(
                                "cannot list {}: {e}; its panes are unverifiable",
                                s.endpoint.display()
                            ),
                        );
                    }
                }
            }
        }
        dead_now.sort();
        if dead_now != known_dead {
            let bytes = serde_json::to_vec(&dead_now).unwrap_or_default();
            let _ = team_core::fsutil::atomic_write(&ctx.dead_sockets_path(), &bytes);
        }
        Ok(())
    }

    /// Panes named by `kill --from` that are not in any fresh snapshot: skipped, and said so.
    pub fn missing_candidates(&mut self, servers: &[Server]) -> CliResult<()> {
        let Some(s) = self.plan.sel else {
            return Ok(());
        };
        for (ep, id) in &s.panes {
            let missing = match servers.iter().find(|x| x.endpoint == *ep) {
                None => Missing::NotScanned,
                Some(x) if x.status != ServerStatus::Listed => Missing::NotListed,
                Some(x) if !x.panes.iter().any(|p| p.pane_id == *id) => Missing::Gone,
                _ => continue,
            };
            let (verdict, reason) = (missing.verdict(), missing.reason());
            self.out.record(
                &json!({"type": "pane", "endpoint": ep, "pane_id": id, "verdict": verdict,
                "reason": reason, "action": "skipped"}),
            )?;
            if self.human() {
                self.out.line(&format!(
                    "{verdict:<12} {id} on {}: {reason} -> skipped",
                    ep.display()
                ))?;
            }
        }
        Ok(())
    }

    /// Every selected pane (untagged ones only with `--all`); a human line for the
    /// noteworthy ones (orphan, debt, unverifiable, or acted on), or all with `--all`/`scan`.
    pub fn panes(&mut self, servers: &[Server]) -> CliResult<()> {
        let (g, plan) = (self.g, self.plan);
        for p in servers.iter().flat_map(|s| &s.panes) {
            if !plan.pane_selected(p) || (p.class.verdict == Verdict::Untagged && !g.all) {
                continue;
            }
            self.tally.count_pane(p, plan.effects);
            self.out.record(&pane_json(p))?;
            let noteworthy = matches!(
                p.class.verdict,
                Verdict::Orphan | Verdict::Debt | Verdict::Unverifiable
            ) || p.action != Action::None;
            if !g.common.quiet && (plan.show_all || noteworthy) {
                self.out.line(&pane_line(p, plan.effects))?;
            }
        }
        Ok(())
    }

    /// Team sessions with orphan panes in them (under `kill --from`, only those acted on).
    pub fn sessions(&mut self, sessions: &[SessionReport]) -> CliResult<()> {
        let (g, plan) = (self.g, self.plan);
        for s in sessions {
            if plan.sel.is_some() && s.action == Action::Skipped {
                continue;
            }
            self.out.record(
                &json!({"type": "session", "endpoint": s.endpoint, "session_id": s.session_id,
                "session_name": s.session_name, "team": s.team, "verdict": "orphan",
                "action": if plan.effects { s.action.as_str() } else { "none" }, "reason": s.note}),
            )?;
            if !g.common.quiet && plan.effects && s.action != Action::Skipped {
                self.out.line(&format!(
                    "session      {} ({}) on {}: every pane was ours and reapable -> {}",
                    s.session_name,
                    s.session_id,
                    s.endpoint.display(),
                    s.action.as_str()
                ))?;
            }
        }
        Ok(())
    }

    /// The residue processes (owned ones only with `--all`).
    pub fn processes(&mut self, procs: &[ProcReport]) -> CliResult<()> {
        let (g, plan) = (self.g, self.plan);
        let effects = plan.effects;
        for r in procs {
            if r.class.verdict == Verdict::Owned && !g.all {
                continue;
            }
            self.tally.count_process(r, effects);
            let p = &r.proc;
            self.out.record(
                &json!({"type": "process", "pid": p.id.pid, "start_time": p.id.start_time,
                "supervisor_pid": r.supervisor.pid, "detached": r.detached,
                "owner": p.owner, "worker": p.worker, "team": p.team,
                "verdict": r.class.verdict.as_str(), "reason": r.class.reason,
                "action": if effects { r.action.as_str() } else { "none" }, "note": r.note}),
            )?;
            // A shared daemon is a steady state, not work: cron stays silent about it.
            if !g.common.quiet && (r.class.verdict != Verdict::Shared || g.all || plan.show_all) {
                self.out.line(&format!(
                    "{:<12} process {} ({}{}): {} -> {}{}",
                    r.class.verdict.as_str(),
                    p.id.pid,
                    p.team.as_deref().unwrap_or("?"),
                    p.worker
                        .as_deref()
                        .map(|w| format!(", {w}"))
                        .unwrap_or_default(),
                    r.class.reason,
                    if effects { r.action.as_str() } else { "none" },
                    r.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ))?;
            }
        }
        Ok(())
    }
}

fn pane_json(p: &PaneReport) -> serde_json::Value {
    let mut v = json!({"type": "pane", "endpoint": p.endpoint, "pane_id": p.pane_id,
        "verdict": p.class.verdict.as_str(), "reason": p.class.reason,
        "action": p.action.as_str(), "note": p.note.as_deref().or(p.class.blocker.as_deref())});
    if let Some(r) = &p.row {
        let m = v.as_object_mut().expect("object");
        for (k, x) in [
            ("pane_pid", json!(r.pane_pid)),
            ("session_id", json!(r.session_id)),
            ("session_name", json!(r.session_name)),
            ("window_id", json!(r.window_id)),
            ("server_pid", json!(r.server_pid)),
            ("server_start", json!(r.server_start)),
            ("team", opt(&r.tags.name)),
            ("workspace", opt(&r.tags.workspace)),
            ("owner", opt(&r.tags.owner)),
            ("worker", opt(&r.tags.worker)),
            ("role", opt(&r.tags.role)),
        ] {
            m.insert(k.into(), x);
        }
    }
    v
}

/// An absent tag is `null` in JSON, never `""` (the same as every other tool's output).
fn opt(s: &str) -> serde_json::Value {
    if s.is_empty() {
        serde_json::Value::Null
    } else {
        json!(s)
    }
}

fn pane_line(p: &PaneReport, effects: bool) -> String {
    let who = match &p.row {
        Some(r) if !r.tags.name.is_empty() => {
            let w = if r.tags.role.is_empty() {
                &r.tags.worker
            } else {
                &r.tags.role
            };
            format!(
                " (team {}{})",
                r.tags.name,
                if w.is_empty() {
                    String::new()
                } else {
                    format!(", {w}")
                }
            )
        }
        _ => String::new(),
    };
    let note = p.note.as_deref().or(p.class.blocker.as_deref());
    format!(
        "{:<12} {} on {}{who}: {}{}{}",
        p.class.verdict.as_str(),
        p.pane_id,
        p.endpoint.display(),
        p.class.reason,
        if effects {
            format!(" -> {}", p.action.as_str())
        } else {
            String::new()
        },
        note.map(|n| format!(" ({n})")).unwrap_or_default()
    )
}

/// Identifies one dead socket file: path, inode and modification time.
fn dead_socket_key(p: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(p) {
        Ok(m) => format!(
            "{}|{}|{}",
            p.display(),
            m.ino(),
            m.mtime_nsec() + m.mtime() * 1_000_000_000
        ),
        Err(_) => format!("{}|gone", p.display()),
    }
}

/// The dead sockets already warned about.
fn dead_socket_keys_seen(ctx: &Ctx) -> Vec<String> {
    team_core::fsutil::read(&ctx.dead_sockets_path(), team_core::fsutil::limits::SMALL)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<Vec<String>>(&b).ok())
        .unwrap_or_default()
}
