//! `down` and `shutdown`: pick workers, drain them, commit them to `removing` with their
//! unfinished tasks back to `pending`, then tear them down ([`super::teardown`]).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Never reported is busy**: `down` without `--force` takes only workers that reported
//!   `idle`/`done`, or whose process has exited or pane is gone. When every candidate runs under
//!   its supervisor, "exited" is told without tmux (the supervisor is gone, or it wrote
//!   `exit.json` for this incarnation), and a pane that is gone while its worker still runs
//!   counts as busy; otherwise a listing tells it, and the teardown reuses that listing.
//!   A drain that times out removes
//!   nothing: drain marks are undone (a worker that never reported is back to no status file) and
//!   `down` exits 75; `--force` removes without waiting.
//!
//! - **A worker holding a claimed task is busy**, whatever it last reported: `down` without
//!   `--force` does not pick it, and a drain waits until it holds none (a worker that reported
//!   idle and then claimed a task had it taken back mid-work).
//!
//! - **Idle targets skip the drain marks**: when every target reports idle or done at the
//!   moment of the drain's write (under the state lock, which claims and reports take too),
//!   that write commits them to `removing` directly: nothing could make one busy in between,
//!   so the marks, a second durable write and the wait would change nothing.
//!
//! - **`down --force` skips the drain marks**: nothing waits for the drain, and the commit that
//!   follows moves the targets to `removing` at once, which late reports already respect.
//!
//! - **Every operation's intent gets an outcome**: `down` and `shutdown` write a `scale_down` /
//!   `shutdown` intent before any change and its outcome after, however they end.
//!
//! - **The kills' outcomes go with the operation's** (issue 15): the teardown under `down` and
//!   `shutdown` keeps its kills' `complete`/`failed` records ([`Teardown::deferring`]) and
//!   they are written with the operation's own outcome, in one lock and one write. That batch
//!   is not waited on ([`crate::audit::AuditLog::append_outcomes`], twelfth round): the design
//!   asks an intent to be durable before its effect and an outcome only to be "recorded
//!   after", and each `fdatasync` costs a `down` about a millisecond here. Every intent is
//!   still durable before its effect. A machine crash before the next synced record loses the
//!   outcomes, so their intents read as "result unknown", as a crash right after any kill
//!   always could; an `fdatasync` makes every earlier byte of the file durable with it, so
//!   only the log's last records can ever be lost or torn, as before. The reaper and an `up`'s
//!   rollback, which have no operation record of their own, write theirs at once (unsynced
//!   too).
//!
//! - **The teardown reuses `down`'s own checks** (`teardown::Prechecked`): the whole team's
//!   paths, validated at the start under the same scale lock, are not walked again (unless a
//!   drain wait passed: then they are), and supervisor checks that found a supervisor alive
//!   or gone while picking the targets are not made again. Each removed worker's files are
//!   still checked right before they move, and each process is still proven through a pidfd.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::audit::{Entry, Stage};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::model::{Lifecycle, SCHEMA_VERSION, Team, TeamState, WorkState, WorkerStatus};
use crate::paths::WorkerName;
use crate::proof::PaneProof;
use crate::store::Store;
use crate::tmux::Listing;

use crate::view;

use super::kill::{self, KillTarget};
use super::teardown::Seen;
use super::teardown::{self, AuditItem, LeaderOutcome, SettleReport, Teardown};

/// What `down` was asked.
#[derive(Debug, Clone)]
pub struct DownRequest {
    pub count: Option<usize>,
    pub names: Vec<WorkerName>,
    pub force: bool,
    pub drain_timeout: Duration,
    /// The operator's kill switch (`TEAM_SCALING=0`, read by the binary).
    pub scaling_disabled_by_env: bool,
}

/// What `down` did.
#[derive(Debug, Clone, Default)]
pub struct DownReport {
    /// Leftovers of earlier operations settled first.
    pub earlier: SettleReport,
    pub targets: Vec<WorkerName>,
    /// Targets that did not report idle within the drain timeout (always empty in a report:
    /// a drain timeout is an error, [`Error::TimedOut`], and removes nothing).
    pub drain_timed_out: Vec<WorkerName>,
    /// Tasks put back to `pending` at the commit.
    pub tasks_returned: Vec<u64>,
    pub settle: SettleReport,
}

/// A worker's reported state, looking through `draining` to what it was before (`None`: it
/// never reported).
fn effective(s: &Option<WorkerStatus>) -> Option<WorkState> {
    s.as_ref().and_then(|s| match (s.state, s.before_drain) {
        (WorkState::Draining, b) => b,
        (st, _) => Some(st),
    })
}

/// Whether a reported state lets `down` take the worker without `--force`. A worker that
/// never reported may be working (its agent got a prompt and has not said anything yet), so
/// it is busy, not idle.
fn is_idle(s: Option<WorkState>) -> bool {
    matches!(s, Some(WorkState::Idle | WorkState::Done))
}

/// Whether `w` holds a task it claimed and has not finished: it is working, whatever it last
/// reported (a worker that reported idle and then claimed a task).
fn holds_task(tasks: &[crate::model::Task], w: &WorkerName) -> bool {
    tasks.iter().any(|t| {
        t.status == crate::model::TaskStatus::InProgress
            && t.claim.as_ref().is_some_and(|c| &c.worker == w)
    })
}

/// Puts back the state a `draining` worker had, for active workers left draining by an
/// operation that did not commit. Returns who was restored. The caller holds the scale lock.
pub fn restore_drains(store: &Store, only: Option<&[WorkerName]>) -> Result<Vec<WorkerName>> {
    let (_, restored) = store.transact("restore-drain", |team, changes| {
        let mut out = Vec::new();
        for w in team
            .workers
            .iter()
            .filter(|w| w.lifecycle == Lifecycle::Active)
        {
            if only.is_some_and(|o| !o.contains(&w.name)) {
                continue;
            }
            if let Some(mut s) = store.status_for(None, w)?
                && s.state == WorkState::Draining
            {
                match s.before_drain.take() {
                    Some(b) => {
                        s.state = b;
                        s.updated_at = fsutil::now_rfc3339();
                        changes.put_status(&s);
                    }
                    // It had never reported: it is back to never having reported.
                    None => changes.delete_status(&w.name),
                }
                out.push(w.name.clone());
            }
        }
        Ok(out)
    })?;
    Ok(restored)
}

/// Moves `names` (active or pending) to `removing` in one journaled commit, returning their
/// unfinished tasks to `pending`. Returns the task ids.
pub fn commit_removing(store: &Store, names: &[WorkerName], op: &str) -> Result<Vec<u64>> {
    let (_, ids) = store.transact(op, |team, changes| {
        let tasks = store.tasks()?;
        removing_changes(team, names, &tasks, changes)
    })?;
    Ok(ids)
}

/// The changes of [`commit_removing`], inside a transaction.
fn removing_changes(
    team: &mut Team,
    names: &[WorkerName],
    tasks: &[crate::model::Task],
    changes: &mut crate::store::Changes,
) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for n in names {
        let w = team
            .worker_mut(n)
            .ok_or_else(|| Error::Refused(format!("worker {n} vanished during the operation")))?;
        if w.lifecycle == Lifecycle::Removing {
            continue;
        }
        w.lifecycle = Lifecycle::Removing;
        w.removal_reasons.clear();
        ids.extend(teardown::return_tasks(tasks, n, changes));
    }
    Ok(ids)
}

/// The record that frames a whole operation (`action: operation`, `op`: which one).
fn op_entry(t: &Teardown, team: &Team, op: &str, targets: &[WorkerName]) -> Entry {
    Entry {
        caller: t.caller.clone(),
        action: "operation".into(),
        op: Some(op.into()),
        argv: t.argv.clone(),
        endpoint: Some(team.endpoint.to_string_lossy().into_owned()),
        targets: targets.iter().map(|n| json!(n)).collect(),
        workspace: Some(team.workspace.to_string_lossy().into_owned()),
        team: Some(team.name.to_string()),
        generation: Some(team.generation),
        owner_evidence: Some(json!({"owner_id": team.owner_id})),
        reason: None,
        outcome: None,
    }
}

/// `team-scale down`.
pub fn down(t: &Teardown, req: &DownRequest) -> Result<DownReport> {
    if req.count.is_some() && !req.names.is_empty() {
        return Err(Error::Usage(
            "give a count or --worker names, not both".into(),
        ));
    }
    if req.count == Some(0) {
        return Err(Error::Usage("the count must be at least 1".into()));
    }
    let count = if req.names.is_empty() {
        req.count.unwrap_or(1)
    } else {
        req.names.len()
    };
    let store = t.store;
    let _g = store.lock_scale("down")?;
    let team = store.load()?;
    teardown::validate_team(store, &team)?;
    if team.state == TeamState::Stopped {
        return Err(Error::Refused(format!("team {} is stopped", team.name)));
    }
    super::check_scaling(&team, req.scaling_disabled_by_env)?;
    for n in &req.names {
        match team.worker(n) {
            Some(w) if w.lifecycle == Lifecycle::Active => {}
            Some(w) => {
                return Err(Error::Refused(format!(
                    "worker {n} is {:?}, not active",
                    w.lifecycle
                )));
            }
            None => {
                return Err(Error::Refused(format!(
                    "{n} is not a member of team {}",
                    team.name
                )));
            }
        }
    }
    // Finish what earlier operations left, and undo drains that never committed: each only
    // when there is one, since each takes the state lock and reads every worker's files.
    let rep = DownReport {
        earlier: if team.in_state(Lifecycle::Removing).next().is_some() {
            teardown::settle_removing(t, &[])?
        } else {
            SettleReport::default()
        },
        ..Default::default()
    };
    let team = if rep.earlier.workers.is_empty() {
        team
    } else {
        store.load()?
    };
    // Every worker's files through `workers/` opened once.
    let workers = store.workers_dir()?;
    let mut status_of = HashMap::new();
    for w in team.in_state(Lifecycle::Active) {
        status_of.insert(w.name.clone(), store.status_for(workers.as_ref(), w)?);
    }
    let draining =
        |s: &Option<WorkerStatus>| s.as_ref().is_some_and(|s| s.state == WorkState::Draining);
    if status_of.values().any(draining) {
        restore_drains(store, None)?;
        for (n, s) in status_of.iter_mut() {
            *s = match team.worker(n) {
                Some(w) => store.status_for(workers.as_ref(), w)?,
                None => None,
            };
        }
    }

    // Pick targets.
    let mut active: Vec<_> = team.in_state(Lifecycle::Active).collect();
    active.sort_by_key(|w| std::cmp::Reverse(w.index));
    // A worker whose process has exited or whose pane is provably gone does no work: it
    // counts as idle, whatever it last reported. Told without tmux when every candidate runs
    // under its supervisor (see `exited`), else from a listing, which the teardown then reuses.
    // Only asked where it can change the pick: not for named targets, nor for a worker that
    // reports idle or done already.
    let reported_idle =
        |w: &crate::model::Worker| is_idle(effective(status_of.get(&w.name).unwrap_or(&None)));
    let mut checked = teardown::Checked::default();
    let by_process: Option<Vec<bool>> = active
        .iter()
        .map(|w| {
            let named_elsewhere = !req.names.is_empty() && !req.names.contains(&w.name);
            if named_elsewhere || reported_idle(w) {
                Some(false)
            } else {
                exited(store, workers.as_ref(), w, &mut checked)
            }
        })
        .collect();
    let (dead, listing) = match by_process {
        Some(d) => (d, None),
        None => {
            let listing = t.tmux.list();
            let d = active
                .iter()
                .map(|w| {
                    view::prove_worker(&team, w, &listing)
                        .is_some_and(|p| matches!(p, PaneProof::Dead(_) | PaneProof::Gone(_)))
                })
                .collect();
            (d, Some(listing))
        }
    };
    let tasks = store.tasks()?;
    let mut statuses = Vec::new();
    // Workers whose process has exited: idle whatever they reported, for the drain too.
    let mut exited_names = std::collections::HashSet::new();
    for (w, dead) in active.iter().zip(dead) {
        if dead {
            exited_names.insert(w.name.clone());
        }
        let s = if dead {
            Some(WorkState::Idle)
        } else if holds_task(&tasks, &w.name) {
            Some(WorkState::Busy)
        } else {
            effective(status_of.get(&w.name).unwrap_or(&None))
        };
        statuses.push((w.name.clone(), s));
    }
    let targets: Vec<WorkerName> = if !req.names.is_empty() {
        req.names.clone()
    } else {
        let idle: Vec<WorkerName> = statuses
            .iter()
            .filter(|(_, s)| is_idle(*s))
            .map(|(n, _)| n.clone())
            .collect();
        if idle.len() < count && !req.force {
            return Err(Error::Refused(format!(
                "not enough idle workers: {} of {} active workers are idle (a worker that never reported counts as busy), {count} asked (--force takes busy ones too)",
                idle.len(),
                active.len()
            )));
        }
        let mut t: Vec<WorkerName> = idle.into_iter().take(count).collect();
        for (n, _) in &statuses {
            if t.len() >= count {
                break;
            }
            if !t.contains(n) {
                t.push(n.clone());
            }
        }
        t
    };
    if targets.len() >= active.len() {
        return Err(Error::Refused(format!(
            "removing all {} workers of team {} is refused; use `team-scale shutdown {}`",
            active.len(),
            team.name,
            team.name
        )));
    }
    // Fail closed: the operation's intent must be durable before any change; its outcome is
    // recorded under the same audit id however the operation ends.
    let entry = op_entry(t, &team, "scale_down", &targets);
    let op = t.audit.intent(&entry)?;
    // The whole team's paths were validated above, under this scale lock.
    let pre = teardown::Prechecked {
        validated: true,
        checked,
    };
    let picked = Picked {
        listing,
        pre,
        exited: exited_names,
    };
    let kills = RefCell::new(Vec::new());
    let res = down_after_intent(&t.deferring(&kills), req, &team, targets, rep, picked);
    record_op_outcome(t, kills.take(), op, entry, &res, |r| !r.settle.blocked());
    res
}

/// Records the outcome of an operation's intent (`complete` when `ok`, else `failed`), after
/// `kills`, the outcomes of its teardown's kills, all in one group commit.
fn record_op_outcome<R>(
    t: &Teardown,
    mut kills: Vec<AuditItem>,
    op: uuid::Uuid,
    mut entry: Entry,
    res: &Result<R>,
    ok: impl Fn(&R) -> bool,
) {
    let good = matches!(res, Ok(r) if ok(r));
    entry.outcome = Some(match res {
        Ok(_) if good => "done".into(),
        Ok(_) => "cleanup debt remains".into(),
        Err(e) => format!("error: {e}"),
    });
    kills.push((
        if good { Stage::Complete } else { Stage::Failed },
        Some(op),
        entry,
    ));
    if let Err(e) = t.audit.append_outcomes(&kills) {
        tracing::warn!(error = %e, "could not record the operation's outcome");
    }
}

fn down_after_intent(
    t: &Teardown,
    req: &DownRequest,
    team: &Team,
    targets: Vec<WorkerName>,
    mut rep: DownReport,
    picked: Picked,
) -> Result<DownReport> {
    let Picked {
        listing,
        mut pre,
        exited,
    } = picked;
    let exited = &exited;
    let store = t.store;
    // The listing that picked the targets proves their panes in the teardown too (with none,
    // each pane is proven by the guard of its kill), unless the drain waited: then the
    // teardown takes a fresh one.
    let mut seen = match listing {
        Some(l) => Seen::Listing(l),
        None => Seen::Guarded,
    };

    // Mark draining, remembering the state before, unless every target is idle: then they are
    // committed to `removing` in that same write. With --force nothing waits for the drain
    // and the commit that follows moves the targets to `removing` at once (which late status
    // reports already respect), so the marks, one durable write per worker, are skipped.
    // (With --force, neither: the commit below.)
    let committed = match req.force {
        true => None,
        false => match drain_or_commit(store, &targets, exited)? {
            Drain::Committed(ids) => Some(ids),
            Drain::Marked => None,
        },
    };
    let result = (|| {
        if let Some(ids) = committed {
            return Ok(ids);
        }
        (t.fail)("down.drained")?;
        // Before the commit an interrupt undoes the drain marks (below) and removes nothing.
        crate::interrupt::check("down.drain")?;
        if !req.force {
            (t.progress)(&format!(
                "waiting up to {:?} for {} to report idle",
                req.drain_timeout,
                targets
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            let (timed_out, waited) = wait_drained(t, team, &targets, exited, req.drain_timeout)?;
            rep.drain_timed_out = timed_out;
            if waited {
                // Time passed: a fresh listing, and every path checked again.
                seen = Seen::Fresh;
                pre.validated = false;
            }
            crate::interrupt::check("down.drain")?;
            if !rep.drain_timed_out.is_empty() {
                return Err(Error::TimedOut(format!(
                    "{} did not report idle within {:?}; nothing was removed (their drain marks are undone). `--force` removes them anyway, returning their tasks to pending",
                    rep.drain_timed_out
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    req.drain_timeout
                )));
            }
        }
        commit_removing(store, &targets, "down")
    })();
    let ids = match result {
        Ok(ids) => ids,
        Err(e) => {
            let _ = restore_drains(store, Some(&targets));
            return Err(e);
        }
    };
    (t.fail)("down.committed")?;
    rep.targets = targets.clone();
    rep.tasks_returned = ids;
    rep.settle = teardown::settle_removing_prechecked(t, &targets, seen, pre)?;
    let team = store.load()?;
    store.append_event(
        &team,
        "scaled_down",
        json!({
            "workers": targets,
            "removed": rep.settle.workers.iter().filter(|w| w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
            "blocked": rep.settle.workers.iter().filter(|w| !w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
            "tasks_returned": rep.tasks_returned,
        }),
    )?;
    Ok(rep)
}

/// Whether `w`'s process has exited, told from its supervisor alone: its supervisor is gone, or
/// it wrote `exit.json` for this incarnation. `None` when that cannot be told so (no pane
/// recorded, a pane made before supervisors, a pane still starting, an unreadable record).
fn exited(
    store: &Store,
    workers: Option<&crate::fsutil::StateDir>,
    w: &crate::model::Worker,
    checked: &mut teardown::Checked,
) -> Option<bool> {
    let p = w.pane.as_ref()?;
    let inc = w.incarnation.to_string();
    let c = crate::process::check_supervisor(p.pane_pid, p.process_start, &inc);
    checked.remember(p.pane_pid, p.process_start, &inc, &c);
    match c {
        crate::process::SupervisorCheck::Gone => Some(true),
        crate::process::SupervisorCheck::Alive(_) => {
            let path = store
                .root()
                .worker_dir(store.team(), &w.name)
                .join("exit.json");
            match workers {
                Some(d) => crate::agent::exit::read_exit_in(d, &path, w.incarnation)
                    .ok()
                    .map(|e| e.is_some()),
                // No `workers/`: no exit record either.
                None => Some(false),
            }
        }
        _ => None,
    }
}

/// What picking the targets found, for the rest of `down`.
struct Picked {
    /// The listing that proved the picks, if one was taken.
    listing: Option<Listing>,
    /// What the teardown need not check again.
    pre: teardown::Prechecked,
    /// Active workers whose process has exited (told from their supervisors or the listing).
    exited: std::collections::HashSet<WorkerName>,
}

/// What the first durable step of a `down` without `--force` did.
enum Drain {
    /// Every target reported idle or done: they went to `removing` at once (the task ids
    /// put back to `pending`).
    Committed(Vec<u64>),
    /// They were marked `draining`; `down` waits for those that were busy.
    Marked,
}

/// Under one hold of the state lock: when every target reports idle or done, nothing can
/// make one busy before the commit (claims and reports take the same lock), so the targets
/// go to `removing` in this one durable write; otherwise each is marked `draining`,
/// remembering its state before.
fn drain_or_commit(
    store: &Store,
    targets: &[WorkerName],
    exited: &std::collections::HashSet<WorkerName>,
) -> Result<Drain> {
    let (_, d) =
        store.transact("drain", |team, changes| {
            let prev = targets
                .iter()
                .map(|n| match team.worker(n) {
                    Some(w) => store.status_for(None, w),
                    None => Ok(None),
                })
                .collect::<Result<Vec<_>>>()?;
            let tasks = store.tasks()?;
            // A worker whose process has exited does no work: idle, whatever it reported or holds.
            if targets.iter().zip(&prev).all(|(n, p)| {
                exited.contains(n) || (is_idle(effective(p)) && !holds_task(&tasks, n))
            }) {
                return Ok(Drain::Committed(removing_changes(
                    team, targets, &tasks, changes,
                )?));
            }
            for (n, prev) in targets.iter().zip(prev) {
                let w = team
                    .worker(n)
                    .ok_or_else(|| Error::Refused(format!("worker {n} vanished")))?;
                let s = WorkerStatus {
                    schema_version: SCHEMA_VERSION,
                    worker: n.clone(),
                    incarnation: w.incarnation,
                    state: WorkState::Draining,
                    note: prev.as_ref().and_then(|p| p.note.clone()),
                    updated_at: fsutil::now_rfc3339(),
                    before_drain: effective(&prev),
                };
                changes.put_status(&s);
            }
            Ok(Drain::Marked)
        })?;
    Ok(d)
}

/// Waits until every target that was busy reports idle/done or its pane is gone or dead (its
/// process exited), up to `timeout`. Returns those still busy at the end, and whether any had
/// to be waited for.
/// Status files are polled often (cheap), tmux about once a second.
fn wait_drained(
    t: &Teardown,
    team: &Team,
    targets: &[WorkerName],
    exited: &std::collections::HashSet<WorkerName>,
    timeout: Duration,
) -> Result<(Vec<WorkerName>, bool)> {
    let deadline = Instant::now() + timeout;
    let mut waiting: Vec<WorkerName> = Vec::new();
    let tasks = t.store.tasks()?;
    // Each target's own reports only (see `Store::status_for`).
    let report = |n: &WorkerName| -> Result<Option<WorkerStatus>> {
        match team.worker(n) {
            Some(w) => t.store.status_for(None, w),
            None => Ok(None),
        }
    };
    for n in targets {
        let marked_busy =
            report(n)?.is_some_and(|s| s.state == WorkState::Draining && !is_idle(s.before_drain));
        if !exited.contains(n) && (marked_busy || holds_task(&tasks, n)) {
            waiting.push(n.clone());
        }
    }
    let waited = !waiting.is_empty();
    let mut next_list = Instant::now() + Duration::from_secs(1);
    while !waiting.is_empty() && Instant::now() < deadline && !crate::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(50));
        let mut still = Vec::new();
        let tasks = t.store.tasks()?;
        for n in waiting {
            // Idle or done, reported since the drain or already before it.
            let reported = match report(&n)? {
                Some(s) => {
                    matches!(s.state, WorkState::Idle | WorkState::Done)
                        || (s.state == WorkState::Draining && is_idle(s.before_drain))
                }
                None => false,
            };
            // A worker that still holds a task is still working, whatever it reported.
            if !reported || holds_task(&tasks, &n) {
                still.push(n);
            }
        }
        waiting = still;
        if !waiting.is_empty() && Instant::now() >= next_list {
            next_list = Instant::now() + Duration::from_secs(1);
            let listing = t.tmux.list();
            waiting.retain(|n| {
                !team
                    .worker(n)
                    .and_then(|w| view::prove_worker(team, w, &listing))
                    .is_some_and(|p| matches!(p, PaneProof::Gone(_) | PaneProof::Dead(_)))
            });
        }
    }
    Ok((waiting, waited))
}

/// What `shutdown` did.
#[derive(Debug, Clone, Default)]
pub struct ShutdownReport {
    pub already_stopped: bool,
    pub settle: SettleReport,
    pub tasks_returned: Vec<u64>,
    pub leader: LeaderOutcome,
    pub leader_reason: Option<String>,
    pub stopped: bool,
    /// What became of the private socket file (a private team whose leader is gone only).
    pub socket: Option<crate::tmux::socket::SocketRemoval>,
}

/// `team-scale shutdown`.
pub fn shutdown(t: &Teardown) -> Result<ShutdownReport> {
    let store = t.store;
    let _g = store.lock_scale("shutdown")?;
    let team = store.load()?;
    teardown::validate_team(store, &team)?;
    let mut rep = ShutdownReport::default();
    if team.state == TeamState::Stopped && team.workers.is_empty() {
        rep.already_stopped = true;
        rep.stopped = true;
        rep.leader = LeaderOutcome::Skipped;
        return Ok(rep);
    }
    let names: Vec<WorkerName> = team.workers.iter().map(|w| w.name.clone()).collect();
    let entry = op_entry(t, &team, "shutdown", &names);
    let op = t.audit.intent(&entry)?;
    let kills = RefCell::new(Vec::new());
    let res = shutdown_after_intent(&t.deferring(&kills), &names, rep);
    record_op_outcome(t, kills.take(), op, entry, &res, |r| r.stopped);
    res
}

fn shutdown_after_intent(
    t: &Teardown,
    names: &[WorkerName],
    mut rep: ShutdownReport,
) -> Result<ShutdownReport> {
    let store = t.store;
    rep.tasks_returned = commit_removing(store, names, "shutdown")?;
    rep.settle = teardown::settle_removing(t, &[])?;
    if rep.settle.blocked() {
        rep.leader = LeaderOutcome::Skipped;
        rep.leader_reason = Some("workers remain".into());
        return Ok(rep);
    }
    let team = store.load()?;
    // Whether another session lives on the server: then it outlives this team, and its socket
    // stays without waiting for it to go.
    let mut shared_server = false;
    let workspace = store
        .root()
        .workspace()
        .map_or_else(|| team.workspace.clone(), std::path::Path::to_path_buf);
    if !team.leader.created_by_tools {
        rep.leader = LeaderOutcome::Adopted;
    } else if let Err(why) = team.leader_is_the_tools(&workspace) {
        rep.leader = LeaderOutcome::Kept;
        rep.leader_reason = Some(why);
    } else {
        let listing = t.tmux.list();
        if let crate::tmux::Listing::Panes(snap) = &listing {
            shared_server = snap.rows.iter().any(|r| r.session_id != team.session.id);
        }
        match view::prove_leader(&team, &listing) {
            PaneProof::Gone(_) => rep.leader = LeaderOutcome::Gone,
            PaneProof::Mismatch(r) | PaneProof::Unverifiable(r) => {
                rep.leader = LeaderOutcome::Kept;
                rep.leader_reason = Some(r);
            }
            PaneProof::Live(_) | PaneProof::Dead(_) => {
                let mut tags = view::leader_tags(&team);
                // The server the kill runs on is bound at the workspace's private socket (not
                // reached through an alias of that name).
                tags.push((
                    crate::tmux::SOCKET_NAME_VAR,
                    crate::paths::private_socket_name(&workspace),
                ));
                let target = KillTarget {
                    inc: team.leader.pane.clone(),
                    tags,
                    reason: "shutdown of a team whose leader the tools created".into(),
                    team: Some(team.name.to_string()),
                    workspace: Some(team.workspace.to_string_lossy().into_owned()),
                };
                let r = kill::kill_panes(t.tmux, t.audit, &t.caller, t.op, &[target])?.remove(0);
                if r.is_gone() {
                    rep.leader = LeaderOutcome::Killed;
                } else {
                    rep.leader = LeaderOutcome::Kept;
                    rep.leader_reason = Some(r.reason().unwrap_or("not confirmed").to_string());
                }
            }
        }
    }
    let (team, ()) = store.transact("shutdown", |team, _| {
        team.state = TeamState::Stopped;
        Ok(())
    })?;
    rep.stopped = true;
    // The private socket file, once its server is gone (it exits with its last session).
    if team.private_server && matches!(rep.leader, LeaderOutcome::Killed | LeaderOutcome::Gone) {
        rep.socket = Some(if shared_server {
            crate::tmux::socket::SocketRemoval::Kept("other sessions live on its server".into())
        } else {
            // The team is stopped already: a failure here is reported, not an error.
            crate::tmux::socket::remove_if_dead(&team.endpoint, Duration::from_secs(2))
                .unwrap_or_else(|e| crate::tmux::socket::SocketRemoval::Kept(e.to_string()))
        });
    }
    store.append_event(&team, "stopped", json!({"leader": rep.leader}))?;
    Ok(rep)
}
