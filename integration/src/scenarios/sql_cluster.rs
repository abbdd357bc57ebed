//! [`SqlCluster`]: a 3-node [`LocalCluster`] in the process with the MySQL front end on a
//! loopback port, so that the demo and tests speak SQL to it over the real protocol.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient};

use super::error::ScenarioError;
use crate::mysql::{MysqlConfig, MysqlServer};
use crate::sql::{LocalClusterAdmin, SqlConfig, SqlEngine};

/// An in-process cluster serving the MySQL protocol on `127.0.0.1`.
#[derive(Debug)]
pub struct SqlCluster {
    cluster: Arc<LocalCluster>,
    server: Option<MysqlServer>,
}

impl SqlCluster {
    /// Starts 3 nodes with data under `dir`, pessimistic locks in `mode`, and the MySQL port.
    ///
    /// # Errors
    /// [`ScenarioError`] when the cluster or the port cannot start.
    pub fn start(dir: &Path, mode: LockMode) -> Result<SqlCluster, ScenarioError> {
        let cluster = Arc::new(LocalCluster::start(
            ClusterConfig::new(dir).with_lock_mode(mode),
        )?);
        cluster.wait_for_leaders(Duration::from_secs(20))?;
        // A row lock waits up to 50 s, InnoDB's default innodb_lock_wait_timeout (the
        // client's own default, 1 s, suits key-value use).
        let client = TxnClient::new(
            cluster.router(),
            ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_secs(50))),
        );
        let config =
            SqlConfig::default().with_admin(Arc::new(LocalClusterAdmin::new(cluster.clone())));
        let engine = SqlEngine::new(client, config);
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| ScenarioError::Setup {
            detail: format!("cannot listen on a loopback port: {e}"),
        })?;
        let server = MysqlServer::start(listener, MysqlConfig::default(), Arc::new(engine))
            .map_err(|e| ScenarioError::Setup {
                detail: format!("MySQL front end: {e}"),
            })?;
        Ok(SqlCluster {
            cluster,
            server: Some(server),
        })
    }

    /// The MySQL port's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        match &self.server {
            Some(s) => s.local_addr(),
            None => std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        }
    }

    /// The `mysql://` URL of the port (user root, no password).
    pub fn url(&self) -> String {
        format!("mysql://root@{}", self.addr())
    }

    /// The cluster.
    pub fn cluster(&self) -> &Arc<LocalCluster> {
        &self.cluster
    }
}

impl Drop for SqlCluster {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}
