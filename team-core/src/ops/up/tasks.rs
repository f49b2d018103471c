//! The tasks `up --tasks` (and `task add`) creates: the task JSON parsed and checked field by
//! field ([`parse_tasks`]), validated against the team and the workers this call creates
//! ([`validate_tasks`]), and built with their ids ([`build_tasks`]).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Task references**: `owner` is a member, a name this call creates, or `new:<k>`;
//!   `blocked_by` is an existing id, an id this call assigns (ids are fixed under the scale lock),
//!   or `new:<k>`.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{Lifecycle, SCHEMA_VERSION, Task, TaskStatus, Team};
use crate::paths::{RoleName, WorkerName};

/// A reference to a task in `blocked_by`, or to a worker in `owner`, made by this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskRef {
    /// An existing task id.
    Id(u64),
    /// The k-th task (1-based) of this input: `"new:k"`.
    New(usize),
}

/// One task as given on input (`--tasks`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub subject: String,
    pub description: String,
    /// A worker name, or `new:k` for the k-th worker (1-based) this call creates.
    pub owner: Option<String>,
    pub role: Option<RoleName>,
    pub blocked_by: Vec<TaskRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    subject: Value,
    #[serde(default)]
    description: Option<Value>,
    #[serde(default)]
    owner: Option<Value>,
    #[serde(default)]
    role: Option<Value>,
    #[serde(default)]
    blocked_by: Option<Value>,
}

fn bad_input(msg: String) -> Error {
    Error::MalformedInput {
        what: "task JSON".into(),
        msg,
    }
}

/// Parses the task JSON: an array of `{subject, description?, owner?, role?, blocked_by?}`.
/// Errors name the bad field (`tasks[2].owner: ...`).
pub fn parse_tasks(bytes: &[u8]) -> Result<Vec<TaskSpec>> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| bad_input(format!("not valid JSON: {e}")))?;
    let Value::Array(items) = v else {
        return Err(bad_input("expected an array of task objects".into()));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_task(i, item))
        .collect()
}

/// `tasks[i]`: one task object.
fn parse_task(i: usize, item: Value) -> Result<TaskSpec> {
    let at = |f: &str| format!("tasks[{i}].{f}");
    if !item.is_object() {
        return Err(bad_input(format!("tasks[{i}]: expected an object")));
    }
    let raw: RawTask =
        serde_json::from_value(item).map_err(|e| bad_input(format!("tasks[{i}]: {e}")))?;
    let subject = task_text(&at("subject"), Some(raw.subject), true)?.unwrap_or_default();
    let description = task_text(&at("description"), raw.description, false)?.unwrap_or_default();
    let owner = task_text(&at("owner"), raw.owner, false)?;
    if let Some(o) = &owner {
        let ok = match o.strip_prefix("new:") {
            Some(k) => k.parse::<usize>().is_ok_and(|k| k >= 1),
            None => WorkerName::new(o).is_ok(),
        };
        if !ok {
            return Err(bad_input(format!(
                "{}: {o:?} is neither a worker name nor new:<k>",
                at("owner")
            )));
        }
    }
    let role = match task_text(&at("role"), raw.role, false)? {
        None => None,
        Some(r) => Some(RoleName::new(&r).map_err(|e| bad_input(format!("{}: {e}", at("role"))))?),
    };
    let blocked_by = task_refs(&at("blocked_by"), raw.blocked_by)?;
    Ok(TaskSpec {
        subject,
        description,
        owner,
        role,
        blocked_by,
    })
}

/// A text field of a task (`field` names it in errors): a string, non-empty when `required`;
/// absent or null when not.
fn task_text(field: &str, v: Option<Value>, required: bool) -> Result<Option<String>> {
    match v {
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(s)) if !(required && s.trim().is_empty()) => Ok(Some(s)),
        Some(Value::String(_)) => Err(bad_input(format!("{field}: is empty"))),
        _ => Err(bad_input(format!("{field}: expected a string"))),
    }
}

/// `blocked_by`: an array of task ids (`n >= 1`) and `"new:<k>"` references.
fn task_refs(field: &str, v: Option<Value>) -> Result<Vec<TaskRef>> {
    let refs = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(refs)) => refs,
        Some(_) => return Err(bad_input(format!("{field}: expected an array"))),
    };
    refs.into_iter()
        .map(|r| {
            let parsed = match &r {
                Value::Number(n) => n.as_u64().filter(|n| *n >= 1).map(TaskRef::Id),
                Value::String(s) => s
                    .strip_prefix("new:")
                    .and_then(|k| k.parse::<usize>().ok())
                    .filter(|k| *k >= 1)
                    .map(TaskRef::New),
                _ => None,
            };
            parsed.ok_or_else(|| {
                bad_input(format!("{field}: {r} is neither a task id nor \"new:<k>\""))
            })
        })
        .collect()
}

/// A task being made.
#[derive(Debug, Clone)]
pub(crate) struct PlannedTask {
    pub(super) spec: TaskSpec,
    pub(super) owner: Option<WorkerName>,
}

/// Checks the task specs against the state and the names this call creates, and resolves each
/// owner.
pub(crate) fn validate_tasks(
    team: &Team,
    specs: &[TaskSpec],
    new_names: &[WorkerName],
    existing: &HashSet<u64>,
) -> Result<Vec<PlannedTask>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let owner = match &s.owner {
                None => None,
                Some(o) => Some(resolve_owner(team, i, o, new_names)?),
            };
            for r in &s.blocked_by {
                check_ref(team, specs.len(), existing, i, r)?;
            }
            Ok(PlannedTask {
                spec: s.clone(),
                owner,
            })
        })
        .collect()
}

/// `tasks[i].owner`: `new:<k>` (the k-th worker this call creates) or an active member or a
/// worker this call creates, by name.
fn resolve_owner(team: &Team, i: usize, o: &str, new_names: &[WorkerName]) -> Result<WorkerName> {
    if let Some(k) = o.strip_prefix("new:") {
        let k: usize = k.parse().unwrap_or(0);
        return new_names.get(k.wrapping_sub(1)).cloned().ok_or_else(|| {
            bad_input(format!(
                "tasks[{i}].owner: {o:?}, but this call creates only {} workers",
                new_names.len()
            ))
        });
    }
    let name = WorkerName::new(o)?;
    let member = team
        .worker(&name)
        .is_some_and(|w| w.lifecycle == Lifecycle::Active);
    if !member && !new_names.contains(&name) {
        return Err(bad_input(format!(
            "tasks[{i}].owner: {o:?} is neither a member of team {} nor a worker this call creates ({})",
            team.name,
            new_names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(name)
}

/// One `tasks[i].blocked_by` reference, among the `n` tasks of this input: an existing id, an
/// id this call assigns (the scale lock is held, so the ids `next_task_id` hands out are
/// fixed: the k-th task of the input) other than the task's own, or `new:<k>` naming another
/// task of this input.
fn check_ref(team: &Team, n: usize, existing: &HashSet<u64>, i: usize, r: &TaskRef) -> Result<()> {
    let first = team.next_task_id;
    match r {
        TaskRef::Id(id) if !existing.contains(id) && (*id < first || *id >= first + n as u64) => {
            Err(bad_input(format!(
                "tasks[{i}].blocked_by: task {id} does not exist (and this call creates tasks {} to {})",
                first,
                first + n as u64 - 1
            )))
        }
        TaskRef::Id(id) if *id == first + i as u64 => Err(bad_input(format!(
            "tasks[{i}].blocked_by: task {id} is this task itself"
        ))),
        TaskRef::New(k) if *k > n || *k == i + 1 => Err(bad_input(format!(
            "tasks[{i}].blocked_by: \"new:{k}\" names no other task of this input"
        ))),
        _ => Ok(()),
    }
}

/// The tasks to write, with ids from `first_id` on and every `new:<k>` resolved.
pub(crate) fn build_tasks(planned: &[PlannedTask], first_id: u64, now: &str) -> Vec<Task> {
    planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut blocked: Vec<u64> = p
                .spec
                .blocked_by
                .iter()
                .map(|r| match r {
                    TaskRef::Id(id) => *id,
                    TaskRef::New(k) => first_id + *k as u64 - 1,
                })
                .collect();
            blocked.sort_unstable();
            blocked.dedup();
            Task {
                schema_version: SCHEMA_VERSION,
                id: first_id + i as u64,
                subject: p.spec.subject.clone(),
                description: p.spec.description.clone(),
                status: TaskStatus::Pending,
                owner: p.owner.clone(),
                role: p.spec.role.clone(),
                blocked_by: blocked,
                claim: None,
                version: 1,
                created_at: now.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_json_errors_name_the_field() {
        let e = parse_tasks(br#"[{"subject":"a"},{"subject":"b","owner":"Bad Name"}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tasks[1].owner"), "{e}");
        let e = parse_tasks(br#"[{"subject":""}]"#).unwrap_err().to_string();
        assert!(e.contains("tasks[0].subject"), "{e}");
        let e = parse_tasks(br#"[{"subject":"a","blocked_by":["x"]}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tasks[0].blocked_by"), "{e}");
        let e = parse_tasks(br#"[{"subject":"a","colour":1}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        assert!(parse_tasks(b"{}").is_err());
        let ok = parse_tasks(
            br#"[{"subject":"a","owner":"new:1","blocked_by":[3,"new:2"]},{"subject":"b"}]"#,
        )
        .unwrap();
        assert_eq!(ok[0].blocked_by, vec![TaskRef::Id(3), TaskRef::New(2)]);
    }

    proptest::proptest! {
        /// Task JSON is untrusted input: any bytes give tasks or a named error, never a panic.
        #[test]
        fn parse_tasks_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse_tasks(&bytes);
        }

        #[test]
        fn task_shaped_json_never_panics(s in r#"\[(\{"subject":"[a-z]{0,5}"(,"owner":("new:[0-9]{1,3}"|"[a-zA-Z0-9 -]{0,8}"|[0-9]{1,3}|null))?(,"blocked_by":\[("new:[0-9]{1,2}"|[0-9]{1,3}|-1|"x")?\])?(,"role":"[a-z]{0,4}")?\},?){0,4}\]"#) {
            let _ = parse_tasks(s.as_bytes());
        }
    }
}
