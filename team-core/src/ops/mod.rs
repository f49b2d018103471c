//! Multi-step operations shared by the binaries: proven pane kills, scale-up, and the
//! teardown of abandoned reservations.

pub mod kill;
