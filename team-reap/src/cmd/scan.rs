//! `team-reap scan`: list candidates and verdicts; change nothing.

use crate::cli::Global;
use crate::ctx::Ctx;
use crate::error::CliResult;

use super::run::{Mode, run as engine};

pub fn run(ctx: &Ctx, g: &Global) -> CliResult<i32> {
    engine(ctx, g, Mode::Scan)
}
