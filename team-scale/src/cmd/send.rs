//! `team-scale send TEAM WORKER TEXT` and `broadcast TEAM TEXT`: a message typed into workers'
//! agents through proven delivery (`team_core::ops::message`); each result is printed, and the
//! exit status is 0 only when every one was delivered.

use serde_json::json;
use team_core::ExitClass;
use team_core::model::Lifecycle;
use team_core::ops::message;
use team_core::paths::{TeamName, WorkerName};

use super::task::print_notices;
use crate::cli::{BroadcastArgs, SendArgs};
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult};
use crate::out::Out;

pub fn send(ctx: &Ctx, a: SendArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let worker = WorkerName::new(&a.worker)?;
    message::check_text(&a.text)?;
    run(
        ctx,
        &team,
        Some(vec![worker]),
        &a.text,
        message::Wait {
            timeout: a.ready_timeout,
            queue: a.queue,
        },
        "send",
    )
}

pub fn broadcast(ctx: &Ctx, a: BroadcastArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    message::check_text(&a.text)?;
    let wait = message::Wait {
        timeout: a.ready_timeout,
        queue: a.queue,
    };
    run(ctx, &team, None, &a.text, wait, "broadcast")
}

fn run(
    ctx: &Ctx,
    team: &TeamName,
    workers: Option<Vec<WorkerName>>,
    text: &str,
    wait: message::Wait,
    verb: &str,
) -> CliResult<i32> {
    let store = ctx.store(team);
    let audit = ctx.audit();
    let env = ctx.env(&store, &audit, &format!("team-scale {verb}"))?;
    let workers = match workers {
        Some(w) => w,
        None => {
            let t = store.load()?;
            let all: Vec<WorkerName> = t
                .in_state(Lifecycle::Active)
                .map(|w| w.name.clone())
                .collect();
            if all.is_empty() {
                return Err(CliError::fail(
                    ExitClass::Refused,
                    format!("team {team} has no active workers; nothing was sent"),
                ));
            }
            all
        }
    };
    let argv: Vec<String> = std::env::args().collect();
    let kind = if verb == "send" {
        "message"
    } else {
        "broadcast"
    };
    let results = message::send(&env, &workers, text, kind, &argv, wait)?;
    let mut out = Out::new(ctx.json);
    let all = print_notices(&mut out, &results, "the message")?;
    let delivered = results.iter().filter(|(_, s)| s.is_delivered()).count();
    out.record(&json!({
        "type": "summary", "team": team, "action": verb, "ok": all,
        "delivered": delivered, "workers": results.len(),
    }))?;
    out.line(&format!("{delivered} of {} delivered", results.len()))?;
    out.flush()?;
    if all {
        Ok(0)
    } else {
        Err(CliError::fail(
            ExitClass::Refused,
            format!(
                "the message reached {delivered} of {} worker(s)",
                results.len()
            ),
        )
        .with_hint("see each worker's line above; `team-scale peek` shows a worker's screen"))
    }
}
