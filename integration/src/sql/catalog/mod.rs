//! The catalog: databases and table definitions, kept transactionally in the store under
//! `m` so every node sees one schema and it survives
//! restarts, cached per engine.

mod autoinc;
pub(crate) mod cache;
mod def;
mod store;

pub(crate) use autoinc::IdAllocator;
pub(crate) use cache::Catalog;
pub use def::{ColumnDef, IndexDef, TableDef};
pub(crate) use store::CatalogTxn;
