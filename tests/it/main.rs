//! Integration tests: the real binaries against real tmux servers that the tests start.

mod ancestry;
mod audit_crash;
mod durable_dirs;
mod hook_guard;
mod init_status;
mod locks;
mod progress;
mod proofs;
mod quoting;
mod readers;
mod reap_crash;
mod scale_big;
mod symlinks;
mod tasks;
mod tmux_timeout;
mod unverifiable;
mod worktree_keep;
