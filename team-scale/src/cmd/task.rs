//! `team-scale task`: the task board. A worker claims, finishes or fails its tasks; the leader
//! lists, shows, adds and assigns them (`team_core::ops::board`), and owners are told through
//! proven delivery.

use std::io::Read;

use serde_json::{Value, json};
use team_core::Error;
use team_core::model::Task;
use team_core::ops::board::{self, status_word};
use team_core::ops::message::Sent;
use team_core::ops::tasks::{TaskAction, update};
use team_core::ops::up::parse_tasks;
use team_core::paths::{TeamName, WorkerName};

use super::worker_status::identity;
use crate::cli::{
    TaskAddArgs, TaskArgs, TaskAssignArgs, TaskCmd, TaskShowArgs, TeamArg, WorkerTaskArgs,
};
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult};
use crate::out::{Out, clean};

pub fn run(ctx: &Ctx, a: TaskArgs) -> CliResult<i32> {
    match a.cmd {
        TaskCmd::Claim(w) => worker(ctx, w, TaskAction::Claim),
        TaskCmd::Done(w) => worker(ctx, w, TaskAction::Done),
        TaskCmd::Fail(w) => worker(ctx, w, TaskAction::Fail),
        TaskCmd::List(t) => list(ctx, t),
        TaskCmd::Show(s) => show(ctx, s),
        TaskCmd::Add(x) => add(ctx, x),
        TaskCmd::Assign(x) => assign(ctx, x),
    }
}

fn worker(ctx: &Ctx, a: WorkerTaskArgs, action: TaskAction) -> CliResult<i32> {
    let (team, worker, incarnation) = identity(&a.who)?;
    let task = update(&ctx.store(&team), &worker, incarnation, a.id, action)?;
    let mut out = Out::new(ctx.json);
    out.record(&task_json(&task))?;
    out.record(&json!({"type": "summary", "team": team, "action": "task", "ok": true}))?;
    out.line(&format!(
        "task {}: {} ({})",
        task.id,
        status_word(task.status),
        worker
    ))?;
    out.flush()?;
    Ok(0)
}

/// When a task last changed: its claim's time, else its creation.
fn updated(t: &Task) -> &str {
    t.claim
        .as_ref()
        .map_or(t.created_at.as_str(), |c| c.at.as_str())
}

fn task_json(t: &Task) -> Value {
    json!({
        "type": "task", "id": t.id, "subject": t.subject, "status": status_word(t.status),
        "owner": t.owner, "blocked_by": t.blocked_by, "updated": updated(t),
        "role": t.role, "version": t.version,
        "claimed_by": t.claim.as_ref().map(|c| json!({"worker": c.worker, "incarnation": c.incarnation, "at": c.at})),
    })
}

fn list(ctx: &Ctx, a: TeamArg) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let store = ctx.store(&team);
    // A reader: the committed team (a missing team is an error), then the task files.
    let _ = store.snapshot()?;
    let tasks = store.tasks()?;
    let mut out = Out::new(ctx.json);
    out.line(&format!(
        "{:>4}  {:<11}  {:<10}  {:<10}  {:<20}  SUBJECT",
        "ID", "STATUS", "OWNER", "BLOCKED_BY", "UPDATED"
    ))?;
    for t in &tasks {
        out.record(&task_json(t))?;
        let blocked: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
        out.line(&format!(
            "{:>4}  {:<11}  {:<10}  {:<10}  {:<20}  {}",
            t.id,
            status_word(t.status),
            t.owner.as_ref().map_or("-", |o| o.as_str()),
            if blocked.is_empty() {
                "-".into()
            } else {
                blocked.join(",")
            },
            updated(t),
            clean(&t.subject)
        ))?;
    }
    let count = |s: &str| tasks.iter().filter(|t| status_word(t.status) == s).count();
    out.record(&json!({
        "type": "summary", "team": team, "action": "task list", "ok": true, "tasks": tasks.len(),
        "pending": count("pending"), "in_progress": count("in_progress"),
        "completed": count("completed"), "failed": count("failed"),
    }))?;
    out.line(&format!(
        "{} tasks: {} pending, {} in progress, {} completed, {} failed",
        tasks.len(),
        count("pending"),
        count("in_progress"),
        count("completed"),
        count("failed")
    ))?;
    out.flush()?;
    Ok(0)
}

fn show(ctx: &Ctx, a: TaskShowArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let store = ctx.store(&team);
    let _ = store.snapshot()?;
    let Some(t) = store.tasks()?.into_iter().find(|t| t.id == a.id) else {
        return Err(Error::NotFound {
            what: "task",
            path: store.root().tasks_dir(&team).join(format!("{}.json", a.id)),
        }
        .into());
    };
    let mut out = Out::new(ctx.json);
    let mut j = task_json(&t);
    j["description"] = json!(t.description);
    j["created_at"] = json!(t.created_at);
    out.record(&j)?;
    out.line(&format!("task #{}: {}", t.id, clean(&t.subject)))?;
    out.line(&format!("  status:     {}", status_word(t.status)))?;
    out.line(&format!(
        "  owner:      {}",
        t.owner.as_ref().map_or("-", |o| o.as_str())
    ))?;
    if let Some(c) = &t.claim {
        out.line(&format!("  claimed by: {} at {}", c.worker, c.at))?;
    }
    if !t.blocked_by.is_empty() {
        let b: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
        out.line(&format!("  blocked by: {}", b.join(", ")))?;
    }
    out.line(&format!("  created:    {}", t.created_at))?;
    for l in t.description.lines() {
        out.line(&format!("  | {}", clean(l)))?;
    }
    out.record(&json!({"type": "summary", "team": team, "action": "task show", "ok": true}))?;
    out.flush()?;
    Ok(0)
}

fn read_input(p: &std::path::Path) -> Result<Vec<u8>, Error> {
    if p.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Error::io("read", "<stdin>", e))?;
        return Ok(b);
    }
    std::fs::read(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound {
            what: "task file",
            path: p.to_path_buf(),
        },
        _ => Error::io("read", p, e),
    })
}

/// The notices' lines; returns whether every one was delivered.
pub fn print_notices(out: &mut Out, notices: &[(WorkerName, Sent)], what: &str) -> CliResult<bool> {
    let mut all = true;
    for (w, s) in notices {
        all &= s.is_delivered();
        out.record(&json!({
            "type": "delivery", "worker": w, "about": what, "result": s.word(),
            "detail": s.describe(), "last_lines": s.last_lines(),
        }))?;
        out.line(&format!("  {w}: told of {what}: {}", clean(&s.describe())))?;
        for l in s.last_lines() {
            out.line(&format!("    | {}", clean(l)))?;
        }
    }
    Ok(all)
}

fn add(ctx: &Ctx, a: TaskAddArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let specs = parse_tasks(&read_input(&a.file)?)?;
    add_specs(ctx, &team, &specs, a.ready_timeout)
}

/// `task add` (and `up TEAM 0 --tasks`): stores the tasks, then tells their owners.
pub fn add_specs(
    ctx: &Ctx,
    team: &TeamName,
    specs: &[team_core::ops::up::TaskSpec],
    ready_timeout: std::time::Duration,
) -> CliResult<i32> {
    let team = team.clone();
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let env = ctx.env(&store, &audit, "team-scale task add")?;
    let argv: Vec<String> = std::env::args().collect();
    let r = board::add(&env, specs, &argv, ready_timeout)?;
    let mut out = Out::new(ctx.json);
    for t in &r.tasks {
        out.record(&task_json(t))?;
        out.line(&format!(
            "added task #{} ({}){}",
            t.id,
            clean(&t.subject),
            t.owner
                .as_ref()
                .map_or(String::new(), |o| format!(" for {o}"))
        ))?;
    }
    let told = print_notices(&mut out, &r.notices, "new tasks")?;
    out.record(&json!({
        "type": "summary", "team": team, "action": "task add", "ok": told,
        "tasks": r.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
    }))?;
    out.flush()?;
    if told { Ok(0) } else { Err(not_told(&team)) }
}

fn not_told(team: &TeamName) -> CliError {
    CliError::fail(
        team_core::ExitClass::Refused,
        "the tasks are stored and in the owners' inboxes, but not every owner was told",
    )
    .with_hint(format!(
        "see the lines above; `team-scale send {team} <worker> <text>` tells a worker again"
    ))
}

fn assign(ctx: &Ctx, a: TaskAssignArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let worker = WorkerName::new(&a.worker)?;
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let env = ctx.env(&store, &audit, "team-scale task assign")?;
    let argv: Vec<String> = std::env::args().collect();
    let r = board::assign(&env, a.id, &worker, &argv, a.ready_timeout)?;
    let mut out = Out::new(ctx.json);
    out.record(&task_json(&r.task))?;
    out.line(&format!(
        "task #{} assigned to {worker}{}",
        r.task.id,
        match &r.previous {
            Some(p) if p == &worker => " (already so)".to_string(),
            Some(p) => format!(" (was {p}'s)"),
            None => String::new(),
        }
    ))?;
    let told = print_notices(&mut out, &r.notices, &format!("task #{}", r.task.id))?;
    out.record(&json!({
        "type": "summary", "team": team, "action": "task assign", "ok": told,
        "task": r.task.id, "worker": worker, "previous": r.previous,
    }))?;
    out.flush()?;
    if told { Ok(0) } else { Err(not_told(&team)) }
}
