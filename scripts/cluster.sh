#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the demo and the tests.
#   source scripts/cluster.sh; cluster_start; ...; cluster_stop
# Runs the server as the "postgres" OS user (the server refuses root) on a
# private socket directory; exports PGHOST, PGPORT, PGUSER for clients.
# SILVAN_PGOPTIONS adds server options ("-c name=value ...");
# SILVAN_PG_BIN names another server's bin directory (an assert-enabled build).
# SILVAN_HOST_PROFILE sets silvan.host_profile (the tests: fallback, so that
# default schedules are the same on every host).
PG_BIN=${SILVAN_PG_BIN:-/usr/lib/postgresql/15/bin}

cluster_start() {
	CLUSTER_DIR=$(mktemp -d /tmp/silvan-cluster.XXXXXX)
	chown postgres:postgres "$CLUSTER_DIR" 2>/dev/null || true
	local as=()
	[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
	"${as[@]}" "$PG_BIN/initdb" -D "$CLUSTER_DIR/data" -A trust -U postgres --no-sync >"$CLUSTER_DIR/initdb.log" 2>&1 ||
		{ cat "$CLUSTER_DIR/initdb.log"; return 1; }
	export PGHOST=$CLUSTER_DIR PGPORT=${SILVAN_PGPORT:-54329} PGUSER=postgres PGDATABASE=postgres
	"${as[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w \
		-o "-k $CLUSTER_DIR -p $PGPORT -c listen_addresses='' -c fsync=off ${SILVAN_HOST_PROFILE:+-c silvan.host_profile=$SILVAN_HOST_PROFILE} ${SILVAN_PGOPTIONS:-}" start >/dev/null ||
		{ cat "$CLUSTER_DIR/server.log"; return 1; }
	trap cluster_stop EXIT
}

cluster_stop() {
	[ -n "${CLUSTER_DIR:-}" ] || return 0
	local as=()
	[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
	"${as[@]}" "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$CLUSTER_DIR"
	CLUSTER_DIR=
}
