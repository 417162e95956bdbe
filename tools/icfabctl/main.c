// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl: command-line client of the icfab module.
 *
 *	icfabctl [-d DEV] [-j] COMMAND [ARGS...]
 *
 * Commands register themselves in their files (ICFABCTL_COMMAND()).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "icfabctl.h"

static void print_help(FILE *f, const char *group)
{
	const struct icfabctl_cmd *c;

	fputs("Usage: icfabctl [options] COMMAND [ARGS...]\n"
	      "\n"
	      "Options:\n"
	      "  -d, --device DEV  device for 'info' (default "
	      ICFABCTL_DEFAULT_DEVICE ")\n"
	      "  -f, --fabric ID   fabric of the netlink commands (default 0)\n"
	      "  -j, --json        JSON output\n"
	      "  -h, --help        this help\n"
	      "\n"
	      "Commands:\n", f);
	icfabctl_for_each_cmd(c) {
		if (group && (!c->group || strcmp(c->group, group)))
			continue;
		fputs("  ", f);
		icfabctl_print_cmd_words(f, c);
		fprintf(f, "\n\t%s\n", c->help);
	}
}

static bool is_group(const char *name)
{
	const struct icfabctl_cmd *c;

	icfabctl_for_each_cmd(c)
		if (c->group && !strcmp(c->group, name))
			return true;
	return false;
}

static int cmd_help(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		    int argc, char **argv)
{
	(void)ctl;
	if (argc > 1)
		return icfabctl_usage_error(cmd, "too many arguments");
	if (argc && !is_group(argv[0]))
		return icfabctl_usage_error(cmd, "no command group '%s'",
					    argv[0]);
	print_help(stdout, argc ? argv[0] : NULL);
	return ICFABCTL_EXIT_OK;
}

ICFABCTL_COMMAND(NULL, "help", "[GROUP]", cmd_help,
		 "List the commands (of GROUP, e.g. \"fabric\").");


int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "device",	required_argument,	NULL, 'd' },
		{ "fabric",	required_argument,	NULL, 'f' },
		{ "json",	no_argument,		NULL, 'j' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct icfabctl ctl = { .device = ICFABCTL_DEFAULT_DEVICE };
	const struct icfabctl_cmd *c;
	const char *group = NULL;
	int opt;

	opterr = 0;	/* our own messages below */
	/* '+': options end at the command, so "fabric set 0 ..." is safe. */
	while ((opt = getopt_long(argc, argv, "+:d:f:jh", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			ctl.device = optarg;
			break;
		case 'f':
			if (icfabctl_parse_u32(optarg, &ctl.fabric)) {
				icfabctl_warn("invalid fabric id '%s'", optarg);
				return ICFABCTL_EXIT_USAGE;
			}
			ctl.fabric_given = true;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			print_help(stdout, NULL);
			return ICFABCTL_EXIT_OK;
		case ':':
			icfabctl_warn("option '%s' needs an argument",
				      argv[optind - 1]);
			fputs("Try 'icfabctl help'.\n", stderr);
			return ICFABCTL_EXIT_USAGE;
		default:
			if (optopt)
				icfabctl_warn("unknown option '-%c'", optopt);
			else
				icfabctl_warn("unknown option '%s'",
					      argv[optind - 1]);
			fputs("Try 'icfabctl help'.\n", stderr);
			return ICFABCTL_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;

	if (!argc) {
		print_help(stderr, NULL);
		return ICFABCTL_EXIT_USAGE;
	}

	if (is_group(argv[0])) {
		group = argv[0];
		argc--;
		argv++;
		if (!argc) {
			icfabctl_warn("%s: missing command", group);
			print_help(stderr, group);
			return ICFABCTL_EXIT_USAGE;
		}
	}

	icfabctl_for_each_cmd(c) {
		if ((group ? c->group && !strcmp(c->group, group) : !c->group) &&
		    !strcmp(c->name, argv[0]))
			return c->handler(&ctl, c, argc - 1, argv + 1);
	}

	if (group)
		icfabctl_warn("unknown command '%s %s'", group, argv[0]);
	else
		icfabctl_warn("unknown command '%s'", argv[0]);
	fputs("Try 'icfabctl help'.\n", stderr);
	return ICFABCTL_EXIT_USAGE;
}
