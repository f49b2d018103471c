//! The split source of `up`: the proven pane new panes split from, and where they go from it
//! ([`Place`], from [`super::layout`]).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **A member that cannot be proven live does not jam `up`**: the split source is the last
//!   member proven live, else the leader; the members passed over are named in a warning.
//!   (No new-window fallback when the leader is dead too: `up` refuses.) `reconcile` moves
//!   `active` members whose pane is `dead` or provably `gone` to `removing` (never on a mismatch
//!   or an unverifiable listing) and tears them down with fresh proofs.

use super::layout::{Layout, Place, leader_column_fit, stack_fit, tiled_fit};
use crate::error::{Error, Result};
use crate::model::{Lifecycle, PaneIncarnation, Team, Worker};
use crate::proof::PaneProof;
use crate::tmux::{Listing, Tmux};
use crate::view;

/// The proven pane new panes split from.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub(super) inc: PaneIncarnation,
    pub(super) tags: Vec<(&'static str, String)>,
    pub(super) is_leader: bool,
    pub(super) label: String,
    /// Members passed over because they could not be proven live.
    pub(super) skipped: Option<String>,
    /// How new panes are laid out from it, and how many more fit.
    pub(super) place: Place,
    /// How many worker panes a new window of the team's session holds (estimated from the
    /// session's windows: tmux gives a session's new windows one size).
    pub(super) window_fits: usize,
}

/// Proves the pane new panes split from, from one snapshot: the member with the most room
/// among those proven live, else the leader (step 3 of [`super::up`]).
pub(super) fn prove_source(team: &Team, tmux: &Tmux) -> Result<Source> {
    let listing = tmux.list();
    check_listing(team, &listing)?;
    let window_fits = new_window_fits(team, &listing);
    let (candidates, skipped) = live_members(team, &listing, window_fits);
    let leader = leader_source(team, &listing, window_fits);
    pick(team, &listing, candidates, leader, skipped)
}

/// Refuses a listing that cannot prove a source: failed, no server, or the team's server
/// without the team's session (`session_missing`).
fn check_listing(team: &Team, listing: &Listing) -> Result<()> {
    match listing {
        Listing::Failed(e) => Err(Error::TmuxUnavailable {
            endpoint: team.endpoint.clone(),
            msg: format!("cannot list panes to prove the split source: {e}"),
        }),
        Listing::NoServer => Err(Error::TmuxUnavailable {
            endpoint: team.endpoint.clone(),
            msg: "no tmux server answers on the team's socket".into(),
        }),
        Listing::Panes(snap) => {
            // The same server, without the team's session: session_missing. (A different server
            // on the socket is reported by the source proof below as server_changed.)
            let same_server =
                snap.server() == Some((team.leader.pane.server_pid, team.leader.pane.server_start));
            if same_server && crate::view::session_present(team, listing) == Some(false) {
                return Err(Error::SessionMissing {
                    team: team.name.to_string(),
                    session: team.session.name.clone(),
                    endpoint: team.endpoint.clone(),
                });
            }
            Ok(())
        }
    }
}

/// How many worker panes a new window of the team's session holds. tmux gives a session's new
/// windows one size (the session's): any window of the team's session tells it.
fn new_window_fits(team: &Team, listing: &Listing) -> usize {
    match listing {
        Listing::Panes(snap) => snap
            .rows
            .iter()
            .filter(|r| r.session_id == team.session.id)
            .filter_map(|r| snap.geometry(&r.pane_id))
            .map(|g| tiled_fit(g.window_width, g.window_height))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// The members proven live, as sources, from the last one down, and why the others were
/// passed over. A dead or missing member does not jam `up` (`reconcile` settles it); one that
/// cannot be verified is skipped the same way, and named in a warning.
fn live_members(team: &Team, listing: &Listing, window_fits: usize) -> (Vec<Source>, Vec<String>) {
    let mut members: Vec<&Worker> = team.in_state(Lifecycle::Active).collect();
    members.sort_by_key(|w| std::cmp::Reverse(w.index));
    let mut skipped: Vec<String> = Vec::new();
    let mut candidates: Vec<Source> = Vec::new();
    for w in members {
        let Some(inc) = w.pane.clone() else {
            skipped.push(format!("{} (no pane recorded)", w.name));
            continue;
        };
        let proof = view::prove_worker(team, w, listing)
            .unwrap_or_else(|| PaneProof::Unverifiable(format!("worker {} has no pane", w.name)));
        match proof {
            PaneProof::Live(_) => candidates.push(Source {
                place: member_place(team, listing, &inc),
                window_fits,
                inc,
                tags: view::worker_tags(team, w),
                is_leader: false,
                label: format!("the member {}", w.name),
                skipped: None,
            }),
            PaneProof::Dead(_) => skipped.push(format!("{} (its process has exited)", w.name)),
            other => skipped.push(format!(
                "{} ({})",
                w.name,
                other.reason().unwrap_or_default()
            )),
        }
    }
    (candidates, skipped)
}

/// The leader as a source: a column beside it.
fn leader_source(team: &Team, listing: &Listing, window_fits: usize) -> Source {
    Source {
        inc: team.leader.pane.clone(),
        tags: view::leader_tags(team),
        is_leader: true,
        label: "the leader".to_string(),
        skipped: None,
        window_fits,
        place: Place {
            layout: Layout::LeaderColumn,
            fits: listing_geometry(listing, &team.leader.pane.pane_id).map_or(0, leader_column_fit),
        },
    }
}

/// The first source that proves: the member with the most room first (the largest pane of a
/// column, or the window of workers with the most room left), the last made among equals,
/// then the leader. Refused, naming every reason, when none does.
fn pick(
    team: &Team,
    listing: &Listing,
    mut candidates: Vec<Source>,
    leader: Source,
    skipped: Vec<String>,
) -> Result<Source> {
    let leader_proof = view::prove_leader(team, listing);
    candidates.sort_by_key(|c| std::cmp::Reverse(c.place.fits));
    let mut why_not = Vec::new();
    for c in candidates.into_iter().chain(std::iter::once(leader)) {
        if c.is_leader {
            match &leader_proof {
                PaneProof::Live(_) => {}
                PaneProof::Dead(_) => {
                    why_not.push("the leader's process has exited".to_string());
                    continue;
                }
                other => {
                    why_not.push(format!(
                        "the leader: {}",
                        other.reason().unwrap_or_default()
                    ));
                    continue;
                }
            }
        }
        if let Some(rec) = c.inc.process_start {
            let now = crate::process::start_time(c.inc.pane_pid).ok().flatten();
            if now != Some(rec) {
                why_not.push(format!(
                    "{}: pane pid {} started at {now:?}, not the recorded {rec}",
                    c.label, c.inc.pane_pid
                ));
                continue;
            }
        }
        let mut c = c;
        if !skipped.is_empty() {
            c.skipped = Some(format!(
                "split from {} instead of {}; `team-scale reconcile {}` settles dead or missing members",
                c.label,
                skipped.join(", "),
                team.name
            ));
        }
        return Ok(c);
    }
    let mut all = skipped;
    all.extend(why_not);
    Err(Error::Refused(format!(
        "no split source can be proven ({}); nothing was created",
        all.join("; ")
    )))
}

/// The geometry of `pane_id` in `listing`, when it answered and lists it.
fn listing_geometry(listing: &Listing, pane_id: &str) -> Option<crate::tmux::Geometry> {
    match listing {
        Listing::Panes(snap) => snap.geometry(pane_id),
        _ => None,
    }
}

/// Where new panes split from the member pane `inc` go. In a window that holds this team's
/// workers and nothing else (one `up` opened), the window is re-tiled; elsewhere (beside the
/// leader, or among panes that are not ours) the member's pane is divided as a column, and no
/// other pane moves.
fn member_place(team: &Team, listing: &Listing, inc: &PaneIncarnation) -> Place {
    let Listing::Panes(snap) = listing else {
        return Place {
            layout: Layout::Stack,
            fits: 0,
        };
    };
    let Some(g) = snap.geometry(&inc.pane_id) else {
        return Place {
            layout: Layout::Stack,
            fits: 0,
        };
    };
    let owner = team.owner_id.to_string();
    let in_window: Vec<_> = snap
        .rows
        .iter()
        .filter(|r| r.window_id == inc.window_id)
        .collect();
    let workers_only = snap.malformed.is_empty()
        && in_window.iter().all(|r| {
            r.tags.pane_tagged()
                && r.tags.owner == owner
                && !r.tags.worker.is_empty()
                && r.tags.role.is_empty()
        });
    if workers_only {
        Place {
            layout: Layout::Tiled,
            fits: tiled_fit(g.window_width, g.window_height).saturating_sub(in_window.len()),
        }
    } else {
        Place {
            layout: Layout::Stack,
            fits: stack_fit(g.pane_width, g.pane_height),
        }
    }
}
