//! Integration tests: the real binaries against real tmux servers that the tests start.

mod audit_common;
mod audit_concurrent;
mod audit_hook;
mod audit_pass;
mod audit_record_verify;
mod audit_vocabulary;
mod conformance;
mod core_kill;
mod core_process;
mod hook_guard;
mod init_status;
mod locks;
mod progress;
mod proofs;
mod quoting;
mod reap;
mod reap_contract;
mod reap_crash;
mod scale_big;
mod scale_down;
mod scale_gaps;
mod scale_up;
mod tasks;
mod tidy;
