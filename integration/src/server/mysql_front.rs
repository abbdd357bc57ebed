//! [`MysqlFront`]: a node's MySQL port. The SQL engine runs its statements through the
//! node's own transaction coordinator, so the port is served only once the coordinator is
//! ready (its recovery may need peers that are not up yet); until then connections wait in
//! the listen backlog, and `surgedb cluster start` waits for every port's greeting.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use surge_raft_lite::NodeId;

use super::coordinator::NodeCoordinator;
use crate::mysql::{MysqlConfig, MysqlServer};
use crate::sql::{ClientAdmin, SqlConfig, SqlEngine};

/// How often the starter asks whether the coordinator is ready.
const READY_POLL: Duration = Duration::from_millis(50);

/// A node's MySQL port: bound at once, served once the coordinator is ready.
#[derive(Debug)]
pub struct MysqlFront {
    stop: Arc<AtomicBool>,
    server: Arc<Mutex<Option<MysqlServer>>>,
    starter: Option<JoinHandle<()>>,
}

impl MysqlFront {
    /// Serves `listener` for node `node` once `coordinator` is ready.
    ///
    /// # Errors
    /// When the starter thread cannot be spawned.
    pub fn start(
        node: NodeId,
        listener: TcpListener,
        coordinator: Arc<NodeCoordinator>,
        config: MysqlConfig,
    ) -> std::io::Result<MysqlFront> {
        let stop = Arc::new(AtomicBool::new(false));
        let server = Arc::new(Mutex::new(None));
        let (stop2, server2) = (stop.clone(), server.clone());
        let starter = std::thread::Builder::new()
            .name("mysql-start".into())
            .spawn(move || {
                let client = loop {
                    if stop2.load(Ordering::SeqCst) {
                        return;
                    }
                    match coordinator.client() {
                        Ok(c) => break c,
                        Err(_) => std::thread::sleep(READY_POLL),
                    }
                };
                let mut sql = SqlConfig::default()
                    .with_node_id(node)
                    .with_admin(Arc::new(ClientAdmin::new(client.clone())));
                // `SELECT @@version` answers what the handshake announced.
                sql.server_version.clone_from(&config.server_version);
                let engine = SqlEngine::new(client, sql);
                match MysqlServer::start(listener, config, Arc::new(engine)) {
                    Ok(s) => {
                        let mut slot = server2.lock();
                        if stop2.load(Ordering::SeqCst) {
                            drop(slot);
                            s.shutdown();
                        } else {
                            eprintln!("surgedb node {node}: MySQL protocol on {}", s.local_addr());
                            *slot = Some(s);
                        }
                    }
                    Err(e) => eprintln!("surgedb node {node}: MySQL port not served: {e}"),
                }
            })?;
        Ok(MysqlFront {
            stop,
            server,
            starter: Some(starter),
        })
    }

    /// Stops serving: no new connections; open ones closed, their sessions' transactions
    /// rolled back.
    pub fn shutdown(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(s) = self.starter.take() {
            let _ = s.join();
        }
        if let Some(s) = self.server.lock().take() {
            s.shutdown();
        }
    }
}
