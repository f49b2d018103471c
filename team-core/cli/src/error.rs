//! The one error type of the binaries, and the one place it becomes a message and a status.

use std::io;

use team_core::ExitClass;

/// Everything a subcommand can fail with.
#[derive(Debug)]
pub enum CliError {
    /// A library error: its class and hint come from `team_core::Error`.
    Core(team_core::Error),
    /// stdout was closed by the reader: exit quietly.
    BrokenPipe,
    /// Writing stdout failed otherwise.
    Stdout(io::Error),
    /// A failure of a binary's own, with its class and an optional hint.
    Fail {
        class: ExitClass,
        msg: String,
        hint: Option<String>,
    },
}

/// The name team-audit's code uses for [`CliError`].
pub type AppError = CliError;

/// Result of a subcommand: its exit status, or an error.
pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// A failure of class `class`.
    pub fn fail(class: ExitClass, msg: impl Into<String>) -> CliError {
        CliError::Fail {
            class,
            msg: msg.into(),
            hint: None,
        }
    }

    /// Adds a hint to a [`CliError::Fail`] (other variants carry their own).
    pub fn with_hint(self, h: impl Into<String>) -> CliError {
        match self {
            CliError::Fail { class, msg, .. } => CliError::Fail {
                class,
                msg,
                hint: Some(h.into()),
            },
            other => other,
        }
    }

    /// A usage error (exit 64).
    pub fn usage(msg: impl Into<String>) -> CliError {
        CliError::fail(ExitClass::Usage, msg)
    }

    /// The exit class, message and hint, or `None` for a closed stdout.
    pub fn parts(&self) -> Option<(ExitClass, String, Option<String>)> {
        match self {
            CliError::BrokenPipe => None,
            CliError::Core(e) => Some((e.class(), e.to_string(), e.hint())),
            CliError::Stdout(e) => Some((ExitClass::IoErr, format!("writing stdout: {e}"), None)),
            CliError::Fail { class, msg, hint } => Some((*class, msg.clone(), hint.clone())),
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Core(e) => e.fmt(f),
            CliError::BrokenPipe => f.write_str("stdout closed"),
            CliError::Stdout(e) => write!(f, "writing stdout: {e}"),
            CliError::Fail { msg, .. } => f.write_str(msg),
        }
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        stdout_err(e)
    }
}

impl From<team_core::Error> for CliError {
    fn from(e: team_core::Error) -> Self {
        CliError::Core(e)
    }
}

/// Maps an I/O error on stdout: a closed pipe is a quiet end.
pub fn stdout_err(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::BrokenPipe
    } else {
        CliError::Stdout(e)
    }
}

/// Prints `e` on stderr (`<tool>: error: ...`, then `hint: ...` when there is one) and, with
/// `--json`, an error line and (unless the command wrote one) a summary line on stdout.
/// Returns the exit status.
pub fn report(e: CliError) -> i32 {
    let Some((class, msg, hint)) = e.parts() else {
        return 0;
    };
    let tool = crate::tool();
    crate::say_line!("{tool}: error: {msg}");
    if let Some(h) = &hint {
        crate::say_line!("hint: {h}");
    }
    let code = class.code();
    if crate::json_mode() {
        crate::out::error_line(code, &msg, hint.as_deref());
    }
    code
}

/// A warning on stderr (`<tool>: warning: ...`), unless `quiet`.
pub fn warn(quiet: bool, msg: &str) {
    if !quiet && !crate::quiet_mode() {
        crate::say_line!("{}: warning: {msg}", crate::tool());
    }
}
