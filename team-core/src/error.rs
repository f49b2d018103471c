//! The library's one error type and the exit-status classes it falls into.
//!
//! Every fallible function in `team-core` returns [`Error`]. The binaries turn an error into an
//! exit status in one place (`team-cli`'s `error.rs`), through [`Error::class`] and
//! [`ExitClass::code`], so the exit-code table of docs/design.md section 9 lives here once.

use std::io;
use std::path::PathBuf;

/// Result alias used throughout `team-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The exit-status classes shared by every binary (docs/design.md section 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitClass {
    /// 0: done, or already so.
    Ok,
    /// 1: refused, or "no" (capacity, not enough idle workers, `--check` found work, `verify` failed).
    Refused,
    /// 3: partial: cleanup debt remains.
    Partial,
    /// 64: usage error.
    Usage,
    /// 65: malformed input or state.
    DataErr,
    /// 66: no such team or state.
    NoInput,
    /// 69: tmux or its server/session unavailable.
    Unavailable,
    /// 70: internal error.
    Software,
    /// 73: cannot create or write.
    CantCreate,
    /// 74: I/O error.
    IoErr,
    /// 75: busy (a lock) or timed out.
    TempFail,
    /// 77: permission denied.
    NoPerm,
}

impl ExitClass {
    /// The numeric exit status of this class.
    pub const fn code(self) -> i32 {
        match self {
            ExitClass::Ok => 0,
            ExitClass::Refused => 1,
            ExitClass::Partial => 3,
            ExitClass::Usage => 64,
            ExitClass::DataErr => 65,
            ExitClass::NoInput => 66,
            ExitClass::Unavailable => 69,
            ExitClass::Software => 70,
            ExitClass::CantCreate => 73,
            ExitClass::IoErr => 74,
            ExitClass::TempFail => 75,
            ExitClass::NoPerm => 77,
        }
    }

    /// The exit-code table, for `--help` texts and the README.
    pub const TABLE: &'static str = "\
Exit status:
  0   done (also \"already so\")
  1   refused or \"no\" (capacity, not enough idle workers, --check found work, verify failed)
  3   partial: cleanup debt remains
  64  usage error
  65  malformed input or state
  66  no such team or state
  69  tmux or its server/session unavailable
  70  internal error
  73  cannot write
  74  I/O error
  75  busy (a lock) or timed out
  77  permission denied";
}

/// Everything that can go wrong in `team-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name (team, worker, role) that does not match its pattern.
    #[error("invalid {kind} name {name:?}: {why}")]
    InvalidName {
        kind: &'static str,
        name: String,
        why: &'static str,
    },

    /// Bad input from a caller: an argument or a combination of them.
    #[error("{0}")]
    Usage(String),

    /// Malformed input data (task JSON, pipeline lines, hook payloads).
    #[error("malformed {what}: {msg}")]
    MalformedInput { what: String, msg: String },

    /// A state file that cannot be trusted: unparsable, hostile, or inconsistent.
    #[error("malformed state file {}: {msg}", path.display())]
    MalformedState { path: PathBuf, msg: String },

    /// A state file written by a schema this build does not know.
    #[error("{} has schema_version {found}; this build understands only {supported}", path.display())]
    UnknownSchema {
        path: PathBuf,
        found: u64,
        supported: u64,
    },

    /// A path that escapes the state root or passes through a symlink.
    #[error("unsafe path {}: {why}", path.display())]
    UnsafePath { path: PathBuf, why: String },

    /// A `team.json` that records another workspace than the one its state root belongs to:
    /// the state was copied or moved (`cp -a ws ws-copy`). Its panes are that workspace's.
    #[error(
        "{} records workspace {}, but this state belongs to workspace {}: the state was copied or moved here, and the team it names is the other workspace's",
        path.display(), recorded.display(), here.display()
    )]
    StateMoved {
        path: PathBuf,
        recorded: PathBuf,
        here: PathBuf,
    },

    /// What stands in a team's directory that has no `team.json` and is not what an `init`
    /// lays out (its `init.json`, empty `workers/`, `runtime/` and `trash/`): `init` does not
    /// take it up, since a teardown deletes what is in the trash and the workers' directories.
    #[error(
        "{} was not made by team-scale ({why}); init takes up no team directory holding what it did not make: move it out of the state dir, then init again",
        path.display()
    )]
    NotMadeByInit { path: PathBuf, why: String },

    /// The team (or its state) does not exist.
    #[error("no team {team:?} in {}", state_root.display())]
    NoSuchTeam { team: String, state_root: PathBuf },

    /// A refusal: the request is valid but cannot be granted as things are.
    #[error("{0}")]
    Refused(String),

    /// tmux, its server, or a session it needs is unavailable.
    #[error("tmux unavailable at {}: {msg}", endpoint.display())]
    TmuxUnavailable { endpoint: PathBuf, msg: String },

    /// The team's recorded session no longer exists.
    #[error("session_missing: the session {session} of team {team:?} is gone from {}", endpoint.display())]
    SessionMissing {
        team: String,
        session: String,
        endpoint: PathBuf,
    },

    /// tmux answered with output the parser refuses.
    #[error("unexpected tmux output: {0}")]
    TmuxProtocol(String),

    /// A lock is held by someone else and waiting for it timed out.
    #[error("{} is busy (held by {holder})", path.display())]
    Busy { path: PathBuf, holder: String },

    /// A bounded wait ran out.
    #[error("timed out: {0}")]
    TimedOut(String),

    /// The state root is on a file system where flock cannot be trusted.
    #[error("{} is on a {fs} file system; team state must be on a local file system (flock semantics over network file systems vary)", path.display())]
    NonLocalFs { path: PathBuf, fs: String },

    /// The redo journal failed its checksum or does not fit the current state.
    #[error("journal {} refused: {msg}", path.display())]
    JournalRefused { path: PathBuf, msg: String },

    /// An audit record could not be made durable, so the effect it guards did not happen.
    #[error("audit log {}: {msg}", path.display())]
    Audit { path: PathBuf, msg: String },

    /// A file the command needs to read does not exist.
    #[error("no such {what}: {}", path.display())]
    NotFound { what: &'static str, path: PathBuf },

    /// An I/O error, with what was being done and to which path.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A process could not be inspected or signalled.
    #[error("{op} {what} of process {pid}: {source}")]
    Process {
        op: &'static str,
        pid: u32,
        what: String,
        #[source]
        source: io::Error,
    },

    /// The operation ended, but cleanup debt remains: things it could not prove or remove stay
    /// recorded (as `removing` workers with reasons).
    #[error("{0}")]
    CleanupDebt(String),

    /// The worker command's program is not on PATH (checked by `init`).
    #[error("the worker program {program:?} was not found on PATH (worker command {cmd:?})")]
    ProgramNotFound { program: String, cmd: String },

    /// The first prompt did not reach every new worker (each one's result is in the message);
    /// the scale-up was rolled back.
    #[error("{msg}")]
    Undelivered {
        msg: String,
        /// Every new worker of the call with its delivery result.
        workers: Vec<DeliveryReport>,
    },

    /// A fail point fired (test builds only).
    #[error("fail point {0} fired")]
    FailPoint(String),

    /// The binary asked the operation to stop (SIGINT/SIGTERM, see `crate::interrupt`); what
    /// was in progress was rolled back. The binary exits 130.
    #[error("interrupted at {0}; the step in progress was rolled back")]
    Interrupted(String),

    /// A bug: a condition that should be impossible.
    #[error("internal error: {0}")]
    Internal(String),
}

/// One worker's delivery result, carried by [`Error::Undelivered`] for machine output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryReport {
    pub worker: String,
    /// `delivered`, `undelivered` or `blocked`.
    pub result: String,
    pub detail: String,
    pub last_lines: Vec<String>,
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// The exit-status class of this error.
    pub fn class(&self) -> ExitClass {
        match self {
            Error::InvalidName { .. } | Error::Usage(_) => ExitClass::Usage,
            Error::MalformedInput { .. }
            | Error::MalformedState { .. }
            | Error::UnknownSchema { .. }
            | Error::UnsafePath { .. }
            | Error::StateMoved { .. }
            | Error::NotMadeByInit { .. }
            | Error::JournalRefused { .. } => ExitClass::DataErr,
            Error::NoSuchTeam { .. } | Error::NotFound { .. } => ExitClass::NoInput,
            Error::Refused(_) | Error::Undelivered { .. } => ExitClass::Refused,
            Error::ProgramNotFound { .. } => ExitClass::Usage,
            Error::CleanupDebt(_) => ExitClass::Partial,
            Error::TmuxUnavailable { .. } | Error::SessionMissing { .. } => ExitClass::Unavailable,
            Error::TmuxProtocol(_) | Error::Internal(_) | Error::FailPoint(_) => {
                ExitClass::Software
            }
            Error::Busy { .. } | Error::TimedOut(_) | Error::Interrupted(_) => ExitClass::TempFail,
            Error::NonLocalFs { .. } => ExitClass::CantCreate,
            Error::Audit { .. } => ExitClass::IoErr,
            Error::Io { source, .. } | Error::Process { source, .. } => match source.kind() {
                io::ErrorKind::PermissionDenied => ExitClass::NoPerm,
                io::ErrorKind::ReadOnlyFilesystem
                | io::ErrorKind::StorageFull
                | io::ErrorKind::QuotaExceeded => ExitClass::CantCreate,
                _ => ExitClass::IoErr,
            },
        }
    }

    /// A next step for the user, when there is an obvious one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::NoSuchTeam { team, .. } => Some(format!(
                "create it with `team-scale init {team} --private`, or pass --state-dir"
            )),
            Error::SessionMissing { team, .. } => Some(format!(
                "the team's tmux session is gone; `team-scale shutdown {team}` marks it stopped"
            )),
            Error::Busy { .. } => {
                Some("another operation holds the lock; retry, or raise --wait".into())
            }
            Error::JournalRefused { .. } => Some(
                "inspect journal.json by hand; move it aside only if team.json is already whole"
                    .into(),
            ),
            Error::UnknownSchema { .. } => {
                Some("use the team-scale build that wrote this state".into())
            }
            Error::MalformedState { .. } => Some(
                "the state file was edited or damaged: repair or restore it by hand; `team-scale status <team>` shows what the command did before it stopped"
                    .into(),
            ),
            Error::UnsafePath { .. } => Some(
                "something under .team is not what the tools made there (a symlink, a file where a directory goes, a file they did not make): move it away; `team-scale status <team>` shows what the command did before it stopped"
                    .into(),
            ),
            Error::StateMoved { path, recorded, .. } => Some(format!(
                "nothing was changed: run the command in {} (or with --workspace {}); if you meant a new team here, remove {} and run `team-scale init` again",
                recorded.display(),
                recorded.display(),
                path.parent().unwrap_or(path).display()
            )),
            Error::MalformedInput { .. } => Some("fix the input; nothing was changed".into()),
            Error::Audit { .. } => Some(
                "nothing was killed: make the audit log writable, or choose another with --audit-log / TEAM_AUDIT_LOG"
                    .into(),
            ),
            Error::TmuxUnavailable { endpoint, .. } => Some(format!(
                "check the server with `tmux -S {} list-sessions`",
                endpoint.display()
            )),
            Error::NonLocalFs { .. } => {
                Some("put team state on a local disk with --state-dir / TEAM_STATE_DIR".into())
            }
            Error::ProgramNotFound { program, .. } => Some(format!(
                "install {program}, or give its full path in --worker-cmd; nothing was created"
            )),
            Error::Undelivered { .. } => Some(
                "the new workers were removed (nothing is left half-made); do what the message says, then run `team-scale up` again"
                    .into(),
            ),
            Error::CleanupDebt(_) => Some(
                "`team-scale status <team>` shows what remains; `team-scale reconcile <team>` retries it"
                    .into(),
            ),
            _ => None,
        }
    }
}
