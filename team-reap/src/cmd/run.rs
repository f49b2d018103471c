//! The default mode (scan, then kill) and the engine `scan` and `kill --from` share.
//!
//! [`run`] is the list of the engine's steps; each step is a function here, and the
//! report (step 6) is in [`report`]. What a step hands the next is typed ([`Plan`],
//! [`ProcReport`]s, [`report::Tally`], [`Outcome`]), never a message string.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`team-reap` exits 69** when tmux is not on `PATH`, or when sockets were found but no
//!   server gave a usable listing on any of them (none answers, or every answer failed: silent,
//!   garbled, empty), even with `-q`: cron must not read "cannot see" as "nothing to do". No
//!   socket at all is exit 0 (there is nothing of ours to reap).

mod report;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use team_core::lock::{self, Holder};
use team_core::reap::{self, Oracle, PaneReport, ProcReport, Server, ServerStatus, TeamKey};
use team_core::{Error, fsutil};

use team_core::ExitClass;

use crate::cli::Global;
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult, warn};
use crate::out::Out;

use report::{Report, Tally};

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

/// What this run may do and which candidates it looks at, from the mode and the flags.
struct Plan<'a> {
    /// It acts, or says what it would do (not `scan`, not `--check`).
    effects: bool,
    /// It really kills (effects without `--dry-run`).
    kills: bool,
    /// The candidates `kill --from` named; `None`: every candidate.
    sel: Option<&'a Selection>,
    /// `--only-under`: act only on teams whose state root lies under it.
    only_under: Option<&'a Path>,
    /// Human lines for every pane and process, not only the noteworthy ones.
    show_all: bool,
}

impl<'a> Plan<'a> {
    fn new(g: &'a Global, mode: &'a Mode) -> Plan<'a> {
        let effects = !matches!(mode, Mode::Scan) && !g.check;
        Plan {
            effects,
            kills: effects && !g.dry_run,
            sel: match mode {
                Mode::KillFrom(s) => Some(s),
                _ => None,
            },
            only_under: g.only_under.as_deref(),
            show_all: (matches!(mode, Mode::Scan) && !g.check) || g.all,
        }
    }

    fn in_scope(&self, k: Option<&TeamKey>) -> bool {
        match self.only_under {
            None => true,
            Some(d) => k.is_some_and(|k| k.root.starts_with(d)),
        }
    }

    /// In scope and, under `kill --from`, named.
    fn pane_selected(&self, p: &PaneReport) -> bool {
        self.in_scope(p.key.as_ref())
            && match self.sel {
                None => true,
                Some(s) => s
                    .panes
                    .iter()
                    .any(|(e, id)| *e == p.endpoint && *id == p.pane_id),
            }
    }

    /// In scope and, under `kill --from`, named.
    fn proc_selected(&self, r: &ProcReport) -> bool {
        self.in_scope(r.key.as_ref())
            && match self.sel {
                None => true,
                Some(s) => s.procs.contains(&(r.proc.id.pid, r.proc.id.start_time)),
            }
    }
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

/// The engine of every mode, in seven steps:
///
/// 1. **lock**: a run that kills takes the per-user reaper lock ([`take_lock`]); a second
///    concurrent run exits 75 at once.
/// 2. **scan servers**: list every server and classify every pane (`reap::scan`), reading
///    each team's state through the [`Oracle`] (which, in a run that kills, holds the teams'
///    scale locks).
/// 3. **kill panes**: with effects, the selected reapable panes are killed, or would be
///    (`reap::kill_panes`).
/// 4. **processes**: unless `--no-processes`, find the residue processes and, with effects,
///    kill the selected ones ([`processes`]).
/// 5. **release**: the teams' scale locks are released (the oracle is dropped) before
///    anything is written.
/// 6. **report**: one record (and maybe a human line) per server problem, missing candidate,
///    pane, session and process, counted in a [`Tally`] ([`report`]).
/// 7. **decide and finish**: the tally becomes an [`Outcome`] ([`decide`]), then the summary
///    line and the exit status ([`finish`]).
pub fn run(ctx: &Ctx, g: &Global, mode: Mode) -> CliResult<i32> {
    let plan = Plan::new(g, &mode);
    // 1. lock
    let _reaper = if plan.kills {
        Some(take_lock(ctx, g, &mode)?)
    } else {
        None
    };
    // 2. scan servers
    let cfg = &ctx.cfg;
    let mut oracle = Oracle::new(plan.kills, STATE_WAIT).lock_only_under(plan.only_under);
    let mut servers = reap::scan(cfg, &mut oracle)?;
    // 3. kill panes
    if plan.effects {
        let select = |p: &PaneReport| plan.pane_selected(p);
        reap::kill_panes(cfg, &mut oracle, &mut servers, &select, g.dry_run, g.grace);
    }
    // 4. processes
    let procs = processes(ctx, g, &plan, &mut oracle, &servers);
    // 5. release
    drop(oracle);
    // 6. report
    let sessions = reap::sessions(&servers);
    let mut report = Report::new(g, &plan);
    report.servers(ctx, &servers)?;
    report.missing_candidates(&servers)?;
    report.panes(&servers)?;
    report.sessions(&sessions)?;
    report.processes(&procs)?;
    // 7. decide and finish
    let (mut out, tally) = report.into_parts();
    let outcome = decide(g, &plan, &servers, &tally);
    finish(g, &mode, &servers, &tally, outcome, &mut out)
}

/// Step 1: takes the per-user reaper lock. Busy: one line on stderr naming the holder, a
/// summary with `lock_holder` under `--json`, exit 75.
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

/// Step 4: the residue processes (workers' processes whose pane is no longer listed) that
/// the plan selects, killed (or would be) when the run has effects. Empty with
/// `--no-processes`, or when `/proc` cannot be scanned (a warning says so).
fn processes(
    ctx: &Ctx,
    g: &Global,
    plan: &Plan,
    oracle: &mut Oracle,
    servers: &[Server],
) -> Vec<ProcReport> {
    if g.no_processes {
        return Vec::new();
    }
    // A listed pane's process is the pane's, not residue; its tags hint at its team. A pane
    // this run killed is no longer there: what its supervisor still holds (a detached
    // process that outlived the hangup) is residue, reaped in this same run.
    let mut skip = HashSet::new();
    let mut hints: HashMap<String, TeamKey> = HashMap::new();
    for p in servers.iter().flat_map(|s| &s.panes) {
        if let Some(r) = &p.row {
            if p.action != reap::Action::Killed {
                skip.insert(r.pane_pid);
            }
            if let Some(k) = &p.key {
                hints
                    .entry(r.tags.owner.clone())
                    .or_insert_with(|| k.clone());
            }
        }
    }
    let (mut found, unreadable) = match reap::scan_processes(&ctx.cfg, oracle, &skip, &hints) {
        Ok(x) => x,
        Err(e) => {
            warn(g.common.quiet, &format!("cannot scan processes: {e}"));
            return Vec::new();
        }
    };
    if unreadable > 0 && g.common.verbose > 0 {
        warn(
            g.common.quiet,
            &format!("{unreadable} processes could not be read"),
        );
    }
    if plan.effects {
        let select = |r: &ProcReport| plan.proc_selected(r);
        reap::kill_processes(&ctx.cfg, oracle, &mut found, &select, g.dry_run, g.grace);
    }
    found
        .into_iter()
        .filter(|r| plan.proc_selected(r))
        .collect()
}

/// Step 7a: how the run ends. An unwritable audit intent outranks everything (74), then no
/// server answering at all (69), then `--check` finding work (1), then work left by a run
/// that kills (3).
fn decide(g: &Global, plan: &Plan, servers: &[Server], t: &Tally) -> Outcome {
    // A socket whose listing failed (a silent or garbled answer) saw nothing either.
    let no_server = !servers.is_empty() && servers.iter().all(|s| s.status != ServerStatus::Listed);
    if t.audit_failed {
        Outcome::AuditFailed
    } else if no_server {
        Outcome::NoServer
    } else if g.check && t.reapable > 0 {
        Outcome::CheckFound
    } else if plan.kills && t.reapable_left > 0 {
        Outcome::Left
    } else {
        Outcome::Clean
    }
}

/// Step 7b: the summary line, then the exit status (74 and 69 as errors with a message).
fn finish(
    g: &Global,
    mode: &Mode,
    servers: &[Server],
    t: &Tally,
    outcome: Outcome,
    out: &mut Out,
) -> CliResult<i32> {
    let code = outcome.class().code();
    let mode_word = mode_word(mode, g);
    let v = |k| t.by_verdict.get(&k).copied().unwrap_or(0);
    use team_core::reap::Verdict::{Busy, Debt, Orphan, Owned, Unverifiable};
    out.record(&json!({"type": "summary", "tmux_invocations": team_core::tmux::invocations(), "mode": mode_word,
        "servers": servers.len(),
        "dead_servers": servers.iter().filter(|s| s.status == ServerStatus::Dead).count(),
        "panes": t.panes, "owned": v(Owned), "orphan": v(Orphan), "debt": v(Debt),
        "busy": v(Busy), "unverifiable": v(Unverifiable),
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
            if servers.iter().all(|s| s.status == ServerStatus::Dead) {
                format!(
                    "no tmux server answers on any of the {} sockets found; nothing could be checked",
                    servers.len()
                )
            } else {
                format!(
                    "no tmux server gave a usable listing on any of the {} sockets found (see the unverifiable ones above); nothing could be checked",
                    servers.len()
                )
            },
        )),
        _ => Ok(code),
    }
}
