//! Messages from the leader to workers (`send`, `broadcast`, task notices): each worker's pane
//! is proven from one fresh listing, then the text goes through [`super::deliver`], the one way
//! text reaches an agent. A worker whose pane cannot be proven ours now (respawned, gone, not
//! an active member) is refused before anything is typed.

use std::time::Duration;

use serde_json::json;

use super::Env;
use super::deliver::{self, Delivery};
use crate::agent::PromptMode;
use crate::error::{Error, Result};
use crate::model::{Lifecycle, Team};
use crate::paths::WorkerName;
use crate::proof::PaneProof;
use crate::tmux::quote::check_literal_text;
use crate::view::{self, pane_json};

/// What happened to one worker's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// Delivery ran: delivered, undelivered or blocked.
    Ran(Delivery),
    /// Nothing was typed: the worker is not an active member, or its pane is not proven ours.
    Refused(String),
}

impl Sent {
    pub fn word(&self) -> &'static str {
        match self {
            Sent::Ran(d) => d.word(),
            Sent::Refused(_) => "refused",
        }
    }
    pub fn is_delivered(&self) -> bool {
        matches!(self, Sent::Ran(d) if d.is_delivered())
    }
    pub fn describe(&self) -> String {
        match self {
            Sent::Ran(d) => d.describe(),
            Sent::Refused(why) => format!("refused: {why}; nothing was typed"),
        }
    }
    pub fn last_lines(&self) -> &[String] {
        match self {
            Sent::Ran(d) => d.last_lines(),
            Sent::Refused(_) => &[],
        }
    }
}

/// Checks a message's text before anything else: not empty, printable, bounded.
pub fn check_text(text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::Usage("the message is empty".into()));
    }
    if text.len() > 8 * 1024 {
        return Err(Error::Usage(format!(
            "the message is {} bytes; at most 8192 can be typed into a pane (write longer text to a file and send its path)",
            text.len()
        )));
    }
    check_literal_text(text).map_err(|m| Error::Usage(format!("the message: {m}")))
}

/// How long a message waits for each agent, and whether a working agent may take it as a
/// queued message (`send --queue`; its profile must name the input line it shows meanwhile).
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    pub timeout: Duration,
    pub queue: bool,
}

/// Sends `text` to each of `workers` of `team` (a fresh load), all at once. `kind` names the
/// message in the audit log and the events (`message`, `broadcast`, `task`). Returns one
/// result per worker, in order, and records a `message` event.
pub fn send(
    env: &Env,
    workers: &[WorkerName],
    text: &str,
    kind: &str,
    argv: &[String],
    wait: Wait,
) -> Result<Vec<(WorkerName, Sent)>> {
    check_text(text)?;
    let team = env.store.load()?;
    let results = send_loaded(env, &team, workers, text, kind, argv, wait)?;
    let _ = env.store.append_event(
        &team,
        "message",
        json!({
            "kind": kind,
            "text": text,
            "results": results.iter().map(|(w, s)| json!({
                "worker": w, "result": s.word(), "detail": s.describe(),
            })).collect::<Vec<_>>(),
        }),
    );
    Ok(results)
}

fn send_loaded(
    env: &Env,
    team: &Team,
    workers: &[WorkerName],
    text: &str,
    kind: &str,
    argv: &[String],
    wait: Wait,
) -> Result<Vec<(WorkerName, Sent)>> {
    let profile = super::up::team_profile(env, team)?;
    let tmux = env.tmux(team);
    let listing = tmux.list();
    let mut out: Vec<(WorkerName, Option<Sent>)> = Vec::new();
    let mut targets = Vec::new();
    let mut which = Vec::new();
    for name in workers {
        let Some(w) = team.worker(name) else {
            out.push((
                name.clone(),
                Some(Sent::Refused(format!(
                    "{name} is not a member of team {}",
                    team.name
                ))),
            ));
            continue;
        };
        if w.lifecycle != Lifecycle::Active {
            out.push((
                name.clone(),
                Some(Sent::Refused(format!(
                    "{name} is {}, not an active member",
                    match w.lifecycle {
                        Lifecycle::Pending => "pending",
                        Lifecycle::Removing => "being removed",
                        Lifecycle::Active => "active",
                    }
                ))),
            ));
            continue;
        }
        let (Some(pane), Some(proof)) = (w.pane.as_ref(), view::prove_worker(team, w, &listing))
        else {
            out.push((
                name.clone(),
                Some(Sent::Refused(format!("{name} has no pane"))),
            ));
            continue;
        };
        if !matches!(proof, PaneProof::Live(_)) {
            out.push((
                name.clone(),
                Some(Sent::Refused(format!(
                    "{name}'s pane {} is no longer proven ours ({}: {})",
                    pane.pane_id,
                    proof.liveness(),
                    proof.reason().unwrap_or_default()
                ))),
            ));
            continue;
        }
        if profile.mode() == PromptMode::Banner {
            // A shell runs what is typed into it: a message would become a command.
            out.push((
                name.clone(),
                Some(Sent::Refused(format!(
                    "{name} runs {}, which would run the text as a command; messages need an agent profile",
                    profile.display()
                ))),
            ));
            continue;
        }
        let tags = view::worker_tags(team, w)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let worker_dir = w
            .resources
            .worker_dir
            .clone()
            .unwrap_or_else(|| env.store.root().worker_dir(&team.name, &w.name));
        targets.push(deliver::Target {
            worker: name.to_string(),
            inc: pane.clone(),
            tags,
            profile: profile.clone(),
            // Every later message is typed, whatever took the first prompt.
            mode: PromptMode::Typed,
            text: text.to_string(),
            ready_pattern: team.settings.ready_pattern.clone(),
            exit_file: Some(crate::agent::exit::ExitFile {
                root: env.store.root().path().to_path_buf(),
                path: worker_dir.join("exit.json"),
                incarnation: w.incarnation,
            }),
            workspace: team.workspace.display().to_string(),
            audit: crate::audit::Entry {
                caller: env.caller.clone(),
                action: "send-keys".into(),
                op: Some(kind.to_string()),
                argv: argv.to_vec(),
                endpoint: Some(team.endpoint.to_string_lossy().into_owned()),
                targets: vec![pane_json(pane)],
                workspace: Some(team.workspace.to_string_lossy().into_owned()),
                team: Some(team.name.to_string()),
                generation: Some(team.generation),
                owner_evidence: Some(
                    json!({"owner_id": team.owner_id, "incarnation": w.incarnation}),
                ),
                reason: None,
                outcome: None,
            },
            queue: wait.queue,
        });
        which.push(out.len());
        out.push((name.clone(), None));
    }
    if !targets.is_empty() {
        let results = deliver::deliver(&tmux, env.audit, &targets, wait.timeout);
        for (i, d) in which.into_iter().zip(results) {
            out[i].1 = Some(Sent::Ran(d));
        }
    }
    Ok(out
        .into_iter()
        .map(|(w, s)| (w, s.expect("every worker has a result")))
        .collect())
}
