// SPDX-License-Identifier: GPL-2.0
/*
 * sd_notify(3), the protocol only: one datagram with "READY=1" (or any
 * other state) to the AF_UNIX socket named by $NOTIFY_SOCKET. A leading
 * '@' names an abstract socket. Without the variable (not started by
 * systemd with Type=notify) there is nobody to tell: 0.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "icfabd.h"

int notify_systemd(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len, state_len = strlen(state);
	socklen_t sa_len;
	ssize_t sent;
	int fd, ret = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract: no trailing NUL either */
	sa_len = offsetof(struct sockaddr_un, sun_path) + len;
	if (path[0] == '/')
		sa_len++;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(fd, state, state_len, MSG_NOSIGNAL,
		      (struct sockaddr *)&sa, sa_len);
	if (sent < 0)
		ret = -errno;
	else if ((size_t)sent != state_len)
		ret = -EMSGSIZE;
	close(fd);
	return ret;
}
