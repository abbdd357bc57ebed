//! Placing the value labels of the points at one x so that they do not overlap.

/// Moves the labels at pixel rows `ys` (any order; a label sits above its point) apart so
/// that any two are at least `gap` pixels apart, each as close to its own point as that
/// allows: going up the chart from the lowest point, a label that would overlap the one below
/// it moves up, so no label moves onto a point below it. Returns the rows in the order of
/// `ys`.
pub(super) fn spread(ys: &[i32], gap: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
    // Pixel rows grow downwards: the lowest point has the largest row.
    order.sort_by_key(|&i| std::cmp::Reverse(ys[i]));
    let mut out = ys.to_vec();
    let mut below: Option<i32> = None;
    for i in order {
        let y = match below {
            Some(b) if ys[i] > b - gap => b - gap,
            _ => ys[i],
        };
        out[i] = y;
        below = Some(y);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn labels_closer_than_the_gap_move_up_apart_and_others_stay() {
        assert_eq!(spread(&[100, 300], 14), [100, 300]);
        // Two nearly equal values (grouping on and off at one client): the upper one moves.
        assert_eq!(spread(&[201, 200], 14), [201, 187]);
        // Three in a row push each other up, in the caller's order.
        assert_eq!(spread(&[50, 40, 45, 200], 14), [50, 22, 36, 200]);
        assert!(spread(&[], 14).is_empty());
    }
}
