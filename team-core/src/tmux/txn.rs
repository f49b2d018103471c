//! The authority transaction: check and effect inside the tmux server in one step.
//!
//! ```text
//! if-shell -F -t <pane> <condition on the full incarnation + tags>
//!          '<effect> ; display-message -p <receipt>'  'display-message -p <reject>'
//! ```
//!
//! tmux expands the condition and runs the chosen command list in the same pass of its command
//! queue, so nothing can change the pane between check and effect. Success counts only when
//! the exact random receipt comes back; no receipt means "unknown", never "done". Commands
//! inside the string are separated by a plain ` ; ` (an escaped `\;` would reach tmux as a
//! literal argument). Several transactions can share one tmux invocation.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **New panes are tagged in the same step that creates them**: `split-window` (without `-d`)
//!   makes the new pane current, so the `set-option -p` calls that follow in the same command
//!   list land on it; `last-pane` then gives focus back.
//!
//! - **Scale-up in one server-side step**: `Txn::spawn_chain` proves the source pane once, then
//!   splits the source and each new pane in turn, tagging each (`@team_owner`, `@team_worker`,
//!   `@team_incarnation`, `@team_workspace`, `@team_name`, `@team_op`) in the same command list;
//!   even shares via `-l N%`. Each pane's start command is the supervisor's argv with `--op
//!   <op>` in it (tmux runs it without a shell: see `ops::up::spawn::start`), so the op id is
//!   visible in `#{pane_start_command}` from the first instant. A typical `up N` is two tmux
//!   calls whatever N is.
//!
//! - **tmux messages are at most 16 KiB**: transaction batches are split to fit
//!   (`txn::MAX_ARGV_BYTES`), so 500 proven kills take about 25 invocations, not 500.

use crate::error::{Error, Result};
use crate::model::{PaneIncarnation, is_tmux_id};

use super::Tmux;
use super::quote::{check_literal_text, is_format_safe, quote};

/// A condition that must hold, evaluated by tmux against a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    target: String,
    conds: Vec<String>,
}

fn eq(var: &str, val: &str) -> Result<String> {
    if !is_format_safe(val) {
        return Err(Error::Internal(format!(
            "value {val:?} for {var} cannot be embedded in a tmux condition"
        )));
    }
    Ok(format!("#{{==:#{{{var}}},{val}}}"))
}

impl Guard {
    /// A guard on a pane's full incarnation and on tag values (`("@team_owner", id)`, ...).
    /// With `alive`, the pane's process must also still run (`pane_dead` is 0).
    pub fn pane(inc: &PaneIncarnation, tags: &[(&str, &str)], alive: bool) -> Result<Guard> {
        inc.validate_shape().map_err(Error::Internal)?;
        let mut conds = vec![
            eq("pane_id", &inc.pane_id)?,
            eq("pane_pid", &inc.pane_pid.to_string())?,
            eq("session_id", &inc.session_id)?,
            eq("window_id", &inc.window_id)?,
            eq("pid", &inc.server_pid.to_string())?,
            eq("start_time", &inc.server_start.to_string())?,
        ];
        if alive {
            conds.push(eq("pane_dead", "0")?);
        }
        for (k, v) in tags {
            conds.push(eq(k, v)?);
        }
        Ok(Guard {
            target: inc.pane_id.clone(),
            conds,
        })
    }

    /// Also requires that the pane's terminal is not held by a shell, a terminal client or a
    /// program that runs the lines it reads (a pager, an editor: `process::LINE_RUNNERS`, Debian's
    /// alternatives' names `pager`, `editor`, `sensible-editor` included, since tmux sees only
    /// `argv[0]`) in its foreground (`#{pane_current_command}`: an interactive shell takes the
    /// foreground, and so does a pager it starts), which would run or forward what is typed.
    /// For typing only.
    pub fn typing_reaches_the_program(mut self) -> Guard {
        self.conds.push(format!(
            "#{{?#{{m/r:^-?({}|{}|tmux|screen|ssh|mosh-client|telnet|su|sudo|login)([.][a-z0-9]+)?$,#{{pane_current_command}}}},0,1}}",
            crate::process::SHELL_NAMES.join("|"),
            crate::process::LINE_RUNNERS.join("|")
        ));
        self
    }

    /// A guard on a session: its id, the server's identity and its session owner tag.
    pub fn session(
        session_id: &str,
        server_pid: u32,
        server_start: u64,
        session_owner: &str,
    ) -> Result<Guard> {
        if !is_tmux_id(session_id, '$') {
            return Err(Error::Internal(format!("bad session id {session_id:?}")));
        }
        Ok(Guard {
            target: session_id.to_string(),
            conds: vec![
                eq("session_id", session_id)?,
                eq("pid", &server_pid.to_string())?,
                eq("start_time", &server_start.to_string())?,
                eq("@team_session_owner", session_owner)?,
            ],
        })
    }

    /// The tmux format that is "1" exactly when every condition holds.
    pub fn condition(&self) -> String {
        let mut it = self.conds.iter().rev();
        let mut acc = it.next().cloned().unwrap_or_else(|| "0".into());
        for c in it {
            acc = format!("#{{&&:{c},{acc}}}");
        }
        acc
    }

    /// The target the guard is evaluated against.
    pub fn target(&self) -> &str {
        &self.target
    }
}

/// One transaction: a guard and the commands to run when it holds.
#[derive(Debug, Clone)]
pub struct Txn {
    guard: Guard,
    commands: Vec<String>,
    receipt: String,
    reject: String,
}

/// What came back for one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOutcome {
    /// The receipt came back: the effect ran. Holds the output lines the effect printed.
    Done(Vec<String>),
    /// The guard did not hold: nothing ran.
    Refused,
    /// Neither came back: the effect may or may not have run.
    Unknown(String),
}

/// What the text of a spawn chain's [`TxnOutcome::Unknown`] says, as far as the tools act on
/// it (only this module reads tmux's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitFailure {
    /// A `split-window` found no room for another pane in its window ("no space for new
    /// pane"): the chain stopped there, and the rest can go in a new window.
    NoSpace,
    /// Anything else: nothing is known of why.
    Other,
}

impl SplitFailure {
    /// Reads the text of an unknown outcome.
    pub fn of(text: &str) -> SplitFailure {
        if text.contains("no space for new pane") {
            SplitFailure::NoSpace
        } else {
            SplitFailure::Other
        }
    }
}

/// What a new pane is started with.
#[derive(Debug, Clone, Default)]
pub struct NewPane {
    /// The shell command the pane runs (through tmux's `default-shell -c`), unless `argv`
    /// is given.
    pub command: String,
    /// The program and its arguments, run by tmux directly (no shell) when not empty.
    pub argv: Vec<String>,
    /// The pane's working directory (`-c`, taken literally: never tmux format syntax); the
    /// client's when unset.
    pub start_dir: Option<String>,
    /// Environment for the pane's process (`-e`).
    pub env: Vec<(String, String)>,
    /// Tags set on the new pane in the same step (pane options).
    pub tags: Vec<(String, String)>,
    /// Split side by side (`-h`) instead of stacked.
    pub horizontal: bool,
}

impl NewPane {
    /// What follows a `split-window`/`new-window`'s own flags: ` -c <dir>`, each ` -e K=V`,
    /// then the command: one shell string, or (with `argv`) each word, which tmux then runs
    /// without a shell.
    fn launch(&self) -> String {
        let mut s = String::new();
        if let Some(d) = &self.start_dir {
            // tmux expands formats in `-c` (`#(cmd)` would run `cmd`): every `#` doubled reads
            // back as itself.
            s.push_str(&format!(" -c {}", quote(&d.replace('#', "##"))));
        }
        for (k, v) in &self.env {
            s.push_str(&format!(" -e {}", quote(&format!("{k}={v}"))));
        }
        if self.argv.is_empty() {
            s.push(' ');
            s.push_str(&quote(&self.command));
        } else {
            for w in &self.argv {
                s.push(' ');
                s.push_str(&quote(w));
            }
        }
        s
    }
}

/// The `-P -F` format that reports a new pane's incarnation.
pub(crate) const NEW_PANE_FORMAT: &str =
    "new-pane\t#{pane_id}\t#{pane_pid}\t#{session_id}\t#{window_id}\t#{pid}\t#{start_time}";

impl Txn {
    fn new(guard: Guard, commands: Vec<String>) -> Txn {
        let id = uuid::Uuid::new_v4().simple().to_string();
        Txn {
            guard,
            commands,
            receipt: format!("team-ok-{id}"),
            reject: format!("team-no-{id}"),
        }
    }

    /// Kills the guarded pane.
    pub fn kill_pane(guard: Guard) -> Txn {
        let t = quote(&guard.target);
        Txn::new(guard, vec![format!("kill-pane -t {t}")])
    }

    /// Types `text` literally into the guarded pane, then presses Enter.
    pub fn send_text(guard: Guard, text: &str) -> Result<Txn> {
        check_literal_text(text).map_err(Error::Usage)?;
        let t = quote(&guard.target);
        Ok(Txn::new(
            guard,
            vec![
                format!("send-keys -t {t} -l -- {}", quote(text)),
                format!("send-keys -t {t} Enter"),
            ],
        ))
    }

    /// Pastes `text` into the guarded pane through a one-shot buffer, as a terminal paste
    /// (with `bracketed`, wrapped in bracketed-paste codes when the program asked for them).
    /// No key is pressed: submitting is a separate [`Txn::send_key`], so a program that
    /// ignores an Enter arriving with a paste still gets one of its own.
    pub fn paste_text(guard: Guard, text: &str, bracketed: bool) -> Result<Txn> {
        check_literal_text(text).map_err(Error::Usage)?;
        let t = quote(&guard.target);
        let buf = format!("team-paste-{}", uuid::Uuid::new_v4().simple());
        Ok(Txn::new(
            guard,
            vec![
                format!("set-buffer -b {buf} -- {}", quote(text)),
                format!(
                    "paste-buffer -d -b {buf} -t {t}{}",
                    if bracketed { " -p" } else { "" }
                ),
            ],
        ))
    }

    /// Presses one named key (`Enter`, `Escape`) in the guarded pane.
    pub fn send_key(guard: Guard, key: &str) -> Result<Txn> {
        if !matches!(key, "Enter" | "Escape" | "C-m") {
            return Err(Error::Internal(format!(
                "key {key:?} is not one the tools press"
            )));
        }
        let t = quote(&guard.target);
        Ok(Txn::new(guard, vec![format!("send-keys -t {t} {key}")]))
    }

    /// Sets pane options (tags) on the guarded pane.
    pub fn set_tags(guard: Guard, tags: &[(String, String)]) -> Result<Txn> {
        let t = quote(&guard.target);
        let mut cmds = Vec::new();
        for (k, v) in tags {
            check_option_name(k)?;
            cmds.push(format!("set-option -p -t {t} {k} {}", quote(v)));
        }
        Ok(Txn::new(guard, cmds))
    }

    /// Sets session options on the guarded session.
    pub fn set_session_tags(guard: Guard, tags: &[(String, String)]) -> Result<Txn> {
        let t = quote(&guard.target);
        let mut cmds = Vec::new();
        for (k, v) in tags {
            check_option_name(k)?;
            cmds.push(format!("set-option -t {t} {k} {}", quote(v)));
        }
        Ok(Txn::new(guard, cmds))
    }

    /// Splits a new pane from the guarded pane and tags it in the same step. The split makes
    /// the new pane current, so the tags land on it; `last-pane` gives focus back.
    pub fn split(guard: Guard, p: &NewPane) -> Result<Txn> {
        let t = quote(&guard.target);
        let mut split = format!("split-window -t {t}");
        if p.horizontal {
            split.push_str(" -h");
        }
        split.push_str(&format!(" -P -F {}", quote(NEW_PANE_FORMAT)));
        split.push_str(&p.launch());
        let mut cmds = vec![split];
        for (k, v) in &p.tags {
            check_option_name(k)?;
            cmds.push(format!("set-option -p {k} {}", quote(v)));
        }
        cmds.push("last-pane".into());
        Ok(Txn::new(guard, cmds))
    }

    /// Opens a new window in the guarded session with the pane `p`, tagged in the same step.
    pub fn new_window(guard: Guard, p: &NewPane) -> Result<Txn> {
        let t = quote(&format!("{}:", guard.target));
        let mut nw = format!("new-window -t {t} -P -F {}", quote(NEW_PANE_FORMAT));
        nw.push_str(&p.launch());
        let mut cmds = vec![nw];
        for (k, v) in &p.tags {
            check_option_name(k)?;
            cmds.push(format!("set-option -p {k} {}", quote(v)));
        }
        cmds.push("last-window".into());
        Ok(Txn::new(guard, cmds))
    }

    /// Creates several panes in one server-side step, each tagged as it is born: the first by
    /// splitting the guarded pane (or, with `new_window`, as a new window of the guarded
    /// session), each next one by splitting the pane made just before it (tmux makes a new pane
    /// current, and an untargeted `split-window`/`set-option -p` acts on the current pane).
    /// `sizes[i]` is the new pane's share of the pane it splits, in percent (`-l N%`). With
    /// `remain_on_exit`, each new pane keeps its screen after its process exits.
    ///
    /// With `tile`, every split is followed by `select-layout tiled` on the current window, so
    /// the window's panes stay an even grid (only for windows that hold the team's workers
    /// alone: the split source's window, or a new one).
    ///
    /// If tmux refuses a split midway (`no space for new pane`), the rest of the chain does not
    /// run and no receipt comes back: the outcome is `Unknown`, and the caller finds the panes
    /// that were made by their tags. Focus: with `refocus_guard`, the guarded pane is selected
    /// at the end; otherwise `last-pane` (or `last-window`) gives focus back.
    pub fn spawn_chain(
        guard: Guard,
        new_window: bool,
        panes: &[NewPane],
        sizes: &[Option<u8>],
        refocus_guard: bool,
        remain_on_exit: bool,
        tile: bool,
    ) -> Result<Txn> {
        if panes.is_empty() {
            return Err(Error::Internal("an empty spawn chain".into()));
        }
        let t = quote(&guard.target);
        let mut cmds = Vec::new();
        for (i, p) in panes.iter().enumerate() {
            let mut c = if i == 0 && new_window {
                format!("new-window -t {}", quote(&format!("{}:", guard.target)))
            } else {
                let mut c = String::from("split-window");
                if i == 0 {
                    c.push_str(&format!(" -t {t}"));
                }
                c.push_str(if p.horizontal { " -h" } else { " -v" });
                if let Some(pct) = sizes.get(i).copied().flatten() {
                    if !(1..=99).contains(&pct) {
                        return Err(Error::Internal(format!("bad pane size {pct}%")));
                    }
                    c.push_str(&format!(" -l {pct}%"));
                }
                c
            };
            c.push_str(&format!(" -P -F {}", quote(NEW_PANE_FORMAT)));
            c.push_str(&p.launch());
            cmds.push(c);
            for (k, v) in &p.tags {
                check_option_name(k)?;
                cmds.push(format!("set-option -p {k} {}", quote(v)));
            }
            // In the same step as the split: a process that exits at once still leaves its
            // pane (dead, with its last screen and exit status) for the readiness wait to read.
            if remain_on_exit {
                cmds.push("set-option -p remain-on-exit on".into());
            }
            // Re-tiled at once, so the next split of the (now current) new pane has room.
            if tile && !(i == 0 && new_window) {
                cmds.push("select-layout tiled".into());
            }
        }
        if new_window {
            cmds.push("last-window".into());
        } else if refocus_guard {
            cmds.push(format!("select-pane -t {t}"));
        } else {
            cmds.push("last-pane".into());
        }
        Ok(Txn::new(guard, cmds))
    }

    /// How many bytes this transaction adds to a tmux message.
    pub fn argv_bytes(&self) -> usize {
        self.argv().iter().map(|a| a.len() + 1).sum::<usize>() + 2
    }

    /// The tmux argv of this transaction.
    fn argv(&self) -> Vec<String> {
        let mut body = self.commands.join(" ; ");
        body.push_str(" ; display-message -p ");
        body.push_str(&self.receipt);
        vec![
            "if-shell".into(),
            "-F".into(),
            "-t".into(),
            self.guard.target.clone(),
            self.guard.condition(),
            body,
            format!("display-message -p {}", self.reject),
        ]
    }
}

fn check_option_name(k: &str) -> Result<()> {
    let ok = k.starts_with('@')
        && k.len() > 1
        && k[1..].bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::Internal(format!("bad option name {k:?}")))
    }
}

/// The most argv bytes one tmux invocation carries. tmux sends a command line to its server
/// in one message of at most 16 KiB (`MAX_IMSGSIZE`) and refuses longer ones ("command too
/// long"), so larger batches are split over several invocations.
pub const MAX_ARGV_BYTES: usize = 14 * 1024;

/// Runs `txns` in as few tmux invocations as fit (usually one) and reads each outcome from its
/// receipt.
pub fn run(tmux: &Tmux, txns: &[Txn]) -> Result<Vec<TxnOutcome>> {
    let mut outcomes = Vec::with_capacity(txns.len());
    for chunk in chunks(txns) {
        let mut argv: Vec<String> = Vec::new();
        for (i, t) in chunk.iter().enumerate() {
            if i > 0 {
                argv.push(";".into());
            }
            argv.extend(t.argv());
        }
        let out = tmux.run(&argv)?;
        outcomes.extend(read_outcomes(chunk, &out.stdout, &out.stderr));
    }
    Ok(outcomes)
}

/// Splits `txns` into runs whose argv fits one invocation (a single oversized transaction
/// still gets a run of its own: tmux then refuses it, and it reads as unknown).
fn chunks(txns: &[Txn]) -> Vec<&[Txn]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, t) in txns.iter().enumerate() {
        let n = t.argv_bytes();
        if i > start && bytes + n > MAX_ARGV_BYTES {
            out.push(&txns[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += n;
    }
    if start < txns.len() {
        out.push(&txns[start..]);
    }
    out
}

/// Matches output lines to receipts (pure).
pub fn read_outcomes(txns: &[Txn], stdout: &str, stderr: &str) -> Vec<TxnOutcome> {
    let mut outcomes: Vec<Option<TxnOutcome>> = vec![None; txns.len()];
    let mut pending_lines = Vec::new();
    for line in stdout.lines() {
        if let Some(i) = txns.iter().position(|t| t.receipt == line) {
            outcomes[i] = Some(TxnOutcome::Done(std::mem::take(&mut pending_lines)));
        } else if let Some(i) = txns.iter().position(|t| t.reject == line) {
            outcomes[i] = Some(TxnOutcome::Refused);
            pending_lines.clear();
        } else {
            pending_lines.push(line.to_string());
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| TxnOutcome::Unknown(stderr.trim().to_string())))
        .collect()
}

/// Reads the incarnations of every pane made by [`Txn::spawn_chain`], in order.
pub fn parse_new_panes(lines: &[String]) -> Result<Vec<PaneIncarnation>> {
    lines
        .iter()
        .filter(|l| l.starts_with("new-pane\t"))
        .map(|l| parse_new_pane(std::slice::from_ref(l)))
        .collect()
}

/// Reads the incarnation of a pane made by [`Txn::split`] or [`Txn::new_window`].
pub fn parse_new_pane(lines: &[String]) -> Result<PaneIncarnation> {
    let line = lines
        .iter()
        .find(|l| l.starts_with("new-pane\t"))
        .ok_or_else(|| Error::TmuxProtocol("no new-pane line in the split's output".into()))?;
    let f: Vec<&str> = line.split('\t').collect();
    let bad = || Error::TmuxProtocol(format!("malformed new-pane line {line:?}"));
    if f.len() != 7 {
        return Err(bad());
    }
    let inc = PaneIncarnation {
        pane_id: f[1].to_string(),
        pane_pid: f[2].parse().map_err(|_| bad())?,
        session_id: f[3].to_string(),
        window_id: f[4].to_string(),
        server_pid: f[5].parse().map_err(|_| bad())?,
        server_start: f[6].parse().map_err(|_| bad())?,
        process_start: None,
    };
    inc.validate_shape().map_err(|_| bad())?;
    Ok(inc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_window_is_told_from_other_split_failures() {
        assert_eq!(
            SplitFailure::of("no space for new pane\n"),
            SplitFailure::NoSpace
        );
        assert_eq!(SplitFailure::of("command too long"), SplitFailure::Other);
        assert_eq!(SplitFailure::of(""), SplitFailure::Other);
    }

    fn inc() -> PaneIncarnation {
        PaneIncarnation {
            server_pid: 10,
            server_start: 20,
            pane_id: "%3".into(),
            pane_pid: 30,
            session_id: "$1".into(),
            window_id: "@2".into(),
            process_start: None,
        }
    }

    #[test]
    fn condition_covers_the_full_incarnation() {
        let g = Guard::pane(&inc(), &[("@team_owner", "abc")], true).unwrap();
        let c = g.condition();
        for part in [
            "#{==:#{pane_id},%3}",
            "#{==:#{pane_pid},30}",
            "#{==:#{session_id},$1}",
            "#{==:#{window_id},@2}",
            "#{==:#{pid},10}",
            "#{==:#{start_time},20}",
            "#{==:#{pane_dead},0}",
            "#{==:#{@team_owner},abc}",
        ] {
            assert!(c.contains(part), "{part} missing from {c}");
        }
    }

    #[test]
    fn hostile_values_are_refused() {
        assert!(Guard::pane(&inc(), &[("@team_owner", "x},1}")], true).is_err());
        let mut i = inc();
        i.pane_id = "%3 ; kill-server".into();
        assert!(Guard::pane(&i, &[], true).is_err());
    }

    #[test]
    fn big_batches_are_split_to_fit_one_message() {
        let g = Guard::pane(&inc(), &[("@team_owner", "abc")], false).unwrap();
        let txns: Vec<Txn> = (0..500).map(|_| Txn::kill_pane(g.clone())).collect();
        let parts = chunks(&txns);
        assert!(parts.len() > 1);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 500);
        for p in &parts {
            let bytes: usize = p
                .iter()
                .map(|t| t.argv().iter().map(|a| a.len() + 1).sum::<usize>() + 2)
                .sum();
            assert!(bytes <= MAX_ARGV_BYTES, "{bytes}");
        }
        assert!(chunks(&[]).is_empty());
    }

    #[test]
    fn outcomes_need_the_exact_receipt() {
        let g = Guard::pane(&inc(), &[], false).unwrap();
        let a = Txn::kill_pane(g.clone());
        let b = Txn::kill_pane(g);
        let txns = [a.clone(), b.clone()];
        let out = read_outcomes(&txns, &format!("x\n{}\n{}\n", a.receipt, b.reject), "");
        assert_eq!(out[0], TxnOutcome::Done(vec!["x".into()]));
        assert_eq!(out[1], TxnOutcome::Refused);
        // A receipt of another transaction, or a near miss, is not this one's.
        let out = read_outcomes(
            &txns[..1],
            &format!("{} \n{}\n", a.receipt, b.receipt),
            "err",
        );
        assert_eq!(out[0], TxnOutcome::Unknown("err".into()));
    }
}
