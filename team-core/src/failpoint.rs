//! Named fail points for rollback and crash tests.
//!
//! Compiled to nothing unless the `failpoints` feature is on. The binaries read
//! `TEAM_FAILPOINTS` (`name=error`, `name=exit` or `name=sleep<ms>`, comma-separated) and pass
//! it to [`configure`].
//! `error` makes [`hit`] return [`Error::FailPoint`]; `exit` ends the process abruptly at once
//! (like a crash: no destructors, no unlocking but the kernel's).

#[cfg(feature = "failpoints")]
use crate::error::Error;
use crate::error::Result;

#[cfg(feature = "failpoints")]
static SPEC: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Configures the fail points from a spec string. A no-op without the `failpoints` feature.
pub fn configure(spec: Option<&str>) {
    #[cfg(feature = "failpoints")]
    {
        let parsed = spec
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (n, a) = s.split_once('=').unwrap_or((s, "error"));
                (n.trim().to_string(), a.trim().to_string())
            })
            .collect();
        let _ = SPEC.set(parsed);
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = spec;
}

/// Passes the fail point `name`: returns an error, or exits the process, when configured to.
#[inline]
pub fn hit(name: &str) -> Result<()> {
    #[cfg(feature = "failpoints")]
    if let Some(spec) = SPEC.get() {
        for (n, action) in spec {
            if n == name {
                if action == "exit" {
                    // An abrupt end, as in a crash: skip destructors and buffered output.
                    std::process::exit(137);
                }
                if let Some(ms) = action.strip_prefix("sleep").and_then(|m| m.parse().ok()) {
                    // Widens a race window on purpose (tests of what runs meanwhile).
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    return Ok(());
                }
                return Err(Error::FailPoint(name.to_string()));
            }
        }
    }
    let _ = name;
    Ok(())
}
