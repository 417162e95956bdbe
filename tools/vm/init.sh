#!/bin/busybox sh
# PID 1 of the icfab test VM (runs from the initramfs built by tools/vm/run).
#
# Protocol with the host (see tools/vm/run):
#   - kernel command line carries icfabvm_job=<host dir> and icfabvm_nonce=<id>;
#     the job dir (on the host, visible through the read-only root share)
#     holds "env" (sh assignments: MODE, KO, MODNAME, OUTDIR, ROWS, COLS)
#     and "cmd" (a sh script that cds, exports and execs the user command).
#   - virtio-serial ports named icfab.out / icfab.err carry the command's
#     stdout / stderr; icfab.ctl carries one-line records the host parses
#     (boot, modload, status, rmmod, taint, dmesg, msg, end).
#   - in shell mode the interactive shell runs on /dev/hvc0 (virtconsole).
# The kernel console (ttyS0) is only a log; nothing here is parsed from it.

export PATH=/bin:/sbin
/bin/busybox mkdir -p /bin /sbin /proc /sys /dev /host /scratch
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# Last resort when something fails before the control port exists: the
# message lands in the console log and the host reports "VM did not boot".
die_early() {
	echo "icfab-vm init: $*" > /dev/console
	poweroff -f
	sleep 5
	reboot -f
}

# Kernels that have virtio/fuse/overlay as modules get them from the
# initramfs, in dependency order (computed on the host).
if [ -f /modules.list ]; then
	while read -r m; do
		insmod "/lib/modules/$m.ko" || echo "icfab-vm init: insmod $m failed" > /dev/console
	done < /modules.list
fi

# Find the virtio-serial ports by the names the host gave them. Device
# probing may complete slightly after module load, so retry for a while.
port() {
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = "$1" ] && { echo "/dev/${p##*/}"; return 0; }
	done
	return 1
}
i=0
while ! CTLP=$(port icfab.ctl) || [ ! -c "$CTLP" ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && die_early "no control port (virtio_console missing?)"
	sleep 0.1
done
OUTP=$(port icfab.out) && ERRP=$(port icfab.err) || die_early "missing output ports"
# virtio ports can only be opened once; keep them open for the whole run.
exec 7> "$OUTP" 8> "$ERRP" 9> "$CTLP"

ctl() { echo "$*" >&9; }
msg() { echo "msg $*" >&9; }

finish() {
	ctl end
	sync
	poweroff -f
	sleep 5
	reboot -f
}

ctl "boot $(uname -r)"

JOB= NONCE=
for w in $(cat /proc/cmdline); do
	case "$w" in
	icfabvm_job=*) JOB=${w#icfabvm_job=} ;;
	icfabvm_nonce=*) NONCE=${w#icfabvm_nonce=} ;;
	esac
done
[ -n "$JOB" ] || { msg "no icfabvm_job= on the kernel command line"; finish; }

# The host's / read-only. Everything the tests use (shell, tools, the module
# file) comes from here; the initramfs only has busybox.
if ! mount -t virtiofs -o ro hostroot /host; then
	msg "cannot mount the virtiofs root share"; finish
fi
[ -f "/host$JOB/env" ] || { msg "job dir /host$JOB not visible in the VM"; finish; }
MODE= KO= MODNAME= OUTDIR= ROWS= COLS=
. "/host$JOB/env"
# Copy the command now: the job dir may be hidden once /tmp is remounted.
# /scratch is a tmpfs (not rootfs) because overlayfs needs xattrs upstairs.
mount -t tmpfs -o mode=755 tmpfs /scratch
cp "/host$JOB/cmd" /scratch/cmd || { msg "cannot read the command script"; finish; }

# Writable scratch space inside the read-only tree. /tmp is an overlay so the
# host's /tmp stays readable (modules and cwd may live there) while writes
# stay in VM memory; plain tmpfs if overlayfs is unavailable.
H=/host
mkdir -p /scratch/tmp-upper /scratch/tmp-work
if ! mount -t overlay overlay \
	-o "lowerdir=$H/tmp,upperdir=/scratch/tmp-upper,workdir=/scratch/tmp-work" "$H/tmp" 2>/dev/null; then
	msg "overlayfs unavailable: /tmp in the VM is an empty tmpfs"
	mount -t tmpfs -o mode=1777 tmpfs "$H/tmp"
fi
mount -t proc proc "$H/proc"
mount -t sysfs sysfs "$H/sys"
mount -t devtmpfs devtmpfs "$H/dev"
mkdir -p "$H/dev/pts" "$H/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$H/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$H/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$H/run"
mount -t debugfs debugfs "$H/sys/kernel/debug" || msg "cannot mount debugfs"
mount -t tracefs tracefs "$H/sys/kernel/tracing" || msg "cannot mount tracefs"
if [ -n "$OUTDIR" ]; then
	mkdir -p "$H$OUTDIR" 2>/dev/null
	if ! mount -t virtiofs outdir "$H$OUTDIR"; then
		msg "cannot mount the --out share at $OUTDIR"; finish
	fi
fi
mkdir -p "$H/run/icfab-vm"
cp /scratch/cmd "$H/run/icfab-vm/cmd"
hostname icfab-vm
# Loopback, for tests that rendezvous over TCP (torch's env:// and tcp://).
ip link set lo up 2>/dev/null || msg "cannot bring lo up"

# Runs a host tool inside the chroot with a clean environment.
inhost() {
	chroot "$H" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# Everything after this line in the kernel log belongs to this run; the dmesg
# check ignores what boot printed before it.
MARKER="icfab-vm: begin $NONCE"
echo "$MARKER" > /dev/kmsg

if [ -n "$KO" ]; then
	if ! inhost insmod "$KO" > /scratch/insmod.err 2>&1; then
		ctl "modload fail"
		while IFS= read -r l; do msg "insmod $KO: $l"; done < /scratch/insmod.err
		dmesg | sed -n "/$MARKER/,\$p" | sed 1d | tail -n 20 | while IFS= read -r l; do msg "dmesg: $l"; done
		finish
	fi
	ctl "modload ok"
else
	ctl "modload skip"
fi

# The group that may open /dev/icfabN, as the packages make it
# (packaging/icfab.sysusers, packaging/60-icfab.rules): the host's if it
# has one, else one made up here in a copy of /etc/group mounted over the
# host's. The nodes get it, and the command runs as root with it as its
# one supplementary group, so that the selftests that drop to user 65534
# stay members; run_tests.sh gives it to the nodes again after a test
# reloaded the module.
GID=$(inhost getent group icfab | cut -d: -f3)
if [ -z "$GID" ]; then
	GID=$(awk -F: 'BEGIN { g = 990 } { used[$3] = 1 }
		END { while (g in used) g--; print g }' "$H/etc/group")
	{ cp "$H/etc/group" /scratch/group &&
	  echo "icfab:x:$GID:" >> /scratch/group &&
	  mount -o bind /scratch/group "$H/etc/group"; } ||
		msg "cannot add the group icfab"
fi
for n in "$H"/dev/icfab*; do
	[ -c "$n" ] && chgrp "$GID" "$n" && chmod 0660 "$n"
done
RUNAS="/usr/bin/setpriv --groups $GID"

# The command runs in its own session, chrooted into the host tree, with a
# clean environment; the cmd script sets cwd and the ICFAB_* variables.
ctl "cmd start"
if [ "$MODE" = shell ]; then
	[ -n "$ROWS" ] && stty rows "$ROWS" cols "$COLS" < /dev/hvc0 2>/dev/null
	setsid -c chroot "$H" $RUNAS /usr/bin/env -i sh /run/icfab-vm/cmd \
		< /dev/hvc0 > /dev/hvc0 2>&1 7>&- 8>&- 9>&-
	rc=$?
else
	setsid chroot "$H" $RUNAS /usr/bin/env -i sh /run/icfab-vm/cmd \
		< /dev/null >&7 2>&8 7>&- 8>&- 9>&-
	rc=$?
fi
ctl "status $rc"

# Who holds the module: processes with its device open or mapped.
holders() {
	for p in /proc/[0-9]*; do
		if ls -l "$p/fd" 2>/dev/null | grep -q "/dev/$MODNAME" ||
		   grep -q "/dev/$MODNAME" "$p/maps" 2>/dev/null; then
			echo "${p#/proc/} $(cat "$p/comm" 2>/dev/null)"
		fi
	done
}

# Health checks. rmmod first: its exit path may itself warn or taint, and
# that must be seen by the taint and dmesg checks.
#
# The last process gone is not always the last reference gone: the
# kernel may drop a dead process's last file references from its own
# work (io_uring rings are torn down by a workqueue, and a file put from
# a kernel thread is closed later by delayed_fput). So rmmod waits up to
# 10 s for the count to reach 0; a leak or a process left behind keeps
# it up for longer, and then the count and the holders are named.
if [ -n "$KO" ]; then
	i=0
	while [ -r "/sys/module/$MODNAME/refcnt" ] &&
	      [ "$(cat "/sys/module/$MODNAME/refcnt")" != 0 ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ $i -gt 0 ] && [ $i -lt 100 ] &&
		msg "note: $MODNAME was still referenced after the command; its count reached 0 after about $((i / 10)).$((i % 10)) s"
	if inhost rmmod "$MODNAME" > /scratch/rmmod.err 2>&1; then
		ctl "rmmod ok"
	else
		ctl "rmmod fail"
		while IFS= read -r l; do msg "rmmod $MODNAME: $l"; done < /scratch/rmmod.err
		msg "rmmod $MODNAME: refcnt $(cat "/sys/module/$MODNAME/refcnt" 2>/dev/null) after 10 s;" \
			"holders: $(holders | tr '\n' ';')"
	fi
else
	ctl "rmmod skip"
fi

# Taint: O (4096, out-of-tree) and E (8192, unsigned) are expected for a
# locally built module; anything else means the kernel saw trouble.
t=$(cat /proc/sys/kernel/tainted)
if [ $((t & ~12288)) -eq 0 ]; then
	ctl "taint $t ok"
else
	ctl "taint $t fail"
fi

# dmesg: only lines after our marker. A missing marker means the log buffer
# wrapped, so the check cannot vouch for the run.
dmesg > /scratch/dmesg
if ! grep -qF "$MARKER" /scratch/dmesg; then
	ctl "dmesg fail"
	msg "dmesg marker lost (kernel log buffer overflowed); see the console log"
else
	sed -n "/$MARKER/,\$p" /scratch/dmesg | sed 1d > /scratch/dmesg.run
	if grep -E 'BUG:|WARNING:|UBSAN:|Oops|refcount|corruption|Poison|Redzone|lockup|stall' \
		/scratch/dmesg.run > /scratch/dmesg.bad; then
		ctl "dmesg fail"
		head -n 40 /scratch/dmesg.bad | while IFS= read -r l; do msg "dmesg: $l"; done
	else
		ctl "dmesg ok"
	fi
fi

[ -n "$OUTDIR" ] && umount "$H$OUTDIR" 2>/dev/null
finish
