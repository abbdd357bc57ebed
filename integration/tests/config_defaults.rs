//! The server-side configs' `Default` values leave the settings without a sensible default
//! unset (the node and cluster ids, the peers): using them unchanged is refused.

use surgedb::server::{KvServer, NodeConfig, NodeError, NodeProcess, ServerConfig};

/// Before, `KvServer::bind` accepted a config without a node or cluster id and would have
/// welcomed clients as node 0 of cluster "".
#[test]
fn a_server_config_without_ids_is_refused() {
    let addr = "127.0.0.1:0".parse().expect("address");
    match KvServer::bind(addr, ServerConfig::default()) {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}"),
        Ok(server) => panic!("bound {server:?} without ids"),
    }
    let server = KvServer::bind(addr, ServerConfig::new(1, "c1")).expect("bind with ids");
    drop(server);
}

/// `NodeConfig::default()` names no peers, so its node is not one of them.
#[test]
fn a_node_config_without_peers_is_refused() {
    match NodeProcess::start(&NodeConfig::default()) {
        Err(NodeError::NotAPeer { id: 0, peers }) => assert!(peers.is_empty()),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a node started without peers"),
    }
}
