//! `cargo xtask dist`: release binaries, man pages and shell completions in `target/dist/`.

use std::path::Path;

use anyhow::{Context, bail};

const BINS: &[&str] = &["team-scale", "team-reap", "team-audit"];

pub fn run(root: &Path) -> anyhow::Result<()> {
    let bin = crate::util::build_bins(root, true, false)?;
    let dist = root.join("target/dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)?;
    }
    for dir in [
        "bin",
        "man/man1",
        "completions/bash",
        "completions/zsh",
        "completions/fish",
    ] {
        std::fs::create_dir_all(dist.join(dir))?;
    }
    for b in BINS {
        std::fs::copy(bin.join(b), dist.join("bin").join(b))
            .with_context(|| format!("copy {b}"))?;
        let render = |what: &str| -> anyhow::Result<Vec<u8>> {
            let o = crate::util::tool(&bin, b, None)
                .args(["generate", what])
                .output()?;
            if !o.status.success() || o.stdout.is_empty() {
                bail!(
                    "{b} generate {what} failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            Ok(o.stdout)
        };
        std::fs::write(dist.join(format!("man/man1/{b}.1")), render("man")?)?;
        std::fs::write(dist.join(format!("completions/bash/{b}")), render("bash")?)?;
        std::fs::write(dist.join(format!("completions/zsh/_{b}")), render("zsh")?)?;
        std::fs::write(
            dist.join(format!("completions/fish/{b}.fish")),
            render("fish")?,
        )?;
    }
    println!(
        "target/dist: bin/, man/man1/, completions/{{bash,zsh,fish}}/ for {}",
        BINS.join(", ")
    );
    Ok(())
}
