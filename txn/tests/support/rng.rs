//! The seed each randomized test run prints so a failure can be replayed, and the switch
//! for the long versions; the generator is `surge-testkit`'s [`SplitMix64`].

pub use surge_testkit::SplitMix64;

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
