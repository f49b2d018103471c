//! Step 6 of `up`: the new panes, made in as few tmux invocations as possible: one guarded
//! chain that splits the source and then each new pane in turn, every pane tagged in the same
//! server-side step, continued in new windows of the team's session when a window is full.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Worker panes start without a shell**: tmux runs the supervisor's argv itself (`-c` for
//!   the worker's directory), where it used to run `sh -c 'cd .. && TEAM_OP=.. exec
//!   team-scale supervise ..'`: one process start fewer per pane, and a pane's first process is
//!   its supervisor from the `exec` on. The op id moved from the environment into the
//!   supervisor's arguments (`--op`), so it still shows in `#{pane_start_command}`; the script
//!   still makes its own `cd` and fails if it cannot.
//!
//! - **No space for a new pane** aborts the rest of a chain (no receipt); `up` finds what was made
//!   by its tags and continues in a new window guarded by `@team_session_owner`. A session the
//!   tools did not create (an adopted leader's) gets no new windows: `up` refuses with the reason.

use uuid::Uuid;

use super::Plan;
use super::layout::{Layout, MIN_PANE, Place, share};
use super::source::Source;
use crate::error::{Error, Result};
use crate::model::{PaneIncarnation, Team};
use crate::ops::Env;
use crate::paths::WorkerName;
use crate::tmux::txn::{MAX_ARGV_BYTES, NewPane, SplitFailure, parse_new_panes};
use crate::tmux::{Guard, Listing, Tmux, Txn, TxnOutcome};

/// How a worker pane starts: tmux runs the supervisor directly (no shell in between) in the
/// worker's directory (`-c`; the supervisor runs there too, since tmux shows a pane's directory
/// from its foreground process), with `--op <op>` among its arguments (so the op id shows in
/// `#{pane_start_command}` from the first instant), and the supervisor runs the startup
/// script as its child (see `crate::supervisor`). The script makes its own `cd` and fails if
/// it cannot.
pub(super) fn start(env: &Env, team: &Team, op: Uuid, p: &Plan, digest: String) -> NewPane {
    let args = crate::supervisor::SupervisorArgs {
        op: Some(op),
        team: team.name.clone(),
        worker: p.name.clone(),
        owner: team.owner_id,
        incarnation: p.incarnation,
        state_root: env.store.root().path().to_path_buf(),
        workspace: team.workspace.clone(),
    };
    let mut argv = vec![env.supervisor.display().to_string()];
    argv.extend(args.to_argv());
    // By its path, as the script's own `#!/bin/sh` says: no `PATH` search (on a long `PATH`,
    // a failed `execve` per entry before it, in every new pane), and no `sh` of the
    // workspace's (`./node_modules/.bin`, a venv) taken for the system's.
    argv.push("/bin/sh".into());
    argv.push(p.script.display().to_string());
    NewPane {
        argv,
        start_dir: Some(p.cwd.display().to_string()),
        env: vec![(crate::supervisor::SCRIPT_DIGEST_VAR.into(), digest)],
        ..NewPane::default()
    }
}

/// The tags of `p`'s pane, set in the step that creates it.
pub(super) fn pane_tags(team: &Team, p: &Plan, op: Uuid) -> Vec<(&'static str, String)> {
    vec![
        ("@team_owner", team.owner_id.to_string()),
        ("@team_worker", p.name.to_string()),
        ("@team_incarnation", p.incarnation.to_string()),
        ("@team_workspace", team.workspace.display().to_string()),
        ("@team_name", team.name.to_string()),
        ("@team_op", op.to_string()),
    ]
}

/// Creates the panes of `plans`, recording each in `made` as soon as it is known. Returns the
/// windows opened.
pub(super) fn spawn_panes(
    team: &Team,
    tmux: &Tmux,
    source: &Source,
    op: Uuid,
    plans: &[Plan],
    start: &dyn Fn(&Plan) -> NewPane,
    made: &mut Vec<(WorkerName, PaneIncarnation)>,
) -> Result<Vec<String>> {
    let mut remaining: Vec<usize> = (0..plans.len()).collect();
    let mut from: Option<Source> = Some(source.clone());
    let mut place = source.place;
    let mut windows = Vec::new();
    while !remaining.is_empty() {
        if from.is_some() && place.fits == 0 {
            // No room for another pane of at least MIN_PANE here: a new window.
            (from, place) = (None, new_window_place(source));
        }
        let new_window = from.is_none();
        let guard = chain_guard(team, source, from.as_ref(), place)?;
        let l = remaining.len().min(place.fits);
        let (panes, sizes) = chain_panes(team, op, plans, &remaining[..l], place.layout, start);
        let refocus = from.as_ref().is_some_and(|s| s.is_leader);
        let tile = place.layout == Layout::Tiled;
        let (txn, m) = chain_txn(guard, new_window, &panes, &sizes, refocus, tile)?;
        let outcome = tmux
            .run_txns(&[txn])?
            .pop()
            .unwrap_or_else(|| TxnOutcome::Unknown(String::new()));
        let stderr = match outcome {
            TxnOutcome::Done(lines) => {
                let incs = parse_new_panes(&lines)?;
                if incs.len() == m {
                    for (&i, inc) in remaining[..m].iter().zip(incs) {
                        windows.push(inc.window_id.clone());
                        made.push((plans[i].name.clone(), inc));
                    }
                    let last = remaining[m - 1];
                    remaining.drain(..m);
                    if !remaining.is_empty() {
                        from = Some(continue_from(team, source, &plans[last], made, place)?);
                        place = place_after(place, l, m);
                    }
                    continue;
                }
                String::from("a receipt came back with the wrong number of new panes")
            }
            TxnOutcome::Refused => return Err(refused(team, source, new_window)),
            TxnOutcome::Unknown(e) => e,
        };
        // Unknown: find what was made by its tags.
        let before = remaining.len();
        find_made(
            tmux,
            team,
            op,
            plans,
            &stderr,
            &mut remaining,
            &mut windows,
            made,
        )?;
        if remaining.is_empty() {
            break;
        }
        if SplitFailure::of(&stderr) != SplitFailure::NoSpace {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("creating panes failed: {stderr}"),
            });
        }
        if new_window && remaining.len() == before {
            return Err(Error::TmuxUnavailable {
                endpoint: team.endpoint.clone(),
                msg: format!("even a new window has no room for a pane: {stderr}"),
            });
        }
        // The window is full: continue in a new window of the team's session.
        (from, place) = (None, new_window_place(source));
    }
    windows.sort();
    windows.dedup();
    Ok(windows)
}

/// A new window of the team's session: workers only, tiled.
fn new_window_place(source: &Source) -> Place {
    Place {
        layout: Layout::Tiled,
        fits: source.window_fits,
    }
}

/// The guard of the next chain: the proven pane it splits from, or, for a new window, the
/// team's session (which the tools must have created, and whose windows must hold a pane).
fn chain_guard(team: &Team, source: &Source, from: Option<&Source>, place: Place) -> Result<Guard> {
    let Some(s) = from else {
        if place.fits == 0 && team.session.created_by_tools {
            return Err(Error::Refused(format!(
                "the windows of team {}'s session {} are too small for a worker pane of at least {}x{} cells; make the session larger (init --size)",
                team.name, team.session.name, MIN_PANE.0, MIN_PANE.1
            )));
        }
        if !team.session.created_by_tools {
            return Err(Error::Refused(format!(
                "no space for another pane of at least {}x{} cells next to {}, and team {}'s session {} was adopted, so up does not open windows in it; enlarge the window, or use a private team (init --private)",
                MIN_PANE.0, MIN_PANE.1, source.label, team.name, team.session.name
            )));
        }
        return Guard::session(
            &team.session.id,
            source.inc.server_pid,
            source.inc.server_start,
            &team.owner_id.to_string(),
        );
    };
    let tags: Vec<(&str, &str)> = s.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Guard::pane(&s.inc, &tags, true)
}

/// The new panes of one chain, for the workers `run` (indexes into `plans`), and their sizes.
/// Even shares: a leader keeps half its width and the new column is divided evenly; a worker
/// source in a column keeps one share of its pane; a window of workers only is re-tiled after
/// each split.
fn chain_panes(
    team: &Team,
    op: Uuid,
    plans: &[Plan],
    run: &[usize],
    layout: Layout,
    start: &dyn Fn(&Plan) -> NewPane,
) -> (Vec<NewPane>, Vec<Option<u8>>) {
    let l = run.len();
    let mut sizes = Vec::with_capacity(l);
    let mut panes = Vec::with_capacity(l);
    for (k, &i) in run.iter().enumerate() {
        let (horizontal, size) = match (k, layout) {
            (_, Layout::Tiled) => (false, None),
            (0, Layout::LeaderColumn) => (true, Some(50)),
            _ => (false, share(l - k, l - k + 1)),
        };
        sizes.push(size);
        let p = &plans[i];
        panes.push(NewPane {
            tags: pane_tags(team, p, op)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            horizontal,
            ..start(p)
        });
    }
    (panes, sizes)
}

/// The chain transaction for the first `m` of `panes`, and `m`. One tmux message holds at most
/// 16 KiB: a long chain is made in parts, each part continuing from the last pane the previous
/// part made (proven by its receipt).
fn chain_txn(
    guard: Guard,
    new_window: bool,
    panes: &[NewPane],
    sizes: &[Option<u8>],
    refocus: bool,
    tile: bool,
) -> Result<(Txn, usize)> {
    let mut m = panes.len();
    loop {
        let txn = Txn::spawn_chain(
            guard.clone(),
            new_window,
            &panes[..m],
            &sizes[..m],
            refocus,
            true,
            tile,
        )?;
        if m == 1 || txn.argv_bytes() <= MAX_ARGV_BYTES {
            return Ok((txn, m));
        }
        m = m.div_ceil(2);
    }
}

/// The source the rest of a run continues from: the last pane made (`p`'s), proven by its
/// receipt.
fn continue_from(
    team: &Team,
    source: &Source,
    p: &Plan,
    made: &[(WorkerName, PaneIncarnation)],
    place: Place,
) -> Result<Source> {
    let inc = made
        .last()
        .map(|(_, inc)| inc.clone())
        .ok_or_else(|| Error::Internal("a chain part made no pane".into()))?;
    Ok(Source {
        inc,
        tags: vec![
            ("@team_owner", team.owner_id.to_string()),
            ("@team_worker", p.name.to_string()),
            ("@team_incarnation", p.incarnation.to_string()),
        ],
        is_leader: false,
        label: format!("new worker {}", p.name),
        skipped: None,
        place,
        window_fits: source.window_fits,
    })
}

/// Where the rest of a run of `l` goes once `m` of it are made: the last pane made holds the
/// shares of the rest of the run (a column), or the window has `fits - m` places left (tiled).
fn place_after(place: Place, l: usize, m: usize) -> Place {
    match place.layout {
        Layout::Tiled => Place {
            layout: Layout::Tiled,
            fits: place.fits - m,
        },
        _ => Place {
            layout: Layout::Stack,
            fits: l - m,
        },
    }
}

/// Why a chain's guard refused it.
fn refused(team: &Team, source: &Source, new_window: bool) -> Error {
    Error::Refused(if new_window {
        format!(
            "the session {} of team {} no longer matches its record (id, server or owner tag); no window was opened",
            team.session.name, team.name
        )
    } else {
        format!(
            "the split source, {}'s pane {}, changed before the split (incarnation or tags); nothing was split from it",
            source.label, source.inc.pane_id
        )
    })
}

/// After a chain whose outcome is unknown: finds the panes it made by their tags, records
/// them in `made` (and their windows), and removes their workers from `remaining`.
#[allow(clippy::too_many_arguments)]
fn find_made(
    tmux: &Tmux,
    team: &Team,
    op: Uuid,
    plans: &[Plan],
    stderr: &str,
    remaining: &mut Vec<usize>,
    windows: &mut Vec<String>,
    made: &mut Vec<(WorkerName, PaneIncarnation)>,
) -> Result<()> {
    let Listing::Panes(snap) = tmux.list() else {
        return Err(Error::TmuxUnavailable {
            endpoint: team.endpoint.clone(),
            msg: format!("creating panes failed ({stderr}) and the panes cannot be listed"),
        });
    };
    remaining.retain(|&i| {
        let p = &plans[i];
        let row = snap.rows.iter().find(|r| {
            r.tags.pane_tagged()
                && r.tags.op == op.to_string()
                && r.tags.owner == team.owner_id.to_string()
                && r.tags.worker == p.name.as_str()
                && r.tags.incarnation == p.incarnation.to_string()
        });
        match row {
            Some(r) => {
                let inc = r.incarnation();
                windows.push(inc.window_id.clone());
                made.push((p.name.clone(), inc));
                false
            }
            None => true,
        }
    });
    Ok(())
}
