#!/usr/bin/env bash
# ZooKeeper and etcd on loopback for snowflake worker IDs and their tests (docs/worker-ids.md).
#
#   scripts/services.sh [start]   install what is missing (Debian packages), start both, wait until ready
#   scripts/services.sh stop      stop what this script started (by the PIDs it wrote)
#   scripts/services.sh status    say what answers
#
# Idempotent: a service that already answers is left alone. ZooKeeper listens on 127.0.0.1:2181
# (tickTime=500, minSessionTimeout=1000, so tests can use 1-4 s sessions), etcd on 127.0.0.1:2379.
# Data and logs go under .services/ (SERVICES_DIR to move it). There is no systemd here and no nc:
# readiness is probed with bash's /dev/tcp.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${SERVICES_DIR:-$ROOT/.services}"
ZK_PORT=2181
ETCD_PORT=2379
ZK_JAR=/usr/share/java/zookeeper.jar
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

log() { echo "services: $*" >&2; }

# `srvr` answers "Mode: standalone" once the server serves ("ruok" says imok earlier than that).
zk_ready() {
  local reply
  reply="$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT && printf srvr >&3 && cat <&3" 2>/dev/null || true)"
  [[ "$reply" == *"Mode: standalone"* || "$reply" == *"Mode: leader"* || "$reply" == *"Mode: follower"* ]]
}

etcd_ready() {
  local reply
  reply="$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ETCD_PORT && printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && cat <&3" 2>/dev/null || true)"
  [[ "$reply" == *'"health":"true"'* ]]
}

install_missing() {
  local missing=()
  [ -f "$ZK_JAR" ] || missing+=(zookeeper)
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
  command -v faketime >/dev/null 2>&1 || missing+=(faketime)
  [ -f "$FAKETIME_LIB" ] || missing+=(libfaketime)
  # redis-cli and redis-benchmark: the RESP port's tests and bench drive it with the real tools.
  command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
  [ "${#missing[@]}" -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      log "missing ${missing[*]} and not root; run: sudo apt-get install ${missing[*]}"
      exit 1
    }
    sudo=(sudo)
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt-get (scripts/install-browser.sh) may hold the lock: wait up to 5 min for it.
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    zookeeper etcd-server etcd-client faketime libfaketime redis-tools >/dev/null
}

# Waits up to $2 tenths of a second for probe $1; the process of pid file $3 must stay alive.
wait_for() {
  local probe="$1" tenths="$2" pidfile="$3" i
  for ((i = 0; i < tenths; i++)); do
    "$probe" && return 0
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

start_zookeeper() {
  if zk_ready; then
    log "ZooKeeper already serves on 127.0.0.1:$ZK_PORT"
    return 0
  fi
  mkdir -p "$DIR/zookeeper/data"
  cat >"$DIR/zookeeper/zoo.cfg" <<EOF
tickTime=500
dataDir=$DIR/zookeeper/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,dump
minSessionTimeout=1000
maxSessionTimeout=60000
maxClientCnxns=0
EOF
  local classpath="$ZK_JAR"
  [ -f /usr/share/java/slf4j-simple.jar ] && classpath="$classpath:/usr/share/java/slf4j-simple.jar"
  # The Debian jar's manifest carries its Class-Path, so plain java works.
  nohup java -Xmx256m -XX:+UseSerialGC -cp "$classpath" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zookeeper/zoo.cfg" \
    >"$DIR/zookeeper/zk.log" 2>&1 </dev/null &
  echo $! >"$DIR/zookeeper/zk.pid"
  # Serving after 0.33 s on this kind of machine; 30 s covers a cold JVM on a busy one.
  if ! wait_for zk_ready 300 "$DIR/zookeeper/zk.pid"; then
    log "ZooKeeper did not start; last lines of $DIR/zookeeper/zk.log:"
    tail -n 20 "$DIR/zookeeper/zk.log" >&2 || true
    exit 1
  fi
  log "ZooKeeper serves on 127.0.0.1:$ZK_PORT (pid $(cat "$DIR/zookeeper/zk.pid"))"
}

start_etcd() {
  if etcd_ready; then
    log "etcd already serves on 127.0.0.1:$ETCD_PORT"
    return 0
  fi
  mkdir -p "$DIR/etcd"
  nohup etcd --name frond-dev --data-dir "$DIR/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster frond-dev=http://127.0.0.1:2380 --initial-cluster-state new \
    >"$DIR/etcd/etcd.log" 2>&1 </dev/null &
  echo $! >"$DIR/etcd/etcd.pid"
  # Healthy after 0.5 s measured; 30 s bound.
  if ! wait_for etcd_ready 300 "$DIR/etcd/etcd.pid"; then
    log "etcd did not start; last lines of $DIR/etcd/etcd.log:"
    tail -n 20 "$DIR/etcd/etcd.log" >&2 || true
    exit 1
  fi
  log "etcd serves on 127.0.0.1:$ETCD_PORT (pid $(cat "$DIR/etcd/etcd.pid"))"
}

stop_one() {
  local pidfile="$1" pid i
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill "$pid" 2>/dev/null; then
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

case "${1:-start}" in
  start)
    install_missing
    start_zookeeper
    start_etcd
    ;;
  stop)
    stop_one "$DIR/zookeeper/zk.pid"
    stop_one "$DIR/etcd/etcd.pid"
    ;;
  status)
    if zk_ready; then echo "zookeeper: 127.0.0.1:$ZK_PORT ok"; else echo "zookeeper: down"; fi
    if etcd_ready; then echo "etcd: 127.0.0.1:$ETCD_PORT ok"; else echo "etcd: down"; fi
    ;;
  *)
    echo "usage: scripts/services.sh [start|stop|status]" >&2
    exit 2
    ;;
esac
