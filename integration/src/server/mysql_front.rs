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
use crate::stream::{
    FollowerConfig, StreamConfig, StreamFiles, StreamFollower, StreamWriter, TxnRecordSource,
};

/// How long shutdown waits for the stream follower's round in progress.
const FOLLOWER_STOP_WAIT: Duration = Duration::from_secs(2);

/// How often the starter asks whether the coordinator is ready.
const READY_POLL: Duration = Duration::from_millis(50);

/// A node's MySQL port: bound at once, served once the coordinator is ready.
#[derive(Debug)]
pub struct MysqlFront {
    stop: Arc<AtomicBool>,
    server: Arc<Mutex<Option<MysqlServer>>>,
    follower: Arc<Mutex<Option<StreamFollower>>>,
    starter: Option<JoinHandle<()>>,
}

impl MysqlFront {
    /// Serves `listener` for node `node` once `coordinator` is ready; with `stream`, also
    /// keeps the cluster's replica stream there and serves it to MariaDB replicas.
    ///
    /// # Errors
    /// When the starter thread cannot be spawned.
    pub fn start(
        node: NodeId,
        listener: TcpListener,
        coordinator: Arc<NodeCoordinator>,
        config: MysqlConfig,
        stream: Option<StreamConfig>,
    ) -> std::io::Result<MysqlFront> {
        let stop = Arc::new(AtomicBool::new(false));
        let server = Arc::new(Mutex::new(None));
        let follower = Arc::new(Mutex::new(None));
        let (stop2, server2, follower2) = (stop.clone(), server.clone(), follower.clone());
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
                let mut config = config;
                if let Some(files) =
                    stream.and_then(|cfg| follow(node, cfg, client.clone(), &follower2))
                {
                    config = config.with_replication_source(files);
                }
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
            follower,
            starter: Some(starter),
        })
    }

    /// Stops serving: no new connections; open ones closed, their sessions' transactions
    /// rolled back.
    pub fn shutdown(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The follower first: its round needs the regions, which may be stopping too.
        if let Some(f) = self.follower.lock().as_ref() {
            f.signal_stop();
        }
        if let Some(s) = self.starter.take() {
            let _ = s.join();
        }
        if let Some(s) = self.server.lock().take() {
            s.shutdown();
        }
        if let Some(mut f) = self.follower.lock().take()
            && !f.stop_within(std::time::Instant::now() + FOLLOWER_STOP_WAIT)
        {
            eprintln!(
                "replica stream follower still in a round after {FOLLOWER_STOP_WAIT:?}; stopping anyway"
            );
        }
    }
}

/// Opens the node's stream files and starts following the cluster into them; returns
/// their readable side, `None` (said on stderr) when they cannot be opened.
fn follow(
    node: NodeId,
    cfg: StreamConfig,
    client: surge_txn::TxnClient,
    slot: &Mutex<Option<StreamFollower>>,
) -> Option<Arc<StreamFiles>> {
    let dir = cfg.dir.clone();
    let source = TxnRecordSource::new(client).with_positions(node, cfg.retention);
    let follower_cfg = FollowerConfig {
        interval: cfg.round_every,
        publish_every: cfg.retention.publish_every(),
        collect_every: cfg.retention.collect_every,
        ..FollowerConfig::default()
    };
    let started = StreamWriter::open(cfg)
        .map_err(|e| e.to_string())
        .and_then(|w| {
            StreamFollower::start(w, Box::new(source), follower_cfg).map_err(|e| e.to_string())
        });
    match started {
        Ok(f) => {
            let files = f.files();
            *slot.lock() = Some(f);
            Some(files)
        }
        Err(e) => {
            eprintln!(
                "surgedb node {node}: replica stream in {} not kept: {e}",
                dir.display()
            );
            None
        }
    }
}
