//! Placing the value labels of the points at one x so that none hides another or sits on
//! another series' marker.

/// Rows for labels written *above* their points, the points at pixel rows `ys` (any order;
/// rows grow downwards): a label's bottom is `rise` pixels above its point, labels are `gap`
/// pixels tall, markers reach `marker` pixels around their point. Points close enough that a
/// label would cover another's marker form one group, whose labels are stacked above its
/// topmost point, in the points' order (the highest point's label on top). Returns the rows
/// in the order of `ys`.
pub(super) fn stack(ys: &[i32], gap: i32, rise: i32, marker: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
    // From the lowest point up.
    order.sort_by_key(|&i| std::cmp::Reverse(ys[i]));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        if let Some(group) = groups.last_mut() {
            let top = group.last().map_or(ys[i], |&t| ys[t]);
            // The top edge of the group's labels were this point to stay out of it.
            let labels_top = top - rise - gap * group.len() as i32;
            if ys[i] + marker > labels_top {
                group.push(i);
                continue;
            }
        }
        groups.push(vec![i]);
    }
    let mut out = ys.to_vec();
    for group in &groups {
        let top = group.last().map_or(0, |&t| ys[t]);
        for (j, &i) in group.iter().enumerate() {
            out[i] = top - rise - gap * j as i32;
        }
    }
    out
}

/// Rows for labels written *beside* their points (centred on their rows `ys`, any order),
/// moved apart so that any two are at least `gap` pixels apart, each as close to its own
/// point as that allows: going up from the lowest, a label that would overlap the one below
/// it moves up. Returns the rows in the order of `ys`.
pub(super) fn spread(ys: &[i32], gap: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
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
    use super::{spread, stack};

    #[test]
    fn labels_above_close_points_stack_above_the_highest_and_others_stay() {
        // gap 13, rise 8, marker 5.
        assert_eq!(stack(&[100, 300], 13, 8, 5), [92, 292]);
        // Two nearly equal values (grouping on and off at one client): both labels above
        // both markers, the higher value's on top.
        assert_eq!(stack(&[201, 200], 13, 8, 5), [192, 179]);
        // Three close points and a far one below them.
        assert_eq!(stack(&[60, 40, 50, 200], 13, 8, 5), [32, 6, 19, 192]);
        assert!(stack(&[], 13, 8, 5).is_empty());
    }

    #[test]
    fn labels_beside_points_move_up_apart_and_others_stay() {
        assert_eq!(spread(&[100, 300], 14), [100, 300]);
        assert_eq!(spread(&[201, 200], 14), [201, 187]);
        assert_eq!(spread(&[50, 40, 45, 200], 14), [50, 22, 36, 200]);
        assert!(spread(&[], 14).is_empty());
    }
}
