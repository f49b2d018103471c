//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = concat!(
    "Verdicts: owned, orphan (team_state_gone, owner_mismatch, not_member, abandoned_op,\n",
    "team_stopped), debt, busy, unverifiable. Only orphans are killed, each with proof and an\n",
    "audit record; debt is left for `team-scale reconcile`; untagged panes are never touched.\n",
    "\n",
    "Examples:\n",
    "  team-reap                                  # scan every server, kill the orphans\n",
    "  team-reap scan --json                      # list candidates and verdicts\n",
    "  team-reap scan --json | team-reap kill --from -\n",
    "  team-reap --check                          # exit 1 if anything is reapable\n",
    "  */10 * * * * team-reap -q                  # crontab: silent when there is nothing to do\n",
    "\n",
    "Exit status of team-reap: 0 nothing reapable remains; 1 --check found work; 3 something\n",
    "reapable is left (debt, a failed kill); 75 another reaper runs.\n",
    "\n"
);

#[derive(Debug, Parser)]
#[command(
    name = "team-reap",
    version,
    about = "Find and kill tmux panes and processes of teams that are provably ours and provably abandoned",
    after_help = format!("{AFTER_HELP}{}", team_core::ExitClass::TABLE)
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub cmd: Option<Command>,
}

/// Options every mode takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Also scan the server on this socket (repeatable); the user's socket directory
    /// ($TMUX_TMPDIR or /tmp, then tmux-<uid>/) is always scanned.
    #[arg(long = "socket", global = true, value_name = "PATH")]
    pub sockets: Vec<PathBuf>,
    /// Say what would be done; change nothing.
    #[arg(long, global = true)]
    pub dry_run: bool,
    /// Change nothing; exit 1 if anything is reapable, 0 if not.
    #[arg(long, global = true)]
    pub check: bool,
    /// JSON lines on stdout (one per pane, session, process; then a summary).
    #[arg(long, global = true)]
    pub json: bool,
    /// No human lines and no warnings (errors still go to stderr).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Also show owned and untagged panes and owned processes.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// The state root of every team (relative: inside each team's workspace). Teams made
    /// with --state-dir are found only when the reaper is given the same.
    #[arg(long, global = true, env = "TEAM_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Audit log for kills of panes whose team state is gone (default: the workspace's
    /// .team/audit.jsonl while the workspace exists; otherwise such panes are not killed).
    #[arg(long, global = true, env = "TEAM_AUDIT_LOG", value_name = "PATH")]
    pub audit_log: Option<PathBuf>,
    /// How long an orphan process gets between SIGTERM and SIGKILL.
    #[arg(long, global = true, default_value = "5s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub grace: std::time::Duration,
    /// Act only on teams whose state root lies under DIR (panes and processes); others are
    /// still listed.
    #[arg(long, global = true, value_name = "DIR")]
    pub only_under: Option<PathBuf>,
    /// Do not scan /proc for residue processes.
    #[arg(long, global = true)]
    pub no_processes: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List candidates and verdicts only.
    Scan,
    /// Kill the candidates named in FILE (or stdin: `-`), the JSON lines `scan --json` prints.
    /// Nothing in them is trusted: each is re-classified from a fresh snapshot.
    Kill(KillArgs),
    /// Print shell completions or the man page (for packagers: `cargo xtask dist`).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The candidate lines: a file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub from: String,
}

/// What `generate` prints.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// `man`, or a shell: bash, zsh, fish, elvish, powershell.
    #[arg(value_parser = ["man", "bash", "zsh", "fish", "elvish", "powershell"])]
    pub what: String,
}
