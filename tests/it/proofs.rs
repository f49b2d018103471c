//! Adversarial pane proofs against real tmux: a proof and a proven effect must never act on a
//! pane that is not the recorded one.

use team_core::model::PaneIncarnation;
use team_core::proof::{self, PaneProof};
use team_core::tmux::{Guard, Listing, Txn, TxnOutcome};
use tests::TmuxServer;

const OWNER: &str = "0b6c3d2e-1f2a-4b5c-8d9e-0a1b2c3d4e5f";
const INC: &str = "11111111-2222-4333-8444-555555555555";

fn tags() -> Vec<(&'static str, &'static str)> {
    vec![("@team_owner", OWNER), ("@team_incarnation", INC)]
}

/// Splits a pane running `sleep`, tags it, and returns its recorded incarnation.
fn tagged_pane(s: &TmuxServer) -> PaneIncarnation {
    let out = s.tmux(&[
        "split-window",
        "-t",
        "base",
        "-P",
        "-F",
        "#{pane_id}\t#{pane_pid}\t#{session_id}\t#{window_id}\t#{pid}\t#{start_time}",
        "sleep 100000",
    ]);
    let f: Vec<&str> = out.trim().split('\t').collect();
    let inc = PaneIncarnation {
        pane_id: f[0].into(),
        pane_pid: f[1].parse().unwrap(),
        session_id: f[2].into(),
        window_id: f[3].into(),
        server_pid: f[4].parse().unwrap(),
        server_start: f[5].parse().unwrap(),
        process_start: None,
    };
    tag(s, &inc.pane_id);
    inc
}

fn tag(s: &TmuxServer, pane: &str) {
    s.tmux(&["set-option", "-p", "-t", pane, "@team_owner", OWNER]);
    s.tmux(&["set-option", "-p", "-t", pane, "@team_incarnation", INC]);
}

fn prove(s: &TmuxServer, rec: &PaneIncarnation) -> PaneProof {
    proof::prove(&s.core().list(), rec, &tags(), |_| false)
}

fn proven_kill(s: &TmuxServer, rec: &PaneIncarnation) -> TxnOutcome {
    let g = Guard::pane(rec, &tags(), false).unwrap();
    s.core().run_txns(&[Txn::kill_pane(g)]).unwrap().remove(0)
}

fn pane_exists(s: &TmuxServer, pane: &str) -> bool {
    s.tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .any(|l| l == pane)
}

fn row(s: &TmuxServer, pane: &str) -> team_core::tmux::PaneRow {
    match s.core().list() {
        Listing::Panes(snap) => snap.pane(pane).cloned().expect("pane listed"),
        other => panic!("listing failed: {other:?}"),
    }
}

#[test]
fn a_matching_pane_is_live_and_a_proven_kill_kills_it() {
    let s = TmuxServer::start();
    let rec = tagged_pane(&s);
    assert!(matches!(prove(&s, &rec), PaneProof::Live(_)));
    assert!(matches!(proven_kill(&s, &rec), TxnOutcome::Done(_)));
    assert!(!pane_exists(&s, &rec.pane_id));
    assert!(matches!(prove(&s, &rec), PaneProof::Gone(_)));
}

/// (a) Recycled pane id: the server restarts and a new pane gets the same `%N`, with the same
/// tags and (as if by chance) the same pane pid in the record: the server identity alone must
/// tell them apart.
#[test]
fn recycled_pane_id_after_server_restart_is_not_ours() {
    let s = TmuxServer::start();
    let rec = tagged_pane(&s);
    s.kill();
    s.start_again();
    let mut new_id = String::new();
    for _ in 0..20 {
        new_id = s
            .tmux(&[
                "split-window",
                "-t",
                "base",
                "-P",
                "-F",
                "#{pane_id}",
                "sleep 100000",
            ])
            .trim()
            .to_string();
        if new_id == rec.pane_id {
            break;
        }
    }
    assert_eq!(
        new_id, rec.pane_id,
        "the same %N exists again on the new server"
    );
    tag(&s, &new_id);
    let mut forged = rec.clone();
    forged.pane_pid = row(&s, &new_id).pane_pid;
    for r in [&rec, &forged] {
        let p = prove(&s, r);
        assert!(
            matches!(p, PaneProof::Mismatch(ref why) if why.contains("server_changed")),
            "{p:?}"
        );
        assert_eq!(proven_kill(&s, r), TxnOutcome::Refused);
        assert!(pane_exists(&s, &new_id), "the recycled pane must survive");
    }
}

/// (b) Same `%N`, different pane pid (the pane was respawned).
#[test]
fn changed_pane_pid_is_not_ours() {
    let s = TmuxServer::start();
    let rec = tagged_pane(&s);
    s.tmux(&["respawn-pane", "-k", "-t", &rec.pane_id, "sleep 100001"]);
    let now = row(&s, &rec.pane_id);
    assert_ne!(now.pane_pid, rec.pane_pid);
    assert_eq!(now.tags.incarnation, INC, "respawn keeps the tags");
    let p = prove(&s, &rec);
    assert!(
        matches!(p, PaneProof::Mismatch(ref why) if why.contains("pane_pid_changed")),
        "{p:?}"
    );
    assert_eq!(proven_kill(&s, &rec), TxnOutcome::Refused);
    assert!(pane_exists(&s, &rec.pane_id));
}

/// (c) The owner tag removed, or changed to another team's.
#[test]
fn removed_or_changed_owner_tag_is_not_ours() {
    let s = TmuxServer::start();
    let rec = tagged_pane(&s);
    s.tmux(&[
        "set-option",
        "-p",
        "-t",
        &rec.pane_id,
        "@team_owner",
        "someone-else",
    ]);
    assert!(matches!(prove(&s, &rec), PaneProof::Mismatch(_)));
    assert_eq!(proven_kill(&s, &rec), TxnOutcome::Refused);
    s.tmux(&["set-option", "-p", "-u", "-t", &rec.pane_id, "@team_owner"]);
    // The session's tag shows through on the pane; it must not count as the pane's own.
    s.tmux(&["set-option", "-t", "base", "@team_owner", OWNER]);
    s.tmux(&[
        "set-option",
        "-p",
        "-u",
        "-t",
        &rec.pane_id,
        "@team_incarnation",
    ]);
    assert!(matches!(prove(&s, &rec), PaneProof::Mismatch(_)));
    assert_eq!(proven_kill(&s, &rec), TxnOutcome::Refused);
    assert!(pane_exists(&s, &rec.pane_id));
}

/// (d) An effect that fails before its receipt reads as unknown, never as done.
#[test]
fn a_missing_receipt_is_not_done() {
    let s = TmuxServer::start();
    s.tmux(&["resize-window", "-t", "base", "-x", "20", "-y", "6"]);
    let rec = tagged_pane(&s);
    // Fill the window until no pane fits; then a proven split cannot produce its receipt.
    for _ in 0..20 {
        let _ = tests::tmux_at(
            &s.sock,
            &["split-window", "-t", &rec.pane_id, "sleep 100000"],
        );
    }
    let rec_now = {
        let mut r = rec.clone();
        r.pane_pid = row(&s, &rec.pane_id).pane_pid;
        r
    };
    let g = Guard::pane(&rec_now, &tags(), true).unwrap();
    let t = Txn::split(
        g,
        &team_core::tmux::txn::NewPane {
            command: "sleep 100000".into(),
            env: vec![],
            tags: vec![],
            horizontal: false,
            ..Default::default()
        },
    )
    .unwrap();
    let out = s.core().run_txns(&[t]).unwrap().remove(0);
    assert!(
        matches!(out, TxnOutcome::Unknown(ref e) if e.contains("no space")),
        "{out:?}"
    );
}

/// (e) A pane on another server with the same `%N` is not the recorded one.
#[test]
fn same_pane_id_on_another_server_is_not_ours() {
    let a = TmuxServer::start();
    let b = TmuxServer::start();
    let rec = tagged_pane(&a);
    let other = tagged_pane(&b);
    assert_eq!(
        rec.pane_id, other.pane_id,
        "both servers number panes alike"
    );
    let mut forged = rec.clone();
    forged.pane_pid = other.pane_pid;
    for r in [&rec, &forged] {
        assert!(matches!(prove(&b, r), PaneProof::Mismatch(_)));
        assert_eq!(proven_kill(&b, r), TxnOutcome::Refused);
    }
    assert!(pane_exists(&b, &other.pane_id));
    assert!(pane_exists(&a, &rec.pane_id));
}

/// Unknown is never gone: a listing that fails makes the pane unverifiable.
#[test]
fn a_failed_listing_is_unverifiable_not_gone() {
    let s = TmuxServer::start();
    let rec = tagged_pane(&s);
    let p = proof::prove(&Listing::Failed("timeout".into()), &rec, &tags(), |_| false);
    assert!(matches!(p, PaneProof::Unverifiable(_)));
    // No server on the socket, but the recorded server pid still runs: unverifiable too.
    let p = proof::prove(&Listing::NoServer, &rec, &tags(), |_| true);
    assert!(matches!(p, PaneProof::Unverifiable(_)));
}
