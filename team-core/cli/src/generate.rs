//! `generate` (hidden in every binary): man pages, one per subcommand, and shell completions,
//! from the clap definitions. `cargo xtask dist` calls it for every binary.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use team_core::ExitClass;

use crate::error::{CliError, CliResult};

/// What `generate` prints.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// `man`, or a shell: bash, zsh, fish, elvish, powershell.
    #[arg(value_parser = ["man", "bash", "zsh", "fish", "elvish", "powershell"])]
    pub what: String,
    /// For `man`: write `<tool>.1` and `<tool>-<subcommand>.1` into DIR (without it, only
    /// `<tool>.1` is printed on stdout).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// The sections every man page carries beyond clap's: what the tool reads from its
/// environment, the files it uses, and exit statuses of its own beyond the shared table.
#[derive(Debug, Clone, Copy)]
pub struct ManInfo {
    /// `(VARIABLE, meaning)`.
    pub environment: &'static [(&'static str, &'static str)],
    /// `(path, meaning)`.
    pub files: &'static [(&'static str, &'static str)],
    /// Statuses only this tool uses, as `(code, meaning)`.
    pub extra_status: &'static [(&'static str, &'static str)],
}

/// Runs `generate` for the binary whose clap definition is `C`.
pub fn run<C: CommandFactory>(a: &GenerateArgs, info: &ManInfo) -> CliResult<i32> {
    let mut cmd = C::command();
    let name = cmd.get_name().to_string();
    let mut out = crate::out::Out::new(false);
    if a.what == "man" {
        let pages = man_pages(cmd, info)?;
        match &a.out_dir {
            Some(dir) => {
                for (file, page) in &pages {
                    write_file(&dir.join(file), page)?;
                }
            }
            None => out.bytes(&pages[0].1)?,
        }
    } else {
        if a.out_dir.is_some() {
            return Err(CliError::usage("--out-dir is only for `generate man`"));
        }
        let shell: clap_complete::Shell = a.what.parse().map_err(|e: String| CliError::usage(e))?;
        // Rendered in memory first: clap_complete panics on a write error (a closed pipe).
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut cmd, name, &mut buf);
        out.bytes(&buf)?;
    }
    out.flush()?;
    Ok(0)
}

fn write_file(path: &Path, bytes: &[u8]) -> CliResult<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| team_core::Error::io("create", d, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| team_core::Error::io("write", path, e).into())
}

/// Every page: `(<file name>, roff)`, the tool's own first, then one per visible subcommand
/// (named `<tool>-<sub>`, so the SEE ALSO references of the first page exist).
pub fn man_pages(cmd: clap::Command, info: &ManInfo) -> CliResult<Vec<(String, Vec<u8>)>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let tool = cmd.get_name().to_string();
    let mut pages = vec![(format!("{tool}.1"), page(cmd.clone(), info)?)];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // clap names are `'static`; this runs once per page of a short-lived generator.
        let name: &'static str = Box::leak(format!("{tool}-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name).display_name(name).bin_name(name);
        pages.push((format!("{name}.1"), page(sub, info)?));
    }
    Ok(pages)
}

fn page(cmd: clap::Command, info: &ManInfo) -> CliResult<Vec<u8>> {
    let has_version = cmd.get_version().is_some();
    let man = clap_mangen::Man::new(cmd);
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    man.render_options_section(&mut buf)?;
    man.render_subcommands_section(&mut buf)?;
    buf.extend_from_slice(b".SH \"EXIT STATUS\"\n");
    let table = ExitClass::TABLE.lines().skip(1).map(|l| {
        let l = l.trim();
        let (code, what) = l.split_once(' ').unwrap_or((l, ""));
        (code.to_string(), what.trim().to_string())
    });
    let extra = info
        .extra_status
        .iter()
        .map(|(c, w)| (c.to_string(), w.to_string()));
    for (code, what) in table.chain(extra) {
        buf.extend_from_slice(format!(".TP\n{code}\n{}\n", roff(&what)).as_bytes());
    }
    section(&mut buf, "ENVIRONMENT", info.environment);
    section(&mut buf, "FILES", info.files);
    if has_version {
        man.render_version_section(&mut buf)?;
    }
    let _ = buf.flush();
    Ok(buf)
}

fn section(buf: &mut Vec<u8>, title: &str, items: &[(&str, &str)]) {
    buf.extend_from_slice(format!(".SH {title}\n").as_bytes());
    for (k, v) in items {
        buf.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", roff(k), roff(v)).as_bytes());
    }
}

/// Escapes text for roff: backslashes, and a leading dot or quote.
fn roff(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}
