//! Agent profiles: what each agent CLI (Codex, Claude Code, Gemini CLI, aider, a shell, or a
//! user-defined program) looks like as a worker, as data: how it takes its first prompt, what
//! "ready for input" looks like, which screens block work and what the user must do about
//! them, and how typed input is submitted.
//!
//! - [`profiles`]: the built-in profiles, the user's `agents.toml`, detection from a command.
//! - [`screen`]: the pure reading of a pane's screen against a profile.
//! - [`exit`]: the worker's `exit.json` (written by its supervisor when its process exits).

pub mod exit;
pub mod profiles;
pub mod screen;

pub use profiles::{Blocker, Profile, PromptMode, detect, program_of, resolve};
pub use screen::{Seen, classify};
