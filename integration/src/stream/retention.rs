//! [`Retention`]: how long the cluster keeps the stream records every node's copy already
//! holds, and which node collects them ([`plan_collection`], no I/O).

use std::time::Duration;

use surge_txn::StreamPosition;
use surge_txn::codec::compose_ts;

/// How long stream records are kept in the store. Each record is written once into every
/// node's files; the store keeps it so that a node that was down, or is behind, can still
/// read it. A record goes once it is older than [`Retention::keep`] *and* below every
/// counted node's published position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Records are kept at least this long (by record timestamp, on the oracle's clock).
    pub keep: Duration,
    /// A node whose position is older than this is no longer counted: a node down this
    /// long stops holding the records back, and its copy stops with
    /// [`crate::stream::StreamError::Collected`] if it comes back needing one that went.
    pub position_ttl: Duration,
    /// Nodes whose position is younger than this are alive; the one with the smallest id
    /// among them collects (so two nodes rarely delete the same keys at once).
    pub alive_within: Duration,
    /// How often a node asks whether it should collect (and publishes its position at
    /// least this often, and at most every 10 s).
    pub collect_every: Duration,
}

impl Default for Retention {
    /// An hour of records; a node is counted for a day (the GC hold's TTL) and alive for a
    /// minute (six of the follower's 10 s publications); a collection a minute.
    fn default() -> Self {
        Retention {
            keep: Duration::from_secs(3600),
            position_ttl: Duration::from_secs(24 * 3600),
            alive_within: Duration::from_secs(60),
            collect_every: Duration::from_secs(60),
        }
    }
}

impl Retention {
    /// Sets [`Retention::keep`].
    #[must_use]
    pub fn with_keep(mut self, keep: Duration) -> Retention {
        self.keep = keep;
        self
    }

    /// Sets [`Retention::position_ttl`].
    #[must_use]
    pub fn with_position_ttl(mut self, ttl: Duration) -> Retention {
        self.position_ttl = ttl;
        self
    }

    /// Sets [`Retention::collect_every`], and [`Retention::alive_within`] to six
    /// publications ([`Retention::publish_every`]): call
    /// [`Retention::with_alive_within`] after it for another value.
    #[must_use]
    pub fn with_collect_every(mut self, every: Duration) -> Retention {
        self.collect_every = every;
        self.alive_within = self.publish_every() * 6;
        self
    }

    /// How often a node publishes its position: every [`Retention::collect_every`], at
    /// most every 10 s.
    pub fn publish_every(&self) -> Duration {
        self.collect_every.min(Duration::from_secs(10))
    }

    /// Sets [`Retention::alive_within`].
    #[must_use]
    pub fn with_alive_within(mut self, within: Duration) -> Retention {
        self.alive_within = within;
        self
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Below which record timestamp node `me` should collect now, if it is its turn: `None`
/// when another node collects, when `me` is not counted itself, or when nothing is above
/// the collected `mark` yet.
///
/// Counted: positions published within [`Retention::position_ttl`] of `now_ms` (the
/// oracle's clock). The collector: the smallest owner among those published within
/// [`Retention::alive_within`]. The bound: the smallest counted `lower_record_ts`, and no
/// later than [`Retention::keep`] before `now_ms`.
pub fn plan_collection(
    positions: &[StreamPosition],
    me: u64,
    now_ms: u64,
    mark: u64,
    retention: &Retention,
) -> Option<u64> {
    let age = |p: &StreamPosition| now_ms.saturating_sub(p.updated_ms);
    let counted: Vec<&StreamPosition> = positions
        .iter()
        .filter(|p| age(p) <= ms(retention.position_ttl))
        .collect();
    let collector = counted
        .iter()
        .filter(|p| age(p) <= ms(retention.alive_within))
        .map(|p| p.owner)
        .min()?;
    if collector != me {
        return None;
    }
    let lowest = counted.iter().map(|p| p.lower_record_ts).min()?;
    let keep_from = compose_ts(now_ms.saturating_sub(ms(retention.keep)), 0);
    let below = lowest.min(keep_from);
    (below > mark).then_some(below)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 10_000_000;

    fn pos(owner: u64, lower_ms: u64, age_ms: u64) -> StreamPosition {
        StreamPosition {
            owner,
            lower_record_ts: compose_ts(lower_ms, 0),
            done_ts: compose_ts(lower_ms + 5000, 0),
            updated_ms: NOW - age_ms,
        }
    }

    fn policy() -> Retention {
        Retention::default()
            .with_keep(Duration::from_secs(10))
            .with_position_ttl(Duration::from_secs(100))
            .with_alive_within(Duration::from_secs(5))
    }

    #[test]
    fn the_smallest_live_node_collects_below_every_counted_position() {
        let positions = [
            pos(1, NOW - 50_000, 1000),
            pos(2, NOW - 20_000, 500),
            pos(3, NOW, 10),
        ];
        let r = policy();
        // Node 1 is the smallest alive; the bound is node 1's position (older than `keep`).
        assert_eq!(
            plan_collection(&positions, 1, NOW, 0, &r),
            Some(compose_ts(NOW - 50_000, 0))
        );
        assert_eq!(plan_collection(&positions, 2, NOW, 0, &r), None);
        // Nothing new above the mark.
        let mark = compose_ts(NOW - 50_000, 0);
        assert_eq!(plan_collection(&positions, 1, NOW, mark, &r), None);
    }

    #[test]
    fn records_younger_than_keep_stay_even_when_every_node_has_them() {
        let positions = [pos(1, NOW, 0), pos(2, NOW, 0)];
        assert_eq!(
            plan_collection(&positions, 1, NOW, 0, &policy()),
            Some(compose_ts(NOW - 10_000, 0))
        );
    }

    #[test]
    fn a_silent_node_still_holds_records_until_its_position_expires() {
        let r = policy();
        // Node 1 silent for 50 s: not alive (node 2 collects), still counted.
        let positions = [pos(1, NOW - 60_000, 50_000), pos(2, NOW, 0)];
        assert_eq!(plan_collection(&positions, 1, NOW, 0, &r), None);
        assert_eq!(
            plan_collection(&positions, 2, NOW, 0, &r),
            Some(compose_ts(NOW - 60_000, 0))
        );
        // Silent past the TTL: no longer counted.
        let positions = [pos(1, NOW - 600_000, 200_000), pos(2, NOW, 0)];
        assert_eq!(
            plan_collection(&positions, 2, NOW, 0, &r),
            Some(compose_ts(NOW - 10_000, 0))
        );
    }

    #[test]
    fn no_live_position_means_no_collection() {
        assert_eq!(plan_collection(&[], 1, NOW, 0, &policy()), None);
        let stale = [pos(1, NOW - 60_000, 50_000)];
        assert_eq!(plan_collection(&stale, 1, NOW, 0, &policy()), None);
    }
}
