//! [`HotCounters`]: what a client's hot-row updates did, as a plain snapshot.

use surge_hotspot::Stats;

/// What a client's [`crate::TxnClient::hot_update`] calls did since it was created (shared by
/// its clones). Group counts follow AliSQL's `Group_update_*` status variables.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HotCounters {
    /// Groups run (`Group_update_leader_count`): one lock, one transaction each.
    pub groups: u64,
    /// Members of those groups (leaders plus followers).
    pub members: u64,
    /// Updates that ran alone, ungrouped (no `commit_on_success` below the automatic
    /// threshold, or grouping switched off).
    pub ungrouped: u64,
    /// Updates, grouped or not, that did not commit: refused alone (a bound,
    /// `target_affect_row`) or failed with their group (lock or commit errors), including
    /// the undetermined ones.
    pub failed_members: u64,
    /// Of those, updates whose outcome is unknown: their group's commit was sent and its
    /// answer lost ([`crate::TxnError::Undetermined`]).
    pub undetermined_members: u64,
    /// Groups whose lock or commit failed (every member in them failed).
    pub failed_groups: u64,
    /// Largest group seen.
    pub max_group_size: u64,
}

impl HotCounters {
    pub(crate) fn new(stats: &Stats, undetermined_members: u64) -> HotCounters {
        HotCounters {
            groups: stats.leader_count,
            members: stats.leader_count + stats.follower_count,
            ungrouped: stats.bypass_count,
            failed_members: stats.fail_count,
            undetermined_members,
            failed_groups: stats.group_fail_count,
            max_group_size: stats.max_group_size,
        }
    }

    /// Mean members per group; 0 before the first group.
    pub fn mean_group_size(&self) -> f64 {
        if self.groups == 0 {
            return 0.0;
        }
        self.members as f64 / self.groups as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_count_leaders_and_followers() {
        let stats = Stats {
            leader_count: 4,
            follower_count: 12,
            bypass_count: 3,
            fail_count: 2,
            ..Stats::default()
        };
        let c = HotCounters::new(&stats, 1);
        assert_eq!((c.groups, c.members, c.ungrouped), (4, 16, 3));
        assert_eq!((c.failed_members, c.undetermined_members), (2, 1));
        assert_eq!(c.mean_group_size(), 4.0);
        assert_eq!(HotCounters::default().mean_group_size(), 0.0);
    }
}
