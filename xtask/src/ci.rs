//! `cargo xtask ci`: if this passes locally, CI is green.

use std::path::Path;

use duct::cmd;

/// The test command the README and `.ci/run` use.
pub const TEST_ARGS: &[&str] = &["test", "--workspace", "--all-features"];

pub fn run(root: &Path) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask ci: cargo fmt --check");
    cmd!(&cargo, "fmt", "--all", "--check").dir(root).run()?;
    eprintln!("xtask ci: cargo clippy --all-targets --all-features -- -D warnings");
    cmd!(
        &cargo,
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings"
    )
    .dir(root)
    .run()?;
    eprintln!("xtask ci: cargo {}", TEST_ARGS.join(" "));
    cmd(&cargo, TEST_ARGS).dir(root).run()?;
    Ok(())
}
