//! Command-line definition.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use team_core::ExitClass;

use crate::cmd;

/// Durable, hash-chained audit log of destructive tmux actions.
#[derive(Debug, Parser)]
#[command(name = "team-audit", version, after_help = after_help())]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub cmd: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The audit log [default: <state-dir>/audit.jsonl, else <workspace>/.team/audit.jsonl]
    #[arg(
        long = "audit-log",
        alias = "log",
        global = true,
        env = "TEAM_AUDIT_LOG",
        value_name = "PATH"
    )]
    pub log: Option<PathBuf>,
    /// The team state directory (the log is <state-dir>/audit.jsonl)
    #[arg(long, global = true, env = "TEAM_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The workspace [default: the current directory; for `hook`, the payload's cwd].
    /// `record` also writes it into the record
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub common: team_cli::CommonFlags,
    /// Writers (record, pass, hook) rotate the log into numbered segments (<log>.000001, ...)
    /// when an append would take it past SIZE: bytes, or with K/M/G (KiB/MiB/GiB); 0 never
    /// rotates [default: 256MiB]
    #[arg(long, global = true, alias = "audit-max-size", env = "TEAM_AUDIT_MAX_SIZE", value_name = "SIZE", value_parser = team_cli::size::parse_size)]
    pub max_size: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Append one record; prints its audit_id once it is durable
    Record(cmd::record::RecordArgs),
    /// Pipeline filter: record each JSON line of stdin as an intent, then forward it unchanged
    Pass(cmd::pass::PassArgs),
    /// Walk the hash chain; exit 1 at the first broken, missing or reordered record
    Verify(cmd::verify::VerifyArgs),
    /// Show records filtered by time, team, action, target, caller, stage
    Query(cmd::query::QueryArgs),
    /// Remove old segments (--keep N or --before T) after recording a checkpoint of them
    Prune(cmd::prune::PruneArgs),
    /// Agent hook (PreToolUse/PostToolUse): record destructive tmux commands; with --guard,
    /// allow only read-only tmux and proven `tmux -S <team socket> kill-pane -t %N`
    Hook(cmd::hook::HookArgs),
    /// Print shell completions or the man page (for packagers: `cargo xtask dist`).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

fn after_help() -> String {
    format!(
        "\
Examples:
  team-audit record --caller me --action kill-pane --target %3 -- tmux kill-pane -t %3 \\
      && tmux kill-pane -t %3
  team-reap scan --json | team-audit pass | team-reap kill --from -
  team-audit verify || echo \"audit log damaged\"
  team-audit query --since 1h --action kill-pane --json
  team-audit query --last 100
  team-audit prune --keep 10
  hook (settings.json, PreToolUse and PostToolUse, matcher Bash): team-audit hook --guard

Log path: --audit-log, else $TEAM_AUDIT_LOG, else <--state-dir|$TEAM_STATE_DIR>/audit.jsonl,
else <workspace>/.team/audit.jsonl.

{}
  2   (hook only) the tool call is denied; the reason is on stderr and in the JSON
      decision on stdout",
        ExitClass::TABLE
    )
}

pub use team_cli::generate::GenerateArgs;
impl Global {
    /// The size at which writers rotate the log (`--max-size` / `TEAM_AUDIT_MAX_SIZE`).
    pub fn max_size(&self) -> u64 {
        self.max_size.unwrap_or(team_core::audit::DEFAULT_MAX_SIZE)
    }
}

/// The man pages' ENVIRONMENT, FILES and extra EXIT STATUS sections.
pub const MAN: team_cli::generate::ManInfo = team_cli::generate::ManInfo {
    environment: &[
        ("TEAM_AUDIT_LOG", "the audit log (as --audit-log)"),
        (
            "TEAM_STATE_DIR",
            "the team state directory; the log is <state-dir>/audit.jsonl",
        ),
        ("TMUX", "the caller's tmux server, for the hook's guard"),
        (
            "TMUX_TMPDIR",
            "the directory of the user's tmux socket directory (default /tmp)",
        ),
        (
            "TEAM_TMUX_NATIVE",
            "0 runs the tmux binary for every tmux call instead of speaking its protocol",
        ),
        ("RUST_LOG", "log filter for stderr (overrides -v)"),
    ],
    files: &[(
        "<workspace>/.team/audit.jsonl",
        "the hash-chained audit log (default location)",
    )],
    extra_status: &[(
        "2",
        "(hook only) the tool call is denied; the reason is on stderr",
    )],
};
