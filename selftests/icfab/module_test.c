// SPDX-License-Identifier: GPL-2.0
/*
 * Module lifecycle: load and unload, init unwinding, parameters, and
 * refusing to unload while the device is open.
 *
 * Needs the path of icfab.ko in $ICFAB_KO (the VM runner sets it) and the
 * module loaded on entry; every test leaves it loaded with defaults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "genl.h"
#include "kselftest_harness.h"

static int load(const char *params)
{
	const char *ko = getenv("ICFAB_KO");
	int fd, ret;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "icfab", O_NONBLOCK) ? -errno : 0;
}

static int dev_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static int family_registered(void)
{
	struct genl_sock gs;
	int err;

	if (genl_open(&gs))
		return -1;
	err = genl_resolve(&gs, ICFAB_GENL_NAME);
	genl_close(&gs);
	return err == 0;
}

static int info_ok(const char *path, uint32_t id)
{
	struct icfab_info in;
	int fd, ok;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	memset(&in, 0, sizeof(in));
	ok = !ioctl(fd, ICFAB_IOC_INFO, &in) &&
	     in.abi_version == ICFAB_ABI_VERSION && in.fabric_id == id;
	close(fd);
	return ok;
}

FIXTURE(mod) {
	int unused;
};

FIXTURE_SETUP(mod)
{
	if (!getenv("ICFAB_KO"))
		SKIP(return, "ICFAB_KO is not set: run under tools/vm/run");
	ASSERT_TRUE(dev_exists("/dev/icfab0"))
		TH_LOG("the module must be loaded on entry");
}

FIXTURE_TEARDOWN(mod)
{
	/* Leave the module loaded with its defaults, whatever happened. */
	if (!dev_exists("/dev/icfab0") || dev_exists("/dev/icfab1")) {
		unload();
		EXPECT_EQ(0, load(""));
	}
}

/*
 * A load and an unload take about 0.4 s in a TCG guest (debugfs, the
 * paced-mode workqueue); 100 of them overran the harness's default 30 s
 * on a loaded host, which left the module unloaded for every later test.
 */
TEST_F_TIMEOUT(mod, load_unload_100_times, 300)
{
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, unload()) TH_LOG("unload %d", i);
		ASSERT_FALSE(dev_exists("/dev/icfab0"));
		ASSERT_EQ(0, family_registered());

		ASSERT_EQ(0, load("")) TH_LOG("load %d", i);
		ASSERT_TRUE(dev_exists("/dev/icfab0"));
		ASSERT_EQ(1, family_registered());
		ASSERT_TRUE(info_ok("/dev/icfab0", 0));
	}
}

TEST_F(mod, unload_is_refused_while_open)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_TRUE(info_ok("/dev/icfab0", 0));
	close(fd);
	/* The last close drops the reference: unloading now works. */
	EXPECT_EQ(0, unload());
	EXPECT_EQ(0, load(""));
}

FIXTURE(init_fault) {
	int unused;
};

FIXTURE_VARIANT(init_fault) {
	const char *params;
	int err;
};

/* Injected failures at each init step must unwind every earlier step. */
FIXTURE_VARIANT_ADD(init_fault, at_netlink) {
	.params = "fail_init=1", .err = -EIO,
};
FIXTURE_VARIANT_ADD(init_fault, at_chardev) {
	.params = "fail_init=2", .err = -EIO,
};
FIXTURE_VARIANT_ADD(init_fault, at_chardev_of_fabric_4) {
	.params = "fail_init=2 nr_fabrics=4", .err = -EIO,
};
/* Parameters out of range are refused before anything is created. */
FIXTURE_VARIANT_ADD(init_fault, zero_fabrics) {
	.params = "nr_fabrics=0", .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(init_fault, too_many_fabrics) {
	.params = "nr_fabrics=9", .err = -EINVAL,
};

FIXTURE_SETUP(init_fault)
{
	if (!getenv("ICFAB_KO"))
		SKIP(return, "ICFAB_KO is not set: run under tools/vm/run");
	ASSERT_EQ(0, unload());
}

FIXTURE_TEARDOWN(init_fault)
{
	if (!dev_exists("/dev/icfab0"))
		EXPECT_EQ(0, load(""));
}

TEST_F(init_fault, leaves_nothing_behind)
{
	EXPECT_EQ(variant->err, load(variant->params));
	EXPECT_FALSE(dev_exists("/dev/icfab0"));
	EXPECT_FALSE(dev_exists("/dev/icfab1"));
	EXPECT_EQ(0, family_registered());

	/* A clean load still works afterwards. */
	ASSERT_EQ(0, load(""));
	EXPECT_TRUE(info_ok("/dev/icfab0", 0));
	EXPECT_EQ(1, family_registered());
}

TEST_F(mod, several_fabrics)
{
	static const char *const devs[] = {
		"/dev/icfab0", "/dev/icfab1", "/dev/icfab2", "/dev/icfab3",
	};

	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load("nr_fabrics=4"));
	for (int i = 0; i < 4; i++) {
		EXPECT_TRUE(info_ok(devs[i], i)) TH_LOG("%s", devs[i]);
	}
	EXPECT_FALSE(dev_exists("/dev/icfab4"));
	ASSERT_EQ(0, unload());
	for (int i = 0; i < 4; i++)
		EXPECT_FALSE(dev_exists(devs[i]));
	ASSERT_EQ(0, load(""));
}

TEST_HARNESS_MAIN
