//! [`CatalogTxn`]: reading and writing catalog records inside a transaction.
//!
//! Keys: `mVersion` (the schema version, bumped by every DDL), `mNextTableId`, `mDB:{db}`,
//! `mTable:{db}\0{table}` (a JSON [`TableDef`]), `mAutoInc:{table id}` (the next id no node
//! has taken yet).

use surge_txn::Transaction;

use super::def::TableDef;
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;

pub(crate) const VERSION_KEY: &[u8] = b"mVersion";
const NEXT_TABLE_KEY: &[u8] = b"mNextTableId";
pub(crate) const DB_PREFIX: &[u8] = b"mDB:";
pub(crate) const TABLE_PREFIX: &[u8] = b"mTable:";

/// The catalog key of database `db`.
pub(crate) fn db_key(db: &str) -> Vec<u8> {
    [DB_PREFIX, db.as_bytes()].concat()
}

/// The catalog key of table `db`.`name`.
pub(crate) fn table_key(db: &str, name: &str) -> Vec<u8> {
    [TABLE_PREFIX, db.as_bytes(), b"\0", name.as_bytes()].concat()
}

/// The auto-increment counter's key of table `id`.
pub(crate) fn autoinc_key(id: i64) -> Vec<u8> {
    format!("mAutoInc:{id}").into_bytes()
}

/// A number stored as decimal text.
pub(crate) fn parse_counter(key: &[u8], v: Option<Vec<u8>>) -> Result<i64, SqlError> {
    match v {
        None => Ok(0),
        Some(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                SqlError::internal(format!(
                    "catalog record {} is damaged: not a number",
                    String::from_utf8_lossy(key)
                ))
            }),
    }
}

/// Catalog reads and writes in one DDL transaction. The first call locks the version key,
/// so DDL statements run one at a time across the cluster.
#[derive(Debug)]
pub(crate) struct CatalogTxn {
    /// The transaction (pessimistic).
    pub(crate) txn: Transaction,
    version: i64,
}

impl CatalogTxn {
    /// Starts a DDL on `txn`: locks and reads the schema version.
    ///
    /// # Errors
    /// A lock or read failure.
    pub(crate) fn begin(mut txn: Transaction) -> Result<CatalogTxn, SqlError> {
        let v = txn.get_for_update(VERSION_KEY).map_err(|e| from_txn(&e))?;
        let version = parse_counter(VERSION_KEY, v)?;
        Ok(CatalogTxn { txn, version })
    }

    /// Whether database `db` exists.
    ///
    /// # Errors
    /// A read failure.
    pub(crate) fn db_exists(&mut self, db: &str) -> Result<bool, SqlError> {
        Ok(self
            .txn
            .get_for_update(&db_key(db))
            .map_err(|e| from_txn(&e))?
            .is_some())
    }

    /// Table `db`.`name`, if it exists.
    ///
    /// # Errors
    /// A read failure or a damaged record.
    pub(crate) fn table(&mut self, db: &str, name: &str) -> Result<Option<TableDef>, SqlError> {
        let key = table_key(db, name);
        match self.txn.get_for_update(&key).map_err(|e| from_txn(&e))? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
                SqlError::internal(format!(
                    "catalog record of table {db}.{name} is damaged: {e}"
                ))
            }),
        }
    }

    /// Every table of `db`.
    ///
    /// # Errors
    /// A read failure or a damaged record.
    pub(crate) fn tables_of(&mut self, db: &str) -> Result<Vec<TableDef>, SqlError> {
        let start = [TABLE_PREFIX, db.as_bytes(), b"\0"].concat();
        let end = [TABLE_PREFIX, db.as_bytes(), b"\x01"].concat();
        let pairs = self
            .txn
            .scan(&start, Some(&end), usize::MAX)
            .map_err(|e| from_txn(&e))?;
        pairs
            .into_iter()
            .map(|(k, v)| {
                serde_json::from_slice(&v).map_err(|e| {
                    SqlError::internal(format!(
                        "catalog record {} is damaged: {e}",
                        String::from_utf8_lossy(&k)
                    ))
                })
            })
            .collect()
    }

    /// Creates database `db`.
    ///
    /// # Errors
    /// A write failure.
    pub(crate) fn put_db(&mut self, db: &str) -> Result<(), SqlError> {
        self.txn.put(&db_key(db), b"{}").map_err(|e| from_txn(&e))
    }

    /// Drops database `db`'s record.
    ///
    /// # Errors
    /// A write failure.
    pub(crate) fn delete_db(&mut self, db: &str) -> Result<(), SqlError> {
        self.txn.delete(&db_key(db)).map_err(|e| from_txn(&e))
    }

    /// Writes `table`'s definition.
    ///
    /// # Errors
    /// A write failure.
    pub(crate) fn put_table(&mut self, table: &TableDef) -> Result<(), SqlError> {
        let json = serde_json::to_vec(table)
            .map_err(|e| SqlError::internal(format!("encoding table {}: {e}", table.name)))?;
        self.txn
            .put(&table_key(&table.db, &table.name), &json)
            .map_err(|e| from_txn(&e))
    }

    /// Sets table `table`'s auto-increment counter: the next id it hands out is `next`.
    ///
    /// # Errors
    /// A write failure.
    pub(crate) fn put_autoinc(&mut self, table: i64, next: i64) -> Result<(), SqlError> {
        self.txn
            .put(&autoinc_key(table), next.to_string().as_bytes())
            .map_err(|e| from_txn(&e))
    }

    /// Deletes `table`'s definition and auto-increment counter.
    ///
    /// # Errors
    /// A write failure.
    pub(crate) fn delete_table(&mut self, table: &TableDef) -> Result<(), SqlError> {
        self.txn
            .delete(&table_key(&table.db, &table.name))
            .map_err(|e| from_txn(&e))?;
        self.txn
            .delete(&autoinc_key(table.id))
            .map_err(|e| from_txn(&e))
    }

    /// A new table id.
    ///
    /// # Errors
    /// A read or write failure.
    pub(crate) fn next_table_id(&mut self) -> Result<i64, SqlError> {
        let v = self
            .txn
            .get_for_update(NEXT_TABLE_KEY)
            .map_err(|e| from_txn(&e))?;
        // Ids start at 100: low ids stay free for system tables.
        let id = parse_counter(NEXT_TABLE_KEY, v)?.max(100);
        self.txn
            .put(NEXT_TABLE_KEY, (id + 1).to_string().as_bytes())
            .map_err(|e| from_txn(&e))?;
        Ok(id)
    }

    /// Bumps the schema version and commits.
    ///
    /// # Errors
    /// A write or commit failure.
    pub(crate) fn commit(mut self) -> Result<(), SqlError> {
        self.txn
            .put(VERSION_KEY, (self.version + 1).to_string().as_bytes())
            .map_err(|e| from_txn(&e))?;
        self.txn.commit().map(|_| ()).map_err(|e| from_txn(&e))
    }
}
