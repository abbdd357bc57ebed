//! Byte strings in the serde formats the nodes persist and send: `#[serde(with = ...)]`
//! helpers for the containers of byte vectors that `serde_bytes` does not cover.
//!
//! # Why
//!
//! serde treats a plain `Vec<u8>` as a sequence of `u8`: a decoder visits it element by
//! element into a buffer that serde preallocates to at most 1 MiB, so a 1 MiB + 4 stream
//! chunk came out of postcard with 2 MiB of capacity, byte by byte. A byte string
//! (`serde_bytes`) is read as one slice into one exact allocation.
//!
//! # Invariant: the bytes do not change
//!
//! postcard writes a `Vec<u8>` as its length (varint) and then each `u8` as one raw byte,
//! and a byte string as its length (varint) and then the bytes: the same bytes, so values
//! encoded before these attributes (the Raft logs, snapshots and the peers of a rolling
//! restart hold them) decode with them and the other way round (the tests below: generic
//! fields both ways by property, and `byte_fields_keep_their_encoding` for `Mutation`,
//! `Modify` and the KV requests and answers). serde_json writes both as
//! an array of numbers. The containers here keep their outer sequence as it was (length,
//! then the elements), with each element a byte string.

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeTuple, Serializer};
use serde_bytes::{ByteBuf, Bytes};

/// Elements a decoder reserves for ahead of seeing them: a sequence's declared length comes
/// from the peer, so it only sizes the first allocation up to this (as serde's own
/// `size_hint::cautious` does); more grows the vector as elements really arrive.
const MAX_PREALLOC: usize = 4096;

/// `Vec<Vec<u8>>` as a sequence of byte strings: `#[serde(with = "crate::wire_bytes::vec")]`.
pub(crate) mod vec {
    use super::*;

    /// Serializes `v` as a sequence of byte strings.
    ///
    /// # Errors
    /// The serializer's.
    pub(crate) fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(Bytes::new(b))?;
        }
        seq.end()
    }

    /// Deserializes a sequence of byte strings (or of `u8` sequences).
    ///
    /// # Errors
    /// The deserializer's.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<Vec<u8>>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of byte strings")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_PREALLOC));
                while let Some(b) = seq.next_element::<ByteBuf>()? {
                    out.push(b.into_vec());
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

/// `Vec<(Vec<u8>, Vec<u8>)>` as a sequence of pairs of byte strings:
/// `#[serde(with = "crate::wire_bytes::pairs")]`.
pub(crate) mod pairs {
    use super::*;

    /// What the field holds: key-value pairs.
    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    /// A pair serialized as a 2-tuple of byte strings (a tuple has no length prefix in
    /// postcard, as before).
    struct Pair<'a>(&'a [u8], &'a [u8]);

    impl serde::Serialize for Pair<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut t = s.serialize_tuple(2)?;
            t.serialize_element(Bytes::new(self.0))?;
            t.serialize_element(Bytes::new(self.1))?;
            t.end()
        }
    }

    /// Serializes `v` as a sequence of pairs of byte strings.
    ///
    /// # Errors
    /// The serializer's.
    pub(crate) fn serialize<S: Serializer>(
        v: &[(Vec<u8>, Vec<u8>)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for (k, val) in v {
            seq.serialize_element(&Pair(k, val))?;
        }
        seq.end()
    }

    /// Deserializes a sequence of pairs of byte strings (or of `u8` sequences).
    ///
    /// # Errors
    /// The deserializer's.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pairs, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of pairs of byte strings")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_PREALLOC));
                while let Some((k, v)) = seq.next_element::<(ByteBuf, ByteBuf)>()? {
                    out.push((k.into_vec(), v.into_vec()));
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    /// The fields as they were, plain serde sequences of `u8`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Old {
        one: Vec<u8>,
        opt: Option<Vec<u8>>,
        many: Vec<Vec<u8>>,
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    }

    /// The same fields as byte strings.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct New {
        #[serde(with = "serde_bytes")]
        one: Vec<u8>,
        #[serde(with = "serde_bytes")]
        opt: Option<Vec<u8>>,
        #[serde(with = "crate::wire_bytes::vec")]
        many: Vec<Vec<u8>>,
        #[serde(with = "crate::wire_bytes::pairs")]
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        // Lengths on both sides of the one- and two-byte varints.
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..140),
            proptest::collection::vec(any::<u8>(), 16_380..16_400),
        ]
    }

    fn old() -> impl Strategy<Value = Old> {
        (
            bytes(),
            proptest::option::of(bytes()),
            proptest::collection::vec(bytes(), 0..4),
            proptest::collection::vec((bytes(), bytes()), 0..4),
        )
            .prop_map(|(one, opt, many, pairs)| Old {
                one,
                opt,
                many,
                pairs,
            })
    }

    fn to_new(o: &Old) -> New {
        New {
            one: o.one.clone(),
            opt: o.opt.clone(),
            many: o.many.clone(),
            pairs: o.pairs.clone(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn byte_strings_encode_as_u8_sequences_did(o in old()) {
            let n = to_new(&o);
            let old_bytes = postcard::to_allocvec(&o).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let new_bytes = postcard::to_allocvec(&n).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&old_bytes, &new_bytes);
            // Old bytes decode as the new type, new bytes as the old one.
            let n2: New = postcard::from_bytes(&old_bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&n2, &n);
            let o2: Old = postcard::from_bytes(&new_bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&o2, &o);
            // serde_json (used by tests and tools) too.
            let old_json = serde_json::to_string(&o).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&serde_json::to_string(&n).map_err(|e| TestCaseError::fail(e.to_string()))?, &old_json);
            let n3: New = serde_json::from_str(&old_json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&n3, &n);
        }
    }

    /// The real types against their encoding before the attributes, written out as plain
    /// serde values: a postcard enum is its variant index (varint) and then its fields, as
    /// a tuple of them is. Old bytes must decode to the same value, and the value must
    /// encode to the old bytes.
    #[test]
    fn byte_fields_keep_their_encoding() {
        use crate::{
            Cf, CommittedPut, Context, KvRequest, KvResponse, Modify, Mutation, RegionEpoch,
            ScannedWrites,
        };

        fn same<T, O>(value: T, old: O)
        where
            T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
            O: Serialize,
        {
            let old_bytes = postcard::to_allocvec(&old).unwrap();
            assert_eq!(
                postcard::to_allocvec(&value).unwrap(),
                old_bytes,
                "{value:?}"
            );
            assert_eq!(postcard::from_bytes::<T>(&old_bytes).unwrap(), value);
        }

        let k = || b"key-1".to_vec();
        let big = || vec![7u8; 300];
        same(
            Mutation::Put {
                key: k(),
                value: big(),
            },
            (0u32, k(), big()),
        );
        same(Mutation::Delete { key: k() }, (1u32, k()));
        same(Mutation::Lock { key: k() }, (2u32, k()));
        same(Mutation::CheckNotExists { key: k() }, (3u32, k()));
        same(
            Modify::Put {
                cf: Cf::Write,
                key: k(),
                value: big(),
            },
            (0u32, Cf::Write, k(), big()),
        );
        same(
            Modify::Delete {
                cf: Cf::Default,
                key: k(),
            },
            (1u32, Cf::Default, k()),
        );
        let ctx = Context {
            region_id: 9,
            epoch: RegionEpoch {
                version: 2,
                conf_ver: 3,
            },
            gc_hold_ts: 0,
        };
        same(
            KvRequest::Get {
                ctx,
                key: k(),
                version: 1 << 40,
                bypass_locks: vec![5],
            },
            (0u32, ctx, k(), 1u64 << 40, vec![5u64]),
        );
        same(
            KvRequest::BatchGet {
                ctx,
                keys: vec![k(), big(), Vec::new()],
                version: 4,
                bypass_locks: Vec::new(),
            },
            (
                1u32,
                ctx,
                vec![k(), big(), Vec::new()],
                4u64,
                Vec::<u64>::new(),
            ),
        );
        same(
            KvRequest::Scan {
                ctx,
                start: k(),
                end: Some(big()),
                limit: 10,
                version: 4,
                bypass_locks: Vec::new(),
            },
            (
                2u32,
                ctx,
                k(),
                Some(big()),
                10usize,
                4u64,
                Vec::<u64>::new(),
            ),
        );
        same(
            KvRequest::Commit {
                ctx,
                keys: vec![k()],
                start_ts: 1,
                commit_ts: 2,
            },
            (5u32, ctx, vec![k()], 1u64, 2u64),
        );
        same(
            KvRequest::ScanWrites {
                ctx,
                start: k(),
                end: None,
                after_commit_ts: 1,
                upto_commit_ts: 2,
                limit: 3,
                limit_bytes: 4,
            },
            (26u32, ctx, k(), None::<Vec<u8>>, 1u64, 2u64, 3usize, 4usize),
        );
        same(KvResponse::Get { value: Some(big()) }, (0u32, Some(big())));
        same(KvResponse::Get { value: None }, (0u32, None::<Vec<u8>>));
        same(
            KvResponse::Pairs {
                pairs: vec![(k(), big()), (big(), Vec::new())],
            },
            (1u32, vec![(k(), big()), (big(), Vec::new())]),
        );
        same(
            KvResponse::Writes {
                writes: ScannedWrites {
                    puts: vec![CommittedPut {
                        key: k(),
                        commit_ts: 8,
                        start_ts: 7,
                        value: big(),
                    }],
                    resume_key: Some(k()),
                },
            },
            (16u32, vec![(k(), 8u64, 7u64, big())], Some(k())),
        );
    }

    /// The heap profile's case: a stream chunk of 1 MiB + 4 bytes. As a `u8` sequence it
    /// decodes into a buffer that serde preallocates to 1 MiB and doubles to 2 MiB; as a
    /// byte string into one of exactly its length.
    #[test]
    fn a_large_chunk_decodes_into_an_exact_allocation() {
        let chunk: Vec<u8> = (0..(1usize << 20) + 4).map(|i| i as u8).collect();
        let old = Old {
            one: chunk.clone(),
            opt: Some(chunk.clone()),
            many: vec![chunk.clone()],
            pairs: vec![(b"k".to_vec(), chunk.clone())],
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let back_old: Old = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back_old.one, chunk);
        // What the profile found: the plain form ends at twice the length.
        assert_eq!(back_old.one.capacity(), 2 << 20);
        let back: New = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, to_new(&old));
        assert_eq!(back.one.capacity(), chunk.len());
        assert_eq!(back.opt.as_ref().map(Vec::capacity), Some(chunk.len()));
        assert_eq!(back.many[0].capacity(), chunk.len());
        assert_eq!(back.pairs[0].1.capacity(), chunk.len());
    }
}
