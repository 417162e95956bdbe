// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd's log: stderr in the foreground and one-shot modes, syslog when
 * it runs as a daemon (systemd's journal picks syslog up, and stderr may
 * be closed or a terminal nobody reads).
 */
#include <stdio.h>
#include <syslog.h>

#include "icfabd.h"

static enum log_target log_target = LOG_TO_STDERR;
static int log_max_level = LOG_INFO;

void log_init(enum log_target target, int max_level)
{
	log_target = target;
	log_max_level = max_level;
	if (target == LOG_TO_SYSLOG)
		openlog("icfabd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

static const char *level_name(int level)
{
	switch (level) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error: ";
	case LOG_WARNING:
		return "warning: ";
	case LOG_DEBUG:
		return "debug: ";
	default:
		return "";
	}
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_max_level)
		return;
	va_start(ap, fmt);
	if (log_target == LOG_TO_SYSLOG) {
		vsyslog(level, fmt, ap);
	} else {
		fprintf(stderr, "icfabd: %s", level_name(level));
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
