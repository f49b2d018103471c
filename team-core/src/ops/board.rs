//! The leader's side of the task board: add tasks, assign them, offer returned ones to idle
//! workers. Every change is one [`crate::store::Store::transact`] under the state lock: the
//! task files and the inboxes of the workers concerned are staged together (journaled when
//! the team record changes too, as `add` does with `next_task_id`). A worker given a task is
//! then told through [`super::message`], the proven delivery path, after the commit.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The leader's commands (issue 13).** `task add`/`assign` take the state lock only (not the
//!   scale lock), so they never wait behind a long `up`; the inboxes of the workers concerned are
//!   staged in the same transaction as the tasks (journaled when `team.json` changes, as `add`'s
//!   `next_task_id` does; `assign` changes only side files, each written atomically, and an inbox
//!   is derived data: it is rewritten whole from the task files each time). A task for a member
//!   is stored first and the member told after the commit; a notice that is not delivered exits 1
//!   with the task kept (`send` tells it again). `task assign` takes a pending task, or one whose
//!   claimant is no longer an active member; an in-progress task of a live member is refused.
//!   `task add` refuses `new:<k>` owners (only `up` makes workers). `up TEAM 0 --tasks` is `task
//!   add`. `send` types with `PromptMode::Typed` whatever took the first prompt, waits for the
//!   same ready screen, and refuses the `shell` profile (a shell would run the text). `--reassign
//!   auto` offers the tasks `down` returned, one each in turn, to active workers whose current
//!   incarnation reported `idle` or `done`; the offer runs in the `down` command after the
//!   operation, not inside it. `policy --max-workers N` counts active and pending workers.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::json;

use super::Env;
use super::message::{self, Sent};
use super::up::{TaskSpec, build_tasks, validate_tasks};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::model::{self, Lifecycle, ReassignPolicy, Task, TaskStatus, Team, WorkState};
use crate::paths::WorkerName;
use crate::store::{Changes, Store};

/// The marker after which an inbox lists tasks; everything above it is kept as written by
/// `up`.
const TASKS_MARKER: &str = "## Your tasks\n\n";

fn task_line(t: &Task) -> String {
    let mut l = format!("- #{}: {}", t.id, t.subject);
    if t.status != TaskStatus::Pending {
        l.push_str(&format!(" [{}]", status_word(t.status)));
    }
    l.push('\n');
    for d in t.description.lines() {
        l.push_str(&format!("  {d}\n"));
    }
    if !t.blocked_by.is_empty() {
        let b: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
        l.push_str(&format!("  (blocked by {})\n", b.join(", ")));
    }
    l
}

/// A task status as a word (`pending`, `in_progress`, `completed`, `failed`).
pub fn status_word(s: TaskStatus) -> &'static str {
    match s {
        TaskStatus::Pending => "pending",
        TaskStatus::InProgress => "in_progress",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
    }
}

/// The task part of `worker`'s inbox: its tasks, then the open ones (pending, no owner).
pub fn tasks_section(worker: &WorkerName, tasks: &[Task]) -> String {
    let mut s = String::new();
    let mine: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.owner.as_ref() == Some(worker))
        .collect();
    if mine.is_empty() {
        s.push_str("(none assigned)\n");
    }
    for t in mine {
        s.push_str(&task_line(t));
    }
    let open: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.owner.is_none() && t.status == TaskStatus::Pending)
        .collect();
    if !open.is_empty() {
        s.push_str("\n## Open tasks (no owner yet)\n\n");
        for t in open {
            s.push_str(&task_line(t));
        }
    }
    s
}

/// `worker`'s inbox with its task part rewritten from `tasks`; the part above is kept.
pub fn refreshed_inbox(
    existing: Option<&str>,
    team: &Team,
    worker: &WorkerName,
    tasks: &[Task],
) -> String {
    let head = match existing {
        Some(e) => match e.find(TASKS_MARKER) {
            Some(i) => e[..i + TASKS_MARKER.len()].to_string(),
            None => format!("{}\n\n{TASKS_MARKER}", e.trim_end()),
        },
        None => format!(
            "# Inbox of {worker} (team {})\n\nClaim a task with `team-scale task claim <id>`; when it is finished, `team-scale task done <id>` (or `task fail <id>`).\n\n{TASKS_MARKER}",
            team.name
        ),
    };
    format!("{head}{}", tasks_section(worker, tasks))
}

fn stage_inbox(
    store: &Store,
    team: &Team,
    worker: &WorkerName,
    tasks: &[Task],
    changes: &mut Changes,
) -> Result<()> {
    let path = store.root().worker_dir(&team.name, worker).join("inbox.md");
    let existing = fsutil::state_read(store.root().path(), &path, fsutil::limits::TASK)?;
    let existing = existing.map(|b| String::from_utf8_lossy(&b).into_owned());
    changes.put_inbox(
        worker,
        &refreshed_inbox(existing.as_deref(), team, worker, tasks),
    );
    Ok(())
}

fn active(team: &Team, w: &WorkerName) -> bool {
    team.worker(w)
        .is_some_and(|w| w.lifecycle == Lifecycle::Active)
}

/// The notice a worker gets for new tasks.
fn notice(team: &Team, worker: &WorkerName, ids: &[u64], store: &Store) -> String {
    let inbox = store.root().worker_dir(&team.name, worker).join("inbox.md");
    let list: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
    format!(
        "New task{} for you: {}. Read your inbox at {} and claim with `team-scale task claim <id>`.",
        if ids.len() == 1 { "" } else { "s" },
        list.join(", "),
        inbox.display()
    )
}

/// Tells each worker of `given` (worker -> task ids) about its new tasks, one delivery round.
fn notify(
    env: &Env,
    team: &Team,
    given: &BTreeMap<WorkerName, Vec<u64>>,
    argv: &[String],
    timeout: Duration,
) -> Vec<(WorkerName, Sent)> {
    let mut out = Vec::new();
    for (w, ids) in given {
        // One message per worker (texts differ), each through the one delivery path.
        let text = notice(team, w, ids, env.store);
        // A task notice waits for its agent to be ready: the task is in the inbox already.
        let wait = message::Wait {
            timeout,
            queue: false,
        };
        match message::send(env, std::slice::from_ref(w), &text, "task", argv, wait) {
            Ok(mut r) => out.append(&mut r),
            Err(e) => out.push((w.clone(), Sent::Refused(e.to_string()))),
        }
    }
    out
}

/// What `task add` did.
#[derive(Debug)]
pub struct AddReport {
    pub tasks: Vec<Task>,
    /// Each owner told of its new tasks (`timeout` zero: nobody is told).
    pub notices: Vec<(WorkerName, Sent)>,
}

/// Adds tasks (the JSON of `up --tasks`; owners must be active members, `new:<k>` owners need
/// `up`). Owners' inboxes are rewritten in the same commit; owners are then told.
pub fn add(env: &Env, specs: &[TaskSpec], argv: &[String], timeout: Duration) -> Result<AddReport> {
    if specs.is_empty() {
        return Err(Error::Usage("no tasks given (an empty array)".into()));
    }
    if let Some((i, _)) = specs
        .iter()
        .enumerate()
        .find(|(_, s)| s.owner.as_deref().is_some_and(|o| o.starts_with("new:")))
    {
        return Err(Error::MalformedInput {
            what: "task JSON".into(),
            msg: format!(
                "tasks[{i}].owner: \"new:<k>\" names a worker `up --tasks` creates; `task add` takes members only"
            ),
        });
    }
    let store = env.store;
    let (team, tasks) = store.transact("task.add", |t, changes| {
        if t.state != crate::model::TeamState::Active {
            return Err(Error::Refused(format!("team {} is stopped", t.name)));
        }
        let existing_tasks = store.tasks()?;
        let existing: HashSet<u64> = existing_tasks.iter().map(|t| t.id).collect();
        let planned = validate_tasks(t, specs, &[], &existing)?;
        let tasks = build_tasks(&planned, t.next_task_id, &fsutil::now_rfc3339());
        t.next_task_id += tasks.len() as u64;
        for task in &tasks {
            changes.put_task(task);
        }
        let mut all = existing_tasks;
        all.extend(tasks.iter().cloned());
        let owners: HashSet<&WorkerName> = tasks.iter().filter_map(|t| t.owner.as_ref()).collect();
        // Every active member's inbox lists the open tasks, so all of them change when an
        // unowned task is added; otherwise only the owners'.
        let any_open = tasks.iter().any(|t| t.owner.is_none());
        let concerned: Vec<WorkerName> = t
            .in_state(Lifecycle::Active)
            .filter(|w| any_open || owners.contains(&w.name))
            .map(|w| w.name.clone())
            .collect();
        for w in &concerned {
            stage_inbox(store, t, w, &all, changes)?;
        }
        Ok(tasks)
    })?;
    let _ = store.append_event(
        &team,
        "tasks_added",
        json!({"tasks": tasks.iter().map(|t| json!({"id": t.id, "owner": t.owner})).collect::<Vec<_>>()}),
    );
    let mut given: BTreeMap<WorkerName, Vec<u64>> = BTreeMap::new();
    for t in &tasks {
        if let Some(o) = &t.owner {
            given.entry(o.clone()).or_default().push(t.id);
        }
    }
    let notices = if timeout.is_zero() {
        Vec::new()
    } else {
        notify(env, &team, &given, argv, timeout)
    };
    Ok(AddReport { tasks, notices })
}

/// Brings the inboxes of the existing members that own some of `tasks` (made by `up --tasks`,
/// whose commit writes only the new workers' inboxes) up to date, and tells those members.
pub fn tell_existing_owners(
    env: &Env,
    tasks: &[Task],
    argv: &[String],
    timeout: Duration,
) -> Result<Vec<(WorkerName, Sent)>> {
    let mut given: BTreeMap<WorkerName, Vec<u64>> = BTreeMap::new();
    for t in tasks {
        if let Some(o) = &t.owner {
            given.entry(o.clone()).or_default().push(t.id);
        }
    }
    if given.is_empty() {
        return Ok(Vec::new());
    }
    let store = env.store;
    let (team, ()) = store.transact("task.inbox", |t, changes| {
        let all = store.tasks()?;
        given.retain(|w, _| active(t, w));
        for w in given.keys() {
            stage_inbox(store, t, w, &all, changes)?;
        }
        Ok(())
    })?;
    if timeout.is_zero() {
        return Ok(Vec::new());
    }
    Ok(notify(env, &team, &given, argv, timeout))
}

/// What `task assign` did.
#[derive(Debug)]
pub struct AssignReport {
    pub task: Task,
    pub previous: Option<WorkerName>,
    pub notices: Vec<(WorkerName, Sent)>,
}

/// Gives task `id` to `worker` (an active member). A pending task, or a task whose owner is no
/// longer an active member (its claim dies with it), may be assigned; a completed, failed, or
/// in-progress task of a live member is refused.
pub fn assign(
    env: &Env,
    id: u64,
    worker: &WorkerName,
    argv: &[String],
    timeout: Duration,
) -> Result<AssignReport> {
    let store = env.store;
    let path = store
        .root()
        .tasks_dir(store.team())
        .join(format!("{id}.json"));
    let (team, (task, previous)) = store.transact("task.assign", |t, changes| {
        if !active(t, worker) {
            return Err(Error::Refused(format!(
                "{worker} is not an active member of team {}",
                t.name
            )));
        }
        let bytes = store.read_task_file(&path)?.ok_or_else(|| Error::NotFound {
            what: "task",
            path: path.clone(),
        })?;
        let mut task = model::parse_task(&path, &bytes)?;
        let previous = task.owner.clone();
        if previous.as_ref() == Some(worker) {
            return Ok((task, previous));
        }
        match task.status {
            TaskStatus::Completed | TaskStatus::Failed => {
                return Err(Error::Refused(format!(
                    "task {id} is {}; only unfinished tasks can be assigned",
                    status_word(task.status)
                )));
            }
            TaskStatus::InProgress
                if task.claim.as_ref().is_some_and(|c| active(t, &c.worker)) =>
            {
                return Err(Error::Refused(format!(
                    "task {id} is in progress by {}; it can be reassigned once that worker is removed or fails it",
                    task.claim.as_ref().map(|c| c.worker.to_string()).unwrap_or_default()
                )));
            }
            _ => {}
        }
        task.owner = Some(worker.clone());
        task.status = TaskStatus::Pending;
        task.claim = None;
        task.version += 1;
        changes.put_task(&task);
        let mut all = store.tasks()?;
        if let Some(x) = all.iter_mut().find(|x| x.id == id) {
            *x = task.clone();
        }
        let mut concerned = vec![worker.clone()];
        if let Some(p) = &previous
            && active(t, p)
        {
            concerned.push(p.clone());
        }
        for w in &concerned {
            stage_inbox(store, t, w, &all, changes)?;
        }
        Ok((task, previous))
    })?;
    if previous.as_ref() == Some(worker) {
        return Ok(AssignReport {
            task,
            previous,
            notices: Vec::new(),
        });
    }
    let _ = store.append_event(
        &team,
        "task_assigned",
        json!({"task": id, "owner": worker, "previous": previous}),
    );
    let notices = if timeout.is_zero() {
        Vec::new()
    } else {
        let given: BTreeMap<WorkerName, Vec<u64>> = [(worker.clone(), vec![id])].into();
        notify(env, &team, &given, argv, timeout)
    };
    Ok(AssignReport {
        task,
        previous,
        notices,
    })
}

/// Offers returned tasks to the team's idle active workers, one task each in turn, when the
/// team's policy is `--reassign auto`; with `manual` it offers nothing. Returns the
/// assignments made and the notices.
pub fn offer(
    env: &Env,
    ids: &[u64],
    argv: &[String],
    timeout: Duration,
) -> Result<Vec<(u64, WorkerName, Sent)>> {
    let team = env.store.load()?;
    if team.settings.reassign != ReassignPolicy::Auto || ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut idle: Vec<WorkerName> = Vec::new();
    for w in team.in_state(Lifecycle::Active) {
        let st = env.store.status(&w.name)?;
        if st.is_some_and(|s| {
            s.incarnation == w.incarnation && matches!(s.state, WorkState::Idle | WorkState::Done)
        }) {
            idle.push(w.name.clone());
        }
    }
    let mut out = Vec::new();
    for (id, w) in ids.iter().zip(idle.iter().cycle()) {
        match assign(env, *id, w, argv, timeout) {
            Ok(r) => {
                let sent = r.notices.into_iter().next().map_or(
                    Sent::Refused("not told (no delivery wait)".into()),
                    |(_, s)| s,
                );
                out.push((*id, w.clone(), sent));
            }
            Err(e) => out.push((*id, w.clone(), Sent::Refused(e.to_string()))),
        }
    }
    Ok(out)
}
