# Sourced by the write_only_*.sh scripts (not run alone): starts a fresh 3-node cluster in
# $D with every argument given as --node-arg, stops it when the script exits, creates the
# sbtest schema and prepares sysbench oltp_write_only's 4 tables of 10,000 rows on node 1.
# Needs $B (the surgedb executable) and $D; sets $P (node 1's MySQL port) and the array SB
# (the sysbench command up to its verb).
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
