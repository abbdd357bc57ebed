//! Term handling, elections (pre-vote, vote, leader transfer) and role changes (Raft §5.1,
//! §5.2, §5.4.1; thesis §9.6 pre-vote, §6.2 check-quorum, §3.10 leader transfer).

use crate::Message;
use crate::progress::Progress;
use crate::ready::Role;
use crate::{EntryKind, MessageKind, NodeId, RawNode};

impl RawNode {
    /// Number of voters needed for a majority.
    pub(crate) fn quorum_size(&self) -> usize {
        self.conf.voters.len() / 2 + 1
    }

    /// True while this node heard from a leader within an election timeout: with
    /// check-quorum it then ignores (pre-)votes, so a partitioned node rejoining cannot
    /// depose a healthy leader (thesis §4.2.3).
    fn in_lease(&self) -> bool {
        self.cfg.check_quorum
            && self.leader.is_some()
            && self.election_elapsed < self.cfg.election_tick
    }

    pub(crate) fn step_inner(&mut self, m: Message) {
        if m.term > self.term {
            match &m.kind {
                MessageKind::PreVote { .. }
                | MessageKind::Vote {
                    transfer: false, ..
                } if self.in_lease() => {
                    // Ignore without bumping our term.
                    self.stats.messages_ignored += 1;
                    return;
                }
                // A pre-vote never changes terms; a granted pre-vote answer carries the
                // future term of our own pre-campaign.
                MessageKind::PreVote { .. } | MessageKind::PreVoteResp { reject: false } => {}
                MessageKind::Append { .. }
                | MessageKind::Heartbeat { .. }
                | MessageKind::Snapshot { .. } => self.become_follower(m.term, Some(m.from)),
                _ => self.become_follower(m.term, None),
            }
        } else if m.term < self.term {
            match &m.kind {
                MessageKind::Append { .. } | MessageKind::Heartbeat { .. }
                    if self.cfg.check_quorum || self.cfg.pre_vote =>
                {
                    // Tell a stale leader about the newer term, or it could stay stuck
                    // (etcd#8243 family): our answer makes it step down.
                    self.send(
                        m.from,
                        MessageKind::AppendResp {
                            index: 0,
                            reject: false,
                            hint: 0,
                        },
                    );
                }
                MessageKind::PreVote { .. } => {
                    self.send(m.from, MessageKind::PreVoteResp { reject: true });
                }
                _ => {}
            }
            self.stats.messages_ignored += 1;
            return;
        }

        match m.kind {
            MessageKind::PreVote {
                last_index,
                last_term,
            } => self.handle_vote_request(m.from, m.term, last_index, last_term, true),
            MessageKind::Vote {
                last_index,
                last_term,
                ..
            } => self.handle_vote_request(m.from, m.term, last_index, last_term, false),
            MessageKind::PreVoteResp { reject } => {
                // A grant carries our pre-campaign's term (term + 1); a rejection the
                // responder's own term, which is ours when it is not ahead (ahead, it made
                // us a follower above): both count, or a refused pre-candidate would wait
                // for its election timeout instead of stepping down at once.
                let ours = if reject {
                    m.term == self.term
                } else {
                    m.term == self.term + 1
                };
                if self.role == Role::PreCandidate && ours {
                    self.tally(m.from, !reject);
                } else {
                    self.stats.messages_ignored += 1;
                }
            }
            MessageKind::VoteResp { reject } => {
                if self.role == Role::Candidate {
                    self.tally(m.from, !reject);
                } else {
                    self.stats.messages_ignored += 1;
                }
            }
            MessageKind::TimeoutNow => {
                if self.role != Role::Leader && self.is_promotable() {
                    self.campaign(true);
                } else {
                    self.stats.messages_ignored += 1;
                }
            }
            kind => self.step_replication(m.from, kind),
        }
    }

    fn handle_vote_request(
        &mut self,
        from: NodeId,
        term: u64,
        last_index: u64,
        last_term: u64,
        pre: bool,
    ) {
        let can_vote = self.vote == from
            || (self.vote == 0 && self.leader.is_none())
            || (pre && term > self.term);
        if can_vote && self.log.is_up_to_date(last_index, last_term) {
            if pre {
                // Answer in the candidate's future term so it counts the grant.
                let msg = Message {
                    from: self.id,
                    to: from,
                    term,
                    kind: MessageKind::PreVoteResp { reject: false },
                };
                self.send_msg(msg);
            } else {
                self.election_elapsed = 0;
                self.vote = from;
                self.send(from, MessageKind::VoteResp { reject: false });
            }
        } else if pre {
            self.send(from, MessageKind::PreVoteResp { reject: true });
        } else {
            self.send(from, MessageKind::VoteResp { reject: true });
        }
    }

    fn tally(&mut self, from: NodeId, granted: bool) {
        if !self.conf.voters.contains(&from) {
            return;
        }
        self.votes.entry(from).or_insert(granted);
        let yes = self.votes.values().filter(|v| **v).count();
        let no = self.votes.len() - yes;
        if yes >= self.quorum_size() {
            if self.role == Role::PreCandidate {
                self.campaign_vote(false);
            } else {
                self.become_leader();
            }
        } else if no >= self.quorum_size() {
            self.become_follower(self.term, None);
        }
    }

    /// Starts an election: a pre-vote round unless disabled or `transfer`.
    pub(crate) fn campaign(&mut self, transfer: bool) {
        self.stats.campaigns += 1;
        if self.cfg.pre_vote && !transfer {
            self.role = Role::PreCandidate;
            self.leader = None;
            self.votes.clear();
            self.election_elapsed = 0;
            self.reset_randomized_timeout();
            self.votes.insert(self.id, true);
            if self.votes.len() >= self.quorum_size() {
                self.campaign_vote(false);
                return;
            }
            let (li, lt) = (self.log.last_index(), self.log.last_term());
            let voters: Vec<NodeId> = self.conf.voters.iter().copied().collect();
            let me = self.id;
            for v in voters.into_iter().filter(|v| *v != me) {
                let m = Message {
                    from: self.id,
                    to: v,
                    term: self.term + 1,
                    kind: MessageKind::PreVote {
                        last_index: li,
                        last_term: lt,
                    },
                };
                self.send_msg(m);
            }
        } else {
            self.campaign_vote(transfer);
        }
    }

    fn campaign_vote(&mut self, transfer: bool) {
        self.term += 1;
        self.vote = self.id;
        self.role = Role::Candidate;
        self.leader = None;
        self.votes.clear();
        self.election_elapsed = 0;
        self.reset_randomized_timeout();
        self.abort_reads();
        self.votes.insert(self.id, true);
        if self.votes.len() >= self.quorum_size() {
            self.become_leader();
            return;
        }
        let (li, lt) = (self.log.last_index(), self.log.last_term());
        let voters: Vec<NodeId> = self.conf.voters.iter().copied().collect();
        let me = self.id;
        for v in voters.into_iter().filter(|v| *v != me) {
            self.send(
                v,
                MessageKind::Vote {
                    last_index: li,
                    last_term: lt,
                    transfer,
                },
            );
        }
    }

    pub(crate) fn become_follower(&mut self, term: u64, leader: Option<NodeId>) {
        if self.role == Role::Leader {
            tracing::debug!(
                node = self.id,
                term = self.term,
                new_term = term,
                "stepped down"
            );
        }
        if term > self.term {
            self.term = term;
            self.vote = 0;
        }
        self.role = Role::Follower;
        self.leader = leader;
        self.votes.clear();
        self.election_elapsed = 0;
        self.heartbeat_elapsed = 0;
        self.reset_randomized_timeout();
        self.transferee = None;
        self.pending_bcast = false;
        self.progress.clear();
        self.abort_reads();
    }

    fn abort_reads(&mut self) {
        for r in self.pending_reads.drain(..) {
            self.dropped_reads.push(r.ctx);
        }
    }

    fn become_leader(&mut self) {
        tracing::debug!(node = self.id, term = self.term, "became leader");
        self.stats.became_leader += 1;
        self.role = Role::Leader;
        self.leader = Some(self.id);
        self.votes.clear();
        self.election_elapsed = 0;
        self.heartbeat_elapsed = 0;
        self.transferee = None;
        self.reset_progress();
        // Raft §8 / figure 8: a no-op of our own term lets earlier entries commit.
        self.append_entry(EntryKind::Noop, bytes::Bytes::new());
        self.bcast_append();
        self.pending_bcast = false;
    }

    pub(crate) fn reset_progress(&mut self) {
        self.progress.clear();
        let next = self.log.last_index() + 1;
        let members: Vec<NodeId> = self.conf.members().collect();
        for id in members {
            let mut p = Progress::new(next, self.cfg.max_inflight_msgs);
            if id == self.id {
                p.matched = self.log.persisted;
                p.recent_active = true;
            }
            self.progress.insert(id, p);
        }
    }

    /// Recomputes the effective membership after the log changed and updates the leader's
    /// progress set to match it.
    pub(crate) fn refresh_conf(&mut self) {
        let (conf, idx) = self.log.effective_conf();
        self.conf_index = idx;
        if conf == self.conf {
            return;
        }
        self.conf = conf;
        if self.role == Role::Leader {
            let next = self.log.last_index() + 1;
            let members: Vec<NodeId> = self.conf.members().collect();
            self.progress.retain(|id, _| members.contains(id));
            for id in members {
                self.progress.entry(id).or_insert_with(|| {
                    let mut p = Progress::new(next, self.cfg.max_inflight_msgs);
                    p.recent_active = true;
                    p
                });
            }
            if let Some(t) = self.transferee
                && !self.conf.voters.contains(&t)
            {
                self.transferee = None;
            }
        }
    }

    pub(crate) fn tick_leader(&mut self) {
        self.heartbeat_elapsed += 1;
        self.election_elapsed += 1;
        if self.election_elapsed >= self.cfg.election_tick {
            self.election_elapsed = 0;
            if self.cfg.check_quorum {
                let active = self
                    .conf
                    .voters
                    .iter()
                    .filter(|v| {
                        **v == self.id || self.progress.get(v).is_some_and(|p| p.recent_active)
                    })
                    .count();
                for (id, p) in self.progress.iter_mut() {
                    if *id != self.id {
                        p.recent_active = false;
                    }
                }
                if active < self.quorum_size() {
                    self.become_follower(self.term, None);
                    return;
                }
            }
        }
        if self.transferee.is_some() {
            self.transfer_elapsed += 1;
            if self.transfer_elapsed >= self.cfg.election_tick {
                self.transferee = None;
            }
        }
        if self.heartbeat_elapsed >= self.cfg.heartbeat_tick {
            self.heartbeat_elapsed = 0;
            self.bcast_heartbeat();
        }
    }
}
