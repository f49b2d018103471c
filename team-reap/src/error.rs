//! The one place that turns errors into messages and exit statuses.

use team_core::Error;

/// An error of the CLI.
#[derive(Debug)]
pub enum CliError {
    Core(Error),
    /// Output to a closed pipe: exit quietly.
    BrokenPipe,
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError::Core(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Core(Error::io("write", "<stdout>", e))
        }
    }
}

pub type CliResult<T> = Result<T, CliError>;

/// Prints the error (and a hint) on stderr and returns the exit status.
pub fn report(e: &CliError) -> i32 {
    match e {
        CliError::BrokenPipe => 0,
        CliError::Core(e) => {
            eprintln!("team-reap: error: {e}");
            if let Some(h) = e.hint() {
                eprintln!("hint: {h}");
            }
            e.class().code()
        }
    }
}

/// A warning on stderr (suppressed by `-q`).
pub fn warn(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("team-reap: warning: {msg}");
    }
}

/// Sets up `tracing` on stderr, filtered by `RUST_LOG` (default: warnings).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}
