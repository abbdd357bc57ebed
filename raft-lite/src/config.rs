//! Configuration of one Raft node of one group.

use crate::NodeId;

/// Settings of a [`crate::RawNode`]. Defaults suit a 10 ms tick.
///
/// Build it with [`Config::new`] (or [`Config::default`] and [`Config::with_id`]) and the
/// `with_*` methods, or assign the public fields of such a value: the struct is
/// `#[non_exhaustive]`, so later settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct Config {
    /// This node's id (never 0).
    pub id: NodeId,
    /// Ticks without a leader before a follower campaigns; the actual timeout is drawn
    /// from `[election_tick, 2 * election_tick)`.
    pub election_tick: u32,
    /// Ticks between leader heartbeats (must be smaller than `election_tick`).
    pub heartbeat_tick: u32,
    /// Pre-vote (thesis §9.6): a node asks before bumping its term. On by default.
    pub pre_vote: bool,
    /// Check-quorum: a leader steps down without a recently active quorum, and nodes
    /// that recently heard from a leader ignore (pre-)votes. On by default.
    pub check_quorum: bool,
    /// Append messages in flight per follower in the replicate state.
    pub max_inflight_msgs: usize,
    /// Bytes of entries per append message (at least one entry is always sent).
    pub max_size_per_msg: usize,
    /// Largest proposal accepted.
    pub max_proposal_bytes: usize,
    /// Index the state machine has already applied (from its own durable state);
    /// replay starts after it.
    pub applied: u64,
    /// Seed of the election-timeout randomization (mixed with `id`).
    pub seed: u64,
}

impl Config {
    /// Checks the values.
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming the first bad field.
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |field, reason| Err(crate::Error::InvalidConfig { field, reason });
        if self.id == 0 {
            return bad("id", "node id 0 is reserved");
        }
        if self.heartbeat_tick == 0 {
            return bad("heartbeat_tick", "must be at least 1");
        }
        if self.election_tick <= self.heartbeat_tick {
            return bad("election_tick", "must be greater than heartbeat_tick");
        }
        if self.max_inflight_msgs == 0 {
            return bad("max_inflight_msgs", "must be at least 1");
        }
        Ok(())
    }

    /// Defaults for node `id`.
    pub fn new(id: NodeId) -> Config {
        Config::default().with_id(id)
    }

    /// Sets [`Config::id`].
    #[must_use]
    pub fn with_id(mut self, id: NodeId) -> Self {
        self.id = id;
        self
    }

    /// Sets [`Config::election_tick`].
    #[must_use]
    pub fn with_election_tick(mut self, ticks: u32) -> Self {
        self.election_tick = ticks;
        self
    }

    /// Sets [`Config::heartbeat_tick`].
    #[must_use]
    pub fn with_heartbeat_tick(mut self, ticks: u32) -> Self {
        self.heartbeat_tick = ticks;
        self
    }

    /// Sets [`Config::pre_vote`].
    #[must_use]
    pub fn with_pre_vote(mut self, on: bool) -> Self {
        self.pre_vote = on;
        self
    }

    /// Sets [`Config::check_quorum`].
    #[must_use]
    pub fn with_check_quorum(mut self, on: bool) -> Self {
        self.check_quorum = on;
        self
    }

    /// Sets [`Config::max_inflight_msgs`].
    #[must_use]
    pub fn with_max_inflight_msgs(mut self, n: usize) -> Self {
        self.max_inflight_msgs = n;
        self
    }

    /// Sets [`Config::max_size_per_msg`].
    #[must_use]
    pub fn with_max_size_per_msg(mut self, bytes: usize) -> Self {
        self.max_size_per_msg = bytes;
        self
    }

    /// Sets [`Config::max_proposal_bytes`].
    #[must_use]
    pub fn with_max_proposal_bytes(mut self, bytes: usize) -> Self {
        self.max_proposal_bytes = bytes;
        self
    }

    /// Sets [`Config::applied`].
    #[must_use]
    pub fn with_applied(mut self, index: u64) -> Self {
        self.applied = index;
        self
    }

    /// Sets [`Config::seed`].
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

impl Default for Config {
    /// The defaults with node id 0, which [`Config::validate`] refuses: set the id with
    /// [`Config::with_id`] (or use [`Config::new`]).
    fn default() -> Config {
        Config {
            id: 0,
            election_tick: 10,
            heartbeat_tick: 2,
            pre_vote: true,
            check_quorum: true,
            max_inflight_msgs: 256,
            max_size_per_msg: 1 << 20,
            max_proposal_bytes: 64 << 20,
            applied: 0,
            seed: 0x5eed,
        }
    }
}
