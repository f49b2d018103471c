//! What a pane shows: its visible lines, the cursor row, and whether its process has exited
//! (with `remain-on-exit`, a dead pane keeps its last screen and its exit status).
//!
//! Several panes are read in one tmux invocation; each pane's block is introduced by a line
//! framed by a per-call random nonce, so pane output cannot forge another pane's block.
//!
//! The capture carries tmux's escape sequences (`capture-pane -e`): they are taken out of
//! the lines, and what a line shows in reverse video or on a background colour is kept apart
//! ([`Screen::highlighted`]), since a menu may mark its selected choice with nothing else.

use crate::model::is_tmux_id;

use super::Tmux;

/// The visible screen of one pane.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screen {
    /// The visible lines, top to bottom (as displayed, not joined).
    pub lines: Vec<String>,
    /// A few lines of history just above the visible ones (a dead pane's last output may have
    /// scrolled there).
    pub history: Vec<String>,
    /// The cursor row, counted from the top of the visible screen.
    pub cursor_y: usize,
    /// Whether the pane's process has exited (`#{pane_dead}`).
    pub dead: bool,
    /// Its exit status, when tmux knows it (`#{pane_dead_status}`).
    pub dead_status: Option<i32>,
    /// Whether the alternate screen is shown.
    pub alternate: bool,
    /// Per visible line, its characters shown in reverse video or on a background colour, the
    /// others blanked (so positions match `lines`), trailing blanks trimmed; empty for a line
    /// with none (and when the capture had no attributes).
    pub highlighted: Vec<String>,
}

impl Screen {
    /// The line the cursor is on.
    pub fn cursor_line(&self) -> &str {
        self.lines.get(self.cursor_y).map_or("", |s| s.as_str())
    }

    /// The characters of visible line `y` shown highlighted (see [`Screen::highlighted`]).
    pub fn highlighted_line(&self, y: usize) -> &str {
        self.highlighted.get(y).map_or("", |s| s.as_str())
    }

    /// The whole screen as one string, lines joined by `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The last `n` non-empty lines (for error messages).
    pub fn last_lines(&self, n: usize) -> Vec<String> {
        let mut v: Vec<String> = self
            .history
            .iter()
            .chain(&self.lines)
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let k = v.len().saturating_sub(n);
        v.drain(..k);
        v
    }
}

const HEADER: &str =
    "#{cursor_y}\t#{pane_dead}\t#{pane_dead_status}\t#{alternate_on}\t#{pane_height}";

/// Lines of history captured above the visible screen.
const HISTORY: usize = 20;

impl Tmux {
    /// The screens of several panes in one invocation (one by one if that fails, so a vanished
    /// pane does not hide the others). `None` for a pane that could not be read.
    pub fn capture_screens(&self, panes: &[&str]) -> Vec<Option<Screen>> {
        if panes.len() > 1 {
            let all = self.capture_batch(panes);
            if all.iter().all(Option::is_some) {
                return all;
            }
            return panes
                .iter()
                .map(|p| self.capture_batch(&[p]).pop().flatten())
                .collect();
        }
        self.capture_batch(panes)
    }

    fn capture_batch(&self, panes: &[&str]) -> Vec<Option<Screen>> {
        let nonce = format!("team-screen-{}", uuid::Uuid::new_v4().simple());
        let mut argv: Vec<String> = Vec::new();
        for (i, p) in panes.iter().enumerate() {
            if !is_tmux_id(p, '%') {
                return vec![None; panes.len()];
            }
            if i > 0 {
                argv.push(";".into());
            }
            argv.extend([
                "display-message".into(),
                "-p".into(),
                "-t".into(),
                p.to_string(),
                format!("{nonce}\t{i}\t{HEADER}"),
                ";".into(),
                "capture-pane".into(),
                "-p".into(),
                "-e".into(),
                "-S".into(),
                format!("-{HISTORY}"),
                "-t".into(),
                p.to_string(),
            ]);
        }
        match self.run(&argv) {
            Ok(out) if out.success => parse(&out.stdout, &nonce, panes.len()),
            _ => vec![None; panes.len()],
        }
    }
}

/// The attributes that mark a line's text as highlighted, as tmux's escape sequences set them
/// (tmux writes only changes, so they carry over from one line to the next).
#[derive(Debug, Clone, Copy, Default)]
struct Attrs {
    reverse: bool,
    background: bool,
}

impl Attrs {
    /// Applies the parameters of one SGR sequence (`ESC [ params m`).
    fn apply(&mut self, params: &str) {
        let ps: Vec<&str> = params.split(';').collect();
        let mut i = 0;
        while i < ps.len() {
            let p = ps[i];
            // `38:5:n`, `48:2::r:g:b`: one parameter with its sub-parameters.
            let colon = p.contains(':');
            let code: u32 = p.split(':').next().unwrap_or("").parse().unwrap_or(0);
            match code {
                0 => *self = Attrs::default(),
                7 => self.reverse = true,
                27 => self.reverse = false,
                40..=47 | 100..=107 => self.background = true,
                49 => self.background = false,
                38 | 48 | 58 => {
                    if code == 48 {
                        self.background = true;
                    }
                    if !colon {
                        // `38;5;n` or `38;2;r;g;b`: skip the colour's own parameters.
                        i += match ps.get(i + 1) {
                            Some(&"5") => 2,
                            Some(&"2") => 4,
                            _ => 0,
                        };
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn on(&self) -> bool {
        self.reverse || self.background
    }
}

/// Takes tmux's escape sequences out of a captured line: the plain text, and the same text with
/// only its highlighted characters kept (others blanked). `attrs` carries over between lines.
fn strip_escapes(line: &str, attrs: &mut Attrs) -> (String, String) {
    let mut plain = String::with_capacity(line.len());
    let mut marked = String::new();
    let mut any = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            plain.push(c);
            if attrs.on() && !c.is_whitespace() {
                any = true;
                marked.push(c);
            } else {
                marked.push(' ');
            }
            continue;
        }
        match chars.next() {
            // CSI: parameters, then a final byte; only SGR (`m`) matters.
            Some('[') => {
                let mut params = String::new();
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        if c == 'm' {
                            attrs.apply(&params);
                        }
                        break;
                    }
                    params.push(c);
                }
            }
            // OSC (a hyperlink): up to BEL or ESC `\`.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    // tmux trims a line's trailing blanks, but not those before a closing sequence.
    let plain = plain.trim_end_matches(' ').to_owned();
    let marked = if any {
        marked.trim_end().to_owned()
    } else {
        String::new()
    };
    (plain, marked)
}

/// Parses the output of a batch capture (pure).
pub fn parse(out: &str, nonce: &str, n: usize) -> Vec<Option<Screen>> {
    let mut res: Vec<Option<Screen>> = vec![None; n];
    let mut heights: Vec<usize> = vec![0; n];
    let mut cur: Option<usize> = None;
    let mut attrs = Attrs::default();
    // Per pane, the highlighted text of every captured line (history included).
    let mut marks: Vec<Vec<String>> = vec![Vec::new(); n];
    // Every line tmux prints ends with a newline: the last one ends the output, it does not
    // start an empty line (blank screen lines are real lines and are kept).
    let out = out.strip_suffix('\n').unwrap_or(out);
    for line in out.split('\n') {
        if let Some(rest) = line.strip_prefix(nonce).and_then(|r| r.strip_prefix('\t')) {
            let f: Vec<&str> = rest.split('\t').collect();
            cur = None;
            if f.len() == 6
                && let Ok(i) = f[0].parse::<usize>()
                && i < n
                && res[i].is_none()
            {
                heights[i] = f[5].parse().unwrap_or(0);
                res[i] = Some(Screen {
                    lines: Vec::new(),
                    history: Vec::new(),
                    cursor_y: f[1].parse().unwrap_or(0),
                    dead: f[2] == "1",
                    dead_status: f[3].parse().ok(),
                    alternate: f[4] == "1",
                    highlighted: Vec::new(),
                });
                cur = Some(i);
                attrs = Attrs::default();
            }
            continue;
        }
        if let Some(i) = cur
            && let Some(s) = res[i].as_mut()
        {
            let (plain, marked) = strip_escapes(line, &mut attrs);
            s.lines.push(plain);
            marks[i].push(marked);
        }
    }
    // The lines above the last `pane_height` are history.
    for ((s, h), mut marked) in res.iter_mut().zip(heights).zip(marks) {
        let Some(s) = s else { continue };
        if h > 0 && s.lines.len() > h {
            let visible = s.lines.split_off(s.lines.len() - h);
            s.history = std::mem::replace(&mut s.lines, visible);
            marked.drain(..marked.len() - h);
        }
        // Only a screen with some highlight keeps the list.
        if marked.iter().any(|m| !m.is_empty()) {
            s.highlighted = marked;
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_at_the_end_of_a_block_are_screen_lines() {
        // A pane (height 3) with one history line and blank lines under its cursor, then
        // another pane: the first block's blank lines are not dropped, so the cursor row still
        // points at the prompt.
        let n = "N2";
        let out = format!("{n}\t0\t0\t0\t\t0\t3\nold\nfake>\n\n\n{n}\t1\t0\t0\t\t0\t1\nx\n");
        let s = parse(&out, n, 2);
        let a = s[0].as_ref().unwrap();
        assert_eq!(a.history, vec!["old".to_string()]);
        assert_eq!(
            a.lines,
            vec!["fake>".to_string(), String::new(), String::new()]
        );
        assert_eq!(a.cursor_line(), "fake>");
        assert_eq!(s[1].as_ref().unwrap().lines, vec!["x".to_string()]);
    }

    /// tmux 3.3a's `capture-pane -e`: attributes carry over lines (the reset of a reverse
    /// line comes at the start of the next), trailing blanks before a sequence are trimmed.
    #[test]
    fn escapes_are_taken_out_and_highlight_kept_apart() {
        let n = "N3";
        let out = format!(
            "{n}\t0\t0\t0\t\t0\t5\nWould you like?\n\x1b[7m 1. Yes, proceed   \n\x1b[0m\x1b[39m\x1b[49m  2. No\n\x1b[44mbg\x1b[49m tail\n\x1b[1m\x1b[38;5;3mbold\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x07 \x1b[48;2;1;2;3mrgb\x1b[38;2;1;2;3m!\n{n}\t1\t0\t0\t\t0\t1\nplain\n"
        );
        let s = parse(&out, n, 2);
        let a = s[0].as_ref().unwrap();
        assert_eq!(
            a.lines,
            vec![
                "Would you like?",
                " 1. Yes, proceed",
                "  2. No",
                "bg tail",
                "bold link rgb!"
            ]
        );
        assert_eq!(
            a.highlighted,
            vec!["", " 1. Yes, proceed", "", "bg", "          rgb!"]
        );
        assert_eq!(a.highlighted_line(1), " 1. Yes, proceed");
        // A block starts with no attributes, and a screen without highlight keeps none.
        let b = s[1].as_ref().unwrap();
        assert_eq!(b.lines, vec!["plain"]);
        assert!(b.highlighted.is_empty());
        // `38;5;n` and `38;2;...` are foreground colours, whatever their numbers.
        let mut at = Attrs::default();
        at.apply("38;5;48");
        at.apply("38;2;7;48;41");
        assert!(!at.on());
        at.apply("48:5:3");
        assert!(at.on());
        at.apply("");
        assert!(!at.on());
    }

    #[test]
    fn parses_blocks_and_refuses_forged_headers() {
        let n = "N1";
        let out = format!(
            "{n}\t0\t1\t0\t\t0\t2\nold\nhello\n> typed\n{n}\t1\t0\t1\t2\t1\t2\nbye\nX{n}\t0\t5\t1\t1\t1\n"
        );
        let s = parse(&out, n, 2);
        let a = s[0].as_ref().unwrap();
        assert_eq!(a.cursor_line(), "> typed");
        assert_eq!(a.history, vec!["old".to_string()]);
        assert_eq!(a.last_lines(3)[0], "old");
        assert!(!a.dead);
        let b = s[1].as_ref().unwrap();
        assert!(b.dead && b.alternate);
        assert_eq!(b.dead_status, Some(2));
        // A line that does not start with the nonce is content, not a header.
        assert_eq!(
            b.lines,
            vec!["bye".to_string(), format!("X{n}\t0\t5\t1\t1\t1")]
        );
        assert_eq!(b.last_lines(1), vec![format!("X{n}\t0\t5\t1\t1\t1")]);
    }
}
