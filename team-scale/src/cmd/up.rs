//! `team-scale up`: add workers to a live team, all or nothing.

use std::io::Read;

use serde_json::json;
use team_core::Error;
use team_core::ops::Env;
use team_core::ops::up::{UpRequest, parse_tasks, up};
use team_core::paths::{RoleName, TeamName};

use crate::cli::UpArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: UpArgs) -> CliResult<i32> {
    // Validate the arguments and the task input before anything else.
    let team = TeamName::new(&a.team)?;
    if a.n == 0 && a.tasks.is_none() {
        return Err(Error::Usage(
            "N must be at least 1 (`up TEAM 0 --tasks FILE` adds tasks for existing members, as `task add` does)".into(),
        )
        .into());
    }
    let role = a.role.as_deref().map(RoleName::new).transpose()?;
    let tasks = match &a.tasks {
        None => Vec::new(),
        Some(p) if p.as_os_str() == "-" => {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .map_err(|e| Error::io("read", "<stdin>", e))?;
            parse_tasks(&b)?
        }
        Some(p) => {
            let b = std::fs::read(p).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::NotFound {
                    what: "task file",
                    path: p.clone(),
                },
                _ => Error::io("read", p, e),
            })?;
            parse_tasks(&b)?
        }
    };
    if a.n == 0 {
        // Tasks only: the same as `task add`.
        return super::task::add_specs(ctx, &team, &tasks, a.ready_timeout);
    }
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let env = Env {
        store: &store,
        audit: &audit,
        tmux_bin: ctx.tmux_bin.clone(),
        tmux_config: ctx.tmux_config.clone(),
        caller: "team-scale up".into(),
        progress: &crate::out::progress,
        supervisor: std::env::current_exe()
            .map_err(|e| Error::io("find", "the team-scale binary", e))?,
    };
    let req = UpRequest {
        count: a.n,
        role,
        tasks,
        ready_timeout: a.ready_timeout,
        argv: std::env::args().collect(),
        scaling_disabled_by_env: ctx.scaling_env_off,
    };
    let report = match up(&env, &req) {
        Ok(r) => r,
        Err(e) => {
            // Each new worker's result on stdout too, for scripts and leader agents; the
            // error and its hint go to stderr as for any error.
            if let Error::Undelivered { workers, .. } = &e {
                let mut out = Out::new(ctx.json);
                for w in workers {
                    out.record(&json!({
                        "type": "worker", "worker": w.worker, "lifecycle": "rolled_back",
                        "delivery": w.result, "delivery_detail": w.detail, "last_lines": w.last_lines,
                    }))?;
                }
                out.record(&json!({
                    "type": "summary", "team": team, "action": "up", "ok": false,
                    "added": [], "rolled_back": workers.iter().map(|w| &w.worker).collect::<Vec<_>>(),
                }))?;
                out.flush()?;
            }
            return Err(e.into());
        }
    };

    for w in &report.warnings {
        team_cli::say_line!("team-scale: warning: {w}");
    }
    let mut out = Out::new(ctx.json);
    // Tasks for members that existed before this call: their inboxes and their agents.
    let existing: Vec<team_core::model::Task> = report
        .tasks
        .iter()
        .filter(|t| {
            t.owner
                .as_ref()
                .is_some_and(|o| !report.added.iter().any(|a| &a.name == o))
        })
        .cloned()
        .collect();
    let told = if existing.is_empty() {
        true
    } else {
        let notices = team_core::ops::board::tell_existing_owners(
            &env,
            &existing,
            &req.argv,
            a.ready_timeout,
        )?;
        super::task::print_notices(&mut out, &notices, "new tasks")?
    };
    for w in &report.added {
        out.record(&json!({
            "type": "worker",
            "worker": w.name,
            "index": w.index,
            "role": w.role,
            "lifecycle": "active",
            "pane_id": w.pane.pane_id,
            "pane_pid": w.pane.pane_pid,
            "session_id": w.pane.session_id,
            "window_id": w.pane.window_id,
            "new_window": w.new_window,
            "incarnation": w.incarnation,
            "op_id": report.op_id,
            "ready": w.readiness.word(),
            "delivery": w.delivery.as_ref().map_or("skipped", |d| d.word()),
            "delivery_detail": w.delivery.as_ref().map(|d| d.describe()),
            "tasks": w.tasks,
            "inbox": w.inbox,
            "worktree": w.worktree.as_ref().map(|t| t.path.clone()),
            "branch": w.worktree.as_ref().and_then(|t| t.branch.clone()),
        }))?;
        out.line(&format!(
            "added {} in pane {} (window {}{}), {}{}{}",
            w.name,
            w.pane.pane_id,
            w.pane.window_id,
            if w.new_window { ", new" } else { "" },
            w.delivery
                .as_ref()
                .map_or("delivery skipped".to_string(), |d| d.describe()),
            if w.tasks.is_empty() {
                String::new()
            } else {
                format!(
                    ", tasks {}",
                    w.tasks
                        .iter()
                        .map(|t| format!("#{t}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            },
            w.worktree.as_ref().map_or(String::new(), |t| format!(
                ", worktree {}",
                t.path.display()
            ))
        ))?;
    }
    let settled: Vec<_> = report
        .settled
        .workers
        .iter()
        .map(|w| json!({"worker": w.worker, "op_id": w.op_id, "cleaned": w.cleaned(), "reasons": w.reasons}))
        .collect();
    out.record(&json!({
        "type": "summary",
        "team": team,
        "action": "up",
        "ok": true,
        "op_id": report.op_id,
        "added": report.added.iter().map(|w| w.name.to_string()).collect::<Vec<_>>(),
        "tasks": report.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        "members": report.team.in_state(team_core::model::Lifecycle::Active).count(),
        "max_workers": report.team.settings.max_workers,
        "generation": report.team.generation,
        "settled": settled,
        "warnings": report.warnings,
        "agent": report.agent,
        "tmux_invocations": team_core::tmux::invocations(),
        "owners_told": told,
    }))?;
    out.line(&format!(
        "team {team}: {} added ({} members of max {}), {} tasks created, op {}",
        report.added.len(),
        report
            .team
            .in_state(team_core::model::Lifecycle::Active)
            .count(),
        report.team.settings.max_workers,
        report.tasks.len(),
        report.op_id
    ))?;
    out.flush()?;
    if !told {
        team_cli::error::warn(
            false,
            "a member given a task was not told (see above); `team-scale send` tells it again",
        );
    }
    Ok(0)
}
