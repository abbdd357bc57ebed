#!/bin/bash
# sysbench oltp_write_only at 32 threads on 4 tables of 10,000 rows, one 20 s run on a fresh
# 3-node cluster whose leaders are all on node 1 (the node sysbench talks to), then the
# three node processes' CPU time per committed transaction: in all (the processes' own
# counters, which keep the time of threads that ended, such as SQL sessions) and by thread
# name (threads alive at the end of the run; digits and separators at the end of a name are
# dropped, so `stream-follower` is every node's follower). On a CPU-bound machine this says
# which part of the nodes a variant makes cheaper or dearer, with far less noise than the TPS.
# Arguments after the cluster directory go to every node (--node-arg), e.g. --no-stream or
# --stream-round-ms=50. CLUSTER_DIR must not hold a cluster yet. Needs a release build
# (cargo build --release -p surgedb), the mariadb client, sysbench, python3 and /proc.
# Usage: integration/scripts/write_only_cpu_by_thread.sh CLUSTER_DIR [NODE_ARG...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${SURGEDB:-$ROOT/target/release/surgedb}
D=${1:?usage: $0 CLUSTER_DIR [NODE_ARG...]}
shift
if [ -e "$D/cluster.json" ]; then
  echo "$D already holds a cluster: give a new directory" >&2
  exit 2
fi
trap '"$B" cluster stop --data "$D" >/dev/null 2>&1 || true' EXIT
ARGS=()
for a in "$@"; do ARGS+=("--node-arg=$a"); done
"$B" cluster start --nodes 3 --data "$D" ${ARGS[@]+"${ARGS[@]}"} >/dev/null
P=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['nodes'][0]['mysql_addr'].split(':')[1])" "$D/cluster.json")
mariadb -h127.0.0.1 -P"$P" -uroot -e "create database if not exists sbtest"
SB=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$P"
  --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=10000)
"${SB[@]}" prepare >/dev/null
"$B" cluster move-leaders --data "$D" --to 1 >/dev/null
PIDS=$(python3 -c "import json,sys;print(' '.join(str(n['pid']) for n in json.load(open(sys.argv[1]))['nodes']))" "$D/cluster.json")
# One line per process ("PROCESS") and per live thread: name, then utime + stime in ticks.
snap() {
  for p in $PIDS; do
    echo "PROCESS $(awk '{print $14 + $15}' "/proc/$p/stat")"
    for t in /proc/"$p"/task/*; do
      echo "$(sed 's/[-:]*[0-9]*$//' "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
    done 2>/dev/null
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
    d = collections.Counter()
    for line in open(path):
        name, ticks = line.rsplit(" ", 1)
        d[name] += int(ticks)
    return d
before, after = read(sys.argv[1]), read(sys.argv[2])
txns, hz = int(sys.argv[3]), int(sys.argv[4])
if txns == 0:
    sys.exit("no transactions: nothing to divide by")
us = lambda k: (after[k] - before.get(k, 0)) * 1e6 / hz / txns
print(f"  {'all (processes)':24s} {us('PROCESS'):7.0f} us/txn")
rows = sorted(((us(k), k) for k in after if k != "PROCESS"), reverse=True)
for v, k in rows[:8]:
    print(f"  {k:24s} {v:7.0f} us/txn")
PY
