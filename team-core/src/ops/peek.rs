//! `peek`: a worker's last screen lines, read only from a pane proven ours before and after the
//! capture (a pane respawned in between is refused, not shown).

use super::Env;
use crate::error::{Error, Result};
use crate::paths::WorkerName;
use crate::proof::PaneProof;
use crate::view;

/// What a peek saw.
#[derive(Debug, Clone)]
pub struct Peek {
    pub pane_id: String,
    /// `live` or `dead`.
    pub liveness: &'static str,
    pub lines: Vec<String>,
}

/// The last `n` lines of `worker`'s screen. A reader: the last committed state, read without a
/// lock (a yielding reader must never hold one a writer waits for).
pub fn peek(env: &Env, worker: &WorkerName, n: usize) -> Result<Peek> {
    let team = env.store.snapshot()?.team;
    let w = team
        .worker(worker)
        .ok_or_else(|| Error::Refused(format!("{worker} is not a member of team {}", team.name)))?;
    let pane = w
        .pane
        .as_ref()
        .ok_or_else(|| Error::Refused(format!("{worker} has no pane yet")))?;
    let tmux = env.tmux(&team);
    let check = |when: &str| -> Result<PaneProof> {
        let proof = view::prove_worker(&team, w, &tmux.list())
            .ok_or_else(|| Error::Refused(format!("{worker} has no pane")))?;
        match &proof {
            PaneProof::Live(_) | PaneProof::Dead(_) => Ok(proof),
            PaneProof::Unverifiable(why) => Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: why.clone(),
            }),
            p => Err(Error::Refused(format!(
                "{worker}'s pane {} is not proven ours {when} ({}: {}); nothing is shown",
                pane.pane_id,
                p.liveness(),
                p.reason().unwrap_or_default()
            ))),
        }
    };
    check("now")?;
    let screen = tmux
        .capture_screens(&[pane.pane_id.as_str()])
        .pop()
        .flatten()
        .ok_or_else(|| Error::TmuxUnavailable {
            endpoint: team.endpoint.clone(),
            msg: format!("the screen of pane {} could not be read", pane.pane_id),
        })?;
    let after = check("after the capture")?;
    Ok(Peek {
        pane_id: pane.pane_id.clone(),
        liveness: after.liveness(),
        lines: screen.last_lines(n),
    })
}
