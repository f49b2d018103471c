//! A small POSIX-shell word splitter and a finder of destructive tmux commands in it.
//!
//! It is not a shell: it splits a command line into simple commands (at `;`, `&`, `|`, `&&`,
//! `||`, newlines and parentheses), honours single quotes, double quotes, backslashes and
//! `$'...'`, drops redirections and comments, and also splits the contents of `$(...)` and
//! backquotes (which a shell would run). Then each simple command is looked at: wrappers
//! (`sudo`, `env`, `nohup`, `timeout`, ...) and assignments are skipped, `sh -c`/`bash -c`
//! scripts and `eval` are split again (nesting is bounded), and `tmux` command lines are parsed
//! with their global options (`-L`, `-S`, ...), `;`-separated command sequences, `if-shell` and
//! `run-shell`. A word that only *mentions* `kill-pane` (`echo "tmux kill-pane"`,
//! `grep kill-pane f`) is an argument of another program and is not found.
//!
//! An abbreviation tmux would find ambiguous (`kill-s`) is taken as the most destructive
//! command it could mean.

use crate::oracle::Server;

/// How deep `sh -c`, `eval`, `$(...)` and tmux command strings are followed.
const MAX_DEPTH: usize = 8;

/// One destructive tmux command found in a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    /// `kill-pane`, `kill-window`, `kill-session`, `kill-server`, `respawn-pane -k` or
    /// `respawn-window -k`.
    pub command: &'static str,
    /// The `-t` values, in order.
    pub targets: Vec<String>,
    /// `-a`: every *other* pane/window/session.
    pub all_others: bool,
    pub server: Server,
    /// The tmux command's words (name and arguments).
    pub argv: Vec<String>,
}

/// Finds the destructive tmux commands in a shell command line. Never panics.
pub fn find_kills(src: &str) -> Vec<Kill> {
    let mut out = Vec::new();
    scan_shell(src, 0, &mut out);
    out
}

/// Splits `src` into simple commands (lists of words), including those inside `$(...)` and
/// backquotes. Never panics.
#[cfg(test)]
pub fn commands(src: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    split(src, 0, &mut out);
    out
}

fn split(src: &str, depth: usize, out: &mut Vec<Vec<String>>) {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let mut i = 0;
    let mut cmd: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut skip_word = false;
    let mut subs: Vec<String> = Vec::new();

    fn finish_word(word: &mut Option<String>, cmd: &mut Vec<String>, skip: &mut bool) {
        if let Some(w) = word.take() {
            if *skip {
                *skip = false;
            } else {
                cmd.push(w);
            }
        }
    }
    fn finish_cmd(
        word: &mut Option<String>,
        cmd: &mut Vec<String>,
        skip: &mut bool,
        out: &mut Vec<Vec<String>>,
    ) {
        finish_word(word, cmd, skip);
        *skip = false;
        if !cmd.is_empty() {
            out.push(std::mem::take(cmd));
        }
    }
    let text = |a: usize, b: usize| -> String { c[a.min(n)..b.min(n)].iter().collect() };

    while i < n {
        let ch = c[i];
        match ch {
            ' ' | '\t' | '\r' => {
                finish_word(&mut word, &mut cmd, &mut skip_word);
                i += 1;
            }
            '\n' | ';' | '|' | '&' | '(' | ')' => {
                finish_cmd(&mut word, &mut cmd, &mut skip_word, out);
                i += 1;
            }
            '<' | '>' => {
                if word
                    .as_deref()
                    .is_some_and(|w| !w.is_empty() && w.chars().all(|d| d.is_ascii_digit()))
                {
                    word = None;
                }
                finish_word(&mut word, &mut cmd, &mut skip_word);
                i += 1;
                while i < n && matches!(c[i], '<' | '>' | '&' | '|') {
                    i += 1;
                }
                skip_word = true;
            }
            '#' if word.is_none() => {
                while i < n && c[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                i += 1;
                while i < n && c[i] != '\'' {
                    w.push(c[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                word.get_or_insert_with(String::new);
                i += 1;
                while i < n && c[i] != '"' {
                    match c[i] {
                        '\\' if i + 1 < n && matches!(c[i + 1], '$' | '`' | '"' | '\\' | '\n') => {
                            if c[i + 1] != '\n'
                                && let Some(w) = word.as_mut()
                            {
                                w.push(c[i + 1]);
                            }
                            i += 2;
                        }
                        '$' if i + 1 < n && c[i + 1] == '(' => {
                            let end = close_paren(&c, i + 1);
                            subs.push(text(i + 2, end));
                            if let Some(w) = word.as_mut() {
                                w.push_str(&text(i, end + 1));
                            }
                            i = end + 1;
                        }
                        '`' => {
                            let end = close_backquote(&c, i + 1);
                            subs.push(text(i + 1, end));
                            if let Some(w) = word.as_mut() {
                                w.push_str(&text(i, end + 1));
                            }
                            i = end + 1;
                        }
                        other => {
                            if let Some(w) = word.as_mut() {
                                w.push(other);
                            }
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            '\\' => {
                if i + 1 < n {
                    if c[i + 1] != '\n' {
                        word.get_or_insert_with(String::new).push(c[i + 1]);
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
            '$' if i + 1 < n && c[i + 1] == '(' => {
                let end = close_paren(&c, i + 1);
                subs.push(text(i + 2, end));
                word.get_or_insert_with(String::new)
                    .push_str(&text(i, end + 1));
                i = end + 1;
            }
            '$' if i + 1 < n && c[i + 1] == '\'' => {
                let w = word.get_or_insert_with(String::new);
                i += 2;
                while i < n && c[i] != '\'' {
                    if c[i] == '\\' && i + 1 < n {
                        w.push(match c[i + 1] {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            other => other,
                        });
                        i += 2;
                    } else {
                        w.push(c[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            '`' => {
                let end = close_backquote(&c, i + 1);
                subs.push(text(i + 1, end));
                word.get_or_insert_with(String::new)
                    .push_str(&text(i, end + 1));
                i = end + 1;
            }
            other => {
                word.get_or_insert_with(String::new).push(other);
                i += 1;
            }
        }
    }
    finish_cmd(&mut word, &mut cmd, &mut skip_word, out);
    if depth < MAX_DEPTH {
        for s in subs {
            split(&s, depth + 1, out);
        }
    }
}

/// Index of the `)` closing the `(` at `open`, skipping quotes; `c.len()` if unterminated.
fn close_paren(c: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    let mut j = open;
    while j < c.len() {
        match c[j] {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j;
                }
            }
            '\\' => j += 1,
            '\'' => {
                j += 1;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
            }
            '"' => {
                j += 1;
                while j < c.len() && c[j] != '"' {
                    if c[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    c.len()
}

/// Index of the backquote closing one opened just before `from`; `c.len()` if unterminated.
fn close_backquote(c: &[char], from: usize) -> usize {
    let mut j = from;
    while j < c.len() && c[j] != '`' {
        if c[j] == '\\' {
            j += 1;
        }
        j += 1;
    }
    j.min(c.len())
}

fn scan_shell(src: &str, depth: usize, out: &mut Vec<Kill>) {
    let mut cmds = Vec::new();
    split(src, depth, &mut cmds);
    for words in cmds {
        scan_command(&words, depth, out);
    }
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Words that run the rest of the command line as a command (after their own options).
const WRAPPERS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "exec", "command",
    "builtin", "nohup", "sudo", "doas", "env", "nice", "ionice", "setsid", "stdbuf", "timeout",
    "xargs", "watch", "chronic", "unbuffer",
];
/// Wrapper options that take a value as the next word.
const WRAPPER_VALUE_OPTS: &[&str] = &["-u", "-g", "-n", "-C", "-h", "-p", "-U", "-c", "-s", "-k"];

fn scan_command(words: &[String], depth: usize, out: &mut Vec<Kill>) {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if is_assignment(w) {
            i += 1;
        } else if WRAPPERS.contains(&w) {
            i += 1;
            while i < words.len() && words[i].starts_with('-') && words[i] != "-" {
                if WRAPPER_VALUE_OPTS.contains(&words[i].as_str()) {
                    i += 1;
                }
                i += 1;
            }
            if w == "timeout" && i < words.len() {
                i += 1; // the duration
            }
        } else {
            break;
        }
    }
    let Some(argv0) = words.get(i) else { return };
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    match base {
        "tmux" => scan_tmux(&words[i + 1..], depth, out),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" => {
            let mut j = i + 1;
            let mut has_c = false;
            while j < words.len()
                && words[j].starts_with('-')
                && words[j] != "-"
                && words[j] != "--"
            {
                if !words[j].starts_with("--") && words[j].contains('c') {
                    has_c = true;
                }
                if words[j] == "-o" || words[j] == "+o" {
                    j += 1;
                }
                j += 1;
            }
            if has_c
                && depth < MAX_DEPTH
                && let Some(script) = words.get(j)
            {
                scan_shell(script, depth + 1, out);
            }
        }
        "eval" if depth < MAX_DEPTH => scan_shell(&words[i + 1..].join(" "), depth + 1, out),
        _ => {}
    }
}

/// Parses getopt-style flags: `with_value` letters take a value (rest of the word, or the next
/// word). Returns the flags (letter, value) and the index of the first positional argument.
fn getopt(args: &[String], with_value: &str) -> (Vec<(char, String)>, usize) {
    let mut flags = Vec::new();
    let mut j = 0;
    while j < args.len() {
        let a = args[j].as_str();
        if a == "--" {
            j += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let chars: Vec<char> = a.chars().skip(1).collect();
        let mut k = 0;
        while k < chars.len() {
            let ch = chars[k];
            if with_value.contains(ch) {
                let rest: String = chars[k + 1..].iter().collect();
                let val = if rest.is_empty() {
                    j += 1;
                    args.get(j).cloned().unwrap_or_default()
                } else {
                    rest
                };
                flags.push((ch, val));
                break;
            }
            flags.push((ch, String::new()));
            k += 1;
        }
        j += 1;
    }
    (flags, j.min(args.len()))
}

fn scan_tmux(args: &[String], depth: usize, out: &mut Vec<Kill>) {
    let (flags, first) = getopt(args, "LSfcT");
    let mut server = Server::Default;
    for (f, v) in flags {
        match f {
            'L' => server = Server::Name(v),
            'S' => server = Server::Socket(v.into()),
            'c' if depth < MAX_DEPTH => scan_shell(&v, depth + 1, out),
            _ => {}
        }
    }
    scan_tmux_sequence(&args[first..], &server, depth, out);
}

/// A tmux command sequence given as arguments: commands separated by a `;` argument, or by an
/// argument ending in an unescaped `;`.
fn scan_tmux_sequence(args: &[String], server: &Server, depth: usize, out: &mut Vec<Kill>) {
    let mut cur: Vec<String> = Vec::new();
    for a in args {
        if a == ";" {
            scan_tmux_command(&std::mem::take(&mut cur), server, depth, out);
        } else if let Some(stripped) = a.strip_suffix(';')
            && !stripped.ends_with('\\')
        {
            cur.push(stripped.to_string());
            scan_tmux_command(&std::mem::take(&mut cur), server, depth, out);
        } else {
            cur.push(a.clone());
        }
    }
    scan_tmux_command(&cur, server, depth, out);
}

/// A tmux command string (`if-shell` branches, `run-shell -C`): tmux's own language splits
/// into words and `;`-separated commands much like the shell does.
fn scan_tmux_string(s: &str, server: &Server, depth: usize, out: &mut Vec<Kill>) {
    if depth >= MAX_DEPTH {
        return;
    }
    let mut cmds = Vec::new();
    split(s, depth + 1, &mut cmds);
    for c in cmds {
        scan_tmux_command(&c, server, depth + 1, out);
    }
}

enum Kind {
    Kill(&'static str),
    Respawn(&'static str),
    IfShell,
    RunShell,
}

/// The tmux command a name (full, alias or unambiguous-enough prefix) denotes.
fn classify(name: &str) -> Option<Kind> {
    match name {
        "killp" => return Some(Kind::Kill("kill-pane")),
        "killw" => return Some(Kind::Kill("kill-window")),
        "respawnp" => return Some(Kind::Respawn("respawn-pane")),
        "respawnw" => return Some(Kind::Respawn("respawn-window")),
        "if" => return Some(Kind::IfShell),
        "run" => return Some(Kind::RunShell),
        _ => {}
    }
    if name.is_empty() {
        return None;
    }
    // Most destructive first, so an ambiguous abbreviation is taken as the worst it could be.
    for k in ["kill-server", "kill-session", "kill-window", "kill-pane"] {
        if k.starts_with(name) && name.starts_with('k') {
            return Some(Kind::Kill(k));
        }
    }
    if name.len() >= 4 {
        for r in ["respawn-window", "respawn-pane"] {
            if r.starts_with(name) {
                return Some(Kind::Respawn(r));
            }
        }
    }
    if name.len() >= 3 && "if-shell".starts_with(name) {
        return Some(Kind::IfShell);
    }
    if name.len() >= 4 && "run-shell".starts_with(name) {
        return Some(Kind::RunShell);
    }
    None
}

fn scan_tmux_command(words: &[String], server: &Server, depth: usize, out: &mut Vec<Kill>) {
    let Some(name) = words.first() else { return };
    let args = &words[1..];
    let Some(kind) = classify(name) else { return };
    match kind {
        Kind::Kill(command) | Kind::Respawn(command) => {
            let respawn = matches!(kind, Kind::Respawn(_));
            let (flags, _) = getopt(args, if respawn { "cet" } else { "t" });
            if respawn && !flags.iter().any(|(f, _)| *f == 'k') {
                return; // without -k, respawn only acts on a dead pane
            }
            out.push(Kill {
                command: match command {
                    "respawn-pane" => "respawn-pane -k",
                    "respawn-window" => "respawn-window -k",
                    other => other,
                },
                targets: flags
                    .iter()
                    .filter(|(f, _)| *f == 't')
                    .map(|(_, v)| v.clone())
                    .collect(),
                all_others: flags.iter().any(|(f, _)| *f == 'a'),
                server: server.clone(),
                argv: words.to_vec(),
            });
        }
        Kind::IfShell => {
            let (_, first) = getopt(args, "t");
            // The condition, then one or two tmux command strings.
            for branch in args[first..].iter().skip(1).take(2) {
                scan_tmux_string(branch, server, depth, out);
            }
        }
        Kind::RunShell => {
            let (flags, first) = getopt(args, "cdt");
            if let Some(cmd) = args.get(first) {
                if flags.iter().any(|(f, _)| *f == 'C') {
                    scan_tmux_string(cmd, server, depth, out);
                } else if depth < MAX_DEPTH {
                    scan_shell(cmd, depth + 1, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_words_and_commands() {
        assert_eq!(
            commands(r#"a 'b c' "d \"e\" $f" g\ h; i && j || k | l & m"#),
            vec![
                w(&["a", "b c", "d \"e\" $f", "g h"]),
                w(&["i"]),
                w(&["j"]),
                w(&["k"]),
                w(&["l"]),
                w(&["m"]),
            ]
        );
        assert_eq!(
            commands("x 2>/dev/null >&2 <in y # comment ; z"),
            vec![w(&["x", "y"])]
        );
        assert_eq!(commands("echo $'a\\'b'"), vec![w(&["echo", "a'b"])]);
        assert_eq!(
            commands("echo \"$(tmux kill-pane -t %1)\""),
            vec![
                w(&["echo", "$(tmux kill-pane -t %1)"]),
                w(&["tmux", "kill-pane", "-t", "%1"])
            ]
        );
    }

    fn found(src: &str) -> Vec<(&'static str, Vec<String>)> {
        find_kills(src)
            .into_iter()
            .map(|k| (k.command, k.targets))
            .collect()
    }

    #[test]
    fn finds_kills_where_a_shell_would_run_them() {
        let kp = |t: &str| ("kill-pane", vec![t.to_string()]);
        assert_eq!(found("tmux kill-pane -t %1"), vec![kp("%1")]);
        assert_eq!(found("tmux killp -t%1"), vec![kp("%1")]);
        assert_eq!(found("/usr/bin/tmux -L x kill-pane -t %1"), vec![kp("%1")]);
        assert_eq!(
            found("cd /x && tmux -S /tmp/s kill-pane -t '%1'"),
            vec![kp("%1")]
        );
        assert_eq!(
            found("true; tmux kill-pane -t %1 || echo no"),
            vec![kp("%1")]
        );
        assert_eq!(found("sh -c 'tmux kill-pane -t %1'"), vec![kp("%1")]);
        assert_eq!(found("bash -lc \"tmux kill-pane -t '%1'\""), vec![kp("%1")]);
        assert_eq!(
            found("sudo -u me env A=1 tmux kill-pane -t %1"),
            vec![kp("%1")]
        );
        assert_eq!(found("echo `tmux kill-pane -t %1`"), vec![kp("%1")]);
        assert_eq!(found("eval 'tmux kill-pane -t %1'"), vec![kp("%1")]);
        assert_eq!(
            found("tmux kill-pane -t %1 \\; kill-window -t @2"),
            vec![kp("%1"), ("kill-window", w(&["@2"]))]
        );
        assert_eq!(
            found("tmux kill-pane -t %1\\; kill-session -t 'my team'"),
            vec![kp("%1"), ("kill-session", w(&["my team"]))]
        );
        assert_eq!(found("tmux kill-server"), vec![("kill-server", vec![])]);
        assert_eq!(found("tmux kill-s"), vec![("kill-server", vec![])]);
        assert_eq!(
            found("tmux respawn-pane -k -t %4"),
            vec![("respawn-pane -k", w(&["%4"]))]
        );
        assert_eq!(found("tmux respawn-pane -t %4"), vec![]);
        assert_eq!(
            found("tmux if-shell -F '1' 'kill-pane -t %5' 'display x'"),
            vec![kp("%5")]
        );
        assert_eq!(
            found("tmux run-shell 'tmux kill-pane -t %6'"),
            vec![kp("%6")]
        );
        let k = &find_kills("tmux -S /tmp/sock kill-pane -a -t %1")[0];
        assert!(k.all_others);
        assert_eq!(k.server, Server::Socket("/tmp/sock".into()));
        assert_eq!(k.argv, w(&["kill-pane", "-a", "-t", "%1"]));
    }

    #[test]
    fn mentions_are_not_kills() {
        for src in [
            "echo \"tmux kill-pane\"",
            "echo tmux kill-pane -t %1",
            "grep kill-pane file",
            "grep -r 'tmux kill-server' .",
            "git commit -m 'tmux kill-session -t x'",
            "# tmux kill-server",
            "tmux list-panes -F '#{pane_id} kill-pane'",
            "tmux display-message 'kill-server'",
            "sh script.sh kill-pane",
            "cat <<< 'tmux kill-pane'",
        ] {
            assert_eq!(found(src), vec![], "{src}");
        }
    }

    proptest! {
        #[test]
        fn tokenizer_never_panics(s in "\\PC{0,200}") {
            let _ = commands(&s);
            let _ = find_kills(&s);
        }

        #[test]
        fn tokenizer_never_panics_on_shell_heavy_text(
            s in proptest::collection::vec(
                prop_oneof![
                    Just("'"), Just("\""), Just("\\"), Just("$("), Just(")"), Just("`"),
                    Just("$'"), Just(";"), Just("&&"), Just("|"), Just(" "), Just("\n"),
                    Just("tmux"), Just("kill-pane"), Just("-t"), Just("sh -c"), Just(">"),
                    Just("#"), Just("if-shell"), Just("\\;"), Just("-L"), Just("eval"),
                ],
                0..60,
            )
        ) {
            let s: String = s.concat();
            let _ = commands(&s);
            let _ = find_kills(&s);
        }

        #[test]
        fn a_single_quoted_word_round_trips(s in "[^']{0,40}") {
            let cmds = commands(&format!("x '{s}'"));
            prop_assert_eq!(cmds, vec![vec!["x".to_string(), s]]);
        }
    }
}
