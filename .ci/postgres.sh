#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store tests, on 127.0.0.1 only.
#
#   .ci/postgres.sh start   # installs the distribution's package if missing, initdb, pg_ctl start;
#                           # prints `export RAGQUAL_TEST_PG_URL=...` and writes it to $RAGQUAL_PG_DIR/url
#   .ci/postgres.sh stop    # stops the server this script started and removes its cluster
#   .ci/postgres.sh url     # prints the URL of the running server
#
# Typical use:  eval "$(.ci/postgres.sh start)"; ...; .ci/postgres.sh stop
#
# Settings (environment): RAGQUAL_PG_DIR (default /tmp/ragqual-pg), RAGQUAL_PG_PORT (first port
# tried, default 54329; the next free port is taken when it is busy). The cluster trades
# durability for speed (fsync off, no autovacuum): it holds short-lived test databases only.
# The role may create databases and end other sessions on them (DROP DATABASE ... WITH (FORCE)).
# As root the server runs as the `postgres` user; as anyone else, as that user.
set -euo pipefail

PG_DIR="${RAGQUAL_PG_DIR:-/tmp/ragqual-pg}"
FIRST_PORT="${RAGQUAL_PG_PORT:-54329}"
DATA="$PG_DIR/data"
SOCKETS="$PG_DIR/run"
LOG="$PG_DIR/server.log"
ROLE=ragqual
PASSWORD=ragqual
DATABASE=ragqual

say() { echo "postgres.sh: $*" >&2; }

pg_bindir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -n "$dir" ] && [ -x "$dir/pg_ctl" ]; then
        echo "$dir"
        return
    fi
    if [ -x "$(command -v pg_ctl 2>/dev/null || true)" ]; then
        dirname "$(command -v pg_ctl)"
    fi
}

install_postgres() {
    if [ -n "$(pg_bindir)" ]; then
        return
    fi
    if [ "$(id -u)" -ne 0 ]; then
        say "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
        exit 1
    fi
    say "installing PostgreSQL from the distribution's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends postgresql >&2
}

# Run a command as the server's owner: `postgres` when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

owner_name() {
    if [ "$(id -u)" -ne 0 ]; then
        id -un
    elif id postgres >/dev/null 2>&1; then
        echo postgres
    else
        say "running as root needs the 'postgres' user, which the postgresql package creates"
        exit 1
    fi
}

port_is_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
    local port="$FIRST_PORT"
    while port_is_busy "$port"; do
        port=$((port + 1))
        if [ "$port" -gt $((FIRST_PORT + 100)) ]; then
            say "no free port in $FIRST_PORT..$((FIRST_PORT + 100))"
            exit 1
        fi
    done
    echo "$port"
}

# Running means answering on the port recorded in the url file (a killed server can leave
# its pid file and even an unreaped pid behind).
is_running() {
    local bindir="$1" port
    [ -f "$PG_DIR/url" ] && [ -f "$DATA/postmaster.pid" ] || return 1
    port="$(sed -E 's#.*:([0-9]+)/[^/]*$#\1#' "$PG_DIR/url")"
    "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5
}

url_for() {
    echo "postgresql+psycopg://$ROLE:$PASSWORD@127.0.0.1:$1/$DATABASE"
}

# Remove the folder only when it is empty or one this script made (it holds a marker file).
remove_dir() {
    if [ -d "$PG_DIR" ] && [ -n "$(ls -A "$PG_DIR")" ] && [ ! -f "$PG_DIR/.ragqual-pg" ]; then
        say "$PG_DIR exists and was not made by this script; choose another RAGQUAL_PG_DIR"
        exit 1
    fi
    rm -rf "$PG_DIR"
}

init_cluster() {
    local bindir="$1" owner pwfile
    owner="$(owner_name)"
    remove_dir
    mkdir -p "$PG_DIR" "$DATA" "$SOCKETS"
    touch "$PG_DIR/.ragqual-pg"
    chmod 755 "$PG_DIR"
    chmod 700 "$DATA"
    pwfile="$PG_DIR/superuser-password"
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$pwfile"
    chown -R "$owner" "$PG_DIR"
    chmod 600 "$pwfile"
    as_owner "$bindir/initdb" -D "$DATA" -U postgres --pwfile="$pwfile" -E UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 >"$PG_DIR/initdb.log" 2>&1 || {
        cat "$PG_DIR/initdb.log" >&2
        exit 1
    }
    rm -f "$pwfile"
}

start_server() {
    local bindir="$1" port="$2"
    local opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$SOCKETS"
    opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c autovacuum=off"
    as_owner "$bindir/pg_ctl" -D "$DATA" -l "$LOG" -o "$opts" -w -t 60 start >/dev/null || {
        tail -n 30 "$LOG" >&2 || true
        exit 1
    }
}

create_role_and_database() {
    local bindir="$1" port="$2"
    as_owner "$bindir/psql" -q -v ON_ERROR_STOP=1 -h "$SOCKETS" -p "$port" -U postgres -d postgres <<SQL >&2
CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD';
GRANT pg_signal_backend TO $ROLE;
CREATE DATABASE $DATABASE OWNER $ROLE;
SQL
}

cmd_start() {
    install_postgres
    local bindir port
    bindir="$(pg_bindir)"
    if is_running "$bindir"; then
        say "already running ($PG_DIR)"
    else
        if [ -f "$DATA/postmaster.pid" ]; then
            as_owner "$bindir/pg_ctl" -D "$DATA" -m immediate -t 5 stop >/dev/null 2>&1 || true
        fi
        init_cluster "$bindir"
        port="$(free_port)"
        start_server "$bindir" "$port"
        create_role_and_database "$bindir" "$port"
        url_for "$port" >"$PG_DIR/url"
        say "started $("$bindir/postgres" --version) on 127.0.0.1:$port (cluster $DATA)"
    fi
    echo "export RAGQUAL_TEST_PG_URL=$(cat "$PG_DIR/url")"
}

cmd_stop() {
    local bindir
    bindir="$(pg_bindir)"
    if [ -z "$bindir" ] || [ ! -d "$DATA" ]; then
        say "nothing to stop ($PG_DIR)"
        return
    fi
    if [ -f "$DATA/postmaster.pid" ]; then
        as_owner "$bindir/pg_ctl" -D "$DATA" -m fast -t 30 stop >/dev/null 2>&1 || true
    fi
    remove_dir
    say "stopped and removed $PG_DIR"
}

cmd_url() {
    if [ ! -f "$PG_DIR/url" ]; then
        say "no server started by this script ($PG_DIR)"
        exit 1
    fi
    cat "$PG_DIR/url"
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    url) cmd_url ;;
    *)
        echo "usage: $0 start|stop|url" >&2
        exit 2
        ;;
esac
