//! `cargo xtask dist`: release binaries, man pages (one per subcommand), shell completions
//! and the licence texts in `target/dist/`.

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
        let man = dist.join("man/man1");
        let o = crate::util::tool(&bin, b, None)
            .args(["generate", "man", "--out-dir"])
            .arg(&man)
            .output()?;
        if !o.status.success() || !man.join(format!("{b}.1")).exists() {
            bail!(
                "{b} generate man failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::fs::write(dist.join(format!("completions/bash/{b}")), render("bash")?)?;
        std::fs::write(dist.join(format!("completions/zsh/_{b}")), render("zsh")?)?;
        std::fs::write(
            dist.join(format!("completions/fish/{b}.fish")),
            render("fish")?,
        )?;
    }
    for f in ["LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        std::fs::copy(root.join(f), dist.join(f)).with_context(|| format!("copy {f}"))?;
    }
    println!(
        "target/dist: bin/, man/man1/ (a page per subcommand), completions/{{bash,zsh,fish}}/, licences for {}",
        BINS.join(", ")
    );
    Ok(())
}
