//! The tmux layer: the only code in the project that runs tmux.
//!
//! Every invocation passes `-S <endpoint>` (never the ambient `$TMUX` or the default server),
//! clears `TMUX` and `TMUX_PANE` from the child's environment, and is bounded in time.

pub mod capture;
pub mod quote;
pub mod snapshot;
pub mod txn;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};
pub use capture::Screen;
pub use snapshot::{PaneRow, Snapshot, Tags};
pub use txn::{Guard, Txn, TxnOutcome};

static INVOCATIONS: AtomicU64 = AtomicU64::new(0);

/// How many tmux processes this process has run (for benchmarks).
pub fn invocations() -> u64 {
    INVOCATIONS.load(Ordering::Relaxed)
}

/// What one tmux invocation returned.
#[derive(Debug, Clone)]
pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// A tmux server, addressed by its socket path.
#[derive(Debug, Clone)]
pub struct Tmux {
    bin: PathBuf,
    endpoint: PathBuf,
    config: Option<PathBuf>,
    timeout: Duration,
}

/// The result of the snapshot call.
#[derive(Debug, Clone)]
pub enum Listing {
    /// The server answered.
    Panes(Snapshot),
    /// No server listens on the socket (absent or refused): definitive.
    NoServer,
    /// The call failed in a way that proves nothing (timeout, permission, garbage).
    Failed(String),
}

impl Tmux {
    /// A handle for the server at `endpoint`, run with the tmux binary `bin`.
    pub fn new(bin: impl Into<PathBuf>, endpoint: impl Into<PathBuf>) -> Tmux {
        Tmux {
            bin: bin.into(),
            endpoint: endpoint.into(),
            config: None,
            timeout: Duration::from_secs(15),
        }
    }

    /// The config file a server started by this handle reads (`-f`); none means tmux's default.
    pub fn with_config(mut self, config: Option<PathBuf>) -> Tmux {
        self.config = config;
        self
    }

    /// The socket path.
    pub fn endpoint(&self) -> &Path {
        &self.endpoint
    }

    /// Runs tmux with `args` after `-S <endpoint>`.
    pub fn run<S: AsRef<str>>(&self, args: &[S]) -> Result<Output> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-S").arg(&self.endpoint);
        if let Some(c) = &self.config {
            cmd.arg("-f").arg(c);
        }
        for a in args {
            cmd.arg(a.as_ref());
        }
        cmd.env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        INVOCATIONS.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(endpoint = %self.endpoint.display(), args = ?args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(), "tmux");
        let child = cmd.spawn().map_err(|e| Error::TmuxUnavailable {
            endpoint: self.endpoint.clone(),
            msg: format!("cannot run {}: {e}", self.bin.display()),
        })?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(out)) => Ok(Output {
                success: out.status.success(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }),
            Ok(Err(e)) => Err(Error::TmuxUnavailable {
                endpoint: self.endpoint.clone(),
                msg: format!("waiting for tmux: {e}"),
            }),
            Err(_) => {
                // Our own child, by pid: it is still our unreaped child, so the pid is its.
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_raw(pid as i32).expect("child pid is positive"),
                    rustix::process::Signal::KILL,
                );
                Err(Error::TmuxUnavailable {
                    endpoint: self.endpoint.clone(),
                    msg: format!("tmux did not answer within {:?}", self.timeout),
                })
            }
        }
    }

    /// Takes one snapshot of every pane on the server.
    pub fn list(&self) -> Listing {
        let nonce = format!("n{}", uuid::Uuid::new_v4().simple());
        let fmt = snapshot::format(&nonce);
        match self.run(&["list-panes", "-a", "-F", &fmt]) {
            Err(e) => Listing::Failed(e.to_string()),
            Ok(o) if o.success => Listing::Panes(Snapshot::parse(&o.stdout, &nonce)),
            Ok(o) if is_no_server(&o.stderr) => Listing::NoServer,
            Ok(o) => Listing::Failed(o.stderr.trim().to_string()),
        }
    }

    /// Whether a server answers on the socket.
    pub fn server_answers(&self) -> bool {
        matches!(self.run(&["display-message", "-p", "ok"]), Ok(o) if o.success)
    }

    /// Runs transactions in one invocation and reads each one's outcome.
    pub fn run_txns(&self, txns: &[Txn]) -> Result<Vec<TxnOutcome>> {
        txn::run(self, txns)
    }

    /// The visible text of a pane (for readiness checks).
    pub fn capture(&self, pane_id: &str) -> Result<String> {
        if !crate::model::is_tmux_id(pane_id, '%') {
            return Err(Error::Internal(format!("bad pane id {pane_id:?}")));
        }
        let o = self.run(&["capture-pane", "-p", "-J", "-t", pane_id])?;
        if !o.success {
            return Err(Error::TmuxUnavailable {
                endpoint: self.endpoint.clone(),
                msg: o.stderr.trim().to_string(),
            });
        }
        Ok(o.stdout)
    }
}

/// Whether tmux's stderr says no server listens on the socket.
pub fn is_no_server(stderr: &str) -> bool {
    stderr.contains("no server running")
        || (stderr.contains("error connecting to")
            && (stderr.contains("No such file or directory")
                || stderr.contains("Connection refused")))
}

/// A new detached session with its first pane, tagged at birth.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub name: String,
    pub width: u16,
    pub height: u16,
    pub pane: txn::NewPane,
    /// Session options set in the same invocation.
    pub session_tags: Vec<(String, String)>,
}

impl Tmux {
    /// Creates a detached session (starting the server if needed) and tags the session and its
    /// first pane in the same invocation, so the pane is ours from its first instant. Returns
    /// the first pane's incarnation.
    pub fn new_session(&self, s: &NewSession) -> Result<crate::model::PaneIncarnation> {
        let mut argv: Vec<String> = vec![
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            s.name.clone(),
            "-x".into(),
            s.width.to_string(),
            "-y".into(),
            s.height.to_string(),
            "-P".into(),
            "-F".into(),
            txn::NEW_PANE_FORMAT.into(),
        ];
        for (k, v) in &s.pane.env {
            argv.push("-e".into());
            argv.push(format!("{k}={v}"));
        }
        argv.push(s.pane.command.clone());
        for (k, v) in &s.session_tags {
            argv.extend([";".into(), "set-option".into(), k.clone(), v.clone()]);
        }
        for (k, v) in &s.pane.tags {
            argv.extend([
                ";".into(),
                "set-option".into(),
                "-p".into(),
                k.clone(),
                v.clone(),
            ]);
        }
        let out = self.run(&argv)?;
        if !out.success {
            return Err(Error::TmuxUnavailable {
                endpoint: self.endpoint.clone(),
                msg: format!("new-session failed: {}", out.stderr.trim()),
            });
        }
        let lines: Vec<String> = out.stdout.lines().map(str::to_string).collect();
        txn::parse_new_pane(&lines)
    }

    /// Whether a session with exactly this name exists (`=name`, never a prefix match).
    pub fn has_session(&self, name: &str) -> Result<bool> {
        let o = self.run(&["has-session", "-t", &format!("={name}")])?;
        Ok(o.success)
    }
}
