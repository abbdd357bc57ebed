//! [`MemEngine`]: a region's three column families as ordered maps in memory.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::cf::Cf;
use super::error::EngineError;
use super::traits::{Engine, Snapshot};
use super::write_batch::{Modify, WriteBatch};

/// The first bytes of every export: the format's name and version.
const EXPORT_MAGIC: &[u8; 8] = b"SGTXNEX1";

/// A column family's entries. Keys and values are refcounted, so cloning a map for an
/// export view copies its tree but none of the data (`Arc<[u8]>` rather than
/// `bytes::Bytes`: cloning a `Bytes` made from a `Vec` allocates on its first clone).
type Map = BTreeMap<Arc<[u8]>, Arc<[u8]>>;

/// A column family's entries as decoded from an export.
pub(super) type OwnedMap = BTreeMap<Vec<u8>, Vec<u8>>;

/// The data proper: one map per column family, the applied index and the byte count.
#[derive(Debug, Default, Clone)]
struct State {
    lock: Map,
    write: Map,
    default: Map,
    applied_index: u64,
    /// Sum of key and value lengths over all maps.
    size: u64,
}

impl State {
    fn cf(&self, cf: Cf) -> &Map {
        match cf {
            Cf::Lock => &self.lock,
            Cf::Write => &self.write,
            Cf::Default => &self.default,
        }
    }

    fn cf_mut(&mut self, cf: Cf) -> &mut Map {
        match cf {
            Cf::Lock => &mut self.lock,
            Cf::Write => &mut self.write,
            Cf::Default => &mut self.default,
        }
    }

    fn apply(&mut self, modify: &Modify) {
        let cf = modify.cf();
        let (added, removed) = match modify {
            Modify::Put { key, value, .. } => {
                let added = (key.len() + value.len()) as u64;
                let old = self
                    .cf_mut(cf)
                    .insert(Arc::from(key.as_slice()), Arc::from(value.as_slice()));
                (added, old.map_or(0, |v| (key.len() + v.len()) as u64))
            }
            Modify::Delete { key, .. } => {
                let old = self.cf_mut(cf).remove(key.as_slice());
                (0, old.map_or(0, |v| (key.len() + v.len()) as u64))
            }
        };
        self.size = self.size + added - removed;
    }
}

/// What an export holds after its magic: every map and the index it was taken at.
#[derive(Serialize, Deserialize)]
pub(super) struct ExportBody {
    pub(super) lock: OwnedMap,
    pub(super) write: OwnedMap,
    pub(super) default: OwnedMap,
    pub(super) applied_index: u64,
}

impl ExportBody {
    /// Its three maps with their column families, in [`Cf::ALL`]'s order.
    pub(super) fn by_cf(self) -> [(Cf, OwnedMap); 3] {
        [
            (Cf::Lock, self.lock),
            (Cf::Write, self.write),
            (Cf::Default, self.default),
        ]
    }

    /// [`ExportBody::by_cf`], borrowed.
    pub(super) fn by_cf_ref(&self) -> [(Cf, &OwnedMap); 3] {
        [
            (Cf::Lock, &self.lock),
            (Cf::Write, &self.write),
            (Cf::Default, &self.default),
        ]
    }

    /// Puts every entry of this export into `state`, keeping what is there.
    fn put_into(self, state: &mut State) {
        for (cf, map) in self.by_cf() {
            for (key, value) in map {
                state.apply(&Modify::Put { cf, key, value });
            }
        }
    }
}

/// Who holds the engine: live snapshots, and whether a writer is waiting or writing.
#[derive(Debug, Default)]
struct Pins {
    readers: usize,
    writer: bool,
}

/// A region's data in memory: one ordered map per [`Cf`] plus the applied index.
///
/// # Invariants
/// - A snapshot sees the engine as of exactly one applied batch. While any snapshot lives,
///   writes wait; a waiting writer holds back new snapshots, so writers do not starve. This
///   is a read/write lock whose read side is `Send` (a `parking_lot` read guard is not, and
///   [`Snapshot`] must be), built from a pin count and a condition variable.
/// - Consequently a thread must not write, nor take a second snapshot, while it holds a
///   snapshot: with a writer waiting in between, that deadlocks (as re-entrant read locks
///   do).
/// - `size_bytes` is exactly the sum of key and value lengths held.
#[derive(Debug, Default)]
pub struct MemEngine {
    state: RwLock<State>,
    pins: Mutex<Pins>,
    pins_changed: Condvar,
}

impl MemEngine {
    /// An empty engine at applied index 0.
    pub fn new() -> MemEngine {
        MemEngine::default()
    }

    /// Waits until no writer is active, then pins the current state for a snapshot.
    fn pin(&self) {
        let mut pins = self.pins.lock();
        while pins.writer {
            self.pins_changed.wait(&mut pins);
        }
        pins.readers += 1;
    }

    fn unpin(&self) {
        let mut pins = self.pins.lock();
        pins.readers -= 1;
        if pins.readers == 0 {
            self.pins_changed.notify_all();
        }
    }

    /// Runs `change` on the state once no snapshot lives and no other writer is active.
    fn exclusive<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        {
            let mut pins = self.pins.lock();
            while pins.writer {
                self.pins_changed.wait(&mut pins);
            }
            // From here on new snapshots wait; then wait for the live ones to go.
            pins.writer = true;
            while pins.readers > 0 {
                self.pins_changed.wait(&mut pins);
            }
        }
        let result = change(&mut self.state.write());
        let mut pins = self.pins.lock();
        pins.writer = false;
        self.pins_changed.notify_all();
        result
    }
}

/// A consistent view of a [`MemEngine`]: no write is applied while it lives.
struct MemSnapshot<'a> {
    engine: &'a MemEngine,
}

impl Drop for MemSnapshot<'_> {
    fn drop(&mut self) {
        self.engine.unpin();
    }
}

impl Snapshot for MemSnapshot<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Option<Vec<u8>> {
        self.engine.state.read().cf(cf).get(key).map(|v| v.to_vec())
    }

    fn scan(
        &self,
        cf: Cf,
        start: &[u8],
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) {
        if end.is_some_and(|end| end <= start) {
            return;
        }
        let end = end.map_or(Bound::Unbounded, Bound::Excluded);
        let state = self.engine.state.read();
        for (key, value) in state.cf(cf).range::<[u8], _>((Bound::Included(start), end)) {
            if !visit(key, value) {
                break;
            }
        }
    }

    fn applied_index(&self) -> u64 {
        self.engine.state.read().applied_index
    }
}

impl Engine for MemEngine {
    fn snapshot(&self) -> Box<dyn Snapshot + '_> {
        self.pin();
        Box::new(MemSnapshot { engine: self })
    }

    fn write(&self, batch: &WriteBatch) -> Result<(), EngineError> {
        // Applying to ordered maps cannot fail half-way, so the batch is atomic by the
        // exclusive section alone: no snapshot sees a partly applied batch.
        self.exclusive(|state| {
            for modify in &batch.modifies {
                state.apply(modify);
            }
            state.applied_index = batch.applied_index;
        });
        Ok(())
    }

    fn applied_index(&self) -> u64 {
        self.state.read().applied_index
    }

    /// Encodes straight from the maps under the read lock: no copy of the data besides
    /// the output.
    fn export(&self) -> Vec<u8> {
        encode_state(&self.state.read())
    }

    /// Clones the three maps under the read lock (their trees only: keys and values are
    /// refcounted and shared) and encodes them when called, into exactly the bytes
    /// [`Engine::export`] gives now. A region's Raft snapshot takes the view on the
    /// node's Raft thread and encodes it on the snapshot writer thread: encoding a 16 MiB
    /// region there stalled every region of the node for 50-125 ms (timed by hand with
    /// temporary instrumentation in the bigtxn example).
    fn export_view(&self) -> Box<dyn FnOnce() -> Vec<u8> + Send> {
        let view = self.state.read().clone();
        Box::new(move || encode_state(&view))
    }

    /// Clones the three maps' trees as [`Engine::export_view`] does, and visits them when
    /// called (nothing is encoded or copied).
    fn entries_view(&self) -> super::traits::EntriesView {
        let view = self.state.read().clone();
        Box::new(move |visit| {
            for cf in Cf::ALL {
                for (key, value) in view.cf(cf) {
                    visit(cf, key, value)?;
                }
            }
            Ok(())
        })
    }

    /// Replaces all data by `data`. The engine's applied index becomes `applied_index`
    /// (the Raft snapshot's index), which may be ahead of the index recorded in the export
    /// when the log's last entries carried no data.
    fn import(&self, data: &[u8], applied_index: u64) -> Result<(), EngineError> {
        let mut new = State {
            applied_index,
            ..State::default()
        };
        decode_export(data)?.put_into(&mut new);
        self.exclusive(|state| *state = new);
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        self.state.read().size
    }

    fn split_off(&self, at: &[u8]) -> Vec<u8> {
        let moved = self.exclusive(|state| {
            let lock = state.lock.split_off(at);
            let write = state.write.split_off(at);
            let default = state.default.split_off(at);
            let moved: u64 = [&lock, &write, &default]
                .iter()
                .flat_map(|map| map.iter())
                .map(|(k, v)| (k.len() + v.len()) as u64)
                .sum();
            state.size -= moved;
            State {
                lock,
                write,
                default,
                applied_index: state.applied_index,
                size: moved,
            }
        });
        encode_state(&moved)
    }

    fn ingest(&self, data: &[u8], start: &[u8], end: Option<&[u8]>) -> Result<(), EngineError> {
        let body = decode_export(data)?;
        self.exclusive(|state| {
            let upper = end.map_or(Bound::Unbounded, Bound::Excluded);
            for (cf, incoming) in body.by_cf_ref() {
                let stale: Vec<Vec<u8>> = state
                    .cf(cf)
                    .range::<[u8], _>((Bound::Included(start), upper))
                    .map(|(k, _)| k.to_vec())
                    .filter(|k| !incoming.contains_key(k))
                    .collect();
                for key in stale {
                    state.apply(&Modify::Delete { cf, key });
                }
            }
            body.put_into(state);
        });
        Ok(())
    }

    fn middle_key(&self) -> Option<Vec<u8>> {
        let state = self.state.read();
        let n = state.write.len();
        if n < 2 {
            return None;
        }
        let (key, _) = state.write.iter().nth(n / 2)?;
        // Write keys carry a timestamp; the split point is the user key.
        let (encoded, _) = super::key_codec::split_ts(key).ok()?;
        let (first, _) = state.write.iter().next()?;
        let (first_encoded, _) = super::key_codec::split_ts(first).ok()?;
        if encoded == first_encoded {
            return None;
        }
        super::key_codec::decode_key(encoded)
            .ok()
            .map(|(user_key, _)| user_key)
    }
}

/// The number of entries over the three maps.
fn map_entries(state: &State) -> usize {
    state.lock.len() + state.write.len() + state.default.len()
}

/// The export of `state`: its magic, then [`ExportBody`]'s encoding.
fn encode_state(state: &State) -> Vec<u8> {
    let body = ExportRef {
        lock: RawMap(&state.lock),
        write: RawMap(&state.write),
        default: RawMap(&state.default),
        applied_index: state.applied_index,
    };
    // Room for every key and value plus their length prefixes, so the output is
    // allocated once.
    let capacity = EXPORT_MAGIC.len() + state.size as usize + 10 * map_entries(state) + 32;
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(EXPORT_MAGIC);
    // Serializing maps of byte slices into a Vec cannot fail.
    postcard::to_extend(&body, out).unwrap_or_default()
}

/// [`ExportBody`] borrowed from the engine: the same encoding, fields in the same order.
#[derive(Serialize)]
struct ExportRef<'a> {
    lock: RawMap<'a>,
    write: RawMap<'a>,
    default: RawMap<'a>,
    applied_index: u64,
}

/// A map encoded as postcard encodes an [`OwnedMap`] (a length, then each
/// key and value as a length and its bytes), but with each key and value written as one
/// byte string instead of one serializer call per byte.
struct RawMap<'a>(&'a Map);

/// A byte string; postcard writes it exactly as a `Vec<u8>` (length, then the bytes).
struct RawBytes<'a>(&'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Serialize for RawMap<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (RawBytes(k), RawBytes(v))))
    }
}

/// The export of entries given as sorted `(key, value)` lists per column family (lock, write,
/// default) at `applied_index`: exactly the bytes [`MemEngine::export`] gives for the same
/// entries (another engine's exports import into a `MemEngine` and back).
pub(super) fn encode_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    cfs: [&[(K, V)]; 3],
    applied_index: u64,
) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(bound = "")]
    struct PairsRef<'a, K: AsRef<[u8]>, V: AsRef<[u8]>> {
        lock: RawPairs<'a, K, V>,
        write: RawPairs<'a, K, V>,
        default: RawPairs<'a, K, V>,
        applied_index: u64,
    }
    struct RawPairs<'a, K, V>(&'a [(K, V)]);
    impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Serialize for RawPairs<'_, K, V> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(
                self.0
                    .iter()
                    .map(|(k, v)| (RawBytes(k.as_ref()), RawBytes(v.as_ref()))),
            )
        }
    }
    let bytes: usize = cfs
        .iter()
        .flat_map(|c| c.iter())
        .map(|(k, v)| k.as_ref().len() + v.as_ref().len() + 10)
        .sum();
    let [lock, write, default] = cfs;
    let body = PairsRef {
        lock: RawPairs(lock),
        write: RawPairs(write),
        default: RawPairs(default),
        applied_index,
    };
    let mut out = Vec::with_capacity(EXPORT_MAGIC.len() + bytes + 32);
    out.extend_from_slice(EXPORT_MAGIC);
    // Serializing byte slices into a Vec cannot fail.
    postcard::to_extend(&body, out).unwrap_or_default()
}

pub(super) fn decode_export(data: &[u8]) -> Result<ExportBody, EngineError> {
    let Some(body) = data.strip_prefix(EXPORT_MAGIC.as_slice()) else {
        return Err(EngineError::BadExport {
            detail: "missing magic SGTXNEX1".to_string(),
        });
    };
    let (body, rest): (ExportBody, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| EngineError::BadExport {
            detail: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(EngineError::BadExport {
            detail: format!("{} trailing bytes", rest.len()),
        });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(cf: Cf, key: &[u8], value: &[u8]) -> Modify {
        Modify::Put {
            cf,
            key: key.to_vec(),
            value: value.to_vec(),
        }
    }

    fn all(snap: &dyn Snapshot, cf: Cf) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        snap.scan(cf, b"", None, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        });
        out
    }

    #[test]
    fn batch_applies_in_order_and_records_index() {
        let engine = MemEngine::new();
        let batch = WriteBatch {
            modifies: vec![
                put(Cf::Lock, b"a", b"1"),
                put(Cf::Write, b"a", b"2"),
                Modify::Delete {
                    cf: Cf::Lock,
                    key: b"a".to_vec(),
                },
                put(Cf::Default, b"b", b"33"),
            ],
            applied_index: 7,
        };
        engine.write(&batch).unwrap();
        assert_eq!(engine.applied_index(), 7);
        let snap = engine.snapshot();
        assert_eq!(snap.get(Cf::Lock, b"a"), None);
        assert_eq!(snap.get(Cf::Write, b"a"), Some(b"2".to_vec()));
        assert_eq!(snap.applied_index(), 7);
        drop(snap);
        assert_eq!(engine.size_bytes(), 2 + 3);
    }

    #[test]
    fn scan_respects_bounds_and_stop() {
        let engine = MemEngine::new();
        let modifies = [b"a", b"b", b"c", b"d"]
            .iter()
            .map(|k| put(Cf::Write, *k, b"v"))
            .collect();
        engine
            .write(&WriteBatch {
                modifies,
                applied_index: 1,
            })
            .unwrap();
        let snap = engine.snapshot();
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, usize, Vec<&'a [u8]>);
        let cases: Vec<Case> = vec![
            (b"b", Some(b"d"), 10, vec![b"b", b"c"]),
            (b"", None, 2, vec![b"a", b"b"]),
            (b"c", None, 10, vec![b"c", b"d"]),
            (b"c", Some(b"c"), 10, vec![]),
            (b"d", Some(b"a"), 10, vec![]),
        ];
        for (start, end, limit, want) in cases {
            let mut got = Vec::new();
            snap.scan(Cf::Write, start, end, &mut |k, _| {
                got.push(k.to_vec());
                got.len() < limit
            });
            assert_eq!(got, want, "{start:?}..{end:?}");
        }
    }

    #[test]
    fn size_counts_overwrites_once() {
        let engine = MemEngine::new();
        let batch = |m| WriteBatch {
            modifies: vec![m],
            applied_index: 1,
        };
        engine.write(&batch(put(Cf::Lock, b"k", b"12345"))).unwrap();
        engine.write(&batch(put(Cf::Lock, b"k", b"1"))).unwrap();
        assert_eq!(engine.size_bytes(), 2);
        engine
            .write(&batch(Modify::Delete {
                cf: Cf::Lock,
                key: b"k".to_vec(),
            }))
            .unwrap();
        assert_eq!(engine.size_bytes(), 0);
    }

    #[test]
    fn export_import_round_trip() {
        let engine = MemEngine::new();
        engine
            .write(&WriteBatch {
                modifies: vec![put(Cf::Lock, b"l", b"x"), put(Cf::Default, b"d", b"yy")],
                applied_index: 4,
            })
            .unwrap();
        let copy = MemEngine::new();
        copy.import(&engine.export(), 9).unwrap();
        assert_eq!(copy.applied_index(), 9);
        assert_eq!(copy.size_bytes(), engine.size_bytes());
        for cf in Cf::ALL {
            assert_eq!(all(&*copy.snapshot(), cf), all(&*engine.snapshot(), cf));
        }
    }

    /// An engine with entries of many sizes in every column family, at index 7.
    fn varied_engine() -> MemEngine {
        let engine = MemEngine::new();
        let mut modifies = Vec::new();
        for i in 0..300u32 {
            let key = i.to_be_bytes();
            let value = vec![i as u8; (i % 200) as usize];
            modifies.push(put(Cf::Lock, &key, &value));
            modifies.push(put(Cf::Write, &key, &value[..value.len() / 2]));
            modifies.push(put(Cf::Default, &key, &value));
        }
        engine
            .write(&WriteBatch {
                modifies,
                applied_index: 7,
            })
            .unwrap();
        engine
    }

    #[test]
    fn export_encodes_like_the_owned_body() {
        let engine = varied_engine();
        let state = engine.state.read();
        let owned_map =
            |m: &Map| -> OwnedMap { m.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect() };
        let body = ExportBody {
            lock: owned_map(&state.lock),
            write: owned_map(&state.write),
            default: owned_map(&state.default),
            applied_index: state.applied_index,
        };
        drop(state);
        let mut owned = EXPORT_MAGIC.to_vec();
        owned.extend(postcard::to_allocvec(&body).unwrap());
        assert_eq!(engine.export(), owned);
    }

    /// A view encodes exactly what `export` gave when it was taken, whatever is written,
    /// overwritten, deleted or split off after.
    #[test]
    fn export_view_encodes_the_export_at_the_time_it_was_taken() {
        let engine = varied_engine();
        let before = engine.export();
        let view = engine.export_view();
        engine
            .write(&WriteBatch {
                modifies: vec![
                    put(Cf::Lock, &5u32.to_be_bytes(), b"overwritten"),
                    put(Cf::Write, b"new", b"value"),
                    Modify::Delete {
                        cf: Cf::Default,
                        key: 9u32.to_be_bytes().to_vec(),
                    },
                ],
                applied_index: 8,
            })
            .unwrap();
        let _ = engine.split_off(&100u32.to_be_bytes());
        assert_ne!(engine.export(), before);
        assert_eq!(view(), before);
    }

    #[test]
    fn bad_exports_are_refused_and_change_nothing() {
        let engine = MemEngine::new();
        engine
            .write(&WriteBatch {
                modifies: vec![put(Cf::Lock, b"l", b"x")],
                applied_index: 3,
            })
            .unwrap();
        let good = engine.export();
        let mut trailing = good.clone();
        trailing.push(0);
        let cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"SGTXNEX0".to_vec(),
            good[..good.len() - 1].to_vec(),
            trailing,
            [EXPORT_MAGIC.as_slice(), &[0xFF; 16]].concat(),
        ];
        for bad in cases {
            let err = engine.import(&bad, 100).unwrap_err();
            assert!(matches!(err, EngineError::BadExport { .. }), "{bad:?}");
            assert_eq!(engine.applied_index(), 3);
            assert_eq!(engine.snapshot().get(Cf::Lock, b"l"), Some(b"x".to_vec()));
        }
    }

    #[test]
    fn split_off_moves_the_upper_range_and_ingest_brings_it_back() {
        use crate::engine::key_codec::{encode_key, encode_key_with_ts};
        let e = MemEngine::new();
        let mut batch = WriteBatch::new();
        for k in [&b"a"[..], b"b", b"m", b"z"] {
            batch
                .modifies
                .push(put(Cf::Write, &encode_key_with_ts(k, 5), b"w"));
            batch.modifies.push(put(Cf::Lock, &encode_key(k), b"l"));
        }
        batch.applied_index = 3;
        e.write(&batch).expect("write");
        let total = e.size_bytes();
        assert_eq!(e.middle_key(), Some(b"m".to_vec()));
        let upper = e.split_off(&encode_key(b"m"));
        let other = MemEngine::new();
        other.import(&upper, 3).expect("import");
        assert_eq!(all(&*e.snapshot(), Cf::Lock).len(), 2);
        assert_eq!(all(&*other.snapshot(), Cf::Lock).len(), 2);
        assert_eq!(e.size_bytes() + other.size_bytes(), total);
        e.ingest(&upper, &encode_key(b"m"), None).expect("ingest");
        assert_eq!(e.size_bytes(), total);
        assert_eq!(all(&*e.snapshot(), Cf::Write).len(), 4);
        assert!(e.ingest(b"not an export", b"", None).is_err());
        assert_eq!(e.size_bytes(), total);
    }
}
