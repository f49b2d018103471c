//! Teardown of `removing` workers, shared by `down`, `shutdown`, `reconcile` and the reaper's
//! `debt` verdict.
//!
//! For every worker, from one fresh snapshot: prove its pane. A pane that proves ours gets, in
//! this order: a durable audit intent (all workers in one group commit); a graceful stop of its
//! processes through pidfds (every descendant of the pane's supervisor, proven below it by
//! ancestry, `setsid` ones included; never a tmux server, another worker's pane, a process of
//! another incarnation, or a shared daemon; SIGTERM, grace, SIGKILL for survivors that still
//! prove ours); one proven `kill-pane` per worker, all in one tmux invocation; a fresh
//! snapshot to confirm; the audit outcome. A pane that does not prove ours is not touched and its
//! worker stays `removing` with the reason. Then resources are removed, and each worker whose
//! everything is gone is dropped from `team.json` (its unfinished tasks back to `pending`).
//!
//! tmux invocations: one snapshot, one batched kill, one confirming snapshot, whatever the
//! number of workers.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **There is one teardown.** A rollback of `up`, the leftovers of an abandoned operation
//!   (found by the next `up` or by `reconcile`), `down`, `shutdown` and the reaper's debt all end
//!   in `ops::teardown::settle_removing`: `ops::pending::settle_pending` only records the panes the
//!   caller made but has not recorded yet and moves the reservations to `removing` in one commit.
//!   (The scale lock is held, so every `pending` worker that is not the caller's is abandoned.)
//!
//! - **Teardown is batched across workers**: one snapshot, one batch of audit intents, one
//!   `process::terminate` over every proven process of every worker (the grace waits run
//!   together, polling pidfds), one batched `kill-pane`, one confirming snapshot, one batch of
//!   outcomes. The confirming snapshot is skipped when every kill's receipt came back: a
//!   receipt proves the guarded `kill-pane` ran on exactly the proven pane, and tmux removes a
//!   killed pane at once (`remain-on-exit` keeps panes whose process exits, never killed ones).
//!   A worker's processes are the descendants of its pane's supervisor (`team_core::supervisor`).
//!
//! - **`down` needs no listing before it kills** (`Seen::Guarded`, issue 15): when every worker
//!   to remove has a recorded pane whose first process is its live, proven supervisor, the
//!   processes are proven by ancestry alone (which never needed the pane) and each pane by the
//!   guard of its own `kill-pane`, which checks in tmux, in the command that kills, everything
//!   a listing would: pane id and pid, session, window, server pid and start time, and every
//!   tag. A `down 1` is one tmux call.
//!
//! - **The panes go first, then the processes**, in every teardown of workers that run under
//!   supervisors (with or without a listing): the guard of a pane's kill is the last-instant
//!   proof, and a worker whose kill is refused (its pane was re-tagged, moved, respawned, or the
//!   server is another, before or *during* the teardown) keeps its processes too, as a listing
//!   would have left them. The first orders (signals, `--grace`, SIGKILL, then the pane) killed
//!   the processes of a pane they then kept, as not ours: two black-box attackers found it, once
//!   without a listing and once during the grace. The supervisor survives its pane's hangup and
//!   passes it on to the pane's session (as a terminal would), so the processes get the hangup,
//!   then SIGTERM and SIGKILL after `--grace` for any still running, and stay below the
//!   supervisor for their proofs meanwhile. Workers of panes made before supervisors keep the
//!   old order: their processes hang below the pane's own process, which the kill would end.
//!   Attacks: `tests/it/listless_down.rs`.
//!
//! - **A pane that was just made may not run its supervisor yet**: until its `exec`, its first
//!   process is tmux's own child (tmux's comm and command line; panes of earlier versions ran
//!   `sh -c '... exec team-scale supervise ... --incarnation <inc>'` first), so teardown (a
//!   rollback right after the split) waits, bounded, while it is one of those, before it judges
//!   the pane's process.
//!
//! - **Late forks are swept**: after the grace, the subtree of each supervised worker whose pane
//!   went is walked again and whatever is proven there is stopped at once, up to five times; a
//!   worker still starting processes after that keeps its record as cleanup debt (exit 3).
//!   Before, a worker forking during `--grace` left processes running while `down` reported it
//!   removed (a black-box attacker's fork loop).
//!
//! - **A teardown walks only its workers' subtrees**: the process tree it reads is the
//!   subtrees of the removed workers' pane processes (`proctree::Tree::subtrees`, through the
//!   kernel's child lists), since every walk starts at one of them; the cost follows the
//!   workers' processes, not every process on the machine. Each root's identity is proven
//!   before its walk, and each process found through a pidfd, as before.
//!
//! - **Tagged panes are adopted only on the team's recorded server, and only proven.** After a
//!   crash between split and record, a worker's pane is found by its tags; a pane with those
//!   tags on another server (a restarted server that recycled `%N`) is never adopted or killed,
//!   and the worker stays `removing` with `server_changed`. Tags are claims, so the pane found
//!   is adopted only when what it runs proves it (`made_for`): its first process is the
//!   supervisor `up` started for exactly that reservation, or, dead, tmux started it with that
//!   supervisor's command, word for word. *Rejected:* the tags alone, confirmed by the pane
//!   process's `TEAM_*` environment (a black-box round killed a pane of the user's tagged as a
//!   reservation, and signalled its process for the environment it had been given).

use std::time::Duration;

use std::cell::RefCell;

use serde_json::json;

use crate::audit::{AuditLog, Entry, Stage};
use crate::error::{Error, Result};
use crate::model::{Lifecycle, PaneIncarnation, Task, TaskStatus, Team, Worker};
use crate::paths::WorkerName;
use crate::process::{self, ProcVerdict, Proven, StopOutcome};
use crate::proof::PaneProof;
use crate::store::{Changes, Store};
use crate::tmux::{Guard, Listing, Tmux, Txn, TxnOutcome};
use crate::view;

use super::resources::{self, ResourceReport};

/// What a teardown needs.
pub struct Teardown<'a> {
    pub store: &'a Store,
    pub tmux: &'a Tmux,
    pub audit: &'a AuditLog,
    /// `team-scale down`, `team-reap`, ...
    pub caller: String,
    /// The operation, for the audit records' `op`: `scale_down`, `shutdown`, `reconcile`,
    /// `rollback`, `reap`.
    pub op: &'static str,
    pub argv: Vec<String>,
    /// How long processes get between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The `team-scale` executables a worker's supervisor may have been started by: a dead
    /// pane carrying a reservation's tags is adopted only when tmux started it by one of them.
    pub supervisor_exes: &'a [std::path::PathBuf],
    /// Fail points (`failpoint::hit` in the binaries; a no-op otherwise).
    pub fail: &'a dyn Fn(&str) -> Result<()>,
    /// Progress during waits (the binary shows it on a terminal only).
    pub progress: &'a dyn Fn(&str),
    /// Where the kills' outcome records go when the caller writes them itself, in one group
    /// commit with its operation's own outcome ([`Teardown::deferring`]); `None`: each
    /// teardown writes its outcomes durably at once.
    pub outcomes: Option<&'a RefCell<Vec<AuditItem>>>,
}

/// One record for [`AuditLog::append_batch`].
pub type AuditItem = (Stage, Option<uuid::Uuid>, Entry);

impl<'a> Teardown<'a> {
    /// This teardown, with its kills' outcome records kept in `outcomes` instead of written:
    /// for an operation whose own outcome record follows (`down`, `shutdown`), which writes
    /// them with it, under one lock and one write. Only outcomes wait: every
    /// intent is still durable before its effect. A crash in between loses the outcomes, which
    /// then read as an intent without outcome ("result unknown"), as a crash right after a kill
    /// always could.
    pub fn deferring<'b>(&'b self, outcomes: &'b RefCell<Vec<AuditItem>>) -> Teardown<'b> {
        Teardown {
            caller: self.caller.clone(),
            argv: self.argv.clone(),
            outcomes: Some(outcomes),
            ..*self
        }
    }
}

/// What became of one process of a worker. It prints (text and JSON) as [`ProcOutcome::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcOutcome {
    /// It exited within the grace period after SIGTERM.
    ExitedAfterTerm,
    /// It survived the grace period, was re-proven, and exited after SIGKILL.
    Killed,
    /// It had exited before anything was sent.
    Gone,
    /// It does not prove ours (or no longer does): not signalled.
    NotOwned,
    /// It is still running after the stop.
    StillAlive,
    /// Detached and listening: it may serve clients outside the worker; left running.
    Shared,
    /// Detached, and the team's residue policy is `report`: left running.
    ResidueKept,
    /// Skipped by the ancestry walk (the reason says why).
    Skipped,
    /// Its ownership could not be verified: not signalled, and the worker stays `removing`.
    Unverifiable,
}

impl ProcOutcome {
    /// The word it prints.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcOutcome::ExitedAfterTerm => "exited_after_term",
            ProcOutcome::Killed => "killed",
            ProcOutcome::Gone => "gone",
            ProcOutcome::NotOwned => "not_owned",
            ProcOutcome::StillAlive => "still_alive",
            ProcOutcome::Shared => "shared",
            ProcOutcome::ResidueKept => "residue_kept",
            ProcOutcome::Skipped => "skipped",
            ProcOutcome::Unverifiable => "unverifiable",
        }
    }

    /// The outcome of one process [`process::terminate`] stopped, and its reason.
    fn of_stop(o: StopOutcome) -> (ProcOutcome, Option<String>) {
        match o {
            StopOutcome::ExitedAfterTerm => (ProcOutcome::ExitedAfterTerm, None),
            StopOutcome::Killed => (ProcOutcome::Killed, None),
            StopOutcome::GoneBefore => (ProcOutcome::Gone, None),
            StopOutcome::NotOwnedAnymore { reason } => (ProcOutcome::NotOwned, Some(reason)),
            StopOutcome::StillAlive { reason } => (ProcOutcome::StillAlive, Some(reason)),
        }
    }
}

/// What became of a worker's pane. It prints (text and JSON) as [`PaneOutcome::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneOutcome {
    /// Killed by this teardown (its kill's receipt came back, or a fresh listing confirmed it).
    Killed,
    /// Already gone (or gone by the time the kill's outcome was judged).
    Gone,
    /// Not proven ours, or the kill was not confirmed: left in place.
    Kept,
}

impl PaneOutcome {
    /// The word it prints.
    pub fn as_str(self) -> &'static str {
        match self {
            PaneOutcome::Killed => "killed",
            PaneOutcome::Gone => "gone",
            PaneOutcome::Kept => "kept",
        }
    }
}

macro_rules! prints_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    )*};
}
prints_as_str!(ProcOutcome, PaneOutcome, LeaderOutcome);

/// What `shutdown` did with the leader's pane. It prints as [`LeaderOutcome::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeaderOutcome {
    /// Killed, with proof.
    Killed,
    /// Already gone.
    Gone,
    /// Left alone: `init` adopted it (the tools did not create it).
    Adopted,
    /// Left alone: not proven ours, or its kill was not confirmed.
    Kept,
    /// Not reached (the team was stopped already, or workers remain).
    #[default]
    Skipped,
}

impl LeaderOutcome {
    /// The word it prints.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaderOutcome::Killed => "killed",
            LeaderOutcome::Gone => "gone",
            LeaderOutcome::Adopted => "adopted",
            LeaderOutcome::Kept => "kept",
            LeaderOutcome::Skipped => "skipped",
        }
    }
}

/// What became of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcReport {
    pub pid: u32,
    pub start_time: Option<u64>,
    pub outcome: ProcOutcome,
    pub reason: Option<String>,
}

/// What became of one worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    pub worker: WorkerName,
    pub pane_id: Option<String>,
    pub pane: PaneOutcome,
    pub processes: Vec<ProcReport>,
    pub resources: Option<ResourceReport>,
    /// Why the worker stays `removing`; empty when it was dropped.
    pub blocked: Vec<String>,
    pub dropped: bool,
    /// Tasks put back to `pending` when the record was dropped (normally none: `down` does
    /// that at its commit).
    pub tasks_returned: Vec<u64>,
}

/// What a teardown did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettleReport {
    pub workers: Vec<WorkerReport>,
}

impl SettleReport {
    /// Whether some worker stays `removing` (exit 3).
    pub fn blocked(&self) -> bool {
        self.workers.iter().any(|w| !w.dropped)
    }
}

/// Validates every record a teardown could act on: pane ids (shape and collisions are
/// [`Team::validate`]'s) and resource paths. A state file that fails is refused whole.
pub fn validate_team(store: &Store, team: &Team) -> Result<()> {
    team.validate(&store.root().team_json(&team.name))?;
    let mut seen = crate::paths::SeenDirs::default();
    for w in &team.workers {
        resources::validate(store.root(), team, w, &mut seen)?;
    }
    // Where removed workers' files are moved: a symlink or a file there is refused before any
    // effect, as the move itself would refuse it after the kills.
    crate::fsutil::state_dir_exists(store.root().path(), &store.root().trash_dir(&team.name))?;
    Ok(())
}

/// Returns to `pending` every unfinished task owned or claimed by `w` (owner and claim
/// cleared, version bumped). Call inside [`Store::transact`].
pub fn return_tasks(tasks: &[Task], w: &WorkerName, changes: &mut Changes) -> Vec<u64> {
    let mut out = Vec::new();
    for t in tasks {
        let mine = t.owner.as_ref() == Some(w) || t.claim.as_ref().is_some_and(|c| &c.worker == w);
        if mine && !matches!(t.status, TaskStatus::Completed | TaskStatus::Failed) {
            let mut t = t.clone();
            t.status = TaskStatus::Pending;
            t.owner = None;
            t.claim = None;
            t.version += 1;
            changes.put_task(&t);
            out.push(t.id);
        }
    }
    out
}

struct Plan {
    worker: Worker,
    /// `None`: not listed, proven by the guard of its own `kill-pane` ([`Seen::Guarded`]).
    proof: Option<PaneProof>,
    procs: Vec<Proven>,
    report: WorkerReport,
    audit_id: Option<uuid::Uuid>,
    /// The outcome of its `kill-pane` (step 4), when one was sent.
    kill: Option<TxnOutcome>,
}

/// Whether a worker's pane is to be killed: proven ours by a listing, or not listed and left to
/// the guard of its kill ([`Seen::Guarded`]).
fn pane_ours(proof: &Option<PaneProof>) -> bool {
    proof.as_ref().is_none_or(PaneProof::is_ours)
}

/// The audit action of one worker's teardown (one intent covers its processes and its pane):
/// the tmux verb `kill-pane` when it has a pane, else `signal` (its processes only).
fn worker_action(w: &Worker) -> &'static str {
    if w.pane.is_some() {
        crate::ops::kill::ACTION
    } else {
        "signal"
    }
}

fn entry(t: &Teardown, team: &Team, w: &Worker, action: &str, procs: &[Proven]) -> Entry {
    let mut targets = Vec::new();
    if let Some(p) = &w.pane {
        let mut v = view::pane_json(p);
        v["owner"] = json!(team.owner_id);
        v["worker"] = json!(w.name);
        v["incarnation"] = json!(w.incarnation);
        targets.push(v);
    }
    for p in procs {
        targets.push(json!({"pid": p.id.pid, "start_time": p.id.start_time}));
    }
    Entry {
        caller: t.caller.clone(),
        action: action.into(),
        op: Some(t.op.into()),
        argv: t.argv.clone(),
        endpoint: Some(team.endpoint.to_string_lossy().into_owned()),
        targets,
        workspace: Some(team.workspace.to_string_lossy().into_owned()),
        team: Some(team.name.to_string()),
        generation: Some(team.generation),
        owner_evidence: Some(json!({
            "@team_owner": team.owner_id, "@team_worker": w.name,
            "@team_incarnation": w.incarnation, "env": "TEAM_OWNER+TEAM_WORKER",
        })),
        reason: Some("worker is removing".into()),
        outcome: None,
    }
}

/// Records a pane found by its incarnation tag for a `removing` worker that has none
/// recorded (a scale-up that crashed between split and record). Only a pane on the team's own
/// recorded server (the leader's: every pane a scale-up makes is split there) can be adopted.
/// Returns, per worker, why panes that carry its tags were not adopted (on another server, a
/// restarted one with recycled ids; more than one; a protected or another worker's pane):
/// such a worker is not torn down, since a pane that may be its own exists unproven.
fn adopt_tagged_panes(
    t: &Teardown,
    team: &mut Team,
    names: &[WorkerName],
    listing: &Listing,
) -> Result<Vec<(WorkerName, String)>> {
    let Listing::Panes(snap) = listing else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(WorkerName, PaneIncarnation)> = Vec::new();
    let mut refused: Vec<(WorkerName, String)> = Vec::new();
    for w in team.workers.iter().filter(|w| {
        w.lifecycle == Lifecycle::Removing && w.pane.is_none() && names.contains(&w.name)
    }) {
        match tagged_pane(team, w, t.store.root().path(), t.supervisor_exes, snap) {
            Ok(Some(p)) => found.push((w.name.clone(), p)),
            Ok(None) => {}
            Err(why) => refused.push((w.name.clone(), why)),
        }
    }
    if found.is_empty() {
        return Ok(refused);
    }
    let (nt, ()) = t.store.transact("adopt-pane", |team, _| {
        for (n, p) in &found {
            if let Some(w) = team.worker_mut(n)
                && w.lifecycle == Lifecycle::Removing
                && w.pane.is_none()
            {
                w.pane = Some(p.clone());
            }
        }
        Ok(())
    })?;
    *team = nt;
    Ok(refused)
}

/// The pane carrying the tags of `w` (which has none recorded) on the team's recorded server:
/// `Ok(None)` when there is none, `Err` with the reason when one may be its own but cannot be
/// adopted.
pub(crate) fn tagged_pane(
    team: &Team,
    w: &Worker,
    root: &std::path::Path,
    exes: &[std::path::PathBuf],
    snap: &crate::tmux::Snapshot,
) -> std::result::Result<Option<PaneIncarnation>, String> {
    let owner = team.owner_id.to_string();
    let server = (team.leader.pane.server_pid, team.leader.pane.server_start);
    let inc = w.incarnation.to_string();
    let rows: Vec<_> = snap
        .rows
        .iter()
        .filter(|r| {
            r.tags.owner == owner && r.tags.incarnation == inc && r.tags.worker == w.name.as_str()
        })
        .collect();
    if let Some(r) = rows
        .iter()
        .find(|r| (r.server_pid, r.server_start) != server)
    {
        return Err(format!(
            "server_changed: pane {} carries {}'s tags but is on the server pid {} started {}, not the team's recorded pid {} started {}; not adopted",
            r.pane_id, w.name, r.server_pid, r.server_start, server.0, server.1
        ));
    }
    match rows.as_slice() {
        [] => Ok(None),
        [r] if !team.is_protected_pane(&r.pane_id)
            && !team
                .workers
                .iter()
                .any(|o| o.pane.as_ref().is_some_and(|p| p.pane_id == r.pane_id)) =>
        {
            made_for(team, w, root, exes, r).map_err(|why| {
                format!(
                    "pane {} carries {}'s tags but is not provably the pane its scale-up made ({why}); not adopted",
                    r.pane_id, w.name
                )
            })?;
            Ok(Some(PaneIncarnation {
                process_start: process::start_time(r.pane_pid).ok().flatten(),
                ..r.incarnation()
            }))
        }
        [r] => Err(format!(
            "pane {} carries {}'s tags but is the leader's, a protected or another worker's pane; not adopted",
            r.pane_id, w.name
        )),
        more => Err(format!(
            "{} panes carry {}'s tags ({}); none adopted",
            more.len(),
            w.name,
            more.iter()
                .map(|r| r.pane_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Whether `r`, the one pane carrying the tags of `w` (a reservation whose pane was never
/// recorded), is the pane its scale-up made. Tags are claims anyone with the socket can set;
/// what proves it is what the pane runs: its first process is the supervisor `up` started for
/// exactly this reservation (op, team, worker, owner, incarnation, state root `root`,
/// workspace), or, dead, tmux started it with that supervisor's command, word for word. A
/// pane of yours tagged as the worker, one whose process merely carries the worker's
/// environment, or the worker's pane respawned with another command is not adopted (and the
/// worker stays `removing`, its reasons saying why).
fn made_for(
    team: &Team,
    w: &Worker,
    root: &std::path::Path,
    exes: &[std::path::PathBuf],
    r: &crate::tmux::PaneRow,
) -> std::result::Result<(), String> {
    let want = crate::supervisor::SupervisorArgs {
        op: Some(w.op_id),
        team: team.name.clone(),
        worker: w.name.clone(),
        owner: team.owner_id,
        incarnation: w.incarnation,
        state_root: root.to_path_buf(),
        workspace: team.workspace.clone(),
    };
    if r.dead {
        return want.check_start_command(&r.start_command, exes);
    }
    let inc = w.incarnation.to_string();
    // A pane that was just made may still be tmux's child before its `exec`.
    let _ = check_supervisor_settled(r.pane_pid, None, &inc);
    match process::check_supervisor_args(r.pane_pid, None, &inc) {
        (process::SupervisorCheck::Alive(_), Some(a)) => {
            let d = a.differences(&want);
            if d.is_empty() {
                Ok(())
            } else {
                Err(format!("its supervisor works for {}", d.join(", ")))
            }
        }
        (process::SupervisorCheck::Alive(_), None) => {
            Err("its supervisor's arguments were not kept".into())
        }
        (process::SupervisorCheck::Gone, _) => Err(
            "its process has exited and tmux does not show the pane dead yet; judged next time"
                .into(),
        ),
        (process::SupervisorCheck::Other(why) | process::SupervisorCheck::Unverifiable(why), _) => {
            Err(format!(
                "its process is not that worker's supervisor: {why}"
            ))
        }
    }
}

/// The process tree a teardown walks, read once: the subtrees of the recorded pane processes
/// of the workers it removes (each one's supervisor), since
/// every walk starts at one of them. Whether a root is still the process recorded is proven
/// separately, before its walk.
fn process_tree(team: &Team, names: &[WorkerName]) -> Result<crate::proctree::Tree> {
    let roots: Vec<u32> = names
        .iter()
        .filter_map(|n| team.worker(n)?.pane.as_ref().map(|p| p.pane_pid))
        .collect();
    crate::proctree::Tree::subtrees(&roots)
}

/// A worker's processes, found by ancestry and proven one by one.
#[derive(Debug, Default)]
struct Found {
    proven: Vec<Proven>,
    reports: Vec<ProcReport>,
    blocked: Vec<String>,
    /// The recorded pane's own process is not the one recorded: touch nothing.
    pane_process_not_owned: bool,
}

fn proc_report(id: process::ProcId, outcome: ProcOutcome, reason: Option<String>) -> ProcReport {
    ProcReport {
        pid: id.pid,
        start_time: Some(id.start_time),
        outcome,
        reason,
    }
}

/// The processes of `w` to stop: the descendants of its pane's supervisor (the pane's first
/// process, which outlives the pane while residue of the worker lives), each proven below it
/// through a pidfd. Shared residue (detached and listening) is reported, never signalled; other
/// detached residue follows the team's residue policy. The supervisor itself is not signalled:
/// it exits once it has no children left. A pane whose first process is not the worker's
/// supervisor is not the worker's, whatever its tags and its processes' environment say.
fn worker_processes(
    team: &Team,
    w: &Worker,
    pane_proven: bool,
    tree: std::result::Result<&crate::proctree::Tree, String>,
    inspect: &dyn crate::proctree::Inspect,
    checked: &Checked,
) -> Found {
    let mut f = Found::default();
    let Some(pane) = &w.pane else {
        return f;
    };
    let inc = w.incarnation.to_string();
    let root = match checked.get(pane.pane_pid, pane.process_start, &inc) {
        process::SupervisorCheck::Alive(n) => n,
        process::SupervisorCheck::Gone => return f,
        process::SupervisorCheck::Unverifiable(r) => {
            f.blocked
                .push(format!("supervisor {} unverifiable: {r}", pane.pane_pid));
            return f;
        }
        process::SupervisorCheck::Other(why) => {
            // Tags and a record are claims; what makes a pane the worker's is that its first
            // process is the worker's supervisor. A pane whose process is not (a pane of the
            // user's carrying copied tags and environment, reached through a forged record)
            // is not touched, and neither is anything below it.
            if pane_proven {
                f.pane_process_not_owned = true;
                f.blocked.push(format!(
                    "not_owned: pane {} runs pid {}, which is not {}'s supervisor ({why}); the pane and its processes are not touched",
                    pane.pane_id, pane.pane_pid, w.name
                ));
            } else {
                tracing::debug!(worker = %w.name, %why, "pane gone and its pid is not its supervisor");
            }
            return f;
        }
    };
    let tree = match tree {
        Ok(t) => t,
        Err(e) => {
            f.blocked.push(format!("process scan failed: {e}"));
            return f;
        }
    };
    let below = tree.below(&root, &inc, inspect);
    prove_members(team, w, &root, &inc, below, &mut f);
    f
}

/// The processes below a worker's supervisor `root`: each one reported (shared, residue kept
/// by policy, skipped, gone, not owned, unverifiable) or proven below it into `f`.
fn prove_members(
    team: &Team,
    w: &Worker,
    root: &crate::proctree::Node,
    inc: &str,
    below: crate::proctree::Below,
    f: &mut Found,
) {
    for s in below.skipped {
        f.reports
            .push(proc_report(s.id, ProcOutcome::Skipped, Some(s.reason)));
    }
    for m in below.members {
        if m.shared {
            f.reports.push(proc_report(
                m.node.id,
                ProcOutcome::Shared,
                Some(format!(
                    "{:?} left the pane's session (or its parent, for the supervisor to adopt) and listens on a socket: it may serve clients outside {}; left running",
                    m.node.comm, w.name
                )),
            ));
            continue;
        }
        if m.detached && team.settings.residue == crate::model::ResiduePolicy::Report {
            f.reports.push(proc_report(
                m.node.id,
                ProcOutcome::ResidueKept,
                Some(format!(
                    "{:?} left the pane's session (or its parent); the team's residue policy is report",
                    m.node.comm
                )),
            ));
            continue;
        }
        match process::prove_below(m.node.id, root.id, inc) {
            (ProcVerdict::Owned, Some(p)) => f.proven.push(p),
            (ProcVerdict::Gone, _) => {
                f.reports
                    .push(proc_report(m.node.id, ProcOutcome::Gone, None))
            }
            (ProcVerdict::NotOwned { reason }, _) => {
                f.reports
                    .push(proc_report(m.node.id, ProcOutcome::NotOwned, Some(reason)));
            }
            (v, _) => {
                let reason = match v {
                    ProcVerdict::Unverifiable { reason } => reason,
                    _ => "no proof handle".into(),
                };
                f.blocked
                    .push(format!("process {} unverifiable: {reason}", m.node.id.pid));
                f.reports.push(proc_report(
                    m.node.id,
                    ProcOutcome::Unverifiable,
                    Some(reason),
                ));
            }
        }
    }
}

/// The supervisor checks step 1 of a teardown made (and those `down` made to pick its targets,
/// under the same scale lock), so that planning each worker does not make them again a few
/// milliseconds later. What a check found stays true or proves nothing more than it did: a
/// supervisor found alive is only the root of a walk, and each process below it is proven
/// below it again, through a pidfd, by a fresh walk up its parents (a pid reused since has
/// another start time); one found gone or not a supervisor stays so. The sweep after the kills
/// checks afresh ([`Checked::none`]).
#[derive(Default)]
pub struct Checked(std::collections::HashMap<(u32, Option<u64>, String), process::SupervisorCheck>);

impl Checked {
    /// Remembers a check of the supervisor recorded at `pid` (started at `start`) for
    /// incarnation `inc` that found it alive or gone; other findings (a pane still starting,
    /// an unreadable process) are made again when needed.
    pub fn remember(
        &mut self,
        pid: u32,
        start: Option<u64>,
        inc: &str,
        c: &process::SupervisorCheck,
    ) {
        if matches!(
            c,
            process::SupervisorCheck::Alive(_) | process::SupervisorCheck::Gone
        ) {
            self.0.insert((pid, start, inc.to_string()), c.clone());
        }
    }

    fn none() -> Checked {
        Checked::default()
    }

    /// The check of the supervisor recorded at `pid` (started at `start`) for incarnation
    /// `inc`: the one made earlier in this teardown, else a fresh one.
    fn get(&self, pid: u32, start: Option<u64>, inc: &str) -> process::SupervisorCheck {
        match self.0.get(&(pid, start, inc.to_string())) {
            Some(c) => c.clone(),
            None => check_supervisor_settled(pid, start, inc),
        }
    }
}

/// [`process::check_supervisor`], allowing a pane that was just made to finish starting: its
/// first process is `sh -c '... exec team-scale supervise ... --incarnation <inc> ...'` until
/// the `exec`, so while its command line names this incarnation, wait (bounded) for it.
fn check_supervisor_settled(pid: u32, start: Option<u64>, inc: &str) -> process::SupervisorCheck {
    let mut v = process::check_supervisor(pid, start, inc);
    // Up to a second, looking again after 1 ms, then 2, 4, ... 25: a `down` right after an
    // `up` finds the newest supervisor a millisecond or two from its `exec`, and a flat 25 ms
    // wait made it most of such a `down`'s time on a busy machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut pause = std::time::Duration::from_millis(1);
    while std::time::Instant::now() < deadline {
        // Still tmux's child before its `exec` (tmux's comm, tmux's command line), or a
        // starter that names this incarnation (panes made by earlier versions ran `sh -c
        // '... exec team-scale supervise ...'`).
        let starting = matches!(v, process::SupervisorCheck::Other(_))
            && (crate::process::read_procfs(format!("/proc/{pid}/comm")).is_ok_and(|c| {
                crate::proctree::is_tmux_comm(String::from_utf8_lossy(&c).trim_end())
            }) || crate::process::read_procfs(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains(crate::supervisor::SUBCOMMAND) && c.contains(inc)
            }));
        if !starting {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(25));
        v = process::check_supervisor(pid, start, inc);
    }
    v
}

/// Tears down the `removing` workers among `names` (all of them when `names` is empty). The
/// caller holds the team's scale lock.
pub fn settle_removing(t: &Teardown, names: &[WorkerName]) -> Result<SettleReport> {
    settle_removing_seen(t, names, Seen::Fresh)
}

/// How a teardown proves the panes it is about to kill.
#[derive(Debug)]
pub enum Seen {
    /// From a listing it takes itself.
    Fresh,
    /// From a listing the caller took under the same scale lock, after the last change the
    /// tools made to the team's panes (`down` lists to pick its targets).
    Listing(Listing),
    /// From no listing at all, when every worker has a recorded pane whose first process is
    /// its live, proven supervisor. Its processes are found by ancestry (which never needed
    /// the pane), and its pane is proven by the guard of its own `kill-pane`: the recorded
    /// incarnation and tags, checked by tmux in the command that kills. So the kills come
    /// first: a kill whose receipt does not come back is judged by a fresh listing, as always,
    /// and a worker whose pane then does not prove ours keeps its processes (nothing of it is
    /// touched, as with a listing first). The others' processes are stopped after their panes
    /// (the supervisor, which survives the hangup, passes it on to the pane's session first).
    /// When a worker does not qualify, the teardown takes a listing first ([`Seen::Fresh`]).
    Guarded,
}

/// What the caller of a teardown already checked, under the same scale lock, a moment before.
#[derive(Default)]
pub struct Prechecked {
    /// [`validate_team`] passed on this state (a commit since changed lifecycles, not paths):
    /// the teardown does not walk every worker's paths again. Each worker's files are still
    /// checked right before they are moved ([`resources::remove`]).
    pub validated: bool,
    /// Supervisor checks made to pick the targets (see [`Checked`]).
    pub checked: Checked,
}

/// [`settle_removing`], proving the panes as `seen` says. Nothing of the proofs weakens: a
/// pane that changed since it was seen is refused by the guard of its `kill-pane`, and the
/// confirming snapshot then judges it.
pub fn settle_removing_seen(
    t: &Teardown,
    names: &[WorkerName],
    seen: Seen,
) -> Result<SettleReport> {
    settle_removing_prechecked(t, names, seen, Prechecked::default())
}

/// [`settle_removing_seen`], reusing what the caller checked (`pre`).
pub fn settle_removing_prechecked(
    t: &Teardown,
    names: &[WorkerName],
    seen: Seen,
    pre: Prechecked,
) -> Result<SettleReport> {
    let mut team = t.store.load()?;
    if !pre.validated {
        validate_team(t.store, &team)?;
    }
    let names = removing_among(&team, names);
    if names.is_empty() {
        return Ok(SettleReport::default());
    }
    // 1. One snapshot (or none, see `Seen::Guarded`), and a plan per worker.
    let mut checked = pre.checked;
    let guarded = matches!(seen, Seen::Guarded) && all_supervised(&team, &names, &mut checked);
    let listing = first_listing(t, seen, guarded);
    let unadopted = adopt_unrecorded(t, &mut team, &names, &listing)?;
    let mut plans = plan_workers(t, &team, &names, &listing, &unadopted, guarded, &checked);
    // 2. Durable intents, one group commit, before any effect.
    let actionable = record_intents(t, &team, &mut plans)?;
    // 3-5. The effects: panes first (proven at the last instant by each kill's guard).
    panes_then_processes(t, &team, &mut plans, &actionable)?;
    // 5. Record every outcome.
    record_outcomes(t, &team, &plans);
    // 6. Resources, for workers whose pane and processes are gone.
    remove_resources(t, &team, &mut plans)?;
    (t.fail)("settle.before_drop")?;
    // 7. Drop finished records; record why the others stay.
    drop_finished(t.store, &mut plans)?;
    Ok(SettleReport {
        workers: plans.into_iter().map(|p| p.report).collect(),
    })
}

/// Steps 3-5, the kills first: a pane is proven at the last instant by its kill's guard, and a
/// worker whose pane does not prove ours then (re-tagged or moved, even during the grace)
/// keeps its processes too. Its supervisor keeps them below it meanwhile.
fn panes_then_processes(
    t: &Teardown,
    team: &Team,
    plans: &mut [Plan],
    actionable: &[usize],
) -> Result<()> {
    (t.fail)("settle.before_kill")?;
    kill_panes(t, team, plans, actionable)?;
    (t.fail)("down.killed")?;
    confirm_kills(t, team, plans);
    hold_unproven(plans, actionable);
    stop_processes(t, plans, actionable);
    sweep_late_processes(team, plans, actionable);
    (t.fail)("down.stopped")
}

/// The `removing` workers among `names` (all of them when `names` is empty).
fn removing_among(team: &Team, names: &[WorkerName]) -> Vec<WorkerName> {
    team.workers
        .iter()
        .filter(|w| {
            w.lifecycle == Lifecycle::Removing && (names.is_empty() || names.contains(&w.name))
        })
        .map(|w| w.name.clone())
        .collect()
}

/// Step 1: whether every worker in `names` has a recorded pane whose first process is its
/// live, proven supervisor, so that [`Seen::Guarded`] can do without a listing.
fn all_supervised(team: &Team, names: &[WorkerName], checked: &mut Checked) -> bool {
    names.iter().all(|n| {
        team.worker(n).is_some_and(|w| {
            w.pane.as_ref().is_some_and(|p| {
                let inc = w.incarnation.to_string();
                let key = (p.pane_pid, p.process_start, inc.clone());
                let c = match checked.0.get(&key) {
                    Some(c) => c.clone(),
                    None => check_supervisor_settled(p.pane_pid, p.process_start, &inc),
                };
                let alive = matches!(c, process::SupervisorCheck::Alive(_));
                checked.0.insert(key, c);
                alive
            })
        })
    })
}

/// Step 1: the one snapshot: the caller's, none when `guarded`, else a fresh one.
fn first_listing(t: &Teardown, seen: Seen, guarded: bool) -> Listing {
    match seen {
        Seen::Listing(l) => l,
        // Never read as a proof: every worker's proof is `None` (see `pane_proof`).
        _ if guarded => Listing::Failed("not listed: each pane is proven by its kill".into()),
        _ => t.tmux.list(),
    }
}

/// Step 1: adopts the tagged panes of workers that have none recorded (see
/// [`adopt_tagged_panes`]), and returns why the others were not adopted.
fn adopt_unrecorded(
    t: &Teardown,
    team: &mut Team,
    names: &[WorkerName],
    listing: &Listing,
) -> Result<Vec<(WorkerName, String)>> {
    if !team
        .workers
        .iter()
        .any(|w| names.contains(&w.name) && w.pane.is_none())
    {
        return Ok(Vec::new());
    }
    let unadopted = adopt_tagged_panes(t, team, names, listing)?;
    validate_team(t.store, team)?;
    Ok(unadopted)
}

/// Step 1: a plan per worker, from one scan of the process tree.
fn plan_workers(
    t: &Teardown,
    team: &Team,
    names: &[WorkerName],
    listing: &Listing,
    unadopted: &[(WorkerName, String)],
    guarded: bool,
    checked: &Checked,
) -> Vec<Plan> {
    let tree = process_tree(team, names);
    let inspect = crate::proctree::Proc::new();
    names
        .iter()
        .map(|n| {
            let w = team.worker(n).expect("selected from team").clone();
            let proof = match pane_proof(team, &w, listing, unadopted, guarded) {
                // No process runs in a dead pane to prove it by: tmux must have started it
                // as this worker's supervisor, word for word (as the reaper requires). A dead
                // pane of the user's carrying copied tags, reached through a forged record,
                // is not the worker's.
                Some(PaneProof::Dead(row)) => Some(
                    match made_for(team, &w, t.store.root().path(), t.supervisor_exes, &row) {
                        Ok(()) => PaneProof::Dead(row),
                        Err(why) => PaneProof::Mismatch(format!(
                            "pane {} is dead and is not provably the pane {}'s scale-up made ({why})",
                            row.pane_id, w.name
                        )),
                    },
                ),
                other => other,
            };
            plan_worker(
                team,
                w,
                proof,
                tree.as_ref().map_err(|e| e.to_string()),
                &inspect,
                checked,
            )
        })
        .collect()
}

/// Step 1: how the pane of `w` proves: `None` when `guarded` (the guard of its kill proves
/// it), a mismatch when a pane carrying its tags was not adopted, else from the listing.
fn pane_proof(
    team: &Team,
    w: &Worker,
    listing: &Listing,
    unadopted: &[(WorkerName, String)],
    guarded: bool,
) -> Option<PaneProof> {
    match unadopted.iter().find(|(u, _)| u == &w.name) {
        _ if guarded => None,
        Some((_, why)) => Some(PaneProof::Mismatch(why.clone())),
        None => Some(view::prove_worker(team, w, listing).unwrap_or_else(|| {
            // No pane recorded: a tagged pane may still exist (a scale-up that crashed
            // between split and record). Only a listing that answered can say there is
            // none; an unreadable one is unknown, never absent.
            match listing {
                Listing::Failed(e) => PaneProof::Unverifiable(format!(
                    "unverifiable: no pane was recorded and the listing failed ({e}), so a pane carrying its tags cannot be ruled out"
                )),
                Listing::Panes(_) | Listing::NoServer => {
                    PaneProof::Gone("no pane was ever recorded".into())
                }
            }
        })),
    }
}

/// Step 1: the plan of one worker: its processes, when its pane is ours or not listed.
fn plan_worker(
    team: &Team,
    w: Worker,
    proof: Option<PaneProof>,
    tree: std::result::Result<&crate::proctree::Tree, String>,
    inspect: &dyn crate::proctree::Inspect,
    checked: &Checked,
) -> Plan {
    let mut report = WorkerReport {
        worker: w.name.clone(),
        pane_id: w.pane.as_ref().map(|p| p.pane_id.clone()),
        pane: PaneOutcome::Kept,
        processes: Vec::new(),
        resources: None,
        blocked: Vec::new(),
        dropped: false,
        tasks_returned: Vec::new(),
    };
    let mut procs = Vec::new();
    match &proof {
        Some(PaneProof::Mismatch(r) | PaneProof::Unverifiable(r)) => {
            report.blocked.push(format!("pane not touched: {r}"));
        }
        Some(PaneProof::Live(_) | PaneProof::Dead(_) | PaneProof::Gone(_)) | None => {
            let found = worker_processes(
                team,
                &w,
                // A pane not listed is not proven: a pane process that is not a
                // supervisor is then left alone (not reached: guarded needs supervisors).
                proof.as_ref().is_some_and(PaneProof::is_ours),
                tree,
                inspect,
                checked,
            );
            report.processes.extend(found.reports);
            report.blocked.extend(found.blocked);
            // The pane's process is not the recorded one: touch nothing of this worker.
            if !found.pane_process_not_owned {
                procs = found.proven;
            }
        }
    }
    Plan {
        worker: w,
        proof,
        procs,
        report,
        audit_id: None,
        kill: None,
    }
}

/// Step 2: one durable intent per worker with something to do, in one group commit. Returns
/// the indexes of those workers.
fn record_intents(t: &Teardown, team: &Team, plans: &mut [Plan]) -> Result<Vec<usize>> {
    let actionable: Vec<usize> = (0..plans.len())
        .filter(|&i| {
            let p = &plans[i];
            p.report.blocked.is_empty() && (pane_ours(&p.proof) || !p.procs.is_empty())
        })
        .collect();
    if actionable.is_empty() {
        return Ok(actionable);
    }
    let items: Vec<(Stage, Option<uuid::Uuid>, Entry)> = actionable
        .iter()
        .map(|&i| {
            let w = &plans[i].worker;
            let e = entry(t, team, w, worker_action(w), &plans[i].procs);
            (Stage::Intent, None, e)
        })
        .collect();
    let recs = t.audit.append_batch(&items)?;
    for (&i, r) in actionable.iter().zip(recs) {
        plans[i].audit_id = Some(r.audit_id);
    }
    Ok(actionable)
}

/// Step 3: SIGTERM, grace, SIGKILL, for the proven processes of every actionable worker at
/// once.
fn stop_processes(t: &Teardown, plans: &mut [Plan], actionable: &[usize]) {
    let mut all: Vec<Proven> = Vec::new();
    let mut owner_of: Vec<usize> = Vec::new();
    for &i in actionable {
        for p in std::mem::take(&mut plans[i].procs) {
            owner_of.push(i);
            all.push(p);
        }
    }
    if !all.is_empty() {
        (t.progress)(&format!(
            "stopping {} process(es): SIGTERM, then SIGKILL after {:?} for any still running",
            all.len(),
            t.grace
        ));
    }
    stop(plans, all, owner_of, t.grace);
}

/// Stops `all` (SIGTERM, then SIGKILL after `grace`) and reports each outcome to its worker's
/// plan (`owner_of`, in the same order); one still alive blocks its worker.
fn stop(plans: &mut [Plan], all: Vec<Proven>, owner_of: Vec<usize>, grace: Duration) {
    for ((id, o), i) in process::terminate(all, grace).into_iter().zip(owner_of) {
        let (outcome, reason) = ProcOutcome::of_stop(o);
        if outcome == ProcOutcome::StillAlive {
            plans[i]
                .report
                .blocked
                .push(format!("process {} still alive", id.pid));
        }
        plans[i].report.processes.push(ProcReport {
            pid: id.pid,
            start_time: Some(id.start_time),
            outcome,
            reason,
        });
    }
}

/// How many times [`sweep_late_processes`] walks a worker's subtree again.
const SWEEPS: usize = 5;

/// Step 5, after the grace: what a worker started while it was being stopped (a fork during
/// `--grace`, a daemon started by a trap) was not in the first walk. The subtree of each
/// supervised worker whose pane went is walked again and whatever is proven there is stopped
/// at once (its worker has had its grace), up to [`SWEEPS`] times; a worker still starting
/// processes after that keeps its record as cleanup debt, never reported removed while a
/// process of it runs.
fn sweep_late_processes(team: &Team, plans: &mut [Plan], actionable: &[usize]) {
    let eligible = |p: &Plan| p.report.blocked.is_empty() && p.worker.pane.is_some();
    let inspect = crate::proctree::Proc::new();
    for round in 0..=SWEEPS {
        let idx: Vec<usize> = actionable
            .iter()
            .copied()
            .filter(|&i| eligible(&plans[i]))
            .collect();
        let roots: Vec<u32> = idx
            .iter()
            .filter_map(|&i| plans[i].worker.pane.as_ref().map(|p| p.pane_pid))
            .collect();
        if roots.is_empty() {
            return;
        }
        let tree = crate::proctree::Tree::subtrees(&roots);
        let mut all: Vec<Proven> = Vec::new();
        let mut owner_of: Vec<usize> = Vec::new();
        for &i in &idx {
            // A supervisor with nothing left below it (or gone) has nothing to prove.
            let root = plans[i].worker.pane.as_ref().map_or(0, |p| p.pane_pid);
            if tree.as_ref().is_ok_and(|t| !t.has_children(root)) {
                continue;
            }
            // Only a walk from its live supervisor: a pid that is no longer one (it exited and
            // the pid was reused) proves nothing here.
            let t = tree.as_ref().map_err(|e| e.to_string());
            let f = worker_processes(team, &plans[i].worker, false, t, &inspect, &Checked::none());
            for p in f.proven {
                owner_of.push(i);
                all.push(p);
            }
        }
        if all.is_empty() {
            return;
        }
        if round == SWEEPS {
            for i in owner_of {
                let why = "processes still start below its supervisor; stopped again on the next reconcile";
                if !plans[i].report.blocked.iter().any(|b| b == why) {
                    plans[i].report.blocked.push(why.into());
                }
            }
            return;
        }
        stop(plans, all, owner_of, Duration::ZERO);
    }
}

/// Step 4: one guarded `kill-pane` per actionable worker whose pane is ours (or left to its
/// guard), all in one tmux invocation; each outcome goes to its plan.
fn kill_panes(t: &Teardown, team: &Team, plans: &mut [Plan], actionable: &[usize]) -> Result<()> {
    let mut txns = Vec::new();
    let mut killed = Vec::new();
    for &i in actionable {
        let p = &plans[i];
        if pane_ours(&p.proof)
            && let Some(inc) = &p.worker.pane
        {
            let tags = view::worker_tags(team, &p.worker);
            let refs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
            txns.push(Txn::kill_pane(Guard::pane(inc, &refs, false)?));
            killed.push(i);
        }
    }
    if txns.is_empty() {
        return Ok(());
    }
    let outcomes = match t.tmux.run_txns(&txns) {
        Ok(o) => o,
        Err(e) => vec![TxnOutcome::Unknown(e.to_string()); txns.len()],
    };
    for (i, o) in killed.into_iter().zip(outcomes) {
        plans[i].kill = Some(o);
    }
    Ok(())
}

/// Step 5: what became of each pane. A fresh snapshot confirms the kills, unless every kill's
/// receipt came back: a receipt proves the guarded `kill-pane` ran on exactly the proven
/// pane, which tmux removes at once (remain-on-exit keeps a pane whose process exits, never
/// one that is killed).
fn confirm_kills(t: &Teardown, team: &Team, plans: &mut [Plan]) {
    let mut kills = plans.iter().filter_map(|p| p.kill.as_ref()).peekable();
    let any = kills.peek().is_some();
    let all_done = kills.all(|o| matches!(o, TxnOutcome::Done(_)));
    let listing = (any && !all_done).then(|| confirm_listing(t.tmux, team.leader.pane.server_pid));
    for p in plans.iter_mut() {
        let Some(kill) = &p.kill else {
            if matches!(p.proof, Some(PaneProof::Gone(_))) {
                p.report.pane = PaneOutcome::Gone;
            }
            continue;
        };
        let confirm = match &listing {
            None => PaneProof::Gone("killed: the receipt came back".into()),
            Some(l) => view::prove_worker(team, &p.worker, l)
                .unwrap_or_else(|| PaneProof::Gone(String::new())),
        };
        match confirm {
            PaneProof::Gone(_) if matches!(kill, TxnOutcome::Done(_)) => {
                p.report.pane = PaneOutcome::Killed;
            }
            PaneProof::Gone(_) => p.report.pane = PaneOutcome::Gone,
            c => p.report.blocked.push(format!(
                "kill-pane not confirmed ({}): {}",
                match kill {
                    TxnOutcome::Done(_) => "done".to_string(),
                    TxnOutcome::Refused => "refused: the pane no longer proves ours".to_string(),
                    TxnOutcome::Unknown(e) => format!("unknown: {e}"),
                },
                c.reason().unwrap_or_else(|| "pane still present".into())
            )),
        }
    }
}

/// After the kills (kills first: every teardown of supervised workers): a worker whose kill was
/// not confirmed (its pane changed: re-tagged, moved, respawned, another server) keeps its
/// processes, as it would had a listing shown the change first. A pane confirmed gone is not
/// such a change.
fn hold_unproven(plans: &mut [Plan], actionable: &[usize]) {
    for &i in actionable {
        let p = &mut plans[i];
        if !p.report.blocked.is_empty() && !p.procs.is_empty() {
            p.procs.clear();
            p.report
                .blocked
                .push("processes not touched: the pane does not prove ours".into());
        }
    }
}

/// Step 5: the audit outcome of every worker that has an intent, in one batch.
fn record_outcomes(t: &Teardown, team: &Team, plans: &[Plan]) {
    let mut items = Vec::new();
    for p in plans {
        let Some(id) = p.audit_id else {
            continue;
        };
        let ok = p.report.blocked.is_empty();
        let mut e = entry(t, team, &p.worker, worker_action(&p.worker), &[]);
        e.outcome = Some(if ok {
            format!("pane {}", p.report.pane)
        } else {
            p.report.blocked.join("; ")
        });
        e.targets.extend(
            p.report
                .processes
                .iter()
                .map(|r| json!({"pid": r.pid, "start_time": r.start_time, "outcome": r.outcome})),
        );
        items.push((
            if ok { Stage::Complete } else { Stage::Failed },
            Some(id),
            e,
        ));
    }
    if let Some(later) = t.outcomes {
        later.borrow_mut().extend(items);
    } else if !items.is_empty()
        && let Err(e) = t.audit.append_outcomes(&items)
    {
        tracing::warn!(error = %e, "could not record teardown outcomes");
    }
}

/// Step 6: removes the resources of every worker that nothing blocks.
///
/// The kills have happened by now: a path found unsafe here (swapped for a symlink since the
/// checks before the first effect) leaves that worker `removing` with the reason, as any other
/// failure does, so the command reports cleanup debt (exit 3), never "malformed input, no
/// effect" (65). Nothing is moved through it.
fn remove_resources(t: &Teardown, team: &Team, plans: &mut [Plan]) -> Result<()> {
    if plans.iter().all(|p| !p.report.blocked.is_empty()) {
        return Ok(());
    }
    let mut dirs = match resources::Dirs::open(t.store.root(), team) {
        Ok(d) => d,
        Err(Error::FailPoint(f)) => return Err(Error::FailPoint(f)),
        Err(e) => {
            for p in plans.iter_mut().filter(|p| p.report.blocked.is_empty()) {
                p.report.blocked.push(format!("resources: {e}"));
            }
            return Ok(());
        }
    };
    for p in plans.iter_mut() {
        if !p.report.blocked.is_empty() {
            continue;
        }
        match resources::remove(t.store.root(), team, &p.worker, &mut dirs, t.fail) {
            Ok(r) => {
                p.report.blocked.extend(r.blocked.iter().cloned());
                p.report.resources = Some(r);
            }
            Err(Error::FailPoint(f)) => return Err(Error::FailPoint(f)),
            Err(e) => p.report.blocked.push(format!("resources: {e}")),
        }
    }
    delete_branches(t, team, plans)?;
    dirs.sync()
}

/// Deletes the branches the tools made for removed workers (each still at the tip checked
/// when its worktree went), after one durable batch of audit intents, and records the
/// outcomes: a branch is the user's repository's, outside `.team`, and deleting one is an
/// effect like a kill. A branch that cannot be deleted (it moved since) is kept, and says so.
fn delete_branches(t: &Teardown, team: &Team, plans: &mut [Plan]) -> Result<()> {
    let todo: Vec<usize> = (0..plans.len())
        .filter(|&i| {
            plans[i]
                .report
                .resources
                .as_ref()
                .is_some_and(|r| r.branch_to_delete.is_some())
        })
        .collect();
    if todo.is_empty() {
        return Ok(());
    }
    let target = |p: &Plan| {
        let (b, tip) = p
            .report
            .resources
            .as_ref()
            .and_then(|r| r.branch_to_delete.clone())?;
        Some((b, tip))
    };
    let items: Vec<AuditItem> = todo
        .iter()
        .filter_map(|&i| {
            let (b, tip) = target(&plans[i])?;
            let mut e = entry(t, team, &plans[i].worker, "delete-branch", &[]);
            e.targets = vec![json!({"branch": b, "commit": tip, "repository": team.workspace})];
            Some((Stage::Intent, None, e))
        })
        .collect();
    // Fail closed: without a durable intent, no branch is deleted (each is kept, and said so).
    let recs = match t.audit.append_batch(&items) {
        Ok(r) => r,
        Err(e) => {
            for &i in &todo {
                if let Some(r) = plans[i].report.resources.as_mut()
                    && let Some((b, _)) = r.branch_to_delete.take()
                {
                    r.kept_branch = Some(b.clone());
                    r.kept_branch_why = Some(format!("its audit intent failed: {e}"));
                    plans[i]
                        .report
                        .blocked
                        .push(format!("branch {b} kept: its audit intent failed: {e}"));
                }
            }
            return Ok(());
        }
    };
    let mut outcomes = Vec::new();
    for (&i, rec) in todo.iter().zip(recs) {
        let Some((b, tip)) = target(&plans[i]) else {
            continue;
        };
        let w = &plans[i].worker;
        let made =
            resources::branch_made_message(team.name.as_str(), w.name.as_str(), &w.incarnation);
        let res = resources::delete_branch(&team.workspace, &b, &tip, &made);
        let mut e = entry(t, team, &plans[i].worker, "delete-branch", &[]);
        e.targets = vec![json!({"branch": b, "commit": tip, "repository": team.workspace})];
        e.outcome = Some(match &res {
            Ok(()) => "deleted".into(),
            Err(err) => format!("kept: {err}"),
        });
        let ok = res.is_ok();
        outcomes.push((
            if ok { Stage::Complete } else { Stage::Failed },
            Some(rec.audit_id),
            e,
        ));
        if let Some(r) = plans[i].report.resources.as_mut() {
            r.branch_to_delete = None;
            match &res {
                Ok(()) => r.branch_deleted = Some(b),
                Err(err) => {
                    r.kept_branch = Some(b);
                    r.kept_branch_why = Some(match err {
                        Error::Refused(why) => why.clone(),
                        e => e.to_string(),
                    });
                }
            }
        }
    }
    match t.outcomes {
        Some(later) => later.borrow_mut().extend(outcomes),
        None => {
            if let Err(e) = t.audit.append_outcomes(&outcomes) {
                tracing::warn!(error = %e, "could not record the branch deletions' outcomes");
            }
        }
    }
    Ok(())
}

/// Step 7: drops the records of the workers nothing blocks (their unfinished tasks back to
/// `pending`), and records why the others stay `removing`, in one commit.
fn drop_finished(store: &Store, plans: &mut [Plan]) -> Result<()> {
    let (_, returned) = store.transact("settle", |team, changes| {
        let tasks = store.tasks()?;
        let mut returned: Vec<(WorkerName, Vec<u64>)> = Vec::new();
        for p in plans.iter() {
            let Some(w) = team.worker_mut(&p.worker.name) else {
                continue;
            };
            if w.lifecycle != Lifecycle::Removing || w.incarnation != p.worker.incarnation {
                continue;
            }
            if p.report.blocked.is_empty() {
                returned.push((w.name.clone(), return_tasks(&tasks, &w.name, changes)));
                let n = w.name.clone();
                team.workers.retain(|x| x.name != n);
            } else {
                w.removal_reasons = p.report.blocked.clone();
            }
        }
        Ok(returned)
    })?;
    for p in plans.iter_mut() {
        if let Some((_, r)) = returned.iter().find(|(n, _)| n == &p.worker.name) {
            p.report.dropped = true;
            p.report.tasks_returned = r.clone();
        }
    }
    Ok(())
}

/// A fresh snapshot to confirm kills. A server that no longer answers but whose pid still runs
/// (or answers that it has no session) is exiting (its last session just went): wait for the pid to go, polling, up to 2 s, so that
/// the proof can say `gone` rather than `unverifiable`.
pub fn confirm_listing(tmux: &Tmux, server_pid: u32) -> Listing {
    let l = tmux.list();
    if !l.server_exiting() {
        return l;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while view::pid_alive(server_pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    tmux.list()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outcomes print as the words `down`'s text and JSON output and the audit log have
    /// always carried: Display, serde and `as_str` agree.
    #[test]
    fn outcomes_print_their_words() {
        use ProcOutcome as P;
        let procs = [
            (P::ExitedAfterTerm, "exited_after_term"),
            (P::Killed, "killed"),
            (P::Gone, "gone"),
            (P::NotOwned, "not_owned"),
            (P::StillAlive, "still_alive"),
            (P::Shared, "shared"),
            (P::ResidueKept, "residue_kept"),
            (P::Skipped, "skipped"),
            (P::Unverifiable, "unverifiable"),
        ];
        for (o, word) in procs {
            assert_eq!(o.as_str(), word);
            assert_eq!(o.to_string(), word);
            assert_eq!(serde_json::to_value(o).unwrap(), json!(word));
        }
        for (o, word) in [
            (PaneOutcome::Killed, "killed"),
            (PaneOutcome::Gone, "gone"),
            (PaneOutcome::Kept, "kept"),
        ] {
            assert_eq!(o.to_string(), word);
            assert_eq!(serde_json::to_value(o).unwrap(), json!(word));
        }
    }
}
