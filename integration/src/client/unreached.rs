//! [`Unreached`]: an address that did not answer, and why, in words that name the address
//! (and the node, when it is known) rather than the placeholder node 0 a connection uses
//! before the node has said who it is.

use std::fmt;

use surge_txn::ServiceError;

/// An address that did not answer a handshake, and the transport's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    /// The address tried, as given.
    pub addr: String,
    /// Why it did not answer.
    pub error: ServiceError,
}

impl fmt::Display for Unreached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.addr, reason(&self.addr, &self.error))
    }
}

/// Why `addr` did not answer, without the node number `error` carries (0 before the
/// handshake) and without repeating the address.
pub fn reason(addr: &str, error: &ServiceError) -> String {
    let strip = |detail: &str| {
        let prefix = format!("{addr}: ");
        detail.strip_prefix(&prefix).unwrap_or(detail).to_string()
    };
    match error {
        ServiceError::Unavailable { detail, .. } => strip(detail),
        ServiceError::Timeout { timeout_ms, .. } => format!("no answer within {timeout_ms} ms"),
        ServiceError::Protocol { detail, .. } => format!("protocol error: {}", strip(detail)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_neither_node_0_nor_the_address_twice() {
        let addr = "127.0.0.1:7001";
        let cases = [
            (
                ServiceError::Unavailable {
                    node: 0,
                    detail: format!("{addr}: connect: Connection refused (os error 111)"),
                },
                "127.0.0.1:7001: connect: Connection refused (os error 111)",
            ),
            (
                ServiceError::Timeout {
                    node: 0,
                    timeout_ms: 3000,
                },
                "127.0.0.1:7001: no answer within 3000 ms",
            ),
            (
                ServiceError::Protocol {
                    node: 0,
                    detail: format!("{addr}: bad magic"),
                },
                "127.0.0.1:7001: protocol error: bad magic",
            ),
        ];
        for (error, want) in cases {
            let u = Unreached {
                addr: addr.into(),
                error,
            };
            assert_eq!(u.to_string(), want);
        }
    }
}
