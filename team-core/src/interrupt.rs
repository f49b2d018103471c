//! A request to stop, set by the binary's signal handler (SIGINT, SIGTERM) and checked by the
//! operations at the points where stopping is clean: before a commit (the step rolls back)
//! and while waiting (readiness, drains). After a commit an operation finishes its step. The
//! library installs no handler and reads no environment; it only reads this flag.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Interrupts** are checked at `up`'s step boundaries before its commit (rolled back like any
//!   failure), in delivery's readiness wait (a paste already made gets its Enter), and in `down`'s
//!   drain wait (drain marks undone, nothing removed). Teardown, `shutdown` and `reconcile` are not
//!   cut short: the first signal lets them finish (bounded by `--grace`), then the command reports
//!   and exits 130. A second signal exits 130 at once (`signal_hook::flag::
//!   register_conditional_shutdown`), like a crash.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The flag a signal handler sets (`signal_hook::flag::register`).
pub fn flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// `Err(Interrupted(step))` once a stop was requested.
pub fn check(step: &str) -> Result<()> {
    if requested() {
        return Err(Error::Interrupted(step.to_string()));
    }
    Ok(())
}
