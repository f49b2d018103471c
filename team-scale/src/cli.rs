//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = concat!(
    "Examples:\n",
    "  team-scale init demo --private --max-workers 4 --worker-cmd codex   # agent profile detected\n",
    "  team-scale status demo --json\n",
    "  echo '[{\"subject\":\"write tests\",\"owner\":\"new:1\"}]' | team-scale up demo 2 --tasks -\n",
    "  team-scale policy demo --scaling off\n",
    "  team-scale down demo 2 --drain-timeout 10s\n",
    "  team-scale down demo --worker worker-3 --force\n",
    "  team-scale worker-status --state idle   # inside a worker pane\n",
    "  team-scale task list demo\n",
    "  echo '[{\"subject\":\"fix the build\",\"owner\":\"worker-1\"}]' | team-scale task add demo -\n",
    "  team-scale task assign demo 3 worker-2\n",
    "  team-scale send demo worker-1 'run the tests again'\n",
    "  team-scale reconcile demo\n",
    "  team-scale shutdown demo\n",
    "\n"
);

#[derive(Debug, Parser)]
#[command(
    name = "team-scale",
    version,
    about = "Create, grow, shrink and inspect a team of agents running in tmux panes",
    after_help = format!("{AFTER_HELP}{}", team_core::ExitClass::TABLE)
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub cmd: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The workspace (default: the nearest directory, from the current one up to a
    /// file-system boundary or $HOME, that holds a .team; else the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Where team state lives (default: $TEAM_STATE_DIR for the team $TEAM_NAME names, with
    /// no --workspace; else <workspace>/.team).
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long to wait for a busy lock before giving up with exit 75.
    #[arg(long, global = true, default_value = "30s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub wait: std::time::Duration,
    /// The audit log (default: <state dir>/audit.jsonl).
    #[arg(long, global = true, env = "TEAM_AUDIT_LOG", value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Rotate the audit log into numbered segments when an append would take it past SIZE
    /// (bytes, or with K/M/G; 0 never rotates) [default: 256MiB], as team-audit does.
    #[arg(long, global = true, env = "TEAM_AUDIT_MAX_SIZE", value_name = "SIZE", value_parser = team_cli::size::parse_size)]
    pub audit_max_size: Option<u64>,
    #[command(flatten)]
    pub common: team_cli::CommonFlags,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a team: adopt the caller's tmux pane as leader, or start a private server.
    Init(InitArgs),
    /// Show a team's workers with live proof, pending operations, cleanup debt and lock holder.
    Status(StatusArgs),
    /// List the teams of the workspace.
    List,
    /// Add N workers to a live team: all or nothing, rolled back on any failure.
    Up(UpArgs),
    /// Remove workers: idle ones (highest index first) or named ones, draining them first.
    Down(DownArgs),
    /// Report a worker's state (idle, busy, done); reads TEAM_NAME/TEAM_WORKER/TEAM_INCARNATION.
    WorkerStatus(WorkerStatusArgs),
    /// The task board: list, show, add, assign (the leader); claim, done, fail (a worker).
    Task(TaskArgs),
    /// Type a message to one worker's agent, with proof (refused for a pane not proven ours).
    Send(SendArgs),
    /// Type a message to every active worker's agent, with proof.
    Broadcast(BroadcastArgs),
    /// Show a worker's last screen lines (from a pane proven ours only).
    Peek(PeekArgs),
    /// Attach to the team's session on its server (prints the command when not on a terminal).
    Attach(TeamArg),
    /// Drop a removing worker whose pane is no longer ours (respawned by hand), leaving the
    /// pane alone.
    Forget(ForgetArgs),
    /// Finish what crashed operations left: journal, drains, pending reservations, removing workers.
    Reconcile(ReconcileArgs),
    /// Remove every worker, then the leader pane and session if the tools created them.
    Shutdown(ShutdownArgs),
    /// Change a team's policy (switch scaling on or off).
    Policy(PolicyArgs),
    /// Print shell completions or the man page (for packagers: `cargo xtask dist`).
    #[command(hide = true)]
    Generate(GenerateArgs),
    /// The first process of every worker pane (started by `up`; not for people).
    #[command(hide = true)]
    Supervise(SuperviseArgs),
    /// Deletes what teardowns moved to a team's trash (started after `down`, `shutdown`,
    /// `reconcile` and `up`; not for people).
    #[command(hide = true)]
    EmptyTrash(EmptyTrashArgs),
}

impl Command {
    /// Which of a pane's inherited variables the command takes (`crate::ctx`).
    pub fn scope(&self) -> crate::ctx::Scope {
        use crate::ctx::Scope;
        match self {
            Command::Init(_) => Scope::Init,
            Command::WorkerStatus(_) => Scope::Worker,
            Command::Task(a)
                if matches!(
                    a.cmd,
                    TaskCmd::Claim(_) | TaskCmd::Done(_) | TaskCmd::Fail(_)
                ) =>
            {
                Scope::Worker
            }
            _ => Scope::Other,
        }
    }

    /// The team the command names (`None`: `list`, and the hidden commands).
    pub fn team(&self) -> Option<&str> {
        Some(match self {
            Command::Init(a) => &a.team,
            Command::Status(a) => &a.team,
            Command::Up(a) => &a.team,
            Command::Down(a) => &a.team,
            Command::WorkerStatus(a) => return a.who.team.as_deref(),
            Command::Task(a) => match &a.cmd {
                TaskCmd::Claim(t) | TaskCmd::Done(t) | TaskCmd::Fail(t) => {
                    return t.who.team.as_deref();
                }
                TaskCmd::List(t) => &t.team,
                TaskCmd::Show(t) => &t.team,
                TaskCmd::Add(t) => &t.team,
                TaskCmd::Assign(t) => &t.team,
            },
            Command::Send(a) => &a.team,
            Command::Broadcast(a) => &a.team,
            Command::Peek(a) => &a.team,
            Command::Attach(a) => &a.team,
            Command::Forget(a) => &a.team,
            Command::Reconcile(a) => &a.team,
            Command::Shutdown(a) => &a.team,
            Command::Policy(a) => &a.team,
            Command::List
            | Command::Generate(_)
            | Command::Supervise(_)
            | Command::EmptyTrash(_) => return None,
        })
    }
}

#[derive(Debug, Args)]
pub struct EmptyTrashArgs {
    /// The team's state root.
    #[arg(long)]
    pub root: std::path::PathBuf,
    /// The team name.
    pub team: String,
    /// Wait until standard input closes (the command that started it has ended), then empty.
    #[arg(long)]
    pub after_stdin_closes: bool,
}

/// `team-scale supervise ...` alone (see `main`): the subcommand word, then its arguments.
#[derive(Debug, Parser)]
#[command(
    name = "team-scale",
    override_usage = "team-scale supervise [--op <OP>] --team <TEAM> --worker <WORKER> --owner <OWNER> --incarnation <INCARNATION> --root <ROOT> --ws <WS> -- <COMMAND>..."
)]
pub struct SuperviseCli {
    #[arg(value_parser = clap::builder::PossibleValuesParser::new([team_core::supervisor::SUBCOMMAND]), hide = true)]
    pub subcommand: String,
    #[command(flatten)]
    pub args: SuperviseArgs,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The scale operation that started it.
    #[arg(long)]
    pub op: Option<String>,
    #[arg(long)]
    pub team: String,
    #[arg(long)]
    pub worker: String,
    #[arg(long)]
    pub owner: String,
    #[arg(long)]
    pub incarnation: String,
    /// The team's state root.
    #[arg(long)]
    pub root: std::path::PathBuf,
    /// The team's workspace.
    #[arg(long)]
    pub ws: std::path::PathBuf,
    /// The worker's command.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// The team name.
    pub team: String,
    /// How many workers to remove (default 1); not with --worker.
    pub count: Option<usize>,
    /// Remove this worker (repeatable).
    #[arg(long = "worker", value_name = "NAME")]
    pub workers: Vec<String>,
    /// Take busy workers too, and do not wait for them to drain.
    #[arg(long)]
    pub force: bool,
    /// How long to wait for busy workers to report idle.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub drain_timeout: std::time::Duration,
    /// How long processes get between SIGTERM and SIGKILL.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub grace: std::time::Duration,
    /// With `policy --reassign auto`: how long to wait for an idle worker's agent to take the
    /// notice of a returned task.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The team name.
    pub team: String,
    /// Accepted for symmetry with down: shutdown never waits for workers to drain.
    #[arg(long)]
    pub force: bool,
    /// How long processes get between SIGTERM and SIGKILL.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub grace: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The team name.
    pub team: String,
    /// How long processes get between SIGTERM and SIGKILL.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub grace: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct WorkerStatusArgs {
    #[command(flatten)]
    pub who: WorkerArgs,
    /// idle, busy or done.
    #[arg(long, value_parser = ["idle", "busy", "done"])]
    pub state: String,
    /// A short note shown by status.
    #[arg(long)]
    pub note: Option<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The team name ([a-z0-9][a-z0-9_-]{0,39}).
    pub team: String,
    /// Start a detached session on a private socket derived from the workspace path
    /// (always so outside tmux).
    #[arg(long)]
    pub private: bool,
    /// The most workers the team may have (1 to 1024).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_workers: u32,
    /// The command each worker runs (shell text, run by `sh`). Its program must be on PATH.
    #[arg(long, default_value = "exec \"${SHELL:-/bin/sh}\"")]
    pub worker_cmd: String,
    /// The agent profile of the workers: codex, claude, gemini, aider, shell, custom, or one
    /// defined in <state dir>/agents.toml (default: detected from --worker-cmd's program).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// The leader pane's command, for a private session (default: $SHELL).
    #[arg(long)]
    pub leader_cmd: Option<String>,
    /// Git worktrees for workers: off, detached, or branch:<prefix>.
    #[arg(long, default_value = "off")]
    pub worktree: String,
    /// Text that must also show in a new worker's pane before it counts as ready.
    #[arg(long)]
    pub ready_pattern: Option<String>,
    /// The first prompt of a new worker ({inbox} and {worker} are replaced): a launch argument,
    /// printed before a shell starts, or typed with proof, as its agent profile says.
    #[arg(long)]
    pub trigger: Option<String>,
    /// A pane no command may ever kill or type into (a HUD); repeatable.
    #[arg(long, value_name = "PANE")]
    pub protect: Vec<String>,
    /// Create the team with scaling switched off.
    #[arg(long)]
    pub no_scaling: bool,
    /// Size of a private session, WIDTHxHEIGHT.
    #[arg(long, default_value = "200x50")]
    pub size: String,
    /// Make the current directory a workspace of its own even though a directory above it
    /// already is one (without it, init refuses there: every command run here would use the
    /// workspace above).
    #[arg(long)]
    pub here: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The team name.
    pub team: String,
    /// Redraw a compact live view on the terminal until Ctrl-C (one listing per refresh).
    #[arg(long)]
    pub watch: bool,
    /// How often --watch redraws.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub interval: std::time::Duration,
    /// human (default), or tmux: one short line for a tmux status bar (see the README).
    #[arg(long, value_parser = ["human", "tmux"], default_value = "human")]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The team name.
    pub team: String,
    /// The removing worker to let go of.
    #[arg(long, value_name = "NAME")]
    pub worker: String,
    /// Do not ask (needed when stdin is not a terminal).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct PeekArgs {
    /// The team name.
    pub team: String,
    /// The worker.
    pub worker: String,
    /// How many of the last lines to show.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub lines: u16,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// The team name.
    pub team: String,
    /// How many workers to add (0 with --tasks: only add tasks for existing members).
    #[arg(default_value_t = 1)]
    pub n: u32,
    /// The role of the new workers ([a-z0-9][a-z0-9_-]{0,39}).
    #[arg(long)]
    pub role: Option<String>,
    /// Tasks to create, as a JSON array of {subject, description?, owner?, role?, blocked_by?}
    /// (a FILE, or - for stdin). `owner` names a member or `new:<k>` (the k-th new worker);
    /// `blocked_by` lists task ids or `new:<k>` (the k-th task of this input).
    #[arg(long, value_name = "FILE|-")]
    pub tasks: Option<PathBuf>,
    /// How long to wait for the new workers to be ready for their first prompt (0 skips
    /// readiness and delivery).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The team name.
    pub team: String,
    /// Allow (on) or forbid (off) `up` and `down`.
    #[arg(long, value_parser = ["on", "off"])]
    pub scaling: Option<String>,
    /// What removing a worker does with its detached processes that only it uses: kill them
    /// (default) or leave them running and report them. Shared ones (listening on a socket)
    /// are always reported, never killed.
    #[arg(long, value_parser = ["kill", "report"])]
    pub residue: Option<String>,
    /// What happens to tasks `down` returns: offered to idle workers (auto) or left for the
    /// leader to assign (manual, the default).
    #[arg(long, value_parser = ["auto", "manual"])]
    pub reassign: Option<String>,
    /// The most workers the team may have (1 to 1024, as at `init`; refused below its current
    /// member count).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_workers: Option<u32>,
}

pub use team_cli::generate::GenerateArgs;

/// The man pages' ENVIRONMENT, FILES and extra EXIT STATUS sections.
pub const MAN: team_cli::generate::ManInfo = team_cli::generate::ManInfo {
    environment: &[
        (
            "TEAM_STATE_DIR",
            "where team state lives (as --state-dir); set in every pane of a team, with TEAM_NAME, and then only for that team: a command for another team (init of a new one from a worker's pane) finds its workspace from the current directory",
        ),
        ("TEAM_AUDIT_LOG", "the audit log (as --audit-log)"),
        (
            "TEAM_SCALING",
            "0, off, false or no: refuse up and down (the operator's kill switch)",
        ),
        (
            "TEAM_NAME, TEAM_WORKER, TEAM_INCARNATION",
            "who reports, for worker-status and task (set in every worker pane)",
        ),
        (
            "TMUX, TMUX_PANE",
            "the caller's tmux pane, adopted as leader by init",
        ),
        (
            "TMUX_TMPDIR",
            "the directory of the user's tmux socket directory (default /tmp)",
        ),
        (
            "TEAM_TMUX_CONFIG",
            "the -f file of servers the tools start (default: tmux's own)",
        ),
        ("SHELL", "the default leader and worker command"),
        (
            "HOME",
            "the search for the workspace's .team stops there (and at a file-system boundary)",
        ),
        (
            "TEAM_TMUX_NATIVE",
            "0 runs the tmux binary for every tmux call instead of speaking its protocol",
        ),
        (
            "TEAM_READERS_YIELD",
            "0, off, false or no: status, list, task list/show and peek keep the normal CPU priority when their output goes to a program (by default they run in SCHED_IDLE)",
        ),
        (
            "TEAM_AUDIT_MAX_SIZE",
            "the size at which the audit log rotates (as --audit-max-size)",
        ),
        ("RUST_LOG", "log filter for stderr (overrides -v)"),
    ],
    files: &[
        (
            "<workspace>/.team/teams/<team>/team.json",
            "the one canonical record of a team",
        ),
        (
            "<workspace>/.team/teams/<team>/trash/",
            "removed workers' files, deleted by a background empty-trash after the command that moved them",
        ),
        ("<workspace>/.team/locks/", "lock files (never deleted)"),
        (
            "<workspace>/.team/audit.jsonl",
            "the hash-chained audit log",
        ),
        (
            "$TMUX_TMPDIR/tmux-<uid>/team-<hash>",
            "the private tmux socket of a workspace",
        ),
    ],
    extra_status: &[(
        "130",
        "up, down, shutdown or reconcile was interrupted (SIGINT, SIGTERM): the uncommitted step was rolled back, a committed one finished; a second signal exits at once",
    )],
};

/// Who reports: a worker, named by flags or by the environment of its pane.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The team name (default: $TEAM_NAME).
    #[arg(env = "TEAM_NAME")]
    pub team: Option<String>,
    /// The worker (default: $TEAM_WORKER).
    #[arg(long, env = "TEAM_WORKER")]
    pub worker: Option<String>,
    /// The worker's incarnation (default: $TEAM_INCARNATION); must match the current one.
    #[arg(long, env = "TEAM_INCARNATION")]
    pub incarnation: Option<String>,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(subcommand)]
    pub cmd: TaskCmd,
}

/// The task board: a worker's claim/done/fail, the leader's list/show/add/assign.
#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// As a worker: claim a pending task (to in_progress).
    Claim(WorkerTaskArgs),
    /// As a worker: mark your task done (to completed).
    Done(WorkerTaskArgs),
    /// As a worker: mark your task failed.
    Fail(WorkerTaskArgs),
    /// List a team's tasks: id, subject, status, owner, blocked_by, updated.
    List(TeamArg),
    /// Show one task whole.
    Show(TaskShowArgs),
    /// Add tasks (the JSON of `up --tasks`, from a FILE or - for stdin); an owner must be a
    /// member, and is told through proven delivery.
    Add(TaskAddArgs),
    /// Give a task to a member (pending, or returned by a removed worker); the member is told.
    Assign(TaskAssignArgs),
}

#[derive(Debug, Args)]
pub struct WorkerTaskArgs {
    /// The task id.
    pub id: u64,
    #[command(flatten)]
    pub who: WorkerArgs,
}

#[derive(Debug, Args)]
pub struct TeamArg {
    /// The team name.
    pub team: String,
}

#[derive(Debug, Args)]
pub struct TaskShowArgs {
    /// The team name.
    pub team: String,
    /// The task id.
    pub id: u64,
}

#[derive(Debug, Args)]
pub struct TaskAddArgs {
    /// The team name.
    pub team: String,
    /// A JSON array of {subject, description?, owner?, role?, blocked_by?} (a FILE, or -).
    #[arg(value_name = "FILE|-")]
    pub file: PathBuf,
    /// How long to wait for an owner's agent to be ready for the notice (0: do not tell).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct TaskAssignArgs {
    /// The team name.
    pub team: String,
    /// The task id.
    pub id: u64,
    /// The member to give it to.
    pub worker: String,
    /// How long to wait for its agent to be ready for the notice (0: do not tell).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The team name.
    pub team: String,
    /// The worker.
    pub worker: String,
    /// The message (printable text, one line or several).
    pub text: String,
    /// How long to wait for the agent to be ready to take it.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
    /// Also type it while the agent works, as a message the agent queues (Codex, Claude Code,
    /// Gemini CLI, and profiles with `queue_cursor`); without it a working agent is waited for.
    #[arg(long)]
    pub queue: bool,
}

#[derive(Debug, Args)]
pub struct BroadcastArgs {
    /// The team name.
    pub team: String,
    /// The message.
    pub text: String,
    /// How long to wait for the agents to be ready to take it.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub ready_timeout: std::time::Duration,
    /// Also type it into agents that work, as a message they queue (see `send --queue`).
    #[arg(long)]
    pub queue: bool,
}
