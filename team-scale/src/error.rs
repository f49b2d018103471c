//! The one place that turns errors into messages and exit statuses.

use team_core::Error;

/// An error of the CLI: a library error, or a usage error found by the CLI itself.
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
            eprintln!("team-scale: error: {e}");
            if let Some(h) = e.hint() {
                eprintln!("hint: {h}");
            }
            e.class().code()
        }
    }
}

/// Sets up `tracing` on stderr: `RUST_LOG` wins, else `-v` levels.
pub fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// Parses the command line; usage errors exit 64 (help and version exit 0).
pub fn parse_or_exit<T>(r: Result<T, clap::Error>) -> T {
    match r {
        Ok(t) => t,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => team_core::ExitClass::Usage.code(),
            };
            let _ = e.print();
            std::process::exit(code);
        }
    }
}
