#!/bin/bash
# sysbench oltp_write_only at 32 threads on 4 tables of 10,000 rows, one 20 s run on a fresh
# 3-node cluster whose leaders are all on node 1 (the node sysbench talks to), then the
# three node processes' CPU time per committed transaction: in all (the processes' own
# counters, which keep the time of threads that ended, such as SQL sessions) and by thread
# name, summed over the three nodes (threads alive at both ends of the run; digits and
# separators at the end of a name are dropped, so `stream-follower` is every node's
# follower, and `kv-conn` every node's server threads). On a CPU-bound machine this says
# which part of the nodes a variant makes cheaper or dearer; the per-thread parts are
# steadier than the TPS (the totals still move with the machine).
# Arguments after the cluster directory go to every node (--node-arg), e.g. --no-stream or
# --stream-round-ms=50. CLUSTER_DIR must not hold a cluster yet. Needs a release build
# (cargo build --release -p surgedb), the mariadb client, sysbench, python3 and /proc.
# Usage: integration/scripts/write_only_cpu_by_thread.sh CLUSTER_DIR [NODE_ARG...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${SURGEDB:-$ROOT/target/release/surgedb}
D=${1:?usage: $0 CLUSTER_DIR [NODE_ARG...]}
shift
# shellcheck source=write_only_cluster.sh
. "$(dirname "$0")/write_only_cluster.sh"
"$B" cluster move-leaders --data "$D" --to 1 >/dev/null
PIDS=$(python3 -c "import json,sys;print(' '.join(str(n['pid']) for n in json.load(open(sys.argv[1]))['nodes']))" "$D/cluster.json")
# One line per process (PROCESS pid ticks) and per live thread (THREAD pid tid name ticks),
# ticks being utime + stime. A thread that ends while it is read is left out.
snap() {
  for p in $PIDS; do
    stat=$(cat "/proc/$p/stat")
    echo "PROCESS $p $(awk '{print $12 + $13}' <<<"${stat##*) }")"
    for t in /proc/"$p"/task/*; do
      name=$(cat "$t/comm" 2>/dev/null) || continue
      stat=$(cat "$t/stat" 2>/dev/null) || continue
      # Fields after the name, which ends with ") ": the state is field 3, so utime and
      # stime (14 and 15) are the 12th and 13th here.
      echo "THREAD $p ${t##*/} $(sed 's/[-:]*[0-9]*$//; s/ /_/g' <<<"$name") $(awk '{print $12 + $13}' <<<"${stat##*) }")"
    done
  done
}
snap >"$D/cpu-before"
out=$("${SB[@]}" --threads=32 --time=20 run)
snap >"$D/cpu-after"
tps=$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' <<<"$out")
txns=$(sed -n 's/.*transactions: *\([0-9]*\) *(.*/\1/p' <<<"$out")
echo "${tps:-?} tps, ${txns:-?} transactions"
python3 - "$D/cpu-before" "$D/cpu-after" "${txns:-0}" "$(getconf CLK_TCK)" <<'PY'
import collections, sys
def read(path):
    procs, threads = {}, {}
    for line in open(path):
        f = line.split()
        if f[0] == "PROCESS" and len(f) == 3:
            procs[f[1]] = int(f[2])
        elif f[0] == "THREAD" and len(f) == 5:
            threads[(f[1], f[2])] = (f[3], int(f[4]))
    return procs, threads
(p0, t0), (p1, t1) = read(sys.argv[1]), read(sys.argv[2])
txns, hz = int(sys.argv[3]), int(sys.argv[4])
if txns == 0:
    sys.exit("no transactions: nothing to divide by")
us = lambda ticks: ticks * 1e6 / hz / txns
print(f"  {'all (processes)':24s} {us(sum(p1[p] - p0.get(p, 0) for p in p1)):7.0f} us/txn")
# Threads alive at both snapshots, by name over the three nodes.
names = collections.Counter()
for key, (name, ticks) in t1.items():
    if key in t0:
        names[name] += ticks - t0[key][1]
for name, ticks in names.most_common(8):
    print(f"  {name:24s} {us(ticks):7.0f} us/txn")
PY
