//! The placement layer: the meta group (region map, timestamp oracle and GC holds).

mod gc_hold;
mod meta_peer;
mod meta_state;

pub use gc_hold::GcHold;
pub use meta_state::{META_REGION_ID, even_split_keys, initial_regions};

pub(crate) use meta_peer::{MetaPeer, MetaStateMachine};
pub(crate) use meta_state::{MAX_REGION_ID_BATCH, MetaCommand};
