# `make check` is exactly the gate that `.ci/run` runs. Keep them in sync.
# Needs make, rustfmt and clippy; the MariaDB compatibility tests also want mariadb-client and
# mariadb-server (they skip, saying so, when those are missing; .ci/run installs them).
# With only Rust installed, `cargo test --workspace` runs the tests (see README.md).
.PHONY: check fmt clippy test doc package demo

check: fmt clippy test doc

# testkit/ (test support for the crates' tests) is a workspace of its own, so that the
# workspace holds exactly the crates a user depends on; each step covers it too, building into
# the same target directory.
TESTKIT = --manifest-path testkit/Cargo.toml --target-dir $${CARGO_TARGET_DIR:-target}

fmt:
	cargo fmt --all -- --check
	cargo fmt --manifest-path testkit/Cargo.toml -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy $(TESTKIT) --all-targets -- -D warnings

test:
	cargo test --workspace
	cargo test $(TESTKIT)

doc:
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
	RUSTDOCFLAGS="-D warnings" cargo doc $(TESTKIT) --no-deps

package:
	cargo package --workspace --no-verify

demo:
	cargo run --release -p surgedb -- demo
