//! Timestamps: TiKV's hybrid layout `physical_ms << 18 | logical`.

/// Bits of the logical part of a timestamp.
pub const LOGICAL_BITS: u32 = 18;

/// The physical part (milliseconds since the Unix epoch) of a timestamp.
pub fn physical_ms(ts: u64) -> u64 {
    ts >> LOGICAL_BITS
}

/// The timestamp made of `physical_ms` and `logical` (`logical < 2^18`).
pub fn compose_ts(physical_ms: u64, logical: u64) -> u64 {
    (physical_ms << LOGICAL_BITS) | (logical & ((1 << LOGICAL_BITS) - 1))
}

/// This machine's clock in milliseconds since the Unix epoch (0 before it).
pub(crate) fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `d` in whole milliseconds (saturating).
pub(crate) fn duration_ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The timestamp `back_ms` milliseconds before physical time `physical_ms` (logical part
/// 0; 0 at the most).
pub(crate) fn ts_behind(physical_ms: u64, back_ms: u64) -> u64 {
    compose_ts(physical_ms.saturating_sub(back_ms), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_and_split_round_trip() {
        let ts = compose_ts(1_700_000_000_000, 5);
        assert_eq!(physical_ms(ts), 1_700_000_000_000);
        assert_eq!(ts & ((1 << LOGICAL_BITS) - 1), 5);
        assert!(compose_ts(2, 0) > compose_ts(1, (1 << LOGICAL_BITS) - 1));
    }
}
