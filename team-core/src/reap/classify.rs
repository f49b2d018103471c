//! Pure verdicts: a snapshot row plus what is known about its team gives one verdict.

use serde::{Deserialize, Serialize};

use crate::model::{Lifecycle, Team, TeamState};
use crate::process::TeamProc;
use crate::tmux::PaneRow;

use super::state::Lookup;

/// The verdict on one pane or process (docs/design.md section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A member (or the leader) of a live team.
    Owned,
    /// Ours, and provably abandoned: kill with proof.
    Orphan,
    /// Cleanup debt of a live team (`removing`, or `pending` of an abandoned operation).
    Debt,
    /// Its team's scale lock is held: skip the whole team this run.
    Busy,
    /// Tags, state or listing could not be read or trusted: report only.
    Unverifiable,
    /// Not tagged as ours (shown only with `-v`).
    Untagged,
    /// A worker's detached process that listens on a socket: it may serve clients outside the
    /// worker (a shared daemon). Reported, never killed.
    Shared,
}

impl Verdict {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Owned => "owned",
            Verdict::Orphan => "orphan",
            Verdict::Debt => "debt",
            Verdict::Busy => "busy",
            Verdict::Unverifiable => "unverifiable",
            Verdict::Untagged => "untagged",
            Verdict::Shared => "shared",
        }
    }
}

/// Why an orphan is one. The reaper decides on this value (a team-level cause makes a whole
/// session reapable; a gone state is checked against the pane's own `TEAM_STATE_DIR`), never
/// on the reason text, which is only its [`OrphanCause::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanCause {
    /// Proven absence of the team's state.
    TeamStateGone,
    /// The team was re-created with another owner id.
    OwnerMismatch,
    /// Not a member of the live team.
    NotMember,
    /// Made by an operation that no longer has records.
    AbandonedOp,
    /// The team is stopped.
    TeamStopped,
}

impl OrphanCause {
    /// The reason word in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            OrphanCause::TeamStateGone => "team_state_gone",
            OrphanCause::OwnerMismatch => "owner_mismatch",
            OrphanCause::NotMember => "not_member",
            OrphanCause::AbandonedOp => "abandoned_op",
            OrphanCause::TeamStopped => "team_stopped",
        }
    }

    /// The whole team is gone, re-created or stopped, not only one worker of it.
    pub fn team_level(self) -> bool {
        matches!(
            self,
            OrphanCause::TeamStateGone | OrphanCause::OwnerMismatch | OrphanCause::TeamStopped
        )
    }
}

/// Orphan reasons (the words of [`OrphanCause`]).
pub const TEAM_STATE_GONE: &str = OrphanCause::TeamStateGone.as_str();
pub const OWNER_MISMATCH: &str = OrphanCause::OwnerMismatch.as_str();
pub const NOT_MEMBER: &str = OrphanCause::NotMember.as_str();
pub const ABANDONED_OP: &str = OrphanCause::AbandonedOp.as_str();
pub const TEAM_STOPPED: &str = OrphanCause::TeamStopped.as_str();
/// Debt reason for a `removing` worker.
pub const REMOVING: &str = "removing";

/// A verdict with its reason and whether the reaper may kill it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub verdict: Verdict,
    pub reason: String,
    /// Whether it may be killed (an orphan not otherwise protected).
    pub killable: bool,
    /// Why an orphan may still not be killed.
    pub blocker: Option<String>,
    /// Why it is an orphan (`Some` exactly for orphans; `reason` is its word).
    pub cause: Option<OrphanCause>,
}

impl Classified {
    pub(crate) fn new(verdict: Verdict, reason: impl Into<String>) -> Classified {
        Classified {
            verdict,
            reason: reason.into(),
            killable: verdict == Verdict::Orphan,
            blocker: None,
            cause: None,
        }
    }
    /// An orphan, for `cause`.
    pub(crate) fn orphan(cause: OrphanCause) -> Classified {
        Classified {
            cause: Some(cause),
            ..Classified::new(Verdict::Orphan, cause.as_str())
        }
    }
    pub(crate) fn blocked(mut self, why: impl Into<String>) -> Classified {
        self.killable = false;
        self.blocker = Some(why.into());
        self
    }
}

/// Classifies one listed pane. `lookup` is its team (`Err` when its tags could not even name
/// a team).
pub fn classify_pane(row: &PaneRow, lookup: Result<&Lookup, &str>) -> Classified {
    let t = &row.tags;
    if !t.pane_tagged() {
        return Classified::new(Verdict::Untagged, "no team tags of its own");
    }
    let lookup = match lookup {
        Ok(l) => l,
        Err(why) => return Classified::new(Verdict::Unverifiable, why),
    };
    let is_leader = !t.role.is_empty();
    // A leader pane is killed only as the recorded leader of a stopped team that the tools
    // created (below), or by an interrupted init's record (`reap::interrupted_init_made`). Its tags, and its session's options, are claims anyone with the socket
    // can set, and no process proves a leader (it runs your shell): with no record naming it,
    // a leader-tagged pane is unverifiable, never an orphan.
    let unrecorded_leader = || {
        Classified::new(
            Verdict::Unverifiable,
            "tagged as a leader, but no record names this pane (tags prove nothing): end it by hand if it is yours to end",
        )
    };
    let team: &Team = match lookup {
        Lookup::Unverifiable(why) => return Classified::new(Verdict::Unverifiable, why.clone()),
        Lookup::Busy(why) => return Classified::new(Verdict::Busy, why.clone()),
        Lookup::Gone(_) if is_leader => return unrecorded_leader(),
        Lookup::Gone(_) => return Classified::orphan(OrphanCause::TeamStateGone),
        Lookup::Present(team) => team,
    };
    // State found where the pane's workspace points but naming another workspace was copied
    // or moved there: it says nothing about this pane (not even "not ours").
    if team.workspace != std::path::Path::new(&t.workspace) {
        return Classified::new(
            Verdict::Unverifiable,
            format!(
                "the pane is tagged with workspace {} but the team state found names workspace {} (copied or moved state)",
                t.workspace,
                team.workspace.display()
            ),
        );
    }
    if team.owner_id.to_string() != t.owner {
        if is_leader {
            return unrecorded_leader();
        }
        return Classified::orphan(OrphanCause::OwnerMismatch);
    }
    let recorded_here = |p: &crate::model::PaneIncarnation| {
        p.pane_id == row.pane_id
            && p.pane_pid == row.pane_pid
            && (p.server_pid, p.server_start) == (row.server_pid, row.server_start)
    };
    if team.protected.iter().any(&recorded_here) {
        return Classified::new(Verdict::Owned, "protected pane");
    }
    if team.state == TeamState::Stopped {
        let c = Classified::orphan(OrphanCause::TeamStopped);
        if is_leader {
            // Its full identity, where it was recorded: a recorded leader moved into another
            // session or window (yours) is not killed there.
            if !row.is_exactly(&team.leader.pane) {
                return unrecorded_leader();
            }
            // The state was found through this workspace (checked above).
            if let Err(why) = team.leader_is_the_tools(&team.workspace) {
                return c.blocked(why);
            }
        }
        return c;
    }
    // A live team from here on.
    if is_leader {
        // The leader of a live team is never killed, whatever else is true of it.
        return Classified::new(Verdict::Owned, "leader of a live team");
    }
    if recorded_here(&team.leader.pane) {
        return Classified::new(Verdict::Owned, "leader of a live team");
    }
    let rec = team
        .workers
        .iter()
        .find(|w| w.incarnation.to_string() == t.incarnation);
    let Some(w) = rec else {
        return if t.op.is_empty() {
            Classified::orphan(OrphanCause::NotMember)
        } else if team
            .workers
            .iter()
            .any(|w| w.op_id.to_string() == t.op && w.lifecycle != Lifecycle::Active)
        {
            // Its operation still has a reservation being made or undone (a pending or
            // removing worker of it): settle, not kill. An operation whose workers are all
            // members finished: a pane naming it that is none of them is no member.
            Classified::new(Verdict::Debt, ABANDONED_OP)
        } else {
            Classified::orphan(OrphanCause::AbandonedOp)
        };
    };
    if w.name.as_str() != t.worker {
        return Classified::new(
            Verdict::Unverifiable,
            format!(
                "the pane's incarnation is {}'s but it is tagged @team_worker={:?}",
                w.name, t.worker
            ),
        );
    }
    match w.lifecycle {
        Lifecycle::Removing => Classified::new(Verdict::Debt, REMOVING),
        // The scale lock is not held (else the lookup is Busy): its operation was abandoned.
        Lifecycle::Pending => Classified::new(Verdict::Debt, ABANDONED_OP),
        Lifecycle::Active => match &w.pane {
            Some(p) if recorded_here(p) => {
                Classified::new(Verdict::Owned, format!("member {}", w.name))
            }
            _ => Classified::new(
                Verdict::Unverifiable,
                format!(
                    "tagged as member {} but not the pane its record names",
                    w.name
                ),
            ),
        },
    }
}

/// Classifies one process that carries `TEAM_OWNER`. `lookup` is its team, `None` when its
/// environment does not say where the team's state is.
pub fn classify_process(p: &TeamProc, lookup: Option<&Lookup>) -> Classified {
    let Some(lookup) = lookup else {
        return Classified::new(
            Verdict::Unverifiable,
            "its environment does not say where its team's state is",
        );
    };
    let team = match lookup {
        Lookup::Unverifiable(why) => return Classified::new(Verdict::Unverifiable, why.clone()),
        Lookup::Busy(why) => return Classified::new(Verdict::Busy, why.clone()),
        Lookup::Gone(_) => return Classified::orphan(OrphanCause::TeamStateGone),
        Lookup::Present(t) => t,
    };
    if team.owner_id.to_string() != p.owner {
        return Classified::orphan(OrphanCause::OwnerMismatch);
    }
    if team.state == TeamState::Stopped {
        return Classified::orphan(OrphanCause::TeamStopped);
    }
    let Some(worker) = &p.worker else {
        return Classified::new(Verdict::Owned, "a process of a live team (no TEAM_WORKER)");
    };
    match team.workers.iter().find(|w| w.name.as_str() == worker) {
        None => Classified::orphan(OrphanCause::NotMember),
        Some(w)
            if p.incarnation
                .as_deref()
                .is_some_and(|i| i != w.incarnation.to_string()) =>
        {
            // A former spawn of the same name: not this member's.
            Classified::orphan(OrphanCause::NotMember)
        }
        Some(w) => match w.lifecycle {
            Lifecycle::Removing => Classified::new(Verdict::Debt, REMOVING),
            Lifecycle::Pending | Lifecycle::Active => {
                Classified::new(Verdict::Owned, format!("process of member {}", w.name))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;
    use crate::paths::{TeamName, WorkerName};
    use crate::process::ProcId;
    use crate::tmux::Tags;
    use uuid::Uuid;

    fn inc(pane: &str, pid: u32) -> PaneIncarnation {
        PaneIncarnation {
            server_pid: 100,
            server_start: 200,
            pane_id: pane.into(),
            pane_pid: pid,
            session_id: "$1".into(),
            window_id: "@1".into(),
            process_start: None,
        }
    }

    fn worker(n: u64, lc: Lifecycle, pane: Option<PaneIncarnation>) -> Worker {
        Worker {
            name: WorkerName::for_index(n),
            index: n,
            role: None,
            lifecycle: lc,
            incarnation: Uuid::new_v4(),
            op_id: Uuid::new_v4(),
            pane,
            resources: Resources::default(),
            removal_reasons: vec![],
            created_at: "now".into(),
        }
    }

    fn team(workers: Vec<Worker>) -> Team {
        Team {
            schema_version: SCHEMA_VERSION,
            name: TeamName::new("t").unwrap(),
            owner_id: Uuid::new_v4(),
            generation: 1,
            created_at: "now".into(),
            workspace: "/ws".into(),
            state: TeamState::Active,
            endpoint: crate::paths::private_endpoint(std::path::Path::new("/tmp"), "/ws".as_ref()),
            private_server: true,
            session: SessionRecord {
                id: "$1".into(),
                name: "t".into(),
                created_by_tools: true,
            },
            leader: Leader {
                pane: inc("%0", 10),
                created_by_tools: true,
            },
            protected: vec![],
            settings: Settings {
                max_workers: 4,
                worker_cmd: "sh".into(),
                worktree: WorktreeMode::Off,
                ready_pattern: None,
                trigger: None,
                scaling: true,
                residue: Default::default(),
                reassign: Default::default(),
                agent: None,
            },
            next_worker_index: 10,
            next_task_id: 1,
            workers,
        }
    }

    fn row_for(t: &Team, w: &Worker) -> PaneRow {
        let p = w.pane.clone().unwrap();
        PaneRow {
            pane_id: p.pane_id,
            pane_pid: p.pane_pid,
            dead: false,
            session_id: "$1".into(),
            session_name: "t".into(),
            window_id: "@1".into(),
            server_pid: 100,
            server_start: 200,
            tags: Tags {
                owner: t.owner_id.to_string(),
                worker: w.name.to_string(),
                incarnation: w.incarnation.to_string(),
                workspace: "/ws".into(),
                name: "t".into(),
                session_owner: t.owner_id.to_string(),
                ..Default::default()
            },
            start_command: String::new(),
        }
    }

    fn leader_row(t: &Team) -> PaneRow {
        PaneRow {
            pane_id: "%0".into(),
            pane_pid: 10,
            dead: false,
            session_id: "$1".into(),
            session_name: "t".into(),
            window_id: "@1".into(),
            server_pid: 100,
            server_start: 200,
            tags: Tags {
                owner: t.owner_id.to_string(),
                role: "leader".into(),
                workspace: "/ws".into(),
                name: "t".into(),
                session_owner: t.owner_id.to_string(),
                ..Default::default()
            },
            start_command: String::new(),
        }
    }

    fn present(t: &Team) -> Lookup {
        Lookup::Present(Box::new(t.clone()))
    }

    /// Every verdict the tests see also checks that an orphan, and only an orphan, carries
    /// its typed cause, and that its reason is the cause's word.
    fn v(row: &PaneRow, l: &Lookup) -> (Verdict, String, bool) {
        let c = classify_pane(row, Ok(l));
        assert_eq!(c.cause.is_some(), c.verdict == Verdict::Orphan, "{c:?}");
        if let Some(k) = c.cause {
            assert_eq!(c.reason, k.as_str());
        }
        (c.verdict, c.reason, c.killable)
    }

    #[test]
    fn members_and_leader_are_owned() {
        let w1 = worker(1, Lifecycle::Active, Some(inc("%1", 11)));
        let t = team(vec![w1.clone()]);
        assert_eq!(v(&row_for(&t, &w1), &present(&t)).0, Verdict::Owned);
        assert_eq!(v(&leader_row(&t), &present(&t)).0, Verdict::Owned);
        // Even a leader-tagged pane that is not the recorded leader pane: never killed.
        let mut other = leader_row(&t);
        other.pane_id = "%9".into();
        assert_eq!(v(&other, &present(&t)).0, Verdict::Owned);
    }

    #[test]
    fn orphan_reasons() {
        let w1 = worker(1, Lifecycle::Active, Some(inc("%1", 11)));
        let t = team(vec![w1.clone()]);
        let row = row_for(&t, &w1);
        assert_eq!(
            v(&row, &Lookup::Gone("x".into())),
            (Verdict::Orphan, TEAM_STATE_GONE.into(), true)
        );
        // Re-created under the same name: a new owner id.
        let mut t2 = t.clone();
        t2.owner_id = Uuid::new_v4();
        assert_eq!(v(&row, &present(&t2)).1, OWNER_MISMATCH);
        // Removed from team.json by hand.
        let t3 = team(vec![]);
        let mut r3 = row.clone();
        r3.tags.owner = t3.owner_id.to_string();
        assert_eq!(
            v(&r3, &present(&t3)),
            (Verdict::Orphan, NOT_MEMBER.into(), true)
        );
        // Made by an operation whose records are gone.
        r3.tags.op = Uuid::new_v4().to_string();
        assert_eq!(
            v(&r3, &present(&t3)),
            (Verdict::Orphan, ABANDONED_OP.into(), true)
        );
        // Stopped team: workers and a tools-made leader go.
        let mut t4 = t.clone();
        t4.state = TeamState::Stopped;
        assert_eq!(v(&row, &present(&t4)).1, TEAM_STOPPED);
        assert_eq!(
            v(&leader_row(&t), &present(&t4)),
            (Verdict::Orphan, TEAM_STOPPED.into(), true)
        );
        // A record naming a leader on a server that is not the workspace's private one (a
        // forged record pointing at a pane of the user's own server) is never killed.
        let mut t5 = t4.clone();
        t5.endpoint = "/tmp/tmux-0/default".into();
        assert!(!v(&leader_row(&t), &present(&t5)).2);
    }

    #[test]
    fn adopted_leaders_are_never_killed() {
        let mut t2 = team(vec![]);
        t2.state = TeamState::Stopped;
        t2.leader.created_by_tools = false;
        let row = leader_row(&t2);
        let c = classify_pane(&row, Ok(&present(&t2)));
        assert!(!c.killable && c.blocker.is_some(), "{c:?}");
    }

    /// A leader is killed only as the recorded leader of a stopped team: with no record naming
    /// the pane (state gone, team re-created, another pane), its tags and its session's
    /// options prove nothing, whatever they say.
    #[test]
    fn a_leader_no_record_names_is_unverifiable() {
        let t = team(vec![]);
        let row = leader_row(&t);
        assert_eq!(
            row.tags.session_owner, row.tags.owner,
            "a tools-made session"
        );
        let unverifiable = |c: Classified| {
            assert_eq!(c.verdict, Verdict::Unverifiable, "{c:?}");
            assert!(!c.killable);
        };
        unverifiable(classify_pane(&row, Ok(&Lookup::Gone("x".into()))));
        let mut t2 = t.clone();
        t2.owner_id = Uuid::new_v4();
        unverifiable(classify_pane(&row, Ok(&present(&t2))));
        let mut t3 = t.clone();
        t3.state = TeamState::Stopped;
        let mut other = leader_row(&t3);
        other.pane_id = "%9".into();
        unverifiable(classify_pane(&other, Ok(&present(&t3))));
    }

    #[test]
    fn debt_busy_unverifiable_untagged() {
        let w1 = worker(1, Lifecycle::Removing, Some(inc("%1", 11)));
        let w2 = worker(2, Lifecycle::Pending, Some(inc("%2", 12)));
        let t = team(vec![w1.clone(), w2.clone()]);
        assert_eq!(
            v(&row_for(&t, &w1), &present(&t)),
            (Verdict::Debt, REMOVING.into(), false)
        );
        assert_eq!(
            v(&row_for(&t, &w2), &present(&t)),
            (Verdict::Debt, ABANDONED_OP.into(), false)
        );
        let busy = Lookup::Busy("held".into());
        assert_eq!(v(&row_for(&t, &w1), &busy).0, Verdict::Busy);
        assert_eq!(v(&leader_row(&t), &busy).0, Verdict::Busy);
        let unv = Lookup::Unverifiable("EACCES".into());
        assert_eq!(
            v(&row_for(&t, &w1), &unv),
            (Verdict::Unverifiable, "EACCES".into(), false)
        );
        let c = classify_pane(&row_for(&t, &w1), Err("tags unreadable"));
        assert_eq!(c.verdict, Verdict::Unverifiable);
        // Session tags showing through do not make a pane ours.
        let mut r = row_for(&t, &w1);
        r.tags.incarnation.clear();
        assert_eq!(v(&r, &Lookup::Gone("x".into())).0, Verdict::Untagged);
        // An active record naming another pane: not provably this one.
        let w3 = worker(3, Lifecycle::Active, Some(inc("%3", 13)));
        let t = team(vec![w3.clone()]);
        let mut r = row_for(&t, &w3);
        r.pane_pid = 99;
        assert_eq!(v(&r, &present(&t)).0, Verdict::Unverifiable);
        // Incarnation of one worker, name of another.
        let mut r = row_for(&t, &w3);
        r.tags.worker = "worker-1".into();
        assert_eq!(v(&r, &present(&t)).0, Verdict::Unverifiable);
        // State copied to another workspace: a pane of that workspace (another owner) is not
        // judged by it, neither as orphan nor as owned.
        let mut r = row_for(&t, &w3);
        r.tags.workspace = "/ws-copy".into();
        assert_eq!(v(&r, &present(&t)).0, Verdict::Unverifiable);
        r.tags.owner = "someone-else".into();
        assert_eq!(v(&r, &present(&t)).0, Verdict::Unverifiable);
    }

    #[test]
    fn processes() {
        let w1 = worker(1, Lifecycle::Active, Some(inc("%1", 11)));
        let t = team(vec![w1]);
        let p = |worker: Option<&str>, owner: String| TeamProc {
            id: ProcId {
                pid: 5,
                start_time: 6,
            },
            owner,
            worker: worker.map(str::to_string),
            team: Some("t".into()),
            state_dir: None,
            workspace: None,
            incarnation: None,
        };
        let o = t.owner_id.to_string();
        let l = present(&t);
        assert_eq!(
            classify_process(&p(Some("worker-1"), o.clone()), Some(&l)).verdict,
            Verdict::Owned
        );
        assert_eq!(
            classify_process(&p(None, o.clone()), Some(&l)).verdict,
            Verdict::Owned
        );
        assert_eq!(
            classify_process(&p(Some("worker-2"), o.clone()), Some(&l)).reason,
            NOT_MEMBER
        );
        assert_eq!(
            classify_process(&p(Some("worker-1"), "x".into()), Some(&l)).reason,
            OWNER_MISMATCH
        );
        assert_eq!(
            classify_process(&p(None, o.clone()), Some(&Lookup::Gone("g".into()))).reason,
            TEAM_STATE_GONE
        );
        assert_eq!(
            classify_process(&p(None, o.clone()), None).verdict,
            Verdict::Unverifiable
        );
        assert_eq!(
            classify_process(&p(None, o), Some(&Lookup::Busy("b".into()))).verdict,
            Verdict::Busy
        );
    }
}
