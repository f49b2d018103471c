//! `team-scale attach TEAM`: attach the terminal to the team's session on its own server
//! (`switch-client` when already a client of that server), or print the command when stdout is
//! not a terminal (a leader agent's shell, a script).

use std::io::IsTerminal;

use serde_json::json;
use team_core::ExitClass;
use team_core::paths::TeamName;
use team_core::view;

use crate::cli::TeamArg;
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult};
use crate::out::Out;

pub fn run(ctx: &Ctx, a: TeamArg) -> CliResult<i32> {
    let team_name = TeamName::new(&a.team)?;
    let team = ctx.store(&team_name).snapshot()?.team;
    let tmux = ctx.tmux(&team.endpoint);
    let listing = tmux.list();
    let session = match view::session_present(&team, &listing) {
        Some(true) => team.session.id.clone(),
        _ => match view::rebound_session(&team, &listing) {
            Some((id, _)) => id,
            None => {
                return Err(CliError::fail(
                    ExitClass::Unavailable,
                    format!(
                        "team {team_name}'s session {} is not on its server {}",
                        team.session.name,
                        team.endpoint.display()
                    ),
                )
                .with_hint(format!("`team-scale status {team_name}` says what is left")));
            }
        },
    };
    let inside_same = ctx
        .tmux_env
        .as_ref()
        .is_some_and(|(sock, _)| sock == &team.endpoint);
    let argv = tmux.attach_argv(&session, inside_same);
    let line = argv
        .iter()
        .map(|a| {
            let a = a.to_string_lossy();
            // Quoted only where a shell would read something into it.
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_/.,:=@%+-".contains(c))
            {
                a.into_owned()
            } else {
                team_core::tmux::quote::sh_quote(&a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    if ctx.json || !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        let mut out = Out::new(ctx.json);
        out.record(&json!({
            "type": "summary", "team": team_name, "action": "attach", "ok": true,
            "attached": false, "command": line, "session_id": session,
            "endpoint": team.endpoint,
        }))?;
        out.line(&line)?;
        out.flush()?;
        return Ok(0);
    }
    let status = tmux.attach(&session, inside_same)?;
    Ok(status.code().unwrap_or(1))
}
