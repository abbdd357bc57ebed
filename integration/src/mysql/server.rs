//! [`MysqlServer`]: the accept loop and a thread per connection.
//!
//! Invariants: every live connection has an entry in `conns` (a clone of its socket) from
//! before its thread starts until the thread ends; `threads` holds every connection thread
//! not yet joined. Shutdown stops the accept loop, shuts every registered socket down (a
//! blocked read then returns end-of-file, the loop ends and drops its session, which rolls
//! back) and joins every thread.

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::config::MysqlConfig;
use super::connection::serve;
use super::error::MysqlError;
use super::ok_err_eof::err_packet;
use super::packet::encode_packets;
use crate::sql::SessionFactory;

/// How often the accept loop looks at the stop flag when no client connects.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// A MySQL-protocol server: one thread accepting, one per connection, each connection with
/// its own [`SqlSession`](crate::sql::SqlSession) from the [`SessionFactory`].
///
/// Dropping it shuts it down as [`MysqlServer::shutdown`] does.
#[derive(Debug)]
pub struct MysqlServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    config: MysqlConfig,
    sessions: Arc<dyn SessionFactory>,
    stop: AtomicBool,
    next_id: AtomicU32,
    conns: Mutex<HashMap<u32, TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("stop", &self.stop)
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

/// Locks `m`; a connection thread that panicked while holding it leaves valid data behind
/// (a map of sockets, a list of handles), so poisoning is ignored.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MysqlServer {
    /// Starts serving `listener` (already bound) with `config`; each connection's session
    /// comes from `sessions`. Connection ids start at 1.
    ///
    /// # Errors
    /// The listener's address cannot be read or it cannot be made non-blocking, or the
    /// accept thread cannot start.
    pub fn start(
        listener: TcpListener,
        config: MysqlConfig,
        sessions: Arc<dyn SessionFactory>,
    ) -> Result<MysqlServer, MysqlError> {
        let local_addr = listener
            .local_addr()
            .map_err(|source| MysqlError::Listener {
                what: "local_addr",
                source,
            })?;
        // Non-blocking so that the accept loop sees the stop flag without a wake-up
        // connection (which could not reach a listener bound to an address it cannot route to).
        listener
            .set_nonblocking(true)
            .map_err(|source| MysqlError::Listener {
                what: "set_nonblocking",
                source,
            })?;
        let shared = Arc::new(Shared {
            config,
            sessions,
            stop: AtomicBool::new(false),
            next_id: AtomicU32::new(1),
            conns: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("mysql-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared))
            .map_err(|source| MysqlError::Thread {
                what: "accept",
                source,
            })?;
        Ok(MysqlServer {
            local_addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The number of open connections (authenticated or still in the handshake).
    pub fn connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Stops accepting, closes every connection (their sessions are dropped, rolling back
    /// open transactions) and joins every thread. It takes as long as the longest
    /// statement still running.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for stream in lock(&self.shared.conns).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let threads = std::mem::take(&mut *lock(&self.shared.threads));
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for MysqlServer {
    fn drop(&mut self) {
        if self.accept.is_some() {
            self.stop();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, peer)) => admit(stream, peer, shared),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            // Out of file descriptors and the like: wait and try again rather than spin.
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
        lock(&shared.threads).retain(|t| !t.is_finished());
    }
}

/// A connection's entry in `conns`, removed when its thread ends, also by a panic (else a
/// panicked connection would keep its socket open and its place under
/// `max_connections` for good).
struct Registered {
    shared: Arc<Shared>,
    id: u32,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let clone = lock(&self.shared.conns).remove(&self.id);
        // After a normal end `serve` closed the connection gently already; after a panic
        // the client is told at once.
        if let Some(s) = clone
            && std::thread::panicking()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Starts a thread for a new connection, or refuses it with 1040 when there are too many.
fn admit(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    // Accepted sockets may inherit the listener's non-blocking mode on some platforms.
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_nodelay(true);
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
    let registered = {
        let mut conns = lock(&shared.conns);
        let room = conns.len() < shared.config.max_connections;
        if room {
            conns.insert(id, clone);
        }
        room
    };
    if !registered {
        let packet = err_packet(1040, "08004", "Too many connections");
        let mut stream = stream;
        // Written in place of the greeting, before the client has sent anything: no unread
        // input, so closing at once cannot reset the connection under the error.
        let _ = stream.write_all(&encode_packets(&[&packet], 0));
        return;
    }
    let thread_shared = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name(format!("mysql-conn-{id}"))
        .spawn(move || {
            let _registered = Registered {
                shared: Arc::clone(&thread_shared),
                id,
            };
            serve(
                stream,
                id,
                peer,
                &thread_shared.config,
                &thread_shared.sessions,
            );
        });
    match spawned {
        Ok(handle) => lock(&shared.threads).push(handle),
        Err(_) => {
            if let Some(s) = lock(&shared.conns).remove(&id) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}
