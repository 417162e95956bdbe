// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl fabric show / set: FABRIC_GET, and FABRIC_SET then FABRIC_COMMIT
 * over netlink.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "icfabctl.h"

enum attr_kind {
	KIND_NONE,	/* not printed (ICFAB_A_PAD) */
	KIND_U32,
	KIND_U64,
	KIND_STRING,
	KIND_TIME_MODE,	/* u32 */
	KIND_FEATURES,	/* u64 */
	KIND_YESNO,	/* u8: yes / no, a JSON boolean */
	KIND_BYTES,	/* u64: bytes, with a human unit in text */
};

static const struct fabric_attr {
	const char *enum_name;
	const char *key;	/* text output */
	const char *json;	/* JSON member */
	enum attr_kind kind;
	const char *unit;	/* text output only */
} fabric_attrs[ICFAB_A_MAX + 1] = {
#define A(type, k, j, kd, u) [type] = { #type, k, j, kd, u }
	A(ICFAB_A_PAD,			NULL, NULL, KIND_NONE, NULL),
	A(ICFAB_A_FABRIC_ID,		"id", "id", KIND_U32, NULL),
	A(ICFAB_A_FABRIC_NAME,		"name", "name", KIND_STRING, NULL),
	A(ICFAB_A_FABRIC_ABI_VERSION,	"abi-version", "abi_version",
	  KIND_U32, NULL),
	A(ICFAB_A_FABRIC_FEATURES,	"features", "features",
	  KIND_FEATURES, NULL),
	A(ICFAB_A_FABRIC_GENERATION,	"generation", "generation",
	  KIND_U64, NULL),
	A(ICFAB_A_FABRIC_TIME_MODE,	"time-mode", "time_mode",
	  KIND_TIME_MODE, NULL),
	A(ICFAB_A_FABRIC_SEGMENT_SIZE,	"segment-size", "segment_size",
	  KIND_U32, "bytes"),
	A(ICFAB_A_FABRIC_DILATION,	"dilation", "dilation", KIND_U32, NULL),
	A(ICFAB_A_FABRIC_NOW_PS,	"clock", "now_ps", KIND_U64, "ps"),
	A(ICFAB_A_FABRIC_NR_ENDPOINTS,	"endpoints", "nr_endpoints",
	  KIND_U32, NULL),
	A(ICFAB_A_FABRIC_NR_SWITCHES,	"switches", "nr_switches",
	  KIND_U32, NULL),
	A(ICFAB_A_FABRIC_NR_LINKS,	"links", "nr_links", KIND_U32, NULL),
	A(ICFAB_A_FABRIC_NR_CONTEXTS,	"contexts", "nr_contexts",
	  KIND_U32, NULL),
	A(ICFAB_A_FABRIC_HAS_STAGED,	"staged", "has_staged",
	  KIND_YESNO, NULL),
	A(ICFAB_A_FABRIC_MEM_BYTES,	"memory", "mem_bytes",
	  KIND_BYTES, NULL),
	A(ICFAB_A_FABRIC_HELD_PID,	"held-by-pid", "held_pid",
	  KIND_U32, NULL),
	A(ICFAB_A_FABRIC_HELD_PS,	"held-at", "held_ps", KIND_U64, "ps"),
	A(ICFAB_A_FABRIC_COMMIT_PS,	"committed-at", "commit_ps",
	  KIND_U64, "ps"),
#undef A
};

static const struct fabric_attr *known_attr(int type)
{
	if (type > 0 && type <= ICFAB_A_MAX && fabric_attrs[type].enum_name)
		return &fabric_attrs[type];
	return NULL;
}

int icfabctl_fabric_parse(struct nl_msg *msg, struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	const struct fabric_attr *fa;
	struct nlattr *a;
	int rem, len;

	memset(tb, 0, (ICFAB_A_MAX + 1) * sizeof(*tb));
	if (!genlmsg_valid_hdr(nlh, 0))
		return -EBADMSG;

	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		fa = known_attr(nla_type(a));
		if (!fa)
			continue;	/* printed raw */
		len = nla_len(a);
		switch (fa->kind) {
		case KIND_U32:
		case KIND_TIME_MODE:
			if (len != 4)
				return -EBADMSG;
			break;
		case KIND_U64:
		case KIND_FEATURES:
		case KIND_BYTES:
			if (len != 8)
				return -EBADMSG;
			break;
		case KIND_YESNO:
			if (len != 1)
				return -EBADMSG;
			break;
		case KIND_STRING:
			if (len < 1 || !memchr(nla_data(a), '\0', len))
				return -EBADMSG;
			break;
		case KIND_NONE:
			break;
		}
		tb[nla_type(a)] = a;
	}
	return 0;
}

/* Attributes this tool does not know, as hex. */
static void hex(FILE *f, const struct nlattr *a)
{
	const unsigned char *p = nla_data(a);
	int i;

	for (i = 0; i < nla_len(a); i++)
		fprintf(f, "%02x", p[i]);
}

static void print_attr_text(FILE *f, const struct fabric_attr *fa,
			    const struct nlattr *a)
{
	const char *mode;
	char buf[32];
	uint64_t b;
	uint32_t v;

	switch (fa->kind) {
	case KIND_U32:
		fprintf(f, "%" PRIu32, nla_get_u32((struct nlattr *)a));
		break;
	case KIND_U64:
		fprintf(f, "%" PRIu64, (uint64_t)nla_get_u64((struct nlattr *)a));
		break;
	case KIND_STRING:
		fputs(nla_data(a), f);
		break;
	case KIND_TIME_MODE:
		v = nla_get_u32((struct nlattr *)a);
		mode = icfabctl_time_mode_name(v);
		if (mode)
			fputs(mode, f);
		else
			fprintf(f, "unknown (%" PRIu32 ")", v);
		break;
	case KIND_FEATURES:
		icfabctl_print_features(f,
					nla_get_u64((struct nlattr *)a));
		break;
	case KIND_YESNO:
		fputs(nla_get_u8((struct nlattr *)a) ? "yes" : "no", f);
		break;
	case KIND_BYTES:
		b = nla_get_u64((struct nlattr *)a);
		fputs(icfabctl_fmt_bytes(buf, sizeof(buf), b), f);
		if (b >= 1024)
			fprintf(f, " (%" PRIu64 " bytes)", b);
		break;
	case KIND_NONE:
		break;
	}
	if (fa->unit)
		fprintf(f, " %s", fa->unit);
}

/*
 * One fabric as a block:
 *	fabric 0: icfab0
 *		abi-version:   1
 *		...
 */
static void fabric_print_text(FILE *f, struct nl_msg *msg, struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	const struct fabric_attr *fa;
	struct nlattr *a;
	char key[32];
	int rem, type;

	if (tb[ICFAB_A_FABRIC_ID])
		fprintf(f, "fabric %" PRIu32,
			nla_get_u32(tb[ICFAB_A_FABRIC_ID]));
	else
		fputs("fabric ?", f);
	if (tb[ICFAB_A_FABRIC_NAME])
		fprintf(f, ": %s", (char *)nla_data(tb[ICFAB_A_FABRIC_NAME]));
	fputc('\n', f);

	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		type = nla_type(a);
		if (type == ICFAB_A_FABRIC_ID || type == ICFAB_A_FABRIC_NAME ||
		    type == ICFAB_A_PAD)
			continue;
		fa = known_attr(type);
		if (fa)
			snprintf(key, sizeof(key), "%s:", fa->key);
		else
			snprintf(key, sizeof(key), "attr-%d:", type);
		fprintf(f, "\t%-16s", key);
		if (fa)
			print_attr_text(f, fa, a);
		else
			hex(f, a);
		fputc('\n', f);
	}
}

void icfabctl_fabric_json(struct icfab_json *j, struct nl_msg *msg,
			  struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	const struct fabric_attr *fa;
	struct nlattr *a;
	char key[32];
	int rem, type;

	(void)tb;
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		type = nla_type(a);
		fa = known_attr(type);
		if (!fa) {
			snprintf(key, sizeof(key), "attr_%d", type);
			json_hex(j, key, nla_data(a), nla_len(a));
			continue;
		}
		switch (fa->kind) {
		case KIND_U32:
			json_u64(j, fa->json, nla_get_u32(a));
			break;
		case KIND_U64:
			json_u64(j, fa->json, nla_get_u64(a));
			break;
		case KIND_STRING:
			json_string(j, fa->json, nla_data(a));
			break;
		case KIND_TIME_MODE:
			json_time_mode(j, nla_get_u32(a));
			break;
		case KIND_FEATURES:
			json_features(j, nla_get_u64(a));
			break;
		case KIND_YESNO:
			json_bool(j, fa->json, nla_get_u8(a));
			break;
		case KIND_BYTES:
			json_u64(j, fa->json, nla_get_u64(a));
			break;
		case KIND_NONE:
			break;
		}
	}
}

/* fabric show */

struct show_state {
	struct icfab_json j;
	FILE *out;	/* memory: printed only once the request succeeded */
	bool json;
};

static int show_valid(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gnlh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct show_state *s = arg;
	int err;

	err = icfabctl_fabric_parse(msg, tb);
	if (err)
		return err;
	if (gnlh->cmd != ICFAB_CMD_FABRIC_GET)
		return 0;

	if (s->json) {
		json_begin_object(&s->j, NULL);
		icfabctl_fabric_json(&s->j, msg, tb);
		json_end_object(&s->j);
	} else {
		fabric_print_text(s->out, msg, tb);
	}
	return 0;
}

static int cmd_fabric_show(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			   int argc, char **argv)
{
	struct show_state s = { .json = ctl->json };
	bool have_id = false, staged = false;
	struct icfab_nl nl;
	struct nl_msg *msg;
	char *buf = NULL;
	size_t size = 0;
	uint32_t id = 0;
	int i, ret;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--staged"))
			staged = true;
		else if (have_id)
			return icfabctl_usage_error(cmd, "too many arguments");
		else if (icfabctl_parse_u32(argv[i], &id))
			return icfabctl_usage_error(cmd,
					"invalid fabric id '%s'", argv[i]);
		else
			have_id = true;
	}
	if (!have_id && ctl->fabric_given) {
		id = ctl->fabric;
		have_id = true;
	}

	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;

	msg = icfab_nl_genlmsg(&nl, ICFAB_CMD_FABRIC_GET,
			       have_id ? 0 : NLM_F_DUMP, 0);
	if (!msg || (have_id && nla_put_u32(msg, ICFAB_A_FABRIC_ID, id) < 0) ||
	    (staged && nla_put_flag(msg, ICFAB_A_STAGED) < 0)) {
		if (msg)
			nlmsg_free(msg);
		icfab_nl_close(&nl);
		return icfabctl_fail(ENOMEM, "fabric show");
	}

	s.out = open_memstream(&buf, &size);
	if (!s.out) {
		nlmsg_free(msg);
		icfab_nl_close(&nl);
		return icfabctl_fail(errno, "fabric show");
	}
	json_init(&s.j, s.out);
	if (s.json)
		json_begin_array(&s.j, NULL);

	ret = icfabctl_nl_transact(&nl, msg, show_valid, &s, "fabric show");
	icfab_nl_close(&nl);

	if (s.json)
		json_end_array(&s.j);
	fclose(s.out);
	if (!ret)
		fwrite(buf, 1, size, stdout);
	free(buf);
	return ret;
}

ICFABCTL_COMMAND("fabric", "show", "[--staged] [ID]", cmd_fabric_show,
		 "Show every attribute of fabric ID, or of all fabrics "
		 "(FABRIC_GET); --staged: of the staged configuration.");

/* fabric set */

static int cmd_fabric_set(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			  int argc, char **argv)
{
	static const struct {
		const char *keyword;
		int attr;
	} keywords[] = {
		{ "segment-size",	ICFAB_A_FABRIC_SEGMENT_SIZE },
		{ "time-mode",		ICFAB_A_FABRIC_TIME_MODE },
		{ "dilation",		ICFAB_A_FABRIC_DILATION },
	};
	uint32_t values[ICFAB_A_MAX + 1];
	bool given[ICFAB_A_MAX + 1] = { false };
	bool have_id = false, any = false;
	struct icfab_nl nl;
	struct nl_msg *msg;
	uint32_t id = 0;
	size_t k;
	int i = 0, ret, attr;

	/* Everything is checked before anything is sent. */
	if (argc > 0 && (argv[0][0] == '-' || (argv[0][0] >= '0' &&
					       argv[0][0] <= '9'))) {
		if (icfabctl_parse_u32(argv[0], &id))
			return icfabctl_usage_error(cmd,
					"invalid fabric id '%s'", argv[0]);
		have_id = true;
		i++;
	}
	for (; i < argc; i += 2) {
		for (k = 0; k < ARRAY_SIZE(keywords); k++)
			if (!strcmp(argv[i], keywords[k].keyword))
				break;
		if (k == ARRAY_SIZE(keywords))
			return icfabctl_usage_error(cmd,
					"unknown keyword '%s'", argv[i]);
		attr = keywords[k].attr;
		if (given[attr])
			return icfabctl_usage_error(cmd, "%s given twice",
						    argv[i]);
		if (i + 1 >= argc)
			return icfabctl_usage_error(cmd, "%s needs a value",
						    argv[i]);
		if (attr == ICFAB_A_FABRIC_TIME_MODE
		    ? icfabctl_time_mode_parse(argv[i + 1], &values[attr])
		    : icfabctl_parse_u32(argv[i + 1], &values[attr]))
			return icfabctl_usage_error(cmd, "invalid %s '%s'",
						    argv[i], argv[i + 1]);
		given[attr] = true;
		any = true;
	}
	if (!any)
		return icfabctl_usage_error(cmd, "nothing to set");

	if (!have_id && ctl->fabric_given) {
		id = ctl->fabric;
		have_id = true;
	}

	ret = icfabctl_nl_open(&nl, ctl->fabric);
	if (ret)
		return ret;

	/* Stage the parameters ... */
	msg = icfab_nl_genlmsg(&nl, ICFAB_CMD_FABRIC_SET, 0, 0);
	if (!msg)
		goto nomem;
	if (have_id && nla_put_u32(msg, ICFAB_A_FABRIC_ID, id) < 0)
		goto nomem;
	for (k = 0; k < ARRAY_SIZE(keywords); k++) {
		attr = keywords[k].attr;
		if (given[attr] && nla_put_u32(msg, attr, values[attr]) < 0)
			goto nomem;
	}
	ret = icfabctl_nl_transact(&nl, msg, NULL, NULL, "fabric set");
	if (ret)
		goto out;

	/*
	 * ... and commit them from the same socket: what is staged belongs
	 * to it. A rejected commit is aborted rather than left to the close.
	 */
	msg = icfab_nl_genlmsg(&nl, ICFAB_CMD_FABRIC_COMMIT, 0, 0);
	if (!msg || (have_id && nla_put_u32(msg, ICFAB_A_FABRIC_ID, id) < 0))
		goto nomem;
	if (icfab_nl_exchange(&nl, msg, NULL, NULL)) {
		icfabctl_nl_report(&nl, "fabric set: commit");
		ret = ICFABCTL_EXIT_ERROR;
		msg = icfab_nl_genlmsg(&nl, ICFAB_CMD_FABRIC_ABORT, 0, 0);
		if (!msg ||
		    (have_id && nla_put_u32(msg, ICFAB_A_FABRIC_ID, id) < 0))
			goto nomem;
		if (icfab_nl_exchange(&nl, msg, NULL, NULL))
			icfabctl_nl_report(&nl, "fabric set: abort");
		else
			icfabctl_warn("fabric set: nothing was changed");
	}
out:
	icfab_nl_close(&nl);
	return ret;

nomem:
	if (msg)
		nlmsg_free(msg);
	icfab_nl_close(&nl);
	return icfabctl_fail(ENOMEM, "fabric set");
}

ICFABCTL_COMMAND("fabric", "set",
		 "[ID] [segment-size BYTES] [time-mode virtual|paced] "
		 "[dilation N]", cmd_fabric_set,
		 "Change the parameters of fabric ID (default 0): stage "
		 "them and commit (FABRIC_SET, FABRIC_COMMIT); needs "
		 "CAP_NET_ADMIN.");
