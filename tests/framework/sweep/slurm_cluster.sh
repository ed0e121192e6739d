#!/usr/bin/env bash
# A throwaway single-node Slurm cluster on 127.0.0.1 for tests, all of its state in one directory.
#
# Usage: slurm_cluster.sh start DIR   bring it up; DIR is an existing (temporary) directory
#        slurm_cluster.sh stop DIR    cancel its jobs, stop what `start` started (always exits 0)
# Clients then talk to it with SLURM_CONF=DIR/slurm.conf (jobs inherit it through sbatch's
# default --export=ALL). Needs root and Debian's slurmctld, slurmd, slurm-client and munge.
#
# `start` runs a private munged (own key and socket in DIR/munge, so it neither needs nor
# disturbs a system munged), then `slurmctld -D` and `slurmd -D` in the background; their PIDs
# go to DIR/pids/*.pid and `stop` kills exactly those. The ports are picked per harness
# (from the PID, skipping ports in use), so two build trees' tests do not meet, and a stale
# daemon from a crashed earlier test is skipped over. Logs: DIR/log/.
#
# Exit codes of `start`: 0 the node is idle and takes jobs; 77 a prerequisite is missing (the
# reason is printed; callers report a skip); 1 the cluster did not come up (log tails printed,
# whatever was started is stopped again).
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

cmd=${1:-}; dir=${2:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then echo "usage: $0 start|stop DIR (an existing directory)" >&2; exit 2; fi
dir=$(cd "$dir" && pwd)
conf=$dir/slurm.conf

# alive PID NAME: PID runs and is NAME (a zombie or a recycled PID does not count). A daemon
# started with `&` is a fork of this script until its exec: that fork counts too (on a busy
# machine the first check can come before the exec; CI once failed "slurmd exited" so).
self_comm=$(cat /proc/$$/comm)
alive() {
  local stat st comm; stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  read -r st _ <<<"${stat##*) }"
  [ "$st" != Z ] || return 1
  comm=$(cat "/proc/$1/comm" 2>/dev/null)
  [[ "$comm" == "$2"* || "$comm" == "$self_comm" ]]
}
# stop_pid NAME: SIGTERM the PID in DIR/pids/NAME.pid, SIGKILL after 5 s.
stop_pid() {
  local f=$dir/pids/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f"); rm -f "$f"
  alive "$pid" "$1" || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do alive "$pid" "$1" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
# Our job steps and everything under them: the slurmstepd processes that carry this cluster's
# marker (slurmd passes its environment on to them), and their descendants.
cluster_job_pids() {
  local p found=() table
  for p in $(pgrep -x slurmstepd); do
    tr '\0' '\n' 2>/dev/null < "/proc/$p/environ" | grep -qxF "ABLATE_SLURM_CLUSTER=$dir" && found+=("$p")
  done
  [ ${#found[@]} -gt 0 ] || return 0
  table=$(ps -eo pid=,ppid=)
  local n=0
  while [ "$n" -ne ${#found[@]} ]; do  # add children until nothing new
    n=${#found[@]}
    mapfile -t found < <(awk -v set=" ${found[*]} " 'index(set, " " $1 " ") || index(set, " " $2 " ") { print $1 }' <<<"$table")
  done
  echo "${found[@]}"
}

do_stop() {
  if [ -f "$conf" ] && [ -f "$dir/pids/slurmctld.pid" ]; then  # cancel jobs while the controller is up
    local jobs; jobs=$(SLURM_CONF=$conf timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$conf timeout 10 scancel $jobs 2>/dev/null
      for _ in $(seq 100); do
        [ -z "$(SLURM_CONF=$conf timeout 5 squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.1
      done
    fi
  fi
  stop_pid slurmd; stop_pid slurmctld; stop_pid munged
  local left; left=$(cluster_job_pids)
  # shellcheck disable=SC2086
  [ -z "$left" ] || kill -KILL $left 2>/dev/null
  return 0
}

# port_free PORT: nothing listens on it.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

fail_start() {
  echo "slurm_cluster: $*"
  local f
  for f in munged slurmctld slurmd; do
    f=$dir/log/$f.log
    [ -s "$f" ] || f=${f%.log}.out  # stderr of a daemon that died before opening its log
    [ -s "$f" ] && { echo "--- tail of $f"; tail -n 25 "$f"; }
  done
  do_stop
  exit 1
}

do_start() {
  local missing=() b
  [ "$(id -u)" -eq 0 ] || { echo "slurm_cluster: needs root (the daemons run as root)"; exit 77; }
  for b in slurmctld slurmd slurmstepd sbatch sinfo squeue scancel munged munge; do
    command -v "$b" >/dev/null 2>&1 || missing+=("$b")
  done
  [ ${#missing[@]} -eq 0 ] ||
    { echo "slurm_cluster: not installed: ${missing[*]} (scripts/setup.sh installs slurmctld slurmd slurm-client munge)"; exit 77; }
  [ ! -e "$conf" ] || { echo "slurm_cluster: $conf exists; start wants a fresh directory"; exit 1; }

  mkdir -p "$dir/log" "$dir/pids" "$dir/state" "$dir/spool"
  install -d -m 0755 "$dir/munge"

  # Private munged: key, socket, PID, seed and log in DIR/munge. --force: it would refuse a
  # socket below a directory that not everyone may search (mktemp -d makes them 0700); only
  # root talks to it here.
  local m=$dir/munge
  dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none && chmod 0400 "$m/munge.key"
  munged --force --socket="$m/munge.sock" --key-file="$m/munge.key" --pid-file="$m/munged.pid" \
         --log-file="$dir/log/munged.log" --seed-file="$m/munged.seed" </dev/null >/dev/null 2>&1 ||
    fail_start "munged did not start"
  for _ in $(seq 50); do [ -s "$m/munged.pid" ] && [ -S "$m/munge.sock" ] && break; sleep 0.1; done
  cp "$m/munged.pid" "$dir/pids/munged.pid" 2>/dev/null || fail_start "munged wrote no PID file"
  munge -n -S "$m/munge.sock" | unmunge -S "$m/munge.sock" >/dev/null 2>&1 || fail_start "munged does not answer"

  # Two free ports: from 20000 + a PID-derived offset, in steps of 2, nothing listening on either.
  local ctl_port=0 d_port=0 p
  for i in $(seq 0 199); do
    p=$((20000 + ($$ * 2 + i * 2) % 10000))
    if port_free "$p" && port_free $((p + 1)); then ctl_port=$p; d_port=$((p + 1)); break; fi
  done
  [ "$ctl_port" -ne 0 ] || fail_start "found no two free ports in 20000-29999"

  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)  # MB, under what slurmd finds
  cat > "$conf" <<EOF
# Written by tests/framework/sweep/slurm_cluster.sh: a single-node test cluster.
ClusterName=ablatetest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$m/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
InactiveLimit=0
KillWait=5
MinJobAge=300
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/state/slurmctld.pid
SlurmdPidFile=$dir/spool/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

  # -D: stay in the foreground, so $! is the daemon. No inherited stdout: a caller reading our
  # output through a pipe must not wait for the daemons.
  SLURM_CONF=$conf slurmctld -D -f "$conf" </dev/null >"$dir/log/slurmctld.out" 2>&1 &
  echo $! > "$dir/pids/slurmctld.pid"
  ABLATE_SLURM_CLUSTER=$dir SLURM_CONF=$conf slurmd -D -f "$conf" -N "$host" </dev/null >"$dir/log/slurmd.out" 2>&1 &
  echo $! > "$dir/pids/slurmd.pid"

  local state="" start=$SECONDS t0=$EPOCHREALTIME
  while [ $((SECONDS - start)) -lt 30 ]; do
    alive "$(cat "$dir/pids/slurmctld.pid")" slurmctld || fail_start "slurmctld exited"
    alive "$(cat "$dir/pids/slurmd.pid")" slurmd || fail_start "slurmd exited"
    state=$(SLURM_CONF=$conf timeout 5 sinfo -h -o %t 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  [ "$state" = idle ] || fail_start "node not idle after 30 s (sinfo says: '${state:-nothing}')"
  echo "slurm_cluster: node $host idle $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s after the daemons started; ports $ctl_port/$d_port"
  echo "export SLURM_CONF=$conf"
}

case $cmd in
  start) do_start ;;
  stop) do_stop; exit 0 ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
