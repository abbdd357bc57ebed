//! Golden bytes of what the client protocol carries from the txn crate and beside it.
//!
//! The build-time assertion in `messages.rs` follows the txn crate's own
//! `PROTOCOL_VERSION`, which covers its `KvRequest`/`KvResponse` format only; a
//! [`TxnFailure`] carries the txn crate's `TxnError` as it is, so a variant inserted or a
//! field reordered there would change what a node sends without any version moving. These
//! fixed values (every `TxnError`, `TxnFailure` and `TxnReply` variant, and the `TxnOp`s
//! that carry the txn crate's mode, hot-row operation and hints; with varints of several
//! bytes, negative integers, options both ways) pin the postcard bytes both ways: each
//! value must encode to its expectation, and the expectation must decode to the value.

use std::fmt::{Debug, Write as _};

use serde::Serialize;
use serde::de::DeserializeOwned;
use surge_txn::{
    HotHints, HotOp, HotOutcome, HotReject, KeyError, MvccError, RegionEpoch, RegionError,
    RegionInfo, ServiceError, TxnError, TxnMode, WaitForEdge,
};

use super::PROTOCOL_VERSION;
use crate::wire::{CoordinatorState, TxnFailure, TxnOp, TxnReply};

fn txn_errors() -> Vec<(TxnError, &'static str)> {
    let key = || b"k1".to_vec();
    vec![
        (
            TxnError::WriteConflict {
                start_ts: 300,
                conflict_start_ts: 301,
                conflict_commit_ts: 1 << 40,
                key: key(),
            },
            "00ac02ad02808080808020026b31",
        ),
        (
            TxnError::LockWaitTimeout {
                key: key(),
                lock_ts: 7,
            },
            "01026b3107",
        ),
        (
            TxnError::Deadlock {
                chain: vec![
                    WaitForEdge {
                        txn: 1,
                        wait_for_txn: 2,
                        key: key(),
                    },
                    WaitForEdge {
                        txn: 2,
                        wait_for_txn: 1,
                        key: b"k2".to_vec(),
                    },
                ],
            },
            "02020102026b310201026b32",
        ),
        (
            TxnError::KeyIsLocked {
                key: key(),
                lock_ts: 9,
            },
            "03026b3109",
        ),
        (
            TxnError::PessimisticLockNotFound {
                start_ts: 10,
                key: key(),
            },
            "040a026b31",
        ),
        (
            TxnError::PessimisticLockRolledBack {
                start_ts: 11,
                key: key(),
            },
            "050b026b31",
        ),
        (
            TxnError::TxnLockNotFound {
                start_ts: 12,
                key: key(),
            },
            "060c026b31",
        ),
        (
            TxnError::CommitTsExpired {
                start_ts: 13,
                commit_ts: 14,
                min_commit_ts: 15,
            },
            "070d0e0f",
        ),
        (TxnError::AlreadyExist { key: key() }, "08026b31"),
        (
            TxnError::Undetermined {
                start_ts: 16,
                detail: "lost".into(),
            },
            "0910046c6f7374",
        ),
        (
            TxnError::Region(RegionError::NotLeader {
                region_id: 3,
                leader: Some(2),
            }),
            "0a00030102",
        ),
        (
            TxnError::Region(RegionError::EpochNotMatch {
                region_id: 3,
                current: vec![RegionInfo {
                    id: 4,
                    start: b"a".to_vec(),
                    end: Vec::new(),
                    epoch: RegionEpoch {
                        version: 5,
                        conf_ver: 6,
                    },
                    peers: vec![1, 2, 3],
                }],
            }),
            "0a01030104016100050603010203",
        ),
        (
            TxnError::Region(RegionError::ProposalFailed {
                region_id: 3,
                detail: "term".into(),
                outcome_unknown: true,
            }),
            "0a0603047465726d01",
        ),
        (
            TxnError::Region(RegionError::NodeStopping {
                region_id: 3,
                node: 2,
            }),
            "0a070302",
        ),
        (
            TxnError::Unavailable(ServiceError::Timeout {
                node: 2,
                timeout_ms: 20_000,
            }),
            "0b0102a09c01",
        ),
        (
            TxnError::Protocol {
                detail: "odd".into(),
            },
            "0c036f6464",
        ),
        (
            TxnError::Key(KeyError::Mvcc(MvccError::TxnNotFound {
                start_ts: 17,
                key: key(),
            })),
            "0d000511026b31",
        ),
        (
            // A name the txn crate knows: an unknown one decodes as "record".
            TxnError::Key(KeyError::Mvcc(MvccError::Corrupt {
                what: "write record",
                key: key(),
                detail: "short".into(),
            })),
            "0d000a0c7772697465207265636f7264026b310573686f7274",
        ),
        (TxnError::TxnFinished, "0e"),
        (
            TxnError::Binlog {
                detail: "full".into(),
            },
            "0f0466756c6c",
        ),
        (
            TxnError::HotUpdateRejected {
                key: key(),
                reason: HotReject::BelowMin { value: -1, min: 0 },
                rollback: true,
            },
            "10026b3100010001",
        ),
        (
            TxnError::HotUpdateRejected {
                key: key(),
                reason: HotReject::AboveMax {
                    value: 101,
                    max: 100,
                },
                rollback: false,
            },
            "10026b3101ca01c80100",
        ),
        (
            TxnError::HotUpdateRejected {
                key: key(),
                reason: HotReject::Overflow {
                    current: i64::MAX,
                    delta: 1,
                },
                rollback: false,
            },
            "10026b3102feffffffffffffffff010200",
        ),
        (
            TxnError::HotUpdateRejected {
                key: key(),
                reason: HotReject::NotAnInteger {
                    prefix: b"x".to_vec(),
                },
                rollback: false,
            },
            "10026b3103017800",
        ),
        (
            TxnError::TargetAffectRow {
                key: key(),
                expected: 1,
                actual: 0,
                rollback: true,
            },
            "11026b31010001",
        ),
    ]
}

fn txn_failures() -> Vec<(TxnFailure, &'static str)> {
    vec![
        (TxnFailure::Txn(TxnError::TxnFinished), "000e"),
        (
            TxnFailure::NotReady {
                node: 1,
                detail: "recovering".into(),
            },
            "01010a7265636f766572696e67",
        ),
        (TxnFailure::NoSuchTxn { txn: 300 }, "02ac02"),
        (TxnFailure::SessionFull { max: 64 }, "0340"),
    ]
}

fn txn_replies() -> Vec<(TxnReply, &'static str)> {
    vec![
        (
            TxnReply::Begun {
                txn: 1,
                start_ts: 1 << 50,
            },
            "00018080808080808002",
        ),
        (TxnReply::Value(Some(b"v".to_vec())), "01010176"),
        (TxnReply::Value(None), "0100"),
        (
            TxnReply::Pairs(vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), Vec::new()),
            ]),
            "020201610131016200",
        ),
        (TxnReply::Done, "03"),
        (TxnReply::Committed { commit_ts: 301 }, "04ad02"),
        (
            TxnReply::Hot(HotOutcome {
                value: Some(-5),
                affected_rows: 1,
                commit_ts: Some(302),
                group_writes: 3,
            }),
            "0501090101ae0203",
        ),
        (
            TxnReply::Hot(HotOutcome {
                value: None,
                affected_rows: 0,
                commit_ts: None,
                group_writes: 0,
            }),
            "0500000000",
        ),
        (
            TxnReply::State(CoordinatorState::Ready {
                binlog_dir: Some("/d/binlog".into()),
                recovered_already_logged: 1,
                recovered_logged_now: 2,
                recovered_rolled_back: 3,
            }),
            "060001092f642f62696e6c6f67010203",
        ),
        (
            TxnReply::State(CoordinatorState::Recovering {
                attempts: 4,
                last_error: None,
            }),
            "06010400",
        ),
    ]
}

/// The operations that carry the txn crate's mode, hot-row operation and hints (each
/// field both ways: bounds and target present and absent, every hint on and off).
fn txn_ops() -> Vec<(TxnOp, &'static str)> {
    vec![
        (
            TxnOp::Begin {
                mode: TxnMode::Optimistic,
            },
            "0000",
        ),
        (
            TxnOp::Begin {
                mode: TxnMode::Pessimistic,
            },
            "0001",
        ),
        (
            TxnOp::HotUpdate {
                key: b"k1".to_vec(),
                op: HotOp {
                    delta: -3,
                    min: Some(0),
                    max: Some(1000),
                },
                hints: HotHints::new()
                    .commit_on_success()
                    .rollback_on_fail()
                    .target_affect_row(1),
            },
            "0a026b3105010001d00f01010101",
        ),
        (
            TxnOp::HotUpdate {
                key: b"k1".to_vec(),
                op: HotOp {
                    delta: 1 << 40,
                    min: None,
                    max: None,
                },
                hints: HotHints::new(),
            },
            "0a026b318080808080400000000000",
        ),
        (
            TxnOp::HotUpdate {
                key: Vec::new(),
                op: HotOp {
                    delta: 0,
                    min: Some(i64::MIN),
                    max: None,
                },
                hints: HotHints::new().commit_on_success().target_affect_row(300),
            },
            "0a000001ffffffffffffffffff0100010001ac02",
        ),
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Appends to `diffs` every case whose bytes are not its expectation either way.
fn compare<T>(what: &str, cases: Vec<(T, &str)>, diffs: &mut Vec<String>)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    for (value, want) in cases {
        let got = hex(&postcard::to_allocvec(&value).expect("encodes"));
        let back = unhex(want).and_then(|bytes| postcard::from_bytes::<T>(&bytes).ok());
        if got != want || back.as_ref() != Some(&value) {
            diffs.push(format!(
                "{what} {value:?}\n    want {want}\n    got  {got}\n    the expectation decodes to {back:?}"
            ));
        }
    }
}

#[test]
fn what_the_protocol_carries_keeps_its_bytes() {
    let mut diffs = Vec::new();
    compare("TxnError", txn_errors(), &mut diffs);
    compare("TxnFailure", txn_failures(), &mut diffs);
    compare("TxnReply", txn_replies(), &mut diffs);
    compare("TxnOp", txn_ops(), &mut diffs);
    assert!(
        diffs.is_empty(),
        "the postcard encoding of values in the client protocol changed:\n{}\n\
         A node and a client that both speak PROTOCOL_VERSION {PROTOCOL_VERSION} would read \
         each other wrongly. If the change is on purpose, bump PROTOCOL_VERSION in \
         src/wire/messages.rs and put the `got` bytes above in src/wire/golden_encoding.rs; \
         if not, find what moved (a variant inserted before others, a field reordered or \
         retyped, in this crate or in surge-txn).",
        diffs.join("\n")
    );
}
