//! Percolator actions (being written).
