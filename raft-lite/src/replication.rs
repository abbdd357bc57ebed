//! Log replication (Raft §5.3), the commit rule (§5.4.2), heartbeats, ReadIndex
//! confirmation and snapshot installation (§7).

use crate::progress::{ProgressState, quorum_index};
use crate::ready::{ReadState, Role};
use crate::{Entry, MessageKind, NodeId, RawNode, Snapshot};

impl RawNode {
    pub(crate) fn step_replication(&mut self, from: NodeId, kind: MessageKind) {
        match kind {
            MessageKind::Append {
                prev_index,
                prev_term,
                entries,
                commit,
            } => {
                if self.role == Role::Leader {
                    // Two leaders in one term cannot exist; drop it.
                    self.stats.messages_ignored += 1;
                    return;
                }
                self.follow(from);
                self.handle_append(from, prev_index, prev_term, &entries, commit);
            }
            MessageKind::Heartbeat { commit, read_seq } => {
                if self.role == Role::Leader {
                    self.stats.messages_ignored += 1;
                    return;
                }
                self.follow(from);
                self.log.commit_to(commit);
                self.send(from, MessageKind::HeartbeatResp { read_seq });
            }
            MessageKind::Snapshot { snapshot } => {
                if self.role == Role::Leader {
                    self.stats.messages_ignored += 1;
                    return;
                }
                self.follow(from);
                self.handle_snapshot(from, snapshot);
            }
            MessageKind::AppendResp {
                index,
                reject,
                hint,
            } => {
                if self.role == Role::Leader {
                    self.handle_append_resp(from, index, reject, hint);
                } else {
                    self.stats.messages_ignored += 1;
                }
            }
            MessageKind::HeartbeatResp { read_seq } => {
                if self.role == Role::Leader {
                    self.handle_heartbeat_resp(from, read_seq);
                } else {
                    self.stats.messages_ignored += 1;
                }
            }
            _ => self.stats.messages_ignored += 1,
        }
    }

    /// A message from the leader of our term: follow it and restart the election timer.
    fn follow(&mut self, leader: NodeId) {
        if self.role != Role::Follower || self.leader != Some(leader) {
            self.become_follower(self.term, Some(leader));
        }
        self.election_elapsed = 0;
    }

    fn handle_append(
        &mut self,
        from: NodeId,
        prev_index: u64,
        prev_term: u64,
        entries: &[Entry],
        commit: u64,
    ) {
        if prev_index < self.log.committed {
            // Everything up to `committed` matches the leader (Leader Completeness).
            let index = self.log.committed;
            self.send(
                from,
                MessageKind::AppendResp {
                    index,
                    reject: false,
                    hint: 0,
                },
            );
            return;
        }
        match self.log.maybe_append(prev_index, prev_term, entries) {
            Ok(Some(last_new)) => {
                // Recompute the membership if the message brought a conf change or may
                // have overwritten the entry that installed the current one (a longer
                // replacement suffix leaves `conf_index <= last_index`, so the log length
                // alone does not tell).
                if entries
                    .iter()
                    .any(|e| e.kind == crate::EntryKind::ConfChange)
                    || entries.first().is_some_and(|e| e.index <= self.conf_index)
                    || self.conf_index > self.log.last_index()
                {
                    self.refresh_conf();
                }
                // Commit only what this message proves matching: never past `last_new`.
                self.log.commit_to(commit.min(last_new));
                self.send(
                    from,
                    MessageKind::AppendResp {
                        index: last_new,
                        reject: false,
                        hint: 0,
                    },
                );
            }
            Ok(None) => {
                let hint = prev_index.min(self.log.last_index());
                self.send(
                    from,
                    MessageKind::AppendResp {
                        index: prev_index,
                        reject: true,
                        hint,
                    },
                );
            }
            Err(_) => {
                self.stats.committed_overwrite_refused += 1;
                tracing::error!(node = self.id, "append would overwrite a committed entry");
            }
        }
    }

    fn handle_snapshot(&mut self, from: NodeId, snap: Snapshot) {
        let (idx, term) = (snap.meta.index, snap.meta.term);
        let index = if idx <= self.log.committed {
            // Older than what we have committed: ignore it (restore would go backwards).
            self.log.committed
        } else if self.log.term(idx) == Some(term) {
            // Our log already holds the snapshot's last entry: just fast-forward commit.
            self.log.commit_to(idx);
            idx
        } else {
            self.log.restore(idx, term, snap.meta.conf.clone());
            self.refresh_conf();
            self.snapshot = Some(snap.clone());
            self.incoming_snapshot = Some(snap);
            idx
        };
        self.send(
            from,
            MessageKind::AppendResp {
                index,
                reject: false,
                hint: 0,
            },
        );
    }

    fn handle_append_resp(&mut self, from: NodeId, index: u64, reject: bool, hint: u64) {
        let last = self.log.last_index();
        if !reject && index > last {
            // Nobody can hold entries of our term that we never had: a bogus answer.
            self.stats.messages_ignored += 1;
            return;
        }
        let Some(pr) = self.progress.get_mut(&from) else {
            return;
        };
        pr.recent_active = true;
        if reject {
            if pr.maybe_decr_to(index, hint) {
                if pr.state == ProgressState::Replicate {
                    pr.become_probe();
                }
                self.send_append(from);
            }
            return;
        }
        let was_paused = pr.is_paused();
        if !pr.maybe_update(index) {
            return;
        }
        match pr.state {
            ProgressState::Probe => pr.become_replicate(),
            ProgressState::Snapshot if pr.matched >= pr.pending_snapshot => pr.become_probe(),
            ProgressState::Snapshot => {}
            ProgressState::Replicate => pr.free_to(index),
        }
        let matched = pr.matched;
        if self.maybe_commit() {
            self.bcast_append();
        } else if was_paused || matched < last {
            self.send_append(from);
        }
        // Keep filling the window while there is more to send.
        while self
            .progress
            .get(&from)
            .is_some_and(|p| !p.is_paused() && p.next <= last)
        {
            let before = self.progress.get(&from).map(|p| p.next);
            self.send_append(from);
            if self.progress.get(&from).map(|p| p.next) == before {
                break;
            }
        }
        if self.transferee == Some(from) && matched == self.log.last_index() {
            self.send(from, crate::MessageKind::TimeoutNow);
        }
    }

    fn handle_heartbeat_resp(&mut self, from: NodeId, read_seq: u64) {
        let Some(pr) = self.progress.get_mut(&from) else {
            return;
        };
        pr.recent_active = true;
        pr.probe_sent = false;
        if pr.state == ProgressState::Replicate && pr.inflights.len() >= pr.max_inflight {
            // Appends (or their answers) may have been lost: let one more go, so a
            // rejection can move the follower back to probing (raft-rs does the same).
            pr.inflights.pop_front();
        }
        if pr.state == ProgressState::Snapshot {
            // The snapshot may have been lost; probe again (the follower rejects until it
            // has it, and we resend).
            pr.become_probe();
        }
        let behind = pr.matched < self.log.last_index();
        if behind {
            self.send_append(from);
        }
        if read_seq > 0 && self.conf.voters.contains(&from) {
            for r in self.pending_reads.iter_mut() {
                if r.seq <= read_seq && !r.acks.contains(&from) {
                    r.acks.push(from);
                }
            }
            let q = self.quorum_size();
            while self.pending_reads.front().is_some_and(|r| {
                r.acks
                    .iter()
                    .filter(|a| self.conf.voters.contains(a))
                    .count()
                    >= q
            }) {
                if let Some(r) = self.pending_reads.pop_front() {
                    self.read_states.push(ReadState {
                        index: r.index,
                        ctx: r.ctx,
                    });
                }
            }
        }
    }

    /// Sends `to` the entries it lacks, or the snapshot if they were compacted away.
    pub(crate) fn send_append(&mut self, to: NodeId) {
        if to == self.id {
            return;
        }
        let Some(pr) = self.progress.get(&to) else {
            return;
        };
        if pr.is_paused() {
            return;
        }
        let next = pr.next;
        let prev_index = next - 1;
        match self.log.term(prev_index) {
            Some(prev_term) => {
                let entries =
                    self.log
                        .slice(next, self.log.last_index() + 1, self.cfg.max_size_per_msg);
                let last = entries.last().map(|e| e.index);
                if let Some(pr) = self.progress.get_mut(&to) {
                    pr.sent_entries(last);
                }
                let commit = self.log.committed;
                self.send(
                    to,
                    MessageKind::Append {
                        prev_index,
                        prev_term,
                        entries,
                        commit,
                    },
                );
            }
            None if self.snapshots_on_demand => {
                // The application builds one from its state (see
                // `RawNode::take_snapshot_requests`); no appends meanwhile.
                let at = self.log.snap_index;
                if let Some(pr) = self.progress.get_mut(&to) {
                    pr.become_snapshot(at);
                }
                self.snapshot_requests.insert(to);
            }
            None => {
                let Some(snap) = self.snapshot.clone() else {
                    return;
                };
                if let Some(pr) = self.progress.get_mut(&to) {
                    pr.become_snapshot(snap.meta.index);
                }
                self.send(to, MessageKind::Snapshot { snapshot: snap });
            }
        }
    }

    pub(crate) fn bcast_append(&mut self) {
        let ids: Vec<NodeId> = self.progress.keys().copied().collect();
        for id in ids {
            self.send_append(id);
        }
    }

    pub(crate) fn bcast_heartbeat(&mut self) {
        let seq = self.read_seq;
        let ids: Vec<(NodeId, u64)> = self
            .progress
            .iter()
            .filter(|(id, _)| **id != self.id)
            .map(|(id, p)| (*id, p.matched))
            .collect();
        for (id, matched) in ids {
            let commit = self.log.committed.min(matched);
            self.send(
                id,
                MessageKind::Heartbeat {
                    commit,
                    read_seq: seq,
                },
            );
        }
    }

    /// Advances the commit index to what a quorum of voters holds, but only for an entry
    /// of the current term (figure 8): older entries commit indirectly with it.
    pub(crate) fn maybe_commit(&mut self) -> bool {
        let matched: Vec<u64> = self
            .conf
            .voters
            .iter()
            .map(|v| self.progress.get(v).map_or(0, |p| p.matched))
            .collect();
        let q = quorum_index(matched);
        if q <= self.log.committed || self.log.term(q) != Some(self.term) {
            return false;
        }
        self.log.commit_to(q);
        if !self.conf.voters.contains(&self.id) && self.log.committed >= self.conf_index {
            // Our removal is committed: step down (thesis §4.2.2).
            self.become_follower(self.term, None);
        }
        true
    }
}
