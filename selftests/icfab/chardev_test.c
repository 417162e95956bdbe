// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/icfab0: the INFO ioctl, reserved-field and unknown-ioctl rules.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "kselftest_harness.h"

#define DEV "/dev/icfab0"

static int info(int fd, struct icfab_info *in)
{
	return ioctl(fd, ICFAB_IOC_INFO, in);
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", DEV, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, info_reports_abi_features_and_limits)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_EQ(ICFAB_ABI_VERSION, in.abi_version);
	/* Only bits this header knows, and at least the first two. */
	EXPECT_EQ(0, in.features & ~ICFAB_F_ALL);
	EXPECT_EQ(ICFAB_F_NETLINK | ICFAB_F_QUEUES,
		  in.features & (ICFAB_F_NETLINK | ICFAB_F_QUEUES));
	EXPECT_EQ(0, in.flags);
	EXPECT_EQ(0, in.fabric_id);
	EXPECT_EQ(ICFAB_TIME_VIRTUAL, in.time_mode);
	EXPECT_LE(1, in.dilation);

	/* Limits the later topology work relies on (TPU v4 pod, WSE). */
	EXPECT_LE(4096, in.limits.max_endpoints);
	EXPECT_LE(1024, in.limits.max_switches);
	EXPECT_LE(24, in.limits.max_colors);
	EXPECT_LE(1024, in.limits.max_queues);
	/* One context may drive every endpoint of a 1024-chip pod. */
	EXPECT_LE(1024, in.limits.max_attach);
	EXPECT_LE(1, in.limits.max_queue_depth);
	EXPECT_LE(in.limits.min_segment_size, in.segment_size);
	EXPECT_GE(in.limits.max_segment_size, in.segment_size);
	EXPECT_LE(in.dilation, in.limits.max_dilation);
	/* The largest transfer, at the current segment size. */
	EXPECT_LT(0, in.limits.max_xfer_segments);
	EXPECT_EQ((__u64)in.limits.max_xfer_segments * in.segment_size,
		  in.limits.max_xfer_bytes);

	/* The caps are there; their values are the module's parameters. */
	EXPECT_LT(0, in.limits.max_ctx_descs);
	EXPECT_LT(0, in.limits.max_uid_contexts);
	EXPECT_LT(0, in.limits.max_uid_mem_mb);
	EXPECT_LT(0, in.limits.max_uid_circuits);

	/* Reserved output is zero, so it can carry meaning later. */
	for (unsigned int i = 0; i < 2; i++)
		EXPECT_EQ(0, in.reserved[i]);
	EXPECT_EQ(0, in.limits.reserved[0]);
}

TEST_F(dev, info_overwrites_output_fields)
{
	struct icfab_info in;
	__u64 features;

	/* Garbage in out-only fields is not an error and does not survive. */
	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, info(self->fd, &in));
	features = in.features;
	memset(&in, 0, sizeof(in));
	in.abi_version = 0xdead;
	in.features = ~0ULL;
	in.limits.max_endpoints = 7;
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_EQ(ICFAB_ABI_VERSION, in.abi_version);
	EXPECT_EQ(features, in.features);
	EXPECT_NE(7, in.limits.max_endpoints);
}

TEST_F(dev, info_rejects_nonzero_flags)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	in.flags = 1;
	EXPECT_EQ(-1, info(self->fd, &in));
	EXPECT_EQ(EINVAL, errno);

	in.flags = 0x80000000u;
	EXPECT_EQ(-1, info(self->fd, &in));
	EXPECT_EQ(EINVAL, errno);
}

FIXTURE(reserved) {
	int fd;
};

FIXTURE_VARIANT(reserved) {
	unsigned int index;
};

FIXTURE_VARIANT_ADD(reserved, word0) { .index = 0 };
FIXTURE_VARIANT_ADD(reserved, word1) { .index = 1 };

FIXTURE_SETUP(reserved)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(reserved)
{
	close(self->fd);
}

TEST_F(reserved, nonzero_word_is_einval)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	in.reserved[variant->index] = 1ULL << 63;
	EXPECT_EQ(-1, info(self->fd, &in));
	EXPECT_EQ(EINVAL, errno);
	/* The rejected call wrote nothing back. */
	EXPECT_EQ(0, in.abi_version);
}

TEST_F(dev, info_bad_pointer_is_efault)
{
	void *unmapped;

	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);

	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	ASSERT_NE(MAP_FAILED, unmapped);
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_INFO, unmapped));
	EXPECT_EQ(EFAULT, errno);
	munmap(unmapped, 4096);
}

TEST_F(dev, info_read_only_buffer_is_efault)
{
	struct icfab_info *in;

	/* Readable and valid input, but the answer cannot be written. */
	in = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, in);
	EXPECT_EQ(-1, info(self->fd, in));
	EXPECT_EQ(EFAULT, errno);
	munmap(in, 4096);
}

FIXTURE(unknown_ioctl) {
	int fd;
};

FIXTURE_VARIANT(unknown_ioctl) {
	unsigned long cmd;
};

/* Same magic, unknown number. */
FIXTURE_VARIANT_ADD(unknown_ioctl, unknown_nr) {
	.cmd = _IOWR(ICFAB_IOC_MAGIC, 0x7f, struct icfab_info),
};
/* The INFO number with another size: an old or future struct layout. */
FIXTURE_VARIANT_ADD(unknown_ioctl, info_wrong_size) {
	.cmd = _IOWR(ICFAB_IOC_MAGIC, 0x00, __u64),
};
/* The INFO number with another direction. */
FIXTURE_VARIANT_ADD(unknown_ioctl, info_wrong_dir) {
	.cmd = _IOR(ICFAB_IOC_MAGIC, 0x00, struct icfab_info),
};
/* Another driver's magic. */
FIXTURE_VARIANT_ADD(unknown_ioctl, other_magic) {
	.cmd = _IOWR(0x42, 0x00, struct icfab_info),
};
FIXTURE_VARIANT_ADD(unknown_ioctl, zero) {
	.cmd = 0,
};

FIXTURE_SETUP(unknown_ioctl)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(unknown_ioctl)
{
	close(self->fd);
}

TEST_F(unknown_ioctl, is_enotty)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	EXPECT_EQ(-1, ioctl(self->fd, variant->cmd, &in));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(0, in.abi_version);
}

TEST_F(dev, read_write_are_not_supported)
{
	char buf[8];

	EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
}

TEST(many_opens_are_independent)
{
	struct icfab_info in;
	int fds[64];

	for (unsigned int i = 0; i < 64; i++) {
		fds[i] = open(DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fds[i]);
	}
	for (unsigned int i = 0; i < 64; i++) {
		memset(&in, 0, sizeof(in));
		EXPECT_EQ(0, info(fds[i], &in));
		EXPECT_EQ(ICFAB_ABI_VERSION, in.abi_version);
	}
	for (unsigned int i = 0; i < 64; i++)
		EXPECT_EQ(0, close(fds[i]));
}

TEST(unprivileged_user_can_query)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct icfab_info in;
		int fd;

		/* Drops every capability: no SECBIT_KEEP_CAPS. */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		fd = open(DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(11);
		memset(&in, 0, sizeof(in));
		if (info(fd, &in) || in.abi_version != ICFAB_ABI_VERSION)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
