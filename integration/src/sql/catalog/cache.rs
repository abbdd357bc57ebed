//! [`Catalog`]: an engine's cached copy of the catalog, refreshed when the schema version in
//! the store changed.
//!
//! The version key is read at most once per lease (as TiDB's schema lease, here short), and
//! at once after this engine's own DDL. A DDL on another node is therefore seen within one
//! lease; statements already running finish on the schema they started with.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_txn::TxnClient;

use super::def::TableDef;
use super::store::{DB_PREFIX, TABLE_PREFIX, VERSION_KEY, parse_counter};
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;

/// One version of the schema.
#[derive(Debug, Default)]
pub(crate) struct Schema {
    /// Its version.
    pub(crate) version: i64,
    /// The databases.
    pub(crate) dbs: BTreeSet<String>,
    /// The tables by (database, name).
    pub(crate) tables: HashMap<(String, String), Arc<TableDef>>,
}

#[derive(Debug)]
struct State {
    schema: Arc<Schema>,
    checked: Option<Instant>,
}

/// The cached catalog.
#[derive(Debug)]
pub(crate) struct Catalog {
    client: TxnClient,
    lease: Duration,
    state: Mutex<State>,
}

impl Catalog {
    /// A catalog read through `client`, its version checked at most once per `lease`.
    pub(crate) fn new(client: TxnClient, lease: Duration) -> Catalog {
        Catalog {
            client,
            lease,
            state: Mutex::new(State {
                schema: Arc::new(Schema::default()),
                checked: None,
            }),
        }
    }

    /// The current schema (reloaded when the lease ran out and the version moved).
    ///
    /// # Errors
    /// A read failure or a damaged record.
    pub(crate) fn schema(&self) -> Result<Arc<Schema>, SqlError> {
        let current = {
            let st = self.state.lock();
            if st.checked.is_some_and(|t| t.elapsed() < self.lease) {
                return Ok(st.schema.clone());
            }
            st.schema.clone()
        };
        let v = self.client.get(VERSION_KEY).map_err(|e| from_txn(&e))?;
        let version = parse_counter(VERSION_KEY, v)?;
        let schema = if version == current.version && current.version != 0 {
            current
        } else {
            Arc::new(self.load(version)?)
        };
        let mut st = self.state.lock();
        st.schema = schema.clone();
        st.checked = Some(Instant::now());
        Ok(schema)
    }

    /// Forgets the cached version: the next [`Catalog::schema`] reads the store.
    pub(crate) fn invalidate(&self) {
        self.state.lock().checked = None;
    }

    fn load(&self, version: i64) -> Result<Schema, SqlError> {
        let mut schema = Schema {
            version,
            ..Schema::default()
        };
        let end = |p: &[u8]| {
            let mut e = p.to_vec();
            if let Some(last) = e.last_mut() {
                *last += 1;
            }
            e
        };
        let dbs = self
            .client
            .scan(DB_PREFIX, Some(&end(DB_PREFIX)), usize::MAX)
            .map_err(|e| from_txn(&e))?;
        for (k, _) in dbs {
            schema
                .dbs
                .insert(String::from_utf8_lossy(&k[DB_PREFIX.len()..]).into_owned());
        }
        let tables = self
            .client
            .scan(TABLE_PREFIX, Some(&end(TABLE_PREFIX)), usize::MAX)
            .map_err(|e| from_txn(&e))?;
        for (k, v) in tables {
            let def: TableDef = serde_json::from_slice(&v).map_err(|e| {
                SqlError::internal(format!(
                    "catalog record {} is damaged: {e}",
                    String::from_utf8_lossy(&k)
                ))
            })?;
            schema
                .tables
                .insert((def.db.clone(), def.name.clone()), Arc::new(def));
        }
        Ok(schema)
    }
}
