//! `team-cli`: the command-line contract the three binaries share, so it cannot drift.
//!
//! - [`parse`]: clap parsing with the exit-code contract (usage errors and no arguments at all:
//!   usage on stderr, exit 64; `--help`/`--version`: stdout, exit 0).
//! - [`error`]: the one error type of the binaries, its exit status and its printing
//!   (`<tool>: error: ...`, `hint: ...`, and with `--json` a `{"type":"error",...}` line).
//! - [`out`]: stdout is data only (human lines, or JSON lines with a `type`); a closed pipe
//!   ends the program quietly; warnings and progress go to stderr.
//! - [`generate`]: man pages (one per subcommand) and shell completions.
//! - [`env`]: what the binaries read from their environment that more than one of them needs
//!   (tmux binary, socket directory, the caller's tmux, fail points).
//! - [`size`]: sizes on the command line (`64M`).
//! - [`init_tracing`]: `-v`/`-vv`/`-q` and `RUST_LOG`, no colour unless stderr is a terminal.
//!
//! Unlike `team-core`, this crate prints and exits: that is its job.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The binaries share one CLI crate, `team-cli`, in `team-core/cli/`** (replacing three
//!   drifted copies of `error.rs`, `out.rs` and `generate.rs`): inside an existing folder, so the
//!   top level stays as the user set it, and separate from `team-core`, which must not print.

pub mod env;
pub mod error;
pub mod generate;
pub mod out;
pub mod size;

/// `eprint!` that never panics: a closed stderr (`2>&1 | head -1`) loses the text, never the
/// exit status. The binaries write to stderr only through it and [`say_line!`] (tidy).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprintln!` that never panics (see [`say!`]).
#[macro_export]
macro_rules! say_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;
use clap::error::ErrorKind;
use team_core::ExitClass;

pub use error::{CliError, CliResult};

static TOOL: OnceLock<&'static str> = OnceLock::new();
static JSON: OnceLock<bool> = OnceLock::new();
static QUIET: OnceLock<bool> = OnceLock::new();

/// The running binary's name (`team-scale`, ...), as given to [`parse`].
pub fn tool() -> &'static str {
    TOOL.get().copied().unwrap_or("team")
}

/// Whether this run was asked for JSON lines (`--json`).
pub fn json_mode() -> bool {
    JSON.get().copied().unwrap_or(false)
}

/// Whether this run was asked to be quiet (`-q`): no human lines, no warnings.
pub fn quiet_mode() -> bool {
    QUIET.get().copied().unwrap_or(false)
}

/// Parses the command line of `tool`, or exits with the contract's status:
/// no arguments at all: usage on stderr, 64; `--help`, `--version`: stdout, 0; any other
/// clap error: `<tool>: error: ...` on stderr (and an error line on stdout with `--json`), 64.
pub fn parse<C: Parser>(tool: &'static str) -> C {
    let _ = TOOL.set(tool);
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = args.iter().skip(1).any(|a| a == "--json");
    let _ = JSON.set(json);
    if args.len() <= 1 {
        let mut cmd = C::command();
        crate::say!("{}", cmd.render_usage());
        crate::say_line!("\n\nFor more information, try '--help'.");
        std::process::exit(ExitClass::Usage.code());
    }
    match C::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
                _ => ExitClass::Usage.code(),
            };
            if code == 0 {
                // stdout may be closed: nothing to tell anyone then.
                let _ = e.print();
            } else {
                let text = e.render().to_string();
                let text = text.strip_prefix("error: ").unwrap_or(&text);
                crate::say!("{tool}: error: {text}");
                if json {
                    let first = text.lines().next().unwrap_or("usage error");
                    out::error_line(code, first, Some("see --help"));
                }
            }
            std::process::exit(code)
        }
    }
}

/// Ends the program: `Ok(code)` exits with `code`; an error is reported through
/// [`error::report`] and exits with its class's status.
pub fn finish(r: CliResult<i32>) -> ExitCode {
    let code = match r {
        Ok(c) => c,
        Err(e) => error::report(e),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(70))
}

/// The flags every binary and every subcommand takes, each with one meaning everywhere.
/// Each binary flattens this into its options, so the table cannot drift.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonFlags {
    /// More log output on stderr (-v, -vv, -vvv); RUST_LOG overrides
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No human lines and no warnings (errors still go to stderr; --json lines still print)
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// JSON lines on stdout, each with a "type", ending with a "summary" (and an "error" line
    /// before it on failure)
    #[arg(long, global = true)]
    pub json: bool,
}

/// Sets up a run from its [`CommonFlags`]: tracing, quiet mode, and fail points.
pub fn init(c: &CommonFlags) {
    // Every process the tools start loses the caller's TEAM_* variables (team-core's runners
    // apply it; the library itself reads no environment).
    team_core::childenv::init(std::env::vars_os().map(|(k, _)| k));
    // tmux calls speak tmux's protocol directly, with the environment the tmux binary would
    // have inherited, unless TEAM_TMUX_NATIVE=0.
    if env::tmux_native() {
        team_core::tmux::wire::configure(std::env::vars_os());
    }
    init_tracing(c.verbose, c.quiet);
    env::configure_failpoints();
}

/// Sets up `tracing` on stderr: `RUST_LOG` wins; else `-q` shows errors only, none shows
/// warnings, `-v` info, `-vv` debug, `-vvv` trace. Colour only when stderr is a terminal.
/// Also records `quiet` for [`out::Out`] and [`error::warn`].
pub fn init_tracing(verbose: u8, quiet: bool) {
    let _ = QUIET.set(quiet);
    let default = match (quiet, verbose) {
        (true, 0) => "error",
        (_, 0) => "warn",
        (_, 1) => "info",
        (_, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .try_init();
}
