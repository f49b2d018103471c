//! Any printable text sent with proven send-keys arrives in the pane unchanged, and no value
//! can inject a second tmux command.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use team_core::model::PaneIncarnation;
use team_core::tmux::{Guard, Listing, Txn, TxnOutcome};
use tests::TmuxServer;

struct Pane {
    s: TmuxServer,
    rec: PaneIncarnation,
    out: std::path::PathBuf,
}

fn pane() -> Pane {
    let s = TmuxServer::start();
    let out = s.dir.path().join("out.txt");
    std::fs::write(&out, "").unwrap();
    let cmd = format!("stty raw -echo; exec cat >> '{}'", out.display());
    let id = s
        .tmux(&["split-window", "-t", "base", "-P", "-F", "#{pane_id}", &cmd])
        .trim()
        .to_string();
    let Listing::Panes(snap) = s.core().list() else {
        panic!("list")
    };
    let rec: PaneIncarnation = snap.pane(&id).unwrap().incarnation();
    // Let stty take effect before typing.
    std::thread::sleep(Duration::from_millis(300));
    Pane { s, rec, out }
}

fn send_and_read(p: &Pane, text: &str) -> String {
    let before = std::fs::read(&p.out).unwrap().len();
    let g = Guard::pane(&p.rec, &[], true).unwrap();
    let t = Txn::send_text(g, text).unwrap();
    let res = p.s.core().run_txns(&[t]).unwrap().remove(0);
    assert!(matches!(res, TxnOutcome::Done(_)), "{res:?}");
    let want = text.len() + 1; // the text, then Enter (a CR in raw mode)
    let t0 = Instant::now();
    loop {
        let b = std::fs::read(&p.out).unwrap();
        if b.len() >= before + want || t0.elapsed() > Duration::from_secs(5) {
            return String::from_utf8_lossy(&b[before..]).into_owned();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn hostile_text_arrives_literally_and_injects_nothing() {
    let p = pane();
    for text in [
        "' ; kill-server ; '",
        "\" ; kill-server ; \"",
        "\\' ; kill-server",
        "#{pane_id} #[fg=red] ${HOME} ~ $TMUX %% %1",
        "-l -t %0",
        "{ kill-server }",
        "; ; ;",
        "ü 日本語 🙂",
    ] {
        let got = send_and_read(&p, text);
        assert_eq!(got, format!("{text}\r"));
        assert!(p.s.core().server_answers(), "the server survived {text:?}");
    }
}

#[test]
fn control_characters_are_refused_not_sent() {
    let p = pane();
    let g = Guard::pane(&p.rec, &[], true).unwrap();
    assert!(Txn::send_text(g, "a\nb").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn any_printable_text_arrives_unchanged(text in "[^\\p{Cc}]{1,40}") {
        thread_local!(static P: Pane = pane());
        P.with(|p| {
            let got = send_and_read(p, &text);
            prop_assert_eq!(got, format!("{text}\r"));
            Ok(())
        })?;
    }
}
