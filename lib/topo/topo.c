// SPDX-License-Identifier: GPL-2.0
/*
 * icfabd topology objects: nodes, ports, links, names, limits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/array.h>
#include <icfab/names.h>
#include <icfab/ocs.h>
#include "topo_priv.h"

#define TOPO_DEFAULT_SEGMENT_SIZE	4096	/* bytes, the module's default */

struct topo *topo_new(void)
{
	struct topo *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	strcpy(t->name, "icfab");
	t->segment_size = TOPO_DEFAULT_SEGMENT_SIZE;
	t->time_mode = ICFAB_TIME_VIRTUAL;
	t->dilation = 1;
	t->routing = TOPO_ROUTING_AUTO;
	t->routing_auto = TOPO_ROUTING_SHORTEST;
	return t;
}

static void topo_grid_free(struct topo_grid *g)
{
	if (!g)
		return;
	free(g->node);
	free(g->attached);
	free(g->local_port);
	free(g->dir_port);
	free(g);
}

void topo_free(struct topo *t)
{
	uint32_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_files; i++)
		free(t->files[i]);
	free(t->files);
	free(t->nodes);
	free(t->links);
	free(t->name_hash);
	free(t->routes);
	topo_sets_free(t);
	free(t->port_base);
	free(t->port_out);
	topo_grid_free(t->grid);
	for (i = 0; i < t->nr_ocs; i++)
		ocs_free(t->ocs[i]);
	free(t->ocs);
	free(t->tiers);
	free(t);
}

int topo_add_ocs(struct topo *t, struct ocs *o)
{
	struct ocs **n;

	if (topo_find_ocs(t, o->name))
		return -EEXIST;
	n = realloc(t->ocs, (t->nr_ocs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->ocs = n;
	t->ocs[t->nr_ocs++] = o;
	return 0;
}

struct ocs *topo_find_ocs(const struct topo *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nr_ocs; i++)
		if (!strcmp(t->ocs[i]->name, name))
			return t->ocs[i];
	return NULL;
}

/*
 * Built-in defaults, used where neither the file's defaults: block nor the
 * object says otherwise. Link bandwidth has none on purpose: a fabric
 * whose speed nobody wrote down is a mistake, not a default.
 */
void topo_defaults_init(struct topo_defaults *d)
{
	memset(d, 0, sizeof(*d));
	d->mem_bytes = 1ULL << 30;
	d->dma_engines = 1;
	d->colors = 0;
	d->link.bandwidth = 0;
	d->link.latency_ps = 100000;	/* 100 ns */
	d->link.class = ICFAB_LINK_CLASS_OTHER;
}

const char *topo_intern_file(struct topo *t, const char *file)
{
	char **files;
	uint32_t i;

	for (i = 0; i < t->nr_files; i++)
		if (!strcmp(t->files[i], file))
			return t->files[i];
	files = realloc(t->files, (t->nr_files + 1) * sizeof(*files));
	if (!files)
		return NULL;
	t->files = files;
	files[t->nr_files] = strdup(file);
	if (!files[t->nr_files])
		return NULL;
	return files[t->nr_files++];
}

int topo_errf(struct topo_err *err, const struct topo_src *src,
	      const char *fmt, ...)
{
	size_t off = 0;
	va_list ap;

	if (!err)
		return -EINVAL;
	if (src && src->file) {
		if (src->line)
			off = snprintf(err->msg, sizeof(err->msg), "%s:%u: ",
				       src->file, src->line);
		else
			off = snprintf(err->msg, sizeof(err->msg), "%s: ",
				       src->file);
		if (off >= sizeof(err->msg))
			off = sizeof(err->msg) - 1;
	}
	va_start(ap, fmt);
	vsnprintf(err->msg + off, sizeof(err->msg) - off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Names: the module's limit, and characters that survive shells and YAML. */
static bool topo_name_valid(const char *name)
{
	size_t n = strlen(name), i;

	if (n == 0 || n >= ICFAB_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '_' && c != '-')
			return false;
	}
	return true;
}

static uint32_t topo_name_hashfn(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static void topo_name_insert(struct topo *t, uint32_t id)
{
	uint32_t mask = t->name_hash_size - 1;
	uint32_t h = topo_name_hashfn(t->nodes[id].name) & mask;

	while (t->name_hash[h])
		h = (h + 1) & mask;
	t->name_hash[h] = id + 1;
}

/* Keep the table at most half full so that probes stay short. */
static int topo_name_grow(struct topo *t)
{
	uint32_t size = t->name_hash_size ? t->name_hash_size * 2 : 64;
	uint32_t i;

	free(t->name_hash);
	t->name_hash = calloc(size, sizeof(*t->name_hash));
	if (!t->name_hash) {
		t->name_hash_size = 0;
		return -ENOMEM;
	}
	t->name_hash_size = size;
	for (i = 0; i < t->nr_nodes; i++)
		topo_name_insert(t, i);
	return 0;
}

int topo_find_node(const struct topo *t, const char *name)
{
	uint32_t mask = t->name_hash_size - 1, h, id;

	if (!t->name_hash_size)
		return -ENOENT;
	for (h = topo_name_hashfn(name) & mask; (id = t->name_hash[h]);
	     h = (h + 1) & mask)
		if (!strcmp(t->nodes[id - 1].name, name))
			return id - 1;
	return -ENOENT;
}

/* Returns the new node's id (dense, in order of creation) or -errno. */
int topo_add_node(struct topo *t, const char *name, uint32_t kind,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err)
{
	struct topo_node *n;
	int other;

	if (!topo_name_valid(name))
		return topo_errf(err, src,
				 "invalid node name '%s': 1 to %d characters of [A-Za-z0-9_-]",
				 name, ICFAB_NAME_MAX - 1);
	if (kind > ICFAB_NODE_KIND_MAX)
		return topo_errf(err, src, "invalid node kind %u", kind);
	other = topo_find_node(t, name);
	if (other >= 0) {
		const struct topo_src *o = &t->nodes[other].src;

		return topo_errf(err, src,
				 "duplicate node name '%s' (first defined at %s:%u)",
				 name, o->file ? o->file : "?", o->line);
	}
	if (t->nr_nodes == INT32_MAX)
		return topo_errf(err, src, "too many nodes");
	if (icfab_array_grow((void **)&t->nodes, &t->cap_nodes, t->nr_nodes,
			     sizeof(*t->nodes), 64))
		return -ENOMEM;
	if (2 * (t->nr_nodes + 1) > t->name_hash_size && topo_name_grow(t))
		return -ENOMEM;

	n = &t->nodes[t->nr_nodes];
	memset(n, 0, sizeof(*n));
	strcpy(n->name, name);
	n->kind = kind;
	n->grid_pos = TOPO_NONE;
	n->src = *src;
	if (kind == ICFAB_NODE_ENDPOINT) {
		n->mem_bytes = d->mem_bytes;
		n->dma_engines = d->dma_engines;
		t->nr_endpoints++;
	} else {
		n->colors = d->colors;
		t->nr_switches++;
	}
	topo_name_insert(t, t->nr_nodes);
	return t->nr_nodes++;
}

/*
 * Ports are handed out in order, after the highest one used so far, so
 * that generated wiring is predictable and explicit links added to a
 * generated node take the next ports. A node with a declared port count
 * never grows past it.
 */
int topo_alloc_port(struct topo *t, uint32_t node, const struct topo_src *src,
		    struct topo_err *err)
{
	struct topo_node *n = &t->nodes[node];

	if (n->ports_fixed && n->next_port >= n->nr_ports)
		return topo_errf(err, src,
				 "node '%s' has no free port (all %u are used)",
				 n->name, n->nr_ports);
	if (n->next_port >= ICFAB_ROUTE_NONE)
		return topo_errf(err, src, "node '%s' has too many ports",
				 n->name);
	if (!n->ports_fixed)
		n->nr_ports = n->next_port + 1;
	return n->next_port++;
}

/* An explicitly numbered port: in range of a fixed node, or grows it. */
int topo_use_port(struct topo *t, uint32_t node, uint32_t port,
		  const struct topo_src *src, struct topo_err *err)
{
	struct topo_node *n = &t->nodes[node];

	if (port >= n->nr_ports && n->ports_fixed)
		return topo_errf(err, src,
				 "port %u is beyond node '%s' port count (%u)",
				 port, n->name, n->nr_ports);
	if (port >= ICFAB_ROUTE_NONE)
		return topo_errf(err, src, "port %u of node '%s' is too large",
				 port, n->name);
	if (port >= n->nr_ports)
		n->nr_ports = port + 1;
	if (port >= n->next_port)
		n->next_port = port + 1;
	return port;
}

/* Returns the new link's id or -errno. Port conflicts are topo_check's job. */
int topo_add_link(struct topo *t, uint32_t src_node, uint32_t src_port,
		  uint32_t dst_node, uint32_t dst_port,
		  const struct topo_link_spec *spec, const struct topo_src *src,
		  struct topo_err *err)
{
	struct topo_link *l;

	if (src_node >= t->nr_nodes || dst_node >= t->nr_nodes)
		return topo_errf(err, src, "link between undefined nodes %u and %u",
				 src_node, dst_node);
	if (t->nr_links == INT32_MAX)
		return topo_errf(err, src, "too many links");
	if (icfab_array_grow((void **)&t->links, &t->cap_links, t->nr_links,
			     sizeof(*t->links), 256))
		return -ENOMEM;
	l = &t->links[t->nr_links];
	memset(l, 0, sizeof(*l));
	l->src_node = src_node;
	l->src_port = src_port;
	l->dst_node = dst_node;
	l->dst_port = dst_port;
	l->bandwidth = spec->bandwidth;
	l->latency_ps = spec->latency_ps;
	l->switching = spec->switching;
	l->multipath = spec->multipath;
	l->fj_per_bit = spec->fj_per_bit;
	l->static_mw = spec->static_mw;
	l->eff_permille = spec->eff_permille;
	l->msg_overhead_ps = spec->msg_overhead_ps;
	l->class = spec->class;
	l->state = ICFAB_LINK_UP;
	l->peer = TOPO_NONE;
	l->src = *src;
	return t->nr_links++;
}

/* A duplex cable on the next free port of each side. Returns a->b's id. */
int topo_connect(struct topo *t, uint32_t a, uint32_t b,
		 const struct topo_link_spec *spec, const struct topo_src *src,
		 struct topo_err *err)
{
	int pa, pb, ab, ba;

	pa = topo_alloc_port(t, a, src, err);
	if (pa < 0)
		return pa;
	pb = topo_alloc_port(t, b, src, err);
	if (pb < 0)
		return pb;
	ab = topo_add_link(t, a, pa, b, pb, spec, src, err);
	if (ab < 0)
		return ab;
	ba = topo_add_link(t, b, pb, a, pa, spec, src, err);
	if (ba < 0)
		return ba;
	t->links[ab].peer = ba;
	t->links[ba].peer = ab;
	return ab;
}

/*
 * Changes one direction only, as the module's LINK_SET does; a cable cut
 * is two calls. Routes are stale afterwards until topo_route().
 */
int topo_link_set_state(struct topo *t, uint32_t link, uint32_t state,
			uint32_t bw_permille)
{
	if (link >= t->nr_links || state > ICFAB_LINK_STATE_MAX)
		return -EINVAL;
	if (state == ICFAB_LINK_DEGRADED &&
	    (bw_permille < 1 || bw_permille > 999))
		return -ERANGE;
	t->links[link].state = state;
	t->links[link].bw_permille =
		state == ICFAB_LINK_DEGRADED ? bw_permille : 0;
	return 0;
}

/* The first link from src_node to dst_node, or -ENOENT. */
int topo_find_link(const struct topo *t, uint32_t src_node, uint32_t dst_node)
{
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		if (t->links[i].src_node == src_node &&
		    t->links[i].dst_node == dst_node)
			return i;
	return -ENOENT;
}

/* The module's limits today (kmod/icfab.h), for checks without a kernel. */
void topo_default_limits(struct icfab_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_endpoints = 4096;
	lim->max_switches = 1024;
	lim->max_links = 65536;
	lim->max_ports = 2048;
	lim->max_colors = 64;
	lim->max_queues = 256;
	lim->max_queue_depth = 4096;
	lim->min_segment_size = 64;
	lim->max_segment_size = 1048576;
	lim->max_dilation = 1000000;
}

void topo_mem(const struct topo *t, struct topo_mem *m)
{
	m->route_bytes = (size_t)t->nr_nodes * t->nr_nodes * sizeof(uint16_t);
	m->node_bytes = (size_t)t->nr_nodes * sizeof(struct topo_node);
	m->link_bytes = (size_t)t->nr_links * sizeof(struct topo_link);
}

static const char *const routing_names[] = {
	[TOPO_ROUTING_AUTO] = "auto",
	[TOPO_ROUTING_DOR] = "dor",
	[TOPO_ROUTING_SHORTEST] = "shortest",
	[TOPO_ROUTING_UPDOWN] = "updown",
};



static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "?";
}

static int parse_name(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return i;
	return -EINVAL;
}

const char *topo_kind_name(uint32_t kind)
{
	return name_of(icfab_kind_names, ARRAY_SIZE(icfab_kind_names), kind);
}

const char *topo_class_name(uint32_t class)
{
	return name_of(icfab_class_names, ARRAY_SIZE(icfab_class_names), class);
}

const char *topo_state_name(uint32_t state)
{
	return name_of(icfab_state_names, ARRAY_SIZE(icfab_state_names), state);
}

const char *topo_switching_name(uint32_t mode)
{
	return name_of(icfab_switching_names, ARRAY_SIZE(icfab_switching_names),
		       mode);
}

const char *topo_multipath_name(uint32_t mode)
{
	return name_of(icfab_multipath_names, ARRAY_SIZE(icfab_multipath_names),
		       mode);
}

const char *topo_routing_name(enum topo_routing r)
{
	return name_of(routing_names, ARRAY_SIZE(routing_names), r);
}

int topo_class_parse(const char *s)
{
	return parse_name(icfab_class_names, ARRAY_SIZE(icfab_class_names), s);
}

int topo_switching_parse(const char *s)
{
	return parse_name(icfab_switching_names,
			  ARRAY_SIZE(icfab_switching_names), s);
}

int topo_multipath_parse(const char *s)
{
	return parse_name(icfab_multipath_names,
			  ARRAY_SIZE(icfab_multipath_names), s);
}

int topo_state_parse(const char *s)
{
	return parse_name(icfab_state_names, ARRAY_SIZE(icfab_state_names), s);
}

int topo_routing_parse(const char *s)
{
	return parse_name(routing_names, ARRAY_SIZE(routing_names), s);
}
