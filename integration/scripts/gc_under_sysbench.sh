#!/bin/bash
# MVCC garbage collection under load: a 3-node cluster with GC on (life time 10 s, a round
# every 10 s, margin 5 s), sysbench oltp_update_non_index on 1 table of 1,000 rows at 16
# threads for 40 s, then what each GC round removed (from the nodes' logs) and the engine's
# size. GC_LIFE=0 runs the same with GC off, for comparison. Needs a release build (cargo
# build --release -p surgedb), the mariadb client and sysbench.
# Usage: [GC_LIFE=10] integration/scripts/gc_under_sysbench.sh [CLUSTER_DIR]
set -euo pipefail
B=${SURGEDB:-target/release/surgedb}
D=${1:-$(mktemp -d)/gc-cluster}
trap '"$B" cluster stop --data "$D" >/dev/null 2>&1 || true' EXIT
"$B" cluster start --nodes 3 --data "$D" --node-arg=--gc-life-time-secs="${GC_LIFE:-10}" \
  --node-arg=--gc-interval-secs=10 --node-arg=--gc-margin-secs=5 >/dev/null
P=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['nodes'][0]['mysql_addr'].split(':')[1])" "$D/cluster.json")
mariadb -h127.0.0.1 -P"$P" -uroot -e "create database if not exists sbtest"
SB=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$P" --mysql-user=root
  --mysql-db=sbtest --tables=1 --table-size=1000)
"${SB[@]}" oltp_update_non_index prepare >/dev/null
"${SB[@]}" --threads=16 --time=40 oltp_update_non_index run | grep -E "transactions:"
# The rounds after the load collect what the last seconds of it left.
sleep 25
grep -h "gc below\|gc failed" "$D"/node-*.log || echo "no GC round (GC_LIFE=${GC_LIFE:-10})"
du -sh "$D"/node-1/engine
