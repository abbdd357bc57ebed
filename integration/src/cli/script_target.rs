//! [`ScriptTarget`] and [`ScriptTxn`]: what `surgedb txn FILE` runs its transactions on: a
//! node's coordinator over TCP ([`crate::Client`], what the command uses) or a coordinator
//! in this process ([`TxnClient`], for tests without processes).

use surge_txn::{Transaction, TxnClient, TxnMode};

use crate::{Client, ClientError, RemoteTxn};

/// Begins the transactions of a script.
pub trait ScriptTarget {
    /// Begins a transaction.
    ///
    /// # Errors
    /// The coordinator's error.
    fn begin_txn(&self, mode: TxnMode) -> Result<Box<dyn ScriptTxn>, ClientError>;
}

/// The operations a script runs on a transaction.
pub trait ScriptTxn {
    /// The transaction's snapshot timestamp.
    fn start_ts(&self) -> u64;
    /// `get`.
    ///
    /// # Errors
    /// The transaction's error.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError>;
    /// `get_for_update`.
    ///
    /// # Errors
    /// The transaction's error.
    fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError>;
    /// `put`.
    ///
    /// # Errors
    /// The transaction's error.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), ClientError>;
    /// `delete`.
    ///
    /// # Errors
    /// The transaction's error.
    fn delete(&mut self, key: &[u8]) -> Result<(), ClientError>;
    /// `commit`: the commit timestamp. Takes the transaction, whatever the outcome.
    ///
    /// # Errors
    /// The transaction's error.
    fn commit(self: Box<Self>) -> Result<u64, ClientError>;
    /// `rollback`. Takes the transaction.
    ///
    /// # Errors
    /// The transaction's error (a remote one's lost connection).
    fn rollback(self: Box<Self>) -> Result<(), ClientError>;
}

impl ScriptTarget for Client {
    fn begin_txn(&self, mode: TxnMode) -> Result<Box<dyn ScriptTxn>, ClientError> {
        Ok(Box::new(self.begin(mode)?))
    }
}

impl ScriptTarget for TxnClient {
    fn begin_txn(&self, mode: TxnMode) -> Result<Box<dyn ScriptTxn>, ClientError> {
        Ok(Box::new(self.begin(mode)?))
    }
}

impl ScriptTxn for RemoteTxn {
    fn start_ts(&self) -> u64 {
        RemoteTxn::start_ts(self)
    }
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        RemoteTxn::get(self, key)
    }
    fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        RemoteTxn::get_for_update(self, key)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), ClientError> {
        RemoteTxn::put(self, key, value)
    }
    fn delete(&mut self, key: &[u8]) -> Result<(), ClientError> {
        RemoteTxn::delete(self, key)
    }
    fn commit(self: Box<Self>) -> Result<u64, ClientError> {
        RemoteTxn::commit(*self)
    }
    fn rollback(self: Box<Self>) -> Result<(), ClientError> {
        RemoteTxn::rollback(*self)
    }
}

impl ScriptTxn for Transaction {
    fn start_ts(&self) -> u64 {
        Transaction::start_ts(self)
    }
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        Ok(Transaction::get(self, key)?)
    }
    fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        Ok(Transaction::get_for_update(self, key)?)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), ClientError> {
        Ok(Transaction::put(self, key, value)?)
    }
    fn delete(&mut self, key: &[u8]) -> Result<(), ClientError> {
        Ok(Transaction::delete(self, key)?)
    }
    fn commit(self: Box<Self>) -> Result<u64, ClientError> {
        Ok(Transaction::commit(*self)?)
    }
    fn rollback(self: Box<Self>) -> Result<(), ClientError> {
        Transaction::rollback(*self);
        Ok(())
    }
}
