//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = concat!(
    "Verdicts: owned, orphan (team_state_gone, owner_mismatch, not_member, abandoned_op,\n",
    "team_stopped), debt, busy, unverifiable. Orphans are killed, each with proof and an\n",
    "audit record; debt (a removed or abandoned worker) is settled as `team-scale reconcile`\n",
    "settles it, what it cannot settle is left; untagged panes are never touched.\n",
    "\n",
    "Examples:\n",
    "  team-reap run                              # scan every server, kill the orphans\n",
    "  team-reap scan --json                      # list candidates and verdicts\n",
    "  team-reap scan --json | team-reap kill --from -\n",
    "  team-reap --check                          # exit 1 if anything is reapable\n",
    "  */10 * * * * /usr/local/bin/team-reap run -q   # crontab: silent when nothing is to do\n",
    "\n",
    "-v also repeats warnings given once before (a dead socket is reported once per file).\n",
    "\n",
    "With no subcommand but some option (team-reap -q, team-reap --dry-run), team-reap runs\n",
    "as `run`; with no arguments at all it prints its usage and exits 64.\n",
    "\n",
    "Exit status of team-reap: 0 nothing reapable remains; 1 --check found work; 3 something\n",
    "reapable is left (debt, a failed kill); 69 tmux is missing, or no server answers on any\n",
    "socket found (even with -q); 75 another reaper runs (its holder is named on stderr).\n",
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
    /// Also show owned and untagged panes and owned processes.
    #[arg(long, global = true)]
    pub all: bool,
    #[command(flatten)]
    pub common: team_cli::CommonFlags,
    /// The reaper's lock file (default: /tmp/tmux-<uid>/team-reap.lock, whatever the
    /// environment). For tests that run reapers side by side.
    #[arg(long, global = true, hide = true, value_name = "PATH")]
    pub lock_file: Option<PathBuf>,
    /// The state root of every team (relative: inside each team's workspace). Teams made
    /// with --state-dir are found only when the reaper is given the same.
    #[arg(long, global = true, env = "TEAM_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Audit log for kills of panes whose team state is gone (default: the workspace's
    /// .team/audit.jsonl while the workspace exists; otherwise such panes are not killed).
    #[arg(
        long,
        alias = "log",
        global = true,
        env = "TEAM_AUDIT_LOG",
        value_name = "PATH"
    )]
    pub audit_log: Option<PathBuf>,
    /// Rotate audit logs into numbered segments when an append would take one past SIZE
    /// (bytes, or with K/M/G; 0 never rotates) [default: 256MiB], as team-audit does.
    #[arg(long, global = true, env = "TEAM_AUDIT_MAX_SIZE", value_name = "SIZE", value_parser = team_cli::size::parse_size)]
    pub audit_max_size: Option<u64>,
    /// How long an orphan process gets between SIGTERM and SIGKILL.
    #[arg(long, global = true, default_value = "5s", value_parser = humantime::parse_duration, value_name = "DUR")]
    pub grace: std::time::Duration,
    /// Act only on teams whose state root lies under DIR (panes and processes); others are
    /// still listed.
    #[arg(long, global = true, value_name = "DIR", value_parser = existing_dir)]
    pub only_under: Option<PathBuf>,
    /// Do not scan /proc for residue processes.
    #[arg(long, global = true)]
    pub no_processes: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scan every server, then kill the orphans (the default with options but no subcommand).
    Run,
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

pub use team_cli::generate::GenerateArgs;

/// The man pages' ENVIRONMENT, FILES and extra EXIT STATUS sections.
pub const MAN: team_cli::generate::ManInfo = team_cli::generate::ManInfo {
    environment: &[
        (
            "TMUX_TMPDIR",
            "where the user's tmux socket directory tmux-<uid>/ is scanned (default /tmp)",
        ),
        (
            "TEAM_STATE_DIR",
            "the state root of every team (as --state-dir)",
        ),
        ("TEAM_AUDIT_LOG", "the audit log (as --audit-log)"),
        (
            "TEAM_TMUX_NATIVE",
            "0 runs the tmux binary for every tmux call instead of speaking its protocol",
        ),
        (
            "TEAM_AUDIT_MAX_SIZE",
            "the size at which audit logs rotate (as --audit-max-size)",
        ),
        ("RUST_LOG", "log filter for stderr (overrides -v)"),
    ],
    files: &[
        (
            "/tmp/tmux-<uid>/team-reap.lock",
            "the per-user reaper lock (not moved by the environment)",
        ),
        (
            "/tmp/tmux-<uid>/team-reap.dead-sockets.json",
            "dead sockets already warned about",
        ),
        (
            "<workspace>/.team/audit.jsonl",
            "the audit log of each team",
        ),
    ],
    extra_status: &[],
};

/// `--only-under DIR`: an existing directory, made absolute and free of symlinks as the state
/// roots it is compared with are (a relative or misspelt DIR would match no team and make
/// the run act on nothing, silently).
fn existing_dir(s: &str) -> Result<PathBuf, String> {
    let p = std::path::Path::new(s);
    match p.canonicalize() {
        Ok(c) if c.is_dir() => Ok(c),
        Ok(_) => Err(format!("{s}: not a directory")),
        Err(e) => Err(format!("{s}: {e}")),
    }
}
