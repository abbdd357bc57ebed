#!/bin/bash
# sysbench oltp_write_only at 32 threads on 4 tables of 10,000 rows, five back-to-back 20 s
# runs on one fresh 3-node cluster: the TPS of each run, then the regions holding the
# tables. Arguments after the cluster directory go to every node (--node-arg), e.g.
# --no-stream or --split-size-mib=0, to compare how throughput holds as the cluster ages.
# CLUSTER_DIR must not hold a cluster yet (default: a new temporary directory, left in place
# for a look at the nodes' logs; remove it after). Needs a release build (cargo build
# --release -p surgedb), the mariadb client, sysbench and python3.
# Usage: [LEADERS_ON=N] integration/scripts/write_only_over_time.sh [CLUSTER_DIR [NODE_ARG...]]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${SURGEDB:-$ROOT/target/release/surgedb}
D=${1:-$(mktemp -d)/wo-cluster}
shift || true
echo "cluster in $D"
# shellcheck source=write_only_cluster.sh
. "$(dirname "$0")/write_only_cluster.sh"
# LEADERS_ON=N hands every data region's leadership to node N first (sysbench talks to
# node 1: LEADERS_ON=1 keeps every request local), so runs compare like with like.
if [ -n "${LEADERS_ON:-}" ]; then
  "$B" cluster move-leaders --data "$D" --to "$LEADERS_ON" >/dev/null
fi
# The nodes' one-phase commits, summed (each node counts those of the regions it leads).
one_pc() {
  "$B" cluster status --data "$D" | sed -n 's/.*one-phase commits \([0-9]*\).*/\1/p' |
    awk '{s += $1} END {print s + 0}'
}
for run in 1 2 3 4 5; do
  before=$(one_pc)
  out=$("${SB[@]}" --threads=32 --time=20 run)
  tps=$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' <<<"$out")
  txns=$(sed -n 's/.*transactions: *\([0-9]*\) *(.*/\1/p' <<<"$out")
  echo "run $run: ${tps:-?} tps, ${txns:-?} transactions, $(($(one_pc) - before)) one-phase commits"
  [ -n "$tps" ] || echo "  (no transactions line in sysbench's output)" >&2
done
for t in 1 2 3 4; do
  mariadb -h127.0.0.1 -P"$P" -uroot -N -e "SHOW TABLE sbtest.sbtest$t REGIONS" | awk -v t="$t" '{print "sbtest" t ": region " $1}'
done
