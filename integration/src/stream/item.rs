//! [`StreamedTxn`] and [`StreamedGroup`]: what the stream writer takes, one committed
//! transaction of the cluster at a time, in commit_ts order.

use crate::binlog::EventBody;

/// One committed transaction of the cluster, as the replica stream logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedTxn {
    /// Its commit timestamp: the stream's order.
    pub commit_ts: u64,
    /// Its start timestamp (the Xid of its groups).
    pub start_ts: u64,
    /// Its binlog groups: one for a transaction, one per member for a hot-row group.
    pub groups: Vec<StreamedGroup>,
}

/// One binlog event group (one GTID) of a [`StreamedTxn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedGroup {
    /// A standalone statement (DDL): its GTID is flagged standalone and no Xid ends it.
    /// Otherwise the group is transactional and closes with an Xid.
    pub standalone: bool,
    /// The group's events between the GTID and the Xid (Table_map, Rows, Query,
    /// Annotate_rows, ...), without positions: the writer places them.
    pub events: Vec<EventBody>,
}
