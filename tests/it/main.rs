//! Integration tests: the real binaries against real tmux servers that the tests start.

mod audit_vocabulary;
mod conformance;
mod hook_guard;
mod init_status;
mod locks;
mod progress;
mod proofs;
mod quoting;
mod reap_contract;
mod reap_crash;
mod scale_big;
mod tasks;
mod tidy;
