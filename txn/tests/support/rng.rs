//! [`SplitMix64`]: the seeded generator of every randomized test, and the seed each run
//! prints so a failure can be replayed.

/// Sebastiano Vigna's SplitMix64 (the seeding generator of `java.util.SplittableRandom`):
/// one 64-bit state, a Weyl increment and a 64-bit finalizer. Small, fast and good enough
/// to pick accounts, amounts and fault times; not for cryptography.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, n)` (`n` > 0). The modulo bias is below 2^-40 for the small `n`
    /// the tests use.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        self.next_u64() % n
    }

    /// A number in `[lo, hi]`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// A child generator whose sequence does not overlap this one's in practice (one per
    /// thread, so threads do not share a lock).
    pub fn fork(&mut self) -> SplitMix64 {
        SplitMix64::new(self.next_u64())
    }
}

/// The run's seed: `TXN_SEED` when set (to replay a failure), else a fresh one from the
/// clock. Prints it with the command that replays the test, so every failure can be rerun.
pub fn seed_for(test_binary: &str, test_name: &str) -> u64 {
    let seed = match std::env::var("TXN_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TXN_SEED={s:?} is not a u64")),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            // Fold the 128-bit count into 64 bits and mix, so close clocks differ widely.
            SplitMix64::new((nanos as u64) ^ ((nanos >> 64) as u64)).next_u64() >> 1
        }
    };
    eprintln!(
        "seed {seed}: replay with TXN_SEED={seed} cargo test -p surge-txn --test {test_binary} \
         -- {test_name} --exact --nocapture"
    );
    seed
}

/// Whether the long version of the workloads was asked for (`TXN_LONG=1`).
pub fn long_run() -> bool {
    std::env::var("TXN_LONG").is_ok_and(|v| v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference outputs of SplitMix64 from seed 1234567 (Vigna's splitmix64.c).
    #[test]
    fn matches_the_reference_sequence() {
        let mut r = SplitMix64::new(1_234_567);
        let want = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for w in want {
            assert_eq!(r.next_u64(), w);
        }
    }
}
