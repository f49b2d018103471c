//! Delivery: the one way text reaches a worker's agent, proven or reported.
//!
//! [`deliver`] takes proven panes, each with its agent profile and a text, and drives all of
//! them at once (one capture of every pane per round, one batch of transactions per round), so
//! N workers cost about one settle delay, not N. Per pane:
//!
//! 1. the screen is read each round: a dead pane (or a matching `exit.json`) ends it as
//!    `undelivered` with the exit status and the last lines; a blocking screen (sign-in, trust,
//!    first-run question, and for every profile a menu with a choice selected, by a marker or
//!    only by reverse video, or a yes/no question: the `approval` screen) ends it as `blocked`
//!    with the next step. **Nothing is ever typed into a blocking
//!    screen** (the screen of the same round decides each paste and each Enter), and a
//!    readiness timeout types nothing;
//! 2. launch-argument and banner profiles type nothing: delivered once the agent shows the
//!    text (or shows that it works);
//! 3. typed profiles: once the prompt is on the cursor line and the screen, and the processes
//!    reading the pane's terminal below its supervisor (`process::subtree_fingerprint`: a
//!    program still starting through shims and `exec`s), have been still for the profile's
//!    `stable_ms`, an audit intent (`send-keys`) is made durable, the text is
//!    pasted (bracketed where wanted) in a guarded transaction, and after `settle_ms` Enter is
//!    pressed on its own, also guarded, and only if a fresh capture taken just before it (after
//!    the process look) shows no blocking screen and the draft still on the input line
//!    (`recheck`); delivered when the draft has left the input line or the agent shows it
//!    works; else Enter again, at most `retries` times. A blocking screen that shows after
//!    the paste ends the delivery as `undelivered`, saying what was typed.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Typing reaches only the agent**: a proven pane can still hold a program that runs or
//!   forwards what is typed (a worker that became a shell, a nested `tmux attach`, `ssh`).
//!   Every typing transaction's guard also requires that `#{pane_current_command}` is not a
//!   shell, a terminal client or a line runner (an interactive shell takes the terminal's
//!   foreground, and so does a pager it starts), checked
//!   by tmux in the same step as the keys; and before each paste (before its audit intent) the
//!   processes below the worker's supervisor that read the pane's own terminal are looked at:
//!   a terminal client by `comm` (`script` too), a program that runs the lines it reads
//!   (`sqlite3`, `gdb`, `ed`, `awk`, `sed`, `xargs`, ...; pagers, viewers, editors, mail, ftp
//!   and database clients too: `less`, `more`, `man`, `vi`, `lynx`, `mutt`, `sftp`, `psql`,
//!   ..., which run a `!cmd` line; these and terminal clients also when they read their keys
//!   from a `/dev/tty` of their own, as `cat f | less` does), a shell with no script and no `-c`, or
//!   an interpreter with no script file (a REPL, or inline code that may read and run lines),
//!   or a shell given `-c` code that has no live child (a read/eval loop; a wrapper waits for
//!   its agent) makes the delivery `undelivered` with nothing typed (no intent either). A
//!   process is known by its comm, its `argv[0]` and its executable (`/proc/<pid>/exe`), so
//!   Debian's `pager` and `editor` are the `less` and `vim` they run, and `less` behind a
//!   symlink named `codex` is `less` (REPLs only by the first two: an agent on `node` may name
//!   itself and drop its arguments). The look is made again before each Enter, the last
//!   instant before typed text runs. An
//!   interpreter running a script file is taken for the agent (agents are such programs). The same programs on another terminal or a pipe (an agent's own `ssh`
//!   for git, a shell in its own pty) do not count. The `/proc` look is not atomic with the keys; the tmux
//!   check is.
//!
//! - **A message for a working agent waits unless `--queue`**: an idle agent at its prompt
//!   does not draw a menu by itself, a working one can at any moment (a tool call to approve).
//!   So by default nothing is typed while the screen shows the profile's busy text, and a
//!   timeout says the agent was still working. `send --queue` types into a working agent whose
//!   profile names the input line it keeps meanwhile (`queue_cursor`: Codex, Claude Code and
//!   Gemini CLI queue what is entered there): only with the cursor on that line, no menu or
//!   question on screen, the line and the processes still for `stable_ms`, and a fresh capture
//!   just before the keys (after the intent) showing the same; proven only by the draft leaving
//!   the input line (that the agent works proves nothing here). The remaining window, a menu
//!   drawn between that capture and the paste, is why it is not the default. Task notices
//!   never queue: the task is in the inbox already.
//!
//! - **A list of what not to type into, not a list of what to type into**: the `custom`
//!   profile and the user's own profiles type into any program by design, and the agents are
//!   `node` or `python3` running a script (as a REPL's user can be), so an allowlist of the
//!   programs reading the pane would either refuse the documented `custom` agents or name
//!   interpreters it cannot tell from a REPL. The refusals stay a list by name (shells,
//!   terminal clients, line runners, REPLs), checked against `/proc` before each paste and, in
//!   the foreground, by tmux with the keys; a selected menu choice or a yes/no question on
//!   screen is refused for every profile whatever the lists say.
//!
//! - **Trust questions are never answered by the tools**, and there is no opt-in to do so: trusting
//!   a folder is a security decision the user makes once in the CLI itself. The blocked result says
//!   how.
//!
//! - **Worker panes get `remain-on-exit` in the same step that creates them**, so a process that
//!   exits at once leaves its pane dead with its screen and exit status. tmux marks a pane dead
//!   when its terminal closes and learns the status when it reaps the process (which, under load, can take long or not happen at all: a zombie it has not reaped yet): delivery waits up to 1.5 s
//!   for it, then reports "exited" without one; the supervisor's `exit.json` gives the status reliably. Output written just before a pty closes can be lost (Linux), and tmux's "Pane is
//!   dead" line can scroll the last output into history: captures include 20 history lines.

use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::agent::screen::{APPROVAL, draft_at_cursor, draft_head, shows};
use crate::agent::{Profile, PromptMode, Seen, classify};
use crate::audit::{AuditLog, Entry};
use crate::model::PaneIncarnation;
use crate::tmux::{Guard, Screen, Tmux, Txn, TxnOutcome};

/// One pane to deliver to.
#[derive(Debug, Clone)]
pub struct Target {
    pub worker: String,
    /// The proven pane and the tags its guard checks.
    pub inc: PaneIncarnation,
    pub tags: Vec<(String, String)>,
    pub profile: Profile,
    /// How the text reaches the agent (usually the profile's mode; `Typed` for later
    /// messages to an agent that took its first prompt at launch).
    pub mode: PromptMode,
    pub text: String,
    /// The team's `--ready-pattern`, which must also show before typing.
    pub ready_pattern: Option<String>,
    /// The worker's `exit.json` and its incarnation.
    pub exit_file: Option<crate::agent::exit::ExitFile>,
    /// The workspace, for next-step messages.
    pub workspace: String,
    /// The audit entry for the `send-keys` intent (action and targets are filled in).
    pub audit: Entry,
    /// Type into the agent while it works too, as a message it queues, when its profile
    /// names the input line it shows meanwhile (`queue_cursor`): `send --queue`.
    pub queue: bool,
}

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The agent has the text; `how` says what proved it.
    Delivered { how: String },
    /// The text did not reach the agent (or it is not proven that it did).
    Undelivered {
        why: String,
        last_lines: Vec<String>,
    },
    /// A screen that blocks work is showing; nothing was typed into it.
    Blocked {
        screen: String,
        next_step: String,
        last_lines: Vec<String>,
    },
}

impl Delivery {
    pub fn word(&self) -> &'static str {
        match self {
            Delivery::Delivered { .. } => "delivered",
            Delivery::Undelivered { .. } => "undelivered",
            Delivery::Blocked { .. } => "blocked",
        }
    }

    pub fn is_delivered(&self) -> bool {
        matches!(self, Delivery::Delivered { .. })
    }

    /// One line for people: what happened and what to do.
    pub fn describe(&self) -> String {
        match self {
            Delivery::Delivered { how } => format!("delivered ({how})"),
            Delivery::Undelivered { why, .. } => format!("undelivered: {why}"),
            Delivery::Blocked {
                screen, next_step, ..
            } => format!("blocked by the {screen} screen: {next_step}"),
        }
    }

    pub fn last_lines(&self) -> &[String] {
        match self {
            Delivery::Delivered { .. } => &[],
            Delivery::Undelivered { last_lines, .. } | Delivery::Blocked { last_lines, .. } => {
                last_lines
            }
        }
    }
}

#[derive(Debug)]
enum St {
    Waiting {
        /// The screen, the cursor line and what runs below the supervisor, last round.
        last: Option<ReadyKey>,
        since: Instant,
    },
    Pasted {
        at: Instant,
        /// Typed while the agent works (a queued message): only the draft leaving the input
        /// line proves it, since the agent showed that it works before.
        queued: bool,
    },
    Entered {
        at: Instant,
        n: u32,
        queued: bool,
    },
    Done(Delivery),
}

/// What must hold still for `stable_ms` before a paste: the screen, the cursor line, and the
/// processes below the worker's supervisor ([`crate::process::subtree_fingerprint`]).
type ReadyKey = (Vec<String>, usize, Vec<(u32, Option<std::path::PathBuf>)>);

#[derive(Clone, Copy)]
enum Step {
    Paste,
    Enter,
}

const POLL: Duration = Duration::from_millis(100);
const LAST_LINES: usize = 8;
const DEAD_STATUS_WAIT: Duration = Duration::from_millis(1500);

/// Delivers each target's text, all at once; `timeout` bounds the wait for readiness.
/// Returns one [`Delivery`] per target, in order.
pub fn deliver(
    tmux: &Tmux,
    audit: &AuditLog,
    targets: &[Target],
    timeout: Duration,
) -> Vec<Delivery> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut st: Vec<St> = targets
        .iter()
        .map(|_| St::Waiting {
            last: None,
            since: start,
        })
        .collect();
    let mut intents: Vec<Option<Uuid>> = vec![None; targets.len()];
    let mut last_screen: Vec<Option<Screen>> = vec![None; targets.len()];
    let mut dead_since: Vec<Option<Instant>> = vec![None; targets.len()];
    loop {
        let open: Vec<usize> = (0..targets.len())
            .filter(|&i| !matches!(st[i], St::Done(_)))
            .collect();
        if open.is_empty() {
            break;
        }
        let panes: Vec<&str> = open
            .iter()
            .map(|&i| targets[i].inc.pane_id.as_str())
            .collect();
        let screens = tmux.capture_screens(&panes);
        let now = Instant::now();
        let mut steps: Vec<(usize, Step)> = Vec::new();
        for (&i, screen) in open.iter().zip(screens) {
            let t = &targets[i];
            let Some(screen) = screen else {
                if now >= deadline {
                    st[i] = undelivered(
                        format!(
                            "{}'s pane {} could not be read (gone?)",
                            t.worker, t.inc.pane_id
                        ),
                        &last_screen[i],
                    );
                }
                continue;
            };
            // tmux marks a pane dead when its terminal closes and learns the exit status a
            // moment later: wait briefly for the status, so the report can name it.
            if screen.dead
                && screen.dead_status.is_none()
                && status_line(&screen).is_none()
                && t.exit_file
                    .as_ref()
                    .is_none_or(|f| f.read().ok().flatten().is_none())
            {
                let since = *dead_since[i].get_or_insert(now);
                if now.duration_since(since) < DEAD_STATUS_WAIT {
                    last_screen[i] = Some(screen);
                    continue;
                }
            }
            if let Some(d) = ended(t, &screen) {
                st[i] = St::Done(d);
                last_screen[i] = Some(screen);
                continue;
            }
            // Once pasted, the draft at the cursor is ours, not a menu.
            let typed = match st[i] {
                St::Pasted { .. } | St::Entered { .. } => Some(t.text.as_str()),
                _ => None,
            };
            let seen = classify(&t.profile, &screen, t.ready_pattern.as_deref(), typed);
            // A launch argument or a banner is in before any menu: an agent that shows its
            // prompt and then asks for an approval has it (nothing is typed either way).
            let menu = matches!(seen, Seen::Blocked(b) if std::ptr::eq(b, &*APPROVAL));
            let asks_after_its_prompt =
                menu && t.mode != PromptMode::Typed && shows(&screen, &draft_head(&t.text));
            if let Seen::Blocked(b) = seen
                && !asks_after_its_prompt
            {
                if let Some(typed) = typed_so_far(&st[i]) {
                    // The screen came after our keys: say what went in, never "nothing".
                    st[i] = St::Done(Delivery::Undelivered {
                        why: format!(
                            "{} showed the {} screen after {typed}; answer it yourself in the pane (`team-scale attach`), and look whether the text reached the agent before sending again",
                            t.worker, b.name
                        ),
                        last_lines: screen.last_lines(LAST_LINES),
                    });
                    last_screen[i] = Some(screen);
                    continue;
                }
                st[i] = St::Done(Delivery::Blocked {
                    screen: b.name.clone(),
                    next_step: b
                        .next_step
                        .replace("{worker}", &t.worker)
                        .replace("{workspace}", &t.workspace),
                    last_lines: screen.last_lines(LAST_LINES),
                });
                last_screen[i] = Some(screen);
                continue;
            }
            let next = match &st[i] {
                St::Waiting { last, since } => match t.mode {
                    PromptMode::Banner | PromptMode::LaunchArg => {
                        if seen == Seen::Busy || shows(&screen, &draft_head(&t.text)) {
                            Some(St::Done(Delivery::Delivered {
                                how: if t.mode == PromptMode::Banner {
                                    "shown before the program started; nothing typed".into()
                                } else {
                                    "given as a launch argument; the agent shows it".into()
                                },
                            }))
                        } else {
                            None
                        }
                    }
                    PromptMode::Typed => {
                        let queue = seen == Seen::Busy && queues(t, &screen);
                        if seen != Seen::Ready && !queue {
                            Some(St::Waiting {
                                last: None,
                                since: now,
                            })
                        } else {
                            // The process look only once the screen reads ready: a still
                            // screen is what it can hold back.
                            // A working agent's screen moves (a spinner, a clock): then its
                            // input line must hold still.
                            let lines = if queue {
                                vec![QUEUE_KEY.into(), screen.cursor_line().to_string()]
                            } else {
                                screen.lines.clone()
                            };
                            let key = (
                                lines,
                                screen.cursor_y,
                                crate::process::subtree_fingerprint(
                                    t.inc.pane_pid,
                                    Duration::from_millis(t.profile.stable_ms),
                                ),
                            );
                            if last.as_ref() != Some(&key) {
                                Some(St::Waiting {
                                    last: Some(key),
                                    since: now,
                                })
                            } else if now.duration_since(*since)
                                >= Duration::from_millis(t.profile.stable_ms)
                            {
                                steps.push((i, Step::Paste));
                                Some(St::Pasted {
                                    at: now,
                                    queued: queue,
                                })
                            } else {
                                None
                            }
                        }
                    }
                },
                St::Pasted { at, queued } => {
                    let waited = now.duration_since(*at);
                    if waited < Duration::from_millis(t.profile.settle_ms) {
                        None
                    } else if draft_at_cursor(&screen, &t.text) {
                        steps.push((i, Step::Enter));
                        Some(St::Entered {
                            at: now,
                            n: 1,
                            queued: *queued,
                        })
                    } else if waited
                        >= Duration::from_millis(t.profile.settle_ms + t.profile.verify_ms)
                    {
                        Some(St::Done(Delivery::Undelivered {
                            why: "the pasted text never showed in the input line; Enter was not pressed".into(),
                            last_lines: screen.last_lines(LAST_LINES),
                        }))
                    } else {
                        None
                    }
                }
                St::Entered { at, n, queued } => {
                    // A message typed while the agent worked: that it works proves nothing,
                    // only the draft leaving the input line does.
                    let left = !draft_at_cursor(&screen, &t.text);
                    if left || (seen == Seen::Busy && !*queued) {
                        Some(St::Done(Delivery::Delivered {
                            how: if *queued {
                                format!(
                                    "typed while the agent worked; it took it as a queued message ({n} Enter)"
                                )
                            } else if seen == Seen::Busy {
                                format!("typed; the agent shows it works ({n} Enter)")
                            } else {
                                format!("typed; the draft left the input line ({n} Enter)")
                            },
                        }))
                    } else if now.duration_since(*at) < Duration::from_millis(t.profile.verify_ms) {
                        None
                    } else if *n <= t.profile.retries {
                        steps.push((i, Step::Enter));
                        Some(St::Entered {
                            at: now,
                            n: n + 1,
                            queued: *queued,
                        })
                    } else {
                        Some(St::Done(Delivery::Undelivered {
                            why: format!(
                                "the text stayed in the input line after {n} Enter presses"
                            ),
                            last_lines: screen.last_lines(LAST_LINES),
                        }))
                    }
                }
                St::Done(_) => None,
            };
            if let Some(n) = next {
                tracing::debug!(worker = %t.worker, state = ?n, seen = ?seen, cursor = screen.cursor_line(), "delivery");
                st[i] = n;
            }
            last_screen[i] = Some(screen);
        }
        // Readiness is bounded; a timeout types nothing, nor does an interrupt (a paste already
        // made is finished: its Enter is pressed and proven).
        let interrupted = crate::interrupt::requested();
        if interrupted {
            for (i, _) in steps.iter().filter(|(_, s)| matches!(s, Step::Paste)) {
                st[*i] = St::Waiting {
                    last: None,
                    since: now,
                };
            }
            steps.retain(|(_, s)| matches!(s, Step::Enter));
        }
        if now >= deadline || interrupted {
            for (i, s) in st.iter_mut().enumerate() {
                if matches!(s, St::Waiting { .. }) && !steps.iter().any(|(j, _)| *j == i) {
                    let t = &targets[i];
                    *s = undelivered(
                        if interrupted {
                            "interrupted while waiting for the agent to be ready; nothing was typed"
                                .into()
                        } else {
                            timed_out(t, &last_screen[i], timeout)
                        },
                        &last_screen[i],
                    );
                }
            }
        }
        run_steps(
            tmux,
            audit,
            targets,
            &steps,
            &mut st,
            &mut intents,
            &last_screen,
        );
        if st.iter().all(|s| matches!(s, St::Done(_))) {
            break;
        }
        std::thread::sleep(POLL);
    }
    let out: Vec<Delivery> = st
        .into_iter()
        .map(|s| match s {
            St::Done(d) => d,
            _ => Delivery::Undelivered {
                why: "internal: delivery did not finish".into(),
                last_lines: Vec::new(),
            },
        })
        .collect();
    for (i, id) in intents.iter().enumerate() {
        if let Some(id) = id {
            let mut e = send_entry(&targets[i]);
            e.outcome = Some(out[i].describe());
            if let Err(err) = audit.outcome(*id, out[i].is_delivered(), &e) {
                tracing::warn!(error = %err, "could not record the outcome of a delivery");
            }
        }
    }
    out
}

/// Why a target that never became ready typed nothing: a working agent is named as such,
/// with what takes the text anyway (`--queue`, for an agent that queues messages).
fn timed_out(t: &Target, last: &Option<Screen>, timeout: Duration) -> String {
    let busy = last
        .as_ref()
        .is_some_and(|s| classify(&t.profile, s, t.ready_pattern.as_deref(), None) == Seen::Busy);
    let name = t.profile.display();
    if !busy {
        return format!(
            "{name} did not show a ready, still input prompt within {timeout:?}; nothing was typed"
        );
    }
    let how = if t.profile.queue_cursor.is_empty() {
        "it takes no message while it works"
    } else if t.queue {
        "its input line did not hold still"
    } else {
        "it queues messages while it works: `team-scale send --queue` types one now"
    };
    format!(
        "{name} was still working after {timeout:?} ({how}); nothing was typed: send it again once it is idle, or wait longer with --ready-timeout"
    )
}

/// Whether `t`'s text may be typed into its agent while the agent works: asked for, the
/// profile names the input line a working agent shows, and the cursor is on that line (so
/// no menu or question has taken the screen: those are refused before this is asked).
fn queues(t: &Target, screen: &Screen) -> bool {
    let cursor = screen.cursor_line().trim();
    t.queue
        && t.profile
            .queue_cursor
            .iter()
            .any(|q| cursor.starts_with(q.trim()))
}

/// Marks a [`ReadyKey`] taken from a working agent's input line (never equal to a screen's).
const QUEUE_KEY: &str = "\u{0}queue";

/// What has been typed in state `st`, for a report (`None`: nothing yet).
fn typed_so_far(st: &St) -> Option<String> {
    match st {
        St::Pasted { .. } => Some("the text was pasted (Enter was not pressed)".into()),
        St::Entered { n, .. } => Some(format!(
            "the text was pasted and Enter pressed {n} time{}",
            if *n == 1 { "" } else { "s" }
        )),
        _ => None,
    }
}

/// The last look before the keys, taken now, after the intents, for every Enter and every
/// paste into a working agent: the round's own look is up to a poll and an `fdatasync` old,
/// and a menu drawn meanwhile would take the keys (an Enter answers it). One capture for them
/// all. An Enter goes only while no blocking screen shows and the draft is still on the input
/// line: a blocking screen ends the delivery, saying what was typed; a draft gone from the
/// line waits for the next round. A paste into a working agent goes only while it still
/// shows it works with its input line on the cursor, else it goes back to waiting (its intent
/// stays open for a later paste). What is left is the instant between this capture and tmux
/// acting on the keys.
fn recheck(
    tmux: &Tmux,
    targets: &[Target],
    steps: &[(usize, Step)],
    st: &mut [St],
    txns: &mut Vec<Txn>,
    which: &mut Vec<usize>,
) {
    let step_of = |i: usize| steps.iter().find(|&&(j, _)| j == i).map(|&(_, s)| s);
    let look: Vec<usize> = which
        .iter()
        .copied()
        .filter(|&i| match step_of(i) {
            Some(Step::Enter) => true,
            Some(Step::Paste) => matches!(st[i], St::Pasted { queued: true, .. }),
            None => false,
        })
        .collect();
    if look.is_empty() {
        return;
    }
    let panes: Vec<&str> = look
        .iter()
        .map(|&i| targets[i].inc.pane_id.as_str())
        .collect();
    let screens = tmux.capture_screens(&panes);
    for (&i, screen) in look.iter().zip(screens) {
        let t = &targets[i];
        let rp = t.ready_pattern.as_deref();
        let go = match (step_of(i), screen.as_ref()) {
            (_, None) => false,
            (_, Some(s)) if s.dead => false,
            (Some(Step::Enter), Some(s)) => {
                if let Seen::Blocked(b) = classify(&t.profile, s, rp, Some(&t.text)) {
                    st[i] = St::Done(Delivery::Undelivered {
                        why: format!(
                            "{} showed the {} screen after the text was pasted; Enter was not pressed: answer it yourself in the pane (`team-scale attach`), then send again",
                            t.worker, b.name
                        ),
                        last_lines: s.last_lines(LAST_LINES),
                    });
                    false
                } else {
                    draft_at_cursor(s, &t.text)
                }
            }
            (_, Some(s)) => classify(&t.profile, s, rp, None) == Seen::Busy && queues(t, s),
        };
        if go {
            continue;
        }
        // Undo the step the round counted on (a blocking screen has ended it already).
        let now = Instant::now();
        let waiting = || St::Waiting {
            last: None,
            since: now,
        };
        st[i] = match std::mem::replace(&mut st[i], waiting()) {
            St::Pasted { .. } => waiting(),
            St::Entered { n: 1, queued, .. } => St::Pasted { at: now, queued },
            St::Entered { n, queued, .. } => St::Entered {
                at: now,
                n: n - 1,
                queued,
            },
            other => other,
        };
        if let Some(k) = which.iter().position(|&j| j == i) {
            which.remove(k);
            txns.remove(k);
        }
    }
}

/// A target's end without delivery, with the last screen seen of its pane.
fn undelivered(why: String, last_screen: &Option<Screen>) -> St {
    St::Done(Delivery::Undelivered {
        why,
        last_lines: last_lines(last_screen),
    })
}

fn last_lines(s: &Option<Screen>) -> Vec<String> {
    s.as_ref()
        .map(|s| s.last_lines(LAST_LINES))
        .unwrap_or_default()
}

/// A dead pane or a matching exit file ends the delivery.
fn ended(t: &Target, screen: &Screen) -> Option<Delivery> {
    let exit = t.exit_file.as_ref().and_then(|f| f.read().ok().flatten());
    if !screen.dead && exit.is_none() {
        return None;
    }
    let how = match (&exit, screen.dead_status.or_else(|| status_line(screen))) {
        (Some(e), _) => e.describe(),
        (None, Some(c)) => format!("exited with status {c}"),
        (None, None) => "exited".into(),
    };
    Some(Delivery::Undelivered {
        why: format!(
            "{}'s process ({}) {how} before the text was delivered",
            t.worker,
            t.profile.display()
        ),
        last_lines: screen.last_lines(LAST_LINES),
    })
}

/// The status in tmux's own `Pane is dead (status N, <time>)` line, when it shows.
fn status_line(screen: &Screen) -> Option<i32> {
    screen.lines.iter().chain(&screen.history).find_map(|l| {
        l.trim()
            .strip_prefix("Pane is dead (status ")
            .and_then(|r| r.split([',', ')']).next())
            .and_then(|n| n.trim().parse().ok())
    })
}

fn send_entry(t: &Target) -> Entry {
    let mut e = t.audit.clone();
    e.action = "send-keys".into();
    e.targets = vec![json!({
        "pane_id": t.inc.pane_id, "pane_pid": t.inc.pane_pid, "session_id": t.inc.session_id,
        "window_id": t.inc.window_id, "server_pid": t.inc.server_pid,
        "server_start": t.inc.server_start, "worker": t.worker,
    })];
    e.reason = Some(format!(
        "deliver a message to {} ({}): paste, then Enter on its own",
        t.worker,
        t.profile.display()
    ));
    e
}

/// Runs this round's pastes and Enters in one batch of guarded transactions. A paste needs a
/// durable `send-keys` intent first; without one nothing is typed.
fn run_steps(
    tmux: &Tmux,
    audit: &AuditLog,
    targets: &[Target],
    steps: &[(usize, Step)],
    st: &mut [St],
    intents: &mut [Option<Uuid>],
    last_screen: &[Option<Screen>],
) {
    let mut txns = Vec::new();
    let mut which = Vec::new();
    for &(i, step) in steps {
        let t = &targets[i];
        // Before the intent: text that would reach a shell or another terminal is not typed;
        // and before each Enter, the last instant before typed text runs, the same look again
        // (a program that started reading the terminal since the paste gets no Enter).
        if let Some(who) = crate::process::terminal_reader_below(t.inc.pane_pid) {
            st[i] = undelivered(
                match step {
                    Step::Paste => format!(
                        "{}'s pane {} would not reach its agent: {who}; nothing was typed",
                        t.worker, t.inc.pane_id
                    ),
                    Step::Enter => format!(
                        "{}'s pane {} would not reach its agent: {who}, which started after the text was pasted; Enter was not pressed",
                        t.worker, t.inc.pane_id
                    ),
                },
                &last_screen[i],
            );
            continue;
        }
        if intents[i].is_none() {
            match audit.intent(&send_entry(t)) {
                Ok(id) => intents[i] = Some(id),
                Err(e) => {
                    st[i] = undelivered(
                        format!("the audit intent could not be written ({e}); nothing was typed"),
                        &last_screen[i],
                    );
                    continue;
                }
            }
        }
        let tags: Vec<(&str, &str)> = t
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let guard = Guard::pane(&t.inc, &tags, true).map(Guard::typing_reaches_the_program);
        let txn = guard.and_then(|g| match step {
            Step::Paste => Txn::paste_text(g, &t.text, t.profile.bracketed_paste),
            Step::Enter => Txn::send_key(g, "Enter"),
        });
        match txn {
            Ok(x) => {
                txns.push(x);
                which.push(i);
            }
            Err(e) => {
                st[i] = undelivered(
                    format!("cannot type into {}: {e}", t.worker),
                    &last_screen[i],
                );
            }
        }
    }
    recheck(tmux, targets, steps, st, &mut txns, &mut which);
    if txns.is_empty() {
        return;
    }
    let outs = match tmux.run_txns(&txns) {
        Ok(o) => o,
        Err(e) => vec![TxnOutcome::Unknown(e.to_string()); txns.len()],
    };
    for (i, o) in which.into_iter().zip(outs) {
        let t = &targets[i];
        match o {
            TxnOutcome::Done(_) => {}
            TxnOutcome::Refused => {
                st[i] = undelivered(
                    format!(
                        "{}'s pane {} no longer matched its record (its process exited or was replaced), or a shell or terminal client holds its terminal; nothing was typed",
                        t.worker, t.inc.pane_id
                    ),
                    &last_screen[i],
                );
            }
            TxnOutcome::Unknown(e) => {
                st[i] = undelivered(
                    format!("no receipt from tmux for typing into {}: {e}", t.worker),
                    &last_screen[i],
                );
            }
        }
    }
}
