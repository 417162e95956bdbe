// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl info: ICFAB_IOC_INFO on the character device.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "icfabctl.h"

#define KEY_WIDTH	19	/* "max-xfer-segments:" plus a space */

/*
 * The limits shown, in order: the JSON member is the field's name, the
 * text key the same with dashes.
 */
#define LIMIT(field, unit)						\
	{ #field, offsetof(struct icfab_limits, field),			\
	  sizeof(((struct icfab_limits *)0)->field), unit }

static const struct limit_field {
	const char *name;
	size_t offset, size;		/* bytes */
	const char *unit;		/* text output, or NULL */
} limit_fields[] = {
	LIMIT(max_endpoints, NULL), LIMIT(max_switches, NULL),
	LIMIT(max_links, NULL), LIMIT(max_ports, NULL),
	LIMIT(max_colors, NULL), LIMIT(max_queues, NULL),
	LIMIT(max_queue_depth, NULL), LIMIT(min_segment_size, "bytes"),
	LIMIT(max_segment_size, "bytes"), LIMIT(max_dilation, NULL),
	LIMIT(max_xfer_segments, NULL), LIMIT(max_xfer_bytes, NULL),
	LIMIT(max_ctx_descs, NULL), LIMIT(max_uid_contexts, NULL),
	LIMIT(max_uid_mem_mb, "MiB"), LIMIT(max_uid_circuits, NULL),
};

static uint64_t limit_value(const struct icfab_limits *l,
			    const struct limit_field *f)
{
	const uint8_t *p = (const uint8_t *)l + f->offset;
	uint32_t v32;
	uint64_t v64;

	if (f->size == sizeof(v32)) {
		memcpy(&v32, p, sizeof(v32));
		return v32;
	}
	memcpy(&v64, p, sizeof(v64));
	return v64;
}

static void print_kv(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void print_kv(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%s:%*s", key, (int)(KEY_WIDTH - strlen(key) - 1), "");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void print_info_text(const char *device, const struct icfab_info *info)
{
	const struct icfab_limits *l = &info->limits;
	const char *mode = icfabctl_time_mode_name(info->time_mode);

	print_kv("device", "%s", device);
	print_kv("abi-version", "%" PRIu32, (uint32_t)info->abi_version);
	printf("features:%*s", KEY_WIDTH - 9, "");
	icfabctl_print_features(stdout, info->features);
	putchar('\n');
	print_kv("fabric-id", "%" PRIu32, (uint32_t)info->fabric_id);
	if (mode)
		print_kv("time-mode", "%s", mode);
	else
		print_kv("time-mode", "unknown (%" PRIu32 ")",
			 (uint32_t)info->time_mode);
	print_kv("segment-size", "%" PRIu32 " bytes",
		 (uint32_t)info->segment_size);
	print_kv("dilation", "%" PRIu32, (uint32_t)info->dilation);
	print_kv("clock", "%" PRIu64 " ps", (uint64_t)info->now_ps);
	print_kv("generation", "%" PRIu64, (uint64_t)info->generation);
	for (size_t i = 0; i < ARRAY_SIZE(limit_fields); i++) {
		const struct limit_field *f = &limit_fields[i];
		char key[KEY_WIDTH];

		snprintf(key, sizeof(key), "%s", f->name);
		for (char *c = key; *c; c++)
			if (*c == '_')
				*c = '-';
		print_kv(key, "%" PRIu64 "%s%s", limit_value(l, f),
			 f->unit ? " " : "", f->unit ? f->unit : "");
	}
}

static void print_info_json(const char *device, const struct icfab_info *info)
{
	const struct icfab_limits *l = &info->limits;
	struct icfab_json j;

	json_init(&j, stdout);
	json_begin_object(&j, NULL);
	json_string(&j, "device", device);
	json_u64(&j, "abi_version", info->abi_version);
	json_features(&j, info->features);
	json_u64(&j, "fabric_id", info->fabric_id);
	json_time_mode(&j, info->time_mode);
	json_u64(&j, "segment_size", info->segment_size);
	json_u64(&j, "dilation", info->dilation);
	json_u64(&j, "now_ps", info->now_ps);
	json_u64(&j, "generation", info->generation);
	json_begin_object(&j, "limits");
	for (size_t i = 0; i < ARRAY_SIZE(limit_fields); i++)
		json_u64(&j, limit_fields[i].name,
			 limit_value(l, &limit_fields[i]));
	json_end_object(&j);
	json_end_object(&j);
}

static int cmd_info(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		    int argc, char **argv)
{
	struct icfab_info info;
	int fd, err;

	(void)argv;
	if (argc)
		return icfabctl_usage_error(cmd, "info takes no arguments");

	fd = open(ctl->device, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		icfabctl_fail(err, "%s", ctl->device);
		if (err == ENOENT || err == ENXIO || err == ENODEV)
			icfabctl_warn("icfab module not loaded?");
		return ICFABCTL_EXIT_ERROR;
	}

	memset(&info, 0, sizeof(info));	/* flags and reserved must be 0 */
	if (ioctl(fd, ICFAB_IOC_INFO, &info) < 0) {
		err = errno;
		close(fd);
		icfabctl_fail(err, "%s: ICFAB_IOC_INFO", ctl->device);
		if (err == ENOTTY)
			icfabctl_warn("%s is not an icfab device?", ctl->device);
		return ICFABCTL_EXIT_ERROR;
	}
	close(fd);

	if (info.abi_version != ICFAB_ABI_VERSION)
		icfabctl_warn("%s: ABI version %u, this tool knows %u",
			      ctl->device, info.abi_version, ICFAB_ABI_VERSION);

	if (ctl->json)
		print_info_json(ctl->device, &info);
	else
		print_info_text(ctl->device, &info);
	return ICFABCTL_EXIT_OK;
}

ICFABCTL_COMMAND(NULL, "info", NULL, cmd_info,
		 "Show the ABI version, features, parameters and limits "
		 "of a fabric (ICFAB_IOC_INFO on the device, see -d).");
