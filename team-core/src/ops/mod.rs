//! Membership-changing operations shared by the binaries.

pub mod down;
pub mod reconcile;
pub mod resources;
pub mod teardown;
