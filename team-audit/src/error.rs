//! The binary's errors and their exit codes (through `team_core::ExitClass::code()`).

use std::io;

use team_core::ExitClass;

/// Everything a subcommand can fail with.
#[derive(Debug)]
pub enum AppError {
    /// A library error: its class and hint come from `team_core::Error`.
    Core(team_core::Error),
    /// stdout was closed by the reader: exit quietly.
    BrokenPipe,
    /// Writing stdout failed otherwise.
    Stdout(io::Error),
    /// A failure of this binary's own, with its class and an optional hint.
    Fail {
        class: ExitClass,
        msg: String,
        hint: Option<String>,
    },
}

impl AppError {
    pub fn fail(class: ExitClass, msg: impl Into<String>) -> AppError {
        AppError::Fail {
            class,
            msg: msg.into(),
            hint: None,
        }
    }

    pub fn with_hint(self, h: impl Into<String>) -> AppError {
        match self {
            AppError::Fail { class, msg, .. } => AppError::Fail {
                class,
                msg,
                hint: Some(h.into()),
            },
            other => other,
        }
    }

    pub fn usage(msg: impl Into<String>) -> AppError {
        AppError::fail(ExitClass::Usage, msg)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Core(e) => e.fmt(f),
            AppError::BrokenPipe => f.write_str("stdout closed"),
            AppError::Stdout(e) => write!(f, "writing stdout: {e}"),
            AppError::Fail { msg, .. } => f.write_str(msg),
        }
    }
}

impl From<io::Error> for AppError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            AppError::BrokenPipe
        } else {
            AppError::Stdout(e)
        }
    }
}

impl From<team_core::Error> for AppError {
    fn from(e: team_core::Error) -> Self {
        AppError::Core(e)
    }
}

/// Maps an I/O error on stdout.
pub fn stdout_err(e: io::Error) -> AppError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        AppError::BrokenPipe
    } else {
        AppError::Stdout(e)
    }
}

/// Prints `e` on stderr (`team-audit: error: ...` and `hint: ...`) and returns its exit code.
pub fn report(e: AppError) -> i32 {
    let (class, msg, hint) = match e {
        AppError::BrokenPipe => return 0,
        AppError::Core(e) => (e.class(), e.to_string(), e.hint()),
        AppError::Stdout(e) => (ExitClass::IoErr, format!("writing stdout: {e}"), None),
        AppError::Fail { class, msg, hint } => (class, msg, hint),
    };
    eprintln!("team-audit: error: {msg}");
    if let Some(h) = hint {
        eprintln!("hint: {h}");
    }
    class.code()
}
