//! [`Cf`]: the three column families of a region's data.

use serde::{Deserialize, Serialize};

/// A column family, with TiKV's meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Cf {
    /// `encoded key -> Lock`: at most one lock per key.
    Lock,
    /// `encoded key + inverted commit_ts -> Write`: commit and rollback records, newest first.
    Write,
    /// `encoded key + inverted start_ts -> value`: values too long to sit in the write record.
    Default,
}

impl Cf {
    /// All column families, in a fixed order.
    pub const ALL: [Cf; 3] = [Cf::Lock, Cf::Write, Cf::Default];

    /// The column family's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Cf::Lock => "lock",
            Cf::Write => "write",
            Cf::Default => "default",
        }
    }
}

impl std::fmt::Display for Cf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
