//! The default mode (scan, then kill) and the engine `scan` and `kill --from` share.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use team_core::lock::{self, Holder};
use team_core::reap::{
    self, Action, Oracle, PaneReport, ProcReport, ServerStatus, TeamKey, Verdict,
};
use team_core::{Error, fsutil};

use team_core::ExitClass;

use crate::cli::Global;
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult, warn};
use crate::out::Out;

/// How long a team's state lock may be waited for while reading its state.
const STATE_WAIT: Duration = Duration::from_secs(5);

/// Candidates named by `kill --from`: lookup keys only.
#[derive(Debug, Default)]
pub struct Selection {
    pub panes: Vec<(PathBuf, String)>,
    pub procs: HashSet<(u32, u64)>,
}

/// What the run does.
#[derive(Debug)]
pub enum Mode {
    /// Scan, then kill every orphan.
    Reap,
    /// Scan only.
    Scan,
    /// Kill the named candidates that are still reapable.
    KillFrom(Selection),
}

#[derive(Default)]
struct Tally {
    panes: u64,
    by_verdict: HashMap<&'static str, u64>,
    killed: u64,
    failed: u64,
    skipped: u64,
    would_kill: u64,
    procs_killed: u64,
    reapable: u64,
    reapable_left: u64,
    audit_failed: bool,
}

/// How a run ends, before it becomes an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Nothing reapable remains (or, without effects, the listing is done): 0.
    Clean,
    /// `--check` found something reapable: 1.
    CheckFound,
    /// Something reapable is left (debt, a failed or skipped kill): 3.
    Left,
    /// Servers' sockets were found but no server answered on any of them: 69.
    NoServer,
    /// Some kills were not done because their audit intent could not be written: 74.
    AuditFailed,
}

impl Outcome {
    fn class(self) -> ExitClass {
        match self {
            Outcome::Clean => ExitClass::Ok,
            Outcome::CheckFound => ExitClass::Refused,
            Outcome::Left => ExitClass::Partial,
            Outcome::NoServer => ExitClass::Unavailable,
            Outcome::AuditFailed => ExitClass::IoErr,
        }
    }
}

fn mode_word(mode: &Mode, g: &Global) -> &'static str {
    match (mode, g.check, g.dry_run) {
        (_, true, _) => "check",
        (Mode::Scan, ..) => "scan",
        (_, _, true) => "dry_run",
        (Mode::Reap, ..) => "reap",
        (Mode::KillFrom(_), ..) => "kill",
    }
}

/// Takes the per-user reaper lock. Busy: one line on stderr naming the holder, a summary
/// with `lock_holder` under `--json`, exit 75.
fn take_lock(ctx: &Ctx, g: &Global, mode: &Mode) -> CliResult<lock::LockGuard> {
    let path = ctx.lock_path();
    if let Some(dir) = path.parent() {
        fsutil::create_private_dir(dir)?;
        check_private_dir(dir)?;
    }
    match lock::acquire(path, Duration::ZERO, &Holder::me("team-reap")) {
        Ok(l) => Ok(l),
        Err(Error::Busy { holder, .. }) => {
            let mut out = Out::new(g.common.json);
            out.record(
                &json!({"type": "summary", "mode": mode_word(mode, g), "ok": false,
                "exit": ExitClass::TempFail.code(), "lock": path, "lock_holder": holder}),
            )?;
            out.flush()?;
            Err(CliError::fail(
                ExitClass::TempFail,
                format!("another reaper holds {}: {holder}", path.display()),
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// The lock's directory must be ours and private, or another user could hold our lock or
/// swap the lock file for a link.
fn check_private_dir(dir: &std::path::Path) -> CliResult<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).map_err(|e| Error::io("inspect", dir, e))?;
    let mine = m.uid() == rustix::process::getuid().as_raw();
    if !m.is_dir() || !mine || m.mode() & 0o077 != 0 {
        return Err(Error::UnsafePath {
            path: dir.to_path_buf(),
            why: "the reaper lock's directory must be a directory of ours with mode 0700".into(),
        }
        .into());
    }
    Ok(())
}

pub fn run(ctx: &Ctx, g: &Global, mode: Mode) -> CliResult<i32> {
    let effects = !matches!(mode, Mode::Scan) && !g.check;
    let kills = effects && !g.dry_run;
    // The per-user reaper lock: a second concurrent run exits 75 at once.
    let _reaper = if kills {
        Some(take_lock(ctx, g, &mode)?)
    } else {
        None
    };
    let cfg = &ctx.cfg;
    let mut oracle = Oracle::new(kills, STATE_WAIT);
    let mut servers = reap::scan(cfg, &mut oracle)?;

    let sel = match &mode {
        Mode::KillFrom(s) => Some(s),
        _ => None,
    };
    let in_scope = |k: Option<&TeamKey>| match &g.only_under {
        None => true,
        Some(d) => k.is_some_and(|k| k.root.starts_with(d)),
    };
    let pane_selected = |p: &PaneReport| {
        in_scope(p.key.as_ref())
            && match sel {
                None => true,
                Some(s) => s
                    .panes
                    .iter()
                    .any(|(e, id)| *e == p.endpoint && *id == p.pane_id),
            }
    };
    if effects {
        reap::kill_panes(
            cfg,
            &mut oracle,
            &mut servers,
            &pane_selected,
            g.dry_run,
            g.grace,
        );
    }

    let mut procs: Vec<ProcReport> = Vec::new();
    if !g.no_processes {
        let mut skip = HashSet::new();
        let mut hints: HashMap<String, TeamKey> = HashMap::new();
        for p in servers.iter().flat_map(|s| &s.panes) {
            if let Some(r) = &p.row {
                skip.insert(r.pane_pid);
                if let Some(k) = &p.key {
                    hints
                        .entry(r.tags.owner.clone())
                        .or_insert_with(|| k.clone());
                }
            }
        }
        match reap::scan_processes(cfg, &mut oracle, &skip, &hints) {
            Ok((mut found, unreadable)) => {
                if unreadable > 0 && g.common.verbose > 0 {
                    warn(
                        g.common.quiet,
                        &format!("{unreadable} processes could not be read"),
                    );
                }
                let proc_selected = |r: &ProcReport| {
                    in_scope(r.key.as_ref())
                        && match sel {
                            None => true,
                            Some(s) => s.procs.contains(&(r.proc.id.pid, r.proc.id.start_time)),
                        }
                };
                if effects {
                    reap::kill_processes(
                        cfg,
                        &mut oracle,
                        &mut found,
                        &proc_selected,
                        g.dry_run,
                        g.grace,
                    );
                }
                procs = found.into_iter().filter(|r| proc_selected(r)).collect();
            }
            Err(e) => warn(g.common.quiet, &format!("cannot scan processes: {e}")),
        }
    }
    drop(oracle); // releases the teams' scale locks

    let sessions = reap::sessions(&servers);
    let mut out = Out::new(g.common.json);
    let mut t = Tally::default();
    let human_all = (matches!(mode, Mode::Scan) && !g.check) || g.all;

    // A dead socket is warned about once (by path, inode and mtime), so a stale socket file
    // does not make every cron run speak; `-v` and `--json` always report it.
    let known_dead = dead_socket_keys_seen(ctx);
    let mut dead_now = Vec::new();
    for s in &servers {
        match &s.status {
            ServerStatus::Listed => {}
            ServerStatus::Dead => {
                out.record(
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
                out.record(&json!({"type": "server", "endpoint": s.endpoint, "status": "unverifiable", "reason": e}))?;
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
    // Panes named by `kill --from` that are not in any fresh snapshot.
    if let Some(s) = sel {
        for (ep, id) in &s.panes {
            let server = servers.iter().find(|x| x.endpoint == *ep);
            let (verdict, reason) = match server {
                None => (
                    "unverifiable",
                    "its endpoint is not among the servers scanned (pass --socket)",
                ),
                Some(x) if x.status != ServerStatus::Listed => {
                    ("unverifiable", "its server could not be listed")
                }
                Some(x) if !x.panes.iter().any(|p| p.pane_id == *id) => {
                    ("gone", "no such pane on the server now")
                }
                _ => continue,
            };
            out.record(
                &json!({"type": "pane", "endpoint": ep, "pane_id": id, "verdict": verdict,
                "reason": reason, "action": "skipped"}),
            )?;
            if !g.common.json && !g.common.quiet {
                out.line(&format!(
                    "{verdict:<12} {id} on {}: {reason} -> skipped",
                    ep.display()
                ))?;
            }
        }
    }
    for p in servers.iter().flat_map(|s| &s.panes) {
        if !pane_selected(p) || (p.class.verdict == Verdict::Untagged && !g.all) {
            continue;
        }
        tally_pane(&mut t, p, effects);
        out.record(&pane_json(p))?;
        let noteworthy = matches!(
            p.class.verdict,
            Verdict::Orphan | Verdict::Debt | Verdict::Unverifiable
        ) || p.action != Action::None;
        if !g.common.quiet && (human_all || noteworthy) {
            out.line(&pane_line(p, effects))?;
        }
    }
    for s in &sessions {
        if sel.is_some() && s.action == Action::Skipped {
            continue;
        }
        out.record(
            &json!({"type": "session", "endpoint": s.endpoint, "session_id": s.session_id,
            "session_name": s.session_name, "team": s.team, "verdict": "orphan",
            "action": if effects { s.action.as_str() } else { "none" }, "reason": s.note}),
        )?;
        if !g.common.quiet && effects && s.action != Action::Skipped {
            out.line(&format!(
                "session      {} ({}) on {}: every pane was ours and reapable -> {}",
                s.session_name,
                s.session_id,
                s.endpoint.display(),
                s.action.as_str()
            ))?;
        }
    }
    for r in &procs {
        if r.class.verdict == Verdict::Owned && !g.all {
            continue;
        }
        if r.reapable() {
            t.reapable += 1;
            match r.action {
                Action::Killed => t.procs_killed += 1,
                Action::None if effects && r.note.is_some() => {}
                Action::None if effects => t.reapable_left += 1,
                Action::Failed | Action::Skipped => t.reapable_left += 1,
                _ => {}
            }
        }
        if r.audit_failed {
            t.audit_failed = true;
        }
        let p = &r.proc;
        out.record(
            &json!({"type": "process", "pid": p.id.pid, "start_time": p.id.start_time,
            "supervisor_pid": r.supervisor.pid, "detached": r.detached,
            "owner": p.owner, "worker": p.worker, "team": p.team,
            "verdict": r.class.verdict.as_str(), "reason": r.class.reason,
            "action": if effects { r.action.as_str() } else { "none" }, "note": r.note}),
        )?;
        // A shared daemon is a steady state, not work: cron stays silent about it.
        if !g.common.quiet && (r.class.verdict != Verdict::Shared || g.all || human_all) {
            out.line(&format!(
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

    let no_server = !servers.is_empty() && servers.iter().all(|s| s.status == ServerStatus::Dead);
    let outcome = if t.audit_failed {
        Outcome::AuditFailed
    } else if no_server {
        Outcome::NoServer
    } else if g.check && t.reapable > 0 {
        Outcome::CheckFound
    } else if kills && t.reapable_left > 0 {
        Outcome::Left
    } else {
        Outcome::Clean
    };
    let code = outcome.class().code();
    let mode_word = mode_word(&mode, g);
    let v = |k: &str| t.by_verdict.get(k).copied().unwrap_or(0);
    out.record(&json!({"type": "summary", "tmux_invocations": team_core::tmux::invocations(), "mode": mode_word,
        "servers": servers.len(),
        "dead_servers": servers.iter().filter(|s| s.status == ServerStatus::Dead).count(),
        "panes": t.panes, "owned": v("owned"), "orphan": v("orphan"), "debt": v("debt"),
        "busy": v("busy"), "unverifiable": v("unverifiable"),
        "killed": t.killed, "would_kill": t.would_kill, "failed": t.failed, "skipped": t.skipped,
        "processes_killed": t.procs_killed, "reapable": t.reapable,
        "reapable_left": t.reapable_left, "ok": outcome == Outcome::Clean,
        "exit": code}))?;
    out.flush()?;
    match outcome {
        Outcome::AuditFailed => Err(CliError::fail(
            outcome.class(),
            "some kills were not done because their audit intent could not be written",
        )
        .with_hint("check the audit log's directory and disk, or pass --audit-log")),
        Outcome::NoServer => Err(CliError::fail(
            outcome.class(),
            format!(
                "no tmux server answers on any of the {} sockets found; nothing could be checked",
                servers.len()
            ),
        )),
        _ => Ok(code),
    }
}

fn tally_pane(t: &mut Tally, p: &PaneReport, effects: bool) {
    if p.class.verdict != Verdict::Untagged {
        t.panes += 1;
        *t.by_verdict.entry(p.class.verdict.as_str()).or_default() += 1;
    }
    if p.audit_failed {
        t.audit_failed = true;
    }
    if !p.reapable() {
        return;
    }
    t.reapable += 1;
    if !effects {
        return;
    }
    match p.action {
        Action::Killed => t.killed += 1,
        Action::WouldKill => t.would_kill += 1,
        Action::Failed => {
            t.failed += 1;
            t.reapable_left += 1;
        }
        Action::Skipped => {
            t.skipped += 1;
            t.reapable_left += 1;
        }
        Action::None => {}
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
