//! A fake agent CLI for the integration tests: it behaves, on a real tmux pane, like the agent
//! CLIs behave as workers (see the README's agent sections), chosen by flags:
//!
//! - `--alt`: draws on the alternate screen;
//! - `--late MS`: the input prompt appears only after MS;
//! - `--first-screen MS`: a prompt-looking input box shows for MS, then is replaced by the
//!   `--screen` (a short-lived first screen);
//! - `--screen trust|signin|approval`: a blocking screen; on the trust screen digits and Enter
//!   act as menu choices (as in the real CLIs); `approval` is a command-approval menu whose
//!   cursor line is `› 1. Yes, proceed (y)` (as Codex draws it), with no bracketed paste, so a
//!   paste's letters arrive as keys: `y`, `a` or Enter approve (logged on screen);
//! - `--approval-after MS`: MS after the start, the approval menu replaces the screen;
//! - `--approval-style reverse|codex|yn`: how the approval asks: `reverse`, a menu whose
//!   selected choice has no marker, only reverse video, and no question text; `codex`, the same
//!   under Codex's question and footer (`Would you like to run ...`, `Press enter to confirm or
//!   esc to cancel`); `yn`, no menu, the cursor after `Allow this command? [y/N] `;
//! - `--approval-above`: the approval menu is drawn above the input line while the agent
//!   still works (`Working on:` stays, the cursor stays on `fake> `), as an agent that asks
//!   about a tool call under its busy line does (`--approval-after` then counts from the
//!   first prompt submitted); its keys answer the menu;
//! - `--approval-after-paste MS`: MS after the end of the first bracketed paste, the approval
//!   menu replaces the screen (its keys answer it);
//! - `--separate-enter`: an Enter that arrives within 40 ms of typed text is ignored (the text
//!   stays in the input line, unsent), as the real CLIs do with a paste and its Enter;
//! - `--exit-at-start CODE`: prints an error and exits at once with CODE;
//! - `--die-after MS`: exits with status 7 after MS;
//! - `--exit-json`: before exiting, writes `exit.json` beside `$TEAM_INBOX` with
//!   `$TEAM_INCARNATION`, as the pane's supervisor does;
//! - `--record FILE`: every byte it receives is appended to FILE (tests assert nothing was
//!   typed into a blocking screen);
//! - `--received FILE`: every submitted prompt is appended to FILE as a line;
//! - `--done-after MS`: MS after a prompt is submitted, the work is done: the screen is
//!   redrawn without the `Working on:` line (as an agent's busy indicator goes away);
//! - any other argument is a prompt given at launch: it is submitted at once.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

struct Opts {
    alt: bool,
    late: u64,
    first_screen: u64,
    screen: Option<String>,
    approval_after: Option<u64>,
    approval_style: Option<String>,
    approval_above: bool,
    approval_after_paste: Option<u64>,
    separate_enter: bool,
    exit_at_start: Option<i32>,
    die_after: Option<u64>,
    exit_json: bool,
    record: Option<String>,
    done_after: Option<u64>,
    received: Option<String>,
    prompt: Vec<String>,
}

fn parse() -> Opts {
    let mut o = Opts {
        alt: false,
        late: 0,
        first_screen: 0,
        screen: None,
        approval_after: None,
        approval_style: None,
        approval_above: false,
        approval_after_paste: None,
        separate_enter: false,
        exit_at_start: None,
        die_after: None,
        exit_json: false,
        record: None,
        done_after: None,
        received: None,
        prompt: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("flag value");
        match a.as_str() {
            "--alt" => o.alt = true,
            "--late" => o.late = val().parse().expect("ms"),
            "--first-screen" => o.first_screen = val().parse().expect("ms"),
            "--screen" => o.screen = Some(val()),
            "--approval-after" => o.approval_after = Some(val().parse().expect("ms")),
            "--approval-style" => o.approval_style = Some(val()),
            "--approval-above" => o.approval_above = true,
            "--approval-after-paste" => {
                o.approval_after_paste = Some(val().parse().expect("ms"));
            }
            "--separate-enter" => o.separate_enter = true,
            "--exit-at-start" => o.exit_at_start = Some(val().parse().expect("code")),
            "--die-after" => o.die_after = Some(val().parse().expect("ms")),
            "--exit-json" => o.exit_json = true,
            "--record" => o.record = Some(val()),
            "--received" => o.received = Some(val()),
            "--done-after" => o.done_after = Some(val().parse().expect("ms")),
            _ => o.prompt.push(a),
        }
    }
    o
}

fn out(s: &str) {
    let mut so = std::io::stdout();
    let _ = so.write_all(s.as_bytes());
    let _ = so.flush();
}

fn append(path: &Option<String>, bytes: &[u8]) {
    if let Some(p) = path {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .expect("open record file");
        f.write_all(bytes).expect("record");
    }
}

/// A command-approval menu, the cursor on its selected first choice (or drawn in `style`).
fn approval_menu(style: Option<&str>) {
    clear();
    out(">_ Fake Agent (v0.1)\r\n\r\n");
    match style {
        Some("reverse" | "codex") => {
            let codex = style == Some("codex");
            if codex {
                out("Would you like to run the following command?\r\n\r\n");
            } else {
                out("Fake wants to run a command\r\n\r\n");
            }
            out("  $ rm -rf build/\r\n\r\n\x1b[?2004l");
            out("\x1b[7m 1. Yes, proceed          \x1b[0m\r\n");
            out("  2. No, and tell Fake what to do differently\r\n\r\n");
            if codex {
                out("Press enter to confirm or esc to cancel");
            } else {
                out("(arrows move)");
            }
            return;
        }
        Some("yn") => {
            out("Fake wants to run: rm -rf build/\r\n\r\n\x1b[?2004l");
            out("Allow this command? [y/N] ");
            return;
        }
        _ => {}
    }
    out("Would you like to run the following command?\r\n\r\n  $ rm -rf build\r\n\r\n");
    out("\x1b[?2004l");
    out("› 1. Yes, proceed (y)\r\n");
    out("  2. Yes, and don't ask again for this command (a)\r\n");
    out("  3. No, and tell Fake what to do differently (esc)");
    out("\x1b[2A\r");
}

fn clear() {
    out("\x1b[2J\x1b[H");
}

fn prompt_line(buf: &str) {
    out(&format!("\r\x1b[2Kfake> {buf}"));
}

fn main() {
    let o = parse();
    if let Some(code) = o.exit_at_start {
        out("fake-agent: Unable to connect to the fake service (ENOTFOUND)\r\n");
        // As the real CLIs do, a moment passes between the message and the exit (output
        // written just before a pty closes can be lost).
        std::thread::sleep(Duration::from_millis(300));
        exit(&o, code);
    }
    let _ = std::process::Command::new("stty")
        .args(["raw", "-echo"])
        .stdin(std::process::Stdio::inherit())
        .status();
    if o.alt {
        out("\x1b[?1049h");
    }
    clear();
    // Every byte received, with its arrival time.
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut b = [0u8; 4096];
        loop {
            match stdin.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send((Instant::now(), b[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let start = Instant::now();
    let die_at = o.die_after.map(|ms| start + Duration::from_millis(ms));
    let mut approval_at = o
        .approval_after
        .filter(|_| !o.approval_above)
        .map(|ms| start + Duration::from_millis(ms));
    let mut asked = false;
    out(">_ Fake Agent (v0.1)\r\n\r\n");
    if o.first_screen > 0 {
        out("Ask the fake agent to do anything\r\n");
        prompt_line("");
    }
    let ready_at = start + Duration::from_millis(o.late.max(o.first_screen));
    let mut shown = false;
    let mut blocking = false;
    let mut buf = String::new();
    let mut last_text: Option<Instant> = None;
    let mut pasting = false;
    let mut pending_esc: Vec<u8> = Vec::new();
    let mut busy_until: Option<Instant> = None;
    let work = |o: &Opts| {
        o.done_after
            .map(|ms| Instant::now() + Duration::from_millis(ms))
    };
    loop {
        if busy_until.is_some_and(|t| Instant::now() >= t) {
            busy_until = None;
            clear();
            out(">_ Fake Agent (v0.1)\r\n\r\nDone.\r\n\r\n");
            prompt_line(&buf);
        }
        if let Some(d) = die_at
            && Instant::now() >= d
        {
            out("\r\nfake-agent: lost the connection, exiting\r\n");
            exit(&o, 7);
        }
        if shown
            && let Some(t) = approval_at
            && Instant::now() >= t
        {
            approval_at = None;
            blocking = true;
            if o.approval_above {
                clear();
                out(">_ Fake Agent (v0.1)\r\n\r\nWorking on: the task\r\n\r\n");
                out("Would you like to run the following command?\r\n  $ rm -rf build\r\n");
                out(
                    "› 1. Yes, proceed (y)\r\n  2. No, and tell Fake what to do differently\r\n\r\n",
                );
                prompt_line("");
            } else {
                busy_until = None;
                approval_menu(o.approval_style.as_deref());
            }
        }
        if !shown && Instant::now() >= ready_at {
            shown = true;
            clear();
            out(">_ Fake Agent (v0.1)\r\n\r\n");
            match o.screen.as_deref() {
                Some("trust") => {
                    blocking = true;
                    out("Do you trust the files in this folder?\r\n\r\n");
                    out("> 1. Yes, proceed\r\n  2. No, exit\r\n\r\nPress enter to continue");
                }
                Some("approval") => {
                    blocking = true;
                    approval_menu(o.approval_style.as_deref());
                }
                Some("signin") => {
                    blocking = true;
                    out(
                        "Sign in to Fake\r\n\r\n  1. Sign in with your browser\r\n  2. Use an API key\r\n\r\nPress enter to continue",
                    );
                }
                _ => {
                    out("Type a task and press Enter.\r\n\r\n\x1b[?2004h");
                    if !o.prompt.is_empty() {
                        submit(&o, &o.prompt.join(" "));
                        busy_until = work(&o);
                    }
                    prompt_line("");
                }
            }
        }
        let Ok((at, bytes)) = rx.recv_timeout(Duration::from_millis(20)) else {
            continue;
        };
        append(&o.record, &bytes);
        if blocking {
            // Menu keys act: a digit or Enter answers the question (recorded above).
            if bytes.iter().any(|b| b.is_ascii_digit() || *b == b'\r') {
                out("\r\n(answered)\r\n");
            } else if bytes.iter().any(|b| matches!(b, b'y' | b'a')) {
                out("\r\n(approved)\r\n");
            }
            continue;
        }
        pending_esc.extend_from_slice(&bytes);
        let data = std::mem::take(&mut pending_esc);
        let mut i = 0;
        while i < data.len() {
            if data[i..].starts_with(b"\x1b[200~") {
                pasting = true;
                i += 6;
                continue;
            }
            if data[i..].starts_with(b"\x1b[201~") {
                pasting = false;
                i += 6;
                if let Some(ms) = o.approval_after_paste
                    && !asked
                {
                    asked = true;
                    approval_at = Some(Instant::now() + Duration::from_millis(ms));
                }
                continue;
            }
            if data[i] == 0x1b && data.len() - i < 6 {
                pending_esc.extend_from_slice(&data[i..]);
                break;
            }
            let c = data[i];
            i += 1;
            if c == b'\r' && !pasting {
                let too_soon =
                    last_text.is_some_and(|t| at.duration_since(t) < Duration::from_millis(40));
                if o.separate_enter && too_soon {
                    continue; // stays unsent, as in the real CLIs
                }
                if !buf.is_empty() {
                    let text = std::mem::take(&mut buf);
                    submit(&o, &text);
                    busy_until = work(&o);
                    if o.approval_above && !asked {
                        asked = true;
                        approval_at = o
                            .approval_after
                            .map(|ms| Instant::now() + Duration::from_millis(ms));
                    }
                    prompt_line("");
                }
                continue;
            }
            if c == 0x7f {
                buf.pop();
            } else if c >= 0x20 || c >= 0x80 {
                buf.push(c as char);
            }
            last_text = Some(at);
            prompt_line(&buf);
        }
        // Non-ASCII text arrives as UTF-8 bytes; keep the buffer readable for the record.
        if !buf.is_ascii() {
            buf = String::from_utf8_lossy(&buf.chars().map(|c| c as u32 as u8).collect::<Vec<_>>())
                .into_owned();
        }
    }
}

/// Exits with `code`, first writing `exit.json` as the supervisor would (with `--exit-json`).
fn exit(o: &Opts, code: i32) -> ! {
    if o.exit_json
        && let (Ok(inbox), Ok(inc)) = (
            std::env::var("TEAM_INBOX"),
            std::env::var("TEAM_INCARNATION"),
        )
        && let Some(dir) = std::path::Path::new(&inbox).parent()
    {
        let body = format!(r#"{{"incarnation":"{inc}","code":{code},"signal":null}}"#);
        let _ = std::fs::write(dir.join("exit.json"), body);
    }
    std::process::exit(code);
}

fn submit(o: &Opts, text: &str) {
    append(&o.received, format!("{text}\n").as_bytes());
    out(&format!(
        "\r\n\r\nWorking on: {}\r\n\r\n",
        text.chars().take(40).collect::<String>()
    ));
}
