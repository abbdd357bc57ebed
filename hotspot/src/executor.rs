//! The trait a user implements to say what a group applies and how it is made durable.

use std::sync::Arc;

/// What one member's operation did to the group's current row image.
///
/// Returned by [`GroupExecutor::apply`]. The coordinator keeps `change` only if the member's hints
/// accept the outcome (for example `target_affect_row`), then hands it to
/// [`GroupExecutor::accept`]; otherwise it is dropped and the group's image is untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied<C, O> {
    /// The change to fold into the group's row image if the member is kept.
    pub change: C,
    /// What the member gets back once the group is durable (for example its post-update value,
    /// what AliSQL's `SELECT ... FROM UPDATE` returns).
    pub output: O,
    /// Rows the operation affected; checked against `target_affect_row(n)`. Zero counts as an
    /// "ignored" member in the statistics.
    pub affected_rows: u64,
}

impl<C, O> Applied<C, O> {
    /// An outcome that affected exactly one row.
    pub fn one_row(change: C, output: O) -> Self {
        Self {
            change,
            output,
            affected_rows: 1,
        }
    }
}

/// Applies a group's operations to one key's current row and makes the group durable once.
///
/// The coordinator drives a group as `begin` → (`apply` → `accept`?) per member in arrival order
/// → `commit`. It knows nothing about storage: the executor owns the row, the log and the flush.
///
/// # Contract (what the coordinator guarantees)
/// - For one key, calls never overlap: one group's `begin`..`commit` finishes before the next
///   group's `begin` starts (the other group slot is only collecting meanwhile). Different keys
///   may run concurrently on different threads.
/// - `apply` sees the image with every earlier *kept* member of the same group folded in, so each
///   member sees its predecessor's result, exactly as a serial execution in arrival order would.
/// - A member whose `apply` returns `Err`, or whose outcome misses its `target_affect_row`, fails
///   alone: its change is never passed to `accept`, and the rest of the group goes on.
/// - `commit` is called once per group, only if at least one change was accepted. If it returns
///   `Err`, every member whose change was in the group gets
///   [`Error::Durable`](crate::Error::Durable) and none is reported committed. The executor must
///   then not expose the group's changes to later groups (stage them in `Group` and publish only
///   when the durable step succeeded, as the example does).
/// - A panic in any method is caught: the whole group fails with
///   [`Error::ExecutorPanicked`](crate::Error::ExecutorPanicked) and waiting members are woken.
pub trait GroupExecutor: Send + Sync {
    /// The key that groups requests (a primary key, a row id).
    type Key: std::hash::Hash + Eq + Clone + Send + Sync;
    /// One member's operation, for example "add -1 if the result stays >= 0".
    type Op: Send;
    /// What a successful member gets back.
    type Output: Send;
    /// The change `apply` computes and `accept` folds into the group.
    type Change;
    /// Why one member's operation was refused (a bound check); fails that member alone.
    type Reject: std::fmt::Display + std::fmt::Debug + Send;
    /// Why a whole group failed: loading the row or making it durable.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The group being built: the key's current row image plus whatever will be written.
    type Group;

    /// Starts a group on `key`: loads the current row image (the one B-tree descent of a group).
    ///
    /// # Errors
    /// Any error fails every member of the group with [`Error::Load`](crate::Error::Load).
    fn begin(&self, key: &Self::Key) -> Result<Self::Group, Self::Error>;

    /// Computes one member's operation against the group's current image, without changing it.
    ///
    /// # Errors
    /// A `Reject` fails this member alone.
    fn apply(
        &self,
        group: &Self::Group,
        op: &Self::Op,
    ) -> Result<Applied<Self::Change, Self::Output>, Self::Reject>;

    /// Folds a kept member's change into the group (the next member's `apply` sees it).
    fn accept(&self, group: &mut Self::Group, change: Self::Change);

    /// Makes the group durable with one write and one flush, then publishes it.
    ///
    /// # Errors
    /// Any error fails every member whose change was in the group with
    /// [`Error::Durable`](crate::Error::Durable).
    fn commit(&self, key: &Self::Key, group: Self::Group) -> Result<(), Self::Error>;
}

/// An `Arc<X>` executes like `X`, so one executor can be shared with other code.
impl<X: GroupExecutor> GroupExecutor for Arc<X> {
    type Key = X::Key;
    type Op = X::Op;
    type Output = X::Output;
    type Change = X::Change;
    type Reject = X::Reject;
    type Error = X::Error;
    type Group = X::Group;

    fn begin(&self, key: &Self::Key) -> Result<Self::Group, Self::Error> {
        (**self).begin(key)
    }

    fn apply(
        &self,
        group: &Self::Group,
        op: &Self::Op,
    ) -> Result<Applied<Self::Change, Self::Output>, Self::Reject> {
        (**self).apply(group, op)
    }

    fn accept(&self, group: &mut Self::Group, change: Self::Change) {
        (**self).accept(group, change)
    }

    fn commit(&self, key: &Self::Key, group: Self::Group) -> Result<(), Self::Error> {
        (**self).commit(key, group)
    }
}
