/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfabd topology library: an in-memory fabric that maps one to one onto
 * the module's netlink objects (icfab_genl.h), so applying it is a walk:
 *
 *	for each node:	NODE_NEW  (id, kind, name, ports, memory, dma, colors)
 *	for each link:	LINK_NEW  (id, src node/port, dst node/port, ...)
 *	for each node:	ROUTE_SET (node, dst_first = 0, ports = routes row)
 *	FABRIC_COMMIT
 *
 * Node ids are dense (0..nr_nodes-1, in order of creation); link ids are
 * dense too. A port is full duplex: a cable between a.p and b.q is the
 * two directed links a.p->b.q and b.q->a.p.
 *
 * Errors come back as -errno, with a "file:line: message" in a struct
 * topo_err; nothing here writes to stderr.
 */
#ifndef ICFABD_TOPO_H
#define ICFABD_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

struct ocs;			/* ocs.h */

#define TOPO_NONE	UINT32_MAX	/* no node, no link, no position */
#define TOPO_MAX_DIMS	8		/* mesh/torus dimensions */

/* Where an object was defined, for diagnostics. file is owned by the topo. */
struct topo_src {
	const char *file;
	uint32_t line;			/* 1-based; 0 when unknown */
};

struct topo_err {
	char msg[512];			/* "file:line: what is wrong" */
};

enum topo_routing {
	TOPO_ROUTING_AUTO,		/* what the generator suggests */
	TOPO_ROUTING_DOR,		/* dimension order on the grid */
	TOPO_ROUTING_SHORTEST,		/* least latency (Dijkstra) */
	TOPO_ROUTING_UPDOWN,		/* up*down* through switch levels */
};

struct topo_node {
	char name[ICFAB_NAME_MAX];
	uint32_t kind;			/* enum icfab_node_kind */
	uint32_t nr_ports;		/* ports 0..nr_ports-1 */
	uint32_t next_port;		/* what topo_alloc_port() hands out next */
	bool ports_fixed;		/* nr_ports was declared, never grows */
	uint64_t mem_bytes;		/* endpoint device memory, bytes */
	uint32_t dma_engines;		/* endpoint DMA engines */
	uint32_t colors;		/* switch color-table entries */
	uint32_t grid_pos;		/* position in topo.grid, or TOPO_NONE */
	bool grid_attached;		/* endpoint hanging off the grid router */
	/*
	 * Endpoint: per tier kind (enum icfab_tier - 1), the module link id
	 * + 1 of the tier port serving it (ICFAB_A_NODE_TIER_LINKS), 0 for
	 * none. topo_tier_of() finds the tier.
	 */
	uint32_t tier[ICFAB_TIER_KINDS];
	struct topo_src src;
};

/*
 * A memory tier (docs/TIMING.md, "Memory tiers"): its port is the module
 * link @link_id from @home to itself (ICFAB_A_LINK_TIER). A file's tiers
 * get the link ids after its links, nr_links + index, in order.
 */
struct topo_tier {
	uint32_t home;			/* endpoint node id */
	uint32_t kind;			/* enum icfab_tier, not NONE */
	uint64_t bytes;			/* capacity, > 0 */
	uint64_t bandwidth;		/* bytes/s of its port, > 0 */
	uint64_t latency_ps;		/* ps */
	uint32_t fj_per_bit;		/* energy per bit through its port */
	uint32_t link_id;		/* module link id of its port */
	uint32_t state;			/* enum icfab_link_state (read back) */
	struct topo_src src;
};

/* What a generator or an explicit link puts on every link it makes. */
struct topo_link_spec {
	uint64_t bandwidth;		/* bytes/s, > 0 */
	uint64_t latency_ps;		/* ps */
	uint32_t class;			/* enum icfab_link_class */
	uint32_t switching;		/* enum icfab_switching */
	uint32_t multipath;		/* enum icfab_multipath */
	uint32_t fj_per_bit;		/* energy per bit carried, fJ */
	uint32_t static_mw;		/* static power, mW */
	uint32_t eff_permille;		/* payload share, 1..999; 0: all */
	uint64_t msg_overhead_ps;	/* ps per message */
};

struct topo_link {
	uint32_t src_node, src_port;
	uint32_t dst_node, dst_port;
	uint64_t bandwidth;		/* bytes/s */
	uint64_t latency_ps;		/* ps */
	uint32_t class;			/* enum icfab_link_class */
	uint32_t switching;		/* enum icfab_switching: how dst_node
					 * forwards what arrives over it */
	uint32_t multipath;		/* enum icfab_multipath: how src_node
					 * spreads over this link's parallels */
	uint32_t fj_per_bit;		/* energy per bit carried, fJ */
	uint32_t static_mw;		/* static power, mW */
	/*
	 * Calibration (ICFAB_F_LINK_CALIBRATION): the share of the bandwidth
	 * that carries payload, 1..999 permille (0: all of it, the module's
	 * 1000), and the time the first segment of each transfer holds the
	 * link ahead of its bytes.
	 */
	uint32_t eff_permille;
	uint64_t msg_overhead_ps;	/* ps */
	uint32_t state;			/* enum icfab_link_state */
	uint32_t bw_permille;		/* DEGRADED only: 1..999 */
	uint32_t peer;			/* other direction of the cable, or TOPO_NONE */
	/*
	 * OCS circuits (ICFAB_F_LIVE_COMMIT). up_delay_ps is staged with
	 * the next LINK_NEW of this link and cleared once committed; up_at_ps
	 * is what the module reports (LINK_UP_AT_PS): the fabric time the
	 * link leaves the dark, 0 when it is not held. Neither counts as a
	 * difference between two configurations.
	 */
	uint64_t up_delay_ps;		/* ps */
	uint64_t up_at_ps;		/* ps, fabric time */
	bool hold_fail;			/* dark: fail (-ENETDOWN), not wait */
	struct topo_src src;
};

/*
 * The regular part of a mesh, torus or supermesh, kept for dimension-order
 * routing. Position p has coordinates c[d] = (p / stride[d]) % size[d],
 * dimension 0 varying fastest.
 */
struct topo_grid {
	uint32_t ndims;
	uint32_t size[TOPO_MAX_DIMS];
	bool torus;			/* wraparound links in every dimension */
	uint32_t nr_pos;		/* product of size[] */
	uint32_t *node;			/* pos -> grid node (endpoint or router) */
	uint32_t *attached;		/* pos -> endpoint on the router, or TOPO_NONE */
	uint16_t *local_port;		/* pos -> router port to that endpoint */
	uint16_t *dir_port;		/* [pos][dim][0 = +, 1 = -] -> port, or
					 * ICFAB_ROUTE_NONE at a mesh edge */
};

/*
 * A next-hop set (ICFAB_F_ROUTE_SETS): ports of one node to different
 * neighbours, the first the primary, and how a transfer chooses among
 * them (ICFAB_MULTIPATH_FLOW or _SPRAY).
 */
struct topo_rset {
	uint8_t mode;
	uint8_t nr;
	uint16_t ports[ICFAB_ROUTE_SET_MAX_PORTS];
};

struct topo_node_sets {
	struct topo_rset *v;
	uint32_t n, cap;
};

struct topo {
	char name[ICFAB_NAME_MAX];
	uint32_t segment_size;		/* bytes */
	uint32_t time_mode;		/* enum icfab_time_mode */
	uint32_t dilation;		/* paced: wall ns per fabric ns */
	enum topo_routing routing;	/* as asked for (AUTO by default) */
	enum topo_routing routing_auto;	/* what AUTO means for this topology */
	const char *generator;		/* generator used, or NULL */
	struct topo_src src;		/* the file (and its fabric: line) */

	struct topo_node *nodes;
	uint32_t nr_nodes, nr_endpoints, nr_switches;
	struct topo_link *links;
	uint32_t nr_links;
	struct topo_grid *grid;		/* NULL unless a grid generator ran */

	/*
	 * routes[src * nr_nodes + dst]: the port of src to leave by towards
	 * dst, or ICFAB_ROUTE_NONE. NULL until topo_route().
	 */
	uint16_t *routes;
	enum topo_routing routed_with;
	/*
	 * Equal-cost next hops (the file's ecmp:, ICFAB_MULTIPATH_NONE by
	 * default, and where it was said). With a mode, topo_route() also
	 * fills route_sets[src * nr_nodes + dst]: the set of src's
	 * node_sets that leaves for dst, or ICFAB_ROUTE_NONE where routes[]
	 * (then the set's primary) is all there is. NULL without sets.
	 */
	uint32_t ecmp;
	struct topo_src ecmp_src;
	uint16_t *route_sets;
	struct topo_node_sets *node_sets;	/* nr_nodes, with route_sets */

	/* Optical circuit switches (ocs.h), from the file's ocs: list. */
	struct ocs **ocs;
	uint32_t nr_ocs;

	/* Memory tiers, from the file's tiers: list (topo_tier.c). */
	struct topo_tier *tiers;
	uint32_t nr_tiers, cap_tiers;

	/* Private to the library. */
	uint32_t cap_nodes, cap_links;
	uint32_t *name_hash;		/* open addressing: node id + 1, 0 = empty */
	uint32_t name_hash_size;
	char **files;			/* interned source file names */
	uint32_t nr_files;
	uint32_t *port_base;		/* node -> first slot in port_out */
	uint32_t *port_out;		/* (node, port) -> out link or TOPO_NONE;
					 * built by topo_route() */
};

struct topo_mem {
	size_t route_bytes;		/* nr_nodes^2 u16 route entries */
	size_t node_bytes;
	size_t link_bytes;
};

/* Default values a file can change in its defaults: block. */
struct topo_defaults {
	uint64_t mem_bytes;		/* endpoint memory, bytes */
	uint32_t dma_engines;
	uint32_t colors;		/* switch color-table entries */
	struct topo_link_spec link;	/* bandwidth 0 = "must be given" */
};

/* topo.c: objects */
struct topo *topo_new(void);
void topo_free(struct topo *t);

/* ---- memory tiers (topo_tier.c) ---- */

/* enum icfab_tier from "sram", "hbm", "ddr", or -EINVAL; and back. */
int topo_tier_parse(const char *s);
const char *topo_tier_name(uint32_t kind);
/*
 * Add @tier (its home, kind, figures and src) after every link: its port
 * gets the module link id nr_links + nr_tiers, and its home names it.
 * Returns its index, -EEXIST when the home has a tier of that kind,
 * -EINVAL when the home is not an endpoint or the kind is unknown.
 */
int topo_add_tier(struct topo *t, const struct topo_tier *tier);
/*
 * Endpoint @node is served by tier @idx too. -EEXIST when a tier of that
 * kind serves it already, -EINVAL when it is not an endpoint.
 */
int topo_share_tier(struct topo *t, uint32_t node, uint32_t idx);
/* The tier serving endpoint @node with @kind, or NULL. */
const struct topo_tier *topo_tier_of(const struct topo *t, uint32_t node,
				     uint32_t kind);
void topo_defaults_init(struct topo_defaults *d);
const char *topo_intern_file(struct topo *t, const char *file);
int topo_add_node(struct topo *t, const char *name, uint32_t kind,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err);
int topo_find_node(const struct topo *t, const char *name);
int topo_alloc_port(struct topo *t, uint32_t node, const struct topo_src *src,
		    struct topo_err *err);
int topo_use_port(struct topo *t, uint32_t node, uint32_t port,
		  const struct topo_src *src, struct topo_err *err);
int topo_add_link(struct topo *t, uint32_t src_node, uint32_t src_port,
		  uint32_t dst_node, uint32_t dst_port,
		  const struct topo_link_spec *spec, const struct topo_src *src,
		  struct topo_err *err);
int topo_connect(struct topo *t, uint32_t a, uint32_t b,
		 const struct topo_link_spec *spec, const struct topo_src *src,
		 struct topo_err *err);
int topo_link_set_state(struct topo *t, uint32_t link, uint32_t state,
			uint32_t bw_permille);
int topo_find_link(const struct topo *t, uint32_t src_node, uint32_t dst_node);
/* Take o (ocs_new()) into t, which frees it; -EEXIST for a used name. */
int topo_add_ocs(struct topo *t, struct ocs *o);
struct ocs *topo_find_ocs(const struct topo *t, const char *name);
void topo_default_limits(struct icfab_limits *lim);
void topo_mem(const struct topo *t, struct topo_mem *m);
int topo_errf(struct topo_err *err, const struct topo_src *src,
	      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

const char *topo_kind_name(uint32_t kind);
const char *topo_class_name(uint32_t class);
const char *topo_state_name(uint32_t state);
const char *topo_switching_name(uint32_t mode);
int topo_switching_parse(const char *s);
const char *topo_multipath_name(uint32_t mode);
int topo_multipath_parse(const char *s);
const char *topo_routing_name(enum topo_routing r);
int topo_class_parse(const char *s);
int topo_state_parse(const char *s);
int topo_routing_parse(const char *s);

/* topo_units.c: strict unit parsing; *why says what is wrong */
int topo_parse_bandwidth(const char *s, uint64_t *bytes_per_s, const char **why);
int topo_parse_size(const char *s, uint64_t *bytes, const char **why);
int topo_parse_time(const char *s, uint64_t *ps, const char **why);
int topo_parse_u32(const char *s, uint32_t *v, const char **why);
int topo_parse_energy(const char *s, uint32_t *fj_per_bit, const char **why);
int topo_parse_power(const char *s, uint32_t *mw, const char **why);
int topo_parse_efficiency(const char *s, uint32_t *permille, const char **why);
int topo_parse_overhead(const char *s, uint64_t *ps, const char **why);
char *topo_fmt_bandwidth(char *buf, size_t len, uint64_t bytes_per_s);
char *topo_fmt_size(char *buf, size_t len, uint64_t bytes);
char *topo_fmt_time(char *buf, size_t len, uint64_t ps);
char *topo_fmt_energy(char *buf, size_t len, uint32_t fj_per_bit);
char *topo_fmt_power(char *buf, size_t len, uint32_t mw);
char *topo_fmt_efficiency(char *buf, size_t len, uint32_t permille);

/* topo_gen.c: generators; each records src on everything it makes */
struct topo_gen_grid {
	const char *name;		/* node name prefix */
	uint32_t ndims;
	uint32_t size[TOPO_MAX_DIMS];
	bool torus;
	bool routers;			/* a router switch per position, with
					 * its endpoint on port 0 */
	const char *router_name;	/* router name prefix */
	struct topo_link_spec link;
	struct topo_link_spec local;	/* router <-> its endpoint */
	uint32_t block[TOPO_MAX_DIMS];	/* torus: links crossing a block edge */
	struct topo_link_spec block_link; /* get this spec (e.g. OCS) */
	enum { TOPO_SUPERMESH_NONE, TOPO_SUPERMESH_BI,
	       TOPO_SUPERMESH_ALTER } supermesh;
	struct topo_link_spec boundary;	/* the extra supermesh links */
};

struct topo_gen_switch {
	const char *name;		/* endpoint prefix */
	const char *switch_name;	/* switch name (or leaf/spine prefix) */
	uint32_t endpoints;
	uint32_t radix;			/* switch ports; 0 = as many as needed */
	uint32_t links_per_endpoint;	/* parallel cables, default 1 */
	struct topo_link_spec link;
	struct topo_link_spec uplink;	/* leaf <-> spine */
};

struct topo_gen_exchange {
	const char *name;		/* tile prefix */
	uint32_t tiles;
	bool crossbar;			/* else every pair directly connected */
	uint32_t links_per_pair;	/* direct mode: parallel cables */
	struct topo_link_spec link;
};

struct topo_gen_hier {
	const char *name;		/* endpoint prefix: <name><node>_<local> */
	const char *switch_name;	/* scale-up switch prefix */
	uint32_t nodes;
	uint32_t per_node;
	uint32_t radix;			/* scale-out switch ports; 0 = unlimited */
	struct topo_link_spec scale_up;
	struct topo_link_spec scale_out;
	struct topo_link_spec uplink;	/* scale-out leaf <-> spine */
};

int topo_gen_grid(struct topo *t, const struct topo_gen_grid *g,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err);
int topo_gen_switch(struct topo *t, const struct topo_gen_switch *g,
		    const struct topo_defaults *d, const struct topo_src *src,
		    struct topo_err *err);
int topo_gen_exchange(struct topo *t, const struct topo_gen_exchange *g,
		      const struct topo_defaults *d, const struct topo_src *src,
		      struct topo_err *err);
int topo_gen_hier(struct topo *t, const struct topo_gen_hier *g,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err);

/* topo_parse.c: YAML topology files */
int topo_load_file(const char *path, struct topo **tp, struct topo_err *err);
int topo_load_string(const char *text, size_t len, const char *file,
		     struct topo **tp, struct topo_err *err);

/* topo_presets.c */
struct topo_preset {
	const char *name;
	const char *summary;
	const char *yaml;		/* a topology file */
};
const struct topo_preset *topo_presets(size_t *n);
const struct topo_preset *topo_preset_find(const char *name);
int topo_load_preset(const char *name, struct topo **tp, struct topo_err *err);

/* topo_route.c */
int topo_route(struct topo *t, struct topo_err *err);
uint16_t topo_route_port(const struct topo *t, uint32_t src, uint32_t dst);
int topo_port_link(const struct topo *t, uint32_t node, uint32_t port);
int topo_port_index(struct topo *t);
int topo_route_hops(const struct topo *t, uint32_t src, uint32_t dst);
/*
 * Next-hop sets: drop them; the entry @src sends towards @dst with
 * (ICFAB_ROUTE_SET_BASE + set, or the port of routes[]); the set it
 * names, or NULL.
 */
void topo_sets_free(struct topo *t);
uint16_t topo_route_entry(const struct topo *t, uint32_t src, uint32_t dst);
const struct topo_rset *topo_route_set(const struct topo *t, uint32_t src,
				       uint32_t dst);
/*
 * Add @s to @node's sets unless it holds it already; its index, or -1
 * when the node holds ICFAB_ROUTE_SETS_MAX, or -ENOMEM.
 */
int topo_sets_add(struct topo *t, uint32_t node, const struct topo_rset *s);

/* topo_check.c: validates, changes nothing */
int topo_check(const struct topo *t, const struct icfab_limits *lim,
	       struct topo_err *err);

/* topo_prepare.c: load (file or preset), check, route, check the tables */
struct topo_prepare_ms {
	double load_check, route, check_tables;	/* ms, wall clock */
};
int topo_prepare(const char *file, const char *preset,
		 const struct icfab_limits *lim, struct topo **tp,
		 struct topo_err *err, struct topo_prepare_ms *ms);

/* topo_dump.c */
#define TOPO_DUMP_ROUTES	(1U << 0)
#define TOPO_DUMP_JSON		(1U << 1)
int topo_dump(const struct topo *t, FILE *f, unsigned int flags);

#endif /* ICFABD_TOPO_H */
