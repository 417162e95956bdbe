// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl: messages, number parsing, names, and icfab values in JSON
 * (through lib/json.c).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include <icfab/names.h>
#include "icfabctl.h"

/* "icfabctl: <message>" on stderr, after what stdout holds; no newline. */
static void vmessage(const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs("icfabctl: ", stderr);
	vfprintf(stderr, fmt, ap);
}

void icfabctl_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int icfabctl_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	return ICFABCTL_EXIT_ERROR;
}

void icfabctl_print_cmd_words(FILE *f, const struct icfabctl_cmd *cmd)
{
	if (cmd->group)
		fprintf(f, "%s ", cmd->group);
	fputs(cmd->name, f);
	if (cmd->args)
		fprintf(f, " %s", cmd->args);
}

void icfabctl_print_synopsis(FILE *f, const struct icfabctl_cmd *cmd)
{
	fputs("icfabctl [options] ", f);
	icfabctl_print_cmd_words(f, cmd);
	fputc('\n', f);
}

int icfabctl_usage_error(const struct icfabctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd) {
		fputs("usage: ", stderr);
		icfabctl_print_synopsis(stderr, cmd);
	}
	return ICFABCTL_EXIT_USAGE;
}

/*
 * Decimal, or hexadecimal with a 0x prefix. No sign, no white space, no
 * trailing characters, nothing above UINT32_MAX. (A leading 0 does not
 * mean octal.)
 */
int icfabctl_parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v;
	int base = 10;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!isxdigit((unsigned char)s[0]))
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno == ERANGE || v > UINT32_MAX)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *icfabctl_time_mode_name(uint32_t mode)
{
	if (mode < ARRAY_SIZE(icfab_time_mode_names))
		return icfab_time_mode_names[mode];
	return NULL;
}

int icfabctl_time_mode_parse(const char *s, uint32_t *out)
{
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(icfab_time_mode_names); i++) {
		if (icfab_time_mode_names[i] &&
		    !strcmp(s, icfab_time_mode_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Calls fn for the name of every bit set in features. */
static void for_each_feature(uint64_t features,
			     void (*fn)(const char *name, void *arg), void *arg)
{
	const char *name;
	char buf[16];
	int bit;

	for (bit = 0; bit < 64; bit++) {
		if (!(features & (1ULL << bit)))
			continue;
		name = icfab_feature_name(1ULL << bit);
		if (!name) {
			snprintf(buf, sizeof(buf), "bit%d", bit);
			name = buf;
		}
		fn(name, arg);
	}
}

static void print_feature(const char *name, void *arg)
{
	fprintf(arg, "%s ", name);
}

void icfabctl_print_features(FILE *f, uint64_t features)
{
	if (!features)
		fputs("none ", f);
	for_each_feature(features, print_feature, f);
	fprintf(f, "(%#" PRIx64 ")", features);
}

/* Quantities */

/*
 * v in the largest unit it is at least one of, with up to two decimals,
 * trailing zeros dropped: "50 GB/s", "12.5 GB/s", "1.33 us". Each of
 * the @n units is @base times the one before.
 */
static const char *fmt_scaled(char *buf, size_t len, uint64_t v,
			      uint64_t base, const char *const *units,
			      size_t n)
{
	uint64_t div = 1, q, r, frac;
	size_t i = 0;

	while (i + 1 < n && v / div >= base) {
		div *= base;
		i++;
	}
	q = v / div;
	r = v % div;
	frac = (r * 100 + div / 2) / div;
	if (frac >= 100) {
		q++;
		frac = 0;
	}
	if (!frac)
		snprintf(buf, len, "%" PRIu64 " %s", q, units[i]);
	else if (frac % 10 == 0)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", q, frac / 10,
			 units[i]);
	else
		snprintf(buf, len, "%" PRIu64 ".%02" PRIu64 " %s", q, frac,
			 units[i]);
	return buf;
}

const char *icfabctl_fmt_bandwidth(char *buf, size_t len, uint64_t bytes_per_s)
{
	static const char *const units[] = {
		"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s",
	};

	return fmt_scaled(buf, len, bytes_per_s, 1000, units,
			  ARRAY_SIZE(units));
}

const char *icfabctl_fmt_latency(char *buf, size_t len, uint64_t ps)
{
	static const char *const units[] = { "ps", "ns", "us", "ms", "s" };

	return fmt_scaled(buf, len, ps, 1000, units, ARRAY_SIZE(units));
}

const char *icfabctl_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = {
		"bytes", "KiB", "MiB", "GiB", "TiB", "PiB",
	};

	return fmt_scaled(buf, len, bytes, 1024, units, ARRAY_SIZE(units));
}

/* Topology names */

static const char *enum_name(char *buf, size_t len, const char *const *names,
			     size_t n, uint32_t v, const char *prefix)
{
	if (v < n && names[v])
		return names[v];
	snprintf(buf, len, "%s-%" PRIu32, prefix, v);
	return buf;
}

const char *icfabctl_link_class_name(char *buf, size_t len, uint32_t cls)
{
	return enum_name(buf, len, icfab_class_names,
			 ICFAB_NAMES_LEN(icfab_class_names), cls, "class");
}

uint32_t icfabctl_energy_row(uint32_t cls, uint32_t tier)
{
	if (tier && tier <= ICFAB_TIER_MAX)
		return E_TIER(tier);
	return cls <= ICFAB_LINK_CLASS_MAX ? cls : ICFAB_LINK_CLASS_OTHER;
}

const char *icfabctl_energy_row_name(uint32_t row, bool json)
{
	static const char *const tier_rows[] = {
		[ICFAB_TIER_SRAM] = "tier sram", [ICFAB_TIER_HBM] = "tier hbm",
		[ICFAB_TIER_DDR] = "tier ddr",
	};

	if (row <= ICFAB_LINK_CLASS_MAX)
		return icfab_class_names[row];
	if (row >= E_TOTAL)
		return "total";
	row -= ICFAB_LINK_CLASS_MAX;
	return json ? icfab_tier_names[row] : tier_rows[row];
}

const char *icfabctl_link_state_name(char *buf, size_t len, uint32_t state)
{
	return enum_name(buf, len, icfab_state_names,
			 ICFAB_NAMES_LEN(icfab_state_names), state, "state");
}

const char *icfabctl_node_kind_name(char *buf, size_t len, uint32_t kind)
{
	return enum_name(buf, len, icfab_kind_names,
			 ICFAB_NAMES_LEN(icfab_kind_names), kind, "kind");
}

/* JSON: lib/json.c, with the names of icfab's values */

static void json_feature(const char *name, void *arg)
{
	json_string(arg, NULL, name);
}

/* "features": mask, "feature_names": [...] */
void json_features(struct icfab_json *j, uint64_t features)
{
	json_u64(j, "features", features);
	json_begin_array(j, "feature_names");
	for_each_feature(features, json_feature, j);
	json_end_array(j);
}

/* "time_mode": name ("unknown-N" for a mode this tool does not know) */
void json_time_mode(struct icfab_json *j, uint32_t mode)
{
	const char *name = icfabctl_time_mode_name(mode);
	char buf[32];

	if (!name) {
		snprintf(buf, sizeof(buf), "unknown-%" PRIu32, mode);
		name = buf;
	}
	json_string(j, "time_mode", name);
}
