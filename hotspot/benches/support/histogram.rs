//! A log-linear latency histogram for the benchmark (no dependency needed).

/// Log-linear latency histogram in nanoseconds: 8 sub-buckets per power of two (~12%).
#[derive(Clone)]
pub struct Histogram {
    counts: Vec<u64>,
}

impl Histogram {
    const SUB: u32 = 3;

    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            counts: vec![0; 64 << Self::SUB],
        }
    }

    fn index(ns: u64) -> usize {
        let ns = ns.max(1);
        let msb = 63 - ns.leading_zeros();
        if msb < Self::SUB {
            return ns as usize;
        }
        let sub = (ns >> (msb - Self::SUB)) & ((1 << Self::SUB) - 1);
        ((msb as usize) << Self::SUB) | sub as usize
    }

    /// Upper bound of bucket `i`, in ns.
    fn upper(i: usize) -> u64 {
        let msb = (i >> Self::SUB) as u32;
        if msb < Self::SUB {
            return i as u64;
        }
        let sub = (i as u64) & ((1 << Self::SUB) - 1);
        ((1u64 << Self::SUB) | sub).saturating_add(1) << (msb - Self::SUB)
    }

    /// Counts one sample of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.counts[Self::index(ns)] += 1;
    }

    /// Adds `o`'s counts.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
    }

    /// The `q` quantile (0..=1) in microseconds (bucket upper bound).
    pub fn quantile_us(&self, q: f64) -> f64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let want = ((total as f64) * q).ceil() as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Self::upper(i) as f64 / 1000.0;
            }
        }
        0.0
    }
}
