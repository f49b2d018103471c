//! The reaper (docs/design.md section 7): find panes and processes that are provably ours and
//! provably abandoned, and kill them with proof.
//!
//! - [`discover`]: which servers to scan.
//! - [`state`]: a pane's team state, with proof of absence, and the audit log to use.
//! - [`classify`]: pure verdicts over a snapshot row (or a process) and its team state.
//! - [`kill`]: batched proven audited kills, one tmux invocation per server.
//! - this module: the run over all servers, session verdicts, and residue processes.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The reaper** honours `--state-dir` / `TEAM_STATE_DIR` as team-scale does; a pane that
//!   would be `team_state_gone` while its process names another `TEAM_STATE_DIR` is
//!   `unverifiable`. `team_state_gone` needs "not found" for both `team.json` and `journal.json`;
//!   permission errors and malformed state are `unverifiable`. A leader pane is killable only in a
//!   session the tools made. Killing modes hold each team's scale lock from classification to the
//!   end of the kills; the per-user reaper lock (where it lives: `team_reap::ctx`) is taken only by modes
//!   that kill, so `scan | kill --from -` works. A dead socket is warned about once per socket
//!   file (remembered beside the lock), so cron stays silent.
//!
//! - **Pane tags are claims; a worker pane's process is the proof.** Anyone who can reach a
//!   socket can set `@team_*` on any pane, so a worker-tagged pane that the tags alone make an
//!   orphan is killed only when its first process is the supervisor `up` started for exactly
//!   the team, worker, owner, incarnation, workspace and state root the tags name
//!   (`unproven_worker_pane`; else `unverifiable`). A dead pane holds no process to prove
//!   it by: the command tmux started it with (`#{pane_start_command}`, listed for dead panes
//!   only) must be that same supervisor's, word for word (`unproven_dead_worker_pane`; a path
//!   tmux would quote cannot be matched and stays `unverifiable`). A pane whose process exited
//!   after the listing (not dead yet in it) is judged by its tags: nothing runs in it to harm.
//!   Leader panes run the user's shell, not a supervisor: a record must name them (next
//!   decision).
//!   *Rejected:* trusting the tags (the old rule: a shell tagged by hand as a gone team's
//!   worker, or a live worker's pane re-tagged to an empty workspace, was killed); checking
//!   only that some supervisor runs there (a re-tag to another owner or workspace would pass).
//!
//! - **A moved workspace proves nothing.** A worker's supervisor starts in the workspace (or
//!   a worktree under the state root), and `/proc/<pid>/cwd` follows that directory when it is
//!   moved: a supervisor working outside what its arguments name makes its pane and residue
//!   `unverifiable` (`process::supervisor_moved`), since a new empty directory at the old path
//!   would otherwise prove the team's state absent.
//! - **One run finishes a pane and what it left.** Residue below the supervisor of a pane this
//!   run killed is scanned in the same run (the killed pane's process is no longer skipped as
//!   a listed pane's), and a session is reported killed only when a listing after the kills no
//!   longer shows it.
//!
//! - **A leader is killed only as a record names it.** No process proves a leader pane (it
//!   runs the user's shell), and `@team_session_owner` is a claim like any tag. So a
//!   leader-tagged pane is an orphan only as the recorded leader (full incarnation) of a
//!   stopped team that the tools created (`classify::classify_pane`); when the team's state
//!   is gone or names another owner, it is `unverifiable` and its session stays: the user
//!   ends it. An `init` that dies before storing `team.json` leaves `init.json`: its private
//!   server and owner id from the start, the leader pane's full identity as soon as it exists.
//!   That record names the leader (on that server, with that owner; by its identity, or, when
//!   the init died while tmux was still making the session, as the session's oldest pane and
//!   its only one claiming that owner, in the session of the team's name that carries the
//!   owner, once the init process is gone by its pid and start time), so the reaper removes
//!   it; and a later `init` that finds that session, or cannot ask the server, stops before any
//!   effect, leaving the record for the reaper. *Rejected:* the old rule (a pane tagged leader in a session whose
//!   `@team_session_owner` equals its owner is tools-made): a session of the user's own, or a
//!   live team's leader or worker re-tagged as a lost team's leader, was killed (black-box
//!   findings).

pub mod classify;
pub mod discover;
pub mod kill;
pub mod state;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use crate::audit::{AuditLog, Entry, Stage};
use crate::error::Result;
use crate::ops::kill::KillResult;
use crate::ops::teardown::PaneOutcome;
use crate::process::{self, ProcId, ProcVerdict, Proven, StopOutcome, TeamProc};
use crate::tmux::{Listing, PaneRow, Tmux};

pub use classify::{Classified, OrphanCause, Verdict};
pub use kill::ReapTarget;
pub use state::{Lookup, Oracle, TeamKey};

/// The caller name in audit records.
pub const CALLER: &str = "team-reap";

/// What the run is given (read from the environment and options by the binary).
#[derive(Debug, Clone)]
pub struct Config {
    pub tmux_bin: PathBuf,
    /// `<tmux_tmpdir>/tmux-<uid>`.
    pub socket_dir: PathBuf,
    /// `--socket` paths.
    pub sockets: Vec<PathBuf>,
    /// `--state-dir` / `TEAM_STATE_DIR`: the state root of every team (relative: per workspace).
    pub state_dir: Option<PathBuf>,
    /// `--audit-log` / `TEAM_AUDIT_LOG`: the log for teams whose state is gone.
    pub audit_log: Option<PathBuf>,
    /// `--audit-max-size` / `TEAM_AUDIT_MAX_SIZE`: where the audit logs it writes rotate.
    pub audit_max_size: u64,
    /// The command line, for audit records.
    pub argv: Vec<String>,
    /// The `team-scale` executables whose supervisors a dead worker pane may have been started
    /// by (the one beside this binary, the one on `PATH`): a start command by any other
    /// program proves nothing.
    pub supervisor_exes: Vec<PathBuf>,
}

/// How a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    Listed,
    /// No server answers on the socket: reported and skipped.
    Dead,
    /// The listing failed: every pane on it is unknown.
    Failed(String),
}

/// What was (or would be) done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do.
    None,
    WouldKill,
    Killed,
    /// Reapable but deliberately not done (debt left for reconcile, a blocked orphan).
    Skipped,
    /// Tried (or refused to try, fail closed) and it is still there.
    Failed,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::WouldKill => "would_kill",
            Action::Killed => "killed",
            Action::Skipped => "skipped",
            Action::Failed => "failed",
        }
    }
}

/// One pane and its verdict.
#[derive(Debug, Clone)]
pub struct PaneReport {
    pub endpoint: PathBuf,
    pub pane_id: String,
    /// `None` for a pane whose listing line was malformed.
    pub row: Option<PaneRow>,
    pub class: Classified,
    pub key: Option<TeamKey>,
    pub generation: Option<u64>,
    pub action: Action,
    pub note: Option<String>,
    /// The effect was refused because its audit intent could not be written.
    pub audit_failed: bool,
}

impl PaneReport {
    /// Whether the run should act on it (an orphan it may kill, or debt).
    pub fn reapable(&self) -> bool {
        self.class.killable || self.class.verdict == Verdict::Debt
    }
}

/// One server.
#[derive(Debug, Clone)]
pub struct Server {
    pub endpoint: PathBuf,
    pub status: ServerStatus,
    pub panes: Vec<PaneReport>,
    /// The sessions a fresh listing showed after this run's kills on this server (empty when
    /// the server exited with them; `None` when nothing was killed or the listing failed): a
    /// session is reported killed only when it is gone from it.
    pub sessions_after_kills: Option<HashSet<String>>,
}

/// A team session with orphan panes in it.
#[derive(Debug, Clone)]
pub struct SessionReport {
    pub endpoint: PathBuf,
    pub session_id: String,
    pub session_name: String,
    pub team: String,
    /// `killed`/`would_kill` when every pane in it is ours and went (or would go) in one
    /// batch; otherwise `skipped` with the reason in `note`.
    pub action: Action,
    pub note: Option<String>,
}

/// Lists every server and classifies every pane.
pub fn scan(cfg: &Config, oracle: &mut Oracle) -> Result<Vec<Server>> {
    let mut out = Vec::new();
    for endpoint in discover::sockets(&cfg.socket_dir, &cfg.sockets)? {
        let tmux = Tmux::new(&cfg.tmux_bin, &endpoint);
        let server = match tmux.list() {
            Listing::NoServer => Server {
                endpoint,
                status: ServerStatus::Dead,
                panes: vec![],
                sessions_after_kills: None,
            },
            Listing::Failed(e) => Server {
                endpoint,
                status: ServerStatus::Failed(e),
                panes: vec![],
                sessions_after_kills: None,
            },
            Listing::Panes(snap) => {
                let mut panes = Vec::new();
                for m in &snap.malformed {
                    if let Some(id) = &m.pane_id {
                        panes.push(PaneReport {
                            endpoint: endpoint.clone(),
                            pane_id: id.clone(),
                            row: None,
                            class: Classified {
                                verdict: Verdict::Unverifiable,
                                reason: format!("listing line unreadable: {}", m.reason),
                                killable: false,
                                blocker: None,
                                cause: None,
                            },
                            key: None,
                            generation: None,
                            action: Action::None,
                            note: None,
                            audit_failed: false,
                        });
                    }
                }
                for row in &snap.rows {
                    panes.push(classify_row(cfg, oracle, &endpoint, row, &snap.rows));
                }
                Server {
                    endpoint,
                    status: ServerStatus::Listed,
                    panes,
                    sessions_after_kills: None,
                }
            }
        };
        out.push(server);
    }
    Ok(out)
}

fn classify_row(
    cfg: &Config,
    oracle: &mut Oracle,
    endpoint: &Path,
    row: &PaneRow,
    rows: &[PaneRow],
) -> PaneReport {
    let mut key = None;
    let mut generation = None;
    let class = if !row.tags.pane_tagged() {
        classify::classify_pane(row, Err("untagged"))
    } else {
        match TeamKey::from_tags(
            &row.tags.workspace,
            &row.tags.name,
            cfg.state_dir.as_deref(),
        ) {
            Err(why) => classify::classify_pane(row, Err(&why)),
            Ok(k) => {
                let l = oracle.lookup(&k);
                if let Lookup::Present(t) = &l {
                    generation = Some(t.generation);
                }
                let mut c = classify::classify_pane(row, Ok(&l));
                if matches!(l, Lookup::Gone(_))
                    && !row.tags.role.is_empty()
                    && interrupted_init_made(row, rows, &k, endpoint)
                {
                    c = Classified::orphan(OrphanCause::TeamStateGone);
                }
                if c.cause == Some(OrphanCause::TeamStateGone)
                    && let Some(sd) = state::env_state_dir(row.pane_pid)
                {
                    let theirs =
                        crate::paths::StateRoot::resolve(Path::new(&row.tags.workspace), Some(&sd));
                    if theirs.as_ref().map(|r| r.path() != k.root).unwrap_or(true) {
                        c = Classified {
                            verdict: Verdict::Unverifiable,
                            reason: format!(
                                "its process names TEAM_STATE_DIR={}, not the state root searched ({}); pass --state-dir",
                                sd.display(),
                                k.root.display()
                            ),
                            killable: false,
                            blocker: None,
                            cause: None,
                        };
                    }
                }
                // Debt is settled through the teardown, which adopts a pane only on the same
                // proof: say so here rather than promise a settling that will not touch it.
                if (c.killable || c.verdict == Verdict::Debt)
                    && let Some(why) = unproven_worker_pane(row, &k, &cfg.supervisor_exes)
                {
                    c = Classified::new(Verdict::Unverifiable, why);
                }
                key = Some(k);
                c
            }
        }
    };
    PaneReport {
        endpoint: endpoint.to_path_buf(),
        pane_id: row.pane_id.clone(),
        row: Some(row.clone()),
        class,
        key,
        generation,
        action: Action::None,
        note: None,
        audit_failed: false,
    }
}

/// Whether `row` (a leader-tagged pane of a team whose state is gone, on `endpoint`) is the
/// leader pane an interrupted `init` made, by the record it left (`init.json`), not by its
/// tags alone: the pane is on the private server the record names and carries the record's
/// owner id, and either the record names this pane's full identity (`PaneRow::is_exactly`), or, when the init died before it could record the pane (its tmux
/// client finishing the session after it), the pane heads a session of the team's name that
/// carries the record's owner as `@team_session_owner`, and the init process is gone. See
/// "A leader is killed only as a record names it". Heading means: the session's oldest pane
/// (the lowest pane id in it: init made the session with that one pane), its only pane
/// tagged as a leader of that owner (two claimants name neither), and still running what
/// `init` started it with ([`started_by_init`]). `rows` is the server's
/// listing.
fn interrupted_init_made(row: &PaneRow, rows: &[PaneRow], key: &TeamKey, endpoint: &Path) -> bool {
    let Some(rec) = state::interrupted_init(key) else {
        return false;
    };
    if rec.owner != row.tags.owner || rec.endpoint.as_deref() != Some(endpoint) {
        return false;
    }
    match &rec.leader {
        Some(p) => row.is_exactly(p),
        None => {
            let num = |r: &PaneRow| r.pane_id[1..].parse::<u64>().unwrap_or(u64::MAX);
            let session: Vec<&PaneRow> = rows
                .iter()
                .filter(|r| r.session_id == row.session_id)
                .collect();
            let oldest = session.iter().map(|r| num(r)).min() == Some(num(row));
            let claimants = session
                .iter()
                .filter(|r| r.tags.owner == rec.owner && !r.tags.role.is_empty())
                .count();
            row.tags.session_owner == rec.owner
                && row.session_name == key.name.as_str()
                && oldest
                && claimants == 1
                && started_by_init(row, &rec.owner, &key.name)
                && rec.init_gone()
        }
    }
}

/// Whether tmux started `row` with the command `init` gives a leader of `team` and `owner`
/// (`export TEAM_OWNER='..' TEAM_NAME='..' TEAM_ROLE='leader' ..; <leader command>`, which
/// tmux shows double-quoted). A leader pane respawned with another command (`respawn-pane -k
/// vim`) is not it any more.
fn started_by_init(row: &PaneRow, owner: &str, team: &crate::paths::TeamName) -> bool {
    let head = format!("export TEAM_OWNER='{owner}' TEAM_NAME='{team}' TEAM_ROLE='leader' ");
    row.start_command
        .strip_prefix('"')
        .is_some_and(|c| c.starts_with(&head))
}

/// Why a worker pane the tags make an orphan is still not provably ours (`None`: proven, or
/// nothing runs in it to harm). Tags are claims anyone with the socket can set; the process is
/// the evidence. A live worker pane's first process must be the supervisor `up` started for
/// exactly what the tags say (`check_supervisor`: its name, its executable, the incarnation in
/// its arguments), and its arguments must name the same team, worker, owner, workspace and
/// state root. A hand-tagged pane of yours (a shell, an editor) and a live team's worker pane
/// re-tagged to another owner or workspace are `unverifiable`. A dead pane is proven by its
/// start command ([`unproven_dead_worker_pane`]); one whose process has exited since the
/// listing holds no process to harm. Leader panes run your shell, not a
/// supervisor: a record must name them (`classify::classify_pane`, `interrupted_init_made`).
fn unproven_worker_pane(row: &PaneRow, key: &TeamKey, exes: &[PathBuf]) -> Option<String> {
    if !row.tags.role.is_empty() {
        return None;
    }
    if row.dead {
        return unproven_dead_worker_pane(row, key, exes);
    }
    let not_ours = |why: String| {
        Some(format!(
            "tagged as a worker, but its process is not that worker's supervisor: {why}"
        ))
    };
    let a = match process::check_supervisor_args(row.pane_pid, None, &row.tags.incarnation) {
        (process::SupervisorCheck::Gone, _) => return None,
        (process::SupervisorCheck::Alive(_), Some(a)) => a,
        (process::SupervisorCheck::Alive(_), None) => {
            return not_ours(format!("pid {}'s arguments were not kept", row.pane_pid));
        }
        (process::SupervisorCheck::Other(why) | process::SupervisorCheck::Unverifiable(why), _) => {
            return not_ours(why);
        }
    };
    let t = &row.tags;
    let mut differ = Vec::new();
    if a.owner.to_string() != t.owner {
        differ.push(format!("owner {} (tag {})", a.owner, t.owner));
    }
    if a.team.as_str() != t.name {
        differ.push(format!("team {} (tag {:?})", a.team, t.name));
    }
    if a.worker.as_str() != t.worker {
        differ.push(format!("worker {} (tag {:?})", a.worker, t.worker));
    }
    if a.workspace != Path::new(&t.workspace) {
        differ.push(format!(
            "workspace {} (tag {:?})",
            a.workspace.display(),
            t.workspace
        ));
    }
    if a.state_root != key.root {
        differ.push(format!(
            "state root {} (searched {})",
            a.state_root.display(),
            key.root.display()
        ));
    }
    if differ.is_empty() {
        process::supervisor_moved(row.pane_pid, &a).map(|why| {
            format!("tagged as a worker whose workspace is not where its supervisor works: {why}")
        })
    } else {
        Some(format!(
            "its tags do not say what its supervisor (pid {}) works for: {}",
            row.pane_pid,
            differ.join(", ")
        ))
    }
}

/// Why a dead worker-tagged pane is not provably the worker its tags name, if it is not. No
/// process runs in it to prove it by, so the command tmux started it with must be the
/// supervisor `up` starts for exactly what the tags name (op, team, worker, owner,
/// incarnation) and the state root and workspace searched, word for word, by one of the
/// `team-scale` executables the reaper knows (`Config::supervisor_exes`; see
/// [`crate::supervisor::SupervisorArgs::check_start_command`]). A dead
/// pane of yours tagged by hand, or a worker's pane respawned with another command, is not
/// killed for its tags.
fn unproven_dead_worker_pane(row: &PaneRow, key: &TeamKey, exes: &[PathBuf]) -> Option<String> {
    let t = &row.tags;
    let not_ours = |why: &str| {
        Some(format!(
            "dead, tagged as a worker, but {why} (its start command: {:?})",
            row.start_command.chars().take(200).collect::<String>()
        ))
    };
    let (Ok(op), Ok(team), Ok(worker), Ok(owner), Ok(incarnation)) = (
        Uuid::parse_str(&t.op),
        crate::paths::TeamName::new(&t.name),
        crate::paths::WorkerName::new(&t.worker),
        Uuid::parse_str(&t.owner),
        Uuid::parse_str(&t.incarnation),
    ) else {
        return not_ours("its tags are not those `up` sets");
    };
    let args = crate::supervisor::SupervisorArgs {
        op: Some(op),
        team,
        worker,
        owner,
        incarnation,
        state_root: key.root.clone(),
        workspace: PathBuf::from(&t.workspace),
    };
    args.check_start_command(&row.start_command, exes)
        .err()
        .and_then(|why| not_ours(&why))
}

fn entry_for(
    cfg: &Config,
    action: &str,
    key: &TeamKey,
    generation: Option<u64>,
    class: &Classified,
    evidence: serde_json::Value,
) -> Entry {
    Entry {
        caller: CALLER.into(),
        action: action.into(),
        op: Some("reap".into()),
        argv: vec![],
        endpoint: None,
        targets: vec![],
        workspace: key.workspace.as_ref().map(|w| w.display().to_string()),
        team: Some(key.name.to_string()),
        generation,
        owner_evidence: Some(evidence),
        reason: Some(format!(
            "{}: {} (argv: {})",
            class.verdict.as_str(),
            class.reason,
            cfg.argv.join(" ")
        )),
        outcome: None,
    }
}

/// Acts on the panes `select` picks among the reapable ones: orphans are killed with proof
/// (all kills of one server in one tmux invocation), debt is left for `team-scale reconcile`.
pub fn kill_panes(
    cfg: &Config,
    oracle: &mut Oracle,
    servers: &mut [Server],
    select: &dyn Fn(&PaneReport) -> bool,
    dry_run: bool,
    grace: Duration,
) {
    let mut debt_keys: std::collections::BTreeSet<TeamKey> = Default::default();
    for s in servers.iter_mut() {
        let tmux = Tmux::new(&cfg.tmux_bin, &s.endpoint);
        let mut targets = Vec::new();
        let mut which = Vec::new();
        for (i, p) in s.panes.iter_mut().enumerate() {
            if !p.reapable() || !select(p) {
                continue;
            }
            let key = p.key.clone().expect("a reapable pane has a team key");
            if p.class.verdict == Verdict::Debt {
                if dry_run {
                    p.action = Action::WouldKill;
                    p.note = Some("debt: would settle through reconcile".into());
                } else {
                    debt_keys.insert(key);
                }
                continue;
            }
            let lookup = oracle.lookup(&key);
            let log = match state::audit_log_for(&key, &lookup, cfg.audit_log.as_deref()) {
                Ok(l) => l,
                Err(why) => {
                    p.action = Action::Failed;
                    p.note = Some(why);
                    continue;
                }
            };
            if dry_run {
                p.action = Action::WouldKill;
                continue;
            }
            let row = p.row.clone().expect("a classified pane has a row");
            // A recorded leader's process must still be the one recorded (its start time):
            // after a server restart its pid, the server's pid and start second and the ids
            // can all come back on a pane of someone else's.
            if let Lookup::Present(t) = &lookup
                && !row.tags.role.is_empty()
                && row.is_exactly(&t.leader.pane)
                && let Err(why) =
                    process::recorded_start_matches(row.pane_pid, t.leader.pane.process_start)
            {
                p.action = Action::Skipped;
                p.note = Some(format!("kept: {why}"));
                continue;
            }
            let recorded = match &lookup {
                Lookup::Present(t) => t.owner_id.to_string(),
                _ => "none".into(),
            };
            let root = key.state_root();
            let audit_root = (log == root.audit_log()).then(|| root.path().to_path_buf());
            targets.push(ReapTarget {
                row,
                audit_log: log,
                audit_root,
                reason: format!(
                    "{}: {} (recorded owner {recorded}, state root {}; {})",
                    p.class.verdict.as_str(),
                    p.class.reason,
                    key.root.display(),
                    cfg.argv.join(" ")
                ),
                team: Some(key.name.to_string()),
                workspace: key.workspace.as_ref().map(|w| w.display().to_string()),
            });
            which.push(i);
        }
        if targets.is_empty() {
            continue;
        }
        if let Err(e) = crate::failpoint::hit("reap.before_kill") {
            for &i in &which {
                s.panes[i].action = Action::Failed;
                s.panes[i].note = Some(format!("not killed: {e}"));
            }
            continue;
        }
        let results = kill::reap_batch(&tmux, CALLER, &targets, cfg.audit_max_size);
        if results.iter().any(|r| matches!(r, Ok(KillResult::Killed))) {
            s.sessions_after_kills = match tmux.list() {
                Listing::Panes(snap) => {
                    Some(snap.rows.iter().map(|r| r.session_id.clone()).collect())
                }
                Listing::NoServer => Some(HashSet::new()),
                Listing::Failed(_) => None,
            };
        }
        for (i, r) in which.into_iter().zip(results) {
            let p = &mut s.panes[i];
            match r {
                Ok(KillResult::Killed) => p.action = Action::Killed,
                Ok(KillResult::Gone(why)) => {
                    p.action = Action::None;
                    p.note = Some(format!("already gone: {why}"));
                }
                Ok(other) => {
                    p.action = Action::Failed;
                    p.note = Some(format!(
                        "{}: {}",
                        other.word(),
                        other.reason().unwrap_or("")
                    ));
                }
                Err(msg) => {
                    p.action = Action::Failed;
                    p.audit_failed = true;
                    p.note = Some(format!("not killed: {msg}"));
                }
            }
        }
    }
    if !debt_keys.is_empty() {
        settle_debt(cfg, oracle, servers, debt_keys, grace);
    }
}

/// Settles the debt of each team in `keys` through `team-scale reconcile`'s code
/// ([`crate::ops::reconcile::reconcile`]), then marks each debt pane by a fresh listing:
/// gone means settled (`killed`), still there means `skipped` with the reason.
fn settle_debt(
    cfg: &Config,
    oracle: &mut Oracle,
    servers: &mut [Server],
    keys: std::collections::BTreeSet<TeamKey>,
    grace: Duration,
) {
    for key in keys {
        let team = match oracle.lookup(&key) {
            Lookup::Present(t) => t,
            _ => continue,
        };
        let root = key.state_root();
        // reconcile takes the scale lock itself; hand ours over.
        oracle.release(&key);
        let store =
            crate::store::Store::new(root.clone(), key.name.clone(), Duration::from_secs(5));
        let tmux = Tmux::new(&cfg.tmux_bin, &team.endpoint);
        let audit = AuditLog::new(root.audit_log())
            .with_max_size(cfg.audit_max_size)
            .within(root.path());
        let fail = |n: &str| crate::failpoint::hit(n);
        let td = crate::ops::teardown::Teardown {
            store: &store,
            tmux: &tmux,
            audit: &audit,
            caller: CALLER.into(),
            op: "reap",
            argv: cfg.argv.clone(),
            grace,
            supervisor_exes: &cfg.supervisor_exes,
            fail: &fail,
            // The reaper runs from cron: no progress lines.
            progress: &|_| {},
            outcomes: None,
        };
        let result = crate::ops::reconcile::reconcile(&td);
        // What the teardown moved to the team's trash: the reaper runs from cron, with time
        // to spare, so it deletes it here rather than leave it to the next `team-scale`.
        if let Err(e) = crate::ops::resources::empty_trash(&root, &key.name) {
            tracing::debug!(team = %key.name, error = %e, "trash not emptied");
        }
        // What the teardown itself says of each worker's pane: a pane it kept (its kill
        // refused, even if the pane has since moved away from where the scan saw it) is never
        // reported as killed.
        let settled: HashMap<String, (PaneOutcome, Vec<String>)> = match &result {
            Ok(r) => r
                .settle
                .workers
                .iter()
                .map(|w| (w.worker.to_string(), (w.pane, w.blocked.clone())))
                .collect(),
            Err(_) => HashMap::new(),
        };
        for s in servers.iter_mut() {
            let listing = Tmux::new(&cfg.tmux_bin, &s.endpoint).list();
            for p in s.panes.iter_mut() {
                if p.class.verdict != Verdict::Debt || p.key.as_ref() != Some(&key) {
                    continue;
                }
                let worker = p
                    .row
                    .as_ref()
                    .map(|r| r.tags.worker.clone())
                    .unwrap_or_default();
                let gone = match settled.get(&worker) {
                    Some((PaneOutcome::Killed | PaneOutcome::Gone, _)) => true,
                    Some((PaneOutcome::Kept, _)) => false,
                    // Not in this teardown (settled by another run meanwhile): its pane id is
                    // gone from a listing that answered.
                    None => match &listing {
                        Listing::Panes(snap) => snap.pane(&p.pane_id).is_none(),
                        Listing::NoServer => true,
                        Listing::Failed(_) => false,
                    },
                };
                if gone && result.is_ok() {
                    p.action = Action::Killed;
                    p.note = Some("settled through reconcile".into());
                } else {
                    p.action = Action::Skipped;
                    p.note = Some(match &result {
                        Err(e) => format!(
                            "debt: reconcile failed: {e}; run team-scale reconcile {}",
                            key.name
                        ),
                        Ok(_) => format!(
                            "debt: still removing ({}); run team-scale reconcile {}",
                            settled
                                .get(&worker)
                                .map(|(_, b)| b.join("; "))
                                .unwrap_or_default(),
                            key.name
                        ),
                    });
                }
            }
        }
    }
}

/// The team sessions (tagged `@team_session_owner`) that hold orphan panes: whole only when
/// every pane in them is ours and went in the batch.
pub fn sessions(servers: &[Server]) -> Vec<SessionReport> {
    let mut out = Vec::new();
    for s in servers {
        let mut by_session: BTreeMap<&str, Vec<&PaneReport>> = BTreeMap::new();
        for p in &s.panes {
            if let Some(r) = &p.row {
                by_session.entry(r.session_id.as_str()).or_default().push(p);
            }
        }
        for (sid, panes) in by_session {
            let first = panes[0].row.as_ref().expect("rows only");
            // A team session whose team is gone, re-created or stopped.
            let team_level = |p: &&PaneReport| {
                p.class.killable && p.class.cause.is_some_and(OrphanCause::team_level)
            };
            if first.tags.session_owner.is_empty() || !panes.iter().any(team_level) {
                continue;
            }
            let all = |a: Action| panes.iter().all(|p| p.action == a);
            let (action, note) = if all(Action::Killed) {
                match &s.sessions_after_kills {
                    Some(left) if left.contains(sid) => (
                        Action::Skipped,
                        Some("kept: panes that are not ours appeared in it during the run".into()),
                    ),
                    Some(_) => (Action::Killed, None),
                    None => (
                        Action::Killed,
                        Some("every pane in it was killed; the listing after the kills failed, so its end is not confirmed".into()),
                    ),
                }
            } else if all(Action::WouldKill) {
                (Action::WouldKill, None)
            } else if all(Action::None) && panes.iter().all(|p| p.class.killable) {
                // A scan decides nothing: every pane in it is a reapable orphan.
                (Action::None, None)
            } else {
                // In a scan (nothing decided), what keeps the session is what is not killable.
                let kept = |p: &&&PaneReport| match p.action {
                    Action::Killed | Action::WouldKill => false,
                    Action::None => !p.class.killable,
                    _ => true,
                };
                let keep: Vec<String> = panes
                    .iter()
                    .filter(kept)
                    .map(|p| format!("{} ({})", p.pane_id, p.class.verdict.as_str()))
                    .collect();
                (
                    Action::Skipped,
                    Some(format!(
                        "kept: not every pane in it is ours and reapable: {}",
                        keep.join(", ")
                    )),
                )
            };
            out.push(SessionReport {
                endpoint: s.endpoint.clone(),
                session_id: sid.to_string(),
                session_name: first.session_name.clone(),
                team: first.tags.name.clone(),
                action,
                note,
            });
        }
    }
    out
}

/// One process of a worker, found below its supervisor (whose pane is no longer listed).
#[derive(Debug, Clone)]
pub struct ProcReport {
    /// The process, with its worker's identity taken from the supervisor's arguments.
    pub proc: TeamProc,
    /// The supervisor it was found below.
    pub supervisor: ProcId,
    /// It left the pane's session (`setsid`).
    pub detached: bool,
    pub class: Classified,
    pub key: Option<TeamKey>,
    pub generation: Option<u64>,
    pub action: Action,
    pub note: Option<String>,
    pub audit_id: Option<Uuid>,
    /// The signal was refused because its audit intent could not be written.
    pub audit_failed: bool,
}

impl ProcReport {
    /// Whether the run should act on it.
    pub fn reapable(&self) -> bool {
        self.class.killable || self.class.verdict == Verdict::Debt
    }
}

/// Finds the worker processes whose pane is gone: every supervisor of ours that is not a
/// listed pane's process (`skip_pids`), and below each, by ancestry, the worker's processes
/// (see `proctree`). Each gets the verdict of its supervisor's worker (from the state the
/// supervisor's arguments name); a shared one (detached and listening) is `shared`, and
/// detached residue of a team whose residue policy is `report` is not killable. Environment
/// variables play no part: they are inherited by whatever a worker starts. Returns the reports
/// and how many `/proc` entries could not be read.
pub fn scan_processes(
    _cfg: &Config,
    oracle: &mut Oracle,
    skip_pids: &HashSet<u32>,
    _owner_hints: &HashMap<String, TeamKey>,
) -> Result<(Vec<ProcReport>, usize)> {
    let tree = crate::proctree::Tree::snapshot()?;
    let inspect = crate::proctree::Proc::new();
    let me = inspect_uid();
    let mut out = Vec::new();
    for sup in tree.supervisors() {
        if skip_pids.contains(&sup.id.pid) {
            continue;
        }
        if process::uid(sup.id.pid).ok().flatten() != Some(me) {
            continue;
        }
        // Named like a supervisor is not one: its executable must be ours too. (A lookalike's
        // children are not reported at all: nothing proves they are any team's.)
        if process::runs_supervisor_exe(sup.id.pid).ok().flatten() != Some(true) {
            continue;
        }
        let Some(args) = process::supervisor_args(sup.id.pid) else {
            continue;
        };
        let Ok(root) = crate::paths::StateRoot::resolve(&args.state_root, Some(&args.state_root))
        else {
            continue;
        };
        let key = TeamKey {
            root: root.path().to_path_buf(),
            name: args.team.clone(),
            workspace: Some(args.workspace.clone()),
        };
        let lookup = oracle.lookup(&key);
        let (generation, policy) = match &lookup {
            Lookup::Present(t) => (Some(t.generation), t.settings.residue),
            _ => (None, crate::model::ResiduePolicy::default()),
        };
        let base = TeamProc {
            id: sup.id,
            owner: args.owner.to_string(),
            worker: Some(args.worker.to_string()),
            team: Some(args.team.to_string()),
            state_dir: Some(args.state_root.clone()),
            workspace: Some(args.workspace.clone()),
            incarnation: Some(args.incarnation.to_string()),
        };
        let mut class = classify::classify_process(&base, Some(&lookup));
        if class.killable
            && let Some(why) = process::supervisor_moved(sup.id.pid, &args)
        {
            class = Classified::new(Verdict::Unverifiable, why);
        }
        let inc = args.incarnation.to_string();
        for m in tree.below(sup, &inc, &inspect).members {
            let class = if m.shared {
                Classified::new(
                    Verdict::Shared,
                    format!(
                        "{:?} left its pane's session and listens on a socket: it may serve clients outside {}",
                        m.node.comm, args.worker
                    ),
                )
            } else if m.detached && class.killable && policy == crate::model::ResiduePolicy::Report
            {
                class.clone().blocked("the team's residue policy is report")
            } else {
                class.clone()
            };
            out.push(ProcReport {
                proc: TeamProc {
                    id: m.node.id,
                    ..base.clone()
                },
                supervisor: sup.id,
                detached: m.detached,
                class,
                key: Some(key.clone()),
                generation,
                action: Action::None,
                note: None,
                audit_id: None,
                audit_failed: false,
            });
        }
    }
    Ok((out, tree.unreadable))
}

fn inspect_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Terminates the orphan processes `select` picks: each proven (pidfd, start time, still below
/// its supervisor, no other incarnation's token), audited (intent before the first signal), then SIGTERM, `grace`,
/// re-proof, SIGKILL.
pub fn kill_processes(
    cfg: &Config,
    oracle: &mut Oracle,
    procs: &mut [ProcReport],
    select: &dyn Fn(&ProcReport) -> bool,
    dry_run: bool,
    grace: Duration,
) {
    type ByLog = BTreeMap<(PathBuf, Option<PathBuf>), Vec<(usize, Proven, Entry)>>;
    let mut by_log: ByLog = BTreeMap::new();
    for (i, r) in procs.iter_mut().enumerate() {
        if !r.class.killable || !select(r) {
            if r.class.verdict == Verdict::Debt && select(r) {
                r.action = Action::Skipped;
                r.note = Some("debt: run team-scale reconcile".into());
            }
            continue;
        }
        let key = r.key.clone().expect("an orphan process has a team key");
        let lookup = oracle.lookup(&key);
        let log = match state::audit_log_for(&key, &lookup, cfg.audit_log.as_deref()) {
            Ok(l) => l,
            Err(why) => {
                r.action = Action::Failed;
                r.note = Some(why);
                continue;
            }
        };
        let p = &r.proc;
        let (verdict, proven) = process::prove_below(
            p.id,
            r.supervisor,
            p.incarnation.as_deref().unwrap_or_default(),
        );
        let Some(proven) = proven else {
            match verdict {
                ProcVerdict::Gone => {
                    r.action = Action::None;
                    r.note = Some("already gone".into());
                }
                other => {
                    r.action = Action::Failed;
                    r.note = Some(format!("not proven: {other:?}"));
                }
            }
            continue;
        };
        if dry_run {
            r.action = Action::WouldKill;
            continue;
        }
        let mut e = entry_for(
            cfg,
            "signal",
            &key,
            r.generation,
            &r.class,
            json!({"supervisor_pid": r.supervisor.pid, "supervisor_start": r.supervisor.start_time,
                "owner": p.owner, "worker": p.worker, "incarnation": p.incarnation,
                "detached": r.detached, "state_root": key.root}),
        );
        e.argv = vec![
            "SIGTERM".into(),
            format!("grace={grace:?}"),
            "SIGKILL".into(),
        ];
        e.targets = vec![
            json!({"pid": p.id.pid, "start_time": p.id.start_time, "owner": p.owner, "worker": p.worker}),
        ];
        let root = key.state_root();
        let audit_root = (log == root.audit_log()).then(|| root.path().to_path_buf());
        by_log
            .entry((log, audit_root))
            .or_default()
            .push((i, proven, e));
    }
    for ((path, root), items) in by_log {
        let mut log = AuditLog::new(path.clone()).with_max_size(cfg.audit_max_size);
        if let Some(root) = &root {
            log = log.within(root);
        }
        let intents: Vec<_> = items
            .iter()
            .map(|(_, _, e)| (Stage::Intent, None, e.clone()))
            .collect();
        let recs = match log.append_batch(&intents) {
            Ok(r) => r,
            Err(err) => {
                for (i, _, _) in &items {
                    procs[*i].action = Action::Failed;
                    procs[*i].audit_failed = true;
                    procs[*i].note = Some(format!(
                        "not signalled: the audit intent could not be written: {err}"
                    ));
                }
                continue;
            }
        };
        let mut idx = Vec::new();
        let mut entries = Vec::new();
        let mut proven = Vec::new();
        for ((i, p, e), rec) in items.into_iter().zip(recs) {
            procs[i].audit_id = Some(rec.audit_id);
            idx.push((i, rec.audit_id));
            entries.push(e);
            proven.push(p);
        }
        let outcomes = process::terminate(proven, grace);
        let mut done = Vec::new();
        for (((i, id), mut e), (_, o)) in idx.into_iter().zip(entries).zip(outcomes) {
            let ok = matches!(
                o,
                StopOutcome::ExitedAfterTerm | StopOutcome::Killed | StopOutcome::GoneBefore
            );
            procs[i].action = if ok { Action::Killed } else { Action::Failed };
            if !ok {
                procs[i].note = Some(format!("{o:?}"));
            }
            e.outcome = Some(
                serde_json::to_value(&o)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            );
            done.push((
                if ok { Stage::Complete } else { Stage::Failed },
                Some(id),
                e,
            ));
        }
        if let Err(err) = log.append_outcomes(&done) {
            tracing::warn!(log = %path.display(), error = %err, "could not record process outcomes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::snapshot::Tags;

    const OP: &str = "00000000-0000-4000-8000-00000000000a";
    const OWNER: &str = "00000000-0000-4000-8000-00000000000b";
    const INC: &str = "00000000-0000-4000-8000-00000000000c";

    fn dead_row(ws: &str, command: String) -> (PaneRow, TeamKey) {
        let key = TeamKey::from_tags(ws, "demo", None).unwrap();
        let row = PaneRow {
            pane_id: "%3".into(),
            pane_pid: 1234,
            dead: true,
            session_id: "$1".into(),
            session_name: "demo".into(),
            window_id: "@1".into(),
            server_pid: 100,
            server_start: 200,
            tags: Tags {
                owner: OWNER.into(),
                worker: "worker-1".into(),
                incarnation: INC.into(),
                workspace: ws.into(),
                name: "demo".into(),
                op: OP.into(),
                ..Default::default()
            },
            start_command: command,
        };
        (row, key)
    }

    /// The one `team-scale` these tests know (it need not exist: the same path is enough).
    fn exes() -> Vec<PathBuf> {
        vec![PathBuf::from("/usr/bin/team-scale")]
    }

    fn started_as(ws: &str, exe: &str) -> String {
        format!(
            "{exe} supervise --op {OP} --team demo --worker worker-1 --owner {OWNER} --incarnation {INC} --root {ws}/.team --ws {ws} -- /bin/sh {ws}/.team/teams/demo/runtime/worker-1.sh"
        )
    }

    #[test]
    fn a_dead_pane_is_a_worker_only_as_tmux_started_it_word_for_word() {
        let (row, key) = dead_row("/w/s", started_as("/w/s", "/usr/bin/team-scale"));
        assert_eq!(unproven_dead_worker_pane(&row, &key, &exes()), None);
        // Another incarnation, another workspace, extra words, a quoted binary: not it.
        for cmd in [
            started_as("/w/s", "/usr/bin/team-scale").replace(INC, OWNER),
            started_as("/w/t", "/usr/bin/team-scale"),
            format!("{} extra", started_as("/w/s", "/usr/bin/team-scale")),
            started_as("/w/s", "\"/my bin/team-scale\""),
            started_as("/w/s", "/bin/echo"),
            started_as("/w/s", "/usr/bin/team-scale.sh"),
            started_as("/w/s", "/home/you/fake/team-scale"),
            started_as("/w/s", "./team-scale"),
            started_as("/w/s", "team-scale"),
            started_as("/w/s", ""),
            "sleep 100000".into(),
            String::new(),
        ] {
            let (row, key) = dead_row("/w/s", cmd.clone());
            assert!(
                unproven_dead_worker_pane(&row, &key, &exes()).is_some(),
                "{cmd}"
            );
        }
        // A workspace tmux would quote cannot be matched, whatever the command says.
        let (row, key) = dead_row("/w/my s", started_as("/w/my s", "/usr/bin/team-scale"));
        let why = unproven_dead_worker_pane(&row, &key, &exes()).unwrap();
        assert!(why.contains("quotes"), "{why}");
    }
}
