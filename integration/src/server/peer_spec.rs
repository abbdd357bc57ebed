//! `--peers ID=ADDR,...` and the Raft address each node derives from its client address.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};

use surge_raft_lite::NodeId;

/// Why a peer list or address was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerSpecError {
    /// An entry is not `ID=HOST:PORT`.
    #[error("peer {entry:?} is not ID=HOST:PORT")]
    BadEntry {
        /// The entry.
        entry: String,
    },
    /// A node id is 0 (reserved by raft-lite) or appears twice.
    #[error("peer id {id} is reserved or repeated")]
    BadId {
        /// The id.
        id: NodeId,
    },
    /// An address does not resolve, or its port leaves no room for the Raft port.
    #[error("address {addr:?}: {detail}")]
    BadAddr {
        /// The address.
        addr: String,
        /// Why.
        detail: String,
    },
}

/// Parses `1=127.0.0.1:7001,2=127.0.0.1:7003`.
///
/// # Errors
/// [`PeerSpecError`] naming the first bad entry.
pub fn parse_peers(spec: &str) -> Result<BTreeMap<NodeId, String>, PeerSpecError> {
    let mut peers = BTreeMap::new();
    for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || PeerSpecError::BadEntry {
            entry: entry.to_string(),
        };
        let (id, addr) = entry.split_once('=').ok_or_else(bad)?;
        let id: NodeId = id.trim().parse().map_err(|_| bad())?;
        if id == 0 || peers.insert(id, addr.trim().to_string()).is_some() {
            return Err(PeerSpecError::BadId { id });
        }
        resolve(addr.trim())?;
    }
    Ok(peers)
}

/// Resolves `addr` to its first socket address.
///
/// # Errors
/// [`PeerSpecError::BadAddr`].
pub fn resolve(addr: &str) -> Result<SocketAddr, PeerSpecError> {
    addr.to_socket_addrs()
        .map_err(|e| PeerSpecError::BadAddr {
            addr: addr.to_string(),
            detail: e.to_string(),
        })?
        .next()
        .ok_or_else(|| PeerSpecError::BadAddr {
            addr: addr.to_string(),
            detail: "resolves to nothing".into(),
        })
}

/// The Raft address of a node whose client address is `client`: the same host, the next
/// port. One flag per node then names both, and `--peers` lists client addresses only.
///
/// # Errors
/// [`PeerSpecError::BadAddr`] if `client` does not resolve or its port is 65535.
pub fn raft_addr_of(client: &str) -> Result<SocketAddr, PeerSpecError> {
    let mut addr = resolve(client)?;
    let port = addr
        .port()
        .checked_add(1)
        .ok_or_else(|| PeerSpecError::BadAddr {
            addr: client.to_string(),
            detail: "port 65535 leaves no room for the Raft port (client port + 1)".into(),
        })?;
    addr.set_port(port);
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_bad_ones_are_named() {
        let p = parse_peers("1=127.0.0.1:7001, 2=127.0.0.1:7003").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[&2], "127.0.0.1:7003");
        assert_eq!(
            parse_peers("1:127.0.0.1:7001"),
            Err(PeerSpecError::BadEntry {
                entry: "1:127.0.0.1:7001".into()
            })
        );
        assert_eq!(
            parse_peers("0=127.0.0.1:1"),
            Err(PeerSpecError::BadId { id: 0 })
        );
        assert_eq!(
            parse_peers("1=127.0.0.1:1,1=127.0.0.1:2"),
            Err(PeerSpecError::BadId { id: 1 })
        );
        assert!(matches!(
            parse_peers("1=nonsense"),
            Err(PeerSpecError::BadAddr { .. })
        ));
    }

    #[test]
    fn the_raft_port_is_the_client_port_plus_one() {
        assert_eq!(
            raft_addr_of("127.0.0.1:7001").unwrap(),
            "127.0.0.1:7002".parse().unwrap()
        );
        assert!(raft_addr_of("127.0.0.1:65535").is_err());
    }
}
