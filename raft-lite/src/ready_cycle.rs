//! The Ready cycle of a [`RawNode`]: what it hands out, and what `advance` records.

use crate::node::Handed;
use crate::ready::{Ready, Role};
use crate::{RawNode, Result};

impl RawNode {
    /// True if [`RawNode::ready`] has something to hand out.
    pub fn has_ready(&self) -> bool {
        self.handed.is_none()
            && (self.pending_bcast
                || !self.msgs.is_empty()
                || !self.persisted_msgs.is_empty()
                || self.log.unstable_from <= self.log.last_index()
                || self.hard_state() != self.prev_hs
                || self.log.applied < self.log.committed
                || self.incoming_snapshot.is_some()
                || !self.read_states.is_empty()
                || !self.dropped_reads.is_empty()
                || self.soft_state() != self.prev_soft)
    }

    /// Hands out the work accumulated since the last [`RawNode::advance`]; see [`Ready`]
    /// for what to do with it.
    ///
    /// # Errors
    /// [`crate::Error::ReadyOutstanding`] if the previous Ready was not advanced.
    pub fn ready(&mut self) -> Result<Ready> {
        self.check_idle()?;
        if self.pending_bcast {
            self.pending_bcast = false;
            if self.role == Role::Leader {
                self.bcast_append();
            }
        }
        let entries = if self.log.unstable_from <= self.log.last_index() {
            self.log.slice(
                self.log.unstable_from,
                self.log.last_index() + 1,
                usize::MAX,
            )
        } else {
            Vec::new()
        };
        let apply_hi = self.log.committed.min(self.log.last_index());
        let committed_entries = if self.log.applied < apply_hi {
            self.log
                .slice(self.log.applied + 1, apply_hi + 1, usize::MAX)
        } else {
            Vec::new()
        };
        let hs = self.hard_state();
        let soft = self.soft_state();
        self.handed = Some(Handed {
            persist_to: entries.last().map(|e| e.index),
            apply_to: committed_entries.last().map(|e| e.index),
            hard_state: hs,
            soft,
        });
        Ok(Ready {
            soft_state: soft,
            soft_state_changed: soft != self.prev_soft,
            messages: std::mem::take(&mut self.msgs),
            snapshot: self.incoming_snapshot.take(),
            entries,
            hard_state: (hs != self.prev_hs).then_some(hs),
            persisted_messages: std::mem::take(&mut self.persisted_msgs),
            committed_entries,
            read_states: std::mem::take(&mut self.read_states),
            dropped_reads: std::mem::take(&mut self.dropped_reads),
        })
    }

    /// Declares the last [`Ready`] handled: its writes are durable, its committed entries
    /// applied. Does nothing if no Ready is outstanding.
    pub fn advance(&mut self) {
        let Some(h) = self.handed.take() else { return };
        if let Some(p) = h.persist_to {
            self.log.persisted = self.log.persisted.max(p);
            self.log.unstable_from = p + 1;
        }
        if let Some(a) = h.apply_to {
            self.log.applied = self.log.applied.max(a);
        }
        self.prev_hs = h.hard_state;
        self.prev_soft = h.soft;
        if self.role == Role::Leader {
            let persisted = self.log.persisted;
            if let Some(p) = self.progress.get_mut(&self.id) {
                p.maybe_update(persisted);
            }
            if self.maybe_commit() {
                self.pending_bcast = true;
            }
        }
    }
}
