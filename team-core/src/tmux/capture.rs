//! What a pane shows: its visible lines, the cursor row, and whether its process has exited
//! (with `remain-on-exit`, a dead pane keeps its last screen and its exit status).
//!
//! Several panes are read in one tmux invocation; each pane's block is introduced by a line
//! framed by a per-call random nonce, so pane output cannot forge another pane's block.

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
}

impl Screen {
    /// The line the cursor is on.
    pub fn cursor_line(&self) -> &str {
        self.lines.get(self.cursor_y).map_or("", |s| s.as_str())
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

/// Parses the output of a batch capture (pure).
pub fn parse(out: &str, nonce: &str, n: usize) -> Vec<Option<Screen>> {
    let mut res: Vec<Option<Screen>> = vec![None; n];
    let mut heights: Vec<usize> = vec![0; n];
    let mut cur: Option<usize> = None;
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
                });
                cur = Some(i);
            }
            continue;
        }
        if let Some(i) = cur
            && let Some(s) = res[i].as_mut()
        {
            s.lines.push(line.to_string());
        }
    }
    // The lines above the last `pane_height` are history.
    for (s, h) in res.iter_mut().zip(heights) {
        let Some(s) = s else { continue };
        if h > 0 && s.lines.len() > h {
            let visible = s.lines.split_off(s.lines.len() - h);
            s.history = std::mem::replace(&mut s.lines, visible);
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
