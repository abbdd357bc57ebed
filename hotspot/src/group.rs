//! Running one group against the executor: members in arrival order, one durable step.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::{Applied, Error, GroupExecutor, Hints, Phase};

/// One member's outcome.
pub(crate) type MemberResult<X> = Result<
    <X as GroupExecutor>::Output,
    Error<<X as GroupExecutor>::Reject, <X as GroupExecutor>::Error>,
>;

/// What happened to a group, for the counters.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GroupReport {
    pub(crate) failed: u64,
    pub(crate) ignored: u64,
    pub(crate) group_failed: bool,
}

/// Runs `members` (in arrival order) as one group on `key`, leaving one result per member in
/// `out` (same order).
///
/// Each member is applied against the image holding every earlier kept member, so results equal
/// a serial execution in arrival order that skips failed members. A member failing alone never
/// touches the image. On a group failure (load, durable step, panic) every member not already
/// failed alone gets the group's error, so nothing of the group is reported committed.
///
/// Never unwinds because of the executor: a panic that escapes the per-call guards (a `Drop` of
/// the group image, a change or an output panicking after a failure) fails the group with
/// [`Phase::Drop`]. The leader must get here with every member's result, or members it leads
/// would never be woken.
pub(crate) fn run_group<X, M>(
    exec: &X,
    key: &X::Key,
    members: &[M],
    op_of: impl Fn(&M) -> (&X::Op, Hints),
    out: &mut Vec<MemberResult<X>>,
) -> GroupReport
where
    X: GroupExecutor,
{
    out.clear();
    let n = members.len();
    let committed = Cell::new(false);
    match catch_unwind(AssertUnwindSafe(|| {
        run_members(exec, key, members, op_of, out, &committed)
    })) {
        Ok(report) => report,
        Err(_) => {
            // Only values of a failed or commit-less group are dropped outside the per-call
            // guards, so nothing of it was made durable; keep the members' own failures.
            debug_assert!(
                !committed.get(),
                "no executor value is dropped after commit"
            );
            let report = GroupReport {
                failed: out.iter().filter(|r| r.is_err()).count() as u64,
                ..GroupReport::default()
            };
            fail_rest::<X>(out, n, report, |_| panicked(Phase::Drop, n))
        }
    }
}

fn run_members<X, M>(
    exec: &X,
    key: &X::Key,
    members: &[M],
    op_of: impl Fn(&M) -> (&X::Op, Hints),
    out: &mut Vec<MemberResult<X>>,
    committed: &Cell<bool>,
) -> GroupReport
where
    X: GroupExecutor,
{
    let n = members.len();
    let mut report = GroupReport::default();
    let mut group = match catch_unwind(AssertUnwindSafe(|| exec.begin(key))) {
        Ok(Ok(g)) => g,
        Ok(Err(e)) => {
            let source = Arc::new(e);
            return fail_rest::<X>(out, n, report, |_| Error::Load {
                source: Arc::clone(&source),
                group_size: n,
            });
        }
        Err(_) => return fail_rest::<X>(out, n, report, |_| panicked(Phase::Begin, n)),
    };
    let mut accepted = 0usize;
    for (position, m) in members.iter().enumerate() {
        let (op, hints) = op_of(m);
        let applied = match catch_unwind(AssertUnwindSafe(|| exec.apply(&group, op))) {
            Ok(Ok(a)) => a,
            Ok(Err(reason)) => {
                report.failed += 1;
                let rollback = hints.is_rollback_on_fail();
                out.push(Err(Error::Rejected {
                    reason,
                    position,
                    group_size: n,
                    rollback,
                }));
                continue;
            }
            Err(_) => return fail_rest::<X>(out, n, report, |_| panicked(Phase::Apply, n)),
        };
        if let Some(expected) = hints.target()
            && expected != applied.affected_rows
        {
            report.failed += 1;
            out.push(Err(Error::TargetAffectRow {
                expected,
                actual: applied.affected_rows,
                rollback: hints.is_rollback_on_fail(),
            }));
            continue;
        }
        let Applied {
            change,
            output,
            affected_rows,
        } = applied;
        if catch_unwind(AssertUnwindSafe(|| exec.accept(&mut group, change))).is_err() {
            return fail_rest::<X>(out, n, report, |_| panicked(Phase::Accept, n));
        }
        accepted += 1;
        if affected_rows == 0 {
            report.ignored += 1;
        }
        out.push(Ok(output));
    }
    if accepted == 0 {
        // Every member failed alone: nothing to make durable.
        return report;
    }
    match catch_unwind(AssertUnwindSafe(|| exec.commit(key, group))) {
        Ok(Ok(())) => {
            committed.set(true);
            report
        }
        Ok(Err(e)) => {
            let source = Arc::new(e);
            fail_rest::<X>(out, n, report, |_| Error::Durable {
                source: Arc::clone(&source),
                group_size: n,
            })
        }
        Err(_) => fail_rest::<X>(out, n, report, |_| panicked(Phase::Commit, n)),
    }
}

fn panicked<R, E>(phase: Phase, group_size: usize) -> Error<R, E>
where
    R: std::fmt::Display + std::fmt::Debug,
    E: std::error::Error + 'static,
{
    tracing::error!(%phase, group_size, "hotspot: group executor panicked; failing the group");
    Error::ExecutorPanicked { phase, group_size }
}

/// Turns every kept result into the group error and fills the members not yet reached with it.
/// Members that already failed alone keep their own error.
fn fail_rest<X: GroupExecutor>(
    out: &mut Vec<MemberResult<X>>,
    n: usize,
    mut report: GroupReport,
    err: impl Fn(usize) -> Error<X::Reject, X::Error>,
) -> GroupReport {
    report.group_failed = true;
    report.ignored = 0;
    for (i, r) in out.iter_mut().enumerate() {
        if r.is_ok() {
            let kept = std::mem::replace(r, Err(err(i)));
            // The output is the executor's value; its drop must not stop the others' results.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(kept)));
            report.failed += 1;
        }
    }
    for i in out.len()..n {
        out.push(Err(err(i)));
        report.failed += 1;
    }
    report
}
