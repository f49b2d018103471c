//! `up`: add workers to a live team, all or nothing, crash-safe (docs/design.md section 6).
//!
//! Order of work, all under the team's scale lock:
//!
//! 1. validate the request against the state (task owners, `blocked_by`, capacity, git);
//! 2. settle `pending` leftovers of abandoned operations;
//! 3. prove the split source (the last member's pane, else the leader) from one snapshot;
//! 4. reserve every new worker as `pending` with this op's id, and the task ids, in one commit
//!    (fail point `up.reserved`);
//! 5. prepare worker dirs, inboxes, startup scripts, worktrees (`up.prepared`);
//! 6. create all panes in as few tmux invocations as possible: one guarded chain that splits the
//!    source and then each new pane in turn, every pane tagged (owner, worker, incarnation,
//!    workspace, name, op) in the same server-side step and started with `--op <op>` in its
//!    start command; a full window (`no space for new pane`) continues in a new window of the
//!    team's session (`up.split`);
//! 7. record the incarnations in team.json, still `pending` (`up.tagged`);
//! 8. deliver the first prompt to every new worker at once through [`crate::ops::deliver`]
//!    (`up.ready` before, `up.triggered` after): per the team's agent profile it was given as a
//!    launch argument, printed by the runtime script, or typed with proof; a dead worker, a
//!    blocking screen or a readiness timeout makes the whole operation roll back with
//!    [`Error::Undelivered`] naming each worker's result;
//! 9. one journaled commit makes them `active` and writes the tasks (`up.commit` before,
//!    `up.committed` after).
//!
//! Any failure after step 4 rolls back through [`crate::ops::pending::settle_pending`]: panes
//! killed with proof, files and worktrees removed, reservations dropped; what cannot be proven
//! stays `removing` and the error is [`Error::CleanupDebt`] (exit 3). `next_worker_index` and
//! `next_task_id` are never lowered.
//!
//! Submodules, along the steps: `checks` (step 1's checks against the state), `tasks` (the
//! task JSON, parsed, validated and built), `source` (step 3), `layout` (the geometry that
//! steps 3 and 6 plan with), `prepare` (step 5), `spawn` (step 6).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **An undelivered worker rolls the whole `up` back** (all or nothing, as before): `up` exits 1
//!   naming each worker's result, next step and last screen lines, and the team is as it was, so
//!   the next command needs nothing special. Keeping an undelivered worker and retrying delivery
//!   waits for the leader's `send` command (issue 13), which will call `ops::deliver::deliver`.

mod checks;
mod layout;
mod prepare;
mod source;
mod spawn;
mod tasks;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use super::Env;
use super::deliver::{self, Delivery};
use super::pending::{self, SettleReport};
use crate::agent::Profile;
use crate::error::{Error, Result};
use crate::failpoint;
use crate::fsutil;
use crate::model::{
    Lifecycle, PaneIncarnation, Resources, Task, Team, TeamState, Worker, WorktreeMode,
    WorktreeRecord,
};
use crate::paths::{RoleName, WorkerName};
use crate::tmux::Tmux;
use crate::tmux::quote::check_literal_text;
use crate::view::pane_json;

use checks::{check_capacity, check_git, check_new_paths};
pub use layout::MIN_PANE;
pub use prepare::team_profile;
use source::{Source, prove_source};
pub(crate) use tasks::{PlannedTask, build_tasks, validate_tasks};
pub use tasks::{TaskRef, TaskSpec, parse_tasks};

/// What `up` is asked to do.
#[derive(Debug, Clone)]
pub struct UpRequest {
    pub count: u32,
    pub role: Option<RoleName>,
    pub tasks: Vec<TaskSpec>,
    /// Zero disables the readiness wait.
    pub ready_timeout: Duration,
    /// The `send-keys` audit entries name this argv.
    pub argv: Vec<String>,
    /// The operator's kill switch (`TEAM_SCALING=0`, read by the binary).
    pub scaling_disabled_by_env: bool,
}

/// How a new worker's readiness wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    TimedOut,
    Skipped,
}

impl Readiness {
    pub fn word(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::TimedOut => "timeout",
            Readiness::Skipped => "skipped",
        }
    }
}

/// One worker `up` added.
#[derive(Debug, Clone)]
pub struct AddedWorker {
    pub name: WorkerName,
    pub index: u64,
    pub role: Option<RoleName>,
    pub incarnation: Uuid,
    pub pane: PaneIncarnation,
    pub readiness: Readiness,
    /// How the first prompt reached it (`None`: delivery skipped, `--ready-timeout 0`).
    pub delivery: Option<Delivery>,
    pub tasks: Vec<u64>,
    pub worktree: Option<WorktreeRecord>,
    pub inbox: PathBuf,
    /// Whether its pane opened a new window (the source's window was full).
    pub new_window: bool,
}

/// The result of a successful `up`.
#[derive(Debug, Clone)]
pub struct UpReport {
    pub op_id: Uuid,
    pub team: Team,
    pub added: Vec<AddedWorker>,
    pub tasks: Vec<Task>,
    /// Leftovers of earlier operations settled first.
    pub settled: SettleReport,
    pub warnings: Vec<String>,
    /// The agent profile the workers run.
    pub agent: String,
    /// tmux invocations this call made (for benchmarks).
    pub tmux_invocations: u64,
}

/// A worker being made.
#[derive(Debug, Clone)]
struct Plan {
    name: WorkerName,
    index: u64,
    incarnation: Uuid,
    worker_dir: PathBuf,
    inbox: PathBuf,
    script: PathBuf,
    worktree: Option<WorktreeRecord>,
    cwd: PathBuf,
}

/// Adds workers. See the module docs for the steps.
pub fn up(env: &Env, req: &UpRequest) -> Result<UpReport> {
    let inv0 = crate::tmux::invocations();
    if req.count == 0 {
        return Err(Error::Usage("N must be at least 1".into()));
    }
    let _scale = env.store.lock_scale("up")?;
    let team = env.store.load()?;
    super::check_scaling(&team, req.scaling_disabled_by_env)?;
    if team.state != TeamState::Active {
        return Err(Error::Refused(format!(
            "team {} is stopped; create it again with `team-scale init`",
            team.name
        )));
    }
    // 1. Validate against the state, before any effect.
    let v = validate(env, req, &team)?;
    // 2. Leftovers of abandoned operations (and the capacity they leave).
    let mut warnings = Vec::new();
    let had_pending = team.in_state(Lifecycle::Pending).next().is_some();
    let settled = settle_leftovers(env, &team, &mut warnings)?;
    // Settling changes the state only when there were pending workers to settle; membership
    // changes only under the scale lock this `up` holds, and the reservation re-checks the
    // counters it builds on.
    let team = if had_pending { env.store.load()? } else { team };
    warn_removing(&team, &mut warnings);
    check_capacity(&team, v.names.len() as u64)?;
    // 3. The split source, from one snapshot.
    let tmux = env.tmux(&team);
    let source = prove_source(&team, &tmux)?;
    if let Some(w) = &source.skipped {
        warnings.push(w.clone());
    }
    // 4. Reserve.
    let op = Uuid::new_v4();
    let plans = plans_for(env, &team, &v.names, &v.branches);
    let now = fsutil::now_rfc3339();
    // Nothing is reserved yet: an interrupt here leaves nothing behind.
    crate::interrupt::check("up.validate")?;
    let first_task = team.next_task_id;
    let team = reserve(env, req, &team, op, &plans, v.tasks.len() as u64, &now)?;
    let tasks = build_tasks(&v.tasks, first_task, &now);
    // 5-9, rolled back on any failure.
    let mut made: Vec<(WorkerName, PaneIncarnation)> = Vec::new();
    let new = New {
        env,
        req,
        tmux: &tmux,
        source: &source,
        op,
        plans: &plans,
        tasks: &tasks,
        profile: &v.profile,
    };
    match new.build(&team, &mut made) {
        Ok((team, added)) => Ok(UpReport {
            op_id: op,
            team,
            added,
            tasks,
            settled,
            warnings,
            agent: v.profile.name.clone(),
            tmux_invocations: crate::tmux::invocations() - inv0,
        }),
        Err(cause) => Err(roll_back(env, &team, op, &made, cause)),
    }
}

/// What step 1 found valid.
struct Valid {
    profile: Profile,
    /// The new workers' names.
    names: Vec<WorkerName>,
    tasks: Vec<PlannedTask>,
    /// Each new worker's branch (branch mode).
    branches: Vec<Option<String>>,
}

/// Step 1: the request against the state (tasks, git, the new workers' paths).
fn validate(env: &Env, req: &UpRequest, team: &Team) -> Result<Valid> {
    let profile = team_profile(env, team)?;
    let names: Vec<WorkerName> = (0..u64::from(req.count))
        .map(|i| WorkerName::for_index(team.next_worker_index + i))
        .collect();
    let existing_ids: HashSet<u64> = env.store.tasks()?.iter().map(|t| t.id).collect();
    let tasks = validate_tasks(team, &req.tasks, &names, &existing_ids)?;
    let branches = check_git(team, &names)?;
    check_new_paths(env.store.root(), team, &names)?;
    Ok(Valid {
        profile,
        names,
        tasks,
        branches,
    })
}

/// Step 2: settles the `pending` workers of abandoned operations; those that stay are named in
/// `warnings`.
fn settle_leftovers(env: &Env, team: &Team, warnings: &mut Vec<String>) -> Result<SettleReport> {
    if team.in_state(Lifecycle::Pending).next().is_none() {
        return Ok(SettleReport::default());
    }
    let r = pending::settle_pending(env, None, &[])?;
    for w in r.leftovers() {
        warnings.push(format!(
            "leftover pending worker {} of op {} could not be cleaned and stays removing: {}",
            w.worker,
            w.op_id,
            w.reasons.join("; ")
        ));
    }
    Ok(r)
}

/// Step 2: names the workers still being removed (cleanup debt) in `warnings`.
fn warn_removing(team: &Team, warnings: &mut Vec<String>) {
    let removing: Vec<String> = team
        .in_state(Lifecycle::Removing)
        .map(|w| w.name.to_string())
        .collect();
    if !removing.is_empty() {
        warnings.push(format!(
            "cleanup debt: {} still being removed; run `team-scale reconcile {}`",
            removing.join(", "),
            team.name
        ));
    }
}

/// Step 4: the plan of each new worker (its paths, worktree and incarnation).
fn plans_for(
    env: &Env,
    team: &Team,
    names: &[WorkerName],
    branches: &[Option<String>],
) -> Vec<Plan> {
    let root = env.store.root();
    let ws = team.workspace.clone();
    names
        .iter()
        .zip(branches)
        .enumerate()
        .map(|(i, (name, branch))| {
            let worker_dir = root.worker_dir(&team.name, name);
            let worktree = match &team.settings.worktree {
                WorktreeMode::Off => None,
                WorktreeMode::Detached | WorktreeMode::Branch(_) => Some(WorktreeRecord {
                    path: root.worktree(&team.name, name),
                    branch: branch.clone(),
                    branch_created: branch.is_some(),
                }),
            };
            Plan {
                name: name.clone(),
                index: team.next_worker_index + i as u64,
                incarnation: Uuid::new_v4(),
                inbox: worker_dir.join("inbox.md"),
                worker_dir,
                script: root.runtime_script(&team.name, name),
                cwd: worktree.as_ref().map_or(ws.clone(), |w| w.path.clone()),
                worktree,
            }
        })
        .collect()
}

/// Step 4: reserves every new worker as `pending` with this op's id, and `ntasks` task ids, in
/// one commit, refused if the team changed since `team` was read.
fn reserve(
    env: &Env,
    req: &UpRequest,
    team: &Team,
    op: Uuid,
    plans: &[Plan],
    ntasks: u64,
    now: &str,
) -> Result<Team> {
    let n = plans.len() as u64;
    let expected_index = team.next_worker_index;
    let expected_task = team.next_task_id;
    let (team, ()) = env.store.transact("up.reserve", |t, _| {
        if t.next_worker_index != expected_index || t.next_task_id != expected_task {
            return Err(Error::Refused(
                "the team changed while up was validating; retry".into(),
            ));
        }
        check_capacity(t, n)?;
        for p in plans {
            t.workers.push(Worker {
                name: p.name.clone(),
                index: p.index,
                role: req.role.clone(),
                lifecycle: Lifecycle::Pending,
                incarnation: p.incarnation,
                op_id: op,
                pane: None,
                resources: Resources {
                    worker_dir: Some(p.worker_dir.clone()),
                    script: Some(p.script.clone()),
                    worktree: p.worktree.clone(),
                },
                removal_reasons: Vec::new(),
                created_at: now.to_string(),
            });
        }
        t.next_worker_index += n;
        t.next_task_id += ntasks;
        Ok(())
    })?;
    Ok(team)
}

/// Rolls back this op's reservations after `cause`, and returns the error `up` fails with.
fn roll_back(
    env: &Env,
    team: &Team,
    op: Uuid,
    made: &[(WorkerName, PaneIncarnation)],
    cause: Error,
) -> Error {
    let report = match pending::settle_pending(env, Some(op), made) {
        Ok(r) => r,
        Err(e) => {
            return Error::CleanupDebt(format!(
                "scale-up failed ({cause}) and its rollback failed too ({e}); run `team-scale reconcile {}`",
                team.name
            ));
        }
    };
    match pending::leftovers_error(
        &format!("scale-up failed ({cause}) and was rolled back"),
        &report,
    ) {
        Err(e) => e,
        Ok(()) => cause,
    }
}

/// What steps 5 to 9 share.
struct New<'a> {
    env: &'a Env<'a>,
    req: &'a UpRequest,
    tmux: &'a Tmux,
    source: &'a Source,
    op: Uuid,
    plans: &'a [Plan],
    tasks: &'a [Task],
    profile: &'a Profile,
}

impl New<'_> {
    /// Steps 5 to 9 on the reserved `team`, recording each pane in `made` as soon as it is
    /// known (for the rollback).
    fn build(
        &self,
        team: &Team,
        made: &mut Vec<(WorkerName, PaneIncarnation)>,
    ) -> Result<(Team, Vec<AddedWorker>)> {
        step("up.reserved")?;
        // 5. Prepare.
        let dirs = prepare::open_dirs(self.env, team)?;
        let mut digests = std::collections::HashMap::new();
        for p in self.plans {
            let d = prepare::prepare(self.env, &dirs, team, self.req, p, self.tasks, self.profile)?;
            digests.insert(p.name.clone(), d);
        }
        step("up.prepared")?;
        // 6. Panes.
        let start = |p: &Plan| {
            let d = digests.get(&p.name).cloned().unwrap_or_default();
            spawn::start(self.env, team, self.op, p, d)
        };
        let windows = spawn::spawn_panes(
            team,
            self.tmux,
            self.source,
            self.op,
            self.plans,
            &start,
            made,
        )?;
        step("up.split")?;
        // 7. Record the incarnations (still pending).
        let incs = self.record_panes(made)?;
        step("up.tagged")?;
        // 8. Delivery of the first prompt, to every new worker at once.
        let deliveries = self.deliver_first_prompt(team, &incs)?;
        step("up.triggered")?;
        // 9. Commit.
        step("up.commit")?;
        let team = self.commit(&incs)?;
        // After the commit the workers are members: a crash here has nothing to undo, and an
        // `error` here is ignored (there is nothing left to roll back).
        let _ = failpoint::hit("up.committed");
        let added = self.added(incs, deliveries, &windows);
        let _ = self.env.store.append_event(
            &team,
            "scaled_up",
            json!({
                "op_id": self.op,
                "workers": added.iter().map(|a| a.name.to_string()).collect::<Vec<_>>(),
                "tasks": self.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
            }),
        );
        Ok((team, added))
    }

    /// Step 7: each plan's pane incarnation (with its process's start time), recorded in
    /// team.json, still `pending`, when a readiness wait (which can take long) follows.
    /// Without one the commit records them (a crash before it is cleaned up from the panes'
    /// tags, as after `up.split`).
    fn record_panes(
        &self,
        made: &mut [(WorkerName, PaneIncarnation)],
    ) -> Result<Vec<PaneIncarnation>> {
        for (_, inc) in made.iter_mut() {
            inc.process_start = crate::process::start_time(inc.pane_pid).ok().flatten();
        }
        let by_name = |n: &WorkerName| -> Result<PaneIncarnation> {
            made.iter()
                .find(|(m, _)| m == n)
                .map(|(_, i)| i.clone())
                .ok_or_else(|| Error::Internal(format!("no pane made for {n}")))
        };
        let incs: Vec<PaneIncarnation> = self
            .plans
            .iter()
            .map(|p| by_name(&p.name))
            .collect::<Result<_>>()?;
        if !self.req.ready_timeout.is_zero() {
            self.env.store.transact("up.record", |t, _| {
                for (p, inc) in self.plans.iter().zip(&incs) {
                    let w = own_pending(t, p, self.op)?;
                    w.pane = Some(inc.clone());
                }
                Ok(())
            })?;
        }
        Ok(incs)
    }

    /// Step 8: the first prompt, to every new worker at once (none with `--ready-timeout 0`).
    /// A worker it did not reach fails the whole `up` with [`Error::Undelivered`].
    fn deliver_first_prompt(
        &self,
        team: &Team,
        incs: &[PaneIncarnation],
    ) -> Result<Vec<Option<Delivery>>> {
        let (env, req) = (self.env, self.req);
        if !req.ready_timeout.is_zero() {
            (env.progress)(&format!(
                "waiting up to {:?} for {} new worker(s) to be ready",
                req.ready_timeout,
                incs.len()
            ));
        }
        step("up.ready")?;
        let deliveries: Vec<Option<Delivery>> = if req.ready_timeout.is_zero() {
            vec![None; self.plans.len()]
        } else {
            let targets = self
                .plans
                .iter()
                .zip(incs)
                .map(|(p, inc)| self.delivery_target(team, p, inc))
                .collect::<Result<Vec<_>>>()?;
            deliver::deliver(self.tmux, env.audit, &targets, req.ready_timeout)
                .into_iter()
                .map(Some)
                .collect()
        };
        // An interrupt during the wait: the whole scale-up rolls back.
        crate::interrupt::check("up.deliver")?;
        self.undelivered(&deliveries)?;
        Ok(deliveries)
    }

    /// Step 8: [`Error::Undelivered`] naming each worker's result, when the first prompt did
    /// not reach one of them.
    fn undelivered(&self, deliveries: &[Option<Delivery>]) -> Result<()> {
        let failed: Vec<String> = self
            .plans
            .iter()
            .zip(deliveries)
            .filter_map(|(p, d)| match d {
                Some(d) if !d.is_delivered() => {
                    let mut l = format!("  {}: {}", p.name, d.describe());
                    for line in d.last_lines() {
                        l.push_str(&format!("\n    | {line}"));
                    }
                    Some(l)
                }
                _ => None,
            })
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        let workers = self
            .plans
            .iter()
            .zip(deliveries)
            .filter_map(|(p, d)| {
                d.as_ref().map(|d| crate::error::DeliveryReport {
                    worker: p.name.to_string(),
                    result: d.word().to_string(),
                    detail: d.describe(),
                    last_lines: d.last_lines().to_vec(),
                })
            })
            .collect();
        Err(Error::Undelivered {
            msg: format!(
                "the first prompt did not reach {} of {} new worker(s) ({}), so the scale-up was rolled back:\n{}",
                failed.len(),
                self.plans.len(),
                self.profile.display(),
                failed.join("\n")
            ),
            workers,
        })
    }

    /// Step 9: one journaled commit makes the new workers `active` and writes the tasks.
    fn commit(&self, incs: &[PaneIncarnation]) -> Result<Team> {
        let (team, ()) = self.env.store.transact("up.commit", |t, changes| {
            for (p, inc) in self.plans.iter().zip(incs) {
                let w = own_pending(t, p, self.op)?;
                w.lifecycle = Lifecycle::Active;
                w.pane = Some(inc.clone());
            }
            for task in self.tasks {
                changes.put_task(task);
            }
            Ok(())
        })?;
        Ok(team)
    }

    /// What `up` reports of each new worker.
    fn added(
        &self,
        incs: Vec<PaneIncarnation>,
        deliveries: Vec<Option<Delivery>>,
        windows: &[String],
    ) -> Vec<AddedWorker> {
        self.plans
            .iter()
            .zip(incs)
            .zip(deliveries)
            .map(|((p, pane), delivery)| AddedWorker {
                name: p.name.clone(),
                index: p.index,
                role: self.req.role.clone(),
                incarnation: p.incarnation,
                new_window: windows.contains(&pane.window_id)
                    && pane.window_id != self.source.inc.window_id,
                pane,
                readiness: if delivery.is_some() {
                    Readiness::Ready
                } else {
                    Readiness::Skipped
                },
                delivery,
                tasks: self
                    .tasks
                    .iter()
                    .filter(|t| t.owner.as_ref() == Some(&p.name))
                    .map(|t| t.id)
                    .collect(),
                worktree: p.worktree.clone(),
                inbox: p.inbox.clone(),
            })
            .collect()
    }

    /// Step 8: what [`deliver::deliver`] needs for the first prompt of `p`.
    fn delivery_target(
        &self,
        team: &Team,
        p: &Plan,
        inc: &PaneIncarnation,
    ) -> Result<deliver::Target> {
        let (env, req, profile, op) = (self.env, self.req, self.profile, self.op);
        let text = prepare::trigger_text(team, p);
        check_literal_text(&text)
            .map_err(|m| Error::Usage(format!("the trigger text for {}: {m}", p.name)))?;
        let tags = spawn::pane_tags(team, p, op)
            .into_iter()
            .filter(|(k, _)| {
                matches!(
                    *k,
                    "@team_owner" | "@team_worker" | "@team_incarnation" | "@team_op"
                )
            })
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Ok(deliver::Target {
            worker: p.name.to_string(),
            inc: inc.clone(),
            tags,
            profile: profile.clone(),
            mode: profile.mode(),
            text,
            ready_pattern: team.settings.ready_pattern.clone(),
            exit_file: Some(crate::agent::exit::ExitFile {
                root: self.env.store.root().path().to_path_buf(),
                path: p.worker_dir.join("exit.json"),
                incarnation: p.incarnation,
            }),
            workspace: team.workspace.display().to_string(),
            audit: crate::audit::Entry {
                caller: env.caller.clone(),
                action: "send-keys".into(),
                op: Some("scale_up".into()),
                argv: req.argv.clone(),
                endpoint: Some(team.endpoint.to_string_lossy().into_owned()),
                targets: vec![pane_json(inc)],
                workspace: Some(team.workspace.to_string_lossy().into_owned()),
                team: Some(team.name.to_string()),
                generation: Some(team.generation),
                owner_evidence: Some(
                    json!({"owner_id": team.owner_id, "incarnation": p.incarnation}),
                ),
                reason: None,
                outcome: None,
            },
            // A new agent has no work yet: its first prompt waits for it to be ready.
            queue: false,
        })
    }
}

/// A step boundary before the commit: a fail point, and where an interrupt stops the
/// operation (which then rolls back like any failure).
fn step(name: &str) -> Result<()> {
    failpoint::hit(name)?;
    crate::interrupt::check(name)
}

/// The pending record of `p` made by this op, mutably.
fn own_pending<'t>(t: &'t mut Team, p: &Plan, op: Uuid) -> Result<&'t mut Worker> {
    t.workers
        .iter_mut()
        .find(|w| {
            w.name == p.name
                && w.lifecycle == Lifecycle::Pending
                && w.op_id == op
                && w.incarnation == p.incarnation
        })
        .ok_or_else(|| {
            Error::Refused(format!(
                "the reservation of {} disappeared from team.json while up ran",
                p.name
            ))
        })
}
