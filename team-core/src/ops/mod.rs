//! Multi-step operations shared by the binaries: proven pane kills, scale-up, scale-down,
//! shutdown, reconcile, and the teardown of `removing` workers.

pub mod down;
pub mod kill;
pub mod reconcile;
pub mod resources;
pub mod teardown;
