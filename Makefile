# `make check` is exactly the gate that `.ci/run` runs. Keep them in sync.
# Needs make, rustfmt and clippy; the MariaDB compatibility tests also want mariadb-client and
# mariadb-server (they skip, saying so, when those are missing; .ci/run installs them).
# With only Rust installed, `cargo test --workspace` runs the tests (see README.md).
.PHONY: check fmt clippy test doc semver package demo

check: fmt clippy test doc semver

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

# API compatibility (each crate's README, "Stability"): cargo-semver-checks compares the public
# API of every published crate (`publish = false` ones are skipped) with the last tagged
# release, so a 0.x.y release cannot break callers by accident. Until a release is tagged there
# is nothing to compare with, and the step says so. `cargo install --locked cargo-semver-checks`
# provides it (.ci/run installs it once a tag exists).
semver:
	@tag=$$(git describe --tags --abbrev=0 2>/dev/null); \
	if [ -z "$$tag" ]; then \
		echo "semver: skipped: no release tag to compare with (git describe --tags finds none; a shallow clone may need git fetch --tags)"; \
	else \
		echo "semver: cargo semver-checks against $$tag"; \
		cargo semver-checks --workspace --baseline-rev "$$tag"; \
	fi

package:
	cargo package --workspace --no-verify

demo:
	cargo run --release -p surgedb -- demo
