#!/usr/bin/env bash
# A Citus coordinator and two workers as three local clusters, on the
# ports of Citus' own regression setup (57636-57638) of localhost (Citus
# copies reference tables to a new node through a localhost connection).
# source test/citus/nodes.sh; nodes_start; ...; nodes_stop
# The coordinator and the first worker form the cluster; the second is
# started but not added (a test adds it: citus_add_node).  Exports PGHOST,
# PGPORT (the coordinator's), PGUSER; node_psql PORT ... runs psql on one
# node.  SILVAN_PG_BIN names the server's bin directory;
# SILVAN_CITUS_PRELOAD (default "citus") is shared_preload_libraries.
PG_BIN=${SILVAN_PG_BIN:-/usr/lib/postgresql/15/bin}
CITUS_PORTS=(57636 57637 57638)

# Run a command as the postgres OS user when root (the server refuses root)
as_postgres() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# psql on the node at port $1
node_psql() {
	local port=$1
	shift
	psql -XAtq -h localhost -p "$port" -U postgres -d postgres "$@"
}

# Start one node: initdb, Citus preloaded, listening on the socket directory only
node_start() {
	local port=$1 data=$NODES_DIR/$1
	as_postgres "$PG_BIN/initdb" -D "$data" -A trust -U postgres --no-sync >"$NODES_DIR/initdb.$port.log" 2>&1 ||
		{ cat "$NODES_DIR/initdb.$port.log"; return 1; }
	as_postgres "$PG_BIN/pg_ctl" -D "$data" -l "$NODES_DIR/server.$port.log" -w \
		-o "-k $NODES_DIR -p $port -c listen_addresses=localhost -c fsync=off -c max_prepared_transactions=100 \
		    -c shared_preload_libraries='${SILVAN_CITUS_PRELOAD:-citus}' -c citus.enable_statistics_collection=off \
		    ${SILVAN_HOST_PROFILE:+-c silvan.host_profile=$SILVAN_HOST_PROFILE}" start >/dev/null ||
		{ cat "$NODES_DIR/server.$port.log"; return 1; }
}

# Start the coordinator and the workers, CREATE EXTENSION citus on each,
# and register the workers with the coordinator
nodes_start() {
	local port
	NODES_DIR=$(mktemp -d /tmp/silvan-citus.XXXXXX)
	chmod 755 "$NODES_DIR"
	chown postgres:postgres "$NODES_DIR" 2>/dev/null || true
	for port in "${CITUS_PORTS[@]}"; do
		node_start "$port" || return 1
		node_psql "$port" -c "CREATE EXTENSION citus" >/dev/null || return 1
	done
	export PGHOST=localhost PGPORT=${CITUS_PORTS[0]} PGUSER=postgres PGDATABASE=postgres
	node_psql "${CITUS_PORTS[0]}" -c "SELECT citus_set_coordinator_host('localhost', ${CITUS_PORTS[0]})" >/dev/null || return 1
	for port in "${CITUS_PORTS[@]:1:1}"; do
		node_psql "${CITUS_PORTS[0]}" -c "SELECT citus_add_node('localhost', $port)" >/dev/null || return 1
	done
	trap nodes_stop EXIT
}

# Stop every node and remove their directories
nodes_stop() {
	local port
	[ -n "${NODES_DIR:-}" ] || return 0
	for port in "${CITUS_PORTS[@]}"; do
		[ -d "$NODES_DIR/$port" ] && as_postgres "$PG_BIN/pg_ctl" -D "$NODES_DIR/$port" -m immediate -w stop >/dev/null 2>&1
	done
	rm -rf "$NODES_DIR"
	NODES_DIR=
}
