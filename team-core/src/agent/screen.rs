//! Reading a pane's screen against a profile (pure).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Ready means the prompt on the cursor line** (tmux's capture drops trailing blanks, so
//!   markers are compared without them), all `ready_screen` texts visible, the team's
//!   `--ready-pattern` visible too when set, and the screen unchanged for `stable_ms`. A typed
//!   draft "left the input line" when its last 16 characters (whitespace ignored, since a wrap
//!   point loses it) no longer run into the cursor line, or the cursor line is empty.
//!
//! - **A selected menu choice blocks every profile** (the `approval` screen, checked before
//!   the profile's busy and ready texts): the cursor line showing a selection marker (`›`, `❯`,
//!   `>`, `●`, ...) before a numbered choice (`› 1. Yes, proceed (y)`) or before a choice that
//!   offers yes/approve/allow/proceed/trust/accept/confirm, or any line showing a marked
//!   numbered choice that offers one of those. A key typed into such a menu answers it (an
//!   agent's command approval, a trust or first-run question), so nothing is typed, whatever
//!   the profile's own texts say. A line that is the delivery's own pasted draft, still at the
//!   cursor, is no menu.

use std::sync::LazyLock;

use crate::tmux::Screen;

use super::profiles::{Blocker, Profile};

/// What a screen shows, in order of precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen<'p> {
    /// The pane's process has exited.
    Dead,
    /// A screen that blocks work.
    Blocked(&'p Blocker),
    /// The agent shows that it works.
    Busy,
    /// The input prompt is on the cursor line (and the ready texts are on screen).
    Ready,
    /// None of these yet.
    Waiting,
}

/// The screen every profile shares: a menu with a selected choice (see [`menu_choice`]).
pub static APPROVAL: LazyLock<Blocker> = LazyLock::new(|| {
    Blocker {
    name: "approval".into(),
    any: Vec::new(),
    next_step: "{worker} shows a menu with a choice selected (a command approval, a trust or first-run question); nothing was typed into it: answer it yourself in the pane (`team-scale attach`), then send again".into(),
}
});

/// Classifies `s`. `extra_ready` is the team's `--ready-pattern`, which must also show.
/// `typed` is the text the delivery has pasted, if it has: its draft at the cursor is no menu.
pub fn classify<'p>(
    p: &'p Profile,
    s: &Screen,
    extra_ready: Option<&str>,
    typed: Option<&str>,
) -> Seen<'p> {
    if s.dead {
        return Seen::Dead;
    }
    let text = s.text();
    if let Some(b) = p
        .blocking
        .iter()
        .find(|b| b.any.iter().any(|t| text.contains(t.as_str())))
    {
        return Seen::Blocked(b);
    }
    if menu_choice(s, typed).is_some() {
        return Seen::Blocked(&APPROVAL);
    }
    if p.busy.iter().any(|t| text.contains(t.as_str())) {
        return Seen::Busy;
    }
    // tmux's capture drops trailing blanks, so a prompt `> ` shows as `>` at the line's end.
    let cursor = s.cursor_line().trim_end();
    let cursor_ok =
        p.ready_cursor.is_empty() || p.ready_cursor.iter().any(|t| cursor.contains(t.trim_end()));
    let screen_ok = p.ready_screen.iter().all(|t| text.contains(t.as_str()));
    let extra_ok = extra_ready.is_none_or(|t| text.contains(t));
    if cursor_ok && screen_ok && extra_ok {
        Seen::Ready
    } else {
        Seen::Waiting
    }
}

/// Markers a menu draws before its selected choice.
const MARKERS: &[char] = &[
    '›', '❯', '>', '»', '▶', '▸', '►', '→', '➜', '➤', '●', '◉', '◆', '☛',
];

/// Words of a choice that answers a question with consent.
const CONSENT: &[&str] = &[
    "yes", "y", "approve", "approved", "allow", "always", "proceed", "trust", "accept", "confirm",
];

/// A menu's selected choice in `line`: `(numbered, text)` when, past box-drawing and blanks,
/// it starts with a selection marker and then a choice (`1. text`, `2) text`, or plain text).
fn selected_choice(line: &str) -> Option<(bool, &str)> {
    let t = line.trim_start_matches(|c: char| c.is_whitespace() || "│┃║|╭╰┌└".contains(c));
    let rest = t.strip_prefix(MARKERS)?.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=2).contains(&digits)
        && let Some(after) = rest[digits..].strip_prefix(['.', ')'])
        && (after.is_empty() || after.starts_with(char::is_whitespace))
    {
        return Some((true, after.trim()));
    }
    Some((false, rest.trim()))
}

/// Whether a choice's text offers consent (in its first few words).
fn offers_consent(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .any(|w| CONSENT.contains(&w.to_lowercase().as_str()))
}

/// The menu choice `s` shows selected, if any: the cursor line as a numbered choice or one
/// offering consent, or any line as a numbered choice offering consent. With `typed` (text
/// the delivery pasted and that is still at the cursor), lines that are part of it do not
/// count.
pub fn menu_choice<'s>(s: &'s Screen, typed: Option<&str>) -> Option<&'s str> {
    let own_draft = typed.filter(|t| draft_at_cursor(s, t)).map(squeeze);
    let ours = |text: &str| {
        own_draft
            .as_ref()
            .is_some_and(|d| !squeeze(text).is_empty() && d.contains(&squeeze(text)))
    };
    s.lines.iter().enumerate().find_map(|(y, line)| {
        let (numbered, text) = selected_choice(line)?;
        let consent = offers_consent(text);
        let menu = if y == s.cursor_y {
            numbered || consent
        } else {
            numbered && consent
        };
        (menu && !ours(text)).then_some(line.as_str())
    })
}

/// A short piece of `text` that shows whether it is still in an input line: its last
/// characters (a long draft wraps, and the cursor stays at its end).
pub fn draft_tail(text: &str) -> String {
    let t = text.trim_end();
    let n = t.chars().count();
    t.chars()
        .skip(n.saturating_sub(16))
        .collect::<String>()
        .trim()
        .to_string()
}

/// A short piece of `text` that shows it reached a transcript: its first words.
pub fn draft_head(text: &str) -> String {
    text.trim()
        .chars()
        .take(20)
        .collect::<String>()
        .trim()
        .to_string()
}

fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whether `needle` shows on the screen, also when the terminal wrapped it (whitespace is
/// ignored: a wrap point loses it).
pub fn shows(s: &Screen, needle: &str) -> bool {
    let n = squeeze(needle);
    !n.is_empty() && squeeze(&s.text()).contains(&n)
}

/// Whether the draft `text` is still in the input line: its tail is on the cursor line (or
/// runs into it from the line above, when wrapped), and the cursor line is not empty.
pub fn draft_at_cursor(s: &Screen, text: &str) -> bool {
    let tail = squeeze(&draft_tail(text));
    if tail.is_empty() || s.cursor_line().trim().is_empty() {
        return false;
    }
    let above = s
        .cursor_y
        .checked_sub(1)
        .and_then(|y| s.lines.get(y))
        .map_or("", |l| l.as_str());
    squeeze(&format!("{above}{}", s.cursor_line())).contains(&tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::profiles::builtins;

    fn screen(lines: &[&str], cursor_y: usize) -> Screen {
        Screen {
            lines: lines.iter().map(|s| s.to_string()).collect(),
            cursor_y,
            ..Default::default()
        }
    }

    fn profile(name: &str) -> Profile {
        builtins().into_iter().find(|p| p.name == name).unwrap()
    }

    #[test]
    fn ready_means_the_prompt_on_the_cursor_line() {
        let aider = profile("aider");
        // A `>` elsewhere on the screen (a header) is not readiness.
        let s = screen(&["> header", "loading", ""], 2);
        assert_eq!(classify(&aider, &s, None, None), Seen::Waiting);
        let s = screen(&["aider v0", "> "], 1);
        assert_eq!(classify(&aider, &s, None, None), Seen::Ready);
    }

    #[test]
    fn blocking_screens_win_over_prompts() {
        let codex = profile("codex");
        let s = screen(&["Welcome to Codex", "1. Sign in with ChatGPT", "› "], 2);
        match classify(&codex, &s, None, None) {
            Seen::Blocked(b) => assert_eq!(b.name, "sign-in"),
            other => panic!("{other:?}"),
        }
        let gemini = profile("gemini");
        let s = screen(&["Do you trust this folder?", "● 1. Trust folder"], 1);
        assert!(matches!(classify(&gemini, &s, None, None), Seen::Blocked(b) if b.name == "trust"));
        let mut dead = screen(&["x"], 0);
        dead.dead = true;
        assert_eq!(classify(&gemini, &dead, None, None), Seen::Dead);
    }

    /// Black-box round: a Codex command-approval menu (`› 1. Yes, proceed (y)` on the cursor
    /// line) classified as ready, since Codex's profile has no ready cursor: the paste's
    /// letters answered it. Any selected menu choice blocks every profile.
    #[test]
    fn a_selected_menu_choice_blocks_every_profile() {
        let approval = [
            "Would you like to run the following command?",
            "$ rm -rf build",
            "› 1. Yes, proceed (y)",
            "  2. Yes, and don't ask again for this command (a)",
            "  3. No, and tell Codex what to do differently (esc)",
        ];
        for name in ["codex", "claude", "gemini", "aider", "custom", "shell"] {
            let p = profile(name);
            // The cursor on the selected choice, or elsewhere (a hidden cursor).
            for y in [2, 4] {
                let s = screen(&approval, y);
                assert!(
                    matches!(classify(&p, &s, None, None), Seen::Blocked(b) if b.name == "approval"),
                    "{name}, cursor on {y}"
                );
            }
        }
        let custom = profile("custom");
        let blocked = |lines: &[&str], y: usize| {
            matches!(
                classify(&custom, &screen(lines, y), None, None),
                Seen::Blocked(_)
            )
        };
        // Other markers, boxes, other consent words; a numbered choice at the cursor.
        assert!(blocked(&["│ ❯ 1. Yes, I trust this folder │"], 0));
        assert!(blocked(&["header", "> Allow once", ""], 1));
        assert!(blocked(&["● 2) Always allow"], 0));
        assert!(blocked(&["❯ 2. No (recommended)"], 0));
        // Not menus: a prompt, a draft without a marker, a transcript line without consent,
        // a plain list.
        assert!(!blocked(&["> "], 0));
        assert!(!blocked(&["fake> yes please"], 0));
        assert!(!blocked(&["› 1. fix the tests", "› "], 1));
        assert!(!blocked(&["1. Yes, proceed", "> "], 1));
        // The delivery's own pasted draft at the cursor is no menu; before the paste it is.
        let s = screen(&["› 1. yes, proceed with the plan"], 0);
        assert!(matches!(
            classify(&custom, &s, None, None),
            Seen::Blocked(_)
        ));
        assert_eq!(
            classify(&custom, &s, None, Some("1. yes, proceed with the plan")),
            Seen::Ready
        );
        // A menu that is not the draft still blocks after the paste.
        assert!(matches!(
            classify(&custom, &s, None, Some("something else entirely")),
            Seen::Blocked(_)
        ));
    }

    #[test]
    fn tails_and_heads() {
        assert_eq!(
            draft_tail("You are worker-1. Read your inbox now."),
            "your inbox now."
        );
        assert_eq!(
            draft_head("  You are worker-1 of team demo"),
            "You are worker-1 of"
        );
        let s = screen(&["abcdefgh", "ijkl"], 1);
        assert!(shows(&s, "ghij"));
        // Wrapped at a space: still there, and still at the cursor.
        let s = screen(&["> read it and work on the tasks listed", "there."], 1);
        assert!(draft_at_cursor(
            &s,
            "read it and work on the tasks listed there."
        ));
        // Submitted: a fresh prompt (or an empty line) under it.
        let s = screen(&["> read it and work on the tasks listed there.", ""], 1);
        assert!(!draft_at_cursor(
            &s,
            "read it and work on the tasks listed there."
        ));
        let s = screen(&["tasks listed", "there.", "Working on: read", "fake>"], 3);
        assert!(!draft_at_cursor(
            &s,
            "read it and work on the tasks listed there."
        ));
    }
}
