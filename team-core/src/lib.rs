//! `team-core`: the library under the team tools.
//!
//! It owns state files, locks, the redo journal, the tmux layer, pane and process proofs, and the
//! audit writer. It never prints, never exits, and never reads environment variables: the
//! binaries read what they need and pass it in.

pub mod agent;
pub mod audit;
pub mod childenv;
pub mod error;
pub mod failpoint;
pub mod fsutil;
pub mod git;
pub mod interrupt;
pub mod journal;
pub mod lock;
pub mod model;
pub mod ops;
pub mod paths;
pub mod process;
pub mod proctree;
pub mod proof;
pub mod reap;
pub mod store;
pub mod supervisor;
pub mod tmux;
pub mod view;
pub mod workspace;

pub use error::{Error, ExitClass, Result};
