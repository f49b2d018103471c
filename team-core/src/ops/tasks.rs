//! What a worker does with its tasks: claim one, mark it done or failed. Every call names the
//! worker's incarnation (or comes from a person at the keyboard, who may leave it out), so a
//! removed worker's late claim or report is refused.

use uuid::Uuid;

use crate::error::{Error, Result};
use crate::fsutil;
use crate::model::{self, Claim, Lifecycle, Task, TaskStatus, Team};
use crate::paths::WorkerName;
use crate::store::Store;

/// What to do with a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    Claim,
    Done,
    Fail,
}

/// Checks that `worker` may report for team `t`: an active (or pending) member whose current
/// incarnation is `incarnation` when one is given.
pub fn check_reporter(t: &Team, worker: &WorkerName, incarnation: Option<Uuid>) -> Result<()> {
    let w = t
        .worker(worker)
        .ok_or_else(|| Error::Refused(format!("{worker} is not a member of team {}", t.name)))?;
    if !matches!(w.lifecycle, Lifecycle::Active | Lifecycle::Pending) {
        return Err(Error::Refused(format!(
            "{worker} is being removed; its report is refused"
        )));
    }
    if let Some(i) = incarnation
        && i != w.incarnation
    {
        return Err(Error::Refused(format!(
            "incarnation {i} is not {worker}'s current one: a late report of a removed worker is refused"
        )));
    }
    Ok(())
}

/// Applies `action` to task `id` for `worker`. Returns the task as it is afterwards (unchanged
/// when it already was so: a repeated claim or report is "already so").
pub fn update(
    store: &Store,
    worker: &WorkerName,
    incarnation: Option<Uuid>,
    id: u64,
    action: TaskAction,
) -> Result<Task> {
    let path = store
        .root()
        .tasks_dir(store.team())
        .join(format!("{id}.json"));
    let (_, task) = store.transact("task", |t, changes| {
        check_reporter(t, worker, incarnation)?;
        let current = t.worker(worker).map(|w| w.incarnation).expect("checked");
        let bytes = store
            .read_task_file(&path)?
            .ok_or_else(|| Error::NotFound {
                what: "task",
                path: path.clone(),
            })?;
        let mut task = model::parse_task(&path, &bytes)?;
        let mine = task
            .claim
            .as_ref()
            .is_some_and(|c| &c.worker == worker && c.incarnation == current);
        match action {
            TaskAction::Claim => {
                if task.status == TaskStatus::InProgress && mine {
                    return Ok(task);
                }
                if task.status != TaskStatus::Pending {
                    return Err(Error::Refused(format!(
                        "task {id} is {:?}, not pending",
                        task.status
                    )));
                }
                if let Some(o) = &task.owner
                    && o != worker
                {
                    return Err(Error::Refused(format!("task {id} is {o}'s")));
                }
                for b in &task.blocked_by {
                    let bp = store
                        .root()
                        .tasks_dir(store.team())
                        .join(format!("{b}.json"));
                    let done = store
                        .read_task_file(&bp)?
                        .map(|b| model::parse_task(&bp, &b))
                        .transpose()?
                        .is_some_and(|b| b.status == TaskStatus::Completed);
                    if !done {
                        return Err(Error::Refused(format!(
                            "task {id} is blocked by task {b}, which is not completed"
                        )));
                    }
                }
                task.status = TaskStatus::InProgress;
                task.owner = Some(worker.clone());
                task.claim = Some(Claim {
                    worker: worker.clone(),
                    incarnation: current,
                    at: fsutil::now_rfc3339(),
                });
            }
            TaskAction::Done | TaskAction::Fail => {
                let to = if action == TaskAction::Done {
                    TaskStatus::Completed
                } else {
                    TaskStatus::Failed
                };
                if task.status == to && task.owner.as_ref() == Some(worker) {
                    return Ok(task);
                }
                if task.status != TaskStatus::InProgress || !mine {
                    return Err(Error::Refused(format!(
                        "task {id} is not claimed by {worker}'s current incarnation; claim it first"
                    )));
                }
                task.status = to;
            }
        }
        task.version += 1;
        changes.put_task(&task);
        Ok(task)
    })?;
    Ok(task)
}
