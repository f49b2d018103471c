//! `generate` (hidden): shell completions and the man page, from the clap definitions.
//! `cargo xtask dist` calls it for every binary.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// Writes `what` (`man`, or a shell name) to stdout; returns the exit status.
pub fn run(what: &str) -> std::io::Result<i32> {
    let mut cmd = Cli::command();
    let name = cmd.get_name().to_string();
    // Rendered in memory first: clap_complete panics on a write error (a closed pipe).
    let mut buf = Vec::new();
    if what == "man" {
        clap_mangen::Man::new(cmd).render(&mut buf)?;
    } else {
        let shell: clap_complete::Shell = what
            .parse()
            .map_err(|e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        clap_complete::generate(shell, &mut cmd, name, &mut buf);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&buf)?;
    out.flush()?;
    Ok(0)
}
