//! A region's streamed Raft snapshot: [`RegionPeer::snapshot_stream`] and
//! [`RegionPeer::restore_from`], over the engine's snapshot stream format (`engine/
//! snapshot_stream`), whose header's region record carries the region's info and merge
//! state (as [`region_record`] encodes them), so neither side holds the region whole.

use std::io::Read;

use surge_raft_lite::SnapshotStream;

use super::peer::{MergeState, RegionPeer, region_record};
use super::region_info::RegionInfo;
use crate::{EngineError, SnapshotStreamReader, SnapshotStreamWriter};

impl RegionPeer {
    /// The region as of now (its range, epoch and merge state, and a view of its data),
    /// written when the returned closure runs, record by record into its sink. Called on the
    /// node's Raft thread between two applied entries, so every part is of the same applied
    /// index; the closure runs on another thread and reaches nothing of the peer. A sink
    /// error stops it at once.
    pub(crate) fn snapshot_stream(&self) -> SnapshotStream {
        let id = self.id();
        let record = region_record(&self.info(), self.merge_state());
        let applied = self.engine().applied_index();
        let view = self.engine().entries_view();
        Box::new(move |sink| {
            let write = || -> Result<(), EngineError> {
                let mut out = SnapshotStreamWriter::new(sink, applied, &record)?;
                view(&mut |cf, key, value| Ok(out.entry(cf, key, value)?))?;
                out.finish()?;
                Ok(())
            };
            write().map_err(|e| {
                tracing::warn!(region = id, error = %e, "streamed snapshot not written");
                format!("region {id}: snapshot stream: {e}")
            })
        })
    }

    /// Replaces the region by a streamed snapshot taken at `index`, read from `reader`,
    /// unless the engine already holds the region durably as of `index` or later (a restart
    /// that finds the snapshot applied, or a crash after its apply finished). On a disk
    /// engine the entries are applied as they are read, the region marked incomplete until
    /// the stream's end was checked, so a crash or an error in between leaves no durable
    /// state and a restart applies the same snapshot again.
    ///
    /// # Errors
    /// A message naming the region, the index and what is wrong (with the stream's byte
    /// offset) when the stream is truncated, damaged or not this region's, or the engine
    /// cannot write it; the region's info is then unchanged.
    pub(crate) fn restore_from(&self, index: u64, reader: &mut dyn Read) -> Result<(), String> {
        let id = self.id();
        if self.merged_away(index, "streamed snapshot") {
            return Ok(());
        }
        if let Some((applied, _)) = self.engine().durable_region()
            && applied >= index
        {
            tracing::debug!(
                region = id,
                index,
                applied,
                "streamed snapshot not applied: the engine holds a later state"
            );
            return Ok(());
        }
        let refused = |what: String| {
            tracing::error!(region = id, index, error = %what, "streamed snapshot refused");
            format!("region {id}: snapshot at index {index}: {what}")
        };
        let mut stream = SnapshotStreamReader::open(reader).map_err(|e| refused(e.to_string()))?;
        let header = stream.header().clone();
        if header.applied_index > index {
            return Err(refused(format!(
                "its data is of index {}, after the snapshot's",
                header.applied_index
            )));
        }
        let (info, merge): (RegionInfo, MergeState) = postcard::from_bytes(&header.record.state)
            .map_err(|e| refused(format!("undecodable region state in the header: {e}")))?;
        if info.id != id || info.start != header.record.start || info.end != header.record.end {
            return Err(refused(format!(
                "the header describes region {} [{:?}, {:?}), not this region's range",
                info.id, header.record.start, header.record.end
            )));
        }
        self.engine()
            .import_stream(&mut stream, index)
            .map_err(|e| refused(e.to_string()))?;
        *self.info_mut() = info;
        *self.merge.lock() = merge;
        Ok(())
    }
}
