//! Micro-benchmarks: the core's propose/ready cycle, the wire codec and a WAL group write.
//! The end-to-end 3-node figure is `examples/bench.rs`.
#![allow(missing_docs)] // criterion's macros generate undocumented functions.

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use surge_raft_lite::{
    Config, Entry, EntryKind, GroupWrite, HardState, LogStore, MemLogStore, Message, MessageKind,
    RaftState, RawNode, Wal, WalOptions, decode_message, encode_message,
};

fn leader() -> (RawNode, MemLogStore) {
    let mut n = RawNode::new(Config::new(1), RaftState::bootstrap([1])).expect("node");
    let mut store = MemLogStore::new();
    n.campaign_now().expect("campaign");
    while n.has_ready() {
        let rd = n.ready().expect("ready");
        if let Some(w) = GroupWrite::from_ready(1, &rd) {
            store.write(&[w]).expect("write");
        }
        n.advance();
    }
    (n, store)
}

fn bench_core(c: &mut Criterion) {
    let mut g = c.benchmark_group("core");
    g.throughput(Throughput::Elements(64));
    g.bench_function("propose_64_then_ready", |b| {
        let (mut n, mut store) = leader();
        let payload = Bytes::from(vec![7u8; 128]);
        b.iter(|| {
            for _ in 0..64 {
                n.propose(payload.clone()).expect("propose");
            }
            while n.has_ready() {
                let rd = n.ready().expect("ready");
                if let Some(w) = GroupWrite::from_ready(1, &rd) {
                    store.write(&[w]).expect("write");
                }
                n.advance();
            }
            if n.applied() > 10_000 {
                (n, store) = leader();
            }
        });
    });
    g.finish();
}

fn append(n: u64) -> Message {
    Message {
        from: 1,
        to: 2,
        term: 3,
        kind: MessageKind::Append {
            prev_index: 10,
            prev_term: 3,
            entries: (0..n)
                .map(|i| Entry {
                    term: 3,
                    index: 11 + i,
                    kind: EntryKind::Normal,
                    data: Bytes::from(vec![1u8; 128]),
                })
                .collect(),
            commit: 10,
        },
    }
}

fn bench_codec(c: &mut Criterion) {
    let m = append(64);
    let mut buf = Vec::new();
    encode_message(1, &m, &mut buf);
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("encode_append_64", |b| {
        let mut out = Vec::with_capacity(buf.len());
        b.iter(|| {
            out.clear();
            encode_message(1, &m, &mut out);
        })
    });
    g.bench_function("decode_append_64", |b| {
        b.iter(|| decode_message(&buf).expect("decode"))
    });
    g.finish();
}

fn bench_wal(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut wal = Wal::open(dir.path(), WalOptions::default()).expect("wal");
    let mut next = 1u64;
    let mut g = c.benchmark_group("wal");
    g.throughput(Throughput::Elements(4 * 64));
    g.sample_size(20);
    g.bench_function("write_4_groups_x_64_entries_fsync", |b| {
        b.iter(|| {
            let batch: Vec<GroupWrite> = (1..=4u64)
                .map(|grp| GroupWrite {
                    group: grp,
                    snapshot: None,
                    entries: (0..64)
                        .map(|i| Entry {
                            term: 1,
                            index: next + i,
                            kind: EntryKind::Normal,
                            data: Bytes::from(vec![2u8; 128]),
                        })
                        .collect(),
                    hard_state: Some(HardState {
                        term: 1,
                        vote: 1,
                        commit: next,
                    }),
                })
                .collect();
            wal.write(&batch).expect("write");
            next += 64;
        })
    });
    g.finish();
}

criterion_group!(benches, bench_core, bench_codec, bench_wal);
criterion_main!(benches);
