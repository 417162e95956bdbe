// SPDX-License-Identifier: GPL-2.0
/*
 * Who may open the device: root and members of the group icfab, which
 * udev gives the nodes (packaging/60-icfab.rules) and the test VM too
 * (tools/vm/init.sh); the module's own mode is 0660, so that without
 * udev's rule only root may (docs/SECURITY.md). Run as root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "kselftest_harness.h"

#define DEV	"/dev/icfab0"

/*
 * In a child: become user 65534 with @ngroups supplementary groups
 * (@gid or none) and open the device. Returns the child's exit status:
 * 0 when it opened and INFO answered, errno of the open otherwise, 100+
 * when something else failed.
 */
static int open_as_nobody(gid_t gid, int ngroups)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 100;
	if (!pid) {
		struct icfab_info in;
		int fd;

		if (setgroups(ngroups, &gid) ||
		    setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(101);
		fd = open(DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(errno);
		memset(&in, 0, sizeof(in));
		_exit(ioctl(fd, ICFAB_IOC_INFO, &in) ? 102 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 103;
	return WEXITSTATUS(status);
}

TEST(the_node_is_root_icfab_0660)
{
	struct group *g = getgrnam("icfab");
	struct stat st;

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, stat(DEV, &st));
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(g->gr_gid, st.st_gid);
	EXPECT_EQ(0660, st.st_mode & 07777);
}

TEST(a_member_of_icfab_may_open)
{
	struct group *g = getgrnam("icfab");

	ASSERT_NE(NULL, g);
	EXPECT_EQ(0, open_as_nobody(g->gr_gid, 1));
}

TEST(a_user_outside_icfab_may_not)
{
	EXPECT_EQ(EACCES, open_as_nobody(0, 0));
}

TEST_HARNESS_MAIN
