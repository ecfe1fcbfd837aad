#!/usr/bin/env bash
# Build an assert-enabled PostgreSQL 15 (--enable-cassert --enable-debug)
# from Debian's own postgresql-15 source package, the version of the
# installed server when the mirror has its source, and install it into a
# prefix (run as root):
#   bash scripts/pg_cassert.sh        prints the prefix on its last line
# The prefix, /var/cache/silvan/pg15-cassert-<version> (SILVAN_CASSERT_ROOT
# names another parent), is a cache: a complete install there, made with
# the same options, is reused.  It is built with USE_VALGRIND (palloc
# chunks and block tails are marked for memcheck; a no-op when the server
# does not run under valgrind), so that one build serves both the plain
# assert-enabled run and the memcheck run of test/cassert.sh, and installs
# PostgreSQL's valgrind.supp beside it.
#
# Asserts turn on memory-context checking (a write past a chunk's end is a
# WARNING at pfree or reset; AllocSetCheck runs at every reset) and
# CLOBBER_FREED_MEMORY. -O1, not -O2: the build takes 70% of the CPU time
# (6.5 minutes against 9.3) while the suite, about 6 s, runs within a
# second of -O2's, and a debugger still sees most variables. No readline,
# zlib, ICU or LLVM: the server only runs tests (silvan links
# llvm-config-14 itself); no docs are built.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "pg_cassert.sh: run as root" >&2; exit 1; }

flavour=pg15-cassert
need=(gcc make libc6-dev perl bzip2 valgrind)
configure=(--enable-cassert --enable-debug --without-readline --without-zlib --without-icu --without-llvm
	"CFLAGS=-O1 -g" "CPPFLAGS=-DUSE_VALGRIND")
# The contrib modules that silvan's regression tests create
contrib="dblink"
options="${configure[*]} contrib: $contrib"

missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing: ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The installed server's version, else the one apt would install
want=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true)
[ -n "$want" ] || want=$(apt-cache policy postgresql-15 | sed -n 's/^ *Candidate: //p')
root=${SILVAN_CASSERT_ROOT:-/var/cache/silvan}

# A complete install made with these options (the stamp holds them)
complete() {
	[ "$(cat "$1/.silvan-complete" 2>/dev/null)" = "$options" ] &&
		[ -x "$1/bin/postgres" ] && [ -x "$1/bin/psql" ] && [ -x "$1/bin/pg_config" ] &&
		[ -f "$("$1/bin/pg_config" --pgxs)" ] &&
		for m in $contrib; do [ -f "$("$1/bin/pg_config" --sharedir)/extension/$m.control" ] || return 1; done
}
# The installed server's version cached, else the newest cached
for prefix in "$root/$flavour-$want" $(ls -d "$root/$flavour"-[0-9]* 2>/dev/null | sort -rV); do
	if complete "$prefix"; then
		echo "== assert-enabled PostgreSQL: cached in $prefix" >&2
		echo "$prefix"
		exit 0
	fi
done

start=$SECONDS
work=$(mktemp -d /tmp/silvan-pgsrc.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Fetch the source package through a private apt state: deb-src twins of the
# system's Debian entries, so the machine's own sources and lists stay as
# they are (and later apt-get updates do not start fetching Sources indices)
mkdir -p "$work/apt/parts" "$work/apt/lists/partial"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	sed -e 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$work/apt/parts/debian-src.sources"
fi
if [ -f /etc/apt/sources.list ]; then
	sed -n -e 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list >"$work/apt/parts/debian-src.list"
fi
apt_private=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/apt/parts"
	-o Dir::State::Lists="$work/apt/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
	-o APT::Sandbox::User=root)
apt-get "${apt_private[@]}" update -qq
# The server's own version first; a mirror may list a source it lacks
# (seen: 15.20 on the security mirror), so then the newest that downloads
versions=$( (echo "$want"; apt-cache "${apt_private[@]}" showsrc postgresql-15 |
	sed -n 's/^Version: //p' | sort -rV) | awk 'NF && !seen[$0]++')
version=
for v in $versions; do
	echo "== fetching the postgresql-15 $v source package" >&2
	if (cd "$work" && apt-get "${apt_private[@]}" source --download-only -qq "postgresql-15=$v" >/dev/null 2>"$work/fetch.log"); then
		version=$v
		break
	fi
	grep -E '^E:' "$work/fetch.log" | head -n 1 >&2
	rm -f "$work"/postgresql-15_*
done
[ -n "$version" ] || { echo "pg_cassert.sh: no postgresql-15 source package could be fetched" >&2; exit 1; }
[ "$version" = "$want" ] || echo "== note: building $version, the installed server is $want" >&2
prefix=$root/$flavour-$version
tarball=$(ls "$work"/postgresql-15_*.orig.tar.* | head -n 1)

echo "== building assert-enabled PostgreSQL $version into $prefix" >&2
tar -xf "$tarball" -C "$work"
src=$(ls -d "$work"/postgresql-15*/ | head -n 1)
# The release tarball carries the generated parsers: no bison or flex
[ -f "$src/src/backend/parser/gram.c" ] || { echo "pg_cassert.sh: $tarball lacks gram.c (needs bison/flex)" >&2; exit 1; }
rm -rf "$prefix"
(
	cd "$src"
	./configure -q --prefix="$prefix" "${configure[@]}" >"$work/configure.log" 2>&1 ||
		{ tail -n 40 "$work/configure.log" >&2; exit 1; }
	make -s -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 60 "$work/make.log" >&2; exit 1; }
	make -s install >"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log" >&2; exit 1; }
	for m in $contrib; do
		make -s -C "contrib/$m" install >>"$work/install.log" 2>&1 || { tail -n 40 "$work/install.log" >&2; exit 1; }
	done
	cp src/tools/valgrind.supp "$prefix/"
)
# The server runs as the postgres OS user: it must read the whole prefix
chmod -R a+rX "$prefix"
for d in "$prefix" "$(dirname "$prefix")"; do chmod a+rx "$d"; done
echo "$options" >"$prefix/.silvan-complete"
complete "$prefix" || { rm -f "$prefix/.silvan-complete"; echo "pg_cassert.sh: $prefix is incomplete" >&2; exit 1; }
echo "== assert-enabled PostgreSQL $version built in $((SECONDS - start)) s" >&2
echo "$prefix"
