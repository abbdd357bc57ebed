//! The stream settings carry the record key layout: a store whose records an earlier
//! build laid out (oldest first, settings unmarked) is refused by name, not misread.

use crate::{ClientConfig, ClusterConfig, LocalCluster, TxnClient, TxnError};

#[test]
fn settings_left_by_an_earlier_layout_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    let client = TxnClient::new(c.router(), ClientConfig::default());
    // What an earlier build stored: the caller's settings alone.
    client
        .core()
        .put_reserved_if_absent(crate::stream::SETTINGS_KEY, b"server_id=1 domain_id=0")
        .expect("store unmarked settings");
    match client.stream_claim_settings(b"server_id=1 domain_id=0") {
        Err(TxnError::StreamLayout { found, expected }) => {
            assert_eq!((found.as_str(), expected), ("1", crate::stream::KEY_LAYOUT));
        }
        other => panic!("want StreamLayout, got {other:?}"),
    }
}

#[test]
fn marked_settings_read_back_as_the_callers() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(1)).expect("cluster");
    let client = TxnClient::new(c.router(), ClientConfig::default());
    assert_eq!(client.stream_claim_settings(b"a=1").expect("claim"), b"a=1");
    assert_eq!(client.stream_claim_settings(b"a=2").expect("claim"), b"a=1");
    let (stored, _) = client
        .core()
        .put_reserved_if_absent(crate::stream::SETTINGS_KEY, b"ignored")
        .expect("read");
    assert!(stored.starts_with(crate::stream::LAYOUT_MARK), "{stored:?}");
}
