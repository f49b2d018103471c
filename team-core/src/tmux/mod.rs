//! The tmux layer: the only code in the project that runs tmux.
//!
//! Every invocation passes `-S <endpoint>` (never the ambient `$TMUX` or the default server),
//! clears `TMUX`, `TMUX_PANE` and every `TEAM_*` variable from the child's environment (a
//! server started by it passes its environment on to every pane), and is bounded in time.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **An empty listing proves nothing**: a tmux server always has a pane (with none left it
//!   exits, or says "no current target") and prints each in the asked format, this call's nonce
//!   first; so a listing without one well-formed pane line (nothing, or only other lines) is
//!   not a server's (something else on the socket: two black-box attackers' listeners made
//!   `down` take live panes for gone) and reads as failed, never as "every pane is gone".
//!
//! - **Environment at session scope**: the leader's `TEAM_*` variables are exported on its pane's
//!   command line, never with `new-session -e` (which sets the *session's* environment, inherited
//!   by every pane later split into the session). Worker panes get theirs from their runtime
//!   script, below the supervisor, which first removes every inherited `TEAM_*`.

pub mod attach;
pub mod capture;
pub mod quote;
pub mod snapshot;
pub mod socket;
pub mod txn;
pub mod wire;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};
pub use capture::Screen;
pub use snapshot::{Geometry, PaneRow, Snapshot, Tags};
pub use txn::{Guard, Txn, TxnOutcome};

/// The format a guard compares with a socket's file name: the base name of the path the server
/// is bound at (`#{b:socket_path}`), whatever path the client reached it by.
pub const SOCKET_NAME_VAR: &str = "b:socket_path";

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
    native: bool,
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

impl Listing {
    /// Whether the server is going away: none listens, or it answered `list-panes -a` with "no
    /// current target", which a server whose last session just went says while it exits.
    pub fn server_exiting(&self) -> bool {
        match self {
            Listing::NoServer => true,
            Listing::Failed(e) => e.contains("no current target"),
            Listing::Panes(_) => false,
        }
    }
}

impl Tmux {
    /// A handle for the server at `endpoint`, run with the tmux binary `bin`.
    pub fn new(bin: impl Into<PathBuf>, endpoint: impl Into<PathBuf>) -> Tmux {
        Tmux {
            bin: bin.into(),
            endpoint: endpoint.into(),
            config: None,
            timeout: Duration::from_secs(15),
            native: true,
        }
    }

    /// How long one call may take before it is given up (15 s unless set).
    pub fn with_timeout(mut self, timeout: Duration) -> Tmux {
        self.timeout = timeout;
        self
    }

    /// Whether calls may speak tmux's protocol directly ([`wire`], when configured for the
    /// process) or always run the binary.
    pub fn with_native(mut self, native: bool) -> Tmux {
        self.native = native;
        self
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

    /// Runs one tmux command list on this server: spoken directly ([`wire`]) when it can be,
    /// else by the binary as `tmux -u -S <endpoint> [-f <config>] args...`.
    pub fn run<S: AsRef<str>>(&self, args: &[S]) -> Result<Output> {
        INVOCATIONS.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(endpoint = %self.endpoint.display(), args = ?args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(), "tmux");
        if self.native {
            match wire::run(&self.endpoint, args, self.timeout) {
                wire::Attempt::Done(out) => return Ok(out),
                wire::Attempt::Failed(msg) => {
                    return Err(Error::TmuxUnavailable {
                        endpoint: self.endpoint.clone(),
                        msg,
                    });
                }
                wire::Attempt::StepAside(why) => tracing::debug!(why, "tmux binary"),
            }
        }
        self.run_binary(args)
    }

    /// Runs the tmux binary with `args` after `-S <endpoint>`, bounded in time.
    fn run_binary<S: AsRef<str>>(&self, args: &[S]) -> Result<Output> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-u").arg("-S").arg(&self.endpoint);
        if let Some(c) = &self.config {
            cmd.arg("-f").arg(c);
        }
        for a in args {
            cmd.arg(a.as_ref());
        }
        crate::childenv::scrub(&mut cmd);
        cmd.env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().map_err(|e| Error::TmuxUnavailable {
            endpoint: self.endpoint.clone(),
            msg: format!("cannot run {}: {e}", self.bin.display()),
        })?;
        // A pidfd opened right after spawn, while the child is ours and unreaped, so a kill on
        // timeout reaches this process and no other (never a bare pid).
        let pidfd = rustix::process::pidfd_open(
            rustix::process::Pid::from_child(&child),
            rustix::process::PidfdFlags::empty(),
        );
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
                match &pidfd {
                    Ok(fd) => {
                        let _ =
                            rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "no pidfd for a timed-out tmux client; not signalled")
                    }
                }
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
            // A tmux server always has a pane (with none left it exits, or says "no current
            // target") and prints each in the asked format, this call's nonce first: an answer
            // without one well-formed pane line is not a server's, and proves nothing gone.
            Ok(o) if o.success => {
                let snap = Snapshot::parse(&o.stdout, &nonce);
                if snap.rows.is_empty() {
                    Listing::Failed(format!(
                        "the socket answered a listing without one pane line of this call ({} other line(s)), as no tmux server does",
                        snap.malformed.len()
                    ))
                } else {
                    Listing::Panes(snap)
                }
            }
            Ok(o) if is_no_server(&o.stderr) => Listing::NoServer,
            Ok(o) => Listing::Failed(o.stderr.trim().to_string()),
        }
    }

    /// Whether a server answers on the socket.
    pub fn server_answers(&self) -> bool {
        matches!(self.run(&["display-message", "-p", "ok"]), Ok(o) if o.success && o.stdout == "ok\n")
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

/// `export K='v' ...; <command>` (names must be shell variable names).
fn with_exports(env: &[(String, String)], command: &str) -> Result<String> {
    if env.is_empty() {
        return Ok(command.to_string());
    }
    let mut s = String::from("export");
    for (k, v) in env {
        let ok = !k.is_empty()
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !k.as_bytes()[0].is_ascii_digit();
        if !ok {
            return Err(Error::Internal(format!("bad variable name {k:?}")));
        }
        s.push_str(&format!(" {k}={}", quote::sh_quote(v)));
    }
    s.push_str("; ");
    s.push_str(command);
    Ok(s)
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
        // The first pane's variables go on its command line, never `new-session -e`: that sets
        // the *session's* environment, which every pane later split into the session (a user's
        // own) would inherit, reading as the team's leader to anything that trusts variables.
        if !s.pane.argv.is_empty() || s.pane.start_dir.is_some() {
            return Err(Error::Internal(
                "a new session's first pane takes a shell command only".into(),
            ));
        }
        argv.push(with_exports(&s.pane.env, &s.pane.command)?);
        // Every option is set on an explicit target: `=name:` is this exact session (never a
        // prefix match) and, as a pane target, its only pane (set-option's `-t` is a pane
        // target, so a bare `=name` does not resolve). Without `-t`, set-option picks tmux's
        // "best" session, by activity.
        let session_target = format!("={}:", s.name);
        let pane_target = session_target.clone();
        for (k, v) in &s.session_tags {
            argv.extend([
                ";".into(),
                "set-option".into(),
                "-t".into(),
                session_target.clone(),
                k.clone(),
                v.clone(),
            ]);
        }
        for (k, v) in &s.pane.tags {
            argv.extend([
                ";".into(),
                "set-option".into(),
                "-p".into(),
                "-t".into(),
                pane_target.clone(),
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
        let inc = txn::parse_new_pane(&lines)?;
        self.verify_new_session(s, &inc)?;
        Ok(inc)
    }

    /// Checks with a listing that the new session's pane carries exactly the tags that were
    /// set, pane-scoped, and the session its own options.
    fn verify_new_session(
        &self,
        s: &NewSession,
        inc: &crate::model::PaneIncarnation,
    ) -> Result<()> {
        let fail = |why: String| Error::TmuxUnavailable {
            endpoint: self.endpoint.clone(),
            msg: format!("the new session {} was not tagged as asked: {why}", s.name),
        };
        let snap = match self.list() {
            Listing::Panes(snap) => snap,
            Listing::NoServer => return Err(fail("the server is gone".into())),
            Listing::Failed(e) => return Err(fail(e)),
        };
        let row = snap
            .pane(&inc.pane_id)
            .ok_or_else(|| fail(format!("its pane {} is not listed", inc.pane_id)))?;
        if row.session_id != inc.session_id || row.pane_pid != inc.pane_pid {
            return Err(fail(format!("pane {} is another pane now", inc.pane_id)));
        }
        for (k, v) in &s.pane.tags {
            if crate::proof::tag_value(row, k).is_some_and(|got| got != v) {
                return Err(fail(format!(
                    "pane tag {k} reads {:?}",
                    crate::proof::tag_value(row, k)
                )));
            }
        }
        for (k, v) in &s.session_tags {
            if k == "@team_session_owner" && &row.tags.session_owner != v {
                return Err(fail(format!(
                    "session option {k} reads {:?}",
                    row.tags.session_owner
                )));
            }
        }
        Ok(())
    }

    /// Whether a session with exactly this name exists (`=name`, never a prefix match).
    pub fn has_session(&self, name: &str) -> Result<bool> {
        let o = self.run(&["has-session", "-t", &format!("={name}")])?;
        Ok(o.success)
    }
}
