//! A deterministic in-memory cluster for tests: nodes persist into a `MemLogStore`,
//! messages travel through a FIFO queue with cut links, isolated nodes and dropped types.
#![allow(dead_code)] // Each test file uses a different part of the harness.
#![allow(clippy::unwrap_used)] // Test helpers: a failure is a test failure.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use surge_raft_lite::*;

pub struct TestNode {
    pub raw: RawNode,
    pub store: MemLogStore,
    pub cfg: Config,
    pub applied: Vec<Entry>,
    pub read_states: Vec<ReadState>,
    pub snapshot_installed: Option<Snapshot>,
}

pub struct Net {
    pub nodes: BTreeMap<u64, TestNode>,
    pub queue: VecDeque<Message>,
    pub cut: BTreeSet<(u64, u64)>,
    pub isolated: BTreeSet<u64>,
    pub drop_kinds: BTreeSet<&'static str>,
    pub delivered: u64,
}

pub fn cfg(id: u64) -> Config {
    let mut c = Config::new(id);
    c.seed = id * 7919;
    c
}

impl Net {
    pub fn new(ids: &[u64]) -> Net {
        Net::with_config(ids, |_| {})
    }

    pub fn with_config(ids: &[u64], tweak: impl Fn(&mut Config)) -> Net {
        let mut nodes = BTreeMap::new();
        for &id in ids {
            let mut c = cfg(id);
            tweak(&mut c);
            let mut store = MemLogStore::new();
            let st = RaftState::bootstrap(ids.iter().copied());
            // Bootstrap membership is not written to the log: it is the state of a
            // fresh node; persist its (empty) hard state so restarts see it.
            store
                .write(&[GroupWrite {
                    group: 1,
                    hard_state: Some(HardState::default()),
                    ..Default::default()
                }])
                .unwrap();
            let raw = RawNode::new(c.clone(), st).unwrap();
            nodes.insert(
                id,
                TestNode {
                    raw,
                    store,
                    cfg: c,
                    applied: Vec::new(),
                    read_states: Vec::new(),
                    snapshot_installed: None,
                },
            );
        }
        Net {
            nodes,
            queue: VecDeque::new(),
            cut: BTreeSet::new(),
            isolated: BTreeSet::new(),
            drop_kinds: BTreeSet::new(),
            delivered: 0,
        }
    }

    /// Adds a node that joins later (empty membership; learns it from the leader).
    pub fn add_empty_node(&mut self, id: u64) {
        let c = cfg(id);
        let raw = RawNode::new(c.clone(), RaftState::default()).unwrap();
        self.nodes.insert(
            id,
            TestNode {
                raw,
                store: MemLogStore::new(),
                cfg: c,
                applied: Vec::new(),
                read_states: Vec::new(),
                snapshot_installed: None,
            },
        );
    }

    pub fn node(&self, id: u64) -> &RawNode {
        &self.nodes[&id].raw
    }

    pub fn node_mut(&mut self, id: u64) -> &mut RawNode {
        &mut self.nodes.get_mut(&id).unwrap().raw
    }

    /// One full Ready cycle on `id`: send, persist, send persisted, apply, advance.
    pub fn process(&mut self, id: u64) -> bool {
        let n = self.nodes.get_mut(&id).unwrap();
        if !n.raw.has_ready() {
            return false;
        }
        let rd = n.raw.ready().unwrap();
        self.queue.extend(rd.messages.iter().cloned());
        if let Some(w) = GroupWrite::from_ready(1, &rd) {
            n.store.write(&[w]).unwrap();
        }
        self.queue.extend(rd.persisted_messages.iter().cloned());
        if let Some(s) = &rd.snapshot {
            n.snapshot_installed = Some(s.clone());
            n.applied.retain(|e| e.index <= s.meta.index);
        }
        n.applied.extend(rd.committed_entries.iter().cloned());
        n.read_states.extend(rd.read_states.iter().copied());
        n.raw.advance();
        true
    }

    pub fn process_all(&mut self) -> bool {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        let mut any = false;
        for id in ids {
            while self.process(id) {
                any = true;
            }
        }
        any
    }

    fn blocked(&self, m: &Message) -> bool {
        self.cut.contains(&(m.from, m.to))
            || self.cut.contains(&(m.to, m.from))
            || self.isolated.contains(&m.from)
            || self.isolated.contains(&m.to)
            || self.drop_kinds.contains(m.kind.name())
            || !self.nodes.contains_key(&m.to)
    }

    /// Delivers messages until the cluster is quiet.
    pub fn settle(&mut self) {
        for _ in 0..100_000 {
            self.process_all();
            let Some(m) = self.queue.pop_front() else {
                if !self.process_all() {
                    return;
                }
                continue;
            };
            if self.blocked(&m) {
                continue;
            }
            self.delivered += 1;
            let to = m.to;
            self.node_mut(to).step(m).unwrap();
        }
        panic!("cluster did not settle");
    }

    pub fn campaign(&mut self, id: u64) {
        self.node_mut(id).campaign_now().unwrap();
        self.settle();
    }

    pub fn propose(&mut self, id: u64, data: &[u8]) -> Result<EntryId> {
        let r = self.node_mut(id).propose(Bytes::copy_from_slice(data));
        self.settle();
        r
    }

    pub fn tick(&mut self, id: u64, n: u32) {
        for _ in 0..n {
            self.node_mut(id).tick().unwrap();
            self.settle();
        }
    }

    pub fn tick_all(&mut self, n: u32) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for _ in 0..n {
            for &id in &ids {
                self.node_mut(id).tick().unwrap();
            }
            self.settle();
        }
    }

    pub fn isolate(&mut self, id: u64) {
        self.isolated.insert(id);
    }

    pub fn recover(&mut self) {
        self.isolated.clear();
        self.cut.clear();
        self.drop_kinds.clear();
    }

    pub fn leaders(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.raw.role() == Role::Leader)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Rebuilds `id` from its store, as after a crash.
    pub fn restart(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).unwrap();
        let st = n.store.load(1).unwrap().unwrap_or_default();
        let conf = n.raw.conf().clone();
        let st = RaftState {
            conf: if st.conf.voters.is_empty() {
                conf
            } else {
                st.conf
            },
            ..st
        };
        n.raw = RawNode::new(n.cfg.clone(), st).unwrap();
        n.applied.clear();
    }

    /// Data of the applied normal entries of `id`.
    pub fn applied_data(&self, id: u64) -> Vec<Vec<u8>> {
        self.nodes[&id]
            .applied
            .iter()
            .filter(|e| e.kind == EntryKind::Normal)
            .map(|e| e.data.to_vec())
            .collect()
    }
}

/// A node built directly from a log of `(index, term)` pairs, for message-level tests.
pub fn node_with_log(id: u64, voters: &[u64], log: &[(u64, u64)], term: u64) -> RawNode {
    let mut c = cfg(id);
    c.pre_vote = false;
    let entries = log
        .iter()
        .map(|&(index, t)| Entry {
            index,
            term: t,
            kind: EntryKind::Normal,
            data: Bytes::new(),
        })
        .collect();
    let st = RaftState {
        hard_state: HardState {
            term,
            vote: 0,
            commit: 0,
        },
        conf: ConfState::with_voters(voters.iter().copied()),
        snapshot: None,
        entries,
    };
    RawNode::new(c, st).unwrap()
}

/// Runs one Ready cycle without persisting anywhere; returns it.
pub fn cycle(n: &mut RawNode) -> Ready {
    let rd = n.ready().unwrap();
    n.advance();
    rd
}

/// Makes `n` leader by granting it votes from `voters`.
pub fn make_leader(n: &mut RawNode, voters: &[u64]) {
    n.campaign_now().unwrap();
    let _ = cycle(n);
    for &v in voters {
        if v == n.id() {
            continue;
        }
        let term = n.term();
        n.step(Message {
            from: v,
            to: n.id(),
            term,
            kind: MessageKind::VoteResp { reject: false },
        })
        .unwrap();
    }
    assert_eq!(n.role(), Role::Leader);
}

pub fn msg(from: u64, to: u64, term: u64, kind: MessageKind) -> Message {
    Message {
        from,
        to,
        term,
        kind,
    }
}

pub fn ents(log: &[(u64, u64)]) -> Vec<Entry> {
    log.iter()
        .map(|&(index, term)| Entry {
            index,
            term,
            kind: EntryKind::Normal,
            data: Bytes::new(),
        })
        .collect()
}

pub fn append(prev: (u64, u64), entries: &[(u64, u64)], commit: u64) -> MessageKind {
    MessageKind::Append {
        prev_index: prev.0,
        prev_term: prev.1,
        entries: ents(entries),
        commit,
    }
}

pub fn append_resp(rd: &Ready) -> Vec<(u64, bool, u64)> {
    rd.persisted_messages
        .iter()
        .chain(rd.messages.iter())
        .filter_map(|m| match m.kind {
            MessageKind::AppendResp {
                index,
                reject,
                hint,
            } => Some((index, reject, hint)),
            _ => None,
        })
        .collect()
}

/// Direct campaigns in tests need voters without a leader lease.
pub fn no_lease(c: &mut Config) {
    c.pre_vote = false;
    c.check_quorum = false;
}

pub fn compact_leader(net: &mut Net, id: u64) {
    let n = net.node(id);
    let idx = n.applied();
    let snap = Snapshot {
        meta: SnapshotMeta {
            index: idx,
            term: n.term_at(idx).unwrap(),
            conf: n.conf().clone(),
        },
        data: Bytes::from(format!("state@{idx}")),
    };
    net.node_mut(id).compact(snap).unwrap();
    assert_eq!(net.node(id).snapshot_index(), idx);
}
