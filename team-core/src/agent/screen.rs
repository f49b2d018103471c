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
//!
//! - **A menu may mark its choice with nothing but an attribute**, and a question may have no
//!   menu at all: a numbered choice shown in reverse video or on a background colour (the
//!   capture keeps the attributes apart, [`Screen::highlighted`]) while a numbered choice
//!   next to it is not highlighted, and a yes/no question (`[y/N]`, `(yes/no)`, `Allow ...?`,
//!   `Would you like to run`, `Do you want to proceed`, `Press enter to confirm`, `Enter ...
//!   esc to cancel`) on one of the lines around the cursor or among the last lines of the
//!   screen, are the `approval` screen too. One highlighted list (a transcript's quoted
//!   message) is no selection, and `esc to cancel` alone is a busy line (Gemini CLI's), not a
//!   question.

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

/// The screen every profile shares: a menu with a selected choice or a yes/no question (see
/// [`menu_choice`] and [`question`]).
pub static APPROVAL: LazyLock<Blocker> = LazyLock::new(|| {
    Blocker {
    name: "approval".into(),
    any: Vec::new(),
    next_step: "{worker} shows a menu with a choice selected or a yes/no question (a command approval, a trust or first-run question); nothing was typed into it: answer it yourself in the pane (`team-scale attach`), then send again".into(),
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
    if menu_choice(s, typed).is_some() || question(s, typed).is_some() {
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

/// A numbered choice in `line`, with no marker: past box-drawing, blanks and any marker, one
/// or two digits and `.` or `)`. Returns the char positions of the number and of the choice's
/// text (or the number's again, when there is no text).
fn numbered_choice(line: &str) -> Option<(usize, usize)> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len()
        && (chars[i].is_whitespace()
            || "│┃║|╭╰┌└".contains(chars[i])
            || MARKERS.contains(&chars[i]))
    {
        i += 1;
    }
    let number = i;
    while i < chars.len() && chars[i].is_ascii_digit() {
        i += 1;
    }
    if !(1..=2).contains(&(i - number)) || !matches!(chars.get(i), Some('.' | ')')) {
        return None;
    }
    i += 1;
    match chars.get(i) {
        None => return Some((number, number)),
        Some(c) if c.is_whitespace() => {}
        Some(_) => return None,
    }
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    Some((number, if i < chars.len() { i } else { number }))
}

/// Whether line `y` is a numbered choice highlighted where it starts (its number or its text).
fn highlighted_choice(s: &Screen, y: usize) -> Option<bool> {
    let (number, text) = numbered_choice(s.lines.get(y)?)?;
    let marked: Vec<char> = s.highlighted_line(y).chars().collect();
    let on = |i: usize| marked.get(i).is_some_and(|c| !c.is_whitespace());
    Some(on(number) || on(text))
}

/// The menu choice `s` shows selected, if any: the cursor line as a numbered choice or one
/// offering consent, or any line as a numbered choice offering consent; or a numbered choice
/// shown highlighted (reverse video, a background colour) next to one that is not. With
/// `typed` (text the delivery pasted and that is still at the cursor), lines that are part of
/// it do not count.
pub fn menu_choice<'s>(s: &'s Screen, typed: Option<&str>) -> Option<&'s str> {
    let ours = own_draft(s, typed);
    let marked = s.lines.iter().enumerate().find_map(|(y, line)| {
        let (numbered, text) = selected_choice(line)?;
        let consent = offers_consent(text);
        let menu = if y == s.cursor_y {
            numbered || consent
        } else {
            numbered && consent
        };
        (menu && !ours(text)).then_some(line.as_str())
    });
    let draft = shows_draft(s, typed);
    marked.or_else(|| {
        (0..s.lines.len()).find_map(|y| {
            if highlighted_choice(s, y) != Some(true) || draft(&s.lines[y]) {
                return None;
            }
            // A sibling choice within three lines that is not highlighted: one list all
            // highlighted is a quoted message, not a selection.
            let near = y.saturating_sub(3)..=y + 3;
            near.filter(|&z| z != y)
                .any(|z| highlighted_choice(s, z) == Some(false))
                .then_some(s.lines[y].as_str())
        })
    })
}

/// Whether a text is part of the delivery's own draft, still at the cursor.
fn own_draft(s: &Screen, typed: Option<&str>) -> impl Fn(&str) -> bool {
    let draft = typed.filter(|t| draft_at_cursor(s, t)).map(squeeze);
    move |text: &str| {
        draft
            .as_ref()
            .is_some_and(|d| !squeeze(text).is_empty() && d.contains(&squeeze(text)))
    }
}

/// Whether a line shows a piece of the delivery's own draft (still at the cursor): at least 12
/// characters of it (all of a shorter draft), whitespace ignored, so an input line's prompt
/// before it does not matter.
fn shows_draft(s: &Screen, typed: Option<&str>) -> impl Fn(&str) -> bool {
    let draft: Option<Vec<char>> = typed
        .filter(|t| draft_at_cursor(s, t))
        .map(|t| squeeze(t).chars().collect());
    move |line: &str| {
        let Some(d) = draft.as_ref().filter(|d| !d.is_empty()) else {
            return false;
        };
        let l: Vec<char> = squeeze(line).chars().collect();
        let k = d.len().min(12);
        l.windows(k).any(|w| d.windows(k).any(|x| x == w))
    }
}

/// Phrases of a question whose answer is a key (lowercase).
const QUESTIONS: &[&str] = &[
    "would you like to run",
    "would you like to make",
    "would you like to allow",
    "do you want to proceed",
    "do you want to run",
    "do you want to allow",
    "do you want to make",
    "enter to confirm",
];

/// Whether `line` asks a yes/no question: a `[y/N]`-like choice (`[Y/n]`, `(y/n)`, `(yes/no)`,
/// `[y/N/a]`, `(Y)es/(N)o`), a known phrase (`Would you like to run`, `Do you want to proceed`,
/// `Press enter to confirm`), `Allow ...?`, or `esc to cancel` with an Enter to answer (alone
/// it is a busy line: Gemini CLI's `(esc to cancel, 3s)`).
fn asks(line: &str) -> bool {
    let l = line.to_lowercase();
    let t = l.trim_matches(|c: char| {
        c.is_whitespace() || "│┃║|╭╮╰╯┌┐└┘".contains(c) || MARKERS.contains(&c)
    });
    let choice = [
        "[y/n",
        "(y/n",
        "[n/y",
        "(n/y",
        "[yes/no",
        "(yes/no",
        "(y)es/(n)o",
    ]
    .iter()
    .any(|p| l.contains(p));
    let allow = t.starts_with("allow ") && t.ends_with('?');
    let cancel = l.contains("esc to cancel") && l.contains("enter");
    choice || allow || cancel || QUESTIONS.iter().any(|q| l.contains(q))
}

/// The yes/no question `s` asks, if any: on the cursor line, the two lines above it or the one
/// below, or among the last three non-empty lines of the screen (a question's footer). With
/// `typed` that asks such a question itself, lines showing the delivery's own draft (still at
/// the cursor) do not count.
pub fn question<'s>(s: &'s Screen, typed: Option<&str>) -> Option<&'s str> {
    let asking = typed.is_some_and(|t| asks(&t.replace(['\n', '\r'], " ")));
    let draft = shows_draft(s, typed);
    let ours = |l: &str| asking && draft(l);
    let near = s.cursor_y.saturating_sub(2)..=s.cursor_y + 1;
    let bottom: Vec<usize> = (0..s.lines.len())
        .rev()
        .filter(|&y| !s.lines[y].trim().is_empty())
        .take(3)
        .collect();
    (0..s.lines.len())
        .filter(|y| near.contains(y) || bottom.contains(y))
        .map(|y| s.lines[y].as_str())
        .find(|l| asks(l) && !ours(l))
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

    /// Black-box round: a Codex-style approval menu whose selected choice has no marker, only
    /// reverse video, and a plain `[y/N]` question, were classified as ready: the first key of
    /// the paste answered them. Both block every profile.
    #[test]
    fn a_highlighted_choice_or_a_yes_no_question_blocks_every_profile() {
        let menu = [
            "Would you like to run the following command?",
            "$ rm -rf build/",
            " 1. Yes, proceed",
            "  2. No, and tell Codex what to do differently",
            "Press enter to confirm or esc to cancel",
        ];
        let hl = |lines: &[&str], y: usize, marked: &str| {
            let mut s = screen(lines, lines.len() - 1);
            s.highlighted = vec![String::new(); lines.len()];
            s.highlighted[y] = marked.into();
            s
        };
        let blocked = |p: &Profile, s: &Screen| matches!(classify(p, s, None, None), Seen::Blocked(b) if b.name == "approval");
        for name in ["codex", "claude", "gemini", "aider", "custom", "shell"] {
            let p = profile(name);
            // The menu as drawn, its footer and question included.
            assert!(blocked(&p, &hl(&menu, 2, " 1. Yes, proceed")), "{name}");
            // Only the highlighted choice tells it (no question text on screen).
            let bare = ["run it?", " 1. Yes, proceed", "  2. No", "", "status bar"];
            assert!(blocked(&p, &hl(&bare, 1, " 1.")), "{name}: number");
            assert!(blocked(&p, &hl(&bare, 2, "     No")), "{name}: 2nd");
            assert!(
                blocked(&p, &hl(&bare, 1, "    Yes, proceed")),
                "{name}: text"
            );
            // A yes/no question at the cursor, or a question's footer at the bottom.
            for q in [
                "Allow this command? [y/N]",
                "Continue? [Y/n]",
                "Overwrite file (y/n)?",
                "Are you sure (yes/no)?",
                "Allow network access?",
                "Do you want to proceed?",
                "Enter to select · Esc to cancel",
            ] {
                let s = screen(&["output", q], 1);
                assert!(blocked(&p, &s), "{name}: {q}");
                let s = screen(&["header", q, "", "", "", "", "", "", "", "x"], 9);
                assert!(blocked(&p, &s), "{name}: {q}, footer");
            }
        }
        let custom = profile("custom");
        let not = |s: &Screen| !matches!(classify(&custom, s, None, None), Seen::Blocked(_));
        // Not menus: a list without highlight; a highlighted list (a quoted message); a
        // highlighted line that is no numbered choice; highlight in the middle of an item.
        let list = ["Plan:", "1. fix the tests", "2. run them", "> "];
        assert!(not(&screen(&list, 3)));
        let mut all = screen(&list, 3);
        all.highlighted = vec![
            String::new(),
            "1. fix the tests".into(),
            "2. run them".into(),
            String::new(),
        ];
        assert!(not(&all));
        assert!(not(&hl(&list, 0, "Plan:")));
        assert!(not(&hl(&list, 1, "         tests")));
        // Not questions: a busy line with `esc to cancel`, a question far from the cursor and
        // the bottom, a prompt.
        assert!(not(&screen(
            &["⠏ Thinking... (esc to cancel, 3s)", "> "],
            1
        )));
        let far = ["Continue? [y/N] y", "a", "b", "c", "d", "e", "> ", "footer"];
        assert!(not(&screen(&far, 6)));
        assert!(not(&screen(&["Type a task and press Enter.", "fake> "], 1)));
        // The delivery's own pasted draft asking a question is no question; an agent's
        // question after it still is.
        let s = screen(&["fake> do you want to proceed? [y/N]"], 0);
        assert!(!not(&s));
        assert_eq!(
            classify(&custom, &s, None, Some("do you want to proceed? [y/N]")),
            Seen::Ready
        );
        let s = screen(&["Allow this command? [y/N]", "fake> go on"], 1);
        assert!(matches!(
            classify(&custom, &s, None, Some("go on")),
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
