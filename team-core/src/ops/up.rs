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
//!    workspace, name, op) in the same server-side step and started with `TEAM_OP=<op>` in its
//!    start command; a full window (`no space for new pane`) continues in a new window of the
//!    team's session (`up.split`);
//! 7. record the incarnations in team.json, still `pending` (`up.tagged`);
//! 8. deliver the first prompt to every new worker at once through [`super::deliver`]
//!    (`up.ready` before, `up.triggered` after): per the team's agent profile it was given as a
//!    launch argument, printed by the runtime script, or typed with proof; a dead worker, a
//!    blocking screen or a readiness timeout makes the whole operation roll back with
//!    [`Error::Undelivered`] naming each worker's result;
//! 10. one journaled commit makes them `active` and writes the tasks (`up.commit` before,
//!     `up.committed` after).
//!
//! Any failure after step 4 rolls back through [`super::pending::settle_pending`]: panes
//! killed with proof, files and worktrees removed, reservations dropped; what cannot be proven
//! stays `removing` and the error is [`Error::CleanupDebt`] (exit 3). `next_worker_index` and
//! `next_task_id` are never lowered.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **An undelivered worker rolls the whole `up` back** (all or nothing, as before): `up` exits 1
//!   naming each worker's result, next step and last screen lines, and the team is as it was, so
//!   the next command needs nothing special. Keeping an undelivered worker and retrying delivery
//!   waits for the leader's `send` command (issue 13), which will call `ops::deliver::deliver`.
//!
//! - **A member that cannot be proven live does not jam `up`**: the split source is the last
//!   member proven live, else the leader; the members passed over are named in a warning.
//!   (No new-window fallback when the leader is dead too: `up` refuses.) `reconcile` moves
//!   `active` members whose pane is `dead` or provably `gone` to `removing` (never on a mismatch
//!   or an unverifiable listing) and tears them down with fresh proofs.
//!
//! - **Every worker pane is at least 20x5 cells** (`up::MIN_PANE`, issue 15). `up` plans from the
//!   listing's pane and window sizes: the first workers go in a column beside the leader (`-h
//!   50%`, the leader keeps its half and is never resized again), divided evenly as far as every
//!   pane keeps 5 rows (the split arithmetic is tmux's, simulated in `stack_cells`); the rest go
//!   in new windows of the team's session, each holding the workers alone and re-tiled (`select-
//!   layout tiled`) after every split inside the same guarded chain, up to what tmux's tiled grid
//!   holds at 20x5 (80x24: 4 beside the leader, 12 a window; 200x50: 8 and 64). A later `up`
//!   splits the member with the most room: in a window of workers only (every pane in it tagged
//!   as this team's worker), the window is re-tiled; elsewhere the member's pane is divided as a
//!   column and no other pane moves. (Chosen over re-tiling the leader's window: that would move
//!   the leader and any pane of the user's.) A new window's size is taken from the session's
//!   windows (tmux gives a session's new windows one size); if it is wrong, tmux's "no space"
//!   still moves the rest to a new window. An adopted session with no room is refused, as
//!   before. `--max-workers` is 1 to 1024.
//!
//! - **No space for a new pane** aborts the rest of a chain (no receipt); `up` finds what was made
//!   by its tags and continues in a new window guarded by `@team_session_owner`. A session the
//!   tools did not create (an adopted leader's) gets no new windows: `up` refuses with the reason.
//!
//! - **Task references**: `owner` is a member, a name this call creates, or `new:<k>`;
//!   `blocked_by` is an existing id, an id this call assigns (ids are fixed under the scale lock),
//!   or `new:<k>`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Env;
use super::deliver::{self, Delivery};
use super::pending::{self, SettleReport};
use crate::agent::{self, Profile, PromptMode};
use crate::error::{Error, Result};
use crate::failpoint;
use crate::fsutil;
use crate::model::{
    Lifecycle, PaneIncarnation, Resources, SCHEMA_VERSION, Task, TaskStatus, Team, TeamState,
    Worker, WorktreeMode, WorktreeRecord,
};
use crate::paths::{RoleName, WorkerName};
use crate::proof::PaneProof;
use crate::tmux::quote::{check_literal_text, sh_quote};
use crate::tmux::txn::{NewPane, parse_new_panes};
use crate::tmux::{Guard, Listing, Tmux, Txn, TxnOutcome};
use crate::view;
use crate::view::pane_json;

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
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = |f: &str| format!("tasks[{i}].{f}");
        if !item.is_object() {
            return Err(bad_input(format!("tasks[{i}]: expected an object")));
        }
        let raw: RawTask =
            serde_json::from_value(item).map_err(|e| bad_input(format!("tasks[{i}]: {e}")))?;
        let text = |f: &str, v: Option<Value>, required: bool| -> Result<Option<String>> {
            match v {
                None | Some(Value::Null) if !required => Ok(None),
                Some(Value::String(s)) if !(required && s.trim().is_empty()) => Ok(Some(s)),
                Some(Value::String(_)) => Err(bad_input(format!("{}: is empty", at(f)))),
                _ => Err(bad_input(format!("{}: expected a string", at(f)))),
            }
        };
        let subject = text("subject", Some(raw.subject), true)?.unwrap_or_default();
        let description = text("description", raw.description, false)?.unwrap_or_default();
        let owner = text("owner", raw.owner, false)?;
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
        let role = match text("role", raw.role, false)? {
            None => None,
            Some(r) => {
                Some(RoleName::new(&r).map_err(|e| bad_input(format!("{}: {e}", at("role"))))?)
            }
        };
        let mut blocked_by = Vec::new();
        match raw.blocked_by {
            None | Some(Value::Null) => {}
            Some(Value::Array(refs)) => {
                for r in refs {
                    let parsed = match &r {
                        Value::Number(n) => n.as_u64().filter(|n| *n >= 1).map(TaskRef::Id),
                        Value::String(s) => s
                            .strip_prefix("new:")
                            .and_then(|k| k.parse::<usize>().ok())
                            .filter(|k| *k >= 1)
                            .map(TaskRef::New),
                        _ => None,
                    };
                    blocked_by.push(parsed.ok_or_else(|| {
                        bad_input(format!(
                            "{}: {r} is neither a task id nor \"new:<k>\"",
                            at("blocked_by")
                        ))
                    })?);
                }
            }
            Some(_) => {
                return Err(bad_input(format!(
                    "{}: expected an array",
                    at("blocked_by")
                )));
            }
        }
        out.push(TaskSpec {
            subject,
            description,
            owner,
            role,
            blocked_by,
        });
    }
    Ok(out)
}

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

/// A task being made.
#[derive(Debug, Clone)]
pub(crate) struct PlannedTask {
    spec: TaskSpec,
    owner: Option<WorkerName>,
}

/// The proven pane new panes split from.
#[derive(Debug, Clone)]
struct Source {
    inc: PaneIncarnation,
    tags: Vec<(&'static str, String)>,
    is_leader: bool,
    label: String,
    /// Members passed over because they could not be proven live.
    skipped: Option<String>,
    /// How new panes are laid out from it, and how many more fit.
    place: Place,
    /// How many worker panes a new window of the team's session holds (estimated from the
    /// session's windows: tmux gives a session's new windows one size).
    window_fits: usize,
}

/// The smallest worker pane `up` makes, in cells (width, height). A window that cannot hold
/// another pane this big continues in a new window.
pub const MIN_PANE: (u32, u32) = (20, 5);

/// How a run of new panes is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A column beside the leader (`-h 50%`), divided evenly top to bottom.
    LeaderColumn,
    /// A column of workers: the source pane is split evenly top to bottom.
    Stack,
    /// A window of workers only: every split is followed by `select-layout tiled`.
    Tiled,
}

/// Where the next new panes go, and how many of at least [`MIN_PANE`] still fit there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    layout: Layout,
    fits: usize,
}

/// tmux's grid for `n` tiled panes (`layout_set_tiled`): (rows, columns).
fn tiled_grid(n: u32) -> (u32, u32) {
    let (mut rows, mut cols) = (1, 1);
    while rows * cols < n {
        rows += 1;
        if rows * cols < n {
            cols += 1;
        }
    }
    (rows, cols)
}

/// How many panes of at least [`MIN_PANE`] a `w`x`h` window holds when tiled.
fn tiled_fit(w: u32, h: u32) -> usize {
    let mut n = 0u32;
    loop {
        let (rows, cols) = tiled_grid(n + 1);
        if rows > h || cols > w {
            return n as usize;
        }
        let (pw, ph) = ((w - (cols - 1)) / cols, (h - (rows - 1)) / rows);
        if pw < MIN_PANE.0 || ph < MIN_PANE.1 || n >= 4096 {
            return n as usize;
        }
        n += 1;
    }
}

/// What tmux makes of `split-window -l pct%` on a pane `h` cells long: (old pane, new pane).
fn split_cells(h: u32, pct: Option<u8>) -> (u32, u32) {
    let new = match pct {
        Some(p) => (h * u32::from(p) / 100).clamp(1, h.saturating_sub(2).max(1)),
        None => h.div_ceil(2).saturating_sub(1),
    };
    (h.saturating_sub(new + 1), new)
}

/// The heights a pane `h` cells tall ends with when `n` new panes are split off it in a chain
/// (the source, then each new one, with [`share`]s): the source's first, then each new pane's.
fn stack_cells(h: u32, n: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(n + 1);
    let mut cur = h;
    for k in 0..n {
        let (old, new) = split_cells(cur, share(n - k, n - k + 1));
        out.push(old);
        cur = new;
    }
    out.push(cur);
    out
}

/// How many new panes a stack of height `h` and width `w` takes with every pane (the source
/// included) at least [`MIN_PANE`].
fn stack_fit(w: u32, h: u32) -> usize {
    if w < MIN_PANE.0 {
        return 0;
    }
    let mut n = 0;
    while n < 4096 && stack_cells(h, n + 1).iter().all(|&c| c >= MIN_PANE.1) {
        n += 1;
    }
    n
}

/// How many new panes fit in the column a split of the leader (`-h 50%`) opens.
fn leader_column_fit(g: crate::tmux::Geometry) -> usize {
    let (_, col) = split_cells(g.pane_width, Some(50));
    if col < MIN_PANE.0 || g.pane_height < MIN_PANE.1 {
        return 0;
    }
    // The column is one pane of the leader's height, which the chain then divides.
    1 + stack_fit(col, g.pane_height)
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
    let profile = team_profile(env, &team)?;
    let n = u64::from(req.count);
    let new_names: Vec<WorkerName> = (0..n)
        .map(|i| WorkerName::for_index(team.next_worker_index + i))
        .collect();
    let existing_ids: HashSet<u64> = env.store.tasks()?.iter().map(|t| t.id).collect();
    let planned_tasks = validate_tasks(&team, &req.tasks, &new_names, &existing_ids)?;
    let branch_names = check_git(&team, &new_names)?;
    check_new_paths(env.store.root(), &team, &new_names)?;

    // 2. Leftovers of abandoned operations.
    let mut warnings = Vec::new();
    let settled = if team.in_state(Lifecycle::Pending).next().is_some() {
        let r = pending::settle_pending(env, None, &[])?;
        for w in r.leftovers() {
            warnings.push(format!(
                "leftover pending worker {} of op {} could not be cleaned and stays removing: {}",
                w.worker,
                w.op_id,
                w.reasons.join("; ")
            ));
        }
        r
    } else {
        SettleReport::default()
    };
    let team = env.store.load()?;
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

    // 3. Capacity.
    check_capacity(&team, n)?;

    // 4. The split source, from one snapshot.
    let tmux = env.tmux(&team);
    let source = prove_source(&team, &tmux)?;
    if let Some(w) = &source.skipped {
        warnings.push(w.clone());
    }

    // 5. Reserve.
    let op = Uuid::new_v4();
    let root = env.store.root();
    let ws = team.workspace.clone();
    let plans: Vec<Plan> = new_names
        .iter()
        .zip(&branch_names)
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
        .collect();
    let expected_index = team.next_worker_index;
    let expected_task = team.next_task_id;
    let ntasks = planned_tasks.len() as u64;
    let now = fsutil::now_rfc3339();
    // Nothing is reserved yet: an interrupt here leaves nothing behind.
    crate::interrupt::check("up.validate")?;
    let (team, ()) = env.store.transact("up.reserve", |t, _| {
        if t.next_worker_index != expected_index || t.next_task_id != expected_task {
            return Err(Error::Refused(
                "the team changed while up was validating; retry".into(),
            ));
        }
        check_capacity(t, n)?;
        for p in &plans {
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
                created_at: now.clone(),
            });
        }
        t.next_worker_index += n;
        t.next_task_id += ntasks;
        Ok(())
    })?;
    let tasks = build_tasks(&planned_tasks, expected_task, &now);

    // 6-10, rolled back on any failure.
    let mut made: Vec<(WorkerName, PaneIncarnation)> = Vec::new();
    let res = build(
        env,
        req,
        &team,
        &tmux,
        &source,
        op,
        &plans,
        &tasks,
        &profile,
        &mut made,
        &mut warnings,
    );
    match res {
        Ok((team, added)) => Ok(UpReport {
            op_id: op,
            team,
            added,
            tasks,
            settled,
            warnings,
            agent: profile.name.clone(),
            tmux_invocations: crate::tmux::invocations() - inv0,
        }),
        Err(cause) => {
            let report = pending::settle_pending(env, Some(op), &made).map_err(|e| {
                Error::CleanupDebt(format!(
                    "scale-up failed ({cause}) and its rollback failed too ({e}); run `team-scale reconcile {}`",
                    team.name
                ))
            })?;
            pending::leftovers_error(
                &format!("scale-up failed ({cause}) and was rolled back"),
                &report,
            )?;
            Err(cause)
        }
    }
}

/// Refuses, before any effect, what would make the new workers' files unsafe to write or to
/// roll back: a symlinked (or non-directory) `runtime/` or `workers/` directory, and anything
/// already where a new worker's directory or startup script goes (a rollback removes what its
/// records name, so it must name only what this operation makes). A regular file where a
/// script goes is replaced whole, so it is allowed.
fn check_new_paths(
    root: &crate::paths::StateRoot,
    team: &Team,
    names: &[WorkerName],
) -> Result<()> {
    let team_dir = root.team_dir(&team.name);
    for d in ["runtime", "workers"] {
        fsutil::state_dir_exists(root.path(), &team_dir.join(d))?;
    }
    for name in names {
        let script = root.runtime_script(&team.name, name);
        if let Some(kind) = fsutil::state_kind(root.path(), &script)?
            && kind != "regular file"
        {
            return Err(Error::UnsafePath {
                path: script,
                why: format!(
                    "is a {kind} where new worker {name}'s startup script goes; it was not made by the tools: move it away"
                ),
            });
        }
        let dir = root.worker_dir(&team.name, name);
        if let Some(kind) = fsutil::state_kind(root.path(), &dir)? {
            return Err(Error::UnsafePath {
                path: dir,
                why: format!(
                    "already exists (a {kind}) where new worker {name}'s directory goes; it was not made for this worker: move it away"
                ),
            });
        }
    }
    Ok(())
}

fn check_capacity(team: &Team, n: u64) -> Result<()> {
    let active = team.in_state(Lifecycle::Active).count() as u64;
    let pending = team.in_state(Lifecycle::Pending).count() as u64;
    let max = u64::from(team.settings.max_workers);
    if active + pending + n > max {
        return Err(Error::Refused(format!(
            "capacity: team {} has {active} members and {pending} pending; adding {n} would make {}, above max_workers {max}",
            team.name,
            active + pending + n
        )));
    }
    Ok(())
}

pub(crate) fn validate_tasks(
    team: &Team,
    specs: &[TaskSpec],
    new_names: &[WorkerName],
    existing: &HashSet<u64>,
) -> Result<Vec<PlannedTask>> {
    let mut out = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let owner = match &s.owner {
            None => None,
            Some(o) => Some(match o.strip_prefix("new:") {
                Some(k) => {
                    let k: usize = k.parse().unwrap_or(0);
                    new_names.get(k.wrapping_sub(1)).cloned().ok_or_else(|| {
                        bad_input(format!(
                            "tasks[{i}].owner: {o:?}, but this call creates only {} workers",
                            new_names.len()
                        ))
                    })?
                }
                None => {
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
                    name
                }
            }),
        };
        for r in &s.blocked_by {
            match r {
                // An id this call will assign (the scale lock is held, so the ids that
                // `next_task_id` hands out are fixed): the k-th task of the input.
                TaskRef::Id(id)
                    if !existing.contains(id)
                        && (*id < team.next_task_id
                            || *id >= team.next_task_id + specs.len() as u64) =>
                {
                    return Err(bad_input(format!(
                        "tasks[{i}].blocked_by: task {id} does not exist (and this call creates tasks {} to {})",
                        team.next_task_id,
                        team.next_task_id + specs.len() as u64 - 1
                    )));
                }
                TaskRef::Id(id) if *id == team.next_task_id + i as u64 => {
                    return Err(bad_input(format!(
                        "tasks[{i}].blocked_by: task {id} is this task itself"
                    )));
                }
                TaskRef::New(k) if *k > specs.len() || *k == i + 1 => {
                    return Err(bad_input(format!(
                        "tasks[{i}].blocked_by: \"new:{k}\" names no other task of this input"
                    )));
                }
                _ => {}
            }
        }
        out.push(PlannedTask {
            spec: s.clone(),
            owner,
        });
    }
    Ok(out)
}

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

/// Checks git for worktree mode, and returns each new worker's branch (branch mode).
fn check_git(team: &Team, names: &[WorkerName]) -> Result<Vec<Option<String>>> {
    let ws = &team.workspace;
    let prefix = match &team.settings.worktree {
        WorktreeMode::Off => return Ok(vec![None; names.len()]),
        WorktreeMode::Detached => None,
        WorktreeMode::Branch(p) => Some(p.clone()),
    };
    let head = super::git(ws, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    if !head.ok {
        return Err(Error::Refused(format!(
            "team {} uses git worktrees, but {} is not a git repository with a commit",
            team.name,
            ws.display()
        )));
    }
    let mut out = Vec::new();
    for n in names {
        match &prefix {
            None => out.push(None),
            Some(p) => {
                let b = format!("{p}/{n}");
                let ok = super::git(ws, &["check-ref-format", "--branch", &b])?;
                if !ok.ok {
                    return Err(Error::Usage(format!("{b:?} is not a valid branch name")));
                }
                if pending::branch_exists(ws, &b) {
                    return Err(Error::Refused(format!(
                        "branch {b} already exists in {}; up does not reuse branches it did not create (delete it, or use another prefix)",
                        ws.display()
                    )));
                }
                out.push(Some(b));
            }
        }
    }
    Ok(out)
}

fn prove_source(team: &Team, tmux: &Tmux) -> Result<Source> {
    let listing = tmux.list();
    match &listing {
        Listing::Failed(e) => {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("cannot list panes to prove the split source: {e}"),
            });
        }
        Listing::NoServer => {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: "no tmux server answers on the team's socket".into(),
            });
        }
        Listing::Panes(snap) => {
            // The same server, without the team's session: session_missing. (A different server
            // on the socket is reported by the source proof below as server_changed.)
            let same_server =
                snap.server() == Some((team.leader.pane.server_pid, team.leader.pane.server_start));
            if same_server && crate::view::session_present(team, &listing) == Some(false) {
                return Err(Error::SessionMissing {
                    team: team.name.to_string(),
                    session: team.session.name.clone(),
                    endpoint: team.endpoint.clone(),
                });
            }
        }
    }
    // The members from the last one down, then the leader: the first that is proven live. A
    // dead or missing member does not jam `up` (`reconcile` settles it); one that cannot be
    // verified is skipped the same way, and named in a warning.
    let mut members: Vec<&Worker> = team.in_state(Lifecycle::Active).collect();
    members.sort_by_key(|w| std::cmp::Reverse(w.index));
    let mut skipped: Vec<String> = Vec::new();
    let mut candidates: Vec<Source> = Vec::new();
    // tmux gives a session's new windows one size (the session's): any window of the team's
    // session tells it.
    let window_fits = match &listing {
        Listing::Panes(snap) => snap
            .rows
            .iter()
            .filter(|r| r.session_id == team.session.id)
            .filter_map(|r| snap.geometry(&r.pane_id))
            .map(|g| tiled_fit(g.window_width, g.window_height))
            .max()
            .unwrap_or(0),
        _ => 0,
    };
    for w in members {
        let Some(inc) = w.pane.clone() else {
            skipped.push(format!("{} (no pane recorded)", w.name));
            continue;
        };
        let proof = view::prove_worker(team, w, &listing)
            .unwrap_or_else(|| PaneProof::Unverifiable(format!("worker {} has no pane", w.name)));
        match proof {
            PaneProof::Live(_) => candidates.push(Source {
                place: member_place(team, &listing, &inc),
                window_fits,
                inc,
                tags: view::worker_tags(team, w),
                is_leader: false,
                label: format!("the member {}", w.name),
                skipped: None,
            }),
            PaneProof::Dead(_) => skipped.push(format!("{} (its process has exited)", w.name)),
            other => skipped.push(format!(
                "{} ({})",
                w.name,
                other.reason().unwrap_or_default()
            )),
        }
    }
    let leader_proof = view::prove_leader(team, &listing);
    let leader = Source {
        inc: team.leader.pane.clone(),
        tags: view::leader_tags(team),
        is_leader: true,
        label: "the leader".to_string(),
        skipped: None,
        window_fits,
        place: Place {
            layout: Layout::LeaderColumn,
            fits: listing_geometry(&listing, &team.leader.pane.pane_id)
                .map_or(0, leader_column_fit),
        },
    };
    // The member with the most room first (the largest pane of a column, or the window of
    // workers with the most room left), the last made among equals.
    candidates.sort_by_key(|c| std::cmp::Reverse(c.place.fits));
    let mut why_not = Vec::new();
    for c in candidates.into_iter().chain(std::iter::once(leader)) {
        if c.is_leader {
            match &leader_proof {
                PaneProof::Live(_) => {}
                PaneProof::Dead(_) => {
                    why_not.push("the leader's process has exited".to_string());
                    continue;
                }
                other => {
                    why_not.push(format!(
                        "the leader: {}",
                        other.reason().unwrap_or_default()
                    ));
                    continue;
                }
            }
        }
        if let Some(rec) = c.inc.process_start {
            let now = crate::process::start_time(c.inc.pane_pid).ok().flatten();
            if now != Some(rec) {
                why_not.push(format!(
                    "{}: pane pid {} started at {now:?}, not the recorded {rec}",
                    c.label, c.inc.pane_pid
                ));
                continue;
            }
        }
        let mut c = c;
        if !skipped.is_empty() {
            c.skipped = Some(format!(
                "split from {} instead of {}; `team-scale reconcile {}` settles dead or missing members",
                c.label,
                skipped.join(", "),
                team.name
            ));
        }
        return Ok(c);
    }
    let mut all = skipped;
    all.extend(why_not);
    Err(Error::Refused(format!(
        "no split source can be proven ({}); nothing was created",
        all.join("; ")
    )))
}

fn listing_geometry(listing: &Listing, pane_id: &str) -> Option<crate::tmux::Geometry> {
    match listing {
        Listing::Panes(snap) => snap.geometry(pane_id),
        _ => None,
    }
}

/// Where new panes split from the member pane `inc` go. In a window that holds this team's
/// workers and nothing else (one `up` opened), the window is re-tiled; elsewhere (beside the
/// leader, or among panes that are not ours) the member's pane is divided as a column, and no
/// other pane moves.
fn member_place(team: &Team, listing: &Listing, inc: &PaneIncarnation) -> Place {
    let Listing::Panes(snap) = listing else {
        return Place {
            layout: Layout::Stack,
            fits: 0,
        };
    };
    let Some(g) = snap.geometry(&inc.pane_id) else {
        return Place {
            layout: Layout::Stack,
            fits: 0,
        };
    };
    let owner = team.owner_id.to_string();
    let in_window: Vec<_> = snap
        .rows
        .iter()
        .filter(|r| r.window_id == inc.window_id)
        .collect();
    let workers_only = snap.malformed.is_empty()
        && in_window.iter().all(|r| {
            r.tags.pane_tagged()
                && r.tags.owner == owner
                && !r.tags.worker.is_empty()
                && r.tags.role.is_empty()
        });
    if workers_only {
        Place {
            layout: Layout::Tiled,
            fits: tiled_fit(g.window_width, g.window_height).saturating_sub(in_window.len()),
        }
    } else {
        Place {
            layout: Layout::Stack,
            fits: stack_fit(g.pane_width, g.pane_height),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    env: &Env,
    req: &UpRequest,
    team: &Team,
    tmux: &Tmux,
    source: &Source,
    op: Uuid,
    plans: &[Plan],
    tasks: &[Task],
    profile: &Profile,
    made: &mut Vec<(WorkerName, PaneIncarnation)>,
    _warnings: &mut Vec<String>,
) -> Result<(Team, Vec<AddedWorker>)> {
    step("up.reserved")?;

    // Prepare.
    for p in plans {
        prepare(env, team, req, p, tasks, profile)?;
    }
    step("up.prepared")?;

    // Panes.
    let start = |p: &Plan| start_command(env, team, op, p);
    let windows = spawn_panes(team, tmux, source, op, plans, &start, made)?;
    step("up.split")?;

    // Record the incarnations (still pending).
    for (_, inc) in made.iter_mut() {
        inc.process_start = crate::process::start_time(inc.pane_pid).ok().flatten();
    }
    let by_name = |n: &WorkerName| -> Result<PaneIncarnation> {
        made.iter()
            .find(|(m, _)| m == n)
            .map(|(_, i)| i.clone())
            .ok_or_else(|| Error::Internal(format!("no pane made for {n}")))
    };
    let incs: Vec<PaneIncarnation> = plans
        .iter()
        .map(|p| by_name(&p.name))
        .collect::<Result<_>>()?;
    // Recorded before the readiness wait, which can take long; without one the commit below
    // records them (a crash before it is cleaned up from the panes' tags, as after `up.split`).
    if !req.ready_timeout.is_zero() {
        env.store.transact("up.record", |t, _| {
            for (p, inc) in plans.iter().zip(&incs) {
                let w = own_pending(t, p, op)?;
                w.pane = Some(inc.clone());
            }
            Ok(())
        })?;
    }
    step("up.tagged")?;

    // Delivery of the first prompt, to every new worker at once.
    if !req.ready_timeout.is_zero() {
        (env.progress)(&format!(
            "waiting up to {:?} for {} new worker(s) to be ready",
            req.ready_timeout,
            incs.len()
        ));
    }
    step("up.ready")?;
    let deliveries: Vec<Option<Delivery>> = if req.ready_timeout.is_zero() {
        vec![None; plans.len()]
    } else {
        let targets = plans
            .iter()
            .zip(&incs)
            .map(|(p, inc)| delivery_target(env, req, team, profile, p, inc, op))
            .collect::<Result<Vec<_>>>()?;
        deliver::deliver(tmux, env.audit, &targets, req.ready_timeout)
            .into_iter()
            .map(Some)
            .collect()
    };
    // An interrupt during the wait: the whole scale-up rolls back.
    crate::interrupt::check("up.deliver")?;
    let failed: Vec<String> = plans
        .iter()
        .zip(&deliveries)
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
    if !failed.is_empty() {
        let workers = plans
            .iter()
            .zip(&deliveries)
            .filter_map(|(p, d)| {
                d.as_ref().map(|d| crate::error::DeliveryReport {
                    worker: p.name.to_string(),
                    result: d.word().to_string(),
                    detail: d.describe(),
                    last_lines: d.last_lines().to_vec(),
                })
            })
            .collect();
        return Err(Error::Undelivered {
            msg: format!(
                "the first prompt did not reach {} of {} new worker(s) ({}), so the scale-up was rolled back:\n{}",
                failed.len(),
                plans.len(),
                profile.display(),
                failed.join("\n")
            ),
            workers,
        });
    }
    step("up.triggered")?;

    // Commit.
    step("up.commit")?;
    let (team, ()) = env.store.transact("up.commit", |t, changes| {
        for (p, inc) in plans.iter().zip(&incs) {
            let w = own_pending(t, p, op)?;
            w.lifecycle = Lifecycle::Active;
            w.pane = Some(inc.clone());
        }
        for task in tasks {
            changes.put_task(task);
        }
        Ok(())
    })?;
    // After the commit the workers are members: a crash here has nothing to undo, and an
    // `error` here is ignored (there is nothing left to roll back).
    let _ = failpoint::hit("up.committed");
    let added: Vec<AddedWorker> = plans
        .iter()
        .zip(incs)
        .zip(deliveries)
        .map(|((p, pane), delivery)| AddedWorker {
            name: p.name.clone(),
            index: p.index,
            role: req.role.clone(),
            incarnation: p.incarnation,
            new_window: windows.contains(&pane.window_id) && pane.window_id != source.inc.window_id,
            pane,
            readiness: if delivery.is_some() {
                Readiness::Ready
            } else {
                Readiness::Skipped
            },
            delivery,
            tasks: tasks
                .iter()
                .filter(|t| t.owner.as_ref() == Some(&p.name))
                .map(|t| t.id)
                .collect(),
            worktree: p.worktree.clone(),
            inbox: p.inbox.clone(),
        })
        .collect();
    let _ = env.store.append_event(
        &team,
        "scaled_up",
        json!({
            "op_id": op,
            "workers": added.iter().map(|a| a.name.to_string()).collect::<Vec<_>>(),
            "tasks": tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        }),
    );
    Ok((team, added))
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

fn pane_tags(team: &Team, p: &Plan, op: Uuid) -> Vec<(&'static str, String)> {
    vec![
        ("@team_owner", team.owner_id.to_string()),
        ("@team_worker", p.name.to_string()),
        ("@team_incarnation", p.incarnation.to_string()),
        ("@team_workspace", team.workspace.display().to_string()),
        ("@team_name", team.name.to_string()),
        ("@team_op", op.to_string()),
    ]
}

fn trigger_text(team: &Team, p: &Plan) -> String {
    let inbox = p.inbox.display().to_string();
    match &team.settings.trigger {
        Some(t) => t
            .replace("{inbox}", &inbox)
            .replace("{worker}", p.name.as_str()),
        None => format!(
            "You are {} of team {}. Read your inbox at {inbox} and work on the tasks listed there.",
            p.name, team.name
        ),
    }
}

fn write_private(
    root: &crate::paths::StateRoot,
    path: &std::path::Path,
    bytes: &[u8],
    mode: u32,
) -> Result<()> {
    // Atomic, with the mode set at creation, and never through a symlink (`fsutil`); not
    // fsynced: a runtime file, recorded before it is made (`fsutil::Sync::Never`).
    fsutil::state_write_with(root.path(), path, bytes, mode, fsutil::Sync::Never)
}

fn prepare(
    env: &Env,
    team: &Team,
    req: &UpRequest,
    p: &Plan,
    tasks: &[Task],
    profile: &Profile,
) -> Result<()> {
    let root = env.store.root();
    if let Some(workers) = p.worker_dir.parent() {
        fsutil::state_create_dir(root.path(), workers)?;
    }
    fsutil::state_create_dir_with(root.path(), &p.worker_dir, fsutil::Sync::Never)?;
    write_private(
        root,
        &p.inbox,
        inbox_text(team, req, p, tasks).as_bytes(),
        0o600,
    )?;

    if let Some(wt) = &p.worktree {
        if let Some(parent) = wt.path.parent() {
            fsutil::state_create_dir(root.path(), parent)?;
        }
        let path = wt.path.to_string_lossy().to_string();
        let out = match &wt.branch {
            None => super::git(&team.workspace, &["worktree", "add", "--detach", &path])?,
            Some(b) => super::git(&team.workspace, &["worktree", "add", "-b", b, &path])?,
        };
        if !out.ok {
            return Err(Error::Refused(format!(
                "git worktree add for {} failed: {}",
                p.name, out.stderr
            )));
        }
    }

    let runtime = root.team_dir(&team.name).join("runtime");
    fsutil::state_create_dir(root.path(), &runtime)?;
    let role = req.role.as_ref().map_or("worker", |r| r.as_str());
    let vars: [(&str, String); 8] = [
        ("TEAM_NAME", team.name.to_string()),
        ("TEAM_WORKER", p.name.to_string()),
        ("TEAM_ROLE", role.to_string()),
        ("TEAM_OWNER", team.owner_id.to_string()),
        ("TEAM_INCARNATION", p.incarnation.to_string()),
        ("TEAM_STATE_DIR", root.path().display().to_string()),
        ("TEAM_WORKSPACE", team.workspace.display().to_string()),
        ("TEAM_INBOX", p.inbox.display().to_string()),
    ];
    let mut s = format!(
        "#!/bin/sh\n# Startup script of {} in team {} (written by team-scale up).\n",
        p.name, team.name
    );
    for (k, v) in vars {
        s.push_str(&format!("export {k}={}\n", sh_quote(&v)));
    }
    s.push_str(&format!(
        "cd {} || exit 1\n",
        sh_quote(&p.cwd.display().to_string())
    ));
    s.push_str(&agent_command(team, profile, &trigger_text(team, p)));
    write_private(root, &p.script, s.as_bytes(), 0o700)
}

fn inbox_text(team: &Team, req: &UpRequest, p: &Plan, tasks: &[Task]) -> String {
    let mut s = format!(
        "# Inbox of {} (team {})\n\nRole: {}\nWorking directory: {}\nReport your state with `team-scale worker-status --state idle|busy|done`.\nClaim a task with `team-scale task claim <id>`; when it is finished, `team-scale task done <id>` (or `task fail <id>`).\n\n## Your tasks\n\n",
        p.name,
        team.name,
        req.role.as_ref().map_or("worker", |r| r.as_str()),
        p.cwd.display()
    );
    s.push_str(&super::board::tasks_section(&p.name, tasks));
    s
}

/// `pct` of a pane that must leave room for `keep` shares when `total` shares are split off.
fn share(give: usize, of: usize) -> Option<u8> {
    if give == 0 || of == 0 || give >= of {
        return None;
    }
    let pct = (give * 100 + of / 2) / of;
    Some(pct.clamp(1, 99) as u8)
}

/// Creates the panes of `plans`, recording each in `made` as soon as it is known. Returns the
/// windows opened.
/// A worker pane's start command: `cd <dir>`, then `TEAM_OP=<op>` (so the op id shows in
/// `#{pane_start_command}` from the first instant), then the supervisor, which runs the
/// startup script as its child (see `crate::supervisor`).
fn start_command(env: &Env, team: &Team, op: Uuid, p: &Plan) -> String {
    let args = crate::supervisor::SupervisorArgs {
        team: team.name.clone(),
        worker: p.name.clone(),
        owner: team.owner_id,
        incarnation: p.incarnation,
        state_root: env.store.root().path().to_path_buf(),
        workspace: team.workspace.clone(),
    };
    let mut words = vec![sh_quote(&env.supervisor.display().to_string())];
    words.extend(args.to_argv().iter().map(|a| sh_quote(a)));
    words.push("sh".into());
    words.push(sh_quote(&p.script.display().to_string()));
    // The supervisor runs in the worker's directory too: tmux shows a pane's directory
    // (`#{pane_current_path}`) from its foreground process group's leader, the supervisor.
    format!(
        "cd {} && TEAM_OP={op} exec {}",
        sh_quote(&p.cwd.display().to_string()),
        words.join(" ")
    )
}

#[allow(clippy::too_many_arguments)]
fn spawn_panes(
    team: &Team,
    tmux: &Tmux,
    source: &Source,
    op: Uuid,
    plans: &[Plan],
    start: &dyn Fn(&Plan) -> String,
    made: &mut Vec<(WorkerName, PaneIncarnation)>,
) -> Result<Vec<String>> {
    let mut remaining: Vec<usize> = (0..plans.len()).collect();
    let mut from: Option<Source> = Some(source.clone());
    let mut place = source.place;
    let mut windows = Vec::new();
    while !remaining.is_empty() {
        if from.is_some() && place.fits == 0 {
            // No room for another pane of at least MIN_PANE here: a new window.
            from = None;
            place = Place {
                layout: Layout::Tiled,
                fits: source.window_fits,
            };
        }
        let new_window = from.is_none();
        if new_window && place.fits == 0 && team.session.created_by_tools {
            return Err(Error::Refused(format!(
                "the windows of team {}'s session {} are too small for a worker pane of at least {}x{} cells; make the session larger (init --size)",
                team.name, team.session.name, MIN_PANE.0, MIN_PANE.1
            )));
        }
        let l = remaining.len().min(place.fits);
        let guard = match &from {
            Some(s) => {
                let tags: Vec<(&str, &str)> =
                    s.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
                Guard::pane(&s.inc, &tags, true)?
            }
            None => {
                if !team.session.created_by_tools {
                    return Err(Error::Refused(format!(
                        "no space for another pane of at least {}x{} cells next to {}, and team {}'s session {} was adopted, so up does not open windows in it; enlarge the window, or use a private team (init --private)",
                        MIN_PANE.0, MIN_PANE.1, source.label, team.name, team.session.name
                    )));
                }
                Guard::session(
                    &team.session.id,
                    source.inc.server_pid,
                    source.inc.server_start,
                    &team.owner_id.to_string(),
                )?
            }
        };
        // Even shares: a leader keeps half its width and the new column is divided evenly; a
        // worker source in a column keeps one share of its pane; a window of workers only is
        // re-tiled after each split.
        let tile = place.layout == Layout::Tiled;
        let mut sizes = Vec::with_capacity(l);
        let mut panes = Vec::with_capacity(l);
        for (k, &i) in remaining[..l].iter().enumerate() {
            let (horizontal, size) = match (k, place.layout) {
                (_, Layout::Tiled) => (false, None),
                (0, Layout::LeaderColumn) => (true, Some(50)),
                _ => (false, share(l - k, l - k + 1)),
            };
            sizes.push(size);
            let p = &plans[i];
            panes.push(NewPane {
                command: start(p),
                env: Vec::new(),
                tags: pane_tags(team, p, op)
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                horizontal,
            });
        }
        let refocus = from.as_ref().is_some_and(|s| s.is_leader);
        // One tmux message holds at most 16 KiB: a long chain is made in parts, each part
        // continuing from the last pane the previous part made (proven by its receipt).
        let mut m = l;
        let txn = loop {
            let txn = Txn::spawn_chain(
                guard.clone(),
                new_window,
                &panes[..m],
                &sizes[..m],
                refocus,
                true,
                tile,
            )?;
            if m == 1 || txn.argv_bytes() <= crate::tmux::txn::MAX_ARGV_BYTES {
                break txn;
            }
            m = m.div_ceil(2);
        };
        let outcome = tmux
            .run_txns(&[txn])?
            .pop()
            .unwrap_or_else(|| TxnOutcome::Unknown(String::new()));
        let stderr = match outcome {
            TxnOutcome::Done(lines) => {
                let incs = parse_new_panes(&lines)?;
                if incs.len() == m {
                    for (&i, inc) in remaining[..m].iter().zip(incs) {
                        windows.push(inc.window_id.clone());
                        made.push((plans[i].name.clone(), inc));
                    }
                    let last = remaining[m - 1];
                    remaining.drain(..m);
                    if !remaining.is_empty() {
                        let p = &plans[last];
                        let inc = made
                            .last()
                            .map(|(_, inc)| inc.clone())
                            .ok_or_else(|| Error::Internal("a chain part made no pane".into()))?;
                        from = Some(Source {
                            inc,
                            tags: vec![
                                ("@team_owner", team.owner_id.to_string()),
                                ("@team_worker", p.name.to_string()),
                                ("@team_incarnation", p.incarnation.to_string()),
                            ],
                            is_leader: false,
                            label: format!("new worker {}", p.name),
                            skipped: None,
                            place,
                            window_fits: source.window_fits,
                        });
                        // The last pane made holds the shares of the rest of this run (a
                        // column), or the window has `fits - m` places left (tiled).
                        place = match place.layout {
                            Layout::Tiled => Place {
                                layout: Layout::Tiled,
                                fits: place.fits - m,
                            },
                            _ => Place {
                                layout: Layout::Stack,
                                fits: l - m,
                            },
                        };
                    }
                    continue;
                }
                String::from("a receipt came back with the wrong number of new panes")
            }
            TxnOutcome::Refused => {
                return Err(Error::Refused(if new_window {
                    format!(
                        "the session {} of team {} no longer matches its record (id, server or owner tag); no window was opened",
                        team.session.name, team.name
                    )
                } else {
                    format!(
                        "the split source, {}'s pane {}, changed before the split (incarnation or tags); nothing was split from it",
                        source.label, source.inc.pane_id
                    )
                }));
            }
            TxnOutcome::Unknown(e) => e,
        };
        // Unknown: find what was made by its tags.
        let Listing::Panes(snap) = tmux.list() else {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("creating panes failed ({stderr}) and the panes cannot be listed"),
            });
        };
        let before = remaining.len();
        let mut last_made: Option<PaneIncarnation> = None;
        remaining.retain(|&i| {
            let p = &plans[i];
            let row = snap.rows.iter().find(|r| {
                r.tags.pane_tagged()
                    && r.tags.op == op.to_string()
                    && r.tags.owner == team.owner_id.to_string()
                    && r.tags.worker == p.name.as_str()
                    && r.tags.incarnation == p.incarnation.to_string()
            });
            match row {
                Some(r) => {
                    let inc = r.incarnation();
                    windows.push(inc.window_id.clone());
                    made.push((p.name.clone(), inc.clone()));
                    last_made = Some(inc);
                    false
                }
                None => true,
            }
        });
        if remaining.is_empty() {
            break;
        }
        if !stderr.contains("no space for new pane") {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("creating panes failed: {stderr}"),
            });
        }
        if new_window && remaining.len() == before {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("even a new window has no room for a pane: {stderr}"),
            });
        }
        let _ = last_made;
        // The window is full: continue in a new window of the team's session.
        from = None;
        place = Place {
            layout: Layout::Tiled,
            fits: source.window_fits,
        };
    }
    windows.sort();
    windows.dedup();
    Ok(windows)
}

/// The agent profile of `team`: its recorded one, else detected from the worker command. User
/// profiles come from `<state root>/agents.toml`.
pub fn team_profile(env: &Env, team: &Team) -> Result<Profile> {
    let user = agent::profiles::load_user(&env.store.root().path().join("agents.toml"))?;
    let name = match &team.settings.agent {
        Some(n) => n.clone(),
        None => agent::detect(&team.settings.worker_cmd, &user),
    };
    agent::resolve(&name, &user)
}

/// The last lines of a runtime script: how the agent starts and how its first prompt reaches
/// it. The prompt is always one single-quoted word given to the program as an argument (or to
/// `printf` as data), never shell text, so no shell executes it.
fn agent_command(team: &Team, profile: &Profile, prompt: &str) -> String {
    let cmd = &team.settings.worker_cmd;
    match profile.mode() {
        PromptMode::Banner => format!(
            "printf '%s\\n\\n' {}\nexec sh -c {}\n",
            sh_quote(prompt),
            sh_quote(cmd)
        ),
        PromptMode::LaunchArg => {
            let mut s = format!("exec sh -c {} sh", sh_quote(&format!("{cmd} \"$@\"")));
            for a in profile.launch_args(prompt) {
                s.push(' ');
                s.push_str(&sh_quote(&a));
            }
            s.push('\n');
            s
        }
        PromptMode::Typed => format!("exec sh -c {}\n", sh_quote(cmd)),
    }
}

/// What [`deliver::deliver`] needs for the first prompt of `p`.
fn delivery_target(
    env: &Env,
    req: &UpRequest,
    team: &Team,
    profile: &Profile,
    p: &Plan,
    inc: &PaneIncarnation,
    op: Uuid,
) -> Result<deliver::Target> {
    let text = trigger_text(team, p);
    check_literal_text(&text)
        .map_err(|m| Error::Usage(format!("the trigger text for {}: {m}", p.name)))?;
    let tags = pane_tags(team, p, op)
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
        exit_file: Some((p.worker_dir.join("exit.json"), p.incarnation)),
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
            owner_evidence: Some(json!({"owner_id": team.owner_id, "incarnation": p.incarnation})),
            reason: None,
            outcome: None,
        },
    })
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

    #[test]
    fn layouts_keep_every_pane_at_least_the_minimum() {
        // tmux's tiled grid, and how many 20x5 panes a window holds.
        assert_eq!(tiled_grid(12), (4, 3));
        assert_eq!(tiled_fit(80, 24), 12);
        assert_eq!(tiled_fit(200, 50), 64);
        assert_eq!(tiled_fit(19, 50), 0);
        for (w, h) in [(80, 24), (200, 50), (41, 11), (300, 100)] {
            let n = tiled_fit(w, h) as u32;
            let (rows, cols) = tiled_grid(n);
            assert!((w - (cols - 1)) / cols >= MIN_PANE.0 && (h - (rows - 1)) / rows >= MIN_PANE.1);
        }
        // A column: every pane, the source's included, keeps at least 5 rows.
        for h in 1..200 {
            let n = stack_fit(40, h);
            assert!(
                n == 0 || stack_cells(h, n).iter().all(|&c| c >= MIN_PANE.1),
                "{h}"
            );
            assert!(
                n == 0 || (n as u32 + 1) * (MIN_PANE.1 + 1) <= h + 1,
                "{h}: {n}"
            );
        }
        assert_eq!(stack_fit(19, 100), 0);
        assert_eq!(stack_fit(40, 24), 3);
        let g = |w, h| crate::tmux::Geometry {
            pane_width: w,
            pane_height: h,
            window_width: w,
            window_height: h,
        };
        assert_eq!(leader_column_fit(g(80, 24)), 4);
        assert_eq!(leader_column_fit(g(200, 50)), 8);
        assert_eq!(leader_column_fit(g(39, 50)), 0);
    }

    #[test]
    fn shares_divide_evenly() {
        assert_eq!(share(1, 2), Some(50));
        assert_eq!(share(2, 3), Some(67));
        assert_eq!(share(3, 4), Some(75));
        assert_eq!(share(1, 1), None);
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
