# shellcheck shell=sh
# record's summary line, read by exact patterns, for the benches written in
# shell (bench/record_summary.py is the same for those in Python):
#
#   . "$here/summary.sh"
#   summary FILE      (FILE: record's standard error)
#
# sets sum_samples (thread stacks), sum_rounds (rounds: each samples every
# thread once, so with --idle the samples are a multiple of them), sum_secs,
# sum_hz (rounds a second, as record prints it), and, 0 or empty where the
# line has none: sum_pause ("median_us p99_us max_ms" of the target's
# pauses), sum_lag (times sampling fell behind), sum_lag_ms (the
# latest it was, in ms), sum_skipped (rounds it skipped), sum_late (samples of threads not stopped
# in time under --native, counted without native frames).
#
# A line that is not in the form read here, or whose figures disagree (its
# Hz not its rounds over its seconds), ends the bench with a line on
# standard error and exit status 1: a bench fails rather than print a
# figure read from the wrong field.

summary_fail() {	# FILE WHY
	echo "bench: $2 in $1 (record's summary line changed? fix bench/summary.sh):" >&2
	grep '^pystrobe: ' "$1" | tail -n 3 | sed 's/^/    /' >&2
	exit 1
}

summary() {	# FILE
	sum_line=$(grep '^pystrobe: [0-9][0-9]* samples\{0,1\} from ' "$1" | tail -n 1) || true
	[ -n "$sum_line" ] || summary_fail "$1" "no \"pystrobe: N samples from R rounds\" line"
	# shellcheck disable=SC2046
	set -- "$1" $(printf '%s\n' "$sum_line" | sed -n 's/^pystrobe: \([0-9][0-9]*\) samples\{0,1\} from \([0-9][0-9]*\) rounds in \([0-9][0-9]*\.[0-9][0-9]\) s, \([0-9][0-9]*\.[0-9]\) Hz[ ,;].*$/\1 \2 \3 \4/p')
	[ $# -eq 5 ] || summary_fail "$1" "no \"N samples from R rounds in E s, H Hz\""
	sum_samples=$2 sum_rounds=$3 sum_secs=$4 sum_hz=$5
	awk -v r="$3" -v s="$4" -v h="$5" 'BEGIN {
		d = h * s - r; if (d < 0) d = -d
		exit !(d <= 0.01 * r + h * 0.006 + 1) }' ||
		summary_fail "$1" "$5 Hz is not $3 rounds in $4 s"
	sum_pause= sum_lag=0 sum_lag_ms= sum_skipped=0 sum_late=0
	case $sum_line in *"target paused "*)
		sum_pause=$(printf '%s\n' "$sum_line" | sed -n 's/.*, target paused [0-9][0-9]* us per round (median \([0-9][0-9]*\) us, p99 \([0-9][0-9]*\) us, at most \([0-9][0-9]*\.[0-9]\) ms).*/\1 \2 \3/p')
		[ -n "$sum_pause" ] || summary_fail "$1" "a pause not in the form \"target paused N us per round (median N us, p99 N us, at most X ms)\""
	esac
	case $sum_line in *"sampling fell behind "*)
		sum_lag=$(printf '%s\n' "$sum_line" | sed -n 's/.*, sampling fell behind \([0-9][0-9]*\) times\{0,1\} (up to \([0-9][0-9]*\.[0-9]\) ms late, \([0-9][0-9]*\) rounds\{0,1\} skipped.*/\1 \2 \3/p')
		[ -n "$sum_lag" ] || summary_fail "$1" "a lag not in the form \"fell behind N times (up to X ms late, K rounds skipped\""
		sum_skipped=${sum_lag##* } sum_lag_ms=${sum_lag#* } sum_lag=${sum_lag%% *}
		sum_lag_ms=${sum_lag_ms% *}
	esac
	# With --native, a thread not stopped in time is read running, its
	# sample counted without native frames.
	case $sum_line in *" without native frames"*)
		sum_late=$(printf '%s\n' "$sum_line" | sed -n 's/.*, \([0-9][0-9]*\) samples\{0,1\} without native frames (.*/\1/p')
		[ -n "$sum_late" ] || summary_fail "$1" "late threads not in the form \", N samples without native frames (\""
	esac
	return 0
}
