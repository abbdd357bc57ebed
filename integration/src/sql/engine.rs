//! [`SqlEngine`]: one node's SQL layer, the [`SessionFactory`] the MySQL server opens
//! sessions from. It holds what sessions share: the transaction client, the cached
//! catalog, the id allocator, global variables and the process list.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_txn::{BinlogTable, LockMode, TxnClient};

use super::catalog::TableDef;

use super::admin::ClusterAdmin;
use super::catalog::{Catalog, IdAllocator};
use super::exec::{Session, default_variables};
use super::output::SqlError;
use super::session::{ConnectionInfo, SessionFactory, SqlSession};
use super::value::Value;

/// How an engine is set up.
#[derive(Clone)]
pub struct SqlConfig {
    /// This node's id (SHOW PROCESSLIST, `@@server_id`).
    pub node_id: u64,
    /// Cluster controls (lock mode, region map) for `set config`, `show config` and `SHOW
    /// TABLE t REGIONS`; `None`: through the engine's own transaction client
    /// ([`crate::sql::ClientAdmin`]).
    pub admin: Option<Arc<dyn ClusterAdmin>>,
    /// How long a cached schema is trusted before its version is read again.
    pub schema_lease: Duration,
    /// `@@version`.
    pub server_version: String,
}

impl std::fmt::Debug for SqlConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlConfig")
            .field("node_id", &self.node_id)
            .field("admin", &self.admin.is_some())
            .field("schema_lease", &self.schema_lease)
            .field("server_version", &self.server_version)
            .finish()
    }
}

impl Default for SqlConfig {
    fn default() -> SqlConfig {
        SqlConfig {
            node_id: 1,
            admin: None,
            schema_lease: Duration::from_millis(500),
            server_version: format!("8.0.11-SurgeDB-{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

impl SqlConfig {
    /// This config for node `id`.
    pub fn with_node_id(mut self, id: u64) -> SqlConfig {
        self.node_id = id;
        self
    }

    /// This config with cluster controls.
    pub fn with_admin(mut self, admin: Arc<dyn ClusterAdmin>) -> SqlConfig {
        self.admin = Some(admin);
        self
    }

    /// This config with a schema lease.
    pub fn with_schema_lease(mut self, lease: Duration) -> SqlConfig {
        self.schema_lease = lease;
        self
    }
}

/// A session as SHOW PROCESSLIST lists it.
#[derive(Debug, Clone)]
pub(crate) struct Process {
    pub(crate) user: String,
    pub(crate) host: String,
    pub(crate) db: Option<String>,
    pub(crate) since: Instant,
    pub(crate) info: Option<String>,
}

/// The lock-mode switches as TiKV names them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LockSwitches {
    pub(crate) pipelined: bool,
    pub(crate) in_memory: bool,
}

impl LockSwitches {
    pub(crate) fn mode(self) -> LockMode {
        if self.in_memory {
            LockMode::InMemory
        } else if self.pipelined {
            LockMode::Pipelined
        } else {
            LockMode::Sync
        }
    }

    pub(crate) fn of(mode: LockMode) -> LockSwitches {
        match mode {
            LockMode::Sync => LockSwitches::default(),
            LockMode::Pipelined => LockSwitches {
                pipelined: true,
                in_memory: false,
            },
            // InMemory, and any mode added later: the most relaxed switches.
            _ => LockSwitches {
                pipelined: true,
                in_memory: true,
            },
        }
    }
}

/// A table definition and its binlog description.
pub(crate) type DescribedTable = (Arc<TableDef>, Arc<BinlogTable>);

/// What an engine's sessions share.
pub(crate) struct Shared {
    pub(crate) client: TxnClient,
    pub(crate) config: SqlConfig,
    pub(crate) catalog: Catalog,
    pub(crate) ids: IdAllocator,
    pub(crate) globals: Mutex<BTreeMap<String, Value>>,
    pub(crate) processes: Mutex<BTreeMap<u32, Process>>,
    pub(crate) started: Instant,
    pub(crate) questions: AtomicU64,
    pub(crate) lock: Mutex<LockSwitches>,
    /// Binlog descriptions of tables, by table id, with the definition they describe.
    pub(crate) binlog_tables: Mutex<HashMap<i64, DescribedTable>>,
}

impl Shared {
    /// The binlog description of `t` (cached while its definition stays the same).
    pub(crate) fn binlog_table(&self, t: &Arc<TableDef>) -> Result<Arc<BinlogTable>, SqlError> {
        if let Some((def, bt)) = self.binlog_tables.lock().get(&t.id)
            && (Arc::ptr_eq(def, t) || **def == **t)
        {
            return Ok(bt.clone());
        }
        let bt = Arc::new(super::exec::binlog_table(t)?);
        self.binlog_tables
            .lock()
            .insert(t.id, (t.clone(), bt.clone()));
        Ok(bt)
    }

    pub(crate) fn count_question(&self) {
        self.questions.fetch_add(1, Ordering::Relaxed);
    }
}

/// One node's SQL engine.
#[derive(Clone)]
pub struct SqlEngine {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SqlEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlEngine")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl SqlEngine {
    /// An engine running statements through `client`.
    pub fn new(client: TxnClient, mut config: SqlConfig) -> SqlEngine {
        if config.admin.is_none() {
            config.admin = Some(Arc::new(super::admin::ClientAdmin::new(client.clone())));
        }
        let lock = config
            .admin
            .as_ref()
            .and_then(|a| a.lock_mode())
            .map_or_else(LockSwitches::default, LockSwitches::of);
        let shared = Shared {
            catalog: Catalog::new(client.clone(), config.schema_lease),
            ids: IdAllocator::new(client.clone()),
            globals: Mutex::new(default_variables(&config)),
            processes: Mutex::new(BTreeMap::new()),
            started: Instant::now(),
            questions: AtomicU64::new(0),
            lock: Mutex::new(lock),
            binlog_tables: Mutex::new(HashMap::new()),
            client,
            config,
        };
        SqlEngine {
            shared: Arc::new(shared),
        }
    }

    /// A session for `conn` (as [`SessionFactory::open`], but the concrete type).
    ///
    /// # Errors
    /// 1049 when `conn.database` does not exist.
    pub fn session(&self, conn: &ConnectionInfo) -> Result<Session, SqlError> {
        Session::open(self.shared.clone(), conn)
    }

    /// The transaction client.
    pub fn client(&self) -> &TxnClient {
        &self.shared.client
    }
}

impl SessionFactory for SqlEngine {
    fn open(&self, conn: &ConnectionInfo) -> Result<Box<dyn SqlSession>, SqlError> {
        Ok(Box::new(self.session(conn)?))
    }
}
