#!/bin/sh
# A cluster of network hosts on one machine: Linux network namespaces on a
# bridge, for drtmx-bench --hosts (docs/benchmarks.md, "Several hosts").
# Needs root (ip netns).
#
#   scripts/netns-cluster.sh up N [NAME]     make N hosts (NAME: default dxs<pid>);
#                                            prints the hosts file, the remote shell and
#                                            the drtmx-bench command line to use
#   scripts/netns-cluster.sh down [NAME]     remove the cluster (default: the last made)
#   scripts/netns-cluster.sh exec HOST CMD.. run CMD on HOST (a host, or NAME-c: the launcher)
#   scripts/netns-cluster.sh link down|up HOST   cut HOST off the switch / join it again
#   scripts/netns-cluster.sh list            the clusters that exist
#
# Layout (the same as tests/driver/support/netns_cluster.h): namespaces
# NAME-sw (bridge br0), NAME-c (where drtmx-bench and its coordinator run,
# 10.A.B.1) and NAME-h0..NAME-h<N-1> (10.A.B.10+i), each with loopback and
# eth0, a veth pair to a port of br0. Addresses exist only in these
# namespaces. `down` kills every process in them and deletes them (their
# interfaces go with them); a failed `up` removes what it made.
set -eu

state_root="${TMPDIR:-/tmp}/drtmx-netns"
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

die() {
  echo "netns-cluster: $*" >&2
  exit 2
}

namespaces_of() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-" || true; }

remove() {
  for n in $(namespaces_of "$1"); do
    p=$(ip netns pids "$n" 2>/dev/null || true)
    [ -n "$p" ] && kill -9 $p 2>/dev/null || true
  done
  i=0
  while [ $i -lt 50 ]; do
    left=0
    for n in $(namespaces_of "$1"); do
      [ -n "$(ip netns pids "$n" 2>/dev/null || true)" ] && left=1
    done
    [ $left = 0 ] && break
    sleep 0.1
    i=$((i + 1))
  done
  for n in $(namespaces_of "$1"); do ip netns del "$n" || true; done
  rm -rf "${state_root:?}/$1"
}

cmd_up() {
  [ $# -ge 1 ] || die "up N [NAME]: N hosts (1..64)"
  n="$1"
  case "$n" in '' | *[!0-9]*) die "up N: N must be a number of hosts (1..64), not '$n'" ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "up N: N must be 1..64, not $n"
  name="${2:-dxs$$}"
  case "$name" in *[!a-z0-9]* | '') die "NAME must be lowercase letters and digits: '$name'" ;; esac
  [ ${#name} -le 24 ] || die "NAME must have at most 24 characters"
  [ "$(id -u)" = 0 ] || die "network namespaces need root (ip netns add)"
  # A leftover of the same name (a crashed earlier run) goes first.
  remove "$name"
  trap 'remove "$name"; exit 1' INT TERM HUP
  trap 'st=$?; [ $st = 0 ] || remove "$name"' EXIT
  a=$(( ($$ >> 8) & 255 ))
  b=$(( $$ & 255 ))
  net="10.$a.$b"
  sw="$name-sw"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  member() { # PORT NS ADDR
    ip netns add "$2"
    ip -n "$2" link set lo up
    ip -n "$sw" link add "$1" type veth peer name eth0 netns "$2"
    ip -n "$sw" link set "$1" master br0
    ip -n "$sw" link set "$1" up
    ip -n "$2" addr add "$3/24" dev eth0
    ip -n "$2" link set eth0 up
  }
  member c "$name-c" "$net.1"
  i=0
  dir="$state_root/$name"
  mkdir -p "$dir"
  : > "$dir/hosts"
  while [ $i -lt "$n" ]; do
    member "h$i" "$name-h$i" "$net.$((10 + i))"
    echo "$name-h$i" >> "$dir/hosts"
    i=$((i + 1))
  done
  cat > "$dir/shell" <<EOF
#!/bin/sh
# Runs COMMAND in HOST's network namespace, as ssh HOST COMMAND would.
host="\$1"; shift
case "\$host" in $name-h[0-9]*) ;; *) echo "netns-shell: '\$host' is not a host of cluster $name" >&2; exit 255 ;; esac
exec ip netns exec "\$host" /bin/sh -c "\$*"
EOF
  cat > "$dir/link" <<EOF
#!/bin/sh
# down|up HOST: HOST's port on the switch of cluster $name.
exec "$self" link "\$1" "\$2"
EOF
  chmod 755 "$dir/shell" "$dir/link"
  echo "$net.1" > "$dir/coordinator"
  ln -sfn "$name" "$state_root/last"
  trap - INT TERM HUP EXIT
  cat <<EOF
cluster $name: $n hosts ($net.10..), launcher namespace $name-c ($net.1)
  hosts file:    $dir/hosts
  remote shell:  $dir/shell
  link shell:    $dir/link   (for --partition-node)
run, from the repository:
  ip netns exec $name-c env UCX_TLS=tcp UCX_NET_DEVICES=eth0 build/bin/drtmx-bench \\
      --fabric=ucx --hosts=$dir/hosts --remote-shell=$dir/shell --coordinator-host=$net.1 \\
      --bench=smallbank --seconds=5
remove it:
  $0 down $name
EOF
}

cmd_down() {
  name="${1:-}"
  if [ -z "$name" ]; then
    [ -L "$state_root/last" ] || die "down: no cluster made by this script (give NAME)"
    name="$(readlink "$state_root/last")"
  fi
  remove "$name"
  [ "$(readlink "$state_root/last" 2>/dev/null || true)" = "$name" ] && rm -f "$state_root/last"
  echo "cluster $name removed"
}

cmd_exec() {
  [ $# -ge 2 ] || die "exec HOST COMMAND..."
  host="$1"
  shift
  ip netns list | awk '{print $1}' | grep -qx "$host" || die "exec: no namespace host '$host'"
  exec ip netns exec "$host" "$@"
}

cmd_link() {
  [ $# = 2 ] || die "link down|up HOST"
  case "$1" in up | down) ;; *) die "link: expected down or up, not '$1'" ;; esac
  case "$2" in *-h[0-9]*) ;; *) die "link: '$2' is not a host (NAME-hI)" ;; esac
  exec ip -n "${2%-h*}-sw" link set dev "${2##*-}" "$1"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  link) shift; cmd_link "$@" ;;
  list) ip netns list | awk '{print $1}' | grep -- '-sw$' | sed 's/-sw$//' || true ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
