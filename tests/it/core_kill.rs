//! `ops::kill::kill_panes` against a real tmux server on a private socket.
//!
//! Each test starts its own server on a socket in its own temp dir (never the user's server)
//! and kills exactly that server with `kill-server -S <socket>` when it ends, pass or fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use team_core::audit::{AuditLog, Stage, read_records};
use team_core::model::PaneIncarnation;
use team_core::ops::kill::{KillResult, KillTarget, kill_panes};
use team_core::tmux::txn::NewPane;
use team_core::tmux::{Guard, Listing, Tmux, Txn, TxnOutcome};

struct Server {
    sock: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("kill-server")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output();
    }
}

fn start() -> (Server, Tmux, PaneIncarnation) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock");
    let tmux = Tmux::new("tmux", &sock).with_config(Some("/dev/null".into()));
    let s = team_core::tmux::NewSession {
        name: "t".into(),
        width: 200,
        height: 50,
        pane: NewPane {
            command: "sleep 1000".into(),
            env: vec![],
            tags: vec![
                ("@team_owner".into(), "own".into()),
                ("@team_role".into(), "leader".into()),
            ],
            horizontal: false,
            ..Default::default()
        },
        session_tags: vec![],
    };
    let leader = tmux.new_session(&s).unwrap();
    (Server { sock, _dir: dir }, tmux, leader)
}

fn split(tmux: &Tmux, from: &PaneIncarnation, inc: &str) -> PaneIncarnation {
    let g = Guard::pane(from, &[], true).unwrap();
    let t = Txn::split(
        g,
        &NewPane {
            command: "sleep 1000".into(),
            env: vec![],
            tags: vec![
                ("@team_owner".into(), "own".into()),
                ("@team_incarnation".into(), inc.into()),
            ],
            horizontal: false,
            ..Default::default()
        },
    )
    .unwrap();
    match tmux.run_txns(&[t]).unwrap().pop().unwrap() {
        TxnOutcome::Done(lines) => team_core::tmux::txn::parse_new_pane(&lines).unwrap(),
        o => panic!("split failed: {o:?}"),
    }
}

fn target(inc: &PaneIncarnation, tag: &str) -> KillTarget {
    KillTarget {
        inc: inc.clone(),
        tags: vec![
            ("@team_owner", "own".to_string()),
            ("@team_incarnation", tag.to_string()),
        ],
        reason: "test".into(),
        team: Some("t".into()),
        workspace: None,
    }
}

fn pane_exists(tmux: &Tmux, id: &str) -> bool {
    match tmux.list() {
        Listing::Panes(s) => s.pane(id).is_some(),
        other => panic!("listing: {other:?}"),
    }
}

fn records(p: &Path) -> Vec<team_core::audit::Record> {
    read_records(p).unwrap().records
}

#[test]
fn kills_proven_panes_and_refuses_the_rest_with_audit() {
    let (_srv, tmux, leader) = start();
    let a = split(&tmux, &leader, "inc-a");
    let b = split(&tmux, &leader, "inc-b");
    let c = split(&tmux, &leader, "inc-c");
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));

    // b's pid differs from the record (a recycled pane id would look like this).
    let mut b_wrong = b.clone();
    b_wrong.pane_pid += 100_000;
    // c carries another incarnation tag.
    let mut gone = a.clone();
    gone.pane_id = "%999".into();
    let targets = vec![
        target(&a, "inc-a"),
        target(&b_wrong, "inc-b"),
        target(&c, "inc-other"),
        target(&gone, "inc-a"),
    ];
    let res = kill_panes(&tmux, &log, "test", "test", &targets).unwrap();
    assert_eq!(res[0], KillResult::Killed);
    assert!(
        matches!(&res[1], KillResult::Refused(r) if r.contains("pane_pid")),
        "{res:?}"
    );
    assert!(
        matches!(&res[2], KillResult::Refused(r) if r.contains("tag")),
        "{res:?}"
    );
    assert!(matches!(&res[3], KillResult::Gone(_)), "{res:?}");
    assert!(!pane_exists(&tmux, &a.pane_id));
    assert!(pane_exists(&tmux, &b.pane_id));
    assert!(pane_exists(&tmux, &c.pane_id));
    assert!(pane_exists(&tmux, &leader.pane_id));

    // Four intents, then four outcomes with the same ids, in that order.
    let recs = records(log.path());
    assert_eq!(recs.len(), 8);
    for i in 0..4 {
        assert_eq!(recs[i].stage, Stage::Intent);
        assert_eq!(recs[i + 4].audit_id, recs[i].audit_id);
    }
    assert_eq!(recs[4].stage, Stage::Complete);
    assert!(recs[5..].iter().all(|r| r.stage == Stage::Failed));
}

#[test]
fn nothing_is_killed_when_the_intent_cannot_be_written() {
    let (_srv, tmux, leader) = start();
    let a = split(&tmux, &leader, "inc-a");
    let dir = tempfile::tempdir().unwrap();
    // The log's parent is a regular file: the intent cannot be written.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let log = AuditLog::new(blocker.join("audit.jsonl"));
    let err = kill_panes(&tmux, &log, "test", "test", &[target(&a, "inc-a")]).unwrap_err();
    assert!(matches!(err, team_core::Error::Audit { .. }), "{err}");
    assert!(pane_exists(&tmux, &a.pane_id));
}
