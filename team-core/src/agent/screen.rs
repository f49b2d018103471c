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

/// Classifies `s`. `extra_ready` is the team's `--ready-pattern`, which must also show.
pub fn classify<'p>(p: &'p Profile, s: &Screen, extra_ready: Option<&str>) -> Seen<'p> {
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
        assert_eq!(classify(&aider, &s, None), Seen::Waiting);
        let s = screen(&["aider v0", "> "], 1);
        assert_eq!(classify(&aider, &s, None), Seen::Ready);
    }

    #[test]
    fn blocking_screens_win_over_prompts() {
        let codex = profile("codex");
        let s = screen(&["Welcome to Codex", "1. Sign in with ChatGPT", "› "], 2);
        match classify(&codex, &s, None) {
            Seen::Blocked(b) => assert_eq!(b.name, "sign-in"),
            other => panic!("{other:?}"),
        }
        let gemini = profile("gemini");
        let s = screen(&["Do you trust this folder?", "● 1. Trust folder"], 1);
        assert!(matches!(classify(&gemini, &s, None), Seen::Blocked(b) if b.name == "trust"));
        let mut dead = screen(&["x"], 0);
        dead.dead = true;
        assert_eq!(classify(&gemini, &dead, None), Seen::Dead);
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
