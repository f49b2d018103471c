//! `team-scale down`: remove workers without losing a task or touching a pane that is not
//! provably theirs.

use serde_json::json;
use team_core::ops::down::{self, DownRequest};
use team_core::ops::teardown::{ProcOutcome, SettleReport, Teardown};
use team_core::paths::{TeamName, WorkerName};
use team_core::{Error, Result};

use crate::cli::DownArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

/// The fail point hook handed to the library.
pub fn fail(name: &str) -> Result<()> {
    team_core::failpoint::hit(name)
}

/// Runs `f` with a teardown context for `team`: its store, its tmux server, the audit log.
pub fn with_teardown<R>(
    ctx: &Ctx,
    team: &TeamName,
    caller: &str,
    op: &'static str,
    grace: std::time::Duration,
    f: impl FnOnce(&Teardown) -> team_core::Result<R>,
) -> CliResult<R> {
    let store = ctx.store(team);
    // Only the team's server, which never changes after `init`: a reader's look, without the
    // state lock (the operation loads the team under its scale lock).
    let endpoint = store.snapshot()?.team.endpoint;
    let tmux = ctx.tmux(&endpoint);
    let audit = ctx.audit();
    // This binary is the supervisor `up` starts (`ops::Env::supervisor`).
    let exes: Vec<std::path::PathBuf> = std::env::current_exe().into_iter().collect();
    let td = Teardown {
        store: &store,
        tmux: &tmux,
        audit: &audit,
        caller: caller.into(),
        op,
        argv: argv(),
        grace,
        supervisor_exes: &exes,
        fail: &fail,
        progress: &crate::out::progress,
        outcomes: None,
    };
    Ok(f(&td)?)
}

/// The caller's argv, for audit records.
pub fn argv() -> Vec<String> {
    std::env::args().collect()
}

/// Prints one record per worker of a teardown.
pub fn print_settle(out: &mut Out, r: &SettleReport) -> CliResult<()> {
    for w in &r.workers {
        let res = w.resources.as_ref();
        out.record(&json!({
            "type": "worker",
            "worker": w.worker,
            "pane_id": w.pane_id,
            "pane": w.pane,
            "removed": w.dropped,
            "blocked": w.blocked,
            "processes": w.processes.iter().map(|p| json!({
                "pid": p.pid, "start_time": p.start_time, "outcome": p.outcome, "reason": p.reason,
            })).collect::<Vec<_>>(),
            "saved_branch": res.and_then(|r| r.saved_branch.clone()),
            "branch_deleted": res.and_then(|r| r.branch_deleted.clone()),
            "branch_kept": res.and_then(|r| r.kept_branch.clone()),
            "branch_kept_reason": res.and_then(|r| r.kept_branch_why.clone()),
            "worktree_kept": res.and_then(|r| r.kept_worktree.clone()),
            "unsavable": res.filter(|r| !r.unsavable.is_empty()).map(|r| json!({
                "ignored": r.unsavable.ignored,
                "nested_repos": r.unsavable.nested_repos,
                "submodules": r.unsavable.submodules,
                "empty_dirs": r.unsavable.empty_dirs,
                "git_entries": r.unsavable.git_entries,
                "staged_differs": r.unsavable.staged_differs,
                "unmerged": r.unsavable.unmerged,
                "worktree_refs": r.unsavable.worktree_refs,
                "history": r.unsavable.history,
                "attributes": r.unsavable.attributes,
                "special_files": r.unsavable.special_files,
                "away_record": r.unsavable.away_record,
            })),
            "tasks_returned": w.tasks_returned,
        }))?;
        let pane = w.pane_id.as_deref().unwrap_or("-");
        if w.dropped {
            out.line(&format!("removed {} (pane {pane} {})", w.worker, w.pane))?;
        } else {
            out.line(&format!(
                "kept {} as removing (pane {pane}): {}",
                w.worker,
                w.blocked.join("; ")
            ))?;
        }
        for p in &w.processes {
            if p.outcome == ProcOutcome::NotOwned {
                out.line(&format!(
                    "  process {} not_owned, not signalled: {}",
                    p.pid,
                    p.reason.as_deref().unwrap_or("")
                ))?;
            }
        }
        if let Some(r) = res {
            if let Some(b) = &r.saved_branch {
                out.line(&format!(
                    "  worktree state of {} saved on branch {b}",
                    w.worker
                ))?;
            }
            if let Some(p) = &r.kept_worktree {
                if r.unsavable.away_record.is_empty() {
                    out.line(&format!(
                        "  worktree {} kept: it holds what git cannot save ({})",
                        p.display(),
                        r.unsavable.describe()
                    ))?;
                } else {
                    out.line(&format!(
                        "  worktree {} kept: {}",
                        p.display(),
                        r.unsavable.describe()
                    ))?;
                }
            }
            if let Some(b) = &r.kept_branch {
                out.line(&format!(
                    "  branch {b} kept: {}",
                    r.kept_branch_why.as_deref().unwrap_or(
                        "no other branch reaches its commits, or a worktree has it checked out"
                    )
                ))?;
            }
        }
    }
    Ok(())
}

pub fn run(ctx: &Ctx, a: DownArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let names = a
        .workers
        .iter()
        .map(|w| WorkerName::new(w))
        .collect::<Result<Vec<_>>>()?;
    if a.count.is_some() && !names.is_empty() {
        return Err(Error::Usage("give a count or --worker names, not both".into()).into());
    }
    if a.count == Some(0) {
        return Err(Error::Usage("the count must be at least 1".into()).into());
    }
    let rep = with_teardown(ctx, &team, "team-scale down", "scale_down", a.grace, |td| {
        down::down(
            td,
            &DownRequest {
                count: a.count,
                names,
                force: a.force,
                drain_timeout: a.drain_timeout,
                scaling_disabled_by_env: ctx.scaling_env_off,
            },
        )
    })?;
    // Returned tasks go to idle workers when the team's policy says so (`--reassign auto`).
    let offered = if rep.tasks_returned.is_empty() {
        Vec::new()
    } else {
        let store = ctx.store(&team);
        let audit = ctx.audit();
        let env = ctx.env(&store, &audit, "team-scale down")?;
        team_core::ops::board::offer(&env, &rep.tasks_returned, &argv(), a.ready_timeout)?
    };
    let mut out = Out::new(ctx.json);
    if !rep.earlier.workers.is_empty() {
        out.line("earlier leftovers:")?;
        print_settle(&mut out, &rep.earlier)?;
    }
    print_settle(&mut out, &rep.settle)?;
    let removed = rep.settle.workers.iter().filter(|w| w.dropped).count();
    let blocked = rep.settle.blocked() || rep.earlier.blocked();
    out.line(&format!(
        "team {team}: {removed} of {} workers removed, {} tasks returned to pending",
        rep.targets.len(),
        rep.tasks_returned.len()
    ))?;
    out.record(&json!({
        "type": "summary", "tmux_invocations": team_core::tmux::invocations(), "team": team, "action": "down", "ok": !blocked,
        "targets": rep.targets, "removed": removed,
        "tasks_returned": rep.tasks_returned,
        "drain_timed_out": rep.drain_timed_out,
        "tasks_offered": offered.iter().map(|(id, w, s)| json!({"task": id, "worker": w, "told": s.word()})).collect::<Vec<_>>(),
    }))?;
    for (id, w, s) in &offered {
        out.line(&format!(
            "task #{id} offered to {w} (reassign auto): {}",
            crate::out::clean(&s.describe())
        ))?;
    }
    out.flush()?;
    Ok(if blocked { 3 } else { 0 })
}
