// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "icfab": FABRIC_GET/SET, strict policies,
 * extack messages, CAP_NET_ADMIN, notifications.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "genl.h"
#include "kselftest_harness.h"

/* The fields of a FABRIC_GET reply the tests look at. */
struct fabric {
	int seen;
	uint32_t id, abi, time_mode, segment_size, dilation, nr_contexts;
	uint32_t nr_endpoints, nr_switches, nr_links;
	uint64_t features, generation, now_ps, mem_bytes;
	char name[16];
	int has_all, has_staged;
};

static int fabric_cb(const struct genl_reply *r, void *arg)
{
	struct fabric *f = arg;
	static const int needed[] = {
		ICFAB_A_FABRIC_ID, ICFAB_A_FABRIC_NAME,
		ICFAB_A_FABRIC_ABI_VERSION, ICFAB_A_FABRIC_FEATURES,
		ICFAB_A_FABRIC_GENERATION, ICFAB_A_FABRIC_TIME_MODE,
		ICFAB_A_FABRIC_SEGMENT_SIZE, ICFAB_A_FABRIC_DILATION,
		ICFAB_A_FABRIC_NOW_PS, ICFAB_A_FABRIC_NR_ENDPOINTS,
		ICFAB_A_FABRIC_NR_SWITCHES, ICFAB_A_FABRIC_NR_LINKS,
		ICFAB_A_FABRIC_NR_CONTEXTS, ICFAB_A_FABRIC_HAS_STAGED,
		ICFAB_A_FABRIC_MEM_BYTES,
	};

	f->seen++;
	f->has_all = 1;
	for (unsigned int i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!r->tb[needed[i]])
			f->has_all = 0;
	if (!f->has_all)
		return -EPROTO;

	f->id = genl_u32(r->tb[ICFAB_A_FABRIC_ID]);
	snprintf(f->name, sizeof(f->name), "%s",
		 (char *)r->tb[ICFAB_A_FABRIC_NAME] + NLA_HDRLEN);
	f->abi = genl_u32(r->tb[ICFAB_A_FABRIC_ABI_VERSION]);
	f->features = genl_u64(r->tb[ICFAB_A_FABRIC_FEATURES]);
	f->generation = genl_u64(r->tb[ICFAB_A_FABRIC_GENERATION]);
	f->time_mode = genl_u32(r->tb[ICFAB_A_FABRIC_TIME_MODE]);
	f->segment_size = genl_u32(r->tb[ICFAB_A_FABRIC_SEGMENT_SIZE]);
	f->dilation = genl_u32(r->tb[ICFAB_A_FABRIC_DILATION]);
	f->now_ps = genl_u64(r->tb[ICFAB_A_FABRIC_NOW_PS]);
	f->nr_endpoints = genl_u32(r->tb[ICFAB_A_FABRIC_NR_ENDPOINTS]);
	f->nr_switches = genl_u32(r->tb[ICFAB_A_FABRIC_NR_SWITCHES]);
	f->nr_links = genl_u32(r->tb[ICFAB_A_FABRIC_NR_LINKS]);
	f->nr_contexts = genl_u32(r->tb[ICFAB_A_FABRIC_NR_CONTEXTS]);
	f->has_staged = *((uint8_t *)r->tb[ICFAB_A_FABRIC_HAS_STAGED] +
			  NLA_HDRLEN);
	f->mem_bytes = genl_u64(r->tb[ICFAB_A_FABRIC_MEM_BYTES]);
	return 0;
}

static int fabric_get_view(struct genl_sock *gs, uint32_t id, int staged,
			   struct fabric *f)
{
	struct genl_msg m;

	memset(f, 0, sizeof(*f));
	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_GET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_ID, id);
	if (staged)
		genl_put(&m, ICFAB_A_STAGED, NULL, 0);
	return genl_request(gs, &m, fabric_cb, f);
}

static int fabric_get(struct genl_sock *gs, uint32_t id, struct fabric *f)
{
	return fabric_get_view(gs, id, 0, f);
}

static int fabric_cmd(struct genl_sock *gs, uint8_t cmd)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, cmd, 0);
	return genl_request(gs, &m, NULL, NULL);
}

/* Dump: count the replies and keep the first 16. */
struct dump {
	unsigned int n;
	struct fabric f[16];
};

static int dump_cb(const struct genl_reply *r, void *arg)
{
	struct dump *d = arg;
	struct fabric tmp;
	int err;

	memset(&tmp, 0, sizeof(tmp));
	err = fabric_cb(r, &tmp);
	if (err)
		return err;
	if (d->n < 16)
		d->f[d->n] = tmp;
	d->n++;
	return 0;
}

static int info(struct icfab_info *in)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	memset(in, 0, sizeof(*in));
	ret = ioctl(fd, ICFAB_IOC_INFO, in) ? -errno : 0;
	close(fd);
	return ret;
}

FIXTURE(nl) {
	struct genl_sock gs;
	struct fabric before;
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME))
		TH_LOG("family %s not registered", ICFAB_GENL_NAME);
	ASSERT_NE(0, self->gs.family);
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &self->before));
}

FIXTURE_TEARDOWN(nl)
{
	struct genl_msg m;
	struct fabric f;

	/* Put back whatever a test changed. */
	fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT);
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	if (f.segment_size != self->before.segment_size ||
	    f.time_mode != self->before.time_mode ||
	    f.dilation != self->before.dilation) {
		genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_SET, 0);
		genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE,
			     self->before.segment_size);
		genl_put_u32(&m, ICFAB_A_FABRIC_TIME_MODE,
			     self->before.time_mode);
		genl_put_u32(&m, ICFAB_A_FABRIC_DILATION, self->before.dilation);
		EXPECT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
		EXPECT_EQ(0, fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	}
	genl_close(&self->gs);
}

TEST_F(nl, family_has_events_group)
{
	EXPECT_NE(0, self->gs.mcgrp_events);
}

TEST_F(nl, get_matches_the_chardev)
{
	struct icfab_info in;
	struct fabric f;

	ASSERT_EQ(0, info(&in));
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	ASSERT_TRUE(f.has_all);
	EXPECT_EQ(0, f.id);
	EXPECT_STREQ("icfab0", f.name);
	EXPECT_EQ(ICFAB_ABI_VERSION, f.abi);
	EXPECT_EQ(0, f.features & ~ICFAB_F_ALL);
	EXPECT_EQ(in.features, f.features);
	EXPECT_EQ(in.generation, f.generation);
	EXPECT_EQ(in.time_mode, f.time_mode);
	EXPECT_EQ(in.segment_size, f.segment_size);
	EXPECT_EQ(in.dilation, f.dilation);
	EXPECT_EQ(in.now_ps, f.now_ps);
	/* No topology is loaded yet. */
	EXPECT_EQ(0, f.nr_endpoints);
	EXPECT_EQ(0, f.nr_switches);
	EXPECT_EQ(0, f.nr_links);
}

TEST_F(nl, get_without_id_is_fabric_zero)
{
	struct genl_msg m;
	struct fabric f;

	memset(&f, 0, sizeof(f));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_GET, 0);
	ASSERT_EQ(0, genl_request(&self->gs, &m, fabric_cb, &f));
	EXPECT_EQ(1, f.seen);
	EXPECT_EQ(0, f.id);
}

TEST_F(nl, get_counts_open_contexts)
{
	struct fabric f;
	int fd1, fd2;

	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	fd1 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);

	struct fabric g;

	ASSERT_EQ(0, fabric_get(&self->gs, 0, &g));
	EXPECT_EQ(f.nr_contexts + 2, g.nr_contexts);
	close(fd1);
	close(fd2);
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &g));
	EXPECT_EQ(f.nr_contexts, g.nr_contexts);
}

TEST_F(nl, dump_lists_every_device)
{
	unsigned int ndev = 0;
	struct genl_msg m;
	struct dirent *de;
	struct dump d;
	DIR *dir;

	dir = opendir("/dev");
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir)))
		if (!strncmp(de->d_name, "icfab", 5))
			ndev++;
	closedir(dir);

	memset(&d, 0, sizeof(d));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_GET, NLM_F_DUMP);
	ASSERT_EQ(0, genl_request(&self->gs, &m, dump_cb, &d));
	ASSERT_EQ(ndev, d.n);
	for (unsigned int i = 0; i < d.n && i < 16; i++)
		EXPECT_EQ(i, d.f[i].id);
}

TEST_F(nl, get_unknown_fabric_is_enodev)
{
	struct fabric f;

	EXPECT_EQ(-ENODEV, fabric_get(&self->gs, 99, &f));
	EXPECT_STREQ("no fabric with this id", self->gs.extack);
	EXPECT_EQ(ICFAB_A_FABRIC_ID, self->gs.bad_attr_type);
}

/* Malformed requests: each must fail with EINVAL and name the attribute. */
FIXTURE(bad_get) {
	struct genl_sock gs;
};

FIXTURE_VARIANT(bad_get) {
	uint16_t type;
	unsigned int len;
};

/* A u32 attribute with two bytes. */
FIXTURE_VARIANT_ADD(bad_get, short_id) {
	.type = ICFAB_A_FABRIC_ID, .len = 2,
};
/* An attribute GET does not take (only the kernel sends NAME). */
FIXTURE_VARIANT_ADD(bad_get, name_is_output_only) {
	.type = ICFAB_A_FABRIC_NAME, .len = 4,
};
/* An attribute number past the end of the enum. */
FIXTURE_VARIANT_ADD(bad_get, unknown_attribute) {
	.type = ICFAB_A_MAX + 1, .len = 4,
};

FIXTURE_SETUP(bad_get)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
}

FIXTURE_TEARDOWN(bad_get)
{
	genl_close(&self->gs);
}

TEST_F(bad_get, is_einval_with_extack)
{
	char payload[8] = "abc";
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_GET, 0);
	genl_put(&m, variant->type, payload, variant->len);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_NE(0, self->gs.extack[0]);
	EXPECT_EQ(variant->type, self->gs.bad_attr_type)
		TH_LOG("extack: %s", self->gs.extack);
}

TEST_F(nl, truncated_attribute_is_einval)
{
	struct genl_msg m;
	struct nlattr *a;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_GET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_ID, 0);
	/* Claim more bytes than the message holds. */
	a = (struct nlattr *)(m.buf + NLMSG_LENGTH(GENL_HDRLEN));
	a->nla_len = 64;
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
}

static int fabric_set(struct genl_sock *gs, int seg, int mode, int dil)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	if (seg >= 0)
		genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, seg);
	if (mode >= 0)
		genl_put_u32(&m, ICFAB_A_FABRIC_TIME_MODE, mode);
	if (dil >= 0)
		genl_put_u32(&m, ICFAB_A_FABRIC_DILATION, dil);
	return genl_request(gs, &m, NULL, NULL);
}

TEST_F(nl, set_stages_and_commit_applies_and_notifies)
{
	struct genl_sock listener;
	struct genl_reply ntf;
	struct icfab_info in;
	struct fabric f;

	ASSERT_EQ(0, genl_open(&listener));
	ASSERT_EQ(0, genl_resolve(&listener, ICFAB_GENL_NAME));
	ASSERT_EQ(0, genl_join(&listener, listener.mcgrp_events));

	ASSERT_EQ(0, fabric_set(&self->gs, 8192, ICFAB_TIME_PACED, 10));

	/* Staged: the committed state is untouched, the staged view shows it. */
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	EXPECT_EQ(self->before.segment_size, f.segment_size);
	EXPECT_EQ(self->before.generation, f.generation);
	EXPECT_EQ(1, f.has_staged);
	ASSERT_EQ(0, fabric_get_view(&self->gs, 0, 1, &f));
	EXPECT_EQ(8192, f.segment_size);
	EXPECT_EQ(ICFAB_TIME_PACED, f.time_mode);
	EXPECT_EQ(-ETIMEDOUT, genl_recv_one(&listener, &ntf, 200));

	ASSERT_EQ(0, fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));

	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	EXPECT_EQ(0, f.has_staged);
	EXPECT_EQ(8192, f.segment_size);
	EXPECT_EQ(ICFAB_TIME_PACED, f.time_mode);
	EXPECT_EQ(10, f.dilation);
	EXPECT_EQ(self->before.generation + 1, f.generation);

	ASSERT_EQ(0, info(&in));
	EXPECT_EQ(8192, in.segment_size);
	EXPECT_EQ(ICFAB_TIME_PACED, in.time_mode);
	EXPECT_EQ(10, in.dilation);
	EXPECT_EQ(f.generation, in.generation);

	ASSERT_EQ(0, genl_recv_one(&listener, &ntf, 2000));
	EXPECT_EQ(ICFAB_CMD_FABRIC_NTF, ntf.cmd);
	ASSERT_NE(NULL, ntf.tb[ICFAB_A_FABRIC_GENERATION]);
	EXPECT_EQ(f.generation, genl_u64(ntf.tb[ICFAB_A_FABRIC_GENERATION]));
	ASSERT_NE(NULL, ntf.tb[ICFAB_A_FABRIC_SEGMENT_SIZE]);
	EXPECT_EQ(8192, genl_u32(ntf.tb[ICFAB_A_FABRIC_SEGMENT_SIZE]));
	genl_close(&listener);
}

TEST_F(nl, set_without_parameters_is_einval)
{
	struct fabric f;

	EXPECT_EQ(-EINVAL, fabric_set(&self->gs, -1, -1, -1));
	EXPECT_NE(NULL, strstr(self->gs.extack, "SEGMENT_SIZE"));
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	EXPECT_EQ(self->before.generation, f.generation);
	EXPECT_EQ(0, f.has_staged);
}

TEST_F(nl, abort_drops_the_staged_parameters)
{
	struct fabric f;

	ASSERT_EQ(0, fabric_set(&self->gs, 8192, -1, -1));
	ASSERT_EQ(0, fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
	ASSERT_EQ(0, fabric_get_view(&self->gs, 0, 1, &f));
	EXPECT_EQ(0, f.has_staged);
	EXPECT_EQ(self->before.segment_size, f.segment_size);
	EXPECT_EQ(self->before.generation, f.generation);
	/* Nothing left to commit or abort. */
	EXPECT_EQ(-ENOENT, fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ(-ENOENT, fabric_cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
}

TEST_F(nl, set_output_only_attribute_is_einval)
{
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, 8192);
	genl_put_u64(&m, ICFAB_A_FABRIC_NOW_PS, 1);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_FABRIC_NOW_PS, self->gs.bad_attr_type);
}

TEST_F(nl, set_unknown_fabric_is_enodev)
{
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_ID, 99);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, 8192);
	EXPECT_EQ(-ENODEV, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_FABRIC_ID, self->gs.bad_attr_type);
}

/*
 * Out-of-range values: rejected with ERANGE (the netlink core's answer to a
 * range policy), named, and nothing is applied.
 */
FIXTURE(bad_set) {
	struct genl_sock gs;
	struct fabric before;
};

FIXTURE_VARIANT(bad_set) {
	int seg, mode, dil;
	uint16_t bad;
};

FIXTURE_VARIANT_ADD(bad_set, segment_too_small) {
	.seg = 63, .mode = -1, .dil = -1, .bad = ICFAB_A_FABRIC_SEGMENT_SIZE,
};
FIXTURE_VARIANT_ADD(bad_set, segment_too_large) {
	.seg = (1 << 20) + 1, .mode = -1, .dil = -1,
	.bad = ICFAB_A_FABRIC_SEGMENT_SIZE,
};
FIXTURE_VARIANT_ADD(bad_set, unknown_time_mode) {
	.seg = -1, .mode = ICFAB_TIME_MAX + 1, .dil = -1,
	.bad = ICFAB_A_FABRIC_TIME_MODE,
};
FIXTURE_VARIANT_ADD(bad_set, zero_dilation) {
	.seg = -1, .mode = -1, .dil = 0, .bad = ICFAB_A_FABRIC_DILATION,
};
/* One good value beside a bad one: the good one must not be applied. */
FIXTURE_VARIANT_ADD(bad_set, good_segment_bad_dilation) {
	.seg = 8192, .mode = ICFAB_TIME_PACED, .dil = 1000001,
	.bad = ICFAB_A_FABRIC_DILATION,
};

FIXTURE_SETUP(bad_set)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	ASSERT_EQ(0, fabric_get(&self->gs, 0, &self->before));
}

FIXTURE_TEARDOWN(bad_set)
{
	genl_close(&self->gs);
}

TEST_F(bad_set, is_erange_and_changes_nothing)
{
	struct fabric f;

	EXPECT_EQ(-ERANGE, fabric_set(&self->gs, variant->seg, variant->mode,
				      variant->dil));
	EXPECT_EQ(variant->bad, self->gs.bad_attr_type);
	EXPECT_NE(0, self->gs.extack[0]);

	ASSERT_EQ(0, fabric_get_view(&self->gs, 0, 1, &f));
	EXPECT_EQ(self->before.generation, f.generation);
	EXPECT_EQ(0, f.has_staged);
	EXPECT_EQ(self->before.segment_size, f.segment_size);
	EXPECT_EQ(self->before.time_mode, f.time_mode);
	EXPECT_EQ(self->before.dilation, f.dilation);
}

TEST_F(nl, set_needs_cap_net_admin)
{
	struct fabric f;
	pid_t pid;
	int status;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct genl_sock gs;
		struct fabric g;
		int err;

		/* Losing uid 0 drops every capability. */
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
			_exit(11);
		/* Reading is allowed... */
		if (fabric_get(&gs, 0, &g))
			_exit(12);
		/* ...changing, committing and aborting are not. */
		err = fabric_set(&gs, 8192, -1, -1);
		if (err != -EPERM)
			_exit(13);
		if (fabric_cmd(&gs, ICFAB_CMD_FABRIC_COMMIT) != -EPERM)
			_exit(14);
		_exit(fabric_cmd(&gs, ICFAB_CMD_FABRIC_ABORT) == -EPERM ? 0 : 15);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	ASSERT_EQ(0, fabric_get(&self->gs, 0, &f));
	EXPECT_EQ(self->before.generation, f.generation);
	EXPECT_EQ(self->before.segment_size, f.segment_size);
}

TEST_HARNESS_MAIN
