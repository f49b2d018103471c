//! `team-scale status`: workers with live proof from one snapshot, lifecycle, pending
//! operations, cleanup debt and the lock holder.

use serde_json::json;
use team_core::model::{Lifecycle, Task, TaskStatus, TeamState};
use team_core::ops::board;
use team_core::paths::{TeamName, WorkerName};
use team_core::proof::PaneProof;
use team_core::view;

use crate::cli::StatusArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::{Out, clean};

pub fn run(ctx: &Ctx, a: StatusArgs) -> CliResult<i32> {
    let team_name = TeamName::new(&a.team)?;
    if a.format == "tmux" {
        return super::watch::tmux_line(ctx, &team_name);
    }
    if a.watch {
        return super::watch::watch(ctx, &team_name, a.interval);
    }
    let store = ctx.store(&team_name);
    // A reader: no lock, so a dashboard polling `status` never slows down or blocks a scale
    // operation (and is never refused as busy).
    let snap = store.snapshot()?;
    let in_flight = snap.in_flight;
    let mut team = snap.team;
    let tmux = ctx.tmux(&team.endpoint);
    let listing = tmux.list();

    // The team follows its session when the tools re-created or renamed it.
    // `Some(false)`: provably missing; `None`: the listing could not tell.
    let mut session = view::session_present(&team, &listing);
    if session == Some(false)
        && let Some((id, name)) = view::rebound_session(&team, &listing)
    {
        let (t, ()) = store.transact("status", |t, _| {
            t.session.id = id.clone();
            t.session.name = name.clone();
            Ok(())
        })?;
        store.append_event(
            &t,
            "session_rebound",
            json!({"session_id": id, "session": name}),
        )?;
        team = t;
        session = Some(true);
    }
    let session_state = match session {
        Some(true) => "present",
        Some(false) => "session_missing",
        None => "unverifiable",
    };

    let leader = view::prove_leader(&team, &listing);
    let holder = store.scale_holder()?;
    // Tasks are informational here: an unreadable task file must not hide the workers.
    let tasks = store.tasks().unwrap_or_default();
    let mut out = Out::new(ctx.json);
    out.line(&format!(
        "team {} ({}) on {}  session {} [{}]  leader {} [{}]",
        team.name,
        match team.state {
            TeamState::Active => "active",
            TeamState::Stopped => "stopped",
        },
        team.endpoint.display(),
        team.session.name,
        session_state,
        team.leader.pane.pane_id,
        leader.liveness(),
    ))?;
    // Every worker's status through `workers/` opened once.
    // A report that cannot be read (a symlinked `status.json`, a `workers` that is a file) is
    // shown as unreadable, not silently as no report.
    let (workers, dir_error) = match store.workers_dir() {
        Ok(d) => (d, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut unreadable: Vec<String> = Vec::new();
    if let Some(e) = &dir_error {
        unreadable.push(format!("reports: cannot be read: {}", clean(e)));
    }
    for w in &team.workers {
        let proof = view::prove_worker(&team, w, &listing);
        let liveness = proof.as_ref().map_or("none", PaneProof::liveness);
        let (status, report_error) = match &dir_error {
            Some(e) => (None, Some(e.clone())),
            None => match store.status_for(workers.as_ref(), w) {
                Ok(s) => (s, None),
                Err(e) => {
                    unreadable.push(format!(
                        "{}: report cannot be read: {}",
                        w.name,
                        clean(&e.to_string())
                    ));
                    (None, Some(e.to_string()))
                }
            },
        };
        let lifecycle = lifecycle_word(w.lifecycle);
        let task = current_task(&tasks, &w.name);
        let forgettable =
            w.lifecycle == Lifecycle::Removing && matches!(proof, Some(PaneProof::Mismatch(_)));
        out.record(&json!({
            "type": "worker",
            "worker": w.name,
            "index": w.index,
            "role": w.role,
            "lifecycle": lifecycle,
            "pane_id": w.pane.as_ref().map(|p| p.pane_id.clone()),
            "pane_pid": w.pane.as_ref().map(|p| p.pane_pid),
            "liveness": liveness,
            "reason": proof.as_ref().and_then(PaneProof::reason),
            "status": status.as_ref().map(|s| s.state),
            "note": status.as_ref().and_then(|s| s.note.clone()),
            "reported_at": status.as_ref().map(|s| s.updated_at.clone()),
            "report_error": report_error,
            "task": task.map(|t| json!({"id": t.id, "subject": t.subject, "status": board::status_word(t.status)})),
            "tasks": tasks.iter().filter(|t| t.owner.as_ref() == Some(&w.name) && unfinished(t)).map(|t| t.id).collect::<Vec<_>>(),
            "forgettable": forgettable,
            "incarnation": w.incarnation,
            "op_id": w.op_id,
            "removal_reasons": w.removal_reasons,
        }))?;
        out.line(&format!(
            "  {:<10} {:<9} {:<5} {:<12} {:<6} {}{}{}",
            w.name.as_str(),
            lifecycle,
            w.pane.as_ref().map_or("-", |p| p.pane_id.as_str()),
            liveness,
            status
                .as_ref()
                .map_or("-".to_string(), |s| format!("{:?}", s.state).to_lowercase()),
            task.map_or("-".to_string(), |t| format!(
                "#{} {} [{}]",
                t.id,
                clean(&short(&t.subject, 40)),
                board::status_word(t.status)
            )),
            status
                .as_ref()
                .and_then(|s| s.note.as_deref())
                .map_or(String::new(), |n| format!(
                    "  note: {}",
                    clean(&short(n, 60))
                )),
            if w.removal_reasons.is_empty() {
                String::new()
            } else {
                format!("  ({})", w.removal_reasons.join("; "))
            }
        ))?;
        if forgettable {
            out.line(&format!(
                "    its pane is no longer ours (respawned or reused); the tools will never touch it. If that is so, `team-scale forget {} --worker {}` drops the record and leaves the pane alone",
                team.name, w.name
            ))?;
        }
    }
    for u in &unreadable {
        out.line(u)?;
    }
    // Removed workers' files the background deletion has not deleted after a minute.
    let trash_left = team_core::ops::resources::trash_left(
        &ctx.root,
        &team.name,
        std::time::Duration::from_secs(60),
    );
    let active = team.in_state(Lifecycle::Active).count();
    let pending: Vec<_> = team.in_state(Lifecycle::Pending).collect();
    let removing = team.in_state(Lifecycle::Removing).count();
    let mut ops: Vec<String> = pending.iter().map(|w| w.op_id.to_string()).collect();
    ops.sort();
    ops.dedup();
    out.record(&json!({
        "type": "summary",
        "team": team.name,
        "owner_id": team.owner_id,
        "state": match team.state { TeamState::Active => "active", TeamState::Stopped => "stopped" },
        "generation": team.generation,
        "endpoint": team.endpoint,
        "session": team.session.name,
        "session_id": team.session.id,
        "session_state": session_state,
        "leader_pane_id": team.leader.pane.pane_id,
        "leader_liveness": leader.liveness(),
        "residue_policy": team.settings.residue,
        "operation_in_flight": in_flight,
        "workers": active,
        "pending": pending.len(),
        "pending_ops": ops,
        "removing": removing,
        "max_workers": team.settings.max_workers,
        "scaling": team.settings.scaling,
        "reassign": team.settings.reassign,
        "tasks": {
            "total": tasks.len(),
            "pending": tasks.iter().filter(|t| t.status == TaskStatus::Pending).count(),
            "in_progress": tasks.iter().filter(|t| t.status == TaskStatus::InProgress).count(),
            "completed": tasks.iter().filter(|t| t.status == TaskStatus::Completed).count(),
            "failed": tasks.iter().filter(|t| t.status == TaskStatus::Failed).count(),
        },
        "lock_holder": holder.as_ref().map(|h| json!({"pid": h.pid, "op": h.op, "since": h.since})),
        "trash_left": trash_left.as_ref().ok(),
    }))?;
    out.line(&format!(
        "{active} active, {} pending, {removing} removing (cleanup debt), max {}, detached residue: {}{}",
        pending.len(),
        team.settings.max_workers,
        team.settings.residue.word(),
        holder.map_or(String::new(), |h| format!("; scale lock held by {h}"))
    ))?;
    if in_flight {
        out.line("an operation is in flight (a journal is being applied); `team-scale reconcile` finishes one that was cut short")?;
    }
    let trash = ctx.root.trash_dir(&team.name);
    match trash_left {
        Ok(0) => {}
        Ok(n) => out.line(&format!(
            "trash: {n} entr{} of removed workers not deleted for over a minute in {} (each teardown retries; what stays needs removing by hand)",
            if n == 1 { "y" } else { "ies" },
            clean(&trash.display().to_string())
        ))?,
        Err(e) => out.line(&format!("trash: cannot be read: {}", clean(&e.to_string())))?,
    }
    out.flush()?;
    Ok(0)
}

/// Whether a task is not finished yet.
pub fn unfinished(t: &Task) -> bool {
    matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress)
}

/// The task a worker is on: its in-progress one, else its first pending one.
pub fn current_task<'t>(tasks: &'t [Task], w: &WorkerName) -> Option<&'t Task> {
    let mine = || tasks.iter().filter(|t| t.owner.as_ref() == Some(w));
    mine()
        .find(|t| t.status == TaskStatus::InProgress)
        .or_else(|| mine().find(|t| t.status == TaskStatus::Pending))
}

/// `s` cut to `n` characters (with an ellipsis).
pub fn short(s: &str, n: usize) -> String {
    let first_line = s.lines().next().unwrap_or("");
    if first_line.chars().count() <= n && !s.contains('\n') {
        return first_line.to_string();
    }
    let mut v: String = first_line.chars().take(n.saturating_sub(1)).collect();
    v.push('…');
    v
}

pub fn lifecycle_word(l: Lifecycle) -> &'static str {
    match l {
        Lifecycle::Pending => "pending",
        Lifecycle::Active => "active",
        Lifecycle::Removing => "removing",
    }
}
