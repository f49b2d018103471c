//! Attaching a person's terminal to a team's session: the one tmux client the tools run in the
//! foreground (inherited terminal, no timeout, since it lasts as long as the person stays).

use std::ffi::OsString;
use std::process::{Command, ExitStatus};

use super::Tmux;
use crate::error::{Error, Result};

impl Tmux {
    /// The command that attaches to `session` (`$N`) on this server, for people to run:
    /// `tmux -S <endpoint> attach-session -t <session>`, or `switch-client` when the caller is
    /// already a client of this very server (`inside_same`).
    pub fn attach_argv(&self, session: &str, inside_same: bool) -> Vec<OsString> {
        let verb = if inside_same {
            "switch-client"
        } else {
            "attach-session"
        };
        vec![
            self.bin.clone().into_os_string(),
            "-S".into(),
            self.endpoint.clone().into_os_string(),
            verb.into(),
            "-t".into(),
            session.into(),
        ]
    }

    /// Runs [`Tmux::attach_argv`] on the caller's terminal and returns its exit status. A
    /// nested attach (a client of another server) is allowed by clearing `TMUX`.
    pub fn attach(&self, session: &str, inside_same: bool) -> Result<ExitStatus> {
        if !crate::model::is_tmux_id(session, '$') {
            return Err(Error::Usage(format!(
                "{session:?} is not a session id ($N)"
            )));
        }
        let argv = self.attach_argv(session, inside_same);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        crate::childenv::scrub(&mut cmd);
        if !inside_same {
            cmd.env_remove("TMUX").env_remove("TMUX_PANE");
        }
        super::INVOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        cmd.status().map_err(|e| Error::TmuxUnavailable {
            endpoint: self.endpoint.clone(),
            msg: format!("cannot run {}: {e}", self.bin.display()),
        })
    }
}
