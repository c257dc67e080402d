#!/bin/sh
# A real Slurm cluster of the tests' own on this one machine (Debian's
# slurm-wlm and munge), for the live tests of `--slurm`:
#
#   sh tests/slurm-cluster.sh up DIR NODES [OWNER_PID]
#   sh tests/slurm-cluster.sh down DIR
#
# up: everything lives in DIR (made if missing, must be empty): a private
# munged (its own key, socket, pid, log and seed files: /etc/munge and a
# system munged are never touched), DIR/slurm.conf (ports free at run time,
# proctrack/linuxproc, task/none, no accounting, cons_tres with OverSubscribe
# so that many light tasks share the 2 CPUs), one slurmctld and NODES slurmd
# started as `slurmd -N hnodeK`, node K at 127.0.0.(K+1) on its own port.  It
# returns once sinfo shows every node idle (bounded: PYSTROBE_SLURM_UP_S,
# 30 s), having written DIR/env (`. DIR/env` sets SLURM_CONF for clients).
# With OWNER_PID a watchdog runs `down DIR` once that process is gone, and
# removes DIR if that went well: a test killed on its timeout still leaves
# nothing running.
#
# down: cancels every job, waits (bounded) for the steps to end, kills what
# is left of the jobs (every process whose environment names DIR's
# slurm.conf: slurmstepd, tasks, srun), then slurmd, slurmctld and munged
# by their own pids, and checks that nothing of the cluster runs.
# Idempotent; safe after a failed up.  DIR and its logs are kept.
#
# Exit: 0; 1 the cluster did not start (one line: what, and its log's last
# lines; what was started is stopped again) or something of it outlived
# down (named); 2 bad usage; 77 cannot run here (not root, slurm-wlm or
# munge missing), with the reason.
set -u
me=slurm-cluster
script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
up_s=${PYSTROBE_SLURM_UP_S:-30}

say() { echo "$me: $*" >&2; }

usage() {
	say "usage: sh $script up DIR NODES [OWNER_PID] | down DIR"
	exit 2
}

# The last lines of a log, on one line.
log_tail() {
	[ -f "$1" ] || { echo "($1 is missing)"; return; }
	tail -n "${2:-4}" "$1" | tr '\n' '|' | sed 's/|$//; s/|/ | /g'
}

# Is PID alive (not a zombie) and is WORD in its command line?
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	case $(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) in Z | X | '') return 1 ;; esac
	[ -z "${2:-}" ] && return 0
	{ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -q -- "$2"
}

# Every process whose environment has SLURM_CONF=$conf, but this script, its
# ancestors (a test that runs down has SLURM_CONF too) and its own forks and
# children (down runs with PYSTROBE_SLURM_DOWN=$dir in its environment).
cluster_procs() {
	anc=" "
	p=$$
	while [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null; do
		anc="$anc$p "
		p=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
	done
	# One grep over every environment: a scan a few times a second on a
	# loaded machine.
	for e in $(grep -lzx -- "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null); do
		p=${e#/proc/}
		p=${p%/environ}
		case $anc in *" $p "*) continue ;; esac
		alive "$p" && ! grep -qzx "PYSTROBE_SLURM_DOWN=$dir" "$e" 2>/dev/null && echo "$p"
	done
}

# "pid (command)" for each pid given.
describe() {
	for p in "$@"; do
		printf '%s (%s) ' "$p" "$({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | cut -c1-60)"
	done
}

# Wait up to $1 s for the condition "$2..." to hold; 0 once it does.
wait_for() {
	end=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
	return 0
}

# --- up --------------------------------------------------------------------

# Fail: one line, the cluster's remains stopped, exit 1.
fail_up() {
	say "up: $*"
	sh "$script" down "$dir" 2>&1 | grep -v ': down: .* stopped in ' >&2
	exit 1
}

check_can_run() {
	[ "$(id -u)" = 0 ] || { say "needs root (slurmd and slurmstepd run the tasks as their users); run the tests as root"; exit 77; }
	for t in munged munge unmunge slurmctld slurmd srun sbatch sinfo squeue scancel ss; do
		command -v "$t" >/dev/null 2>&1 && continue
		case $t in munge*) pkg=munge ;; ss) pkg=iproute2 ;; *) pkg=slurm-wlm ;; esac
		say "$t not found: apt-get install $pkg (sh tests/install-deps.sh installs the tests' packages)"
		exit 77
	done
}

# slurmd (22.05) starts its cgroup plugin whatever ProctrackType says, and
# refuses to start where no cgroup filesystem is mounted ("No filesystem
# mounted on /sys/fs/cgroup"): a minbase root run by pivot_root, as
# tests/fresh-debian.sh runs the suite, has sysfs but no cgroups in it.
# Mount them there as the kernel has them for this process (cgroup v1
# controllers, or cgroup2: slurmd refuses a mix of the two); they live and
# die with that root's mount namespace.  A machine that cannot is exit 77.
# They are left mounted: another cluster may be using them.
mount_cgroups() {
	if ! grep -qv '^0::' /proc/self/cgroup; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup
		return
	fi
	mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup || return 1
	for c in $(sed -n 's/^[0-9]*:\([^:]*\):.*/\1/p' /proc/self/cgroup); do
		d=/sys/fs/cgroup/${c#name=}
		case $c in name=*) o=none,$c ;; *) o=$c ;; esac
		mkdir -p "$d" && mount -t cgroup -o "$o" cgroup "$d" || return 1
	done
}

cgroup_ready() {
	grep -q ' /sys/fs/cgroup ' /proc/mounts && return 0
	if mount_cgroups 2>/dev/null; then
		say "up: mounted the cgroups on /sys/fs/cgroup, which slurmd needs"
		return 0
	fi
	say "no cgroup filesystem on /sys/fs/cgroup, and it cannot be mounted: slurmd will not start"
	exit 77
}

# A private munged: key, socket, pid, log and seed all in $dir/munge.
start_munge() {
	m=$dir/munge
	# munged wants its socket's directory searchable by all, its key unreadable.
	mkdir -p "$m" && chmod 0755 "$m" || fail_up "cannot make $m"
	dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 2>/dev/null && chmod 0400 "$m/munge.key" ||
		fail_up "cannot write the munge key $m/munge.key"
	setsid munged --foreground --key-file="$m/munge.key" --socket="$m/munge.sock" \
		--pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" \
		</dev/null >>"$m/munged.out" 2>&1 &
	munged_pid=$!
	echo "munged $munged_pid" >>"$dir/pids"
	wait_for 10 munge_works ||
		fail_up "munged did not answer on $m/munge.sock within 10 s: $(log_tail "$m/munged.log") $(log_tail "$m/munged.out" 2)"
}

# munge and unmunge through it work; a munged that exited fails up at once.
munge_works() {
	alive "$munged_pid" munged ||
		fail_up "munged exited: $(log_tail "$dir/munge/munged.out" 2)"
	munge -n -S "$dir/munge/munge.sock" 2>/dev/null | unmunge -S "$dir/munge/munge.sock" >/dev/null 2>&1
}

# N TCP ports that nothing listens on or uses now, below the ephemeral range
# (outgoing connections take theirs from it), from a random start: two
# clusters set up at once rarely collide, and a collision fails up loudly.
pick_ports() {
	used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u)
	p=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 10000))
	got=
	n=0
	while [ "$n" -lt "$1" ] && [ "$p" -lt 32000 ]; do
		if ! echo "$used" | grep -qx "$p"; then
			got="$got $p"
			n=$((n + 1))
		fi
		p=$((p + 1))
	done
	echo "$got"
}

write_conf() {
	ctld_port=$1
	shift
	host=$(hostname)
	# Job ids of its own (from the port): two clusters running at once give
	# their jobs different SLURM_JOB_IDs, which is what selects a job's
	# processes in a PID namespace they share.
	first_job=$((ctld_port * 1000))
	cat >"$conf" <<EOF
# The tests' own Slurm cluster (tests/slurm-cluster.sh); SLURM_CONF=$conf
ClusterName=pystrobe
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/%n.log
SlurmctldDebug=info
SlurmdDebug=info
FirstJobId=$first_job
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
LaunchParameters=use_interactive_step
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
EOF
	k=1
	nodes=
	for port; do
		echo "NodeName=hnode$k NodeHostname=$host NodeAddr=127.0.0.$((k + 1)) Port=$port CPUs=64 State=UNKNOWN" >>"$conf"
		nodes="$nodes${nodes:+,}hnode$k"
		k=$((k + 1))
	done
	echo "PartitionName=test Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16" >>"$conf"
}

start_daemons() {
	SLURM_CONF=$conf
	export SLURM_CONF
	setsid slurmctld -D -i -f "$conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
	echo "slurmctld $!" >>"$dir/pids"
	k=1
	while [ "$k" -le "$nodes_n" ]; do
		setsid slurmd -D -N "hnode$k" -f "$conf" </dev/null >>"$dir/log/hnode$k.out" 2>&1 &
		echo "slurmd:hnode$k $!" >>"$dir/pids"
		k=$((k + 1))
	done
}

# Every daemon of $dir/pids still running; else fail naming it and its log.
daemons_alive() {
	while read -r name pid; do
		alive "$pid" && continue
		case $name in
		munged) log=$dir/munge/munged.log ;;
		slurmctld) log=$dir/log/slurmctld.log ;;
		*) log=$dir/log/${name#slurmd:}.log ;;
		esac
		[ -s "$log" ] || log=${log%.log}.out
		fail_up "$name (pid $pid) exited: $log: $(log_tail "$log")"
	done <"$dir/pids"
}

all_idle() {
	daemons_alive
	states=$(timeout 10 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u)
	[ "$(echo "$states" | grep -c ' idle$')" -eq "$nodes_n" ]
}

# Once process $owner is gone (or a zombie), `down $dir`, and DIR removed
# if that went well: from the start, so that an up killed half-way is
# undone too.  A down run otherwise kills it first.
start_watchdog() {
	[ -n "$owner" ] || return 0
	setsid sh -c 'while kill -0 "$1" 2>/dev/null && [ "$(sed "s/^.*) //" /proc/$1/stat 2>/dev/null | cut -c1)" != Z ]; do sleep 1; done; sh "$2" down "$3" && rm -rf "$3"' \
		watchdog "$owner" "$script" "$dir" </dev/null >>"$dir/log/watchdog.log" 2>&1 &
	echo "$!" >"$dir/run/watchdog.pid"
}

up() {
	[ $# -ge 2 ] || usage
	dir=$1
	nodes_n=$2
	owner=${3:-}
	case $nodes_n$owner in '' | *[!0-9]*) usage ;; esac
	[ "$nodes_n" -ge 1 ] && [ "$nodes_n" -le 64 ] || usage
	check_can_run
	cgroup_ready
	mkdir -p "$dir" || { say "up: cannot make $dir"; exit 1; }
	dir=$(cd "$dir" && pwd)
	[ -z "$(ls -A "$dir")" ] || { say "up: $dir is not empty (a cluster of its own needs a fresh directory)"; exit 1; }
	# munged wants every directory above its socket searchable by all.
	chmod 0755 "$dir" || { say "up: cannot chmod $dir"; exit 1; }
	conf=$dir/slurm.conf
	start=$(date +%s)
	mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log" || fail_up "cannot make directories in $dir"
	: >"$dir/pids"
	start_watchdog
	start_munge
	ports=$(pick_ports $((nodes_n + 1)))
	[ "$(echo $ports | wc -w)" -eq $((nodes_n + 1)) ] || fail_up "no $((nodes_n + 1)) free TCP ports between 20000 and 32000"
	# shellcheck disable=SC2086
	write_conf $ports
	start_daemons
	if ! wait_for "$up_s" all_idle; then
		bad=$(echo "$states" | grep -v ' idle$' | head -n 1)
		node=${bad%% *}
		if [ -n "$node" ]; then
			fail_up "node $node is '${bad#* }', not idle, after $up_s s: $dir/log/$node.log: $(log_tail "$dir/log/$node.log")"
		fi
		fail_up "sinfo shows no nodes after $up_s s: $dir/log/slurmctld.log: $(log_tail "$dir/log/slurmctld.log")"
	fi
	printf 'export SLURM_CONF=%s\n' "$conf" >"$dir/env"
	say "up: $nodes_n nodes idle in $(($(date +%s) - start)) s; . $dir/env"
}

# --- down ------------------------------------------------------------------

# The jobs' processes: the cluster's, less its daemons and slurmctld's
# slurmscriptd (which ends with it).
job_procs() {
	daemons=" $(daemon_pids | tr '\n' ' ')"
	for p in $(cluster_procs); do
		case $daemons in *" $p "*) continue ;; esac
		alive "$p" slurmscriptd || echo "$p"
	done
}

no_job_procs() { [ -z "$(job_procs)" ]; }

no_jobs() {
	[ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && [ -z "$(job_procs)" ]
}

# The daemons: those of the pids file, and any munged, slurmctld or slurmd
# whose command line names $dir/ (the pids file may be lost, DIR removed).
daemon_pids() {
	{
		while read -r name pid; do
			alive "$pid" "${name%%:*}" && echo "$pid"
		done 2>/dev/null <"$dir/pids"
		for c in $(grep -lzF -- "$dir/" /proc/[0-9]*/cmdline 2>/dev/null); do
			p=${c#/proc/}
			p=${p%/cmdline}
			case $({ tr '\0' ' ' <"$c"; } 2>/dev/null) in
			munged*" --socket=$dir/"* | slurmctld*" $dir/"* | slurmd*" $dir/"*) alive "$p" && echo "$p" ;;
			esac
		done
	} | sort -un
}

daemons_gone() { [ -z "$(daemon_pids)" ]; }

# TERM to each daemon, then KILL to what is left, each wait bounded.
stop_daemons() {
	for sig in TERM KILL; do
		pids=$(daemon_pids)
		[ -z "$pids" ] && return 0
		# shellcheck disable=SC2086
		kill -s "$sig" $pids 2>/dev/null
		wait_for 10 daemons_gone && return 0
	done
}

down() {
	[ $# -eq 1 ] || usage
	case $1 in /*) ;; *) [ -d "$1" ] || { say "down: $1 is missing: give its absolute path"; exit 2; } ;; esac
	# A DIR removed under a running cluster: its processes still name it.
	dir=$(cd "$1" 2>/dev/null && pwd) || dir=${1%/}
	# Again with the mark in its environment from exec on, so that its own
	# forks (subshells) are not taken for the cluster's processes.
	[ "${PYSTROBE_SLURM_DOWN:-}" = "$dir" ] ||
		PYSTROBE_SLURM_DOWN=$dir exec sh "$script" down "$dir"
	conf=$dir/slurm.conf
	SLURM_CONF=$conf
	export SLURM_CONF
	start=$(date +%s)
	w=$(cat "$dir/run/watchdog.pid" 2>/dev/null)
	[ -n "$w" ] && [ "$w" != "$PPID" ] && alive "$w" watchdog && kill "$w" 2>/dev/null
	if [ -f "$dir/pids" ] && alive "$(awk '$1 == "slurmctld" { print $2 }' "$dir/pids")" slurmctld; then
		timeout 10 scancel --user=root >/dev/null 2>&1
		wait_for 15 no_jobs
	fi
	for sig in TERM KILL; do
		left=$(job_procs)
		[ -z "$left" ] && break
		# shellcheck disable=SC2086
		kill -s $sig $left 2>/dev/null
		wait_for 5 no_job_procs
	done
	stop_daemons
	# shellcheck disable=SC2046
	left=$(echo $(daemon_pids) $(cluster_procs) | tr ' ' '\n' | sort -un | tr '\n' ' ')
	if [ -n "${left% }" ]; then
		# shellcheck disable=SC2086
		say "down: still running after $(($(date +%s) - start)) s: $(describe $left)"
		exit 1
	fi
	say "down: $dir stopped in $(($(date +%s) - start)) s"
}

case ${1:-} in
up) shift; up "$@" ;;
down) shift; down "$@" ;;
*) usage ;;
esac
