#!/usr/bin/env bash
# Runs one command inside a memory cgroup of its own with a hard limit and no
# swap, and reports what the kernel charged it: how a run would fare on a
# machine (or container) with only that much memory, measured by the kernel
# rather than by the program.
#
#   bench/cgroup_run.sh LIMIT_BYTES REPORT -- COMMAND [ARG...]
#
# The cgroup is a child of this process's own memory cgroup (so every limit
# above it still applies; on cgroup v2, where that one holds processes and so
# cannot give a child the memory controller, a child of its parent), created
# fresh, and removed when the command ends:
#   cgroup v1 (the `memory` controller's hierarchy): memory.limit_in_bytes
#     and memory.memsw.limit_in_bytes (when swap is accounted) set to
#     LIMIT_BYTES, memory.swappiness 0; peak from memory.max_usage_in_bytes,
#     OOM kills from memory.oom_control's oom_kill;
#   cgroup v2 (unified; the parent must have the memory controller in its
#     cgroup.subtree_control, or let it be enabled): memory.max LIMIT_BYTES,
#     memory.swap.max 0; peak from memory.peak (Linux 5.19+), OOM kills from
#     memory.events' oom_kill.
# The peak counts what the kernel charges the cgroup: the program's memory
# and the page cache of files it first reads or writes (pages already cached
# by another cgroup stay charged there). Read the files beforehand from
# outside to charge only the program.
#
# REPORT gets one `key value` line each: exit (the command's status), peak
# (bytes), oom_kills, limit (bytes, as the kernel kept it), cgroup (its
# path). The script exits with the command's status; 2 for bad arguments; 6
# with one line on stderr saying why when no memory cgroup can be made here
# (not root, no memory controller, a v2 parent that cannot delegate it, a
# cgroup the command cannot be moved into: then no REPORT is written).
# Linux only; needs root (or a delegated cgroup).
set -uo pipefail

die() {
  echo "cgroup_run.sh: $2" >&2
  exit "$1"
}
if [ $# -lt 4 ] || [ "$3" != "--" ]; then die 2 "usage: cgroup_run.sh LIMIT_BYTES REPORT -- COMMAND [ARG...]"; fi
limit=$1
report=$2
shift 3
[[ "$limit" =~ ^[1-9][0-9]{0,18}$ ]] || die 2 "LIMIT_BYTES \"$limit\" is not a byte count (e.g. $((4 << 30)) for 4 GiB)"

# The mount point of a hierarchy (fstype, and a super option it must have) and its root.
mount_of() {
  awk -v fs="$1" -v opt="$2" '{
    for (i = 7; $i != "-"; i++) {}
    if ($(i + 1) != fs) next
    if (opt != "" && ("," $(i + 3) ",") !~ ("," opt ",")) next
    print $5, $4; exit
  }' /proc/self/mountinfo
}
# This process's path in a hierarchy, relative to its mount's root.
own_path() {  # own_path CGROUP_FIELD MOUNT_ROOT
  local p
  p=$(awk -F: -v f="$1" '("," $2 ",") ~ ("," f ",") { sub(/^[^:]*:[^:]*:/, ""); print; exit }' /proc/self/cgroup)
  [ -n "$p" ] || return 1
  [ "$2" = / ] || p=${p#"$2"}
  echo "${p%/}"
}

name="k3-cgroup-run-$$"
read -r v1_mount v1_root <<< "$(mount_of cgroup memory)"
read -r v2_mount v2_root <<< "$(mount_of cgroup2 "")"
version=""
if [ -n "$v1_mount" ] && parent=$v1_mount$(own_path memory "$v1_root"); then
  version=v1
elif [ -n "$v2_mount" ] && parent=$v2_mount$(own_path "" "$v2_root"); then
  grep -qw memory "$parent/cgroup.controllers" 2> /dev/null ||
    die 6 "cgroup v2 $parent has no memory controller to give a child (cgroup.controllers: $(cat "$parent/cgroup.controllers" 2>&1))"
  if ! grep -qw memory "$parent/cgroup.subtree_control" &&
    ! err=$( (echo +memory > "$parent/cgroup.subtree_control") 2>&1); then
    # A v2 cgroup with processes of its own cannot give its children a
    # controller (no internal processes): then a sibling, where the parent
    # gives it (systemd's slices do).
    if [ "$parent" != "$v2_mount" ] && grep -qw memory "${parent%/*}/cgroup.subtree_control" 2> /dev/null; then
      parent=${parent%/*}
    else
      die 6 "cannot enable the memory controller for children of cgroup v2 $parent: ${err##*: } (a cgroup with processes of its own cannot, and its parent does not give it; run inside a delegated one, e.g. systemd-run --scope -p Delegate=yes)"
    fi
  fi
  version=v2
else
  die 6 "no cgroup memory controller is mounted (/proc/self/mountinfo has neither a cgroup v1 memory hierarchy nor cgroup v2)"
fi
dir=$parent/$name
err=$(mkdir "$dir" 2>&1) || die 6 "cannot create the memory cgroup $dir: ${err##*: }"
cleanup() { rmdir "$dir" 2> /dev/null; }
trap cleanup EXIT

# set FILE VALUE: the write must take (a limit silently not set would measure nothing).
set_file() {
  local err
  err=$( (echo "$2" > "$dir/$1") 2>&1) || die 6 "cannot set $dir/$1 to $2: ${err##*: }"
}
if [ $version = v1 ]; then
  set_file memory.limit_in_bytes "$limit"
  # Swap is accounted only with swapaccount=1: without it there is no memsw file and swappiness 0 keeps pages in RAM.
  [ -e "$dir/memory.memsw.limit_in_bytes" ] && set_file memory.memsw.limit_in_bytes "$limit"
  set_file memory.swappiness 0
  kept=$(cat "$dir/memory.limit_in_bytes")
else
  set_file memory.max "$limit"
  [ -e "$dir/memory.swap.max" ] && set_file memory.swap.max 0
  [ -e "$dir/memory.peak" ] || die 6 "cgroup v2 $dir has no memory.peak (Linux 5.19 or later reports the peak)"
  kept=$(cat "$dir/memory.max")
fi

# The child enters the cgroup, then becomes the command: everything it starts is charged there.
sh -c 'echo $$ > "$1/cgroup.procs" || exit 126; shift; exec "$@"' sh "$dir" "$@"
status=$?
# 126: the child could not enter the cgroup (a container may let root make
# one but not move a process into it), or the command could not be run.
[ $status = 126 ] && die 6 "could not run the command inside the memory cgroup $dir (moving it there or executing it failed)"

if [ $version = v1 ]; then
  peak=$(cat "$dir/memory.max_usage_in_bytes")
  ooms=$(awk '$1 == "oom_kill" { print $2 }' "$dir/memory.oom_control")
else
  peak=$(cat "$dir/memory.peak")
  ooms=$(awk '$1 == "oom_kill" { print $2 }' "$dir/memory.events")
fi
printf 'exit %s\npeak %s\noom_kills %s\nlimit %s\ncgroup %s\n' "$status" "$peak" "${ooms:-0}" "$kept" "$dir" > "$report" ||
  die 5 "cannot write the report $report"
exit "$status"
