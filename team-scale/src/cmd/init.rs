//! `team-scale init`: create a team on a private server, or adopt the caller's pane.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`init` on an existing team** refuses (exit 1) unless the team is `stopped`; then it
//!   re-creates the team with a new owner id (so old panes become `owner_mismatch` orphans).
//!
//! - **`init` lays out the team's directories** (issue 15): `workers/`, `runtime/` and
//!   `trash/`, each made durably, before the team is stored. The first `up` and the first
//!   teardown made them before: a new directory is an inode allocation and a sync of its
//!   parent, a one-time cost that belongs to the command that makes the team. Teams made
//!   before still get them made where they are first needed.
//!
//! - **`init` takes up only what it made** (thirtieth round). A team directory with no
//!   `team.json` may hold only what an `init` lays out or leaves when interrupted
//!   (`Store::check_adoptable`); anything else (a `trash/` of the user's files under a
//!   `--state-dir` it did not make, which the first teardown emptied) stops it, exit 65, as
//!   state it cannot trust, before any effect: checked before the state root is made, and
//!   again under the scale lock. 65, not 73: nothing stops the write, what is there is
//!   state the tools did not make.

use serde_json::json;
use team_core::model::{
    Leader, PaneIncarnation, SCHEMA_VERSION, SessionRecord, Settings, Team, TeamState, WorktreeMode,
};
use team_core::paths::{TeamName, private_endpoint};
use team_core::tmux::txn::NewPane;
use team_core::tmux::{Guard, Listing, Txn, TxnOutcome};
use team_core::{Error, fsutil};
use uuid::Uuid;

use crate::cli::InitArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

/// Parses `--worktree`.
pub fn parse_worktree(s: &str) -> Result<WorktreeMode, Error> {
    match s {
        "off" => Ok(WorktreeMode::Off),
        "detached" => Ok(WorktreeMode::Detached),
        _ => match s.strip_prefix("branch:") {
            // Each component as git's `check-ref-format` takes it: `<prefix>/worker-<n>` must
            // be a branch name git accepts, or every `up` would fail.
            Some(p)
                if !p.is_empty()
                    && !p.contains("..")
                    && p.split('/').all(|c| {
                        !c.is_empty()
                            && !c.starts_with(['.', '-'])
                            && !c.ends_with('.')
                            && !c.ends_with(".lock")
                    })
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"/_-.".contains(&b)) =>
            {
                Ok(WorktreeMode::Branch(p.to_string()))
            }
            _ => Err(Error::Usage(format!(
                "--worktree {s:?}: expected off, detached or branch:<prefix>, the prefix made of \
                 [A-Za-z0-9/_.-] as a git branch name allows (no empty component, none starting \
                 with `.` or `-` or ending with `.` or `.lock`, no `..`)"
            ))),
        },
    }
}

fn parse_size(s: &str) -> Result<(u16, u16), Error> {
    let bad = || {
        Error::Usage(format!(
            "--size {s:?}: expected WIDTHxHEIGHT, WIDTH 10 to 1000 and HEIGHT 5 to 1000, e.g. 200x50"
        ))
    };
    let (w, h) = s.split_once('x').ok_or_else(bad)?;
    let (w, h) = (
        w.parse::<u16>().map_err(|_| bad())?,
        h.parse::<u16>().map_err(|_| bad())?,
    );
    if !(10..=1000).contains(&w) || !(5..=1000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

pub fn run(ctx: &Ctx, a: InitArgs) -> CliResult<i32> {
    if let Some(above) = &ctx.found_above
        && !a.here
    {
        let cwd = std::env::current_dir().unwrap_or_default();
        return Err(crate::error::CliError::fail(
            team_core::ExitClass::Refused,
            format!(
                "{} is inside the workspace {} (it has a .team); a team made here would live there, not in this directory",
                cwd.display(),
                above.display()
            ),
        )
        .with_hint(format!(
            "to add a team to that workspace, run init there (or keep going: every command here uses it); to make {} a workspace of its own, pass --here",
            cwd.display()
        )));
    }
    // Validate everything before any effect.
    let team = TeamName::new(&a.team)?;
    let worktree = parse_worktree(&a.worktree)?;
    let size = parse_size(&a.size)?;
    if a.worker_cmd.trim().is_empty() {
        return Err(Error::Usage("--worker-cmd is empty".into()).into());
    }
    if let Some(t) = &a.trigger {
        team_core::tmux::quote::check_literal_text(t)
            .map_err(|m| Error::Usage(format!("--trigger: {m}")))?;
    }
    for p in &a.protect {
        if !team_core::model::is_tmux_id(p, '%') {
            return Err(
                Error::Usage(format!("--protect {p:?}: expected a pane id like %3")).into(),
            );
        }
    }
    let agent = check_agent(ctx, &a)?;
    let private = a.private || ctx.tmux_env.is_none();
    let settings = Settings {
        max_workers: a.max_workers,
        worker_cmd: a.worker_cmd.clone(),
        worktree,
        ready_pattern: a.ready_pattern.clone(),
        trigger: a.trigger.clone(),
        scaling: !a.no_scaling,
        residue: Default::default(),
        reassign: Default::default(),
        agent: Some(agent.clone()),
    };
    let store = ctx.store(&team);
    // Before any effect (the state root included), and again under the lock.
    store.check_adoptable()?;
    ctx.root.ensure()?;
    let _scale = store.lock_scale("init")?;
    store.check_adoptable()?;
    if store.exists() {
        let old = store.load()?;
        if old.state != TeamState::Stopped {
            return Err(Error::Refused(format!(
                "team {team} already exists (owner {}, endpoint {}); `team-scale shutdown {team}` first to re-create it",
                old.owner_id,
                old.endpoint.display()
            ))
            .into());
        }
    }
    let owner = Uuid::new_v4();
    let ws = ctx.workspace.to_string_lossy().to_string();
    // The intent first, before any pane exists: an init that dies midway leaves this record
    // (and the scale lock, held until the state is stored, keeps the reaper off meanwhile).
    let init_record = ctx.root.init_record(&team);
    let root = ctx.root.path();
    let endpoint = private.then(|| private_endpoint(&ctx.tmux_tmpdir, &ctx.workspace));
    let interrupted = fsutil::state_read(root, &init_record, 4096).ok().flatten();
    // A session of the team's name already there stops this init before any effect (before
    // its record is written): an interrupted init's record is what names that init's leader
    // pane to the reaper, so it stays as it is.
    // A server that cannot be asked is not one without the session: stop, and keep the record.
    if let Some(ep) = &endpoint {
        let tmux = ctx.tmux(ep);
        let there = match tmux.list() {
            Listing::NoServer => false,
            Listing::Failed(e) => {
                return Err(Error::TmuxUnavailable {
                    endpoint: ep.clone(),
                    msg: format!("cannot tell whether a session {team} is there: {e}"),
                }
                .into());
            }
            Listing::Panes(snap) => snap.rows.iter().any(|r| r.session_name == team.as_str()),
        };
        if there {
            return Err(Error::Refused(match &interrupted {
                Some(_) => format!(
                    "an earlier init of team {team} was interrupted and its session is still on {}; `team-reap run` removes it when its record ({}) proves it that init's, else end it yourself (`tmux -S {} kill-session -t ={team}`), then init again",
                    ep.display(),
                    init_record.display(),
                    ep.display()
                ),
                None => format!("a session named {team} already exists on {}", ep.display()),
            })
            .into());
        }
    }
    if let Some(old) = &interrupted {
        tracing::warn!(record = %String::from_utf8_lossy(old), "an earlier init of this team was interrupted");
        team_cli::say_line!(
            "team-scale: warning: an earlier init of team {team} was interrupted; it left no session"
        );
    }
    let team_dir = ctx.root.team_dir(&team);
    fsutil::state_create_dir(root, &team_dir)?;
    // The team's whole layout (see the module docs).
    for d in ["workers", "runtime", "trash"] {
        fsutil::state_create_dir(root, &team_dir.join(d))?;
    }
    let started_at = fsutil::now_rfc3339();
    let pid_start = team_core::process::start_time(std::process::id())
        .ok()
        .flatten();
    let record = |leader: Option<&PaneIncarnation>| {
        json!({"team": team, "owner_id": owner, "pid": std::process::id(), "pid_start": pid_start,
               "private": private, "endpoint": endpoint, "started_at": started_at,
               "leader": leader})
        .to_string()
    };
    fsutil::state_write(root, &init_record, record(None).as_bytes())?;
    let (endpoint, session, leader, protected) = if private {
        // The leader pane this init made, recorded as soon as it exists: if the init dies
        // before `team.json` is stored, this record is what names the pane to the reaper (its
        // tags prove nothing). A crash in between leaves a session to end by hand.
        let on_leader = |inc: &PaneIncarnation| {
            fsutil::state_write(root, &init_record, record(Some(inc)).as_bytes())
        };
        init_private(ctx, &team, owner, &ws, &a, size, &on_leader)?
    } else {
        adopt(ctx, &team, owner, &ws, &a)?
    };
    let t = Team {
        schema_version: SCHEMA_VERSION,
        name: team.clone(),
        owner_id: owner,
        generation: 1,
        created_at: fsutil::now_rfc3339(),
        workspace: ctx.workspace.clone(),
        state: TeamState::Active,
        endpoint: endpoint.clone(),
        private_server: private,
        session,
        leader,
        protected,
        settings,
        next_worker_index: 1,
        next_task_id: 1,
        workers: Vec::new(),
    };
    store.create(&t)?;
    fsutil::state_remove(ctx.root.path(), &init_record)?;
    store.append_event(
        &t,
        "initialized",
        json!({"owner_id": owner, "endpoint": endpoint, "private": private}),
    )?;
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "team", "team": team, "owner_id": owner, "endpoint": endpoint,
        "session": t.session.name, "session_id": t.session.id,
        "leader_pane_id": t.leader.pane.pane_id, "private": private, "agent": agent,
    }))?;
    out.record(&json!({"type": "summary", "team": team, "action": "init", "ok": true}))?;
    out.line(&format!(
        "team {team} created: session {} on {}, leader pane {}, agent profile {agent}",
        t.session.name,
        endpoint.display(),
        t.leader.pane.pane_id
    ))?;
    out.flush()?;
    Ok(0)
}

/// Picks the agent profile (`--agent`, else detected from the worker command) and checks that
/// the worker's program exists on PATH. Returns the profile's name.
fn check_agent(ctx: &Ctx, a: &InitArgs) -> CliResult<String> {
    let user = team_core::agent::profiles::load_user(ctx.root.path())?;
    let name = match &a.agent {
        Some(n) => n.clone(),
        None => team_core::agent::detect(&a.worker_cmd, &user),
    };
    let profile = team_core::agent::resolve(&name, &user)?;
    // The program as written (a path, or a name looked up on PATH from the workspace).
    if let Some(word) = team_core::agent::profiles::program_word(&a.worker_cmd)
        && which::which_in(&word, std::env::var_os("PATH"), &ctx.workspace).is_err()
    {
        return Err(Error::ProgramNotFound {
            program: word,
            cmd: a.worker_cmd.clone(),
        }
        .into());
    }
    Ok(profile.name)
}

type Placed = (
    std::path::PathBuf,
    SessionRecord,
    Leader,
    Vec<PaneIncarnation>,
);

fn init_private(
    ctx: &Ctx,
    team: &TeamName,
    owner: Uuid,
    ws: &str,
    a: &InitArgs,
    (w, h): (u16, u16),
    on_leader: &dyn Fn(&PaneIncarnation) -> team_core::Result<()>,
) -> CliResult<Placed> {
    let endpoint = private_endpoint(&ctx.tmux_tmpdir, &ctx.workspace);
    if let Some(dir) = endpoint.parent() {
        fsutil::create_private_dir(dir)?;
    }
    let tmux = ctx.tmux(&endpoint);
    let name = team.to_string();
    // A session of this name was looked for (and refused) before the record was written.
    let o = owner.to_string();
    let leader_cmd = a
        .leader_cmd
        .clone()
        .unwrap_or_else(|| format!("exec {}", team_core::tmux::quote::sh_quote(&ctx.shell)));
    let inc = tmux.new_session(&team_core::tmux::NewSession {
        name: name.clone(),
        width: w,
        height: h,
        pane: NewPane {
            command: leader_cmd,
            env: vec![
                ("TEAM_OWNER".into(), o.clone()),
                ("TEAM_NAME".into(), name.clone()),
                ("TEAM_ROLE".into(), "leader".into()),
                ("TEAM_WORKSPACE".into(), ws.to_string()),
                (
                    "TEAM_STATE_DIR".into(),
                    ctx.root.path().to_string_lossy().into_owned(),
                ),
            ],
            tags: vec![
                ("@team_owner".into(), o.clone()),
                ("@team_role".into(), "leader".into()),
                ("@team_workspace".into(), ws.to_string()),
                ("@team_name".into(), name.clone()),
            ],
            horizontal: false,
            ..Default::default()
        },
        // Never a pane tag's name at session scope: `#{@team_owner}` of a user's pane split
        // into this session would read the session's value.
        session_tags: vec![
            ("@team_session_owner".into(), o.clone()),
            ("@team_session_workspace".into(), ws.to_string()),
            ("@team_session_name".into(), name.clone()),
        ],
    })?;
    team_core::failpoint::hit("init.before_record")?;
    on_leader(&inc)?;
    team_core::failpoint::hit("init.session")?;
    let mut leader = inc;
    leader.process_start = team_core::process::start_time(leader.pane_pid)
        .ok()
        .flatten();
    let session = SessionRecord {
        id: leader.session_id.clone(),
        name,
        created_by_tools: true,
    };
    let protected = prove_protected(&tmux, &a.protect)?;
    Ok((
        endpoint,
        session,
        Leader {
            pane: leader,
            created_by_tools: true,
        },
        protected,
    ))
}

fn adopt(ctx: &Ctx, team: &TeamName, owner: Uuid, ws: &str, a: &InitArgs) -> CliResult<Placed> {
    let (endpoint, pane) = ctx
        .tmux_env
        .clone()
        .ok_or_else(|| Error::Usage("not inside tmux: use --private".into()))?;
    let tmux = ctx.tmux(&endpoint);
    let Listing::Panes(snap) = tmux.list() else {
        return Err(Error::TmuxUnavailable {
            endpoint,
            msg: "cannot list the caller's server".into(),
        }
        .into());
    };
    let row = snap.pane(&pane).ok_or_else(|| Error::TmuxUnavailable {
        endpoint: endpoint.clone(),
        msg: format!("the caller's pane {pane} ($TMUX_PANE) is not on this server"),
    })?;
    if row.tags.pane_tagged() {
        return Err(Error::Refused(format!(
            "pane {pane} already belongs to team {:?} (owner {})",
            row.tags.name, row.tags.owner
        ))
        .into());
    }
    let inc = PaneIncarnation {
        process_start: team_core::process::start_time(row.pane_pid).ok().flatten(),
        ..row.incarnation()
    };
    let o = owner.to_string();
    let txn = Txn::set_tags(
        Guard::pane(&inc, &[], false)?,
        &[
            ("@team_owner".into(), o),
            ("@team_role".into(), "leader".into()),
            ("@team_workspace".into(), ws.to_string()),
            ("@team_name".into(), team.to_string()),
        ],
    )?;
    match tmux.run_txns(&[txn])?.remove(0) {
        TxnOutcome::Done(_) => {}
        other => {
            return Err(Error::Refused(format!(
                "could not tag the leader pane {pane} with proof: {other:?}"
            ))
            .into());
        }
    }
    let session = SessionRecord {
        id: row.session_id.clone(),
        name: row.session_name.clone(),
        created_by_tools: false,
    };
    let protected = prove_protected(&tmux, &a.protect)?;
    Ok((
        endpoint,
        session,
        Leader {
            pane: inc,
            created_by_tools: false,
        },
        protected,
    ))
}

/// Records the incarnation of each `--protect` pane from one snapshot.
fn prove_protected(
    tmux: &team_core::tmux::Tmux,
    panes: &[String],
) -> CliResult<Vec<PaneIncarnation>> {
    if panes.is_empty() {
        return Ok(Vec::new());
    }
    let Listing::Panes(snap) = tmux.list() else {
        return Err(Error::TmuxUnavailable {
            endpoint: tmux.endpoint().to_path_buf(),
            msg: "cannot list panes to record --protect".into(),
        }
        .into());
    };
    let mut out = Vec::new();
    for p in panes {
        let r = snap.pane(p).ok_or_else(|| {
            Error::Usage(format!(
                "--protect {p}: no such pane on {}",
                tmux.endpoint().display()
            ))
        })?;
        out.push(PaneIncarnation {
            process_start: team_core::process::start_time(r.pane_pid).ok().flatten(),
            ..r.incarnation()
        });
    }
    Ok(out)
}
