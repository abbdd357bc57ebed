//! Where the axes put the measured values, and their ticks.

/// How the x axis places the measured x values.
#[derive(Debug, Clone, Copy)]
pub enum XAxis {
    /// A log2 scale (client counts: 1, 8, 32 evenly apart by their doublings), ticks at the
    /// measured values only, labelled as integers.
    Log2,
    /// The measured values evenly spaced in increasing order, ticks labelled by the function
    /// (percentiles: `p50`, `p95`, `p99`, `max`).
    Ranked(fn(f64) -> String),
}

/// How the y axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YAxis {
    /// Linear from 0.
    Linear,
    /// Log10, for values that span decades (a 1-client and a 256-client throughput; a 4 ms
    /// median beside a 1 s maximum), ticks at 1, 2 and 5 times the powers of ten.
    Log10,
}

/// A tick of the x axis: at a measured value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tick {
    /// The measured value.
    pub(super) value: f64,
    /// Where it is drawn on the chart's internal, linear x coordinate.
    pub(super) at: f64,
    /// Its label.
    pub(super) label: String,
}

/// One tick per distinct x value of `xs`, in increasing order, placed by `axis`.
///
/// For [`XAxis::Log2`] the values must be positive (client counts).
pub(super) fn x_ticks(axis: XAxis, xs: impl IntoIterator<Item = f64>) -> Vec<Tick> {
    let mut values: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| match axis {
            XAxis::Log2 => Tick {
                value,
                at: value.max(f64::MIN_POSITIVE).log2(),
                label: integer_or_decimal(value),
            },
            XAxis::Ranked(label) => Tick {
                value,
                at: i as f64,
                label: label(value),
            },
        })
        .collect()
}

/// `8` for 8.0, `1.5` for 1.5.
fn integer_or_decimal(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The ticks of a log10 axis covering `[min, max]` (both positive): 1, 2 and 5 times every
/// power of ten from the one at or below `min` to the first tick at or above `max`.
pub(super) fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    let (min, max) = (min.max(f64::MIN_POSITIVE), max.max(min));
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(min.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            let t = m * decade;
            if t >= min / 2.0 {
                ticks.push(t);
            }
            if t >= max {
                return ticks;
            }
        }
        decade *= 10.0;
    }
}

/// The ticks of a linear axis from 0 covering `max`: 0 and every multiple of a step of 1, 2
/// or 5 times a power of ten, about 5 of them.
pub(super) fn linear_ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let decade = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * decade);
    let mut ticks = vec![0.0];
    while ticks.last().is_some_and(|t| *t < max) {
        ticks.push(ticks.len() as f64 * step);
    }
    ticks
}

/// A tick or axis value as text: no trailing zeros, no float noise (`20`, not
/// `19.999999999999996`; `0.5`).
pub(super) fn tick_text(v: f64) -> String {
    let rounded = (v * 1e6).round() / 1e6;
    integer_or_decimal(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ticks_are_the_measured_counts_on_a_log2_scale() {
        let ticks = x_ticks(XAxis::Log2, [1.0, 8.0, 32.0, 8.0, 1.0, 32.0]);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        let at: Vec<f64> = ticks.iter().map(|t| t.at).collect();
        assert_eq!(labels, ["1", "8", "32"]);
        assert_eq!(at, [0.0, 3.0, 5.0]);
        let ticks = x_ticks(XAxis::Log2, [1.0, 256.0]);
        assert_eq!(
            ticks
                .iter()
                .map(|t| (t.at, t.label.clone()))
                .collect::<Vec<_>>(),
            [(0.0, "1".to_string()), (8.0, "256".to_string())]
        );
    }

    #[test]
    fn percentile_ticks_are_evenly_spaced_with_their_names() {
        fn name(p: f64) -> String {
            if p >= 100.0 {
                "max".into()
            } else {
                format!("p{p:.0}")
            }
        }
        let ticks = x_ticks(XAxis::Ranked(name), [50.0, 95.0, 99.0, 100.0]);
        assert_eq!(
            ticks
                .iter()
                .map(|t| (t.at, t.label.clone()))
                .collect::<Vec<_>>(),
            [
                (0.0, "p50".to_string()),
                (1.0, "p95".to_string()),
                (2.0, "p99".to_string()),
                (3.0, "max".to_string())
            ]
        );
    }

    #[test]
    fn linear_ticks_start_at_0_and_cover_the_maximum_in_round_steps() {
        assert_eq!(
            linear_ticks(813.0),
            [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
        );
        assert_eq!(linear_ticks(4.2), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(tick_text(10f64.powf(20f64.log10())), "20");
        assert_eq!(tick_text(0.5), "0.5");
    }

    #[test]
    fn log_ticks_cover_the_values_in_1_2_5_steps() {
        assert_eq!(
            log_ticks(4.0, 959.0),
            [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(log_ticks(165.0, 12787.0)[0], 100.0);
        assert_eq!(log_ticks(165.0, 12787.0).last(), Some(&20000.0));
    }
}
