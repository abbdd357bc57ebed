//! [`TableDef`], [`ColumnDef`] and [`IndexDef`]: a table's schema as the catalog stores it.

use serde::{Deserialize, Serialize};

use crate::sql::column::ColumnMeta;
use crate::sql::types::SqlType;
use crate::sql::value::Value;

/// One column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Its id in row values (never reused within the table).
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: SqlType,
    /// NULL allowed.
    pub nullable: bool,
    /// The DEFAULT literal's text (`None`: no default, or DEFAULT NULL when nullable).
    pub default: Option<String>,
    /// AUTO_INCREMENT.
    pub auto_increment: bool,
}

/// One index (the primary key of a table without an integer one is a unique index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Its id within the table (1, 2, ...).
    pub id: i64,
    /// Its name (`PRIMARY` for the primary key).
    pub name: String,
    /// Its columns, as positions in [`TableDef::columns`].
    pub columns: Vec<usize>,
    /// UNIQUE (or PRIMARY).
    pub unique: bool,
    /// The primary key.
    pub primary: bool,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    /// Its id: the prefix of its keys.
    pub id: i64,
    /// Its database.
    pub db: String,
    /// Its name.
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDef>,
    /// The integer primary key column that is the row handle; `None`: a hidden row id.
    pub handle_column: Option<usize>,
    /// Its indexes (a non-integer primary key included).
    pub indexes: Vec<IndexDef>,
    /// The next index id to give.
    pub next_index_id: i64,
}

impl crate::sql::codec::RowShape for TableDef {
    fn table_name(&self) -> &str {
        &self.name
    }
    fn column_count(&self) -> usize {
        self.columns.len()
    }
    fn column_id(&self, pos: usize) -> u32 {
        self.columns[pos].id
    }
    fn column_name(&self, pos: usize) -> &str {
        &self.columns[pos].name
    }
    fn is_date(&self, pos: usize) -> bool {
        self.columns[pos].ty == SqlType::Date
    }
}

impl TableDef {
    /// The position of column `name` (case-insensitive, as MySQL's column names).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The AUTO_INCREMENT column's position.
    pub fn auto_increment(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }

    /// Column ids in column order (for the row codec).
    pub fn column_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.columns.iter().map(|c| c.id)
    }

    /// Whether column `pos` is part of the primary key.
    pub fn is_primary(&self, pos: usize) -> bool {
        self.handle_column == Some(pos)
            || self
                .indexes
                .iter()
                .any(|i| i.primary && i.columns.contains(&pos))
    }

    /// The protocol's description of column `pos`.
    pub fn meta(&self, pos: usize, alias: Option<&str>) -> ColumnMeta {
        let c = &self.columns[pos];
        let (kind, length, decimals) = c.ty.kind();
        let unsigned = matches!(c.ty, SqlType::Int { unsigned: true, .. });
        ColumnMeta {
            schema: self.db.clone(),
            table: alias.unwrap_or(&self.name).to_owned(),
            name: c.name.clone(),
            org_name: c.name.clone(),
            kind,
            length,
            decimals,
            unsigned,
            not_null: !c.nullable,
            primary_key: self.is_primary(pos),
            auto_increment: c.auto_increment,
            binary: !c.ty.is_text(),
        }
    }

    /// The index values of `index` in `row`.
    pub fn index_values(&self, index: &IndexDef, row: &[Value]) -> Vec<Value> {
        index.columns.iter().map(|&c| row[c].clone()).collect()
    }

    /// SHOW CREATE TABLE's text.
    pub fn create_sql(&self) -> String {
        let mut lines = Vec::new();
        for c in &self.columns {
            let mut l = format!("  `{}` {}", c.name, c.ty.sql_name());
            if !c.nullable {
                l.push_str(" NOT NULL");
            }
            if c.auto_increment {
                l.push_str(" AUTO_INCREMENT");
            } else if let Some(d) = &c.default {
                l.push_str(&format!(" DEFAULT '{}'", d.replace('\'', "''")));
            } else if c.nullable {
                l.push_str(" DEFAULT NULL");
            }
            lines.push(l);
        }
        let cols = |ix: &[usize]| {
            ix.iter()
                .map(|&c| format!("`{}`", self.columns[c].name))
                .collect::<Vec<_>>()
                .join(",")
        };
        if let Some(h) = self.handle_column {
            lines.push(format!("  PRIMARY KEY ({})", cols(&[h])));
        }
        for i in &self.indexes {
            lines.push(if i.primary {
                format!("  PRIMARY KEY ({})", cols(&i.columns))
            } else if i.unique {
                format!("  UNIQUE KEY `{}` ({})", i.name, cols(&i.columns))
            } else {
                format!("  KEY `{}` ({})", i.name, cols(&i.columns))
            });
        }
        format!(
            "CREATE TABLE `{}` (\n{}\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            self.name,
            lines.join(",\n")
        )
    }
}
