# A throwaway PostgreSQL server on 127.0.0.1 for the store's tests. Source it (bash):
#
#     . .ci/postgres.sh
#
# It installs Debian's `postgresql` package if no server binaries are found (as root only),
# starts a fresh cluster in a temporary folder on a free port, creates the database `rigbench`
# owned by a user `rigbench` with a random password, and exports
#
#     RIGBENCH_TEST_POSTGRES_URL=postgresql://rigbench:PASSWORD@127.0.0.1:PORT/rigbench
#
# which tests/conftest.py's backend fixture reads (PostgreSQL cases are skipped without it).
# The server stops and its folder is removed when the sourcing shell exits (an EXIT trap), or
# at once with `rigbench_postgres_stop`. Root runs the server as the `postgres` user (the
# server refuses to run as root); anyone else runs it as themselves.
#
# Authentication: trust over the cluster's own Unix socket (only this script uses it, to
# create the user), scram-sha-256 over TCP, so a wrong password is refused as on a real server.

_rb_pg() {  # run a server binary as the user the cluster belongs to, from a folder it can read
    # runuser lives in /usr/sbin, which a root shell's PATH may lack
    if [ "$(id -u)" = 0 ]; then (cd / && PATH="$PATH:/usr/sbin:/sbin" runuser -u postgres -- "$@"); else "$@"; fi
}

_rb_pg_bindir() {  # the folder holding initdb and pg_ctl, newest version first
    local found
    # on the PATH (Debian links only some there: follow the link to the folder with psql too)
    found=$(command -v initdb 2>/dev/null) && command -v pg_ctl >/dev/null 2>&1 \
        && { dirname "$(readlink -f "$found")"; return 0; }
    found=$( (ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true) | sort -V | tail -n 1)
    [ -n "$found" ] && [ -x "$found/initdb" ] && { echo "$found"; return 0; }
    return 1
}

rigbench_postgres_stop() {
    if [ -n "${_RB_PG_DIR:-}" ] && [ -d "$_RB_PG_DIR" ]; then
        _rb_pg "$_RB_PG_BIN/pg_ctl" -D "$_RB_PG_DIR/data" -m fast stop >/dev/null 2>&1 || true
        rm -rf "$_RB_PG_DIR"
    fi
    _RB_PG_DIR=
    unset RIGBENCH_TEST_POSTGRES_URL
}

_rb_pg_start() {
    local port password
    if ! _RB_PG_BIN=$(_rb_pg_bindir); then
        if [ "$(id -u)" != 0 ]; then
            echo "postgres.sh: no PostgreSQL server binaries (initdb, pg_ctl); install Debian's postgresql package" >&2
            return 1
        fi
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || return 1
        _RB_PG_BIN=$(_rb_pg_bindir) || { echo "postgres.sh: initdb not found after installing postgresql" >&2; return 1; }
    fi
    _RB_PG_DIR=$(mktemp -d /tmp/rigbench-postgres.XXXXXX) || return 1
    [ "$(id -u)" = 0 ] && chown postgres: "$_RB_PG_DIR"
    # a port nobody listens on now; the server takes it a moment later
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || return 1
    password=$(python3 -c 'import secrets; print(secrets.token_hex(16))') || return 1
    _rb_pg "$_RB_PG_BIN/initdb" -D "$_RB_PG_DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        -E UTF8 --locale=C.UTF-8 >"$_RB_PG_DIR/initdb.log" 2>&1 \
        || { cat "$_RB_PG_DIR/initdb.log" >&2; return 1; }
    _rb_pg "$_RB_PG_BIN/pg_ctl" -D "$_RB_PG_DIR/data" -l "$_RB_PG_DIR/server.log" -w \
        -o "-k $_RB_PG_DIR -p $port -c listen_addresses=127.0.0.1" start >/dev/null \
        || { cat "$_RB_PG_DIR/server.log" >&2; return 1; }
    # CREATEDB: the tests give each test a database of its own and drop it afterwards
    _rb_pg "$_RB_PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 -h "$_RB_PG_DIR" -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE rigbench LOGIN CREATEDB PASSWORD '$password'" \
        -c "CREATE DATABASE rigbench OWNER rigbench" || return 1
    export RIGBENCH_TEST_POSTGRES_URL="postgresql://rigbench:$password@127.0.0.1:$port/rigbench"
    echo "postgres.sh: PostgreSQL $("$_RB_PG_BIN/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port" \
         "(database rigbench, user rigbench); RIGBENCH_TEST_POSTGRES_URL is set" >&2
}

trap rigbench_postgres_stop EXIT
_rb_pg_start || { rigbench_postgres_stop; false; }
