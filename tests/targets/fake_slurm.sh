#!/bin/bash
# A Slurm node's process tree, faked for tests/live/check_dump_node.c:
#
#   fake_slurm.sh NODE JOB CMD...
#
# runs CMD, with no Slurm variable in its environment, as the child of a
# process named "slurmstepd: [JOB.0]", itself the child of one whose
# command line is "slurmd ... -D -N NODE ...": the ancestry pystrobe
# follows when a process's environment does not name its job.  Each level
# waits for the one below; the test kills them all.
self=$(readlink -f "$0")
case $1 in
--stepd)
	shift
	env -u SLURM_JOB_ID -u SLURM_STEP_ID -u SLURMD_NODENAME -u SLURM_PROCID \
		-u SLURM_LOCALID -u SLURM_NTASKS -u RANK -u LOCAL_RANK -u WORLD_SIZE "$@" &
	wait
	;;
-D)
	# As "slurmd SELF -D -N NODE JOB CMD...".
	job=$4
	shift 4
	(exec -a "slurmstepd: [$job.0]" bash "$self" --stepd "$@") &
	wait
	;;
*)
	node=$1
	shift
	exec -a slurmd bash "$self" -D -N "$node" "$@"
	;;
esac
