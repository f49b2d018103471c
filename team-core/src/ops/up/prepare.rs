//! Step 5 of `up`: what each new worker needs on disk before its pane starts: its directory,
//! its inbox, its worktree, and the runtime (startup) script that starts its agent
//! ([`agent_command`]) with the first prompt ([`trigger_text`]).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The worker command runs by `eval`**: the script's last line is `eval '<worker cmd>'`
//!   (after `set -- <args>` when the prompt is a launch argument), where it was `exec sh -c
//!   '<worker cmd>'`: the same parse of the same text by the same shell, one process start
//!   fewer per worker, and a command that begins with `exec` replaces the script itself.
//! - **A new worker's inbox and script are created in place** (`O_CREAT|O_EXCL`, no temporary
//!   name, no rename): nothing reads them before its pane starts, a crash before that is undone
//!   from the reservation, and an entry planted between step 1's check and the write fails the
//!   `up` (rolled back) where a rename would have replaced it. Two renames and two random names
//!   fewer per worker. Later rewrites of an inbox (task changes) stay atomic replacements.
//! - **A pane starts with the digest of its script** (`supervisor::SCRIPT_DIGEST_VAR`, through
//!   `split-window -e`): a script replaced between this step and the pane's start (renamed
//!   over, written into, hard-linked) is refused by the supervisor, which runs a sealed copy
//!   of the checked bytes. About 90 more bytes per pane in the spawn message.

use super::{Plan, UpRequest};
use crate::agent::{self, Profile, PromptMode};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::model::{Task, Team};
use crate::ops::{Env, board, git, resources};
use crate::tmux::quote::sh_quote;

/// The first prompt of `p`: the team's trigger text, or the default one naming its inbox.
pub(super) fn trigger_text(team: &Team, p: &Plan) -> String {
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

/// The two directories step 5 writes in, opened once for every new worker: the team's
/// `workers/` and `runtime/` (made durably when missing).
pub(super) struct Dirs {
    workers: fsutil::StateDir,
    runtime: fsutil::StateDir,
}

/// Opens (or makes) the directories of [`Dirs`].
pub(super) fn open_dirs(env: &Env, team: &Team) -> Result<Dirs> {
    let root = env.store.root();
    let team_dir = root.team_dir(&team.name);
    let open = |d: &str| -> Result<fsutil::StateDir> {
        let path = team_dir.join(d);
        fsutil::state_dir(root.path(), &path, true)?
            .ok_or_else(|| Error::Internal(format!("{} was not created", path.display())))
    };
    Ok(Dirs {
        workers: open("workers")?,
        runtime: open("runtime")?,
    })
}

/// Creates a runtime file of the tools' own (inbox, startup script) with `mode` in `dir`: in
/// place, with the mode set at creation, never through a symlink nor over an entry already
/// there, and not fsynced: a runtime file of a reserved worker, read only once its pane starts
/// (`fsutil::StateDir::create_file`).
fn create_private(
    dir: &fsutil::StateDir,
    path: &std::path::Path,
    bytes: &[u8],
    mode: u32,
) -> Result<()> {
    dir.create_file(path, bytes, mode)
}

/// Step 5 for one worker: its directory, inbox, worktree and startup script; returns the
/// script's digest, which its pane is started with (`supervisor::SCRIPT_DIGEST_VAR`).
pub(super) fn prepare(
    env: &Env,
    dirs: &Dirs,
    team: &Team,
    req: &UpRequest,
    p: &Plan,
    tasks: &[Task],
    profile: &Profile,
) -> Result<String> {
    let root = env.store.root();
    let worker_dir = dirs
        .workers
        .create_dir(&p.worker_dir, fsutil::Sync::Never)?;
    create_private(
        &worker_dir,
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
            None => git(&team.workspace, &["worktree", "add", "--detach", &path])?,
            Some(b) => {
                // Made first, with the reflog entry that proves it the tools' own when it is
                // deleted (`resources::branch_made_message`).
                let made = resources::branch_made_message(
                    team.name.as_str(),
                    p.name.as_str(),
                    &p.incarnation,
                );
                resources::make_branch(&team.workspace, b, &made)?;
                git(&team.workspace, &["worktree", "add", &path, b])?
            }
        };
        if !out.ok {
            return Err(Error::Refused(format!(
                "git worktree add for {} failed: {}",
                p.name, out.stderr
            )));
        }
    }

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
        "#!/bin/sh\n# Startup script of {} in team {} (written by team-scale up).\n\
         # Read through descriptor {fd}, opened by the supervisor; the program does not get it.\n\
         exec {fd}<&-\n",
        p.name,
        team.name,
        fd = crate::supervisor::SCRIPT_FD
    );
    for (k, v) in vars {
        s.push_str(&format!("export {k}={}\n", sh_quote(&v)));
    }
    s.push_str(&format!(
        "cd {} || exit 1\n",
        sh_quote(&p.cwd.display().to_string())
    ));
    s.push_str(&agent_command(team, profile, &trigger_text(team, p)));
    create_private(&dirs.runtime, &p.script, s.as_bytes(), 0o700)?;
    Ok(crate::supervisor::script_digest(s.as_bytes()))
}

/// The first inbox of `p`: how to report and claim, and its tasks.
fn inbox_text(team: &Team, req: &UpRequest, p: &Plan, tasks: &[Task]) -> String {
    let mut s = format!(
        "# Inbox of {} (team {})\n\nRole: {}\nWorking directory: {}\nReport your state with `team-scale worker-status --state idle|busy|done`.\nClaim a task with `team-scale task claim <id>`; when it is finished, `team-scale task done <id>` (or `task fail <id>`).\n\n## Your tasks\n\n",
        p.name,
        team.name,
        req.role.as_ref().map_or("worker", |r| r.as_str()),
        p.cwd.display()
    );
    s.push_str(&board::tasks_section(&p.name, tasks));
    s
}

/// The agent profile of `team`: its recorded one, else detected from the worker command. User
/// profiles come from `<state root>/agents.toml`.
pub fn team_profile(env: &Env, team: &Team) -> Result<Profile> {
    let user = agent::profiles::load_user(env.store.root().path())?;
    let name = match &team.settings.agent {
        Some(n) => n.clone(),
        None => agent::detect(&team.settings.worker_cmd, &user),
    };
    agent::resolve(&name, &user)
}

/// The last lines of a runtime script: how the agent starts and how its first prompt reaches
/// it. The prompt is always one single-quoted word given to the program as an argument (or to
/// `printf` as data), never shell text, so no shell executes it. The worker command itself is
/// shell text, run by `eval` in the script's own shell (one process fewer than `sh -c`, and
/// the same parse): a command that starts with `exec` replaces the script.
fn agent_command(team: &Team, profile: &Profile, prompt: &str) -> String {
    let cmd = &team.settings.worker_cmd;
    match profile.mode() {
        PromptMode::Banner => format!(
            "printf '%s\\n\\n' {}\neval {}\n",
            sh_quote(prompt),
            sh_quote(cmd)
        ),
        PromptMode::LaunchArg => {
            let mut s = String::from("set --");
            for a in profile.launch_args(prompt) {
                s.push(' ');
                s.push_str(&sh_quote(&a));
            }
            s.push_str(&format!("\neval {}\n", sh_quote(&format!("{cmd} \"$@\""))));
            s
        }
        PromptMode::Typed => format!("eval {}\n", sh_quote(cmd)),
    }
}
