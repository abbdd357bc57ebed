# `make check` is exactly the gate that `.ci/run` runs. Keep them in sync.
# Needs make, rustfmt and clippy; the MariaDB compatibility tests also want mariadb-client and
# mariadb-server (they skip, saying so, when those are missing; .ci/run installs them).
# With only Rust installed, `cargo test --workspace` runs the tests (see README.md).
.PHONY: check fmt clippy test doc package demo

check: fmt clippy test doc

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings

test:
	cargo test --workspace

doc:
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

package:
	cargo package --workspace --no-verify

demo:
	cargo run --release -p surgedb -- demo
